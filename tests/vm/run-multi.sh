#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The multi-guest vm suite: three QEMU guests (TCG), each its own kernel,
# share one ivshmem window (ivshmem-plain over a host file; notifications are
# polled) and form one shmwin fabric. Guest 0 holds QEMU's NVMe through
# vfio (emulated VT-d) and runs nvme-manager; guests 1 and 2 run nvme-client
# and nvme-identify against it across kernels; guest 0 lends QEMU's edu
# too, with the edu driver's doorbells, and guest 1 rings them (the relay); guest 2's QEMU is SIGKILLed
# mid-I/O and guest 0's manager must reclaim its queues while guest 1 goes
# on; guest 0's kernel then reads the clients' blocks back through its own
# nvme driver. Exit 0 when every check passed, 1 on a failure, 77 to skip.
#
# usage: run-multi.sh BUILD_ROOT SOURCE_DIR [WORK_DIR]
# Its knobs (SIO_MULTI_WINDOW: doorbell or plain; SIO_MULTI_IOMMU=0: guest
# 0 lends through uio; SIO_VM_TIMEOUT, SIO_VM_KERNEL) are listed, with their
# defaults, in lib/host.sh's header.
set -eu
# shellcheck source=lib/host.sh
. "$2/lib/host.sh"
vm_setup "$1" "$2" "${3:-}" multi
lendby=vfio
[ "${SIO_MULTI_IOMMU:-1}" != 0 ] || { lendby=uio; SIO_MULTI_WINDOW=${SIO_MULTI_WINDOW:-plain}; }
variant=${SIO_MULTI_WINDOW:-doorbell}
[ $lendby = vfio ] || [ $variant = plain ] ||
	{ echo "multi: SIO_MULTI_IOMMU=0 takes SIO_MULTI_WINDOW=plain (no vfio for doorbells)"; exit 1; }
case $variant in doorbell|plain) ;; *) echo "multi: SIO_MULTI_WINDOW is doorbell or plain"; exit 1 ;; esac
# The initramfs of the vm suite, with this suite's script as /suite.sh.
vm_initramfs "$src/multi-suite.sh" "" ""
truncate -s 64M "$work/win"		# the window: ivshmem BAR2 in every guest
truncate -s 64M "$work/nvme.img"
tmo=${SIO_VM_TIMEOUT:-420}
iommu="-device intel-iommu,intremap=on,caching-mode=on"
if [ "$variant" = doorbell ]; then
	ivshmem_server multi "$work/win"
	window="-chardev socket,path=$work/ivs.sock,id=ivs -device ivshmem-doorbell,chardev=ivs,vectors=1,addr=0x10"
else
	window="-object memory-backend-file,id=win,share=on,mem-path=$work/win,size=64M -device ivshmem-plain,memdev=win,addr=0x10"
fi

# guest N ROLE EXTRA...: boot one guest in the background, console to gN.log.
guest() {
	n=$1 role=$2; shift 2
	# shellcheck disable=SC2086 # the window's QEMU arguments, one word each
	qemu_guest "$n" "g$n" 384 "rdinit=/init sio.role=$role $APPEND" /dev/null \
		-serial stdio -no-reboot $window "$@"
}
start=$(date +%s)
if [ $lendby = uio ]; then
	APPEND="sio.lend=uio hugepages=16" guest 0 lender \
		-drive file="$work/nvme.img",if=none,id=d0,format=raw \
		-device nvme,serial=sio-multi,drive=d0,addr=4
else
# with QEMU's edu too, lent with its own doorbells and rung from guest 1
APPEND="intel_iommu=on" guest 0 lender $iommu \
	-drive file="$work/nvme.img",if=none,id=d0,format=raw \
	-device nvme,serial=sio-multi,drive=d0,addr=4 -device edu,addr=9
fi
# guest 1 rings guest 0's edu where guest 0 has one (vfio)
edu=
[ $lendby = uio ] || edu=sio.edu=1
if [ "$variant" = doorbell ]; then
	APPEND="intel_iommu=on $edu" guest 1 client1 $iommu
	APPEND="intel_iommu=on" guest 2 client2 $iommu
else
	APPEND="$edu" guest 1 client1
	APPEND="" guest 2 client2
fi
echo "multi: three guests started (QEMU pids $pids), ivshmem-$variant window, NVMe lent through $lendby"
# A watchdog: no guest outlives the time limit (QEMU itself is killed, so
# the kill below reaches the guest, not a wrapper).
( t=0; while [ $t -lt "$tmo" ]; do sleep 5; t=$((t + 5)); done
  kill -KILL $pids ) >/dev/null 2>&1 &
watchdog=$!

# Kill guest 2's QEMU once its long client is under way.
i=0
while ! grep -q '^SIO-VM MARK long-client' "$work/g2.log" && [ $i -lt "$tmo" ]; do
	kill -0 "$(gget 2 pid)" 2>/dev/null || break
	sleep 1; i=$((i + 1))
done
if grep -q '^SIO-VM MARK long-client' "$work/g2.log"; then
	sleep 4
	pid2=$(gget 2 pid)
	kill -KILL "$pid2" && echo "multi: guest 2 (QEMU pid $pid2) SIGKILLed mid-I/O"
	echo "SIO-VM PASS guest2-killed" >>"$work/g2.log"
fi
for p in $pids; do wait $p || true; done
kill $watchdog 2>/dev/null || true
ivshmem_server_end
end=$(date +%s)
pids=""
fail=0
for n in 0 1 2; do
	echo "---- guest $n"
	vm_console "$work/g$n.log"
done
echo "multi: the guests ran for $((end - start)) s"
grep -q '^SIO-VM DONE' "$work/g0.log" || { echo "multi: FAIL: guest 0 did not finish"; fail=1; }
grep -q '^SIO-VM DONE' "$work/g1.log" || { echo "multi: FAIL: guest 1 did not finish"; fail=1; }
# What must have passed, whatever else did.
for want in g0:fabric-create g0:lend g0:mcast-identify g1:mcast-subscriber g2:mcast-subscriber \
	$([ $lendby = uio ] && echo g0:no-iommu) $([ $lendby = vfio ] && echo g0:edu-lend g1:edu-relayed) g0:manager g0:dead-client-reclaimed g0:readback-client1 \
	g0:readback-client2 g1:identify g1:client-write-verify g1:client-across-the-kill \
	g1:client-after-reclaim g2:identify g2:client-write-verify g2:guest2-killed \
	$([ "$variant" = doorbell ] && echo g0:doorbell-interrupts g1:doorbell-interrupts); do
	tr -d '\r' <"$work/${want%%:*}.log" | grep -q "^SIO-VM PASS ${want#*:}\$" ||
		{ echo "multi: FAIL: no pass of ${want#*:} in guest ${want%%:*}"; fail=1; }
done
echo "multi: QD1 4 KiB reads, measured in TCG guests (emulated CPUs and NVMe, load-dependent; not hardware figures):"
cat "$work"/g?.log | tr -d '\r' | sed -n 's/^SIO-VM MEASURE /multi:   /p'
nfail=$(cat "$work"/g?.log | grep -c '^SIO-VM FAIL' || true)
npass=$(cat "$work"/g?.log | grep -c '^SIO-VM PASS' || true)
echo "multi: $npass passed, $nfail failed"
pids=""
[ "$nfail" -eq 0 ] && [ $fail -eq 0 ] && exit 0
exit 1
