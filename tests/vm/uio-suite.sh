# SPDX-License-Identifier: MIT
# The vm suite's uio variant, run by /init in a guest WITHOUT an IOMMU (q35,
# no intel-iommu) whose kernel command line reserves huge pages: QEMU's NVMe
# bound to uio_pci_generic and lent with `smartio uio lend`; the NVMe
# driver's programs run on it unchanged, and every result is checked in the
# data (QEMU completes a DMA it could not do with status 0): Identify's
# serial, clients' verified writes and reads, and the blocks read back
# through the kernel's own nvme driver afterwards. Then the refusals.
# Helpers (res, run, expect_fail, lend, manager, client, ...) are
# lib/guest.sh's and lib/lend.sh's.
. /vm/guest.sh
. /vm/lend.sh
SIO_LEND=uio
FAB=uiofab

echo "vm: guest up at ${t0}s, kernel $(uname -r), no IOMMU: $(cat /proc/cmdline)"
[ -z "$(ls /sys/kernel/iommu_groups 2>/dev/null)" ] && res PASS no-iommu ||
	res FAIL no-iommu "IOMMU groups exist"
run huge-pages-reserved sh -c 'grep HugePages_Total /proc/meminfo | tee /dev/stderr |
	awk "{exit !(\$2 >= 64)}"'
run modules-uio sh -c 'for m in $(cat /lib/modules/uio.list); do insmod /lib/modules/$m || exit 1; done'

# Refused before anything is set up: each names what is wrong and what to do.
expect_fail uio-error-not-bound 'not to uio_pci_generic.*smartio uio bind' \
	smartio uio lend $MAIN --fabric $FAB
run uio-bind smartio uio bind $MAIN
run uio-bound sh -c "ls -d /sys/bus/pci/devices/$MAIN/uio/uio* && ls /dev/uio*"
expect_fail uio-error-not-root 'needs root' vfio-nvme run-as 65534 smartio uio lend $MAIN --fabric $FAB
expect_fail uio-error-no-hugetlbfs 'no hugetlbfs is mounted' smartio uio lend $MAIN --fabric $FAB
expect_fail uio-error-bad-bdf 'not a PCI address' smartio uio lend 00:zz.0 --fabric $FAB
expect_fail uio-error-vfio-refuses 'no IOMMU is active' smartio vfio probe $MAIN

mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages
run fabric-create smartio create $FAB --nodes 1
run uio-lend-main lend $MAIN
run uio-lend-says sh -c "grep -q 'uio_pci_generic (/dev/uio[0-9]*), no IOMMU' /tmp/lend-$MAIN.log"
run uio-bus-master sh -c "cmd=\$(od -An -tx2 -j4 -N2 /sys/bus/pci/devices/$MAIN/config | tr -d ' ');
	echo command register \$cmd; [ \$((0x\$cmd & 4)) -ne 0 ]"
echo "vm: lent through uio at $(cut -d' ' -f1 /proc/uptime)s"

