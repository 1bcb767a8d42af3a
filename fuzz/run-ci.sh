#!/bin/sh
# Build the nvme-emu fuzz target with clang (libFuzzer, ASan, UBSan) in its
# own build directory and run it for a fixed time. Usage: fuzz/run-ci.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}	# inside the tree: never another checkout's
if [ ! -d "$build" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzz=true -Dtests=disabled -Dcuda=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi
ninja -C "$build" src/sim/nvme/nvme-emu-fuzz
corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
log="$build/fuzz.log"
echo "fuzzing the controller's command handling for $secs s (log: $log)"
if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 \
	"$build/src/sim/nvme/nvme-emu-fuzz" -max_total_time="$secs" -max_len=8192 \
	-print_final_stats=1 "$corpus" >"$log" 2>&1; then
	tail -n 60 "$log"
	echo "nvme-emu fuzz: FAILED"
	exit 1
fi
grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" || true
echo "nvme-emu fuzz: no crash"
