#!/bin/bash
# SPDX-License-Identifier: MIT
# fio through the smartio engine on a private simulated fabric (an emulated
# controller with RAM backing on the last CPU, its manager), beside fio's own
# engines in the same run. A benchmark a user runs, not a test.
#
#   bench/fio/fio-sim.sh BUILD numjobs [--jobs N] [--qd N] [--time S] [--runs N]
#                        [--jobs-anywhere]
#     fio with more jobs than CPUs: per completion mode (poll, irq, adaptive)
#     and io_uring on a tmpfs file, each job's IOPS against the jobs' mean
#     (the largest deviation; the target is every job within 20 %) and
#     Jain's index. The smartio jobs keep off the controller's CPU (it
#     stands for a device, which has hardware of its own; --jobs-off-ctrl
#     says so, and is the default); --jobs-anywhere lets them run there too.
#     io_uring's jobs stay free: their device work runs in them.
#   bench/fio/fio-sim.sh BUILD null [--qd N] [--time S] [--runs N] [--completions M]
#     fio's null engine against the smartio engine, one job at the same depth
#     and batch: IOPS per CPU-second of the fio process (user + system, from
#     fio's own accounting), and their ratio (the target is >= 0.8: the engine
#     adds at most a fifth of fio's own cost per I/O).
#
# Runs alternate between the engines compared (--runs rounds); the load
# average before each run is printed. Latency model off: software cost only.
# $FIO_WRAP, if set, is a command fio runs under (perf record -g -o FILE --).
set -u
B=${1:?usage: fio-sim.sh BUILD numjobs|null [options]}
WHAT=${2:?usage: fio-sim.sh BUILD numjobs|null [options]}
shift 2
JOBS=6 QD=8 TIME=5 RUNS=1 CPL=poll OFF_CTRL=1
while [ $# -gt 0 ]; do
	case $1 in
	--jobs) JOBS=$2; shift 2 ;;
	--qd) QD=$2; shift 2 ;;
	--time) TIME=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--completions) CPL=$2; shift 2 ;;
	--jobs-off-ctrl) OFF_CTRL=1; shift ;;
	--jobs-anywhere) OFF_CTRL=0; shift ;;
	*) echo "fio-sim.sh: unknown option '$1' (--jobs, --qd, --time, --runs, --completions," \
		"--jobs-off-ctrl, --jobs-anywhere)" >&2
	   exit 2 ;;
	esac
done
case $WHAT in numjobs|null) ;; *) echo "fio-sim.sh: '$WHAT': numjobs or null" >&2; exit 2 ;; esac
ENGINE=$B/bench/fio/fio-smartio.so SMARTIO=$B/src/tools/smartio
EMU=$B/drivers/nvme/emu/nvme-emu MGR=$B/drivers/nvme/tools/nvme-manager
for x in "$ENGINE" "$SMARTIO" "$EMU" "$MGR"; do
	[ -e "$x" ] || { echo "fio-sim.sh: $x is missing: build with -Dnvme=enabled and fio's source" >&2; exit 2; }
done
command -v fio >/dev/null || { echo "fio-sim.sh: fio is not installed" >&2; exit 2; }

