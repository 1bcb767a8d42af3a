# SPDX-License-Identifier: MIT
# The vm suites' host library, sourced by run-vm.sh, run-multi.sh,
# run-ntb.sh and nvme-cli.sh (POSIX sh: /bin/sh is dash). It builds the
# guests' initramfs, boots QEMU guests (TCG) and keeps a small table of
# them, runs the NTB suites' phases and the host's actions between them, and
# says what failed. The guests' side is lib/guest.sh (results: "SIO-VM
# PASS|FAIL|SKIP name [: detail]", then "SIO-VM DONE"), lib/lend.sh and
# lib/ntb-sync.sh.
#
# Every knob, read from the environment, with its default:
#
#   knob               default            what
#   SIO_VM_KERNEL      newest in /boot    the guests' kernel (kernel/kver.sh: an
#                                         installed one, or one that
#                                         kernel/fetch-kernel.sh unpacked)
#   SIO_VM_TIMEOUT     300 (run-vm.sh),   seconds the guests may run
#                      420 (run-multi.sh),
#                      540 (run-ntb.sh)
#   SIO_VM_SUITE       guest-suite.sh     run-vm.sh's guest script (uio-suite.sh,
#                                         nvme-cli-suite.sh, bench/vm's)
#   SIO_VM_IOMMU       1                  0: run-vm.sh's guest has no VT-d
#   SIO_VM_APPEND      -                  more of run-vm.sh's kernel command line
#                                         (the uio suite: hugepages=128)
#   SIO_VM_EXTRA       -                  more files for run-vm.sh's guest /prog
#                                         (fio, nvme-cli), with their libraries
#   SIO_VM_MODSETS     -                  more module sets for the guests'
#                                         /lib/modules, "NAME:MODULE,..." each
#                                         (nvme-cli.sh: fs:ext4,virtio_blk)
#   SIO_VM_QEMU_ARGS   -                  more of run-vm.sh's QEMU arguments
#                                         (devices); "$work" in them is the
#                                         work directory
#   SIO_MULTI_WINDOW   doorbell           run-multi.sh's window: doorbell
#                                         (ivshmem-doorbell, VT-d in every guest,
#                                         interrupts through vfio) or plain
#                                         (ivshmem-plain, polled)
#   SIO_MULTI_IOMMU    1                  0: run-multi.sh's guest 0 has no IOMMU,
#                                         lends through uio; the window is plain
#   SIO_NTB_SUITE      ntb-suite.sh       run-ntb.sh's guest script
#                                         (ntb-fabric-suite.sh)
#   SIO_NTB_EXTRA      ntb-uapi,          the programs it needs in /prog
#                      ntb-scribble,
#                      ntb-uapi32 if built
#   SIO_NTB_MODULES    BUILD/kernel       where the NTB modules (.ko) are
#   SIO_NTB_GUESTS     3                  run-ntb.sh's guests at the start (2 or 3),
#                                         which the guests see as sio.guests=;
#                                         the suite's "# want@N:" and
#                                         "# host-V@N:" lines count with N
#   SIO_NTB_REGIONS    1                  ivshmem-doorbell regions, so NTB devices,
#                                         per guest: 2 adds a second region, its
#                                         own server and file, at PCI 00:11.0
#   SIO_NTB_SHARED     0                  1: every region's server serves one
#                                         file, as a host's memory sits behind
#                                         each of its NTBs; the guests see
#                                         sio.shared=REGIONS (ntb_hw_ivshmem's
#                                         shared=)
#   SIO_NTB_SHM_MB     32                 MiB of each ivshmem-doorbell region
#   SIO_NTB_VECTORS    2                  its interrupt vectors per guest
#   SIO_NTB_MEM        320                MiB per NTB guest
#   SIO_NTB_APPEND     -                  every NTB guest's kernel command line
#                                         (a variant: sio.lend=uio)
#   SIO_NTB_G0_APPEND  intel_iommu=on     guest 0's kernel command line
#   SIO_NTB_G0_ARGS    -device edu,addr=9 guest 0's QEMU arguments beyond the
#                                         VT-d (an NVMe); "$work" in them is the
#                                         work directory
#   SIO_NTB_G0_IOMMU   1                  0: guest 0 has no VT-d
#   SIO_NTB_VARIANT    -                  V[,W...]: the suite's "# want-V:"
#                                         and "# host-V:" lines count too,
#                                         and the guests see sio.variant=V[,W]
#   SIO_NTB_PROFILES   all                P[,Q...]: of a suite with a "# profiles:"
#                                         line (ntb-profiles-suite.sh), only
#                                         these run, and only their wants
#                                         count; the guests see sio.profiles=
#   SIO_NTB_FINISH     g0 g1 g2b          the guests' logs that must end in
#                                         SIO-VM DONE
#   SIO_NTB_FLAP_S     4                  seconds a flap (flap-1, flap-N in the
#                                         storm) stops its guest for
#   SIO_NTB_STORM_S    60                 seconds of the storm (act_storm)
#   SIO_NTB_STORM_SEED the time           its draw of faults (printed)
#   SIO_NTB_STORM_FAULTS                  the kinds it draws from (default:
#                                         kill-client kill-manager reset-1
#                                         kill-2 flap-0 flap-1 flap-2)
#   SIO_NTB_NET        0                  1: a network between the NTB guests,
#                                         a virtio-net each (MAC
#                                         52:54:00:38:00:N) on one QEMU
#                                         multicast socket bound to 127.0.0.1
#                                         (the suite sets the addresses)
#   SMARTIO_CACHE      /var/cache/smartio where kernel/upstream.sh put the NTB
#                                         framework's sources (for a SKIP's why)
#
# meson sets MALLOC_PERTURB_ for every test; QEMU is not the code under test
# here, and with it QEMU itself was seen to crash.
unset MALLOC_PERTURB_

