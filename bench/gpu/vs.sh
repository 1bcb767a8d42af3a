#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/gpu/vs.sh PARENT_BUILD BUILD OUT ROUNDS -- GPU-BENCH-ARGS...
#
# A change to the GPU queue engine judged against its parent in one run on
# one machine: the same gpu-bench points from two builds, one after the
# other, parent first, ROUNDS times. Per point (block size, threads,
# queues, depth, SQ, CQ) it prints the best commands/s of each build over
# the rounds and their ratio (this / parent). Each run's log and JSON go to
# OUT. Exit status: 0 done, 1 a run failed, 2 usage, 77 no GPU.
#
# example: bench/gpu/vs.sh build-parent build-gpucheck vs 2 -- \
#     --ctrl null --ctrl-sms 8 --ios 1000000 --bs 4096 --threads 32768 \
#     --queues 8,64 --depth 256 --sq gpu --cq gpu
set -u
usage() {
	echo "usage: vs.sh PARENT_BUILD BUILD OUT ROUNDS -- GPU-BENCH-ARGS..." >&2
	exit 2
}
[ $# -ge 5 ] && [ "$5" = -- ] || usage
A=$1 B=$2 OUT=$3 ROUNDS=$4
shift 5
case $ROUNDS in '' | *[!0-9]* | 0) usage ;; esac
for b in "$A" "$B"; do
	[ -x "$b/bench/gpu/gpu-bench" ] || { echo "vs.sh: no $b/bench/gpu/gpu-bench" >&2; exit 2; }
done
mkdir -p "$OUT"
RC=0
for r in $(seq "$ROUNDS"); do
	for side in parent this; do
		[ $side = parent ] && b=$A || b=$B
		log=$OUT/$side-$r.log
		timeout 300 "$b/bench/gpu/gpu-bench" --json "$OUT/$side-$r.json" "$@" >"$log" 2>&1
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
