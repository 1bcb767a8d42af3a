#!/bin/sh
# Build smartio into BUILD_DIR (default: build) and run the simulated cluster:
# a lender with an emulated NVMe, the manager, clients on every other node
# doing verified I/O, and a multicast Identify.
set -e
cd "$(dirname "$0")/.."
b=${1:-build}
[ -f "$b/build.ninja" ] || meson setup "$b" >/dev/null
ninja -C "$b" >/dev/null
if [ -x tools/cluster-demo.sh ] && [ -x "$b/drivers/nvme/tools/nvme-client" ]; then
	exec tools/cluster-demo.sh "$b"
fi
exec "$b/examples/hello-fabric"
