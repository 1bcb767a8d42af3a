#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The NTB vm suite: QEMU guests (TCG), each its own kernel, share one
# ivshmem-doorbell region served by smartio-ivshmem-server; in each, the
# upstream NTB core (ntb.ko) and ntb_hw_ivshmem make ports of a 4-port NTB,
# and ntb-suite.sh runs the upstream clients (ntb_tool, ntb_perf,
# ntb_pingpong, ntb_transport) and smartio_ntb over it. Guest 0 has an
# emulated VT-d, the others none. Three guests start; guest 2's QEMU is
# SIGKILLed mid-run (the others must see its link go down and carry on), then
# boots again (a new QEMU and kernel, back on port 2), and guest 1 is reset in
# place mid-run (the others see it go and come back on the same port). Exit 0 when every check passed, 1 on
# a failure, 77 (SKIP) without QEMU or the NTB modules.
#
# Phases are synchronised across guests through this script: a guest prints
# "SIO-NTB SYNC n NAME" and waits for "GO n" on its serial console; the
# n-th GO goes to every live guest once all of them asked for it.
#
# usage: run-ntb.sh BUILD_ROOT SOURCE_DIR [WORK_DIR]   (SIO_VM_TIMEOUT bounds it, s)
# Another suite runs with the same machinery (the ntb fabric's, ntb-fabric-suite.sh):
#   SIO_NTB_SUITE=FILE the guests' script; SIO_NTB_EXTRA the programs it needs
#   SIO_NTB_SHM_MB     the ivshmem region (32)   SIO_NTB_MEM   MiB per guest (320)
#   SIO_NTB_APPEND     every guest's kernel command line (a variant: sio.lend=uio)
#   SIO_NTB_G0_APPEND  guest 0's kernel command line (intel_iommu=on), and
#   SIO_NTB_G0_ARGS    its QEMU arguments beyond the VT-d (an NVMe, say);
#   SIO_NTB_G0_IOMMU=0 no VT-d for guest 0; SIO_NTB_VARIANT=V[,W...]: the
#   suite's "# want-V:" and "# host-V:" lines count too, and the guests see
#   sio.variant=V[,W...] on their command line; SIO_NTB_FINISH the guests'
#   logs that must end in SIO-VM DONE (g0 g1 g2b)
# and the phases that ask the host to act, which the suite lists in its
# "# host:" lines: kill-2 (SIGKILL guest 2), join (guest 2 boots again, after
# kill-2), reset-1 (system_reset guest 1), flap-1 (stop guest 1 for
# $SIO_NTB_FLAP_S, 4 s, then let it go on: its peers see its link go down and
# come back, as a cable pulled and put back).
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=${3:-}
root=$(cd "$src/../.." && pwd)
unset MALLOC_PERTURB_
skip() { echo "SKIP: $*"; exit 77; }
qemu=$(command -v qemu-system-x86_64 || true)
[ -n "$qemu" ] || skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
kver=$(sh "$root/kernel/kver.sh") ||
	skip "no kernel ${SIO_VM_KERNEL:-in /boot} with its modules (apt-get install linux-image-amd64, or kernel/fetch-kernel.sh)"
mods=${SIO_NTB_MODULES:-$build/kernel}
if [ ! -f "$mods/ntb_hw_ivshmem.ko" ] || [ ! -f "$mods/smartio_ntb.ko" ]; then
	[ -f "$(sh "$root/kernel/kver.sh" --root)/lib/modules/$kver/build/Module.symvers" ] ||
		skip "no headers for $kver to build the NTB modules with (tools/install-deps.sh installs linux-headers-$kver)"
	[ -f "${SMARTIO_CACHE:-/var/cache/smartio}/linux-ntb/$kver/drivers/ntb/core.c" ] ||
		skip "no NTB framework sources for $kver (tools/install-deps.sh runs kernel/upstream.sh)"
	skip "the NTB modules were not built (meson configure -Dkernel_modules=enabled)"
fi
if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/sio-ntb.XXXXXX")
	trap 'stop_all; rm -rf "$work"' EXIT
else
	trap 'stop_all' EXIT
fi
trap 'exit 143' INT TERM HUP	# killed: the EXIT trap stops the guests and the server
pids="" srv=""
. "$src/ntb-sync.sh"	# SIO_KREPORT, what a kernel report says
stop_all() { for p in $pids $srv; do kill -KILL "$p" 2>/dev/null || true; done; }

