#!/bin/sh
# SPDX-License-Identifier: MIT
# Name the kernel the vm suite boots and the NTB modules are built for.
#
# usage: kver.sh           its release, e.g. 6.1.0-56-amd64
#        kver.sh --image   the path of its vmlinuz
#        kver.sh --root    the root its modules lie under (ROOT/lib/modules/
#                          RELEASE): / for an installed kernel, the cache
#                          directory for one kernel/fetch-kernel.sh fetched
#
# The kernel is $SIO_VM_KERNEL, a vmlinuz path or a release (installed in
# /boot, or fetched into $SMARTIO_CACHE/kernels/RELEASE, which leaves the
# host's /boot and boot loader alone); without it, the newest
# /boot/vmlinuz-* whose modules are installed. Exit 1 if there is none.
set -eu
cache=${SMARTIO_CACHE:-/var/cache/smartio}/kernels
kernel=${SIO_VM_KERNEL:-}
case $kernel in
'')
	for k in /boot/vmlinuz-*; do
		[ -r "$k" ] && [ -d "/lib/modules/${k#/boot/vmlinuz-}/kernel" ] && kernel=$k
	done ;;
*/*) ;;
*)
	if [ -r "/boot/vmlinuz-$kernel" ]; then
		kernel=/boot/vmlinuz-$kernel
	else
		kernel=$cache/$kernel/boot/vmlinuz-$kernel
	fi ;;
esac
[ -n "$kernel" ] && [ -r "$kernel" ] || exit 1
kver=${kernel##*/vmlinuz-}
# The image's root: / for /boot/vmlinuz-X, DIR for DIR/boot/vmlinuz-X.
root=$(cd "$(dirname "$kernel")/.." && pwd)
[ -d "$root/lib/modules/$kver/kernel" ] || exit 1
case ${1:-} in
--image) echo "$kernel" ;;
--root) echo "$root" ;;
*) echo "$kver" ;;
esac
