# SPDX-License-Identifier: MIT
# The multi-guest suite's guest side (run-multi.sh), run by /init in each of
# three guests; sio.role= on the kernel command line says which. One shmwin
# fabric in the ivshmem window; each guest is one node and one kernel.
. /vm/guest.sh	# res, run, until_ok, measure, kernel_nvme_blk, readback_clients
FAB=mgfab
MAIN=0000:00:04.0			# QEMU's NVMe (guest 0 only)
EDU=0000:00:09.0			# QEMU's edu (guest 0 only, with vfio)
export SMARTIO_FABRIC_BACKEND=shmwin SMARTIO_SHMWIN=pci:0000:00:10.0 SMARTIO_QUIET=1
WIN=0000:00:10.0			# the window's ivshmem function
role=$(sed -n 's/.*sio\.role=\([a-z0-9]*\).*/\1/p' /proc/cmdline)
# How guest 0 lends the NVMe: vfio (IOMMU), or uio (no IOMMU: the window's bus address)
LEND=$(sed -n 's/.*sio\.lend=\([a-z]*\).*/\1/p' /proc/cmdline)
LEND=${LEND:-vfio}


# doorbell: where the window has doorbells, this kernel's receiver (vfio)
doorbell() {
	[ -e /sys/bus/pci/devices/$WIN/resource1 ] || return 0
	for m in $(cat /lib/modules/vfio.list); do insmod /lib/modules/$m 2>/dev/null; done
	smartio vfio bind $WIN >/dev/null || { res FAIL doorbell-bind; return 1; }
	smartio vfio doorbell $WIN --fabric $FAB >/tmp/db.log 2>&1 &
	dbpid=$!
	until_ok 30 grep -q '^doorbell: kernel' /tmp/db.log || { cat /tmp/db.log; res FAIL doorbell; }
}
# doorbell_end: stop the receiver; some interrupts must have come
doorbell_end() {
	[ -n "${dbpid:-}" ] || return 0
	kill $dbpid; wait $dbpid
	sed 's/^/    | /' /tmp/db.log
	n=$(sed -n 's/^doorbell: \([0-9]*\) interrupt.*/\1/p' /tmp/db.log)
	[ "${n:-0}" -gt 0 ] && res PASS doorbell-interrupts || res FAIL doorbell-interrupts "none came"
}
dbpid=

case $role in
lender)
	export SMARTIO_NODE=0
	run fabric-create smartio create $FAB --nodes 3
	doorbell
	for m in $(cat /lib/modules/$LEND.list); do insmod /lib/modules/$m 2>/dev/null; done
	if [ $LEND = uio ]; then
		[ -z "$(ls /sys/kernel/iommu_groups 2>/dev/null)" ] && res PASS no-iommu ||
			res FAIL no-iommu "IOMMU groups exist"
		mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages
	fi
	run bind smartio $LEND bind $MAIN
	# the NVMe driver's lender: it describes the doorbells the relay forwards
	nvme-lend $MAIN --fabric $FAB $([ $LEND = uio ] && echo --uio) >/tmp/lend.log 2>&1 &
	lpid=$!
	until_ok 60 grep -q '^lending' /tmp/lend.log && res PASS lend || { cat /tmp/lend.log; res FAIL lend; }
	cat /tmp/lend.log | sed 's/^/    | /'
	dev=$(sed -n 's/.* as device \([0-9]*\) .*/\1/p' /tmp/lend.log)
	# edu, lent with the edu driver's doorbells: guest 1 rings them through the relay
	if [ $LEND = vfio ]; then
		run edu-bind smartio vfio bind $EDU
		edu-lend $EDU --fabric $FAB >/tmp/edu-lend.log 2>&1 &
		epid=$!
		until_ok 60 grep -q '^lending' /tmp/edu-lend.log && res PASS edu-lend ||
			{ cat /tmp/edu-lend.log; res FAIL edu-lend; }
	fi
	# One Identify to a multicast group: subscribers in guests 1 and 2 (before the
	# manager: the issuer brings the controller up itself)
	run mcast-identify nvme-mcast-identify --fabric $FAB --device $dev --external
	nvme-manager --fabric $FAB --device $dev --ready-file /tmp/mgr.ready >/tmp/mgr.log 2>&1 &
	mpid=$!
	until_ok 120 test -s /tmp/mgr.ready && res PASS manager || { cat /tmp/mgr.log; res FAIL manager; }
	# Guest 2 killed and reclaimed; guest 1's five (identify and four clients) gone.
	until_ok 150 sh -c 'grep -q "node 2.*is gone" /tmp/mgr.log &&
		[ $(grep -c "on node 1 left" /tmp/mgr.log) -ge 5 ]'
	sed 's/^/    | /' /tmp/mgr.log
	grep -q 'node 2.*is gone' /tmp/mgr.log && res PASS dead-client-reclaimed ||
		res FAIL dead-client-reclaimed "the manager never deleted guest 2's queues"
	smartio status $FAB | sed 's/^/    | /'
	# The same QD1 reads from the lender's kernel: its own BAR0, no relay
	run qd1-local nvme-client --fabric $FAB --op read --lba 0 --count 256 --bs 4k --qd 1 \
		--ios 2000 --timeout 20000 && measure qd1-local
	kill $mpid; wait $mpid
	kill $lpid; wait $lpid
	sed 's/^/    | /' /tmp/lend.log
	if [ -n "${epid:-}" ]; then
		kill $epid; wait $epid
		sed 's/^/    | /' /tmp/edu-lend.log
	fi
	run unbind smartio $LEND unbind $MAIN
	readback_clients "$(kernel_nvme_blk $MAIN)"
	doorbell_end
	smartio destroy $FAB --force >/dev/null 2>&1
	;;