ko=""
for m in ntb ntb_hw_ivshmem ntb_tool ntb_perf ntb_pingpong ntb_transport smartio_ntb; do
	[ -f "$mods/$m.ko" ] && ko="$ko $mods/$m.ko"
done
rc=0
SIO_VM_BUILD_ONLY=1 SIO_VM_SUITE="${SIO_NTB_SUITE:-$src/ntb-suite.sh}" SIO_VM_MODULES="$ko" \
	SIO_VM_EXTRA="${SIO_NTB_EXTRA:-$build/tests/vm/ntb-uapi $build/tests/vm/ntb-scribble $(ls "$build/tests/vm/ntb-uapi32" 2>/dev/null)} $src/ntb-sync.sh" \
	sh "$src/run-vm.sh" "$build" "$src" "$work" || rc=$?
[ $rc -eq 0 ] || exit $rc
kernel=$(sh "$root/kernel/kver.sh" --image)
tmo=${SIO_VM_TIMEOUT:-540}	# under meson's 600 s; a quiet 2-core host needs about 120
truncate -s "${SIO_NTB_SHM_MB:-32}M" "$work/shm"
truncate -s 64M "$work/nvme.img"	# for a suite that gives guest 0 an NVMe
"$build/src/tools/smartio-ivshmem-server" --socket "$work/ivs.sock" --shm "$work/shm" \
	--vectors "${SIO_NTB_VECTORS:-2}" --ready-file "$work/ivs.ready" >"$work/server.log" 2>&1 &
