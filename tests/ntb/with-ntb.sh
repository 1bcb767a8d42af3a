#!/bin/sh
# SPDX-License-Identifier: MIT
# Run a test on the ntb fabric backend with the fake NTB of one host
# (SMARTIO_NTB_DEV=fake:DIR): a node service per port, then the test, whose
# processes play the port of the node they join as.
#   with-ntb.sh SMARTIO PORTS PROGRAM [ARGS...]
# $SIO_NTB_SERVED: how many ports (from 0) get a service (default: all).
set -eu
smartio=$1 ports=$2
shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/sio-ntb.XXXXXX")
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/run"
export SMARTIO_FABRIC_BACKEND=ntb SMARTIO_NTB_DEV="fake:$dir" SMARTIO_RUNDIR="$dir/run"
export SMARTIO_NTB_FAKE_PORTS="$ports" SMARTIO_NTB_FAKE_WINDOW_MB=${SMARTIO_NTB_FAKE_WINDOW_MB:-16}
served=${SIO_NTB_SERVED:-$ports}
p=0
while [ $p -lt "$served" ]; do
	"$smartio" ntb serve --port $p >"$dir/serve$p.log" 2>&1 &
	pids="$pids $!"
	p=$((p + 1))
done
# every service has its memory and sees every peer
i=0
while [ "$(cat "$dir"/serve*.log | grep -c "memory: ")" -lt "$served" ] && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
rc=0
"$@" || rc=$?
[ $rc -eq 0 ] || sed 's/^/serve: /' "$dir"/serve*.log
exit $rc
