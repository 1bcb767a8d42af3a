#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/gpu/vs.sh [--emulators] PARENT_BUILD BUILD OUT ROUNDS -- GPU-BENCH-ARGS...
#
# A change judged against its parent in one run on one machine: the same
# gpu-bench points, parent first, ROUNDS times. Per point (block size,
# threads, queues, depth, SQ, CQ) it prints the best commands/s of each
# side over the rounds and their ratio (this / parent). Each run's log and
# JSON go to OUT. Exit status: 0 done, 1 a run failed, 2 usage, 77 no GPU.
#
# By default the sides are the two builds' gpu-bench (the queue engine).
# With --emulators they are two fabrics side by side, each with nvme-emu,
# its GPU plugin and nvme-manager from one build, driven by BUILD's
# gpu-bench (the emulator's GPU path); the fabric is added to the args.
#
# example: bench/gpu/vs.sh build-parent build-gpucheck vs 2 -- \
#     --ctrl null --ctrl-sms 8 --ios 1000000 --bs 4096 --threads 32768 \
#     --queues 8,64 --depth 256 --sq gpu --cq gpu
#   bench/gpu/vs.sh --emulators build-parent build-gpucheck vs 2 -- \
#     --ios 200000 --bs 4096 --threads 1024 --queues 4,8 --sq gpu --cq host
set -u
usage() {
	echo "usage: vs.sh [--emulators] PARENT_BUILD BUILD OUT ROUNDS -- GPU-BENCH-ARGS..." >&2
	exit 2
}
EMUS=0
[ "${1:-}" = --emulators ] && { EMUS=1; shift; }
[ $# -ge 5 ] && [ "$5" = -- ] || usage
A=$1 B=$2 OUT=$3 ROUNDS=$4
shift 5
case $ROUNDS in '' | *[!0-9]* | 0) usage ;; esac
for b in "$A" "$B"; do
	[ -x "$b/bench/gpu/gpu-bench" ] || { echo "vs.sh: no $b/bench/gpu/gpu-bench" >&2; exit 2; }
done
mkdir -p "$OUT"
RC=0
PIDS=()
FABS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for f in "${FABS[@]}"; do "$B/src/tools/smartio" destroy "$f" --force >/dev/null 2>&1; done
	return 0
}
trap cleanup EXIT
wait_file() {	# FILE PID
	for _ in $(seq 300); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# emulator SIDE BUILD: a fabric of its own, BUILD's nvme-emu with BUILD's
# plugin, and its manager
emulator() {
	local side=$1 b=$2 f=vs-$1-$$
	"$b/src/tools/smartio" create "$f" --nodes 2 >/dev/null || return 1
	FABS+=("$f")
	SMARTIO_GPU_PLUGIN=$PWD/$b/drivers/gpu/libsmartio-gpudma.so "$b/drivers/nvme/emu/nvme-emu" \
		--fabric "$f" --node 0 --backing ram:256M --ready-file "$OUT/$side-emu.ready" \
		>"$OUT/$side-emu.log" 2>&1 &
	PIDS+=($!)
	wait_file "$OUT/$side-emu.ready" $! || { echo "vs.sh: $side's nvme-emu did not start" >&2; return 1; }
	"$b/drivers/nvme/tools/nvme-manager" --fabric "$f" --node 0 \
		--ready-file "$OUT/$side-mgr.ready" >"$OUT/$side-mgr.log" 2>&1 &
	PIDS+=($!)
	wait_file "$OUT/$side-mgr.ready" $! || { echo "vs.sh: $side's manager did not start" >&2; return 1; }
}
if [ $EMUS = 1 ]; then
	rm -f "$OUT"/*.ready
	emulator parent "$A" && emulator this "$B" || exit 1
fi
for r in $(seq "$ROUNDS"); do
	for side in parent this; do
		[ $side = parent ] && b=$A || b=$B
		log=$OUT/$side-$r.log
		args=("$@")
		if [ $EMUS = 1 ]; then	# this build's gpu-bench, the side's fabric
			b=$B
			args=(--fabric "vs-$side-$$" "$@")
		fi
		timeout 300 "$b/bench/gpu/gpu-bench" --json "$OUT/$side-$r.json" "${args[@]}" \
			>"$log" 2>&1
		rc=$?
		[ $rc = 77 ] && { tail -1 "$log"; exit 77; }
		[ $rc = 0 ] || { echo "vs.sh: $side round $r: exit $rc ($log)"; RC=1; }
	done
done
# the table's rows: bs threads queues depth SQ CQ commands/s ...
echo "bs threads queues depth SQ CQ | parent this (best of $ROUNDS, commands/s) | this/parent"
for side in parent this; do
	grep -hE '^ *(512|4096) ' "$OUT"/$side-*.log | awk -v s=$side '{ print s, $1"/"$2"/"$3"/"$4"/"$5"/"$6, $7 }'
done | awk '
	{ k = $2; if ($3 > best[$1, k]) best[$1, k] = $3; keys[k] = 1 }
	END {
		for (k in keys) {
			p = best["parent", k]; t = best["this", k]
			split(k, f, "/")
			printf "%s %s %s %s %s %s | %d %d | %s\n", f[1], f[2], f[3], f[4], f[5], f[6],
				p, t, p ? sprintf("%.2fx", t / p) : "-"
		}
	}' | sort -n -k1 -k2 -k3
exit $RC