srv=$!
i=0; while [ ! -s "$work/ivs.ready" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$work/ivs.ready" ] || { cat "$work/server.log"; echo "ntb: FAIL: no ivshmem server"; exit 1; }

# guest N LOG APPEND EXTRA...: boot guest N (ivshmem peer N: guests start one
# at a time, and the server gives the lowest id free), console to LOG.log,
# input from the fifo gN.in, held open here (read-write: never a reader-less
# pipe) on fd 3+N. The console is muxed with QEMU's monitor (Ctrl-A c).
guest() {
	n=$1 lg=$2 app=$3; shift 3
	eval "log$n=$lg"
	if [ ! -p "$work/g$n.in" ]; then
		mkfifo "$work/g$n.in"
		eval "exec $((3 + n))<>\"\$work/g$n.in\""
	fi
	"$qemu" -nodefaults -no-user-config -display none \
		-machine q35 -accel tcg,thread=multi -cpu max -smp 1 -m "${SIO_NTB_MEM:-320}" \
		-kernel "$kernel" -initrd "$work/initramfs.gz" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check rdinit=/init sio.guest=$n $app ${SIO_NTB_APPEND:-}${SIO_NTB_VARIANT:+ sio.variant=$SIO_NTB_VARIANT}" \
		-serial mon:stdio \
		-chardev socket,path="$work/ivs.sock",id=ivs \
		-device ivshmem-doorbell,chardev=ivs,vectors=${SIO_NTB_VECTORS:-2},addr=0x10 \
		"$@" <"$work/g$n.in" >"$work/$lg.log" 2>&1 &
	pids="$pids $!"
	eval "pid$n=$!"
	eval "boots$n=\$((\${boots$n:-0} + 1)); b=\$boots$n"
	i=0; while [ "$(grep -c "peer $n joined" "$work/server.log")" -lt "$b" ] && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
}
start=$(date +%s)
g0iommu="-device intel-iommu,intremap=on,caching-mode=on"
[ "${SIO_NTB_G0_IOMMU:-1}" != 0 ] || g0iommu=""
# shellcheck disable=SC2086
guest 0 g0 "${SIO_NTB_G0_APPEND:-intel_iommu=on}" -no-reboot $g0iommu $(eval echo "${SIO_NTB_G0_ARGS:-}")
guest 1 g1 "intel_iommu=off"		# reset in place later: it may reboot
guest 2 g2 "intel_iommu=off" -no-reboot
echo "ntb: three guests (QEMU pids$pids), one ${SIO_NTB_SHM_MB:-32} MiB ivshmem-doorbell region, 2 vectors; guest 0: ${SIO_NTB_G0_APPEND:-intel_iommu=on}"

: >"$work/host.log"		# what this script saw pass
live="0 1 2" k=1 killed="" joined="" reset="" flapped=""
log() { eval "tr -d '\r' <\"\$work/\$log$1.log\""; }
synced() {	# GUEST N: the name of guest's N-th sync request, if it made it
	# whole lines only (counted first): a guest may be in the middle of printing one
	whole=$(log "$1" | wc -l)
	log "$1" | head -n "$whole" | grep -ao 'SIO-NTB SYNC [0-9]* [A-Za-z0-9_-]*' |
		awk -v n="$2" '$3 == n { print $4; exit }'
}
while :; do
	now=$(date +%s)
	[ $((now - start)) -lt "$tmo" ] || { echo "ntb: FAIL: the guests ran past ${tmo}s"; stop_all; break; }
	still=""
	for g in $live; do
		eval "p=\$pid$g"
		if kill -0 "$p" 2>/dev/null; then still="$still $g"; else
			# the guest ended (its suite done, or a panic with -no-reboot): said, with the phase
			echo "ntb: guest $g's QEMU (pid $p) exited at phase $k"
		fi
	done
	live=$still
	[ -n "$live" ] || break
	# a guest that joins late asks for the phase the others are at (hello)
	for g in $live; do
		eval "h=\${hello$g:-0}"
		if [ "$(log "$g" | grep -ac '^SIO-NTB HELLO')" -gt "$h" ]; then
			echo "PHASE $k" >&$((3 + g))
			eval "hello$g=$((h + 1))"
		fi
	done
	name="" all=1
	for g in $live; do
		s=$(synced "$g" "$k")
		[ -n "$s" ] || { all=0; continue; }
		[ -z "$name" ] || [ "$s" = "$name" ] ||
			{ echo "ntb: FAIL: guests disagree on phase $k ($name, $s)"; stop_all; break 2; }
		name=$s
	done
	if [ "$name" = join ] && [ -z "$joined" ] && [ -n "$killed" ]; then
		# guest 2 boots again: a new QEMU, which the server gives the free id 2
		guest 2 g2b "intel_iommu=off sio.join=1" -no-reboot
		echo "ntb: guest 2 boots again (QEMU pid $pid2)"
		joined=1 live="$live 2"
		continue
	fi
	if [ $all = 0 ]; then sleep 0.3; continue; fi
	for g in $live; do echo "GO $k" >&$((3 + g)); done
	if [ "$name" = kill-2 ] && [ -z "$killed" ]; then
		sleep 3	# let guest 2 get going on its windows
		kill -KILL "$pid2" 2>/dev/null && killed=1 && echo "ntb: guest 2 (QEMU pid $pid2) SIGKILLed mid-run" ||
			echo "ntb: FAIL: guest 2 (QEMU pid $pid2) had ended before it could be killed"
		echo "SIO-VM PASS guest2-killed" >>"$work/host.log"
	fi
	if [ "$name" = flap-1 ] && [ -z "$flapped" ]; then
		sleep 2	# let guest 1 get going
		printf '\001cstop\n\001c' >&4 && sleep "${SIO_NTB_FLAP_S:-4}" &&
			printf '\001ccont\n\001c' >&4 && flapped=1 &&
			echo "ntb: guest 1 stopped for ${SIO_NTB_FLAP_S:-4} s, then let go on (QEMU's stop, cont)"
		echo "SIO-VM PASS guest1-flapped" >>"$work/host.log"
	fi
	if [ "$name" = reset-1 ] && [ -z "$reset" ]; then
		sleep 3	# let guest 1 get going on its windows
		printf '\001csystem_reset\n\001c' >&4 && reset=1 &&
			echo "ntb: guest 1 reset in place (QEMU's system_reset) mid-run"
		echo "SIO-VM PASS guest1-reset" >>"$work/host.log"
	fi
	k=$((k + 1))
done
for p in $pids; do wait "$p" 2>/dev/null || true; done
kill "$srv" 2>/dev/null || true	# stop_all may have killed it
wait "$srv" 2>/dev/null || true
srv="" pids=""
end=$(date +%s)
sed 's/^/    | /' "$work/server.log"
fail=0
for l in g0 g1 g2 g2b; do
	[ -f "$work/$l.log" ] || continue
	echo "---- guest ${l#g}"
	tr -d '\r' <"$work/$l.log" | grep -av '^\[ *[0-9.]*\]' || true
done
echo "ntb: the guests ran for $((end - start)) s ($k phases)"
for l in ${SIO_NTB_FINISH:-g0 g1 g2b}; do
	tr -d '\r' <"$work/$l.log" 2>/dev/null | grep -q '^SIO-VM DONE' ||
		{ echo "ntb: FAIL: guest ${l#g} did not finish"; fail=1; }
done
# what the suite asks of the host ("# host: kill-2 join reset-1 flap-1"), all of it
suite=${SIO_NTB_SUITE:-$src/ntb-suite.sh}
# "# want:" and "# host:" lines, and those of this variant ("# want-VARIANT:")
lines() {
	sed -n "s/^# $1: //p" "$suite"
	for v in $(echo "${SIO_NTB_VARIANT:-}" | tr , ' '); do sed -n "s/^# $1-$v: //p" "$suite"; done
}
for h in $(lines host); do
	case $h in
	kill-2) [ -n "$killed" ] || { echo "ntb: FAIL: guest 2 was never killed"; fail=1; } ;;
	join) [ -n "$joined" ] || { echo "ntb: FAIL: guest 2 never booted again"; fail=1; } ;;
	reset-1) [ -n "$reset" ] || { echo "ntb: FAIL: guest 1 was never reset"; fail=1; } ;;
	flap-1) [ -n "$flapped" ] || { echo "ntb: FAIL: guest 1 was never stopped"; fail=1; } ;;
	esac