F=fio-sim-$$ T=$(mktemp -d) EMU_PID='' MGR_PID=''
NCPU=$(nproc)
cleanup() {
	[ -n "$MGR_PID" ] && kill "$MGR_PID" 2>/dev/null && wait "$MGR_PID" 2>/dev/null
	[ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null && wait "$EMU_PID" 2>/dev/null
	"$SMARTIO" destroy "$F" --force >/dev/null 2>&1
	rm -rf "$T" "/dev/shm/$F.img"
}
trap cleanup EXIT
wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

export SMARTIO_QUIET=1 SMARTIO_FABRIC=$F
"$SMARTIO" create "$F" --nodes $((JOBS + 2)) >/dev/null || exit 1
# the controller stands for the device: a CPU of its own, as far as there is one
taskset -c $((NCPU - 1)) "$EMU" --fabric "$F" --node 1 --backing ram:256M --queues 64 \
	--ready-file "$T/emu.ready" >"$T/emu.log" 2>&1 &
EMU_PID=$!
wait_file "$T/emu.ready" || { cat "$T/emu.log"; exit 1; }
DEV=$(cat "$T/emu.ready")
"$MGR" --fabric "$F" --node 1 --device "$DEV" --ready-file "$T/mgr.ready" >"$T/mgr.log" 2>&1 &
MGR_PID=$!
wait_file "$T/mgr.ready" || { cat "$T/mgr.log"; exit 1; }
head -c 256M /dev/zero >"/dev/shm/$F.img"

# run NAME ARGS...: one fio run, its JSON in $T/NAME.json
run() {
	n=$1; shift
	echo "  $n: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	# shellcheck disable=SC2086 # a command and its words
	${FIO_WRAP:-} fio --output-format=json --output="$T/$n.json" --time_based=1 --runtime="$TIME" \
		--rw=randread --bs=4k --iodepth="$QD" --iodepth_batch_submit="$QD" \
		--iodepth_batch_complete_max="$QD" --size=256m "$@" >"$T/$n.log" 2>&1 ||
		{ cat "$T/$n.log" >&2; exit 1; }
}
SIO=(--ioengine="external:$ENGINE" --sio_device="$DEV" --sio_node=0)
[ "$OFF_CTRL" = 1 ] && [ "$NCPU" -gt 1 ] && SIO+=(--cpus_allowed="0-$((NCPU - 2))")
URING=(--ioengine=io_uring --filename="/dev/shm/$F.img")

if [ "$WHAT" = numjobs ]; then
	echo "fio, $JOBS jobs on $NCPU CPUs, 4 KiB random reads at QD $QD, ${TIME} s; smartio" \
	     "engine per completion mode, io_uring on tmpfs; latency model off;" \
	     "smartio jobs $([ "$OFF_CTRL" = 1 ] && echo "off the controller's CPU" || echo "on any CPU")"
	for r in $(seq "$RUNS"); do
		run "uring-$r" --name=j --numjobs="$JOBS" "${URING[@]}"
		for m in poll irq adaptive; do
			run "$m-$r" --name=j --numjobs="$JOBS" "${SIO[@]}" --sio_completions="$m"
		done
	done
	python3 - "$T" "$RUNS" <<'EOF'
import json, sys
t, runs = sys.argv[1], int(sys.argv[2])
print(f"{'engine':10} {'run':>3} {'IOPS':>10} {'mean/job':>10} {'min/mean':>9} {'max/mean':>9} {'worst':>7} {'Jain':>6}")
for r in range(1, runs + 1):
    for e in ("uring", "poll", "irq", "adaptive"):
        jobs = json.load(open(f"{t}/{e}-{r}.json"))["jobs"]
        io = [j["read"]["iops"] for j in jobs]
        m = sum(io) / len(io)
        worst = max(abs(x - m) for x in io) / m if m else 0
        jain = sum(io) ** 2 / (len(io) * sum(x * x for x in io)) if m else 0
        name = "io_uring" if e == "uring" else e
        print(f"{name:10} {r:3} {sum(io):10.0f} {m:10.0f} {min(io) / m:9.3f} {max(io) / m:9.3f} "
              f"{100 * worst:6.1f}% {jain:6.3f}")
EOF
else
	echo "fio, one job, 4 KiB random reads at QD $QD (batch $QD), ${TIME} s: the null" \
	     "engine, then the smartio engine (completions=$CPL); IOPS per CPU-second of fio's job"
	for r in $(seq "$RUNS"); do
		run "null-$r" --name=j --ioengine=null
		run "sio-$r" --name=j "${SIO[@]}" --sio_completions="$CPL"
	done
	python3 - "$T" "$RUNS" <<'EOF'
import json, sys, statistics
t, runs = sys.argv[1], int(sys.argv[2])
def per_cpu(path):
    j = json.load(open(path))["jobs"][0]
    secs = j["job_runtime"] / 1000
    cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100 * secs
    return j["read"]["iops"], j["read"]["io_bytes"] / 4096 / cpu if cpu else 0
ratios = []
print(f"{'run':>3} {'null IOPS':>11} {'null IOPS/CPU-s':>16} {'smartio IOPS':>13} {'smartio IOPS/CPU-s':>19} {'ratio':>6}")
for r in range(1, runs + 1):
    ni, nc = per_cpu(f"{t}/null-{r}.json")
    si, sc = per_cpu(f"{t}/sio-{r}.json")
    ratios.append(sc / nc if nc else 0)
    print(f"{r:3} {ni:11.0f} {nc:16.0f} {si:13.0f} {sc:19.0f} {ratios[-1]:6.3f}")
print(f"smartio/null IOPS per CPU-second: median {statistics.median(ratios):.3f} (target >= 0.8)")
EOF
fi
