#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what building the NTB modules for kernel KVER needs (Debian): the
# kernel's headers (linux-headers-KVER), and the Linux NTB framework's sources
# (drivers/ntb) taken from Debian's own kernel source package, linux-source-X.Y,
# at the version of the kernel's package. Debian's kernels ship without the
# NTB core (CONFIG_NTB is off); kernel/build.sh builds it and the upstream
# clients out of tree from these sources.
#
# Only drivers/ntb is kept, under $SMARTIO_CACHE (default /var/cache/smartio)
# /linux-ntb/KVER/: a second run finds it there and does nothing.
#
# usage: upstream.sh [KVER]   (as root; KVER: the kernel the vm suite boots)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${SMARTIO_CACHE:-/var/cache/smartio}
kver=${1:-$(sh "$here/kver.sh")} || { echo "ntb: no kernel with modules in /boot (apt-get install linux-image-amd64)" >&2; exit 1; }
dir=$cache/linux-ntb/$kver
say() { echo "ntb: $*"; }
export DEBIAN_FRONTEND=noninteractive

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
# A kernel kernel/fetch-kernel.sh unpacked brings its headers along.
fetched=$cache/kernels/$kver/package-version
[ -f "/boot/vmlinuz-$kver" ] || [ ! -s "$fetched" ] || fetched_ver=$(cat "$fetched")
# The headers of that kernel (they pull linux-kbuild and the compiler it was built with).
if [ -z "${fetched_ver:-}" ] && ! installed "linux-headers-$kver"; then
	apt-get install -y -qq --no-install-recommends "linux-headers-$kver" >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "linux-headers-$kver" >/dev/null; }
fi

[ -f "$dir/drivers/ntb/core.c" ] && [ -s "$dir/source-version" ] && exit 0

# The kernel's package version, e.g. 6.1.192-2 for 6.1.0-56-amd64, and its
# series.
# A fetched kernel's version is the one its image package had.
if [ -n "${fetched_ver:-}" ]; then
	kpkg=linux-image-$kver kpkgver=$fetched_ver
else
	kpkg=$(dpkg-query -S "/boot/vmlinuz-$kver" 2>/dev/null | cut -d: -f1 | head -n1)
	[ -n "$kpkg" ] || { say "no package owns /boot/vmlinuz-$kver: cannot tell which sources match it" >&2; exit 1; }
	kpkgver=$(dpkg-query -W -f='${Version}' "$kpkg")
fi
series=$(echo "$kver" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')
srcpkg=linux-source-$series
avail() { apt-cache madison "$srcpkg" 2>/dev/null | awk -v v="$1" '$3 == v { f = 1 } END { exit !f }'; }
avail "$kpkgver" || apt-get update -qq
if avail "$kpkgver"; then
	srcver=$kpkgver
else
	srcver=$(apt-cache policy "$srcpkg" | sed -n 's/^ *Candidate: //p')
	case $srcver in '' | '(none)') say "no $srcpkg in the package lists (a deb line for Debian's main archive)" >&2; exit 1 ;; esac
	say "WARNING: $kpkg is $kpkgver but $srcpkg $kpkgver is not available; using $srcpkg $srcver." >&2
	say "WARNING: the NTB modules are built from $srcver's drivers/ntb against $kver's headers;" >&2
	say "WARNING: kernel/build.sh checks vermagic and every symbol CRC, and refuses a mismatch." >&2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/smartio-ntb-src.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"	# apt's download sandbox user must be able to write there
id _apt >/dev/null 2>&1 && chown _apt "$tmp"
say "fetching $srcpkg $srcver (the kernel source; only drivers/ntb is kept)"
(cd "$tmp" && apt-get download -qq "$srcpkg=$srcver" 2>/dev/null)
deb=$(ls "$tmp"/*.deb)
# The package holds one tarball; xz reads all of it, tar keeps drivers/ntb.
dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$srcpkg.tar.xz" | xz -dc |
	tar -x -C "$tmp" "$srcpkg/drivers/ntb"
rm -f "$deb"
mkdir -p "$dir"
rm -rf "$dir/drivers"
mkdir -p "$dir/drivers"
mv "$tmp/$srcpkg/drivers/ntb" "$dir/drivers/ntb"
echo "$kpkgver" >"$dir/kernel-version"
echo "$srcver" >"$dir/source-version"	# written last: the cache is complete
say "drivers/ntb of $srcpkg $srcver in $dir"
