# SPDX-License-Identifier: MIT
# The guests' side of run-ntb.sh's phases, sourced by its suites (ntb-suite.sh,
# ntb-fabric-suite.sh) from /vm: a guest prints "SIO-NTB SYNC n NAME" and
# waits for the host's "GO n" on its console; one that joins late prints
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
# phase NAME: wait until every live guest got here (run-ntb.sh answers GO n)
phase() {
	n=$((n + 1))
	echo "SIO-NTB SYNC $n $1"
	end=$(($(uptime_s) + 600))
	while [ "$(uptime_s)" -lt $end ]; do
		line=
		read -r -t 600 line </dev/console || true
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