skip() { echo "SKIP: $*"; exit 77; }

# vm_setup BUILD_ROOT SOURCE_DIR WORK_DIR TAG: build, src (tests/vm), tree
# (the source tree), work (WORK_DIR, or a new sio-TAG.* removed at exit),
# qemu; SKIP without QEMU. At exit, and when killed, every QEMU and server
# this script started is killed (stop_all).
vm_setup() {
	build=$(cd "$1" && pwd)
	src=$(cd "$2" && pwd)
	tree=$(cd "$src/../.." && pwd)
	work=$3
	qemu=$(command -v qemu-system-x86_64 || true)
	[ -n "$qemu" ] || skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
	pids="" srv="" holders=""
	if [ -z "$work" ]; then
		work=$(mktemp -d "${TMPDIR:-/tmp}/sio-$4.XXXXXX")
		trap 'stop_all; rm -rf "$work"' EXIT
	else
		trap 'stop_all' EXIT
	fi
	trap 'exit 143' INT TERM HUP	# killed: the EXIT trap stops the guests
}
# stop_all: QEMU, the ivshmem server and the consoles' holders, whatever
# happened (an EXIT trap's status is the script's: this one's is 0)
stop_all() {
	for p in $pids $srv $holders; do kill -KILL "$p" 2>/dev/null || true; done
}

# vm_kernel: kernel (the image), kver and kroot (its modules' root), or SKIP
vm_kernel() {
	kv="$tree/kernel/kver.sh"
	kernel=$(sh "$kv" --image) && kver=$(sh "$kv") && kroot=$(sh "$kv" --root) ||
		skip "no kernel ${SIO_VM_KERNEL:-in /boot} with its modules (apt-get install linux-image-amd64, or kernel/fetch-kernel.sh)"
}

# vm_modlist MODULE...: their files, in the order modprobe would load them
# (dependencies first)
vm_modlist() {
	for m in "$@"; do modprobe -d "$kroot" -S "$kver" --show-depends "$m" 2>/dev/null; done |
		awk '$1 == "insmod" && !seen[$2]++ {print $2}'
}

# vm_initramfs SUITE "EXTRA..." "MODULES...": $work/initramfs.gz, a busybox
# initramfs whose /init (guest-init.sh) runs SUITE: the project's programs
# and EXTRA files in /prog with their libraries, the guests' libraries
# (lib/guest.sh, lend.sh, ntb-sync.sh, nvmeof.sh, ntb-fabric.sh,
# ntb-selftest.sh) in /vm, the vfio, nvme and uio module sets of the kernel
# in /lib/modules (with a NAME.list each) and MODULES as they are. progs:
# the programs. SKIP without busybox, kmod or a vfio-pci module.
vm_initramfs() {
	for t in busybox cpio gzip modprobe; do
		command -v $t >/dev/null 2>&1 || [ "$t" = cpio ] ||
			skip "$t not installed (apt-get install busybox-static kmod)"
	done
	busybox=$(command -v busybox)
	! ldd "$busybox" >/dev/null 2>&1 ||
		skip "$busybox is not static (apt-get install busybox-static)"
	[ -n "${kver:-}" ] || vm_kernel
	ir=$work/root
	mkdir -p "$ir/bin" "$ir/lib/modules" "$ir/proc" "$ir/sys" "$ir/dev" "$ir/tmp" \
		"$ir/run" "$ir/prog" "$ir/etc" "$ir/vm"
	cp "$busybox" "$ir/bin/busybox"
	# Programs: the tool, our checks, and the NVMe driver's programs when built.
	progs=""
	for p in smartio smartio-nvme vfio-nvme nvme-identify nvme-manager nvme-client nvme-mcast-identify nvme-lend edu-dma edu-lend; do
		f=$(find "$build" -name "$p" -type f -perm -u+x -not -path '*/meson-*' 2>/dev/null | head -n1)
		[ -n "$f" ] && progs="$progs $f"
	done
	progs="$progs $2"
	for f in $progs; do
		cp "$f" "$ir/prog/"
		# Their shared libraries, and the loader, at the same paths as here.
		ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' |
		while read -r lib; do
			[ -e "$ir$lib" ] && continue
			mkdir -p "$ir$(dirname "$lib")"
			cp -L "$lib" "$ir$lib"
		done
	done
	for set in "vfio:vfio-pci,vfio_iommu_type1" "nvme:nvme" "uio:uio_pci_generic" \
		${SIO_VM_MODSETS:-}; do
		name=${set%%:*}
		: >"$ir/lib/modules/$name.list"
		# shellcheck disable=SC2046 # the set's modules, one word each
		for ko in $(vm_modlist $(echo "${set#*:}" | tr , ' ')); do
			b=$(basename "$ko")
			case $b in
			*.ko.xz) xz -dc "$ko" >"$ir/lib/modules/${b%.xz}"; b=${b%.xz} ;;
			*.ko.zst) zstd -qdc "$ko" >"$ir/lib/modules/${b%.zst}"; b=${b%.zst} ;;
			*) cp "$ko" "$ir/lib/modules/$b" ;;
			esac
			echo "$b" >>"$ir/lib/modules/$name.list"
		done
	done
	[ -s "$ir/lib/modules/vfio.list" ] || skip "kernel $kver has no vfio-pci module"
	for ko in $3; do cp "$ko" "$ir/lib/modules/"; done
	cp "$src/guest-init.sh" "$ir/init"
	cp "$1" "$ir/suite.sh"
	cp "$src/lib/guest.sh" "$src/lib/lend.sh" "$src/lib/ntb-sync.sh" "$src/lib/nvmeof.sh" \
		"$src/lib/ntb-fabric.sh" "$src/lib/ntb-selftest.sh" "$ir/vm/"
	chmod +x "$ir/init"
	if command -v cpio >/dev/null 2>&1; then
		(cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1 >"$work/initramfs.gz")
	else
		(cd "$ir" && find . | "$busybox" cpio -o -H newc | gzip -1 >"$work/initramfs.gz")
	fi
}

