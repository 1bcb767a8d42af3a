#!/bin/bash
# The smartio command: subcommands, --json, exit codes.
set -u
S=$1
export SMARTIO_QUIET=1
F=t-cli-$$
trap '"$S" destroy "$F" --force >/dev/null 2>&1' EXIT
pass=0 fail=0
check() {	# description, then the command that must succeed
	local d=$1; shift
	if "$@" >/dev/null 2>&1; then pass=$((pass + 1)); else echo "FAIL: $d"; fail=$((fail + 1)); fi
}
check "create" "$S" create "$F" --nodes 6 --topology cascade --per-switch 3 --latency-model
check "create twice fails" bash -c "! '$S' create '$F' --nodes 2"
check "bad topology is refused" bash -c "! '$S' create x-$$ --topology ring"
check "status --json is JSON" bash -c "'$S' status '$F' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"nodes\"]==6 and d[\"topology\"]==\"cascade\"'"
check "path across sub-switches has 5 hops" bash -c "'$S' path '$F' node:0 node:5 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"hops\"])==5, d'"
check "path output says the model is a model" bash -c "'$S' path '$F' node:0 node:1 | grep -q 'latency model (not a measurement)'"
check "bad endpoint is refused" bash -c "! '$S' path '$F' node:0 gpu:1"
check "link down" "$S" link "$F" 2 0 down
check "status shows the link down" bash -c "'$S' status '$F' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"node\"][2][\"adapters\"][0][\"link_up\"] is False'"
check "link up" "$S" link "$F" 2 up
check "no such node" bash -c "! '$S' link '$F' 9 down"
check "destroy" "$S" destroy "$F"
check "status of a missing fabric exits 1" bash -c "'$S' status '$F'; test \$? -eq 1"
check "nothing left behind" bash -c "! ls -d /dev/shm/smartio-$F 2>/dev/null"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
