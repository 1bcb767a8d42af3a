# SPDX-License-Identifier: MIT
# Lending one kernel's NVMe to itself, for the single-guest suites
# (guest-suite.sh, uio-suite.sh, nvme-cli-suite.sh): module sets, a lender,
# nvme-manager and nvme-client in the background. Sourced from /vm/lend.sh
# after /vm/guest.sh; $FAB names the fabric, $SIO_LEND the lender (vfio).
# run-vm.sh's controllers:
# shellcheck disable=SC2034 # the suites' names
FAB=vmfab
MAIN=0000:00:04.0	# plain controller, 64 MiB
CMB=0000:00:05.0	# 16 MiB CMB, namespaces with 512 B and 4 KiB LBAs
SMALL=0000:00:06.0	# MDTS 16 KiB, two I/O queue pairs

load() {
	for m in $(cat /lib/modules/$1.list); do
		insmod /lib/modules/$m 2>/tmp/ins || grep -q 'File exists' /tmp/ins ||
			echo "insmod $m: $(cat /tmp/ins)"
	done
}
# lend BDF: start a lender and wait until it has registered the device.
lend() {
	: >/tmp/lend-$1.log	# not the last lender's log, before this one opens it
	smartio ${SIO_LEND:-vfio} lend "$1" --fabric $FAB >/tmp/lend-$1.log 2>&1 &
	echo $! >/tmp/lend-$1.pid
	i=0
	while ! grep -q '^lending' /tmp/lend-$1.log; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$(cat /tmp/lend-$1.pid)" 2>/dev/null; then
			cat /tmp/lend-$1.log; return 1
		fi
		sleep 0.1
	done
	cat /tmp/lend-$1.log
}
devid() { sed -n 's/.* as device \([0-9]*\) .*/\1/p' /tmp/lend-$1.log; }
# manager BDF [ARGS]: start nvme-manager on a lent device, wait until it serves.
manager() {
	b=$1; shift
	rm -f /tmp/mgr-$b.ready
	nvme-manager --fabric $FAB --device "$(devid "$b")" --ready-file /tmp/mgr-$b.ready "$@" \
		>/tmp/mgr-$b.log 2>&1 &
	echo $! >/tmp/mgr-$b.pid
	i=0
	while [ ! -s /tmp/mgr-$b.ready ]; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 "$(cat /tmp/mgr-$b.pid)" 2>/dev/null; then
			cat /tmp/mgr-$b.log; return 1
		fi
		sleep 0.1
	done
	cat /tmp/mgr-$b.log
}
stop_manager() {
	kill "$(cat /tmp/mgr-$1.pid)" 2>/dev/null
	wait "$(cat /tmp/mgr-$1.pid)"
	rc=$?
	sed 's/^/    | /' /tmp/mgr-$1.log
	[ $rc -eq 0 ] && res PASS "manager-exit-$1" || res FAIL "manager-exit-$1" "exit $rc"
}
# client BDF NAME ARGS...: an nvme-client in the background, result in /tmp/NAME.rc
client() {
	b=$1; n=$2; shift 2
	( timeout 120 nvme-client --fabric $FAB --device "$(devid "$b")" --timeout 10000 "$@" \
		>/tmp/$n.log 2>&1; echo $? >/tmp/$n.rc ) &
	echo $! >/tmp/$n.pid
}
# collect NAME...: wait for those clients (a bare `wait` would wait for lenders).
collect() {
	for n in "$@"; do wait "$(cat /tmp/$n.pid)"; done
	for n in "$@"; do
		sed 's/^/    | /' /tmp/$n.log
		[ "$(cat /tmp/$n.rc)" = 0 ] && res PASS "$n" || res FAIL "$n" "exit $(cat /tmp/$n.rc)"
	done
}
unlend() {
	kill "$(cat /tmp/lend-$1.pid)" 2>/dev/null
	wait "$(cat /tmp/lend-$1.pid)" 2>/dev/null
	sed 's/^/    | /' /tmp/lend-$1.log
}
