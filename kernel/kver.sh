#!/bin/sh
# SPDX-License-Identifier: MIT
# Print the release of the kernel the vm suite boots (tests/vm/run-vm.sh): the
# one named by SIO_VM_KERNEL, else the newest /boot/vmlinuz-* whose modules
# are installed. The NTB modules are built for that kernel. Exit 1 if none.
set -eu
kernel=${SIO_VM_KERNEL:-}
if [ -z "$kernel" ]; then
	for k in /boot/vmlinuz-*; do
		[ -r "$k" ] && [ -d "/lib/modules/${k#/boot/vmlinuz-}/kernel" ] && kernel=$k
	done
fi
[ -n "$kernel" ] || exit 1
echo "${kernel#/boot/vmlinuz-}"
