# SPDX-License-Identifier: MIT
# The vm suite's checks, run by /init in the guest. Each result is one line
# "SIO-VM PASS|FAIL|SKIP name [: detail]"; run-vm.sh counts them.
. /vm/guest.sh	# res, run, expect_fail, kernel_nvme_blk, readback_clients
. /vm/lend.sh	# load, lend, manager, client, collect, ...

echo "vm: guest up at ${t0}s, kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
[ -d /sys/kernel/iommu_groups/0 ] && res PASS iommu-active || res FAIL iommu-active "no IOMMU groups"
run modules-vfio sh -c 'load() { for m in $(cat /lib/modules/$1.list); do insmod /lib/modules/$m || exit 1; done; }; load vfio'

run vfio-list smartio vfio list --class 0108
expect_fail error-not-bound 'not to vfio-pci' smartio vfio probe $MAIN
for b in $MAIN $CMB $SMALL; do run bind-$b smartio vfio bind $b; done
run vfio-list-bound sh -c "smartio vfio list --class 010802 --vfio-only | tee /dev/stderr | grep -c yes | grep -qx 3"
run vfio-probe smartio vfio probe $MAIN
expect_fail error-permission 'permission denied' vfio-nvme run-as 65534 smartio vfio probe $MAIN
expect_fail error-bad-bdf 'not a PCI address' smartio vfio probe 00:zz.0
expect_fail error-no-device 'no PCI function' smartio vfio probe 0000:00:1d.7
echo "vm: first vfio Identify path ready at $(cut -d' ' -f1 /proc/uptime)s"

run fabric-create smartio create $FAB --nodes 1
run lend-main lend $MAIN
run identify vfio-nvme $FAB $MAIN identify
echo "vm: vfio-driven Identify done at $(cut -d' ' -f1 /proc/uptime)s"
run isolation vfio-nvme $FAB $MAIN isolation
run crash-cleanup vfio-nvme $FAB $MAIN crash
expect_fail error-group-busy 'busy' smartio vfio probe $MAIN
# A lender killed outright: the kernel drops its IOMMU mappings with its fds,
# the registry forgets the device, and the function can be lent again.
kill -9 $(cat /tmp/lend-$MAIN.pid); wait $(cat /tmp/lend-$MAIN.pid) 2>/dev/null
run lender-killed-group-free smartio vfio probe $MAIN
run lender-killed-device-gone sh -c "! smartio status $FAB | tee /dev/stderr | grep -q 'vfio $MAIN'"
run lend-main-again lend $MAIN
run identify-again vfio-nvme $FAB $MAIN identify
run lend-cmb lend $CMB
run cmb-sq vfio-nvme $FAB $CMB cmb

# The same devices lent again to a fabric whose segments are on huge pages.
unlend $MAIN
unlend $CMB
echo 64 >/proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages
FAB=vmhuge
run fabric-create-huge smartio create $FAB --nodes 1
run lend-main-huge lend $MAIN
run lend-cmb-huge lend $CMB
run vfio-write-huge env SIO_VM_EXPECT_HUGE=1 vfio-nvme $FAB $MAIN write /tmp/pattern.bin
# SGL descriptors and shadow doorbells, raw, on QEMU's controller (data compared).
run vfio-sgl vfio-nvme $FAB $MAIN sgl
run vfio-dbbuf vfio-nvme $FAB $MAIN dbbuf
run vfio-aer vfio-nvme $FAB $MAIN aer