client1|client2)
	me=${role#client}
	export SMARTIO_NODE=$me
	until_ok 300 smartio status $FAB
	doorbell
	run mcast-subscriber nvme-mcast-identify --fabric $FAB --subscribe 0
	# the manager borrows the device alone first: wait until it serves (its mailbox)
	until_ok 300 sh -c "smartio status $FAB | grep -q nvme-mailbox"
	until_ok 60 nvme-identify --fabric $FAB && res PASS identify || res FAIL identify
	sed 's/^/    | /' /tmp/until
	# edu of guest 0 (sio.edu=1: it has one), its doorbells rung through the lender's relay
	if [ $me = 1 ] && grep -q 'sio\.edu=1' /proc/cmdline; then
		until_ok 60 sh -c "smartio status $FAB | grep -q $EDU"
		edu=$(smartio status $FAB | awk -v b=$EDU '$0 ~ b && $1 ~ /^[0-9]+$/ {print $1; exit}')
		run edu-relayed edu-dma --fabric $FAB --device "$edu" --ring 0x1000 --timeout 20000 &&
			grep -q 'raised and acknowledged through BAR0 (relayed' /tmp/out ||
			res FAIL edu-relayed-path "not through the relay"
	fi
	if [ $me = 1 ]; then lba=0; pat=0xa1; else lba=1024; pat=0xb2; fi
	run client-write-verify nvme-client --fabric $FAB --lba $lba --count 256 --bs 4k --qd 4 \
		--pattern $pat --flush --timeout 20000
	if [ $me = 2 ]; then
		echo "SIO-VM MARK long-client"
		nvme-client --fabric $FAB --lba 4096 --count 2048 --bs 4k --qd 4 --random --time 120
		res FAIL still-alive "guest 2 should have been killed"
	else
		run client-across-the-kill nvme-client --fabric $FAB --lba 2048 --count 1024 --bs 4k \
			--qd 2 --random --time 25 --timeout 20000
		run client-after-reclaim nvme-client --fabric $FAB --lba 3072 --count 256 --bs 4k --qd 2 \
			--timeout 20000
		# QD1 reads from this kernel: every doorbell goes through the lender's relay
		run qd1-remote nvme-client --fabric $FAB --op read --lba 0 --count 256 --bs 4k --qd 1 \
			--ios 2000 --timeout 20000 && measure qd1-remote
		doorbell_end
	fi
	;;
*)
	res FAIL role "no sio.role= on the kernel command line"
	;;
esac
echo "multi: guest $role took $(cut -d' ' -f1 /proc/uptime)s of uptime"
