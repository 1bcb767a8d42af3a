#!/bin/sh
# Build smartio into BUILD_DIR (default: build) and run every test suite
# (unit, integration, vm, install). Meson options in $SMARTIO_MESON_ARGS
# (e.g. "-Dwerror=true -Dnvme=enabled") apply to a new build directory and
# are set on an existing one.
set -e
cd "$(dirname "$0")/.."
b=${1:-build}
# shellcheck disable=SC2086 # SMARTIO_MESON_ARGS is a list of options
if [ ! -f "$b/build.ninja" ]; then
	meson setup "$b" ${SMARTIO_MESON_ARGS:-} >/dev/null
elif [ -n "${SMARTIO_MESON_ARGS:-}" ]; then
	meson configure "$b" $SMARTIO_MESON_ARGS
fi
ninja -C "$b"
# vm-long: variants run by hand (meson test -C build --suite vm-long)
meson test -C "$b" --print-errorlogs --num-processes 1 --no-suite vm-long
