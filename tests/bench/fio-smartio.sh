#!/bin/bash
# SPDX-License-Identifier: MIT
# fio through the smartio ioengine on a simulated fabric: the data fio writes
# is what nvme-client reads and the other way round, verify jobs pass and
# catch a corrupted block, numjobs gives each job a queue pair of its own,
# and bad options and device errors end the job as fio errors.
# usage: fio-smartio.sh SMARTIO NVME_EMU NVME_MANAGER NVME_CLIENT ENGINE_SO EXAMPLES_DIR
set -u
SMARTIO=$1 EMU=$2 MGR=$3 CLIENT=$4 ENGINE=$5 EX=$6
command -v fio >/dev/null || { echo "SKIP: fio not installed (apt-get install fio)"; exit 77; }
export SMARTIO_QUIET=1 SIO_FIO_ENGINE=$ENGINE
. "$(dirname "$0")/lib.sh" t-fio
export SMARTIO_FABRIC=$F
E="--ioengine=external:$ENGINE"
# A fio JSON report, parsed, and a Python expression over its jobs (j) that must hold.
fio_json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['jobs']; sys.exit(0 if ($2) else 1)" "$1"; }
# fio_ok NAME ARGS...: a fio run that must succeed with no job error
fio_ok() {
	n=$1; shift
	timeout 120 fio --output-format=json --output="$T/$n.json" "$@" >"$T/$n.log" 2>&1 ||
		{ cat "$T/$n.log" "$T/$n.json" 2>/dev/null; fail "fio $n exited non-zero"; }
	fio_json "$T/$n.json" 'all(x["error"] == 0 for x in j)' || { cat "$T/$n.json"; fail "fio $n: a job error"; }
	return 0
}
# fio_err NAME PATTERN ARGS...: a fio run that must fail, saying PATTERN
fio_err() {
	n=$1 pat=$2; shift 2
	timeout 120 fio "$@" >"$T/$n.log" 2>&1 && { cat "$T/$n.log"; fail "fio $n succeeded"; }
	grep -q "$pat" "$T/$n.log" || { cat "$T/$n.log"; fail "fio $n: no message matching '$pat'"; }
}

start_emu 3 --backing ram:64M --queues 8

# No manager yet: the job fails as a fio error naming the cause.
fio_err nomgr "no NVMe manager serves device" --name=x $E --rw=read --bs=4k --size=64k
ok "no manager: a fio error"

start_mgr

# fio -> device -> nvme-client: 1 MiB of 0x5a at 4 MiB (512 B blocks 8192..10239)
fio_ok w1 --name=w $E --sio_device="$DEV" --sio_node=0 --rw=write --bs=64k --iodepth=4 \
	--offset=4m --size=1m --buffer_pattern=0x5a
"$CLIENT" --device "$DEV" --op verify --lba 8192 --count 2048 --pattern 0x5a >"$T/c.log" 2>&1 ||
	{ cat "$T/c.log"; fail "nvme-client does not read back what fio wrote"; }
# nvme-client -> device -> fio: 0xa5 at 8 MiB, checked by a verify-only read job
"$CLIENT" --device "$DEV" --op write --lba 16384 --count 2048 --pattern 0xa5 >"$T/c.log" 2>&1 ||
	{ cat "$T/c.log"; fail "nvme-client write"; }
fio_ok r1 --name=r $E --rw=read --bs=16k --iodepth=8 --offset=8m --size=1m \
	--verify=pattern --verify_pattern=0xa5 --verify_only=1
fio_err r1bad "verify" --name=r $E --rw=read --bs=16k --offset=8m --size=1m \
	--verify=pattern --verify_pattern=0x3c --verify_only=1
ok "data: fio and nvme-client see the same blocks; verify catches a wrong pattern"

# The example jobs: verify, rw mix and bsrange, numjobs=4 (four queue pairs).
fio_ok mix "$EX/verify-mix.fio" --runtime=1
for n in write-verify mix jobs4; do
	fio_json "$T/mix.json" "'$n' in [x['jobname'] for x in j]" || fail "example job $n did not run"
done
fio_json "$T/mix.json" '[x["jobname"] for x in j].count("jobs4") == 4' || fail "numjobs=4 did not run 4 jobs"
fio_json "$T/mix.json" 'all(x["error"] == 0 for x in j)' || fail "a job failed"
ok "example jobs: verify, rw mix, numjobs"

