#!/bin/bash
# SPDX-License-Identifier: MIT
#
# cluster-demo.sh BUILD_DIR [CLIENT OPTIONS...]
#
# Brings up a simulated cluster of 8 nodes in a cascade, an emulated NVMe
# controller lent by node 0, the NVMe manager on the lender, and one client
# on every other node doing verified writes and reads at the same time on
# ranges of its own. Prints a per-client table and tears everything down,
# whatever happens (trap on exit). Exit status is non-zero if any client saw
# a mismatch or an error.

set -u
BUILD=${1:?usage: cluster-demo.sh BUILD_DIR [nvme-client options]}
shift
NODES=${NODES:-8}
SMARTIO=$BUILD/src/tools/smartio
EMU=$BUILD/drivers/nvme/emu/nvme-emu
MGR=$BUILD/drivers/nvme/tools/nvme-manager
CLIENT=$BUILD/drivers/nvme/tools/nvme-client
MCAST=$BUILD/drivers/nvme/tools/nvme-mcast-identify
for p in "$SMARTIO" "$EMU" "$MGR" "$CLIENT" "$MCAST"; do
	[ -x "$p" ] || { echo "cluster-demo: $p not found: build first" >&2; exit 1; }
done

FABRIC=demo-$$
WORK=$(mktemp -d /tmp/cluster-demo.XXXXXX)
PIDS=()

cleanup() {
	local p
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		p=${PIDS[i]}
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	"$SMARTIO" destroy "$FABRIC" --force >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_file() {	# FILE PID WHAT
	for _ in $(seq 200); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || { echo "cluster-demo: $3 exited:" >&2; cat "$WORK"/*.log >&2; exit 1; }
		sleep 0.05
	done
	echo "cluster-demo: $3 did not become ready" >&2
	exit 1
}

echo "== fabric $FABRIC: $NODES nodes, cascade"
"$SMARTIO" create "$FABRIC" --nodes "$NODES" --topology cascade || exit 1

echo "== node 0 lends an emulated NVMe controller (256 MiB of RAM)"
"$EMU" --fabric "$FABRIC" --node 0 --backing ram:256M --ready-file "$WORK/emu.ready" \
	>"$WORK/emu.log" 2>&1 &
PIDS+=($!)
wait_file "$WORK/emu.ready" $! nvme-emu

echo "== node 1 sends one Identify Controller to a multicast group every other node subscribed to"
"$MCAST" --fabric "$FABRIC" --node 1 || { echo "cluster-demo: multicast Identify FAILED" >&2; exit 1; }

echo "== node 0 runs the manager"
"$MGR" --fabric "$FABRIC" --node 0 --ready-file "$WORK/mgr.ready" >"$WORK/mgr.log" 2>&1 &
PIDS+=($!)
wait_file "$WORK/mgr.ready" $! nvme-manager

# 256 MiB of 512-byte blocks, split evenly among the clients.
BLOCKS=$((256 * 2048))
PER=$((BLOCKS / (NODES - 1)))
PER=$((PER / 8 * 8))
echo "== nodes 1..$((NODES - 1)), concurrently: 2048 random 4 KiB writes, then reads verified,"
echo "   each in a $((PER / 2048)) MiB range of its own"
CPIDS=()
for n in $(seq 1 $((NODES - 1))); do
	"$CLIENT" --fabric "$FABRIC" --node "$n" --lba $(((n - 1) * PER)) --count "$PER" \
		--random --ios 2048 --qd 8 --seed "$n" --json "$@" \
		>"$WORK/client$n.json" 2>"$WORK/client$n.err" &
	CPIDS+=($!)
done
FAIL=0
for i in "${!CPIDS[@]}"; do
	wait "${CPIDS[i]}" || FAIL=1
done

printf '\n%-5s %-4s %-7s %-6s %8s %9s %9s %9s %9s %10s %6s\n' node qid sq cq I/Os MiB/s \
	"p50 us" "p99 us" "p99.9 us" mismatches errors
echo "      (I/Os and MiB/s: writes and reads; latency: the verified reads, every one counted)"
for n in $(seq 1 $((NODES - 1))); do
	j=$WORK/client$n.json
	if [ ! -s "$j" ]; then
		printf '%-5s %s\n' "$n" "failed: $(head -c 200 "$WORK/client$n.err")"
		FAIL=1
		continue
	fi
	python3 - "$j" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
l = d["read"]["lat_us"]
print("%-5s %-4s %-7s %-6s %8d %9.1f %9.1f %9.1f %9.1f %10d %6d" % (
    sys.argv[2], d["qid"], d["sq"], d["cq"], d["ios"], d["mib_s"], l["p50"], l["p99"],
    l["p99_9"], d["mismatches"], d["errors"]))
PY
done
echo
echo "latencies are wall-clock on a simulated fabric (no latency model), not hardware figures"
if [ $FAIL -ne 0 ]; then
	echo "cluster-demo: FAILED (see above)" >&2
	cat "$WORK"/client*.err >&2
	exit 1
fi
echo "cluster-demo: all clients verified their data"
exit 0
