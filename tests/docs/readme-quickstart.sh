#!/bin/bash
# The README's quickstart block, run as it is written: the programs on PATH
# as `meson devenv` puts them, a fabric directory of its own
# ($SMARTIO_RUNDIR, so "lab" is this run's alone). It must exit 0, and once
# its last line destroyed the fabric no process it started may be left.
# Usage: readme-quickstart.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
block=$(awk '/^<!-- quickstart -->/ { q = 1; next } q && /^```sh/ { p = 1; next }
	p && /^```/ { exit } p' "$src/README.md")
[ -n "$block" ] || { echo "FAIL: no quickstart block (<!-- quickstart --> then a sh block) in README.md"; exit 1; }
run=$(mktemp -d "${TMPDIR:-/tmp}/smartio-quickstart.XXXXXX")
trap 'rm -rf "$run"' EXIT
export SMARTIO_RUNDIR=$run
export PATH=$build/src/tools:$build/drivers/nvme/emu:$build/drivers/nvme/tools:$PATH
unset SMARTIO_FABRIC SMARTIO_NODE
rc=0
(cd "$run" && timeout 180 bash -e -o pipefail -c "$block") >"$run.out" 2>&1 || rc=$?
# what is left: processes whose environment names this run's directory
left() {
	for p in /proc/[0-9]*; do
		tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "SMARTIO_RUNDIR=$run" && echo "${p#/proc/}"
	done
}
for i in $(seq 100); do [ -z "$(left)" ] && break; sleep 0.1; done
stray=$(left)
for p in $stray; do kill -9 "$p" 2>/dev/null; done
if [ $rc -ne 0 ]; then
	cat "$run.out"; rm -f "$run.out"
	echo "FAIL: the README's quickstart exited $rc"
	exit 1
fi
rm -f "$run.out"
[ -z "$stray" ] || { echo "FAIL: processes left after the quickstart: $stray"; exit 1; }
echo "the README's quickstart ran as written ($(echo "$block" | grep -c '^[a-z]') commands), nothing left"
