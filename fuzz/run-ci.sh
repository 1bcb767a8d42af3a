#!/bin/sh
# Build the nvme-emu fuzz target with clang (libFuzzer, ASan, UBSan) in its
# own build directory and run it for a fixed time. Usage: fuzz/run-ci.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-${TMPDIR:-/tmp}/smartio-build-fuzz}
if [ ! -d "$build" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzz=true -Dtests=disabled -Dcuda=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi
ninja -C "$build" src/sim/nvme/nvme-emu-fuzz
corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
ASAN_OPTIONS=detect_leaks=0 \
	"$build/src/sim/nvme/nvme-emu-fuzz" -max_total_time="$secs" -max_len=8192 \
	-print_final_stats=1 "$corpus"
