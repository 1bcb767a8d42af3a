# SPDX-License-Identifier: MIT
# The guests' library: what every guest suite reports with. Sourced from
# /vm/guest.sh (run-vm.sh puts tests/vm/lib/*.sh there). Each result is one
# line "SIO-VM PASS|FAIL|SKIP name [: detail]"; the host scripts count them.
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
# The kernel's nvme driver takes PCI function $1 back; prints its namespace's
# block device once it is there (until_ok: the calling suite's).
kernel_nvme_blk() {
	for m in $(cat /lib/modules/nvme.list); do insmod /lib/modules/$m 2>/dev/null; done
	until_ok 30 sh -c "ls -d /sys/bus/pci/devices/$1/nvme/nvme*/nvme*n1" >/dev/null
	echo /dev/$(basename $(ls -d /sys/bus/pci/devices/$1/nvme/nvme*/nvme*n1 | head -n1))
}

# The blocks two clients wrote (256 of 0xa1 at block 0, 256 of 0xb2 at
# block 1024), read back by the kernel from block device $1.
readback_clients() {
	head -c $((256 * 512)) /dev/zero | tr '\0' '\241' >/tmp/a1.bin
	head -c $((256 * 512)) /dev/zero | tr '\0' '\262' >/tmp/b2.bin
	run readback-client1 vfio-nvme kcheck $1 /tmp/a1.bin 0
	run readback-client2 vfio-nvme kcheck $1 /tmp/b2.bin $((1024 * 512))
}
