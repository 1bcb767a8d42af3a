#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the kernel's checkpatch.pl --strict over every C file under kernel/ and
# over smartio_ntb's uapi header (include/smartio/ntb.h), as a patch to
# drivers/ntb would be checked.
#
# checkpatch.pl and the two data files it reads (spelling.txt,
# const_structs.checkpatch) are taken from Debian's linux-source-6.1 package
# once and kept under $SMARTIO_CACHE (default /var/cache/smartio)/checkpatch/;
# the same run keeps ioctl-number.rst there too (the registry of ioctl
# magics). Exits 1 when checkpatch reports anything.
#
# usage: checkpatch.sh [FILE...]   (default: kernel/ and the uapi header)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dir=${SMARTIO_CACHE:-/var/cache/smartio}/checkpatch
srcpkg=${SIO_CHECKPATCH_SRC:-linux-source-6.1}
say() { echo "checkpatch: $*"; }

if [ ! -f "$dir/scripts/checkpatch.pl" ]; then
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/smartio-checkpatch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	chmod 755 "$tmp"	# apt's download sandbox user must be able to write
	id _apt >/dev/null 2>&1 && chown _apt "$tmp"
	say "fetching $srcpkg (only checkpatch and its data files are kept)"
	(cd "$tmp" && apt-get download -qq "$srcpkg" 2>/dev/null) ||
		{ apt-get update -qq && (cd "$tmp" && apt-get download -qq "$srcpkg"); }
	deb=$(ls "$tmp"/*.deb)
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$srcpkg.tar.xz" | xz -dc |
		tar -x -C "$tmp" "$srcpkg/scripts/checkpatch.pl" "$srcpkg/scripts/spelling.txt" \
			"$srcpkg/scripts/const_structs.checkpatch" \
			"$srcpkg/Documentation/userspace-api/ioctl/ioctl-number.rst"
	mkdir -p "$dir/scripts"
	for f in checkpatch.pl spelling.txt const_structs.checkpatch; do
		cp "$tmp/$srcpkg/scripts/$f" "$dir/scripts/$f"
	done
	cp "$tmp/$srcpkg/Documentation/userspace-api/ioctl/ioctl-number.rst" "$dir/"
	dpkg-deb -f "$deb" Version >"$dir/source-version"
	rm -f "$deb"
fi

cd "$root"
if [ $# -eq 0 ]; then
	set -- $(find kernel -name '*.[ch]' | sort) include/smartio/ntb.h
fi
# --no-tree: an out-of-tree checkout; --max-line-length: coding-style's 80
check() { perl "$dir/scripts/checkpatch.pl" --no-tree --strict --terse --max-line-length=80 "$@"; }
rc=0
for f in "$@"; do
	case $f in
	# an out-of-tree module's compat header is where the one kernel
	# version comparison lives, which in-tree code never has
	*/compat.h) check --ignore LINUX_VERSION_CODE -f "$f" || rc=1 ;;
	*) check -f "$f" || rc=1 ;;
	esac
done
exit $rc