# vm_console LOG: a guest's console without the kernel's lines
vm_console() { tr -d '\r' <"$1" | grep -av '^\[ *[0-9.]*\]' || true; }

# ivshmem_server TAG SHM ARGS...: smartio-ivshmem-server over the file SHM,
# in the background (its pid added to srv), until it is ready. The first
# listens on $work/ivs.sock and logs to server.log; the R-th after it on
# ivsR.sock, to serverR.log (a region of its own: an NTB device of its own).
ivshmem_server() {
	tag=$1 shm=$2; shift 2
	nr=${nsrv:-0}; sx=${nr#0}
	"$build/src/tools/smartio-ivshmem-server" --socket "$work/ivs$sx.sock" --shm "$shm" \
		"$@" --ready-file "$work/ivs$sx.ready" >"$work/server$sx.log" 2>&1 &
	srv="$srv $!" nsrv=$((nr + 1))
	i=0; while [ ! -s "$work/ivs$sx.ready" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$work/ivs$sx.ready" ] || { cat "$work/server$sx.log"; echo "$tag: FAIL: no ivshmem server"; exit 1; }
}
# ivshmem_server_end: stop them, show their logs
ivshmem_server_end() {
	[ -n "$srv" ] || return 0
	for p in $srv; do
		kill "$p" 2>/dev/null || true	# stop_all may have killed it
		wait "$p" 2>/dev/null || true
	done
	srv=""
	for l in "$work"/server*.log; do
		[ "$l" = "$work/server.log" ] || echo "    | ${l##*/}:"
		sed 's/^/    | /' "$l"
	done
}

# The guests' table: a FIELD of guest N (pid, log, boots, hello) is the
# file $work/guests/N.FIELD.
gset() { mkdir -p "$work/guests"; echo "$3" >"$work/guests/$1.$2"; }
gget() { cat "$work/guests/$1.$2" 2>/dev/null || echo "${3:-}"; }

# qemu_guest N LOG MEM APPEND IN ARGS...: boot guest N in the background, one
# CPU and MEM MiB, kernel command line APPEND, console input from IN and
# output to $work/LOG.log
qemu_guest() {
	n=$1 lg=$2 mem=$3 app=$4 in=$5; shift 5
	"$qemu" -nodefaults -no-user-config -display none \
		-machine q35 -accel tcg,thread=multi -cpu max -smp 1 -m "$mem" \
		-kernel "$kernel" -initrd "$work/initramfs.gz" \
		-append "console=ttyS0 quiet panic=-1 $app" \
		"$@" <"$in" >"$work/$lg.log" 2>&1 &
	pids="$pids $!"
	gset "$n" pid $!
	gset "$n" log "$lg"
}
# guest_log N: guest N's console (its latest boot's), without carriage returns
guest_log() { tr -d '\r' <"$work/$(gget "$1" log).log"; }
# to_guest N LINE: type LINE on guest N's console ($work/gN.in)
to_guest() { printf '%s\n' "$2" >"$work/g$1.in"; }
# monitor N COMMAND: a command to guest N's QEMU monitor, on the same console
monitor() { printf '\001c%s\n\001c' "$2" >"$work/g$1.in"; }

# --- the NTB suites (run-ntb.sh) ---

# ntb_regions: the regions, 0 to SIO_NTB_REGIONS - 1; region R's files
# have the suffix ${R#0} (none for region 0: ivs.sock, server.log)
ntb_regions() { seq 0 $((${SIO_NTB_REGIONS:-1} - 1)); }
# ntb_shm R: the file of region R's memory (one for all with SIO_NTB_SHARED=1)
ntb_shm() { if [ "${SIO_NTB_SHARED:-0}" = 1 ]; then echo "$work/shm"; else echo "$work/shm${1#0}"; fi; }
# ntb_shared_arg: what tells the guests that their regions share one file
ntb_shared_arg() { [ "${SIO_NTB_SHARED:-0}" != 1 ] || echo " sio.shared=${SIO_NTB_REGIONS:-1}"; }
# ntb_guest N LOG APPEND ARGS...: boot guest N as ivshmem peer N of every
# region (guests start one at a time, and each server gives the lowest id
# free), console to LOG.log, input from the fifo gN.in, which a holder
# keeps open read-write (never a reader-less pipe, nor an end of file for
# QEMU). The console is muxed with QEMU's monitor (Ctrl-A c). Region R's
# device is at PCI address 00:1R.0.
ntb_guest() {
	n=$1 lg=$2 app=$3; shift 3
	# variant bar64: a 1 GiB ivshmem-plain (a sparse file no guest touches)
	# fills the 32-bit PCI hole (1 GiB on q35, from 0xc0000000), so
	# SeaBIOS moves every 64-bit BAR above 4 GiB, the NTB's BAR2 too,
	# whatever its size; without MSI-X it is no NTB to ntb_hw_ivshmem
	case ",${SIO_NTB_VARIANT:-}," in
	*,bar64,*) set -- "$@" -object memory-backend-file,id=hole,mem-path="$work/hole",size=1G,share=on \
		-device ivshmem-plain,memdev=hole,addr=0x12 ;;
	esac
	if [ ! -p "$work/g$n.in" ]; then
		mkfifo "$work/g$n.in"
		sleep 2147483647 <>"$work/g$n.in" >/dev/null 2>&1 &
		holders="$holders $!"
	fi
	# shellcheck disable=SC2046 # QEMU arguments, one word each
	set -- "$@" $(ntb_net "$n")
	for r in $(ntb_regions); do
		sx=${r#0}
		set -- -chardev socket,path="$work/ivs$sx.sock",id=ivs$sx \
			-device ivshmem-doorbell,chardev=ivs$sx,vectors="${SIO_NTB_VECTORS:-2}",addr=0x1$r "$@"
	done
	qemu_guest "$n" "$lg" "${SIO_NTB_MEM:-320}" \
		"no_timer_check rdinit=/init sio.guest=$n $app ${SIO_NTB_APPEND:-}${SIO_NTB_VARIANT:+ sio.variant=$SIO_NTB_VARIANT}${SIO_NTB_PROFILES:+ sio.profiles=$SIO_NTB_PROFILES}$(ntb_shared_arg) sio.guests=${SIO_NTB_GUESTS:-3}" "$work/g$n.in" \
		-serial mon:stdio "$@"
	b=$(($(gget "$n" boots 0) + 1))
	gset "$n" boots $b
	for r in $(ntb_regions); do
		i=0; while [ "$(grep -c "peer $n joined" "$work/server${r#0}.log")" -lt "$b" ] && [ $i -lt 100 ]; do
			sleep 0.1; i=$((i + 1))
		done
	done
}

# ntb_net N: guest N's QEMU arguments for SIO_NTB_NET: a virtio-net on a
# multicast socket whose packets go out on the loopback only (localaddr),
# its group and port taken from this script's pid, so that two runs on one
# machine do not hear each other
ntb_net() {
	[ "${SIO_NTB_NET:-0}" = 1 ] || return 0
	mc=239.255.$(($$ % 250)).$((($$ / 250) % 250 + 1)):$((20000 + $$ % 30000))
	echo "-netdev socket,id=net0,mcast=$mc,localaddr=127.0.0.1"
	echo "-device virtio-net-pci,netdev=net0,mac=52:54:00:38:00:0$1,addr=0x11"
}

# The host's actions, at the phases of those names (the suite's "# host:"
# lines); each notes what it did (killed, joined, flapped, reset) and its
# result in host.log.
# kill-2: SIGKILL guest 2 once it is going on its windows
act_kill_2() {
	sleep 3
	p=$(gget 2 pid)
	kill -KILL "$p" 2>/dev/null && killed=1 && echo "ntb: guest 2 (QEMU pid $p) SIGKILLed mid-run" ||
		echo "ntb: FAIL: guest 2 (QEMU pid $p) had ended before it could be killed"
	echo "SIO-VM PASS guest2-killed" >>"$work/host.log"
}
# join: guest 2 boots again, a new QEMU, which the server gives the free id 2
act_join() {
	ntb_guest 2 g2b "intel_iommu=off sio.join=1" -no-reboot
	echo "ntb: guest 2 boots again (QEMU pid $(gget 2 pid))"
	joined=1 live="$live 2"
}
# flap-1: stop guest 1 for SIO_NTB_FLAP_S, then let it go on (a cable
# pulled and put back: its peers see its link go down and come back);
# flap-1b: once more, later (PASS guest1-flapped-again)
act_flap_1() {
	sleep 2	# let guest 1 get going
	monitor 1 stop && sleep "${SIO_NTB_FLAP_S:-4}" &&
		monitor 1 cont && flapped="$flapped $1" &&
		echo "ntb: guest 1 stopped for ${SIO_NTB_FLAP_S:-4} s, then let go on (QEMU's stop, cont)"
	echo "SIO-VM PASS guest1-flapped$([ "$1" = flap-1b ] && echo -again)" >>"$work/host.log"
}
# reset-1: system_reset guest 1 in place, once it is going on its windows
act_reset_1() {
	sleep 3
	monitor 1 system_reset && reset=1 &&
		echo "ntb: guest 1 reset in place (QEMU's system_reset) mid-run"
	echo "SIO-VM PASS guest1-reset" >>"$work/host.log"
}

# storm: faults across the guests for SIO_NTB_STORM_S s while their clients
# do verified I/O (ntb-storm-suite.sh says what the guests do; with
# SIO_NTB_APPEND=sio.storm_clients=012 guest 0 runs a client too), drawn from
# SIO_NTB_STORM_SEED, which is printed: the same seed draws the same faults
# in the same order at the same times (a Park-Miller generator in awk, the
# same in every awk). A fault every 4 to 11 s, each of a kind drawn from
# SIO_NTB_STORM_FAULTS:
#   kill-client   SIGKILL guest 0's, 1's or 2's running nvme-client
#   kill-manager  SIGKILL the nvme-manager that serves (guest 0 or 1, as
#                 the guests' SERVING lines say); the other's standby takes
#                 over (the time until it serves is measured), the killed
#                 one's guest starts a standby
#   reset-1       system_reset guest 1 (its client and manager go with it);
#                 it boots, rejoins and runs a standby and clients again
#   kill-2        SIGKILL guest 2's QEMU; a new one boots a lease later
#                 (its old node's processes are judged dead meanwhile) and
#                 rejoins
#   flap-N        stop guest N for SIO_NTB_FLAP_S s (4): every link of its
#                 NTB goes down and comes back at a new generation; its
#                 clients and those of the others that reach it pause and
#                 go on, a manager away from the lender waits for it
# The fabric's home is guest 2 (it creates it) and its standby home guest
# 1, as the guests' HOME and STANDBY-HOME lines say from then on: reset-1
# and kill-2 kill the home where it is, and its standby takes over (the
# time until the guest says HOME is measured); the guest that comes back
# is the new home's standby. Not in the default set, for what is not
# tried in the storm: the lender's guest (0) reset or killed, a restart of
# the lender. A fault whose guest is not back from a reset, a manager's
# fault or a flap while a take-over is under way (two at once would leave
# no manager), or
# a home's fault while its standby is not standing by (there is one
# standby: that would end the fabric) is not done: a client's kill in the
# next guest that is up takes its place (said, counted as replaced).
act_storm() {
	seed=${SIO_NTB_STORM_SEED:-$(($(date +%s) % 1000000 + 1))}
	dur=${SIO_NTB_STORM_S:-60}
	kinds=${SIO_NTB_STORM_FAULTS:-kill-client kill-manager reset-1 kill-2 flap-0 flap-1 flap-2}
	echo "ntb: storm: seed $seed, $dur s, faults of: $kinds (SIO_NTB_STORM_SEED=$seed draws them again)"
	awk -v x="$seed" -v dur="$dur" -v kinds="$kinds" 'function r(n) { x = (x * 16807) % 2147483647; return x % n }
		BEGIN { nk = split(kinds, k, " "); x = x % 2147483646 + 1
			for (t = 5 + r(5); t < dur; t += 4 + r(8)) print t, k[r(nk) + 1], r(3) }' >"$work/storm.plan"
	s0=$(date +%s) active=0 mkill="" down="" due2="" nf=0 nskip=0 clients=$(storm_clients)
	home=2 sbhome="" hkill="" nhome=0
	: >"$work/storm.takeover"
	: >"$work/storm.home"
	while read -r at kind tgt; do
		storm_until $((s0 + at))
		storm_fault "$kind" "$tgt"
	done <"$work/storm.plan"
	storm_until $((s0 + dur))
	storm_home_once
	# the guests away come back before the end (a reboot and a rejoin: 300 s
	# at most; TCG on a host loaded 13 times over its CPUs took 250)
	s1=$(date +%s)
	while [ -n "$down$due2$mkill$hkill" ] && [ $(($(date +%s) - s1)) -lt 300 ]; do storm_until $(($(date +%s) + 1)); done
	[ -z "$down$due2" ] || { echo "ntb: FAIL: storm: guest(s)$down$due2 not back within 300 s"
		echo "SIO-VM FAIL storm-rejoin" >>"$work/host.log"; }
	[ -z "$mkill" ] || { echo "ntb: FAIL: storm: no standby served within 300 s of the manager's kill"
		echo "SIO-VM FAIL storm-takeover" >>"$work/host.log"; }
	[ -z "$hkill" ] || { echo "ntb: FAIL: storm: no standby home took over within 300 s of the home's kill"
		echo "SIO-VM FAIL storm-home" >>"$work/host.log"; }
	for g in $live; do to_guest "$g" "STORM end"; done
	echo "ntb: storm over after $(($(date +%s) - s0)) s: $nf fault(s) done; $nskip drawn could not be done as drawn (a client's kill instead where a client's guest was up)"
	stormed=1
	[ "$nf" -gt 0 ] && echo "SIO-VM PASS storm-faults" >>"$work/host.log"
}
# storm_home_once: a storm whose draw killed no home (a short one may
# draw none) kills the home's guest now, once its standby stands by (120 s
# at most), so that every storm takes the home over at least once
storm_home_once() {
	[ "$nhome" = 0 ] || return 0
	case " $kinds " in *" kill-2 "*|*" reset-1 "*) ;; *) return 0 ;; esac
	w0=$(date +%s)
	while { [ -z "$sbhome" ] || [ -n "$mkill$hkill$down$due2" ]; } &&
	      [ $(($(date +%s) - w0)) -lt 120 ]; do
		storm_until $(($(date +%s) + 1))
	done
	if [ -z "$sbhome" ] || [ -n "$mkill$hkill$down$due2" ]; then
		echo "ntb: FAIL: storm: no home fault drawn, and none could be done: no standby home stood by within 120 s"
		echo "SIO-VM FAIL storm-home" >>"$work/host.log"
		return 0
	fi
	echo "ntb: storm: no home fault was drawn: the home's guest $home now, so that the home is taken over once"
	case $home in
	2) storm_fault kill-2 2 ;;
	1) storm_fault reset-1 1 ;;
	esac
}
# storm_clients: the guests that run clients (sio.storm_clients=, 12)
storm_clients() {
	c=$(echo "${SIO_NTB_APPEND:-}" | sed -n 's/.*sio\.storm_clients=\([0-9]*\).*/\1/p')
	echo "${c:-12}"
}
# storm_fault KIND TARGET: do it, or say why not
storm_fault() {
	case $1 in
	kill-client)	# in the target, or the next guest that runs clients
		g=$2
		case $clients in *$g*) ;; *) g=$(((g + 1) % 3)) ;; esac
		case $clients in *$g*) ;; *) g=$(((g + 1) % 3)) ;; esac ;;
	kill-manager) g=$active ;;
	reset-1) g=1 ;;
	kill-2) g=2 ;;
	flap-*) g=${1#flap-} ;;
	*) echo "ntb: FAIL: storm: no fault '$1' (SIO_NTB_STORM_FAULTS: kill-client kill-manager reset-1 kill-2 flap-N)"; return ;;
	esac
	t=$(($(date +%s) - s0))
	why=""
	case " $down $due2 " in *" $g "*) why="guest $g is not back yet" ;; esac
	# a manager killed while the last one's successor is not serving yet
	# leaves none (the host's look at the logs, every 0.3 s, is late by that)
	case $1 in
	kill-manager)
		[ -z "$mkill" ] || why="a take-over is under way"
		case " $down " in *" 1 "*) why="guest 1, the other manager's, is not back yet" ;; esac ;;
	reset-1|kill-2)
		[ -z "$mkill" ] || [ "$g" != "$active" ] || why="a take-over is under way"
		[ "$g" != "$home" ] || [ -n "$sbhome" ] || why="guest $g is the home and no standby home stands by"
		# the standby that takes the killed home's place, or a guest
		# that would have to hold the state meanwhile: two homes lost
		[ -z "$hkill" ] || why="the home's take-over is under way" ;;
	flap-*) [ -z "$mkill$hkill" ] || why="a take-over is under way" ;;
	esac
	if [ -n "$why" ]; then
		# a client's kill instead, in the first client's guest up from the target
		nskip=$((nskip + 1))	# (replaced, or not done at all)
		for g in $2 $(($2 + 1)) $(($2 + 2)); do
			g=$((g % 3))
			case " $down $due2 " in *" $g "*) continue ;; esac
			case $clients in *$g*) ;; *) continue ;; esac
			echo "ntb: storm: ${t}s $1 not done ($why): kill-client guest $g instead"
			storm_fault kill-client "$g"
			return
		done
		echo "ntb: storm: ${t}s $1 not done ($why), nor a client's kill: no guest up"
		return
	fi
	# a guest that takes the serving manager with it is a take-over to time
	case $1 in kill-manager|reset-1|kill-2) [ "$g" != "$active" ] || mkill=$(date +%s.%N) ;; esac
	# the home's guest, or its standby's: the standby takes over, or is no more
	case $1 in reset-1|kill-2)
		[ "$g" != "$home" ] || { hkill=$(date +%s.%N); nhome=$((nhome + 1)); }
		sbhome="" ;;
	esac
	nf=$((nf + 1))
	echo "ntb: storm: ${t}s $1 guest $g"
	case $1 in
	kill-client) to_guest "$g" "STORM kill-client" ;;
	kill-manager) to_guest "$g" "STORM kill-manager" ;;
	reset-1) monitor 1 system_reset; storm_away 1 ;;
	kill-2) kill -KILL "$(gget 2 pid)" || true; storm_away 2; due2=" 2" at2=$(($(date +%s) + 15)) ;;
	flap-*) (monitor "$g" stop; sleep "${SIO_NTB_FLAP_S:-4}"; monitor "$g" cont) & ;;
	esac
}
# storm_away G: guest G went; it is back when its log says REJOINED again
storm_away() {
	down="$down $1"
	gset "$1" rejoined "$(guest_log "$1" | grep -ac '^SIO-STORM REJOINED')"
	[ "$1" != 2 ] || gset 2 rejoined 0	# its new boot, a new log
}
# storm_until T: until date +%s is T, the guests' side of the faults: a
# guest booted again is told the phase after the storm, its rejoin seen, a
# take-over timed (to the host's look at the logs, every 0.3 s)
storm_until() {
	while [ "$(date +%s)" -lt "$1" ]; do
		if [ -n "$due2" ] && [ "$(date +%s)" -ge "$at2" ]; then
			b=$(($(gget 2 boots 1) + 1))
			ntb_guest 2 "g2$(printf "\\$(printf %o $((96 + b)))")" "intel_iommu=off sio.join=1" -no-reboot
			echo "ntb: storm: guest 2 boots again (QEMU pid $(gget 2 pid), log $(gget 2 log).log)"
			# its new boot, a new log (until then its lines are the old log's)
			gset 2 hello 0; gset 2 home 0; gset 2 sbhome 0
			due2=""
		fi
		ntb_hellos $((k + 1))
		still=""
		for g in $down; do
			if [ "$g$due2" != "2 2" ] &&
			   [ "$(guest_log "$g" | grep -ac '^SIO-STORM REJOINED')" -gt "$(gget "$g" rejoined 0)" ]; then
				echo "ntb: storm: $(($(date +%s) - s0))s guest $g rejoined"
			else
				still="$still $g"
			fi
		done
		down=$still
		storm_home
		for g in 0 1; do
			# the host's look was old: nothing was killed
			! storm_more "$g" NO-MANAGER nomgr || mkill=""
			storm_more "$g" SERVING serving || continue
			active=$g
			[ -n "$mkill" ] || continue
			storm_ms "$mkill" storm.takeover
			echo "ntb: storm: $(($(date +%s) - s0))s guest $g's standby serves, $ms ms after the kill"
			mkill=""
		done
		sleep 0.3
	done
}
# storm_more G WHAT KEY: guest G said more "SIO-STORM WHAT" lines than
# counted under KEY (counted now)
storm_more() {
	# (run-ntb.sh runs under set -e: a count of none is no failure)
	c=$(guest_log "$1" | grep -ac "^SIO-STORM $2" || true)
	[ "$c" -gt "$(gget "$1" "$3" 0)" ] || return 1
	gset "$1" "$3" "$c"
}
# storm_ms SINCE FILE: ms since SINCE (date +%s.%N), in ms and added to FILE
storm_ms() {
	ms=$(echo "$1 $(date +%s.%N)" | awk '{ printf "%d", ($2 - $1) * 1000 }')
	echo "$ms" >>"$work/$2"
}
# storm_home: the guests' HOME and STANDBY-HOME lines since the last look:
# where the home and its standby are, a home's take-over timed (to the
# host's look at the logs)
storm_home() {
	for g in 1 2; do
		! storm_more "$g" STANDBY-HOME sbhome || sbhome=$g
		storm_more "$g" HOME home || continue
		home=$g sbhome=""
		[ -n "$hkill" ] || continue
		storm_ms "$hkill" storm.home
		echo "ntb: storm: $(($(date +%s) - s0))s guest $g is the home, $ms ms after the last one's kill"
		hkill=""
	done
}
# ntb_storm_report: what the storm did, from the guests' SIO-STORM lines:
# client runs, verified I/Os, failures by cause, take-overs, hangs; fails
# on a mismatched block, a hang or a kernel report in any guest's console
ntb_storm_report() {
	[ -n "${stormed:-}" ] || return 0
	for l in "$work"/g[0-9]*.log; do tr -d '\r' <"$l"; done >"$work/storm.all"
	r=0
	grep -a '^SIO-STORM RUN' "$work/storm.all" | awk '
		{ runs++; v += $11; mm += $13; if ($9 == 0) good++
		  if ($9 != 0) { i = index($0, " : "); c = substr($0, i + 3); gsub(/[0-9]+/, "N", c); why[c]++ } }
		END { printf "ntb: storm: %d client runs, %d ended well, %d verified I/Os, %d mismatched blocks\n", runs, good, v, mm
		      for (c in why) printf "ntb: storm:   %d failed: %s\n", why[c], c
		      exit mm > 0 }' || { echo "ntb: FAIL: storm: blocks read back differ"; r=1; }
	# a guest whose clients never verified anything tested nothing
	for g in $(storm_clients | sed 's/./& /g'); do
		grep -aq "^SIO-STORM RUN g$g #[0-9]* [a-z-]* seed [0-9]* rc 0 " "$work/storm.all" ||
			{ echo "ntb: FAIL: storm: no client run of guest $g ended well"; r=1; }
	done
	awk '{ n++; s += $1; if ($1 > m) m = $1 } END { if (n) printf "ntb: storm: %d take-over(s), %d ms mean, %d ms at most (to the host'"'"'s look at the logs, TCG)\n", n, s / n, m }' \
		"$work/storm.takeover"
	awk '{ n++; s += $1; if ($1 > m) m = $1 } END { printf "ntb: storm: %d home take-over(s)", n
		if (n) printf ", %d ms mean, %d ms at most (from the kill, with the link timeout and the hold; to the host'"'"'s look at the logs, TCG)", s / n, m
		printf "\n" }' "$work/storm.home"
	for w in KILLED-CLIENT KILLED-MANAGER NO-MANAGER REJOINED HOME STANDBY-HOME; do
		echo "ntb: storm: $(grep -ac "^SIO-STORM $w" "$work/storm.all") $w"
	done
	if grep -a '^SIO-STORM HANG' "$work/storm.all"; then echo "ntb: FAIL: storm: a client hung"; r=1; fi
	if grep -aE "^\[ *[0-9.]*\].*($SIO_KREPORT)" "$work/storm.all" | head -n 5 | grep .; then
		echo "ntb: FAIL: storm: a kernel report in a guest's console"; r=1
	fi
	return $r
}

