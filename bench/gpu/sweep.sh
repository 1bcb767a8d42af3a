#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The GPU queue engine's sweep, as tools/gpu-check.sh runs it on a GPU
# machine (a few minutes at most; every run has its own timeout):
#   1. the GPU-resident null model (no data moves): 512 B and 4 KiB,
#      threads x queues, SQ and CQ in GPU memory: the engine's own rate
#   2. the same, the four SQ/CQ placements (GPU or host memory)
#   3. the ram model (data copied from a RAM image in GPU memory)
#   4. the null model's share of the GPU: 4, 16 and 32 SMs
#   5. with --fabric: the fabric's controller (nvme-emu), 512 B and 4 KiB
# Each run writes OUT/NAME.json (gpu-bench's JSON) and OUT/NAME.log; the
# last line of each table goes to stdout. Nothing here is a figure until
# it has run on a GPU: the JSON files are the record.
#
# usage: bench/gpu/sweep.sh BUILD OUT [--fabric NAME] [--quick]
#   --quick: fewer points and commands (a smoke test of the script)
# Exit status: 0 all runs done, 1 a run failed, 2 usage, 77 no GPU.
set -u
B=${1:?usage: sweep.sh BUILD OUT [--fabric NAME] [--quick]}
OUT=${2:?usage: sweep.sh BUILD OUT [--fabric NAME] [--quick]}
shift 2
FAB=
QUICK=0
while [ $# -gt 0 ]; do
	case $1 in
	--fabric) FAB=${2:?--fabric needs a name}; shift 2 ;;
	--quick) QUICK=1; shift ;;
	*) echo "sweep.sh: unknown argument '$1' (--fabric NAME, --quick)" >&2; exit 2 ;;
	esac
done
BENCH=$B/bench/gpu/gpu-bench
[ -x "$BENCH" ] || { echo "sweep.sh: no $BENCH: build with -Dcuda=enabled first" >&2; exit 2; }
mkdir -p "$OUT"
if [ $QUICK = 1 ]; then
	IOS=20000 TH=1024 THS=256,1024 EMU_IOS=2000
else
	IOS=1000000 TH=32768 THS=1024,8192,32768,65536 EMU_IOS=20000
fi
RC=0

bench() {	# NAME TIMEOUT ARGS...
	local name=$1 to=$2 rc
	shift 2
	timeout "$to" "$BENCH" --json "$OUT/$name.json" "$@" >"$OUT/$name.log" 2>&1
	rc=$?
	case $rc in
	0) echo "$name: done ($OUT/$name.json)"; grep -E '^ *(512|4096) ' "$OUT/$name.log" |
		sort -g -k7 | tail -1 | sed 's/^/  best: /' ;;
	77) echo "$name: $(tail -1 "$OUT/$name.log")"; exit 77 ;;
	124) echo "$name: FAIL: timed out after $to s"; RC=1 ;;
	*) echo "$name: FAIL: exit $rc"; tail -5 "$OUT/$name.log" | sed 's/^/  | /'; RC=1 ;;
	esac
	return 0
}

echo "columns: bs threads queues depth SQ CQ commands/s MiB/s p50-us p99-us errors"
bench null-engine 180 --ctrl null --ctrl-sms 8 --ios $IOS --bs 512,4096 \
	--threads $THS --queues 8,32,64 --depth 256,1024 --sq gpu --cq gpu
bench null-placement 60 --ctrl null --ctrl-sms 8 --ios $IOS --bs 4096 \
	--threads $TH --queues 64 --depth 256 --sq gpu,host --cq gpu,host
bench ram-engine 60 --ctrl ram --ctrl-sms 8 --ios $IOS --bs 512,4096 \
	--threads $TH --queues 64 --depth 256 --sq gpu --cq gpu
for sms in 4 16 32; do
	bench null-sms$sms 45 --ctrl null --ctrl-sms $sms --ios $IOS --bs 4096 \
		--threads $TH --queues 64 --depth 256 --sq gpu --cq gpu
done
if [ -n "$FAB" ]; then
	bench emu 90 --fabric "$FAB" --ios $EMU_IOS --bs 512,4096 --threads 32,256 \
		--queues 1,4 --depth 32,256 --sq gpu --cq host
fi
exit $RC
