#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The kernel's NVMe driver and smartio's, side by side in one QEMU guest on
# the same emulated NVMe controller (a benchmark, not a test):
#   (a) Linux's nvme driver: fio, io_uring, O_DIRECT, with interrupts and
#       with polled queues (nvme.poll_queues=2, fio --hipri);
#   (b) smartio's driver on vfio: fio with the smartio ioengine, and
#       nvme-bench-sweep --fabric.
# 4 KiB random reads at QD1 and QD32. Reports QD1 p50/p99 latency and IOPS
# per guest CPU-second (all guest CPUs' non-idle time over the run, from the
# guest's /proc/stat) for each, and smartio/kernel ratios; fio's null
# engine at QD32 gives fio's own cost per I/O, the smartio engine's floor.
# QD32 is measured again in other completion modes (the engine's adaptive
# and poll beside its default, hybrid; the sweep's irq and adaptive); each
# run keeps its wall time, the lender's and manager's CPU and, for fio, the
# job's own CPU.
# Writes side-by-side.json and side-by-side.png to the output directory.
# QEMU runs under TCG here: absolute figures are emulation speed, the ratios
# are the point.
#
# usage: bench/vm/side-by-side.sh BUILD_DIR [-t SECONDS] [-o DIR] [--smoke]
#   -t: seconds per measured run (default 8); --smoke: 1 s runs, checks only
#   (the vm suite's side-by-side-smoke). Exit 77 when QEMU, a kernel, fio or
#   the fio engine is missing.
set -eu
prog=side-by-side rt=8 out=bench-out/side-by-side smoke=0
# shellcheck source=bench/vm/lib.sh
. "$(dirname "$0")/lib.sh"
bench_args "$@"
bench_fio
sweep=$build/bench/nvme/nvme-bench-sweep
benches="$sweep $build/bench/nvme/nvme-bench-sq-placement $build/bench/nvme/nvme-bench-overhead
	$build/bench/emu/emu-bench"
for b in $benches; do [ -x "$b" ] || skip "$b not built"; done

bench_work sbs
sed "s/@RUNTIME@/$rt/" "$here/side-by-side-guest.sh" >"$work/guest.sh"
export SIO_VM_SUITE="$work/guest.sh" SIO_VM_EXTRA="$fio $engine $benches" \
	SIO_VM_TIMEOUT=$((420 + 40 * rt))
bench_guests run-vm.sh
[ $smoke -eq 0 ] || exit 0

mkdir -p "$out"
python3 - "$work/console.log" "$out" "$rt" <<'EOF'
import json, re, sys
log, out, rt = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs, cur, buf, info, walls = {}, None, [], [], {}
for line in open(log, errors="replace"):
    line = line.rstrip("\r\n")
    if re.match(r"^\[ *[0-9]+\.[0-9]+\]", line):
        continue                       # kernel messages on the console
    if line.startswith("SIO-BENCH-INFO "):
        info.append(line[15:])
    m = re.match(r"^SIO-BENCH-BEGIN (\S+) cpu=(\d+) hz=(\d+)(?: wall=(\d+) side=(\d+))?", line)
    if m:
        cur, cpu, hz, buf = m.group(1), int(m.group(2)), int(m.group(3)), []
        extra = {"wall_s": int(m.group(4)) / 100, "lender_manager_cpu_s": int(m.group(5)) / hz} if m.group(4) else {}
        continue
    if cur and line.startswith("SIO-BENCH-END"):
        runs[cur] = (json.loads("\n".join(buf)), cpu / hz)
        walls[cur] = extra
        cur = None
        continue
    if cur:
        buf.append(line)

def fio(name):
    j, cpu_s = runs[name]
    r = j["jobs"][0]["read"]
    pct = r["lat_ns"]["percentile"]
    job_cpu_s = (j["jobs"][0]["usr_cpu"] + j["jobs"][0]["sys_cpu"]) / 100 * j["jobs"][0]["job_runtime"] / 1000
    return {"iops": r["iops"], "ios": r["total_ios"], "guest_cpu_s": cpu_s, **walls.get(name, {}),
            "iops_per_guest_cpu_s": r["total_ios"] / cpu_s if cpu_s else 0,
            "fio_process_cpu_pct": j["jobs"][0]["usr_cpu"] + j["jobs"][0]["sys_cpu"],
            "fio_job_cpu_s": job_cpu_s,
            "iops_per_fio_job_cpu_s": r["total_ios"] / job_cpu_s if job_cpu_s else 0,
            "p50_ns": pct["50.000000"], "p99_ns": pct["99.000000"]}

