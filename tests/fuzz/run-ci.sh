#!/bin/sh
# Build the nvme-emu fuzz target with clang (libFuzzer, ASan, UBSan) in its
# own build directory and run it for a fixed time. Usage: tests/fuzz/run-ci.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}	# inside the tree: never another checkout's
if [ ! -d "$build" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzz=true -Dtests=disabled -Dcuda=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi
ninja -C "$build" tests/fuzz/nvme-emu-fuzz
. "$src/tests/fuzz/fuzz-lib.sh"
fuzz_run nvme-emu "$build/tests/fuzz/nvme-emu-fuzz" "$secs" "$build/fuzz-corpus" -max_len=8192
