#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/gpu-check.sh [BUILD_DIR]
#
# A verdict on smartio's GPU path on a machine with an NVIDIA GPU, in a few
# minutes and with no network: driver and compute mode, a build with
# -Dcuda=enabled into BUILD_DIR (default build-gpucheck), the plugin's
# run-time dependencies, the GPU test suites with SMARTIO_REQUIRE_GPU=1
# (nothing may skip), then a live emulated controller: one GPU thread at
# queue depth 1 (the latency line), the QD1 latency benchmark, and a
# parallel gpu-read whose data the kernel checks against a pattern that is
# nowhere zero; last the engine's sweep (bench/gpu/sweep.sh: the
# GPU-resident controller model, then the emulated controller), whose JSON
# goes to BUILD_DIR/gpu-check/sweep/; last the emulator's batched DMA into
# GPU memory against one copy waited for per command, two emulators side by
# side (SMARTIO_GPU_DMA_BATCH=0 in one). Prints PASS/FAIL/WARN per step and a
# verdict; logs go to BUILD_DIR/gpu-check/.
#
# Exit status: 0 all passed, 1 something failed, 2 no GPU here (this is a
# tool for GPU machines). Run from anywhere; run tools/install-deps.sh first,
# or, on a machine that cannot install packages, carry the bundle that
# tools/gpu-bundle-deps.sh makes and name it: SMARTIO_DEPS=$PWD/build-gpudeps.

set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-build-gpucheck}
L=$B/gpu-check
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
FAILED=0
declare -a SUMMARY

say() { printf '%s\n' "$*"; }
result() {	# STATUS STEP DETAIL
	printf '%-4s  %-22s %s\n' "$1" "$2" "$3"
	SUMMARY+=("$(printf '%-4s  %-22s %s' "$1" "$2" "$3")")
	[ "$1" = FAIL ] && FAILED=1
	return 0
}
show_log() {	# FILE: its last lines, indented
	[ -s "$1" ] && { say "      --- last lines of $1:"; tail -n "${2:-25}" "$1" | sed 's/^/      | /'; }
	return 0
}
verdict() {
	local t=$(($(date +%s) - START))
	say ""
	say "== summary (${t} s)"
	printf '%s\n' "${SUMMARY[@]}"
	if [ "$FAILED" = 0 ]; then
		say "VERDICT: PASS - the GPU path works on this machine"
		exit 0
	fi
	say "VERDICT: FAIL - see the FAIL lines above and the logs in $L/"
	exit 1
}

# ---- 1. a GPU and its driver ----
say "== 1. GPU and driver"
if ! command -v nvidia-smi >/dev/null 2>&1; then
	say "FAIL  no GPU: nvidia-smi is not installed, so there is no NVIDIA driver here."
	say "VERDICT: NO GPU - gpu-check.sh is for machines with an NVIDIA GPU"
	exit 2
fi
if ! GPUS=$(nvidia-smi --query-gpu=index,name,driver_version,compute_mode,persistence_mode,pci.bus_id \
		--format=csv,noheader 2>&1) || [ -z "$GPUS" ]; then
	say "FAIL  no GPU: nvidia-smi finds none: $GPUS"
	say "VERDICT: NO GPU - gpu-check.sh is for machines with an NVIDIA GPU"
	exit 2
fi
say "$GPUS" | sed 's/^/      /'
mkdir -p "$L"

DRV=$(say "$GPUS" | head -1 | cut -d, -f3 | tr -d ' ')
DRV_CUDA=$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: *[0-9.]*' | head -1 | grep -o '[0-9.]*$')
TK=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | grep -o '[0-9.]*$')
if [ -z "$TK" ]; then
	result FAIL driver "nvcc not found (looked on PATH and in /usr/local/cuda/bin): install the CUDA toolkit"
	verdict
fi
ver() { echo "$1" | awk -F. '{ printf "%d", $1 * 1000 + $2 * 10 }'; }
# CUDA 13 needs an R580 driver, CUDA 12 an R525 one (minor-version compatibility).
case ${TK%%.*} in
13) NEED=580 ;; 12) NEED=525 ;; 11) NEED=450 ;; *) NEED=0 ;;
esac
if [ -z "$DRV_CUDA" ]; then
	result WARN driver "driver $DRV; could not read its CUDA version from nvidia-smi"