def sweep(name):
    j, cpu_s = runs[name]
    p = j["points"][0]
    ios = p["iops"] * j["seconds_per_point"]
    return {"iops": p["iops"], "ios": ios, "guest_cpu_s": cpu_s, **walls.get(name, {}),
            "iops_per_guest_cpu_s": ios / cpu_s if cpu_s else 0,
            "iops_per_client_cpu_s": p["iops_per_client_core"],
            "p50_ns": p["latency"]["p50_ns"], "p99_ns": p["latency"]["p99_ns"],
            "target": j.get("target")}

rows = {}
for key, name, fn in [("kernel io_uring irq", "k-irq", fio), ("kernel io_uring polled", "k-poll", fio),
                      ("smartio fio", "s-fio", fio), ("smartio nvme-bench-sweep", "s-sweep", sweep)]:
    if name + "-qd1" in runs and name + "-qd32" in runs:
        rows[key] = {"qd1": fn(name + "-qd1"), "qd32": fn(name + "-qd32")}
kbest = {}
for qd in ("qd1", "qd32"):     # the kernel's better figure of irq and polled
    ks = [rows[k][qd] for k in rows if k.startswith("kernel")]
    kbest[qd] = {"iops_per_guest_cpu_s": max(k["iops_per_guest_cpu_s"] for k in ks),
                 "p50_ns": min(k["p50_ns"] for k in ks), "p99_ns": min(k["p99_ns"] for k in ks)}
ratios = {}
for k in rows:
    if k.startswith("smartio"):
        s = rows[k]
        ratios[k] = {
            "qd1_p50_latency": s["qd1"]["p50_ns"] / kbest["qd1"]["p50_ns"],
            "qd1_p99_latency": s["qd1"]["p99_ns"] / kbest["qd1"]["p99_ns"],
            "qd1_iops_per_guest_cpu_s": s["qd1"]["iops_per_guest_cpu_s"] / kbest["qd1"]["iops_per_guest_cpu_s"],
            "qd32_iops_per_guest_cpu_s": s["qd32"]["iops_per_guest_cpu_s"] / kbest["qd32"]["iops_per_guest_cpu_s"]}
# fio's floor: the null engine's IOPS per guest CPU-second at QD32, the
# smartio engine's against it (the engine's cost over fio's own)
floor = {}
if "null-fio-qd32" in runs and "smartio fio" in rows:
    floor["null_engine_qd32"] = fio("null-fio-qd32")
    floor["smartio_engine_over_null_qd32"] = (rows["smartio fio"]["qd32"]["iops_per_guest_cpu_s"] /
                                              floor["null_engine_qd32"]["iops_per_guest_cpu_s"])
# QD32 once more in the other modes (the engine's adaptive and poll, the
# sweep's irq and adaptive): the engine against fio's floor, smartio's own
# loop against the kernel
waits = {}
for key, name, fn in [("smartio fio adaptive", "s-fio-adaptive", fio), ("smartio fio poll", "s-fio-poll", fio),
                      ("smartio sweep irq", "s-sweep-irq", sweep), ("smartio sweep adaptive", "s-sweep-adaptive", sweep)]:
    if name + "-qd32" not in runs:
        continue
    r = fn(name + "-qd32")
    ref = floor.get("null_engine_qd32") if key.startswith("smartio fio") else kbest["qd32"]
    if ref:
        r["over_" + ("null_engine" if key.startswith("smartio fio") else "kernel")] = (
            r["iops_per_guest_cpu_s"] / ref["iops_per_guest_cpu_s"])
    if ref and "iops_per_fio_job_cpu_s" in r:   # fio's own accounting of the job: the I/O phase alone
        r["over_null_engine_job_cpu"] = r["iops_per_fio_job_cpu_s"] / ref["iops_per_fio_job_cpu_s"]
    waits[key] = r
if "null_engine_qd32" in floor:
    floor["smartio_engine_over_null_qd32_by_mode"] = {"hybrid": floor["smartio_engine_over_null_qd32"]}
    floor["smartio_engine_over_null_qd32_job_cpu"] = (rows["smartio fio"]["qd32"]["iops_per_fio_job_cpu_s"] /
                                                      floor["null_engine_qd32"]["iops_per_fio_job_cpu_s"])
    for k, r in waits.items():
        if "over_null_engine" in r:
            floor["smartio_engine_over_null_qd32_by_mode"][k.split()[-1]] = r["over_null_engine"]
