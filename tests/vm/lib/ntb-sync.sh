# SPDX-License-Identifier: MIT
# The guests' side of run-ntb.sh's phases, and the checks its suites share,
# sourced by them (ntb-suite.sh, ntb-fabric-suite.sh, ntb-profiles-suite.sh)
# from /vm: a guest prints "SIO-NTB SYNC n NAME" and waits for the host's
# "GO n" on its console; one that joins late prints
# "SIO-NTB HELLO" and is told "PHASE n". Each wait is one long read bounded
# by the uptime: a read that timed out every second could split the host's
# line and lose its start, and the guest would wait for a GO already sent.
# The suite keeps n (the last phase); ok and no (a check's line) are guest.sh's.
# shellcheck disable=SC3045 # read -t: the guests' busybox sh has it
# A kernel report's lines (run-ntb.sh's failure report looks for them too):
# a fault that kills a kworker says "general protection fault" or "invalid
# opcode", no BUG nor Oops; any report with a call trace counts.
SIO_KREPORT='WARNING:|BUG:|Oops|general protection fault|invalid opcode:|Call Trace:'
# dmesg_check NAME: the kernel reported nothing
dmesg_check() {
	if dmesg | grep -E "$SIO_KREPORT" >/tmp/bad; then
		sed 's/^/    | /' /tmp/bad; no "$1" "the kernel complained"
	else
		ok "$1"
	fi
}
# bar64_check: where the host gave variant bar64 (sio.variant=), the NTB's
# BAR2 is above 4 GiB (run-ntb.sh fills the 32-bit PCI hole), where the
# firmware's memory type for it is write-back and the clients'
# write-combining maps of the peers' areas must still work
bar64_check() {
	case ",$(sed -n 's/.*sio\.variant=\([a-z0-9,-]*\).*/\1/p' /proc/cmdline)," in
	*,bar64,*) ;;
	*) return 0 ;;
	esac
	b=$(sed -n 3p /sys/bus/pci/devices/0000:00:10.0/resource | cut -d' ' -f1)
	if [ $((b)) -ge $((0x100000000)) ]; then ok bar64; else no bar64 "BAR2 at $b, below 4 GiB"; fi
}
uptime_s() { cut -d. -f1 /proc/uptime; }
# phase NAME: wait until every live guest got here (run-ntb.sh answers GO
# n), PHASE_S seconds at most (600 unless the suite says: a guest that waits
# out another's long check)
phase() {
	n=$((n + 1))
	# a suite's own look at the phase's end (ntb-fabric.sh: its node service)
	! command -v phase_hook >/dev/null 2>&1 || phase_hook
	echo "SIO-NTB SYNC $n $1"
	end=$(($(uptime_s) + ${PHASE_S:-600}))
	while [ "$(uptime_s)" -lt $end ]; do
		line=
		read -r -t "${PHASE_S:-600}" line </dev/console || true
		[ "$line" != "GO $n" ] || return 0
	done
	no "phase-$1" "no GO $n from the host"
	return 1
}
# hello: a guest that joins late asks run-ntb.sh which phase the others are at
hello() {
	echo "SIO-NTB HELLO"
	end=$(($(uptime_s) + 600))
	while [ "$(uptime_s)" -lt $end ]; do
		line=
		read -r -t 600 line </dev/console || true
		case $line in "PHASE "*) n=$((${line#PHASE } - 1)); return 0 ;; esac
	done
	no hello "no PHASE from the host"
	return 1
}
# link_wait STATE PORT...: ntb_tool's link with each PORT reaches STATE (Y or N)
# (the suite sets T, ntb_tool's directory, and pidx PORT, a port's index)
link_wait() {
	s=$1; shift
	for p in "$@"; do
		timeout 60 sh -c "echo $s > $T/peer$(pidx "$p")/link_event" ||
			{ echo "link with port $p not $s within 60 s"; return 1; }
	done
}
# pingpong NAME: ntb_pingpong loaded; the pings that reach port $ME in 6 s
# counted (the suite sets MOD, DBG, DEV and ME)
pingpong() {
	phase "$1-load"
	insmod $MOD/ntb_pingpong.ko delay_ms=100 || no "$1" "insmod ntb_pingpong"
	phase "$1-run"
	sleep 6
	c=$(cat $DBG/ntb_pingpong/$DEV/count 2>/dev/null)
	phase "$1-stop"
	rmmod ntb_pingpong
	echo "    | port $ME received $c pings"
	if [ "${c:-0}" -ge 3 ]; then ok "$1"; else no "$1" "only ${c:-no} pings reached port $ME"; diag; fi
}
# modset NAME: insmod the initramfs's module set NAME (host.sh's
# SIO_VM_MODSETS); a module that is in already is no failure
modset() {
	for m in $(cat "/lib/modules/$1.list"); do
		insmod "/lib/modules/$m" 2>/tmp/ins || grep -q 'File exists' /tmp/ins ||
			{ echo "insmod $m: $(cat /tmp/ins)"; return 1; }
	done
}
# net_up SET: the guests' network (run-ntb.sh's SIO_NTB_NET): the module
# set SET with the virtio-net's driver loaded, this guest's address on
# it 10.38.0.G+1 (the suite sets G), guest 0 reachable
net_up() {
	modset "$1" || { no net-up "the $1 modules did not load"; return 1; }
	ip link set lo up
	ip link set eth0 up && ip addr add "10.38.0.$((G + 1))/24" dev eth0 ||
		{ no net-up "no eth0: $(ls /sys/class/net)"; return 1; }
	[ "$G" = 0 ] && { ok net-up; return 0; }
	until_ok 60 ping -c 1 -W 1 10.38.0.1 && ok net-up || no net-up "guest 0 (10.38.0.1) unreachable"
}
# diag: the kernel's last words on NTB, after a failure
diag() {
	dmesg | grep -i 'ntb' | tail -n 40 | sed 's/^/    | /'
}
