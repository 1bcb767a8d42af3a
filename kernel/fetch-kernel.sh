#!/bin/sh
# SPDX-License-Identifier: MIT
# Fetch a second Debian kernel for the vm suite and the NTB modules' build,
# without installing it: the image, its modules, headers and kbuild packages
# are unpacked under $SMARTIO_CACHE/kernels/RELEASE, a root of their own, so
# the host's /boot and boot loader are left alone (installing the image
# would make a developer's machine boot it). Debian's 12 carries 6.12 next
# to its 6.1 in the security archive; the NTB modules must build and load
# on both (docs/ntb.md).
#
# usage: fetch-kernel.sh [SERIES]   (default 6.12; as root)
# Prints the release fetched (e.g. 6.12.117+deb12-amd64). A second run
# finds it in the cache and only prints it. SIO_VM_KERNEL=RELEASE then
# boots it (kernel/kver.sh); kernel/build.sh builds the modules for it.
set -eu
series=${1:-6.12}
cache=${SMARTIO_CACHE:-/var/cache/smartio}/kernels
say() { echo "fetch-kernel: $*" >&2; }
export DEBIAN_FRONTEND=noninteractive

# The newest release of the series that the package lists name.
newest() {
	apt-cache search --names-only "^linux-image-$series\.[0-9]+\+deb12-amd64\$" 2>/dev/null |
		awk '{ print $1 }' | sed 's/^linux-image-//' | sort -V | tail -n1
}
kver=$(newest)
[ -n "$kver" ] || { apt-get update -qq; kver=$(newest); }
if [ -z "$kver" ]; then
	# No package lists (offline): a release already in the cache serves.
	kver=$(ls -d "$cache/$series".*+deb12-amd64 2>/dev/null | sed 's|.*/||' | sort -V | tail -n1)
	[ -n "$kver" ] || { say "no linux-image-$series.*+deb12-amd64 in the package lists"; exit 1; }
fi
root=$cache/$kver
if [ -s "$root/package-version" ]; then
	echo "$kver"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/smartio-kernel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"	# apt's download sandbox user must be able to write there
id _apt >/dev/null 2>&1 && chown _apt "$tmp"
say "fetching linux-image-$kver and its headers (unpacked into $root, not installed)"
(cd "$tmp" && apt-get download -qq "linux-image-$kver" "linux-headers-$kver" \
	"linux-headers-${kver%-amd64}-common" "linux-kbuild-${kver%-amd64}" 2>/dev/null)
rm -rf "$root.new"
mkdir -p "$root.new"
for d in "$tmp"/*.deb; do dpkg -x "$d" "$root.new"; done
hdr=$root/usr/src/linux-headers-$kver
# The headers' Makefile and the modules' build link name /usr/src: make
# them name this root instead (the relative scripts links already do).
sed -i "s|^include /usr/src/|include $root/usr/src/|" "$root.new/usr/src/linux-headers-$kver/Makefile"
ln -sfn "$hdr" "$root.new/lib/modules/$kver/build"
ln -sfn "$root/usr/src/linux-headers-${kver%-amd64}-common" "$root.new/lib/modules/$kver/source"
depmod -b "$root.new" "$kver"
dpkg-deb -f "$tmp/linux-image-$kver"_*.deb Version >"$root.new/package-version"
rm -rf "$root"
mv "$root.new" "$root"	# complete, or not there at all
say "linux $kver in $root ($(du -sh "$root" | cut -f1))"
echo "$kver"