elif [ "${DRV%%.*}" -lt "$NEED" ] || [ "${DRV_CUDA%%.*}" -lt "${TK%%.*}" ]; then
	result FAIL driver "driver $DRV (CUDA $DRV_CUDA) is too old for the CUDA $TK toolkit (needs >= $NEED): every GPU call would fail with cudaErrorInsufficientDriver"
elif [ "$(ver "$DRV_CUDA")" -lt "$(ver "$TK")" ]; then
	result WARN driver "driver $DRV supports CUDA $DRV_CUDA < toolkit $TK: runs by minor-version compatibility"
else
	result PASS driver "driver $DRV (CUDA $DRV_CUDA) >= toolkit CUDA $TK"
fi

MODES=$(say "$GPUS" | cut -d, -f4 | tr -d ' ' | sort -u | tr '\n' ' ')
if [ "$MODES" = "Default " ]; then
	result PASS compute-mode "Default"
else
	result FAIL compute-mode "$MODES: the emulator (another process) must open a CUDA context and IPC handles; set it with: nvidia-smi -c DEFAULT"
fi
PERSIST=$(say "$GPUS" | head -1 | cut -d, -f5 | tr -d ' ')
[ "$PERSIST" = Enabled ] || result WARN persistence "persistence mode $PERSIST: the first CUDA call may take seconds (nvidia-smi -pm 1)"

RUNDIR=${SMARTIO_RUNDIR:-/dev/shm}
FSTYPE=$(stat -f -c %T "$RUNDIR" 2>/dev/null)
case $FSTYPE in
tmpfs|hugetlbfs) result PASS rundir "$RUNDIR is $FSTYPE (cudaHostRegister on it is allowed)" ;;
*) result WARN rundir "$RUNDIR is '$FSTYPE': host queue memory there may not pin (cudaHostRegister); use tmpfs" ;;
esac

# Without MPS the GPU time-slices between a GPU program's context, whose
# kernel polls its queues, and nvme-emu's: each of the controller's copies
# to or from GPU memory waits for a slice (about 1 ms; QD1 ~2.4 ms on an
# H200, 2026-11-26) and kernels of many commands time out. A daemon of our
# own (private pipe directory, quit at exit) unless one serves already.
MPS_DIR=
mps_quit() {
	[ -n "$MPS_DIR" ] || return 0
	echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
	# the server may take a few tries to stop: never remove the pipes
	# from under a live daemon
	for _ in $(seq 50); do
		grep -qs 'Exit with status' "$MPS_DIR/control.log" && break
		sleep 0.1
	done
	if grep -qs 'Exit with status' "$MPS_DIR/control.log"; then
		rm -rf "$MPS_DIR"
	else
		say "      the MPS daemon of $MPS_DIR has not exited: left in place"
	fi
	MPS_DIR=
}
# A daemon named by the environment (or at the default place) that answers;
# without the control program there is no asking, and it is believed.
mps_answers() {
	command -v nvidia-cuda-mps-control >/dev/null 2>&1 || return 0
	echo get_server_list | timeout 5 nvidia-cuda-mps-control >/dev/null 2>&1
}
MPS_NAMED=
if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || [ -e /tmp/nvidia-mps/control ]; then
	MPS_NAMED=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}
fi
if [ -n "$MPS_NAMED" ] && mps_answers; then
	result PASS mps "a daemon serves already ($MPS_NAMED)"
elif ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
	result WARN mps "nvidia-cuda-mps-control not found: the GPU is time-sliced between the GPU programs and nvme-emu (about 1 ms per copy)"
else
	MPS_DIR=$(mktemp -d /tmp/smartio-mps-XXXXXX)
	export CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR CUDA_MPS_LOG_DIRECTORY=$MPS_DIR
	# a daemon named but gone (a stale CUDA_MPS_PIPE_DIRECTORY) would leave
	# every step time-sliced: QD1 near 2.4 ms, step 6 past its timeout
	[ -n "$MPS_NAMED" ] && result WARN mps "no MPS daemon answers at $MPS_NAMED (a stale CUDA_MPS_PIPE_DIRECTORY?): starting one of our own"
	if nvidia-cuda-mps-control -d </dev/null >"$L/mps.log" 2>&1; then
		trap mps_quit EXIT
		result PASS mps "a daemon of our own ($MPS_DIR), quit at the end"
	else
		result WARN mps "nvidia-cuda-mps-control -d failed (see $L/mps.log): the GPU is time-sliced (about 1 ms per copy)"
		unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
		rm -rf "$MPS_DIR"
		MPS_DIR=
	fi
