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
# per guest CPU-second (all guest CPUs' time over the run less their idle,
# from the guest's /proc/stat) for each, and smartio/kernel ratios; fio's null
# engine at QD32 gives fio's own cost per I/O, the smartio engine's floor.
# QD32 is measured again in other completion modes (the engine's adaptive
# and poll beside its default, hybrid; the sweep's irq, adaptive and
# hybrid); each
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
# the QEMU threads named (CPU N/TCG), whose host CPU time vcpu-time.py reads
# at the guest's marks
export SIO_VM_SUITE="$work/guest.sh" SIO_VM_EXTRA="$fio $engine $benches" \
	SIO_VM_TIMEOUT=$((420 + 40 * rt)) SIO_VM_QEMU_ARGS="-name sbs,debug-threads=on"
python3 "$here/vcpu-time.py" "$work/console.log" "$work/vcpu.txt" &
sampler=$!
bench_guests run-vm.sh
wait $sampler || echo "$prog: no vCPU times: the figures by the host's vCPU time are left out"
[ $smoke -eq 0 ] || exit 0

mkdir -p "$out"
# the console beside the results: every run's CPU samples, for a reader
cp "$work/console.log" "$out/console.log"
python3 - "$work/console.log" "$out" "$rt" "$work/vcpu.txt" <<'EOF'
import json, os, re, sys
log, out, rt, vlog = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
runs, cur, buf, info, walls = {}, None, [], [], {}
for line in open(log, errors="replace"):
    line = line.rstrip("\r\n")
    if re.match(r"^\[ *[0-9]+\.[0-9]+\]", line):
        continue                       # kernel messages on the console
    if line.startswith("SIO-BENCH-INFO "):
        info.append(line[15:])
    m = re.match(r"^SIO-BENCH-BEGIN (\S+) cpu=(\d+) hz=(\d+)(?: wall=(\d+) side=(\d+))?"
                 r"(?: idle=(\d+) cpus=(\d+))?", line)
    if m:
        cur, cpu, hz, buf = m.group(1), int(m.group(2)), int(m.group(3)), []
        extra = {"wall_s": int(m.group(4)) / 100, "lender_manager_cpu_s": int(m.group(5)) / hz} if m.group(4) else {}
        if m.group(6):  # busy: the CPUs' time less their idle (wall in centiseconds, hz 100)
            extra["guest_cpu_ticks_s"] = cpu / hz
            cpu = int(m.group(7)) * int(m.group(4)) - int(m.group(6))
        continue
    if cur and line.startswith("SIO-BENCH-END"):
        runs[cur] = (json.loads("\n".join(buf)), cpu / hz)
        walls[cur] = extra
        cur = None
        continue
    if cur:
        buf.append(line)
# the host's CPU time of the guest's vCPU threads over each run (vcpu-time.py)
marks = {}
for line in open(vlog) if os.path.exists(vlog) else []:
    w = line.split()
    marks.setdefault(w[0], {})[w[1]] = (int(w[2]), int(w[3]))
for name, mk in marks.items():
    if name in walls and "begin" in mk and "end" in mk:
        walls[name]["vcpu_host_s"] = (mk["end"][0] - mk["begin"][0]) / 1e9
        walls[name]["qemu_host_s"] = (mk["end"][1] - mk["begin"][1]) / 1e9

# The CPU measures, each a run's CPU-seconds and the suffix of its rates
# and ratios: the guest's busy time (CPUs x wall less idle), its non-idle
# ticks, and the host's time of the vCPU threads
MEASURES = [("guest_cpu_s", ""), ("guest_cpu_ticks_s", "_ticks"), ("vcpu_host_s", "_vcpu")]

def rates(d):
    for cpu, suf in MEASURES:
        if d.get(cpu):
            d["iops_per_guest_cpu%s_s" % suf] = d["ios"] / d[cpu]
    return d

def over(a, b, name):
    """@a's rates over @b's, for each measure both have, as name + suffix."""
    return {name + suf: a[k] / b[k] for _, suf in MEASURES
            for k in ["iops_per_guest_cpu%s_s" % suf] if a.get(k) and b.get(k)}

def fio(name):
    j, cpu_s = runs[name]
    r = j["jobs"][0]["read"]
    pct = r["lat_ns"]["percentile"]
    job_cpu_s = (j["jobs"][0]["usr_cpu"] + j["jobs"][0]["sys_cpu"]) / 100 * j["jobs"][0]["job_runtime"] / 1000
    return rates({"iops": r["iops"], "ios": r["total_ios"], "guest_cpu_s": cpu_s, **walls.get(name, {}),
                  "fio_process_cpu_pct": j["jobs"][0]["usr_cpu"] + j["jobs"][0]["sys_cpu"],
                  "fio_job_cpu_s": job_cpu_s,
                  "iops_per_fio_job_cpu_s": r["total_ios"] / job_cpu_s if job_cpu_s else 0,
                  "p50_ns": pct["50.000000"], "p99_ns": pct["99.000000"]})

def sweep(name):
    j, cpu_s = runs[name]
    p = j["points"][0]
    ios = p["iops"] * j["seconds_per_point"]
    return rates({"iops": p["iops"], "ios": ios, "guest_cpu_s": cpu_s, **walls.get(name, {}),
                  "iops_per_client_cpu_s": p["iops_per_client_core"],
                  "p50_ns": p["latency"]["p50_ns"], "p99_ns": p["latency"]["p99_ns"],
                  "target": j.get("target")})