# The project's NVMe driver, unchanged, on the vfio backend.
if command -v nvme-manager >/dev/null; then
	run drv-identify sh -c "nvme-identify --fabric $FAB --device $(devid $MAIN) | grep -v inactive"
	run drv-manager manager $MAIN
	# Three clients at once, each on its own queue pair, disjoint ranges.
	client $MAIN drv-client-1 --lba 16 --count 2032 --bs 4k --qd 4
	client $MAIN drv-client-2 --lba 2048 --count 2048 --bs 8k --qd 8 --random --ios 512 --seed 2
	# (its blocks are read back through the kernel's driver at the end)
	client $MAIN drv-client-3 --lba 4096 --count 256 --bs 4k --qd 2 --pattern 0xa7 --flush
	collect drv-client-1 drv-client-2 drv-client-3
	# A client asleep on its CQ's MSI-X vector: the eventfd the lender gave
	# vfio (VFIO_DEVICE_SET_IRQS); every block read back verified, and the
	# function's MSI-X interrupts counted by the kernel move while it runs
	# (its vectors are the client's only while it holds them).
	msix() { grep "vfio-msix.*($MAIN)" /proc/interrupts |
		awk '{ for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i } END { print s + 0 }'; }
	client $MAIN drv-irq --lba 16384 --count 2048 --bs 4k --qd 4 --completions irq --time 8s
	i=0; while [ "$(msix)" = 0 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	m0=$(msix); sleep 2; m1=$(msix)
	grep "vfio-msix.*($MAIN)" /proc/interrupts | sed 's/^/    | /'
	collect drv-irq
	run drv-irq-msix sh -c "grep -q 'completions: irq, [1-9]' /tmp/drv-irq.log &&
		echo 'MSI-X interrupts: $m0, 2 s later $m1' && [ $m1 -gt $m0 ]"
	# SGLs on QEMU's controller (the client verifies every block it reads back):
	# every command as one SGL Data Block, and the driver's own choice (SGL above
	# two pages); then shadow doorbells (this manager configured them) against
	# a manager without, QD1 and QD32 (TCG: timings are the emulator's, the
	# MMIO doorbell writes per I/O are the driver's).
	client $MAIN drv-sgl --lba 8192 --count 1024 --bs 32k --qd 4 --queue dptr=sgl
	collect drv-sgl
	client $MAIN drv-sgl-auto --lba 10240 --count 1024 --bs 16k --qd 2
	collect drv-sgl-auto
	client $MAIN drv-db-shadow-qd1 --op read --lba 16 --count 2032 --bs 4k --qd 1 --ios 1000 --random
	collect drv-db-shadow-qd1
	client $MAIN drv-db-shadow-qd32 --op read --lba 16 --count 2032 --bs 4k --qd 32 --ios 4000 --random
	collect drv-db-shadow-qd32
	stop_manager $MAIN
	run drv-manager-mmio manager $MAIN --shadow-doorbells off
	client $MAIN drv-db-mmio-qd1 --op read --lba 16 --count 2032 --bs 4k --qd 1 --ios 1000 --random
	collect drv-db-mmio-qd1
	client $MAIN drv-db-mmio-qd32 --op read --lba 16 --count 2032 --bs 4k --qd 32 --ios 4000 --random
	collect drv-db-mmio-qd32
	stop_manager $MAIN
	# Two namespaces (512 B and 4 KiB blocks) and the CMB on the second controller.
	run drv-identify-ns sh -c "nvme-identify --fabric $FAB --device $(devid $CMB) |
		tee /dev/stderr | grep -q 'blocks of 512 bytes' && nvme-identify --fabric $FAB \
		--device $(devid $CMB) | grep -q 'blocks of 4096 bytes'"
	run drv-manager-cmb manager $CMB
	client $CMB drv-ns1-512 --nsid 1 --count 1024 --bs 4k --qd 4
	client $CMB drv-ns2-4k --nsid 2 --count 256 --bs 16k --qd 4
	collect drv-ns1-512 drv-ns2-4k
	# QEMU's controller decodes CMB addresses only once the host has set
	# CMBMSC.CMSE with CBA = the BAR's bus address (NVMe 1.4 3.1.12).
	client $CMB drv-sq-in-cmb --nsid 1 --lba 2048 --count 256 --queue location=device
	collect drv-sq-in-cmb
	stop_manager $CMB
	# Small MDTS (16 KiB): 128 KiB requests must be split.
	run lend-small lend $SMALL
	run drv-manager-small manager $SMALL
	client $SMALL drv-mdts-split --bs 128k --count 4096 --qd 2
	collect drv-mdts-split
	# Two I/O queue pairs: a third client must be told there are none left.
	client $SMALL drv-queues-1 --count 2048 --bs 512 --qd 1 --time 6
	client $SMALL drv-queues-2 --lba 2048 --count 2048 --bs 512 --qd 1 --time 6
	i=0; while [ $(grep -ci 'client.*\(arriv\|join\|connect\)' /tmp/mgr-$SMALL.log) -lt 2 ] && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1)); done
	expect_fail drv-out-of-queues 'no I/O queue pair left' \
		nvme-client --fabric $FAB --device $(devid $SMALL) --count 8
	collect drv-queues-1 drv-queues-2
	stop_manager $SMALL
	unlend $SMALL
else
	res SKIP nvme-driver "nvme-manager was not built"
fi