done
# What must have passed, whatever else did (a missing line is a failure too),
# said a line per check with the logs that lack it.
for want in $(lines want); do
	tr -d '\r' <"$work/${want%%:*}.log" 2>/dev/null | grep -q "^SIO-VM PASS ${want#*:}\$" ||
		echo "${want#*:} ${want%%:*}"
done | awk '!($1 in seen) { order[++n] = $1; seen[$1] = 1 } { who[$1] = who[$1] " " $2 }
	END { for (i = 1; i <= n; i++) printf "ntb: FAIL: no pass of %s in%s\n", order[i], who[order[i]]; exit n > 0 }' ||
	fail=1
echo "ntb: measured in TCG guests over ntb_hw_ivshmem (emulated CPUs; says nothing of NTB hardware):"
cat "$work"/g*.log | tr -d '\r' | sed -n 's/^SIO-VM MEASURE /ntb:   /p'
nfail=$(cat "$work"/g*.log "$work/host.log" | tr -d '\r' | grep -c '^SIO-VM FAIL' || true)
npass=$(cat "$work"/g*.log "$work/host.log" | tr -d '\r' | grep -c '^SIO-VM PASS' || true)
# Last, where the logs are long: each guest's first failure and what led to it.
if [ "$nfail" -ne 0 ] || [ $fail -ne 0 ]; then
	for l in g0 g1 g2 g2b; do
		[ -f "$work/$l.log" ] || continue
		tr -d '\r' <"$work/$l.log" | grep -av '^\[ *[0-9.]*\]' >"$work/$l.txt" || true
		tr -d '\r' <"$work/$l.log" | grep -aE -m 3 "Kernel panic|$SIO_KREPORT" | sed "s/^/ntb: guest ${l#g}: /"
		# a kernel report of any kind (a stall, a hung task: no BUG line), its first, whole
		tr -d '\r' <"$work/$l.log" | awk -v g="${l#g}" '{ a[NR] = $0 }
			/Modules linked in/ && !at { at = NR }
			END { for (i = at - 10; at && i <= at + 20; i++) if (i in a) print "ntb: guest " g ": " a[i] }'
		f=$(grep -an -m 1 '^SIO-VM FAIL' "$work/$l.txt" | cut -d: -f1)
		if [ -n "$f" ]; then
			echo "ntb: guest ${l#g}'s first failure, the failures in its output, the lines before it:"
			# a check's output comes before its result (run) or after it (waited)
			head -n $((f + 12)) "$work/$l.txt" | tail -n 212 | grep -a '^    | .*FAIL' | head -n 5 |
				sed 's/^/ntb: | /'
			head -n "$f" "$work/$l.txt" | tail -n 8 | sed 's/^/ntb: | /'
		else
			echo "ntb: guest ${l#g} failed nothing; its last lines:"
			tail -n 4 "$work/$l.txt" | sed 's/^/ntb: | /'
		fi
	done
fi
echo "ntb: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ] && [ $fail -eq 0 ]
