#!/bin/sh
# Build smartio into BUILD_DIR (default: build) and run every test suite.
set -e
cd "$(dirname "$0")/.."
b=${1:-build}
[ -f "$b/build.ninja" ] || meson setup "$b" >/dev/null
ninja -C "$b"
meson test -C "$b" --print-errorlogs --num-processes 1