# Give the main controller back to the kernel and read the data there.
unlend $MAIN
unlend $CMB
run unbind smartio vfio unbind $MAIN
# The two controllers behind the bridge share an IOMMU group: one goes to
# vfio-pci, the other to the kernel's nvme driver when it loads.
GRP1=$(smartio vfio list --class 010802 | awk 'NR > 1 && $1 !~ /^0000:00:/ {print $1}' | head -n1)
run bind-group-member smartio vfio bind $GRP1
load nvme
i=0; while ! ls /sys/bus/pci/devices/$MAIN/nvme/nvme*/nvme*n1 >/dev/null 2>&1 && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1)); done
ls /sys/bus/pci/drivers/nvme/ 2>/dev/null | grep 0000 | sed 's/^/    | nvme driver has /'
BLK=/dev/$(basename $(ls -d /sys/bus/pci/devices/$MAIN/nvme/nvme*/nvme*n1 2>/dev/null | head -n1) 2>/dev/null)
run kernel-readback vfio-nvme kcheck $BLK /tmp/pattern.bin
if command -v nvme-manager >/dev/null; then
	head -c 131072 /dev/zero | tr '\0' '\247' >/tmp/a7.bin
	run kernel-readback-driver vfio-nvme kcheck $BLK /tmp/a7.bin $((4096 * 512))
fi
smartio vfio list --class 010802 | sed 's/^/    | /'
expect_fail error-group-not-viable 'not viable' smartio vfio probe $GRP1
smartio destroy vmfab --force >/dev/null 2>&1
smartio destroy vmhuge --force >/dev/null 2>&1
# With an IOMMU on, the uio backend refuses and points at vfio (uio-suite.sh runs it without one).
expect_fail uio-refuses-iommu 'IOMMU is on.*smartio vfio lend' smartio uio lend $MAIN --fabric vmfab

# QEMU's edu device (1234:11e8, 28-bit DMA mask) and the example driver
# (examples/edu), unchanged from the simulator: DMA checked byte for byte,
# factorials, MSI and INTx, IOVAs under 2^28, addresses beyond the mask
# refused, QEMU's clamp, the lender gone mid-DMA.
EDU=0000:00:09.0
if command -v edu-dma >/dev/null; then
	FAB=vmedu
	run edu-fabric smartio create $FAB --nodes 1
	run edu-bind smartio vfio bind $EDU
	run edu-lend lend $EDU
	E="edu-dma --fabric $FAB --device $(devid $EDU) --timeout 20000"
	run edu-dma-polled sh -c "$E --rounds 2 --fact 10 --fact 12 | tee /dev/stderr |
		grep -q '2 round(s) of 4095 bytes verified byte for byte'"
	run edu-dma-msi sh -c "$E --irq --irq-kind msi --rounds 2 --size 100 --fact 5 |
		tee /dev/stderr | grep -q 'interrupt(s) taken (MSI)'"
	run edu-dma-intx sh -c "$E --irq --irq-kind intx --rounds 1 --fact 3 | tee /dev/stderr |
		grep -q 'interrupt(s) taken (INTx)'"
	run edu-iova-under-mask sh -c "io=\$($E --rounds 1 --fact 1 | tee /dev/stderr |
		sed -n 's/.*bus address 0x\([0-9a-f]*\) .*/\1/p'); [ -n \"\$io\" ] &&
		[ \$((0x\$io)) -lt \$((0x10000000)) ]"
	expect_fail edu-beyond-mask "DMA mask 0xfffffff (28 bits)" $E --rounds 0 --bus 0x10000000
	expect_fail edu-mask-no-room "DMA mask 0xfffff (20 bits)" $E --rounds 1 --dma-bits 20
	run edu-clamp sh -c "$E --rounds 0 --clamp | tee /dev/stderr | grep -q 'data verified'"
	# QEMU applies a register write before the store returns (the model
	# does when it next polls: tests/edu/edu-sim.sh shows that side)
	run edu-mmio-at-once sh -c "$E --rounds 0 --live-once | grep -q '(inverted)'"
	# The lender stops while the driver copies (each DMA takes QEMU's 100 ms).
	$E --irq --rounds 1000 --size 64 >/tmp/edu-gone.log 2>&1 &
	P=$!; i=0
	while ! grep -q 'round 2' /tmp/edu-gone.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	unlend $EDU
	wait $P; rc=$?
	sed 's/^/    | /' /tmp/edu-gone.log
	if [ $rc -ne 0 ] && grep -q "is gone" /tmp/edu-gone.log; then res PASS edu-lender-gone-mid-dma
	else res FAIL edu-lender-gone-mid-dma "exit $rc, wanted 'is gone'"; fi
	run edu-unbind smartio vfio unbind $EDU
	smartio destroy $FAB --force >/dev/null 2>&1
else
	res SKIP edu "edu-dma was not built"
fi
echo "vm: suite took $(cut -d' ' -f1 /proc/uptime)s of guest uptime"
