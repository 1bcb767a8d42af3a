#!/bin/sh
# Build the NVMe manager's mailbox fuzz target (tests/fuzz/mailbox_fuzz.c)
# with clang, libFuzzer, ASan and UBSan in its own build directory, and run
# it for a fixed time, corrupting the registry under the manager too. Exits
# non-zero on a crash, a leak of queue ids or an unanswered request.
# Usage: tests/fuzz/fuzz-mailbox.sh [SECONDS] (default 45)
set -eu
secs=${1:-45}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_MAILBOX_BUILD_DIR:-$src/build-fuzz-mailbox}	# inside the tree
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dtests=disabled -Dcuda=disabled \
		-Dvm_tests=disabled -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debugoptimized >"$build.setup.log" 2>&1 ||
		{ cat "$build.setup.log"; exit 1; }
fi
ninja -C "$build" src/libsmartio.a drivers/nvme/emu/libsio-nvme-emu.a
# The manager itself is compiled here with coverage for the fuzzer.
clang -std=gnu11 -g -O1 -fsanitize=fuzzer $san \
	-I"$src/include" -I"$src/src/core" -I"$src/src/backend" -I"$src/drivers/nvme" \
	-I"$src/drivers/nvme/emu" -I"$build/src" \
	"$src/tests/fuzz/mailbox_fuzz.c" "$src/drivers/nvme/manager.c" \
	"$src/drivers/nvme/ctrl.c" "$src/drivers/nvme/err.c" "$src/drivers/nvme/dbbuf.c" "$src/drivers/nvme/aer.c" \
	"$build/drivers/nvme/emu/libsio-nvme-emu.a" "$build/src/libsmartio.a" \
	-luring -lhugetlbfs -lpthread -ldl $(pkg-config --libs pciaccess 2>/dev/null || true) \
	-o "$build/fuzz-mailbox"
. "$src/tests/fuzz/fuzz-lib.sh"
fuzz_run mailbox "$build/fuzz-mailbox" "$secs" "$build/fuzz-mailbox-corpus" -max_len=2048 -timeout=60