res = {"benchmark": "side-by-side", "emulation": "QEMU TCG (no KVM): emulation speed, read the ratios",
       "runtime_s": rt, "guest": info, "block": 4096, "rw": "randread",
       "cpu_measure": "non-idle ticks of all guest CPUs over the run (/proc/stat), fio start-up included",
       "ratio_reference": "the kernel's better figure of interrupt and polled queues",
       "targets": {"qd32_iops_per_guest_cpu_s": ">= 5.0 through smartio's own loop (the sweep)",
                   "qd1_p50_latency": "<= 0.7",
                   "smartio_engine_over_null_qd32": ">= 0.8 (IOPS per guest CPU-second)"},
       "runs": rows, "qd32_waiting": waits, "kernel_best": kbest, "ratios_smartio_over_kernel": ratios, "fio_floor": floor}
json.dump(res, open(out + "/side-by-side.json", "w"), indent=1)

print("\nside by side on one QEMU NVMe (TCG: emulation speed, read the ratios); 4 KiB random reads, %d s each" % rt)
for i in info:
    print("  " + i)
print("%-26s %12s %12s %12s %12s %12s %12s" % ("", "QD1 IOPS", "QD1 p50 ns", "QD1 p99 ns",
      "QD1 IOPS/cpu", "QD32 IOPS", "QD32 IOPS/cpu"))
for k, r in rows.items():
    print("%-26s %12.0f %12.0f %12.0f %12.0f %12.0f %12.0f" % (k, r["qd1"]["iops"], r["qd1"]["p50_ns"],
          r["qd1"]["p99_ns"], r["qd1"]["iops_per_guest_cpu_s"], r["qd32"]["iops"], r["qd32"]["iops_per_guest_cpu_s"]))
print("\nsmartio / kernel (kernel: the better of irq and polled)   target: QD32 IOPS/cpu >= 5.0 (sweep), QD1 p50 <= 0.7")
for k, r in ratios.items():
    print("  %-26s QD1 p50 %.2f  p99 %.2f  QD1 IOPS/cpu %.2f  QD32 IOPS/cpu %.2f" % (
        k, r["qd1_p50_latency"], r["qd1_p99_latency"], r["qd1_iops_per_guest_cpu_s"],
        r["qd32_iops_per_guest_cpu_s"]))
if floor:
    print("fio's null engine, QD32: %.0f IOPS per guest CPU-s; the smartio engine's / the null's: %.2f"
          " (target >= 0.8)" % (floor["null_engine_qd32"]["iops_per_guest_cpu_s"],
                                floor["smartio_engine_over_null_qd32"]))
if floor:
    print("  by fio's own accounting of the job (the I/O phase alone): %.2f"
          % floor["smartio_engine_over_null_qd32_job_cpu"])
for k, r in waits.items():
    if "over_null_engine_job_cpu" in r:
        print("QD32 %-24s by fio's accounting of the job: %.2f of the null engine's" % (k, r["over_null_engine_job_cpu"]))
    print("QD32 %-24s %8.0f IOPS %8.0f IOPS per guest CPU-s; %s" % (k, r["iops"], r["iops_per_guest_cpu_s"],
          "over fio's null engine %.2f (target >= 0.8)" % r["over_null_engine"] if "over_null_engine" in r else
          "over the kernel %.2f (target >= 5.0)" % r["over_kernel"] if "over_kernel" in r else ""))
with open(out + "/side-by-side.dat", "w") as d:
    d.write("# name qd1_iops_per_cpu qd32_iops_per_cpu qd1_p50_us qd1_p99_us\n")
    for k, r in rows.items():
        d.write('"%s" %.0f %.0f %.1f %.1f\n' % (k, r["qd1"]["iops_per_guest_cpu_s"], r["qd32"]["iops_per_guest_cpu_s"],
                r["qd1"]["p50_ns"] / 1000, r["qd1"]["p99_ns"] / 1000))
EOF
cat >"$out/side-by-side.gp" <<'EOF'
set terminal pngcairo size 1400,560 noenhanced
set output 'side-by-side.png'
set multiplot layout 1,2 title 'one QEMU NVMe, kernel nvme driver vs smartio on vfio, 4 KiB random reads (QEMU TCG: emulation speed, read the ratios)'
set xtics rotate by -15
set title 'IOPS per guest CPU-second (all guest CPUs, /proc/stat)'
set yrange [0:*]
plot 'side-by-side.dat' using 2:xtic(1) title 'QD1', '' using 3 title 'QD32'
set title 'QD1 latency (submit to completion)'
set ylabel 'us (log scale)'
set logscale y
set yrange [*:*]
plot 'side-by-side.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99'
unset multiplot
EOF
bench_png side-by-side
