#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# /init of the vm suite's initramfs: mount what the programs need, run the
# suite with its output on the serial console, power off.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm
mount -t tmpfs -o mode=1777 shm /dev/shm	# fabrics live here
mount -t tmpfs tmp /tmp
export PATH=/prog:/bin HOME=/tmp
sh /suite.sh </dev/null >/dev/console 2>&1
echo "SIO-VM DONE" >/dev/console
poweroff -f
