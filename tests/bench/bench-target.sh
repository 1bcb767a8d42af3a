#!/bin/bash
# SPDX-License-Identifier: MIT
# The benchmarks on an existing fabric (--fabric NAME --device ID): they
# refuse a device no manager serves unless asked, measure one that is served,
# say what they measured, and leave fabric, controller and manager running.
# usage: bench-target.sh SMARTIO NVME_EMU NVME_MANAGER NVME_CLIENT SWEEP
#        SQ_PLACEMENT OVERHEAD REMOTE_LOCAL EMU_BENCH
set -u
SMARTIO=$1 EMU=$2 MGR=$3 CLIENT=$4 SWEEP=$5 SQP=$6 OVH=$7 RL=$8 EMUB=$9
export SMARTIO_QUIET=1
. "$(dirname "$0")/lib.sh" t-bench
# A JSON file, parsed, and a Python expression over it (d) that must hold.
jq_ok() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
# expect_fail RC PATTERN CMD...: exits RC with a message matching PATTERN
expect_fail() {
	want=$1 pat=$2; shift 2
	"$@" >"$T/out" 2>&1; rc=$?
	[ $rc -eq "$want" ] && grep -q "$pat" "$T/out" ||
		{ cat "$T/out"; fail "$* exited $rc, wanted $want and '$pat'"; }
}
alive() { kill -0 "$1" 2>/dev/null || fail "$2 is gone"; }

start_emu 3 --backing ram:32M --cmb 4m

# Options that mean nothing without --fabric, and devices that are not there.
expect_fail 2 "need --fabric" "$SWEEP" --device 1
expect_fail 1 "no NVMe controller with device id 99" "$SWEEP" --fabric "$F" --device 99 --qd 1
expect_fail 1 "fabric t-bench-nope" "$SQP" --fabric t-bench-nope -n 64
ok "bad targets refused"

# No manager: refused, and the controller is not touched (nobody borrows it).
expect_fail 1 "no manager serves device $DEV" "$SWEEP" --fabric "$F" --qd 1 -t 0.05 -o "$T/sw"
"$SMARTIO" status "$F" | grep -q "nvme-emu *0 " || fail "the refused run left a borrow"
ok "no manager: refused, device untouched"

# --start-manager: started for the run, stopped after; the fabric stays.
"$SWEEP" --fabric "$F" --start-manager --qd 2 -t 0.05 -o "$T/sw" >"$T/out" 2>&1 ||
	{ cat "$T/out"; fail "sweep --start-manager"; }
jq_ok "$T/sw/sweep.json" 'd["target"]["started_manager"] is True' || fail "the JSON does not say the manager was started"
"$SMARTIO" status "$F" >/dev/null || fail "the fabric was removed"
ok "--start-manager"

start_mgr

# Served: each benchmark runs, names what it measured, leaves all running.
"$SWEEP" --fabric "$F" --device "$DEV" --qd 2 -t 0.05 -o "$T/sw" >"$T/out" 2>&1 ||
	{ cat "$T/out"; fail "sweep"; }
grep -q "^measured: fabric $F, backend sim" "$T/out" || { cat "$T/out"; fail "sweep did not say what it measured"; }
grep -q "skipped: the io_uring baseline" "$T/out" || fail "sweep did not say what it skipped"
jq_ok "$T/sw/sweep.json" 'd["target"]["existing_fabric"] is True' || fail "sweep JSON lacks the target"
jq_ok "$T/sw/sweep.json" 'd["target"]["started_manager"] is False' || fail "sweep JSON: started_manager"
jq_ok "$T/sw/sweep.json" 'all(p["latency"]["n"] > 0 for p in d["points"])' || fail "sweep JSON: no latencies"
ok "sweep on an existing fabric"

"$SQP" --fabric "$F" --node 1 -n 256 -o "$T/sq" >"$T/out" 2>&1 || { cat "$T/out"; fail "sq-placement"; }
grep -q "skipped: lender .*the client runs on the lender" "$T/out" || { cat "$T/out"; fail "lender placement not skipped on the lender"; }
jq_ok "$T/sq/sq-placement.json" '"cmb" in [p["sq"] for p in d["placements"]]' || fail "the CMB placement did not run"
jq_ok "$T/sq/sq-placement.json" 'd["skipped"][0]["sq"] == "lender"' || fail "JSON lacks the skipped placement"
jq_ok "$T/sq/sq-placement.json" 'all(p["latency"]["n"] == 256 for p in d["placements"])' || fail "sq-placement: not every read counted"
"$SQP" --fabric "$F" -n 256 -o "$T/sq0" >"$T/out" 2>&1 || { cat "$T/out"; fail "sq-placement node 0"; }
jq_ok "$T/sq0/sq-placement.json" '"lender" in [p["sq"] for p in d["placements"]]' || fail "from node 0 the lender placement did not run"
ok "sq-placement runs what the device offers"

"$OVH" --fabric "$F" -n 200 -o "$T/ov" >"$T/out" 2>&1 || { cat "$T/out"; fail overhead; }
jq_ok "$T/ov/overhead.json" 'd["target"]["existing_fabric"] is True' || fail "overhead JSON lacks the target"
"$RL" --fabric "$F" -n 1024 -o "$T/rl" >"$T/out" 2>&1 || { cat "$T/out"; fail remote-local; }
jq_ok "$T/rl/remote-local.json" 'd["passes"][0]["pass"] == "existing" and d["run"]["version"]' || fail "remote-local JSON"
expect_fail 1 "another node than the lender" "$RL" --fabric "$F" --node 1 -n 1024 -o "$T/rl"
ok "overhead and remote-local"

# emu-bench resets the controller: only with --reset, never under a manager.
expect_fail 2 "give --reset" "$EMUB" --fabric "$F"
expect_fail 1 "needs it alone" "$EMUB" --fabric "$F" --reset -n 100 -j "$T/e.json" -l "$T/e.dat"
ok "emu-bench does not take a served device"

alive "$MGR_PID" "the manager"
alive "$EMU_PID" "the controller"
"$CLIENT" --fabric "$F" --device "$DEV" --op write-verify --count 64 >"$T/out" 2>&1 ||
	{ cat "$T/out"; fail "the manager no longer serves a client"; }
ok "manager and controller still serve"
echo "$pass passed, 0 failed"