if command -v nvme-manager >/dev/null; then
	# Identify is DMA'd into a huge page by its physical address: its serial is
	# the one QEMU was given, so the data arrived.
	run uio-identify sh -c "nvme-identify --fabric $FAB --device $(devid $MAIN) >/tmp/id &&
		cat /tmp/id && grep -q 'serial  *sio-main' /tmp/id"
	# With no huge page free, a borrower's segments are ordinary shared memory
	# (the fabric falls back to tmpfs): the lender refuses them to the device.
	echo 0 >/proc/sys/vm/nr_hugepages
	expect_fail uio-error-not-huge 'not on huge pages' \
		nvme-identify --fabric $FAB --device $(devid $MAIN)
	echo 128 >/proc/sys/vm/nr_hugepages
	run huge-pages-back sh -c 'grep -q "HugePages_Free: *128" /proc/meminfo'
	run uio-manager manager $MAIN
	run uio-identify-via-manager sh -c "nvme-identify --fabric $FAB --device $(devid $MAIN) |
		grep -q 'nsid 1: 131072 blocks of 512 bytes'"
	# Two clients at once, each on its own queue pair: write, read back, compare.
	client $MAIN uio-client-1 --lba 16 --count 2032 --bs 4k --qd 4
	client $MAIN uio-client-2 --lba 2048 --count 2048 --bs 8k --qd 8 --random --ios 512 --seed 3
	collect uio-client-1 uio-client-2
	# A known pattern, read back by the kernel's driver below.
	client $MAIN uio-client-pattern --lba 4096 --count 256 --bs 4k --qd 2 --pattern 0x5c --flush
	collect uio-client-pattern
	# A 4 MiB data buffer spans two huge pages: served if they are physically
	# adjacent (and the data checked), refused by name if not; never wrong.
	nvme-client --fabric $FAB --device $(devid $MAIN) --lba 8192 --count 8192 --bs 256k \
		--qd 16 --timeout 10000 >/tmp/big.log 2>&1; rc=$?
	sed 's/^/    | /' /tmp/big.log
	if [ $rc -eq 0 ]; then res PASS uio-client-4mib-buffer "two adjacent huge pages, data verified"
	elif grep -q 'not physically contiguous' /tmp/big.log; then
		res PASS uio-client-4mib-buffer "refused: the huge pages are not adjacent"
	else res FAIL uio-client-4mib-buffer "exit $rc"; fi
	# A client killed mid-I/O: the lender releases what it mapped for it, and
	# the next client runs.
	nrel() { grep -c 'connection closed, [0-9]* mapping(s) released' /tmp/lend-$MAIN.log; }
	nq() { grep -ci 'client.*\(arriv\|join\|connect\)' /tmp/mgr-$MAIN.log; }
	before=$(nrel) q=$(nq)
	nvme-client --fabric $FAB --device $(devid $MAIN) --lba 16 --count 2032 --qd 4 \
		--time 30 >/tmp/victim.log 2>&1 &
	victim=$!
	# killed once the manager has made its queue pair, and a moment into its I/O
	i=0; while [ "$(nq)" -le "$q" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 0.5
	kill -9 $victim; wait $victim 2>/dev/null
	i=0; while [ "$(nrel)" -le "$before" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	run uio-killed-client-released sh -c "tail -n 3 /tmp/lend-$MAIN.log; [ $(nrel) -gt $before ]"
	client $MAIN uio-client-after-kill --lba 16 --count 2032 --bs 4k --qd 4
	collect uio-client-after-kill
	stop_manager $MAIN
	unlend $MAIN
	# The lender took bus mastering away as it stopped, and every huge page
	# given to the device went back to the pool.
	run uio-bus-master-off sh -c "cmd=\$(od -An -tx2 -j4 -N2 /sys/bus/pci/devices/$MAIN/config | tr -d ' ');
		echo command register \$cmd; [ \$((0x\$cmd & 4)) -eq 0 ]"
	run uio-huge-pages-free sh -c 'grep -E "HugePages_(Total|Free)" /proc/meminfo |
		tee /dev/stderr | awk "{v[\$1]=\$2} END {exit v[\"HugePages_Total:\"] != v[\"HugePages_Free:\"]}"'

	# The CMB controller: its admin SQ and a client's SQ in its own BAR2, at
	# the bus address from config space (the device decodes it, no DMA
	# mapping needed).
	run uio-bind-cmb smartio uio bind $CMB
	run uio-lend-cmb lend $CMB
	run uio-manager-cmb manager $CMB
	client $CMB uio-sq-in-cmb --nsid 1 --lba 2048 --count 256 --queue location=device
	collect uio-sq-in-cmb
	stop_manager $CMB
	unlend $CMB

	# The controller back to the kernel: what the clients wrote is on the disk.
	run uio-unbind smartio uio unbind $MAIN
	load nvme
	i=0; while ! ls /sys/bus/pci/devices/$MAIN/nvme/nvme*/nvme*n1 >/dev/null 2>&1 && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1)); done
	BLK=/dev/$(basename $(ls -d /sys/bus/pci/devices/$MAIN/nvme/nvme*/nvme*n1 2>/dev/null | head -n1) 2>/dev/null)
	head -c 131072 /dev/zero | tr '\0' '\134' >/tmp/5c.bin
	run uio-kernel-readback vfio-nvme kcheck $BLK /tmp/5c.bin $((4096 * 512))
else
	res SKIP nvme-driver "nvme-manager was not built"
	unlend $MAIN
fi
smartio destroy $FAB --force >/dev/null 2>&1
echo "vm: suite took $(cut -d' ' -f1 /proc/uptime)s of guest uptime"
