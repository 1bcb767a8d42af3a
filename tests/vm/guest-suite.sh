# SPDX-License-Identifier: MIT
# The vm suite's checks, run by /init in the guest. Each result is one line
# "SIO-VM PASS|FAIL|SKIP name [: detail]"; run-vm.sh counts them.
FAB=vmfab
MAIN=0000:00:04.0	# plain controller, 64 MiB
CMB=0000:00:05.0	# 16 MiB CMB, namespaces with 512 B and 4 KiB LBAs
SMALL=0000:00:06.0	# MDTS 16 KiB, two I/O queue pairs

t0=$(cut -d' ' -f1 /proc/uptime)
res() { echo "SIO-VM $1 $2${3:+ : $3}"; }
# run NAME CMD...: run a check, indent its output, report by exit status.
run() {
	n=$1; shift
	"$@" >/tmp/out 2>&1; rc=$?
	sed 's/^/    | /' /tmp/out
	if [ $rc -eq 0 ]; then res PASS "$n"; else res FAIL "$n" "exit $rc"; fi
	return $rc
}
# expect_fail NAME PATTERN CMD...: must fail with a message matching PATTERN.
expect_fail() {
	n=$1; pat=$2; shift 2
	"$@" >/tmp/out 2>&1; rc=$?
	sed 's/^/    | /' /tmp/out
	if [ $rc -ne 0 ] && grep -q "$pat" /tmp/out; then res PASS "$n"
	else res FAIL "$n" "exit $rc, wanted a message matching '$pat'"; fi
}
load() {
	for m in $(cat /lib/modules/$1.list); do
		insmod /lib/modules/$m 2>/tmp/ins || grep -q 'File exists' /tmp/ins ||
			echo "insmod $m: $(cat /tmp/ins)"
	done
}
# lend BDF: start a lender and wait until it has registered the device.
lend() {
	smartio vfio lend "$1" --fabric $FAB >/tmp/lend-$1.log 2>&1 &
	echo $! >/tmp/lend-$1.pid
	i=0
	while ! grep -q '^lending' /tmp/lend-$1.log; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 $(cat /tmp/lend-$1.pid) 2>/dev/null; then
			cat /tmp/lend-$1.log; return 1
		fi
		sleep 0.1
	done
	cat /tmp/lend-$1.log
}
unlend() {
	kill $(cat /tmp/lend-$1.pid) 2>/dev/null
	wait $(cat /tmp/lend-$1.pid) 2>/dev/null
	sed 's/^/    | /' /tmp/lend-$1.log
}

echo "vm: guest up at ${t0}s, kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
[ -d /sys/kernel/iommu_groups/0 ] && res PASS iommu-active || res FAIL iommu-active "no IOMMU groups"
run modules-vfio sh -c 'load() { for m in $(cat /lib/modules/$1.list); do insmod /lib/modules/$m || exit 1; done; }; load vfio'

run vfio-list smartio vfio list --class 0108
expect_fail error-not-bound 'not to vfio-pci' smartio vfio probe $MAIN
for b in $MAIN $CMB $SMALL; do run bind-$b smartio vfio bind $b; done
run vfio-list-bound sh -c "smartio vfio list --class 010802 --vfio-only | tee /dev/stderr | grep -c yes | grep -qx 3"
run vfio-probe smartio vfio probe $MAIN
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
run lend-cmb lend $CMB
run cmb-sq vfio-nvme $FAB $CMB cmb

# The same device lent again to a fabric whose segments are on huge pages.
unlend $MAIN
echo 64 >/proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages
FAB=vmhuge
run fabric-create-huge smartio create $FAB --nodes 1
run lend-main-huge lend $MAIN
run vfio-write-huge env SIO_VM_EXPECT_HUGE=1 vfio-nvme $FAB $MAIN write /tmp/pattern.bin

[ -f /tmp/suite-driver.sh ] && . /tmp/suite-driver.sh

# Give the main controller back to the kernel and read the data there.
unlend $MAIN
unlend $CMB
run unbind smartio vfio unbind $MAIN
load nvme
i=0; while [ ! -b /dev/nvme0n1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ls /sys/bus/pci/drivers/nvme/ 2>/dev/null | grep 0000 | sed 's/^/    | nvme driver has /'
run kernel-readback vfio-nvme kcheck /dev/nvme0n1 /tmp/pattern.bin
smartio destroy vmfab >/dev/null 2>&1
smartio destroy vmhuge >/dev/null 2>&1
echo "vm: suite took $(cut -d' ' -f1 /proc/uptime)s of guest uptime"
