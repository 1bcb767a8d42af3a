#!/bin/bash
# A running fabric, watched: during an nvme-client run, two readings of
# `smartio nvme stats --json --watch` a second apart show a non-zero rate for
# that client's queue pair, its I/Os counted and its published latency, the
# emulated controller's arbitration counters for its SQ and where the
# client's time went (waiting, off the CPU);
# `smartio top` (plain lines off a terminal) lists it; `smartio status
# --json` parses with a device named a"b\ and lists the borrows; --dot is a
# graph Graphviz renders (where dot is installed); `smartio list --json` has
# the fabric. A program started with --background lets go of a pipe.
# Usage: live-stats.sh SMARTIO NVME-EMU NVME-MANAGER NVME-CLIENT EDU-EMU
set -u
S=$1 EMU=$2 MGR=$3 CLIENT=$4 EDU=$5
export SMARTIO_QUIET=1
unset SMARTIO_NODE
F=t-live-$$
T=$(mktemp -d)
trap '"$S" destroy "$F" --force >/dev/null 2>&1; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

"$S" create "$F" --nodes 3 >/dev/null || fail "create"
timeout 60 "$EMU" --fabric "$F" --backing ram:32M --background >/dev/null || fail "nvme-emu"
# through a pipe: its reader sees the end once the device serves, not when it stops
timeout 60 "$EDU" --fabric "$F" --node 1 --name 'a"b\' --background 2>&1 | timeout 30 cat >/dev/null ||
	fail "edu-emu --background kept the pipe of its caller"
timeout 60 "$MGR" --fabric "$F" --background --quiet 2>"$T/mgr.log" || { cat "$T/mgr.log"; fail "nvme-manager"; }
timeout 60 "$CLIENT" --fabric "$F" --node 2 --op read --random --qd 4 --time 4 --progress 1 \
	--json >"$T/client.json" 2>"$T/client.err" &
CL=$!
sleep 1
timeout 30 "$S" nvme stats "$F" --json --watch 1 --count 2 >"$T/stats" || fail "smartio nvme stats"
timeout 30 "$S" top "$F" --count 1 >"$T/top" || fail "smartio top"
wait $CL || { cat "$T/client.err"; fail "the client failed"; }
sed -n 2p "$T/stats" >"$T/second.json"
py "$T/second.json" '[q for c in d["clients"] if c["node"] == 2 for q in c["queues"] if q["rate"]["iops"] > 0 and q["reads"] > 0]' ||
	{ cat "$T/stats"; fail "no rate for the client's queue pair in the second reading"; }
qid=$(python3 -c "import json; print(json.load(open('$T/client.json'))['qid'])")
py "$T/second.json" "any(q['qid'] == $qid and q['lat_us']['ios'] > 0 for c in d['clients'] for q in c['queues'])" ||
	fail "the client's published latency is not there"
py "$T/second.json" "any(q['qid'] == $qid and q['ctrl_fetched'] > 0 and q['wait_ns'] + q['offcpu_ns'] > 0 for c in d['clients'] for q in c['queues'])" ||
	{ cat "$T/second.json"; fail "no controller counters (ctrl_fetched) or client time (wait_ns, offcpu_ns) for queue $qid"; }
grep -qE "^2 +[0-9]+ +[0-9]+ +$qid " "$T/top" || { cat "$T/top"; fail "smartio top does not list node 2's queue $qid"; }
grep -q "progress\|of 4 s" "$T/client.err" || { cat "$T/client.err"; fail "no progress line on a 4 s run"; }
echo "live counters: a rate for queue $qid, its latency, in nvme stats and top"

"$S" status "$F" --json >"$T/status.json" || fail "status --json"
py "$T/status.json" '"a\"b\\" in [x["name"] for x in d["devices"]] and len(d["borrows"]) >= 1' ||
	{ cat "$T/status.json"; fail "status --json: the device named a\"b\\ or the borrows"; }
"$S" status "$F" --dot >"$T/fabric.dot" || fail "status --dot"
if command -v dot >/dev/null; then
	dot -Tsvg "$T/fabric.dot" >"$T/fabric.svg" || fail "Graphviz refused the --dot output"
	grep -q "device 1" "$T/fabric.svg" || fail "the picture has no device 1"
	echo "status --dot: rendered by Graphviz"
else
	echo "status --dot: written (Graphviz's dot is not installed: not rendered)"
fi
"$S" list --json >"$T/list.json" || fail "list --json"
py "$T/list.json" "'$F' in [x['fabric'] for x in d]" || fail "smartio list does not show $F"
echo "status --json, --dot and list: ok"
