#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ntb-doorbells.sh's analysis: the guests' consoles to JSON, a table of
QD1 p50/p99 per doorbell path, the ratios, and a gnuplot script.

usage: ntb-doorbells.py WORK_DIR OUT_DIR RUNTIME ROUNDS

WORK_DIR holds run-ntb.sh's consoles (g0.log, g1.log, g2.log), with each
run's nvme-client JSON between "SIO-BENCH-BEGIN WHERE-PATH-rN" and
"SIO-BENCH-END" (WHERE: local, guest 0; remote, guest 1; PATH: window,
relayed).
"""
import json
import re
import statistics
import sys

from vmbench import io_figures, read_logs

LABEL = "TCG figures of an emulated translation"
PATHS = {"window": "through the lender's window onto BAR0 (ntb_hw_ivshmem bar_fwd=1: "
                   "emulated forwarding by a kernel thread of guest 0)",
         "relayed": "relayed by the lender's relay from a mirror (bar_fwd=0: the window refused)"}


def main():
    work, out, rt, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    _, runs, info = read_logs(work)
    per = {}
    for name, j in runs.items():
        m = re.match(r"^(local|remote)-(window|relayed)-r(\d+)$", name)
        if not m:
            continue
        ios, iops, p50, p99 = io_figures(j)
        per.setdefault((m.group(1), m.group(2)), []).append(
            {"round": int(m.group(3)), "ios": ios, "iops": iops, "p50_us": p50, "p99_us": p99,
             "doorbells": j.get("doorbells", {}).get("path", "")})
    missing = [f"{w}-{p}" for w in ("local", "remote") for p in PATHS if len(per.get((w, p), [])) != rounds]
    if missing:
        sys.exit(f"ntb-doorbells: runs missing from the consoles: {', '.join(missing)} (of {rounds} rounds)")
    # the remote client's own words for its path: a run under the wrong name would show here
    for p, words in (("window", "NTB window (emulated forwarding)"), ("relayed", "relayed")):
        bad = [r for r in per[("remote", p)] if not r["doorbells"].startswith(words)]
        if bad:
            sys.exit(f"ntb-doorbells: remote-{p} round {bad[0]['round']} says its doorbells go "
                     f"'{bad[0]['doorbells']}', not '{words}'")
    med = {f"{w}-{p}": {k: statistics.median(r[k] for r in rs) for k in ("iops", "p50_us", "p99_us")}
           for (w, p), rs in per.items()}
    ratios = {}
    for p in PATHS:
        r, lo = med[f"remote-{p}"], med[f"local-{p}"]
        ratios[f"remote/local {p}"] = {"p50": r["p50_us"] / lo["p50_us"], "p99": r["p99_us"] / lo["p99_us"]}
    rw, rr = med["remote-window"], med["remote-relayed"]
    ratios["remote relayed/window"] = {"p50": rr["p50_us"] / rw["p50_us"], "p99": rr["p99_us"] / rw["p99_us"]}
    doc = {"benchmark": "ntb-doorbells", "label": LABEL,
           "emulation": "QEMU TCG (no KVM), three guests on a shared host; the window's translation "
                        "onto BAR0 is emulated by ntb_hw_ivshmem (a kernel thread scans the window and "
                        "forwards each stored word), not NTB hardware's posted write",
           "runtime_s": rt, "rounds": rounds, "guest": info,
           "io": "nvme-client, QD1 4 KiB random reads over 32 MiB",
           "order": "each round lends twice, window then relayed in odd rounds, relayed then window in "
                    "even ones; local (guest 0) then remote (guest 1) in each lend",
           "paths": PATHS, "figures": "the median of the rounds",
           "results": med, "ratios": ratios,
           "per_round": {f"{w}-{p}": sorted(rs, key=lambda r: r["round"]) for (w, p), rs in per.items()}}
    json.dump(doc, open(f"{out}/ntb-doorbells.json", "w"), indent=1)

    print(f"\nQD1 4 KiB random reads of guest 0's QEMU NVMe, {rt} s a run, median of {rounds} rounds")
    print(f"({LABEL}: QEMU TCG, and ntb_hw_ivshmem emulates the window onto BAR0)")
    for i in info:
        print("  " + i)
    print("%-16s %9s %9s %9s" % ("run", "IOPS", "p50 us", "p99 us"))
    for k in ("local-window", "local-relayed", "remote-window", "remote-relayed"):
        print("%-16s %9.0f %9.1f %9.1f" % (k, med[k]["iops"], med[k]["p50_us"], med[k]["p99_us"]))
    print("ratios:")
    for k, v in ratios.items():
        print("  %-24s p50 %5.2f  p99 %5.2f" % (k, v["p50"], v["p99"]))
    with open(f"{out}/ntb-doorbells.dat", "w") as d:
        d.write("# run p50_us p99_us\n")
        for k in ("local-window", "local-relayed", "remote-window", "remote-relayed"):
            d.write('"%s" %.1f %.1f\n' % (k, med[k]["p50_us"], med[k]["p99_us"]))
    open(f"{out}/ntb-doorbells.gp", "w").write(GNUPLOT)


GNUPLOT = """set terminal pngcairo size 900,560 noenhanced
set output 'ntb-doorbells.png'
set title "QD1 4 KiB reads, local (guest 0) and remote (guest 1), doorbells through the window or relayed\\n(TCG figures of an emulated translation)"
set yrange [0:*]
set ylabel 'us'
plot 'ntb-doorbells.dat' using 2:xtic(1) title 'p50', '' using 3 title 'p99'
"""

if __name__ == "__main__":
    main()
