#!/bin/sh
# Install the build into a scratch directory (meson install --destdir) and
# check what a user gets:
#  - every public header is installed, none includes a header that is not,
#    and each compiles on its own (tests/core/headers.sh on the install);
#  - each shared library exports exactly the functions its installed
#    headers declare (nothing internal: no sio__*, no reg_*), and the GPU
#    DMA plugin only its plugin symbols;
#  - a program and examples/hello-fabric.c build against the installed .pc
#    files and headers alone, and the program runs on the installed libraries.
# Usage: consumer.sh BUILD_DIR SOURCE_DIR BINDIR LIBDIR INCLUDEDIR NVME GPU
# (the directories as meson will install to; NVME and GPU: true or false)
set -eu
build=$1 src=$2 bindir=$3 libdir=$4 includedir=$5 nvme=$6 gpu=$7
cc=${CC:-cc}
fail=0
bad() { echo "FAIL: $*"; fail=1; }

dest=$(mktemp -d "${TMPDIR:-/tmp}/smartio-install.XXXXXX")
fabric=sio-consumer-$$
trap '"$dest$bindir/smartio" destroy "$fabric" --force >/dev/null 2>&1 || true; rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest.log" 2>&1 ||
	{ cat "$dest.log"; rm -f "$dest.log"; echo "FAIL: meson install"; exit 1; }
rm -f "$dest.log"
lib=$dest$libdir inc=$dest$includedir

# -- headers --------------------------------------------------------------
want=$(cd "$src/include" && find smartio -name '*.h' -o -name '*.cuh' | sort |
	{ if [ "$nvme" = true ]; then cat; else grep -v '^smartio/nvme[./]'; fi; } |
	{ if [ "$gpu" = true ]; then cat; else grep -v '^smartio/gpu[./]'; fi; })
have=$(cd "$inc" && find smartio -name '*.h' -o -name '*.cuh' | sort)
for h in $want; do
	[ -f "$inc/$h" ] || bad "include/$h is not installed (add it to include/meson.build)"
done
for h in $have; do
	grep -q "^#include \"" "$inc/$h" && bad "installed $h includes a header by \"...\": $(grep '^#include "' "$inc/$h" | tr '\n' ' ')"
	for i in $(sed -n 's/^#include <\(smartio\/[^>]*\)>.*/\1/p' "$inc/$h"); do
		[ -f "$inc/$i" ] || bad "installed $h includes <$i>, which is not installed"
	done
done
mkdir "$dest/hdr" && ln -s "$inc" "$dest/hdr/include"	# headers.sh wants ROOT/include
CC=$cc sh "$src/tests/core/headers.sh" "$dest/hdr" ||
	bad "an installed header does not compile on its own"

# -- exported symbols ----------------------------------------------------
# The functions the installed headers declare (gcc's -aux-info lists every
# prototype with its header), by library: gpu.h is libsmartio-gpu's,
# nvme/*.h libsmartio-nvme's, the rest libsmartio's (the bundles nvme.h and
# smartio.h declare nothing of their own).
for h in $have; do echo "#include <$h>"; done >"$dest/all.c"
: >"$dest/aux"
gcc -std=gnu11 -fsyntax-only -aux-info "$dest/aux" -I"$inc" "$dest/all.c" ||
	bad "the installed headers do not compile together"
sed -n 's|^/\* .*/\(smartio/[^:]*\.h\):[0-9]*:NC \*/ extern [^(]*[ *]\([a-z_0-9]*\) (.*|\1 \2|p' \
	"$dest/aux" >"$dest/declared"
awk -v d="$dest" '{ lib = $1 == "smartio/gpu.h" ? "smartio-gpu" : $1 ~ /^smartio\/nvme\// ? "smartio-nvme" : "smartio"
	print $2 >(d "/declared." lib) }' "$dest/declared"
exported() {	# SHARED_LIBRARY: its defined dynamic symbols, version nodes aside
	nm -D --defined-only "$1" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort
}
check_abi() {	# LIBRARY MAP: it exports exactly what its installed headers declare
	so=$lib/lib$1.so
	[ -f "$so" ] || { bad "lib$1.so is not installed"; return; }
	sort "$dest/declared.$1" >"$dest/want"
	exported "$so" >"$dest/have"
	for s in $(comm -13 "$dest/want" "$dest/have"); do
		bad "lib$1.so exports $s, which none of its installed headers declares"
	done
	for s in $(comm -23 "$dest/want" "$dest/have"); do
		bad "lib$1.so does not export $s, declared in $(grep " $s\$" "$dest/declared" | cut -d' ' -f1) (add it to $2)"
	done
	echo "lib$1.so exports $(wc -l <"$dest/have") functions, each declared in its installed headers"
}
check_abi smartio src/libsmartio.map
if [ "$nvme" = true ]; then
	check_abi smartio-nvme drivers/nvme/libsmartio-nvme.map
fi
if [ "$gpu" = true ]; then
	check_abi smartio-gpu drivers/gpu/libsmartio-gpu.map
	plugin=$(exported "$lib/libsmartio-gpudma.so" | grep -v '^sio_gpu_dma_plugin_' || true)
	[ -z "$plugin" ] || bad "libsmartio-gpudma.so exports more than its plugin symbols: $plugin"
fi

# -- a program built against the install ----------------------------------
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
export LD_LIBRARY_PATH=$lib
pc=smartio-nvme defs=
[ "$gpu" = true ] && pc=smartio-gpu defs=-DCONSUMER_GPU
if [ "$nvme" = true ]; then
	# shellcheck disable=SC2046 # word splitting of pkg-config output is wanted
	$cc -std=c11 -Wall -Wextra -Werror $defs "$src/tests/install/consumer.c" -o "$dest/consumer" \
		$(pkg-config --cflags --libs $pc) || bad "consumer.c does not build against $pc.pc"
	if [ -x "$dest/consumer" ]; then
		ldd "$dest/consumer" | grep -q "$lib/libsmartio.so" ||
			bad "the consumer does not load the installed libsmartio: $(ldd "$dest/consumer")"
		SMARTIO_QUIET=1 "$dest/consumer" "$fabric" || bad "the consumer failed"
	fi
fi
# shellcheck disable=SC2046
$cc -std=gnu11 -Wall -Wextra -Werror "$src/examples/hello-fabric.c" -o "$dest/hello-fabric" \
	$(pkg-config --cflags --libs smartio) || bad "examples/hello-fabric.c does not build against smartio.pc"
# ... and against the build tree, not installed (meson-uninstalled/*.pc)
PKG_CONFIG_PATH=$build/meson-uninstalled $cc -std=gnu11 -Wall -Wextra -Werror \
	"$src/examples/hello-fabric.c" -o "$dest/hello-fabric-uninstalled" \
	$(PKG_CONFIG_PATH=$build/meson-uninstalled PKG_CONFIG_SYSROOT_DIR= pkg-config --cflags --libs smartio) ||
	bad "examples/hello-fabric.c does not build against the uninstalled smartio.pc (build/meson-uninstalled)"

[ "$fail" -eq 0 ] && echo "installed headers, libraries and .pc files: OK"
exit "$fail"
