#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what building the NTB modules for kernel KVER needs (Debian): the
# kernel's headers (linux-headers-KVER), and the Linux NTB framework's sources
# (drivers/ntb) taken from Debian's own kernel source package, linux-source-X.Y,
# at the version of the kernel's package. Debian's kernels ship without the
# NTB core (CONFIG_NTB is off); kernel/build.sh builds it and the upstream
# clients out of tree from these sources. The kernel's NTB selftest
# (tools/testing/selftests/ntb: ntb_test.sh) comes along: the vm suite runs
# it in the guests.
#
# Only those two directories are kept, under $SMARTIO_CACHE (default
# /var/cache/smartio)/linux-ntb/KVER/: a second run finds them there and does
# nothing; a cache that lacks one (made before the selftest was kept) is
# completed from the same package.
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

# What is kept, and a file that says each part is there.
parts="drivers/ntb tools/testing/selftests/ntb"
have() {
	[ -s "$dir/source-version" ] && [ -f "$dir/drivers/ntb/core.c" ] &&
		[ -f "$dir/tools/testing/selftests/ntb/ntb_test.sh" ]
}
have && exit 0

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
say "fetching $srcpkg $srcver (the kernel source; only $parts are kept)"
(cd "$tmp" && apt-get download -qq "$srcpkg=$srcver" 2>/dev/null)
deb=$(ls "$tmp"/*.deb)
# The package holds one tarball; xz reads all of it, one tar pass keeps the
# parts.
# shellcheck disable=SC2046 # the parts, one word each
dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$srcpkg.tar.xz" | xz -dc |
	tar -x -C "$tmp" $(for p in $parts; do echo "$srcpkg/$p"; done)
rm -f "$deb"
mkdir -p "$dir"
old=$(cat "$dir/source-version" 2>/dev/null || true)
for p in $parts; do
	[ -d "$tmp/$srcpkg/$p" ] || { say "$srcpkg $srcver has no $p" >&2; exit 1; }
	# A part already there from this very version stays as it is: the
	# modules' build may be reading it.
	[ "$old" = "$srcver" ] && [ -d "$dir/$p" ] && continue
	rm -rf "${dir:?}/$p"
	mkdir -p "$(dirname "$dir/$p")"
	mv "$tmp/$srcpkg/$p" "$dir/$p"
done
echo "$kpkgver" >"$dir/kernel-version"
echo "$srcver" >"$dir/source-version"	# written last: the cache is complete
have || { say "the cache in $dir is still incomplete" >&2; exit 1; }
say "$parts of $srcpkg $srcver in $dir"
