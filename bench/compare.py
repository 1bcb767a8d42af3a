#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run the NVMe benchmarks of two builds side by side, in one sitting.

    bench/compare.py OLD_BUILD NEW_BUILD [--runs N] [--bench overhead,remote-local]
                     [-o DIR] [-- ARGS FOR BOTH]

The runs alternate (old, new, new, old, old, new, ...: each build goes first
as often as the other), so that load from elsewhere falls on both alike. Each
run is one invocation of BUILD/bench/nvme/nvme-bench-NAME with the same
arguments (a build whose benchmark takes --repeat is given --repeat 1: the
repetition is done here, across the builds). Printed: for each figure, the
median over the runs and its range, per build, and new/old; the load average
seen before each run; the exact commands. Written: DIR/compare.json, and each
run's own output under DIR/NAME-old-K and DIR/NAME-new-K.

A build is a meson build directory of this tree at any commit (one made with
-Dbuildtype=debugoptimized, as the benchmarks' figures in docs/benchmarks.md
are). Nothing here is a test: timings are reported, never judged.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BENCHES = ("overhead", "remote-local")


def figures(name, doc):
    """The figures one run's JSON gives: {label: value}."""
    out = {}
    if name == "overhead":
        out["submit p50 ns"] = doc["submit"]["p50_ns"]
        out["complete p50 ns"] = doc["complete"]["p50_ns"]
        out["submit + complete p50 ns"] = doc["submit"]["p50_ns"] + doc["complete"]["p50_ns"]
        return out
    for p in doc["passes"]:
        if "pass" not in p:
            continue  # a summary entry
        out[p["pass"] + ": p50 ns, client on the lender"] = p["local"]["p50_ns"]
        out[p["pass"] + ": p50 ns, client on the other node"] = p["remote"]["p50_ns"]
        out[p["pass"] + ": p50 remote/local"] = p["p50_ratio"]
    return out


def takes_repeat(exe):
    h = subprocess.run([exe, "--help"], capture_output=True, text=True)
    return "--repeat" in h.stdout


def one_run(exe, name, args, outdir, log):
    cmd = [exe] + args + (["--repeat", "1"] if takes_repeat(exe) else []) + ["-o", outdir]
    load = os.getloadavg()[0]
    t0 = time.time()
    with open(outdir + ".log", "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode:
        sys.exit(f"compare: {' '.join(cmd)} failed ({r.returncode}); see {outdir}.log")
    with open(os.path.join(outdir, name + ".json")) as f:
        doc = json.load(f)
    log.append({"command": " ".join(cmd), "load_average_before": load,
                "seconds": round(time.time() - t0, 1)})
    return figures(name, doc)


def spread(v):
    return statistics.median(v), min(v), max(v)


def fmt(x):
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="build directory of the reference (e.g. the parent commit)")
    ap.add_argument("new", help="build directory of the change")
    ap.add_argument("--runs", type=int, default=6, help="runs per build (default 6)")
    ap.add_argument("--bench", default=",".join(BENCHES),
                    help="benchmarks, comma separated (default: %(default)s)")
    ap.add_argument("-o", "--out", default="bench-out/compare", help="output directory")
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:  # what follows goes to both builds' benchmark
        rest = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    o = ap.parse_args(argv)
    o.args = rest
    names = [b for b in o.bench.split(",") if b]
    for b in names:
        if b not in BENCHES:
            sys.exit(f"compare: --bench: '{b}' is not one of {', '.join(BENCHES)}")
    if o.runs < 1 or o.runs > 100:
        sys.exit("compare: --runs 1..100")
    exes = {}
    for side in ("old", "new"):
        for b in names:
            exe = os.path.join(os.path.abspath(getattr(o, side)), "bench", "nvme", "nvme-bench-" + b)
            if not os.access(exe, os.X_OK):
                sys.exit(f"compare: {exe} is missing: build it (ninja -C {getattr(o, side)})")
            exes[side, b] = exe
    os.makedirs(o.out, exist_ok=True)
    result = {"old": os.path.abspath(o.old), "new": os.path.abspath(o.new), "runs": o.runs,
              "args": o.args, "cpus": os.cpu_count(), "benchmarks": {}}
    for b in names:
        got = {"old": {}, "new": {}}
        log = []
        for k in range(o.runs):
            order = ("old", "new") if k % 4 in (0, 3) else ("new", "old")
            for side in order:
                print(f"  {b}: run {k + 1}/{o.runs}, {side} (load {os.getloadavg()[0]:.2f})",
                      file=sys.stderr)
                f = one_run(exes[side, b], b, o.args, os.path.join(o.out, f"{b}-{side}-{k + 1}"), log)
                for label, v in f.items():
                    got[side].setdefault(label, []).append(v)
        loads = [r["load_average_before"] for r in log]
        print(f"\n{b}: {o.runs} runs per build, alternating; load average before the runs "
              f"{min(loads):.2f}..{max(loads):.2f} (median {statistics.median(loads):.2f})")
        print(f"  {'figure':52} {'old: median [min..max]':>26} {'new: median [min..max]':>26} {'new/old':>8}")
        rows = []
        for label in got["old"]:
            if label not in got["new"]:
                continue
            so, sn = spread(got["old"][label]), spread(got["new"][label])
            rel = sn[0] / so[0] if so[0] else float("nan")
            cell = [f"{fmt(m)} [{fmt(lo)}..{fmt(hi)}]" for m, lo, hi in (so, sn)]
            print(f"  {label:52} {cell[0]:>26} {cell[1]:>26} {rel:8.3f}")
            rows.append({"figure": label, "old": got["old"][label], "new": got["new"][label],
                         "old_median": so[0], "new_median": sn[0], "new_over_old": rel})
        print("  commands:")
        for c in sorted({r["command"].rsplit(" -o ", 1)[0] for r in log}):
            print("    " + c)
        result["benchmarks"][b] = {"figures": rows, "runs": log}
    with open(os.path.join(o.out, "compare.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwrote {os.path.join(o.out, 'compare.json')}")


if __name__ == "__main__":
    main()
