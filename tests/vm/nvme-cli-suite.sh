# SPDX-License-Identifier: MIT
# The nvme-cli comparison, in the guest (nvme-cli.sh runs it): QEMU's NVMe at
# 00:04.0 under the kernel's nvme driver, read with nvme-cli (id-ctrl,
# smart-log, error-log, fw-log, id-ns -o json; get-feature); then the same
# controller on vfio-pci, lent, read with nvme-identify --json. Each JSON
# document goes to the console on one line, "SIO-VM-JSON TOOL COMMAND JSON",
# and each feature's value as "SIO-VM-FEAT nvme-cli FID VALUE", for the host
# to compare. Before the controller goes to vfio-pci, bind must
# refuse it while a filesystem on it is mounted, and refuse a virtio disk.
. /vm/guest.sh
. /vm/lend.sh
load nvme
i=0
while [ ! -d /sys/bus/pci/devices/$MAIN/nvme ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ctrl=$(ls /sys/bus/pci/devices/$MAIN/nvme 2>/dev/null | head -n1)
if [ -z "$ctrl" ] || [ ! -c /dev/$ctrl ]; then
	res FAIL nvme-driver "the kernel's nvme driver did not take $MAIN"
else
	res PASS nvme-driver
	for c in id-ctrl smart-log error-log fw-log; do
		if nvme $c /dev/$ctrl -o json >/tmp/$c.json 2>/tmp/$c.err; then
			echo "SIO-VM-JSON nvme-cli $c $(tr -d '\n' </tmp/$c.json)"
			res PASS nvme-cli-$c
		else
			res FAIL nvme-cli-$c "$(cat /tmp/$c.err)"
		fi
	done
	if nvme id-ns /dev/$ctrl -n 1 -o json >/tmp/id-ns.json 2>/tmp/id-ns.err; then
		echo "SIO-VM-JSON nvme-cli id-ns $(tr -d '\n' </tmp/id-ns.json)"
		res PASS nvme-cli-id-ns
	else
		res FAIL nvme-cli-id-ns "$(cat /tmp/id-ns.err)"
	fi
	# admin-passthru: Identify Controller's bytes, for nvme-identify's passthru
	if nvme admin-passthru /dev/$ctrl --opcode=0x06 --cdw10=1 --data-len=4096 --read -b \
		>/tmp/pt.bin 2>/tmp/pt.err; then
		echo "SIO-VM-SUM nvme-cli admin-passthru $(md5sum </tmp/pt.bin | cut -d' ' -f1)"
	else
		res FAIL nvme-cli-admin-passthru "$(cat /tmp/pt.err)"
	fi
	# get-feature prints "get-feature:0x05 (Error Recovery), Current value:0x..."
	for f in 1 2 4 5 6 7 8 10 11; do
		v=$(nvme get-feature /dev/$ctrl -f $f -n 1 2>&1 | sed -n 's/.*Current value: *\(0x\)\{0,1\}\([0-9a-fA-F]*\).*/\2/p')
		echo "SIO-VM-FEAT nvme-cli $f ${v:-none}"
	done
fi
# bind takes no function this host uses, --force or not (SPDK's setup.sh
# refuses the same), nor a virtio disk without --force.
load fs
VIRTIO=0000:00:0a.0
if [ -n "$ctrl" ] && mke2fs -q /dev/${ctrl}n1 && mkdir -p /mnt/main &&
   mount -t ext4 /dev/${ctrl}n1 /mnt/main; then
	expect_fail bind-refuses-mounted "${ctrl}n1 is mounted on /mnt/main" smartio vfio bind $MAIN
	expect_fail bind-force-refuses-mounted "mounted on /mnt/main.*--force does not" \
		smartio vfio bind --force $MAIN
	run list-in-use sh -c "smartio vfio list | tee /dev/stderr | grep $MAIN | grep -q 'mounted on /mnt/main'"
	umount /mnt/main
else
	res FAIL bind-refuses-mounted "no ext4 on /dev/${ctrl}n1 to mount"
fi
expect_fail bind-refuses-virtio "class 010000, virtio.*--force" smartio vfio bind $VIRTIO
load vfio
run bind smartio vfio bind $MAIN
smartio create $FAB --nodes 2 >/dev/null
lend $MAIN >/dev/null || res FAIL lend
for c in id-ctrl smart-log error-log fw-log id-ns get-feature; do
	case $c in
	id-ctrl) a= ;; smart-log) a="--log smart" ;; error-log) a="--log error" ;; fw-log) a="--log fw" ;;
	id-ns) a="--namespace 1" ;; get-feature) a="--features --namespace 1" ;;
	esac
	if nvme-identify --fabric $FAB --device $(devid $MAIN) --json $a >/tmp/s-$c.json 2>/tmp/s-$c.err; then
		echo "SIO-VM-JSON smartio $c $(cat /tmp/s-$c.json)"
		res PASS nvme-identify-$c
	else
		res FAIL nvme-identify-$c "$(cat /tmp/s-$c.err)"
	fi
done
if nvme-identify --fabric $FAB --device $(devid $MAIN) --admin-passthru --opcode 0x06 \
	--cdw10 1 --data-len 4096 --read -b >/tmp/s-pt.bin 2>/tmp/s-pt.err; then
	echo "SIO-VM-SUM smartio admin-passthru $(md5sum </tmp/s-pt.bin | cut -d' ' -f1)"
	res PASS nvme-identify-admin-passthru
else
	res FAIL nvme-identify-admin-passthru "$(cat /tmp/s-pt.err)"
fi
kill $(cat /tmp/lend-$MAIN.pid) 2>/dev/null