# ntb_synced GUEST N: the name of the guest's N-th sync request, if it made it
ntb_synced() {
	# whole lines only (counted first): a guest may be in the middle of printing one
	whole=$(guest_log "$1" | wc -l)
	guest_log "$1" | head -n "$whole" | grep -ao 'SIO-NTB SYNC [0-9]* [A-Za-z0-9_-]*' |
		awk -v n="$2" '$3 == n { print $4; exit }'
}
# ntb_hellos K: each live guest that said HELLO since the last look (it
# joined late, or booted again) is told PHASE K
ntb_hellos() {
	for g in $live; do
		h=$(gget "$g" hello 0)
		if [ "$(guest_log "$g" | grep -ac '^SIO-NTB HELLO')" -gt "$h" ]; then
			to_guest "$g" "PHASE $1"
			gset "$g" hello $((h + 1))
		fi
	done
}
# ntb_phases: the guests' phases (ntb-sync.sh). A guest prints "SIO-NTB
# SYNC k NAME" and waits for "GO k" on its console; the k-th GO goes to
# every live guest once all of them asked for it, and the host acts at the
# phases named for its actions. A guest that joins late says "SIO-NTB
# HELLO" and is told "PHASE k". Until no guest is left, or TMO s after
# START (date +%s). k: the phases.
ntb_phases() {
	start=$1 tmo=$2
	live=$(seq 0 $((${SIO_NTB_GUESTS:-3} - 1)) | tr '\n' ' ') k=1 killed="" joined="" reset="" flapped="" stormed=""
	: >"$work/host.log"		# what the host saw pass
	while :; do
		now=$(date +%s)
		[ $((now - start)) -lt "$tmo" ] || { echo "ntb: FAIL: the guests ran past ${tmo}s"; stop_all; break; }
		still=""
		for g in $live; do
			p=$(gget "$g" pid)
			if kill -0 "$p" 2>/dev/null; then still="$still $g"; else
				# the guest ended (its suite done, or a panic with -no-reboot): said, with the phase
				echo "ntb: guest $g's QEMU (pid $p) exited at phase $k"
			fi
		done
		live=$still
		[ -n "$live" ] || break
		ntb_hellos $k
		name="" all=1
		for g in $live; do
			s=$(ntb_synced "$g" "$k")
			[ -n "$s" ] || { all=0; continue; }
			[ -z "$name" ] || [ "$s" = "$name" ] ||
				{ echo "ntb: FAIL: guests disagree on phase $k ($name, $s)"; stop_all; break 2; }
			name=$s
		done
		if [ "$name" = join ] && [ -z "$joined" ] && [ -n "$killed" ]; then
			act_join
			continue
		fi
		if [ $all = 0 ]; then sleep 0.3; continue; fi
		for g in $live; do to_guest "$g" "GO $k"; done
		case $name in
		kill-2) [ -n "$killed" ] || act_kill_2 ;;
		flap-1|flap-1b) case " $flapped " in *" $name "*) ;; *) act_flap_1 "$name" ;; esac ;;
		reset-1) [ -n "$reset" ] || act_reset_1 ;;
		storm) [ -n "$stormed" ] || act_storm ;;
		esac
		k=$((k + 1))
	done
}