# Each job its own queue pair: the controller offers 8, 9 jobs need 9.
fio_err toomany "no I/O queue pair left" --name=x $E --rw=randread --bs=4k --size=1m \
	--numjobs=9 --time_based --runtime=2
fio_ok threads --name=t $E --thread --numjobs=3 --rw=randread --bs=4k --iodepth=8 \
	--size=4m --time_based --runtime=1 --group_reporting
ok "numjobs: one queue pair per job (processes and threads)"

# Completions on interrupts: verified data either way, and a bad mode said.
fio_ok irq --name=x $E --sio_completions=irq --rw=randwrite --bs=4k --iodepth=4 --size=1m \
	--offset_increment=1m --verify=crc32c --numjobs=3
fio_ok adaptive --name=x $E --sio_completions=adaptive --rw=randread --bs=4k --iodepth=8 \
	--size=4m --time_based --runtime=1
# hybrid: timed sleeps past the first windows of 256 completions, verified
fio_ok hybrid --name=x $E --sio_completions=hybrid --rw=randwrite --bs=4k --iodepth=16 \
	--size=4m --verify=crc32c --verify_backlog=512
fio_json "$T/hybrid.json" 'j[0]["write"]["total_ios"] == 1024' || fail "hybrid: not every write done"
# adaptive with more jobs than their CPUs: no spin (it would hold a CPU
# another job needs), said once; with a CPU each, adaptive as asked
for n in 1 2; do
	timeout 120 fio --name=x $E --sio_completions=adaptive --rw=randread --bs=4k --iodepth=8 \
		--size=1m --numjobs=$n --cpus_allowed=0 >"$T/crowded$n.log" 2>&1 ||
		{ cat "$T/crowded$n.log"; fail "fio adaptive, $n jobs on one CPU"; }
done
[ "$(grep -c "2 jobs on 1 CPUs: the jobs sleep on interrupts" "$T/crowded2.log")" = 1 ] ||
	{ cat "$T/crowded2.log"; fail "adaptive, 2 jobs on 1 CPU: not told once that they sleep"; }
grep -q "sleep on interrupts" "$T/crowded1.log" &&
	{ cat "$T/crowded1.log"; fail "adaptive, 1 job on 1 CPU: its spin was taken away"; }
fio_err badcpl "sio_completions=fast" --name=x $E --sio_completions=fast --rw=read --bs=4k \
	--size=64k
ok "sio_completions: irq, adaptive and hybrid verify; adaptive jobs crowded on too few CPUs sleep; a bad mode is a fio error"

# Bad options and device errors are fio errors.
fio_err badq "sio_queue" --name=x $E --sio_queue=location=moon --rw=read --bs=4k --size=64k
fio_err baddev "sio_device" --name=x $E --sio_device=1x --rw=read --bs=4k --size=64k
fio_err nons "namespace" --name=x $E --sio_nsid=7 --rw=read --bs=4k --size=64k
fio_err align "not whole 512 B blocks" --name=x $E --rw=read --bs=4k --offset=100 --size=64k
# trim deallocates (Dataset Management): blocks written with 0x77 then read as zeroes
fio_ok pretrim --name=x $E --rw=write --bs=4k --size=64k --verify=pattern \
	--verify_pattern=0x77 --do_verify=0
fio_ok trim --name=x $E --rw=trim --bs=4k --size=64k
fio_ok trimmed --name=x $E --rw=read --bs=4k --size=64k --verify=pattern --verify_pattern=0 \
	--verify_only=1
ok "bad options and unsupported commands: fio errors"

kill -0 "$MGR_PID" 2>/dev/null || fail "the manager died"

# The controller goes away under a running job: the job ends with an error.
timeout 120 fio --name=x $E --rw=randread --bs=4k --iodepth=8 --size=4m --time_based \
	--runtime=30 >"$T/gone.log" 2>&1 &
FIO_PID=$!
sleep 1.5
kill "$EMU_PID"; wait "$EMU_PID" 2>/dev/null; EMU_PID=
wait "$FIO_PID" && { cat "$T/gone.log"; fail "fio did not fail when the controller went away"; }
grep -Eq "err= *[1-9]|error" "$T/gone.log" || { cat "$T/gone.log"; fail "no fio error reported"; }
sed -n '/error\|err=/p' "$T/gone.log" | head -3
ok "a controller that goes away: a fio error"
echo "$pass passed, 0 failed"