fi

# Dependencies carried in a bundle (tools/gpu-bundle-deps.sh): pkg-config,
# headers and libraries from there; at run time only the libraries this
# machine lacks (its own stay first for everything else).
DEPS_LIBS=
LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)
if [ -n "${SMARTIO_DEPS:-}" ]; then
	SMARTIO_DEPS=$(cd "$SMARTIO_DEPS" && pwd) || { result FAIL deps "no $SMARTIO_DEPS"; verdict; }
	export PKG_CONFIG=$SMARTIO_DEPS/bin/pkg-config
	export CFLAGS="-I$SMARTIO_DEPS/include ${CFLAGS:-}"
	export LDFLAGS="-L$SMARTIO_DEPS/lib ${LDFLAGS:-}"
	DEPS_LIBS=$SMARTIO_DEPS/only-missing
	rm -rf "$DEPS_LIBS"
	mkdir -p "$DEPS_LIBS"
	for f in "$SMARTIO_DEPS"/lib/*.so.*; do
		n=$(basename "$f")
		"$LDCONFIG" -p 2>/dev/null | awk -v n="$n" '$1 == n { f = 1 } END { exit !f }' ||
			ln -sf "$f" "$DEPS_LIBS/$n"
	done
	result PASS deps "bundle $SMARTIO_DEPS; carried at run time: $(ls "$DEPS_LIBS" | tr '\n' ' ')"
fi
# What runs the tests and tools: the bundle's libraries this machine lacks.
with_deps() {
	if [ -n "$DEPS_LIBS" ]; then
		LD_LIBRARY_PATH=$DEPS_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"
	else
		"$@"
	fi
}

# ---- 2. build ----
say "== 2. build into $B (-Dcuda=enabled)"
MESON=meson
if ! command -v meson >/dev/null 2>&1; then
	python3 -c 'import mesonbuild' 2>/dev/null && MESON="python3 -m mesonbuild.mesonmain" ||
		{ result FAIL build "meson is not installed"; verdict; }
fi
command -v ninja >/dev/null 2>&1 || { result FAIL build "ninja is not installed"; verdict; }
if [ -f "$B/build.ninja" ]; then
	$MESON configure "$B" -Dcuda=enabled >"$L/setup.log" 2>&1
else
	$MESON setup "$B" -Dcuda=enabled >"$L/setup.log" 2>&1
fi
if [ $? -ne 0 ]; then
	result FAIL build "meson setup failed"
	show_log "$L/setup.log"
	verdict
fi
if ! timeout 240 ninja -C "$B" >"$L/build.log" 2>&1; then
	result FAIL build "ninja failed"
	show_log "$L/build.log"
	verdict
fi
result PASS build "$B"

PLUGIN=$PWD/$B/drivers/gpu/libsmartio-gpudma.so
if [ ! -f "$PLUGIN" ]; then
	result FAIL plugin "$PLUGIN was not built (is CUDA found? see $L/setup.log)"
	verdict
fi
MISSING=$(with_deps ldd "$PLUGIN" 2>&1 | grep 'not found')
NEEDED=$(readelf -d "$PLUGIN" | grep NEEDED | grep -o '\[.*\]' | tr -d '[]' | tr '\n' ' ')
if [ -n "$MISSING" ]; then
	result FAIL plugin "the emulator could not dlopen it: $MISSING"
else
	result PASS plugin "needs only: $NEEDED"
fi

# ---- 3. the GPU test suites, no skipping ----
say "== 3. GPU test suites (SMARTIO_REQUIRE_GPU=1)"
for s in gpu-host gpu-io gpu-ctrl; do
	t0=$(date +%s)
	case $s in gpu-host) to=150 ;; gpu-io) to=240 ;; *) to=120 ;; esac
	SMARTIO_REQUIRE_GPU=1 with_deps timeout $to $MESON test -C "$B" "$s" --print-errorlogs \
		--logbase "gpucheck-$s" >"$L/$s.log" 2>&1
	rc=$?
	t=$(($(date +%s) - t0))
	if [ $rc -eq 0 ] && grep -q " OK " "$L/$s.log"; then
		result PASS "$s" "${t} s"
	else
		result FAIL "$s" "exit $rc after ${t} s; the test log is $B/meson-logs/gpucheck-$s.txt"
		grep -E '\[FAIL\]|Assertion|FAIL:|skipped|cannot|smartio-gpudma|nvme-emu:' \
			"$B/meson-logs/gpucheck-$s.txt" 2>/dev/null | head -30 | sed 's/^/      | /'
	fi
done
QD1=$(grep -h -o 'QD1 latency.*' "$B/meson-logs/gpucheck-gpu-io.txt" 2>/dev/null | head -1)
[ -n "$QD1" ] && say "      $QD1"

# ---- 4. a live controller: QD1, latency, parallel reads checked in the kernel ----
say "== 4. live: nvme-emu + nvme-manager + gpu-read / gpu-bench"
FAB=gpuchk-$$
FAB1=gpuchk1-$$		# step 6: the emulator waiting for each copy
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for f in "$FAB" "$FAB1"; do
		with_deps "$B/src/tools/smartio" destroy "$f" --force >/dev/null 2>&1
	done
	mps_quit
}
trap cleanup EXIT
trap 'exit 130' INT TERM
wait_file() {	# FILE PID
	for _ in $(seq 300); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# start_live FABRIC TAG [VAR=VALUE...]: a fabric, nvme-emu (its environment
# given the VAR=VALUE words) and nvme-manager; logs TAG-emu.log, TAG-mgr.log.
start_live() {
	local fab=$1 tag=$2
	shift 2
	rm -f "$L/$tag-emu.ready" "$L/$tag-mgr.ready"
	if ! with_deps "$B/src/tools/smartio" create "$fab" --nodes 2 >"$L/$tag-fabric.log" 2>&1; then
		result FAIL live "cannot create fabric $fab"
		show_log "$L/$tag-fabric.log"
		return 1
	fi
	env SMARTIO_GPU_PLUGIN="$PLUGIN" "$@" LD_LIBRARY_PATH="${DEPS_LIBS:+$DEPS_LIBS:}${LD_LIBRARY_PATH:-}" \
		"$B/drivers/nvme/emu/nvme-emu" --fabric "$fab" --node 0 --backing ram:256M \
		--ready-file "$L/$tag-emu.ready" >"$L/$tag-emu.log" 2>&1 &
	PIDS+=($!)
	if ! wait_file "$L/$tag-emu.ready" $!; then
		result FAIL live "nvme-emu did not start"
		show_log "$L/$tag-emu.log"
		return 1
	fi
	with_deps "$B/drivers/nvme/tools/nvme-manager" --fabric "$fab" --node 0 \
		--ready-file "$L/$tag-mgr.ready" >"$L/$tag-mgr.log" 2>&1 &
	PIDS+=($!)
	if ! wait_file "$L/$tag-mgr.ready" $!; then
		result FAIL live "nvme-manager did not start"
		show_log "$L/$tag-mgr.log"
		return 1
	fi
}
live_ok=1
start_live "$FAB" live || live_ok=0
run_step() {	# NAME LOGFILE TIMEOUT CMD...: PASS/FAIL by exit status
	local name=$1 log=$2 to=$3
	shift 3
	SMARTIO_REQUIRE_GPU=1 with_deps timeout "$to" "$@" >"$log" 2>&1
	local rc=$?
	if [ $rc -eq 0 ]; then
		return 0
	fi
	[ $rc -eq 124 ] && result FAIL "$name" "timed out after $to s" || result FAIL "$name" "exit $rc"
	show_log "$log" 15
	say "      --- nvme-emu's stderr:"
	tail -n 10 "$L/live-emu.log" | sed 's/^/      | /'
	return 1
}
if [ $live_ok = 1 ]; then
	if run_step gpu-read-qd1 "$L/qd1.log" 45 "$B/examples/gpu/gpu-read" --fabric "$FAB" \
		--mib 1 --threads 1 --queues 1 --depth 2 --pattern 0x5eed; then
		result PASS gpu-read-qd1 "$(grep -o 'GPU read.*MiB/s)' "$L/qd1.log")"
	fi
	if run_step gpu-bench-qd1 "$L/bench.log" 90 "$B/bench/gpu/gpu-bench" --fabric "$FAB" \
		--sq-placement --ios 2000 --json "$L/gpu-bench.json"; then
		if grep -q errors "$L/bench.log"; then
			result FAIL gpu-bench-qd1 "commands failed (see $L/bench.log)"
		else
			result PASS gpu-bench-qd1 "QD1 latency, 4 KiB random reads, 1 GPU thread:"
		fi
		grep -E '^(SQ|gpu|host) ' "$L/bench.log" | sed 's/^/      /'
	fi
	if run_step gpu-read-parallel "$L/parallel.log" 90 "$B/examples/gpu/gpu-read" \
		--fabric "$FAB" --mib 64 --threads 256 --queues 4 --depth 64 --pattern 0xc0ffee; then
		result PASS gpu-read-parallel "$(grep -o 'GPU read.*MiB/s)' "$L/parallel.log"); checked in the kernel"
	fi
	FAULTS=$(with_deps "$B/src/tools/smartio" status "$FAB" --json 2>/dev/null | grep -o '"dma_faults":[0-9]*' |
		 grep -o '[0-9]*$' | awk '{ s += $1 } END { if (NR) print s }')
	if [ -z "$FAULTS" ]; then
		result WARN dma-faults "could not read them (smartio status)"
	elif [ "$FAULTS" = 0 ]; then
		result PASS dma-faults "0"
	else
		result FAIL dma-faults "$FAULTS DMA faults: the controller reached for memory nobody mapped"
	fi
	if grep -qE 'smartio-gpudma|cannot fetch|not possible' "$L/live-emu.log"; then
		result FAIL emulator-log "nvme-emu reported GPU DMA problems:"
		grep -E 'smartio-gpudma|cannot fetch|not possible' "$L/live-emu.log" | head -5 | sed 's/^/      | /'
	fi
fi

say "== 5. the engine's sweep (bench/gpu/sweep.sh): GPU-resident model, then nvme-emu"
t0=$(date +%s)
SWEEP_FAB=
[ $live_ok = 1 ] && SWEEP_FAB="--fabric $FAB"
# shellcheck disable=SC2086 # SWEEP_FAB is empty or two words
SMARTIO_REQUIRE_GPU=1 with_deps timeout 420 bench/gpu/sweep.sh "$B" "$L/sweep" $SWEEP_FAB \
	>"$L/sweep.log" 2>&1
rc=$?
t=$(($(date +%s) - t0))
if [ $rc -eq 0 ]; then
	result PASS sweep "${t} s; JSON in $L/sweep/"
else
	result FAIL sweep "exit $rc after ${t} s (see $L/sweep.log)"
fi
sed 's/^/      /' "$L/sweep.log"

# ---- 6. the emulator's batched DMA against a copy waited for each command ----
# Both emulators alive, the same point run on each in turn, twice: a ratio
# from one run on one machine.
say "== 6. nvme-emu: one batched copy per pass against a copy waited for per command"
if [ $live_ok = 1 ] && start_live "$FAB1" one SMARTIO_GPU_DMA_BATCH=0; then
	for i in 1 2; do
		for f in "$FAB" "$FAB1"; do
			SMARTIO_REQUIRE_GPU=1 with_deps timeout 60 "$B/bench/gpu/gpu-bench" --fabric "$f" \
				--ios 100000 --bs 4096 --threads 256,1024 --queues 1,4,8 --depth 256 \
				--sq gpu --cq host --json "$L/batch-$f-$i.json" >"$L/batch-$f-$i.log" 2>&1 ||
				say "      gpu-bench on $f failed (exit $?; $L/batch-$f-$i.log)"
		done
	done
	best() { grep -hE '^ *4096 ' "$L"/batch-"$1"-*.log | awk '{ print $7 }' | sort -n | tail -1; }
	ON=$(best "$FAB")
	OFF=$(best "$FAB1")
	if [ -n "$ON" ] && [ -n "$OFF" ]; then
		result PASS emu-batch "4 KiB reads, best of 256/1024 GPU threads x 1/4/8 queues: batched $ON commands/s, one copy per command $OFF ($(awk -v a="$ON" -v b="$OFF" 'BEGIN { printf "%.2fx", a / b }'))"
	else
		result FAIL emu-batch "no figure (see $L/batch-*.log)"
	fi
fi
verdict
