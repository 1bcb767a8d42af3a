#!/bin/sh
# Build the NVMe manager's mailbox fuzz target (tests/fuzz/mailbox_fuzz.c,
# meson -Dfuzz=true: clang, libFuzzer, ASan, UBSan; the same build directory
# as run-ci.sh) and run it for a fixed time, corrupting the registry under
# the manager too. Exits non-zero on a crash, a leak of queue ids or an
# unanswered request.
# Usage: tests/fuzz/fuzz-mailbox.sh [SECONDS] (default 45)
set -eu
secs=${1:-45}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}	# inside the tree: never another checkout's
. "$src/tests/fuzz/fuzz-lib.sh"
fuzz_build "$src" "$build" tests/fuzz/mailbox-fuzz
fuzz_run mailbox "$build/tests/fuzz/mailbox-fuzz" "$secs" "$build/fuzz-mailbox-corpus" \
	-max_len=2048 -timeout=60
