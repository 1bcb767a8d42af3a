#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/gpu-bundle-deps.sh [DIR]
#
# For a GPU machine that cannot install packages (no network) but has CUDA,
# a C compiler and meson/ninja: copy from THIS machine (Debian 12 after
# tools/install-deps.sh) what building and testing smartio needs beyond
# that into DIR (default build-gpudeps): the headers of liburing, libpciaccess,
# libhugetlbfs, json-c, libnvme's types.h and Criterion; those libraries with every
# library they load (glibc excepted); pkg-config files for them; and
# pkg-config itself. About 15 MB. On the GPU machine:
#
#   SMARTIO_DEPS=$PWD/build-gpudeps tools/gpu-check.sh
#
# gpu-check.sh then points pkg-config, the compiler and the loader at DIR.
# (build-* is git-ignored: with the device tool, carry ["build-gpudeps"].)

set -eu
cd "$(dirname "$0")/.."
D=${1:-build-gpudeps}
ML=/usr/lib/x86_64-linux-gnu
[ -f /usr/include/criterion/criterion.h ] || { echo "run tools/install-deps.sh first" >&2; exit 1; }
rm -rf "$D"
mkdir -p "$D/include/nvme" "$D/lib" "$D/pkgconfig" "$D/bin"

cp -a /usr/include/criterion /usr/include/liburing /usr/include/liburing.h \
	/usr/include/pciaccess.h /usr/include/json-c "$D/include/"
cp -a /usr/include/nvme/types.h "$D/include/nvme/"
[ -f /usr/include/hugetlbfs.h ] && cp -a /usr/include/hugetlbfs.h "$D/include/"

# A library under its soname, a link for -l, and what it loads, but glibc.
is_glibc() {
	case $(basename "$1") in
	libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|ld-linux*|linux-vdso*)
		return 0 ;;
	esac
	return 1
}
copy_lib() {	# PATH
	local real so
	real=$(readlink -f "$1")
	so=$(objdump -p "$real" 2>/dev/null | awk '/SONAME/ { print $2 }')
	[ -n "$so" ] || so=$(basename "$1")
	[ -e "$D/lib/$so" ] && return 0
	cp "$real" "$D/lib/$so"
	ldd "$real" | awk '/=> \// { print $3 }' | while read -r dep; do
		is_glibc "$dep" || copy_lib "$dep"
	done
}
for l in criterion uring pciaccess hugetlbfs json-c pkgconf; do
	for f in "$ML/lib$l.so" "$ML/lib$l.so".[0-9]; do
		if [ -e "$f" ]; then
			copy_lib "$f"
			so=$(objdump -p "$(readlink -f "$f")" | awk '/SONAME/ { print $2 }')
			ln -sf "$so" "$D/lib/lib$l.so"
			break
		fi
	done
done

pc() {	# NAME VERSION LIB
	cat >"$D/pkgconfig/$1.pc" <<EOF
prefix=\${pcfiledir}/..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: $1
Description: $1, bundled by tools/gpu-bundle-deps.sh
Version: $2
Libs: -L\${libdir} -l$3 -Wl,-rpath,\${libdir}
Cflags: -I\${includedir}
EOF
}
pc criterion "$(pkg-config --modversion criterion)" criterion
pc liburing "$(pkg-config --modversion liburing)" uring
pc pciaccess "$(pkg-config --modversion pciaccess)" pciaccess
pc json-c "$(pkg-config --modversion json-c)" json-c
pc libnvme "$(pkg-config --modversion libnvme)" nvme	# its headers only; never linked

# pkg-config (pkgconf), finding only the bundle's files
cp "$(readlink -f /usr/bin/pkgconf)" "$D/bin/pkgconf.bin"
cat >"$D/bin/pkg-config" <<'EOF'
#!/bin/sh
d=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
PKG_CONFIG_LIBDIR=$d/pkgconfig${PKG_CONFIG_LIBDIR_EXTRA:+:$PKG_CONFIG_LIBDIR_EXTRA} \
	exec "$d/bin/pkgconf.bin" "$@"
EOF
chmod +x "$D/bin/pkg-config"
echo "bundled into $D ($(du -sh "$D" | cut -f1)):"
ls "$D/lib" | tr '\n' ' '
echo
