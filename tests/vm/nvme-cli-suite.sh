# SPDX-License-Identifier: MIT
# The nvme-cli comparison, in the guest (nvme-cli.sh runs it): QEMU's NVMe at
# 00:04.0 under the kernel's nvme driver, read with nvme-cli (id-ctrl,
# smart-log, error-log, fw-log -o json); then the same controller on
# vfio-pci, lent, read with nvme-identify --json. Each JSON document goes to
# the console on one line, "SIO-VM-JSON TOOL COMMAND JSON", for the host to
# compare their keys.
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
fi
load vfio
run bind smartio vfio bind $MAIN
smartio create $FAB --nodes 2 >/dev/null
lend $MAIN >/dev/null || res FAIL lend
for c in id-ctrl smart-log error-log fw-log; do
	case $c in
	id-ctrl) a= ;; smart-log) a="--log smart" ;; error-log) a="--log error" ;; fw-log) a="--log fw" ;;
	esac
	if nvme-identify --fabric $FAB --device $(devid $MAIN) --json $a >/tmp/s-$c.json 2>/tmp/s-$c.err; then
		echo "SIO-VM-JSON smartio $c $(cat /tmp/s-$c.json)"
		res PASS nvme-identify-$c
	else
		res FAIL nvme-identify-$c "$(cat /tmp/s-$c.err)"
	fi
done
kill $(cat /tmp/lend-$MAIN.pid) 2>/dev/null
