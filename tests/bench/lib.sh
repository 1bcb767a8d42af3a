# SPDX-License-Identifier: MIT
# Sourced by the bench tests: a simulated fabric $F with a controller on
# node 1 and, on demand, a manager; all removed on exit. Needs $SMARTIO,
# $EMU and $MGR set, and a prefix for the fabric's name in $1.
F=$1-$$
T=$(mktemp -d)
EMU_PID= MGR_PID= DEV=
pass=0
cleanup() {
	[ -n "$MGR_PID" ] && kill "$MGR_PID" 2>/dev/null && wait "$MGR_PID" 2>/dev/null
	[ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null && wait "$EMU_PID" 2>/dev/null
	"$SMARTIO" destroy "$F" --force >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; pass=$((pass + 1)); }
# wait_file FILE: up to 5 s for FILE to have content
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }
# start_emu NODES EMU_ARGS...: the fabric and its controller ($DEV)
start_emu() {
	nodes=$1; shift
	"$SMARTIO" create "$F" --nodes "$nodes" >/dev/null || fail "smartio create"
	"$EMU" --fabric "$F" --node 1 --ready-file "$T/emu.ready" "$@" >"$T/emu.log" 2>&1 &
	EMU_PID=$!
	wait_file "$T/emu.ready" || { cat "$T/emu.log"; fail "nvme-emu did not start"; }
	DEV=$(cat "$T/emu.ready")
}
start_mgr() {
	"$MGR" --fabric "$F" --node 1 --device "$DEV" --ready-file "$T/mgr.ready" >"$T/mgr.log" 2>&1 &
	MGR_PID=$!
	wait_file "$T/mgr.ready" || { cat "$T/mgr.log"; fail "nvme-manager did not start"; }
}
