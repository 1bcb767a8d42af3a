# SPDX-License-Identifier: MIT
# Guests' half of bench/vm/ntb-doorbells.sh, run by tests/vm/run-ntb.sh as
# its suite (SIO_NTB_SUITE): the three NTB guests of the ntb fabric, guest 0
# with QEMU's NVMe, which it lends (vfio, nvme-lend, nvme-manager); guest 1
# reads it across the NTB; guest 2 only holds its port. ROUNDS times, the
# two doorbell paths in turn, their order alternating: guest 0 sets
# ntb_hw_ivshmem's bar_fwd (1: the lender's windows onto BAR0 are accepted,
# an emulated translation, and guest 1 stores its doorbells through its
# outbound window; 0: refused, the lender's relay forwards them from a
# mirror) and lends; then guest 0 reads (local: the lender's kernel maps
# BAR0 itself) and guest 1 reads (remote), nvme-client, QD1 4 KiB random
# reads over 32 MiB, RT seconds each. Each run's JSON goes to the console
# between "SIO-BENCH-BEGIN NAME" and "SIO-BENCH-END NAME"; a lend whose
# lender does not say the path asked for fails (nothing is measured under
# the wrong name).
# shellcheck disable=SC2034 # the libraries' n, RUN_LIMIT
RT=@RUNTIME@		# seconds per measured run
ROUNDS=@ROUNDS@		# the paths' turns
. /vm/guest.sh	# res, ok, no, run, until_ok
G=$(sed -n 's/.*sio\.guest=\([0-9]*\).*/\1/p' /proc/cmdline)
. /vm/nvmeof.sh	# ntb_up, ntb_lend, ntb_unlend, FAB
. /vm/ntb-sync.sh	# phase, dmesg_check
n=0
RUN_LIMIT=$((RT * 3 + 120))
FWD=/sys/module/ntb_hw_ivshmem/parameters/bar_fwd

# lend PATH: guest 0 lends the NVMe with its doorbells' PATH (window,
# relayed), and checks that its lender says so
lend() {
	if [ "$1" = window ]; then
		echo 1 >$FWD; said="stores through inbound window .*emulated forwarding"
	else
		echo 0 >$FWD; said="relayed from a mirror"
	fi
	ntb_lend
	grep "other kernels' doorbells" /tmp/lend.log | sed 's/^/    | /'
	grep -q "other kernels' doorbells: $said" /tmp/lend.log && ok "lend-$1-r$round" ||
		no "lend-$1-r$round" "the lender did not say '$said'"
}
# qd1 NAME WHO: guest WHO's QD1 reads, the others waiting
qd1() {
	phase "$1"
	if [ "$G" = "$2" ] &&
	   run "bench-$1" sh -c "nvme-client --fabric $FAB --op read --random --lba 0 --count 65536 \
		--bs 4k --qd 1 --time $RT --timeout 30000 --progress 0 --json >/tmp/$1.json"; then
		echo "SIO-BENCH-BEGIN $1"
		cat "/tmp/$1.json"
		echo "SIO-BENCH-END $1"
	fi
	phase "$1-end"
}

# guest 0 translates by pages: by whole regions, a window onto BAR0 would
# span more than BAR0, which the forwarding refuses
if [ "$G" = 0 ]; then ntb_up page_xlat=1; else ntb_up; fi
phase up
if [ "$G" = 0 ]; then
	run fabric-create smartio create $FAB --nodes 3
	echo "SIO-BENCH-INFO kernel $(uname -r), guest 0's QEMU NVMe $MAIN lent through vfio"
else
	until_ok 60 smartio status $FAB && ok fabric-join || no fabric-join "$(cat /tmp/until)"
fi
phase ready
round=1
while [ $round -le "$ROUNDS" ]; do
	if [ $((round % 2)) = 1 ]; then order="window relayed"; else order="relayed window"; fi
	# (way: run, in guest.sh, takes p)
	for way in $order; do
		[ "$G" = 0 ] && lend $way
		phase "lent-$way-$round"
		qd1 "local-$way-r$round" 0
		qd1 "remote-$way-r$round" 1
		[ "$G" = 0 ] && ntb_unlend
		phase "unlent-$way-$round"
	done
	round=$((round + 1))
done
dmesg_check dmesg
phase done
