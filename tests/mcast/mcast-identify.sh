#!/bin/bash
# One multicast Identify reaches every subscriber: the paper's 59 nodes, and 128;
# and 3 nodes whose every node subscribes, the issuer's too (--local-subscriber).
# Then --external, its subscribers started apart (as on other kernels) on
# nodes 2 and 4 of 5, as on an NTB whose ports, so nodes, are 0, 2 and 4.
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

# --external, subscribers on nodes 2 and 4 alone: their verdicts and the
# unicasts go to those nodes, not to the first two of the fabric
cleanup
"$SMARTIO" create "$F" --nodes 5 >/dev/null || fail create
"$EMU" --fabric "$F" --node 0 --backing ram:16M --ready-file "/tmp/$F.ready" >/dev/null 2>&1 &
EMU_PID=$!
for _ in $(seq 100); do [ -s "/tmp/$F.ready" ] && break; sleep 0.05; done
[ -s "/tmp/$F.ready" ] || fail "nvme-emu did not start"
"$MC" --fabric "$F" --node 2 --subscribe 0 >"/tmp/$F.s2" 2>&1 & s2=$!
"$MC" --fabric "$F" --node 4 --subscribe 0 >"/tmp/$F.s4" 2>&1 & s4=$!
out=$("$MC" --fabric "$F" --node 0 --json --external --subscribers 2) ||
	fail "--external, nodes 2 and 4: exited non-zero: $out"
wait $s2 && wait $s4 || fail "a subscriber failed: $(cat "/tmp/$F.s2" "/tmp/$F.s4")"
cat "/tmp/$F.s2" "/tmp/$F.s4"
rm -f "/tmp/$F.s2" "/tmp/$F.s4"
echo "$out" | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if d['subscribers'] == d['identical'] == 2 else 1)" ||
	fail "--external, nodes 2 and 4: not both got the data: $out"
echo "1 passed, 0 failed"