# ntb_lines KIND: the suite's ($suite) "# KIND:" lines, and its variant's
# ("# KIND-V:"); then those of its guests' count, N of SIO_NTB_GUESTS
# ("# KIND@N:", "# KIND-V@N:": what needs a third guest)
# shellcheck disable=SC2154 # suite: the caller's
ntb_lines() {
	for at in "" "@${SIO_NTB_GUESTS:-3}"; do
		sed -n "s/^# $1$at: //p" "$suite"
		for v in $(echo "${SIO_NTB_VARIANT:-}" | tr , ' '); do
			sed -n "s/^# $1-$v$at: //p" "$suite"
		done
	done
}
# ntb_hosted: every action of the suite's "# host:" lines was done
ntb_hosted() {
	r=0
	for h in $(ntb_lines host); do
		case $h in
		kill-2) [ -n "$killed" ] || { echo "ntb: FAIL: guest 2 was never killed"; r=1; } ;;
		join) [ -n "$joined" ] || { echo "ntb: FAIL: guest 2 never booted again"; r=1; } ;;
		reset-1) [ -n "$reset" ] || { echo "ntb: FAIL: guest 1 was never reset"; r=1; } ;;
		flap-1|flap-1b) case " $flapped " in *" $h "*) ;; *) echo "ntb: FAIL: guest 1 was never stopped ($h)"; r=1 ;; esac ;;
		storm) [ -n "$stormed" ] || { echo "ntb: FAIL: the storm never came"; r=1; } ;;
		esac
	done
	return $r
}
# ntb_profiles_check: SIO_NTB_PROFILES names profiles of the suite's
# "# profiles:" line, or is unset
ntb_profiles_check() {
	[ -n "${SIO_NTB_PROFILES:-}" ] || return 0
	all=$(ntb_lines profiles)
	[ -n "$all" ] || { echo "ntb: FAIL: SIO_NTB_PROFILES=$SIO_NTB_PROFILES, but $(basename "$suite") has no profiles (unset it)"; return 1; }
	for p in $(echo "$SIO_NTB_PROFILES" | tr , ' '); do
		case " $all " in
		*" $p "*) ;;
		*) echo "ntb: FAIL: SIO_NTB_PROFILES: no profile '$p' in $(basename "$suite") (its profiles: $all)"; return 1 ;;
		esac
	done
}
# ntb_profile_out CHECK: CHECK (NAME-PROFILE, or NAME-PROFILE-MORE) is of a
# profile that SIO_NTB_PROFILES leaves out
ntb_profile_out() {
	[ -n "${SIO_NTB_PROFILES:-}" ] || return 1
	for p in $(ntb_lines profiles); do
		case ",$SIO_NTB_PROFILES," in *",$p,"*) continue ;; esac
		case $1 in *-"$p"|*-"$p"-*) return 0 ;; esac
	done
	return 1
}
# ntb_wanted: every check of the suite's "# want: LOG:CHECK" lines passed
# (a missing line is a failure too), said a line per check with the logs
# that lack it; those of profiles left out (SIO_NTB_PROFILES) are not wanted
ntb_wanted() {
	for want in $(ntb_lines want); do
		! ntb_profile_out "${want#*:}" || continue
		l=${want%%:*}
		# gN.last: guest N's latest boot's log (a storm boots guests again)
		case $l in g*.last) l=${l%.last}; l=$(gget "${l#g}" log "$l") ;; esac
		tr -d '\r' <"$work/$l.log" 2>/dev/null | grep -q "^SIO-VM PASS ${want#*:}\$" ||
			echo "${want#*:} ${want%%:*}"
	done | awk '!($1 in seen) { order[++n] = $1; seen[$1] = 1 } { who[$1] = who[$1] " " $2 }
		END { for (i = 1; i <= n; i++) printf "ntb: FAIL: no pass of %s in%s\n", order[i], who[order[i]]; exit n > 0 }'
}
# ntb_kernel_report LOG G: guest G's panic and kernel report lines
# (SIO_KREPORT), and its first report with a call trace, whole
ntb_kernel_report() {
	tr -d '\r' <"$work/$1.log" | grep -aE -m 3 "Kernel panic|$SIO_KREPORT" | sed "s/^/ntb: guest $2: /"
	# a kernel report of any kind (a stall, a hung task: no BUG line), its first, whole
	tr -d '\r' <"$work/$1.log" | awk -v g="$2" '{ a[NR] = $0 }
		/Modules linked in/ && !at { at = NR }
		END { for (i = at - 10; at && i <= at + 20; i++) if (i in a) print "ntb: guest " g ": " a[i] }'
}
# ntb_first_failure LOG G: guest G's first failure, with the failures in its
# output and the lines before it; or, where it failed nothing, its last lines
ntb_first_failure() {
	txt=$work/$1.txt
	vm_console "$work/$1.log" >"$txt"
	f=$(grep -an -m 1 '^SIO-VM FAIL' "$txt" | cut -d: -f1)
	if [ -n "$f" ]; then
		echo "ntb: guest $2's first failure, the failures in its output, the lines before it:"
		# a check's output comes before its result (run) or after it (waited)
		head -n $((f + 12)) "$txt" | tail -n 212 | grep -a '^    | .*FAIL' | head -n 5 |
			sed 's/^/ntb: | /'
		head -n "$f" "$txt" | tail -n 8 | sed 's/^/ntb: | /'
	else
		echo "ntb: guest $2 failed nothing; its last lines:"
		tail -n 4 "$txt" | sed 's/^/ntb: | /'
	fi
}
# ntb_logs: the guests' logs, in the order of their boots (g0 g1 g2 g2b
# g2c ...: guest 2 booted again)
ntb_logs() {
	for l in "$work"/g[0-9]*.log; do [ -f "$l" ] && basename "$l" .log; done
}
# ntb_failure_report: each guest's kernel reports and first failure, last,
# where the logs are long
ntb_failure_report() {
	for l in $(ntb_logs); do
		ntb_kernel_report "$l" "${l#g}"
		ntb_first_failure "$l" "${l#g}"
	done
}