rows = {}
for key, name, fn in [("kernel io_uring irq", "k-irq", fio), ("kernel io_uring polled", "k-poll", fio),
                      ("smartio fio", "s-fio", fio), ("smartio nvme-bench-sweep", "s-sweep", sweep)]:
    if name + "-qd1" in runs and name + "-qd32" in runs:
        rows[key] = {"qd1": fn(name + "-qd1"), "qd32": fn(name + "-qd32")}
kbest = {}
for qd in ("qd1", "qd32"):     # the kernel's better figure of irq and polled, by each measure
    ks = [rows[k][qd] for k in rows if k.startswith("kernel")]
    kbest[qd] = {m: max(k.get(m, 0) for k in ks) for m in ["iops_per_guest_cpu%s_s" % s for _, s in MEASURES]}
    kbest[qd].update({"p50_ns": min(k["p50_ns"] for k in ks), "p99_ns": min(k["p99_ns"] for k in ks)})
ratios = {}
for k in rows:
    if k.startswith("smartio"):
        s = rows[k]
        ratios[k] = {
            "qd1_p50_latency": s["qd1"]["p50_ns"] / kbest["qd1"]["p50_ns"],
            "qd1_p99_latency": s["qd1"]["p99_ns"] / kbest["qd1"]["p99_ns"],
            **over(s["qd1"], kbest["qd1"], "qd1_iops_per_cpu"), **over(s["qd32"], kbest["qd32"], "qd32_iops_per_cpu")}
# fio's floor: the null engine's IOPS per guest CPU-second at QD32, the
# smartio engine's against it (the engine's cost over fio's own)
floor = {}
if "null-fio-qd32" in runs and "smartio fio" in rows:
    floor["null_engine_qd32"] = fio("null-fio-qd32")
    floor.update(over(rows["smartio fio"]["qd32"], floor["null_engine_qd32"], "smartio_engine_over_null_qd32"))
# QD32 once more in the other modes (the engine's adaptive and poll, the
# sweep's irq, adaptive and hybrid): the engine against fio's floor,
# smartio's own loop against the kernel
waits = {}
for key, name, fn in [("smartio fio adaptive", "s-fio-adaptive", fio), ("smartio fio poll", "s-fio-poll", fio),
                      ("smartio sweep irq", "s-sweep-irq", sweep), ("smartio sweep adaptive", "s-sweep-adaptive", sweep),
                      ("smartio sweep hybrid", "s-sweep-hybrid", sweep)]:
    if name + "-qd32" not in runs:
        continue
    r = fn(name + "-qd32")
    ref = floor.get("null_engine_qd32") if key.startswith("smartio fio") else kbest["qd32"]
    if ref:
        r.update(over(r, ref, "over_" + ("null_engine" if key.startswith("smartio fio") else "kernel")))
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
       "cpu_measure": "guest_cpu_s: busy time of all guest CPUs over the run, CPUs x wall time less idle "
                      "and iowait (/proc/stat, which times idle from entry to exit), fio start-up included; "
                      "guest_cpu_ticks_s (rates and ratios suffixed _ticks): the non-idle ticks, one tick's "
                      "sample each, which a vCPU the host did not run misses; vcpu_host_s (suffix _vcpu): "
                      "the host's CPU time of the QEMU threads that run the guest's CPUs",
       "ratio_reference": "the kernel's better figure of interrupt and polled queues, by each measure",
       "targets": {"qd32_iops_per_cpu": ">= 5.0 through smartio's own loop (the sweep)",
                   "qd1_p50_latency": "<= 0.7",
                   "smartio_engine_over_null_qd32": ">= 0.8 (IOPS per guest CPU-second)"},
       "runs": rows, "qd32_waiting": waits, "kernel_best": kbest, "ratios_smartio_over_kernel": ratios, "fio_floor": floor}
json.dump(res, open(out + "/side-by-side.json", "w"), indent=1)

def by(r, name):
    """@name by each measure the run has: "0.43 (ticks 0.46, vCPUs 0.50)"."""
    alt = ["%s %.2f" % (w, r[name + s]) for s, w in (("_ticks", "ticks"), ("_vcpu", "vCPUs")) if name + s in r]
    return "%.2f%s" % (r[name], " (%s)" % ", ".join(alt) if alt else "")

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
    print("  %-26s QD1 p50 %.2f  p99 %.2f  QD1 IOPS/cpu %s  QD32 IOPS/cpu %s" % (
        k, r["qd1_p50_latency"], r["qd1_p99_latency"], by(r, "qd1_iops_per_cpu"), by(r, "qd32_iops_per_cpu")))
if floor:
    print("fio's null engine, QD32: %.0f IOPS per guest CPU-s; the smartio engine's / the null's: %s"
          " (target >= 0.8)" % (floor["null_engine_qd32"]["iops_per_guest_cpu_s"],
                                by(floor, "smartio_engine_over_null_qd32")))
    print("  by fio's own accounting of the job (the I/O phase alone): %.2f"
          % floor["smartio_engine_over_null_qd32_job_cpu"])
for k, r in waits.items():
    if "over_null_engine_job_cpu" in r:
        print("QD32 %-24s by fio's accounting of the job: %.2f of the null engine's" % (k, r["over_null_engine_job_cpu"]))
    o = "over_null_engine" if "over_null_engine" in r else "over_kernel" if "over_kernel" in r else None
    print("QD32 %-24s %8.0f IOPS %8.0f IOPS per guest CPU-s; %s" % (k, r["iops"], r["iops_per_guest_cpu_s"],
          "" if not o else "over %s %s (target >= %s)" % ("fio's null engine" if o == "over_null_engine" else
                                                         "the kernel", by(r, o), "0.8" if o == "over_null_engine" else "5.0")))
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
