#!/bin/sh
# Build the nvme-emu fuzz target (meson -Dfuzz=true: clang, libFuzzer, ASan,
# UBSan) in its own build directory and run it for a fixed time.
# Usage: tests/fuzz/run-ci.sh [SECONDS] (default 60)
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}	# inside the tree: never another checkout's
. "$src/tests/fuzz/fuzz-lib.sh"
fuzz_build "$src" "$build" tests/fuzz/nvme-emu-fuzz
fuzz_run nvme-emu "$build/tests/fuzz/nvme-emu-fuzz" "$secs" "$build/fuzz-corpus" -max_len=8192
