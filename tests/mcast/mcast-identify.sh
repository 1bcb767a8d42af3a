#!/bin/bash
# One multicast Identify reaches every subscriber: the paper's 59 nodes, and 128;
# and 3 nodes whose every node subscribes, the issuer's too (--local-subscriber).
# usage: mcast-identify.sh SMARTIO NVME_EMU NVME_MCAST_IDENTIFY
set -u
SMARTIO=$1 EMU=$2 MC=$3
export SMARTIO_QUIET=1
F=t-mcast-$$
EMU_PID=
cleanup() {
	[ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null && wait "$EMU_PID" 2>/dev/null
	"$SMARTIO" destroy "$F" --force >/dev/null 2>&1
	rm -f "/tmp/$F.ready"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

for subs in 59 128 3; do
	cleanup
	nodes=$((subs + 1)) local=""
	[ "$subs" != 3 ] || nodes=3 local=--local-subscriber
	"$SMARTIO" create "$F" --nodes $nodes --topology cascade --per-switch 16 >/dev/null || fail create
	"$EMU" --fabric "$F" --node 0 --backing ram:16M --ready-file "/tmp/$F.ready" >/dev/null 2>&1 &
	EMU_PID=$!
	for _ in $(seq 100); do [ -s "/tmp/$F.ready" ] && break; sleep 0.05; done
	[ -s "/tmp/$F.ready" ] || fail "nvme-emu did not start"
	out=$("$MC" --fabric "$F" --node 1 --json $local) || fail "nvme-mcast-identify exited non-zero: $out"
	echo "$out"
	echo "$out" | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if d['subscribers'] == d['identical'] == $subs else 1)" ||
		fail "not every subscriber got the data"
	echo "$out" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['multicast_commands'] == 1 else 1)" ||
		fail "more than one command"
done
echo "1 passed, 0 failed"
