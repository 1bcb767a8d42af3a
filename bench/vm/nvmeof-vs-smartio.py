#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nvmeof-vs-smartio.sh's analysis: the guests' consoles to JSON, a table,
the ratios to the targets, and a gnuplot script.

usage: nvmeof-vs-smartio.py WORK_DIR OUT_DIR RUNTIME ROUNDS [WINDOW]

WORK_DIR holds run-ntb.sh's consoles (g0.log, g1.log, g2.log): each guest's
"SIO-BENCH-CPU NAME begin|end G busy irq+softirq kworker ksoftirqd lend
manager serve emul" lines (vmbench.py) and guest 1's JSON of each run between
"SIO-BENCH-BEGIN NAME" and "SIO-BENCH-END NAME". WINDOW 1: smartio's
doorbells went through the emulated window onto BAR0, not the relay.

The emulation's share (emul: ntb_hw_ivshmem's forwarding threads, the work
NTB hardware does itself) is shown apart and left out of the CPU the
targets compare; the figures with it stay in the JSON.
"""
import json
import re
import statistics
import sys

from vmbench import cpu_seconds, io_figures, read_logs

ROLES = {"0": "target/lender (guest 0)", "1": "initiator (guest 1)", "2": "bystander (guest 2)"}
DOORBELLS = {"relayed": "relayed: guest 0's lender forwards guest 1's doorbells (ntb_hw_ivshmem "
                        "gives no window onto the NVMe's BAR0)",
             "window": "through the window: guest 1 stores its doorbells through its outbound "
                       "window onto the NVMe's BAR0, which guest 0's ntb_hw_ivshmem forwards "
                       "(bar_fwd=1: an emulated hardware feature, done by guest 0's kernel)"}


def run_figures(name, j, cpu):
    ios, iops, p50, p99 = io_figures(j)
    guests = {}
    for g, se in sorted(cpu.get(name, {}).items()):
        if "begin" not in se or "end" not in se:
            continue
        d = cpu_seconds(se["begin"], se["end"])
        guests[g] = {"cpu_s": d["busy"] - d["emul"], "cpu_us_per_io": (d["busy"] - d["emul"]) / ios * 1e6,
                     "cpu_us_per_io_with_emulation": d["busy"] / ios * 1e6,
                     "emulation_us_per_io": d["emul"] / ios * 1e6,
                     # the kernel's share: TCP/RDMA and nvmet for NVMe-oF; for
                     # smartio, ntb_hw_ivshmem's doorbell emulation (an upper bound)
                     "kernel_work_us_per_io": (d["irq_softirq"] + d["kworker"] + d["ksoftirqd"]) / ios * 1e6,
                     "lender_processes_us_per_io": (d["lend"] + d["manager"] + d["serve"]) / ios * 1e6,
                     "relay_us_per_io": d["lend"] / ios * 1e6,
                     "cpu_s_by_field": d}
    total = sum(v["cpu_s"] for v in guests.values())
    return {"ios": ios, "iops": iops, "p50_us": p50, "p99_us": p99, "guests": guests,
            "cpu_us_per_io_all_guests": total / ios * 1e6 if ios else 0}


def median_of(rs):
    """the median of the rounds, figure by figure"""
    out = {k: statistics.median(r[k] for r in rs) for k in ("ios", "iops", "p50_us", "p99_us",
                                                           "cpu_us_per_io_all_guests")}
    out["guests"] = {}
    for g in rs[0]["guests"]:
        out["guests"][g] = {k: statistics.median(r["guests"][g][k] for r in rs if g in r["guests"])
                            for k in ("cpu_us_per_io", "cpu_us_per_io_with_emulation",
                                      "emulation_us_per_io", "kernel_work_us_per_io",
                                      "lender_processes_us_per_io", "relay_us_per_io")}
    out["rounds"] = len(rs)
    return out


def main():
    work, out, rt, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    db = "window" if len(sys.argv) > 5 and sys.argv[5] == "1" else "relayed"
    cpu, runs, info = read_logs(work)
    per_round, paths = {}, []
    for name, j in runs.items():
        m = re.match(r"^(.*)-r(\d+)-(qd\d+)$", name)
        if not m:
            continue
        path, qd = m.group(1), m.group(3)
        if path not in paths:
            paths.append(path)
        per_round.setdefault((path, qd), []).append(run_figures(name, j, cpu))
    res = {qd: {p: median_of(per_round[(p, qd)]) for p in paths if (p, qd) in per_round}
           for qd in ("qd1", "qd32")}
    ratios, targets = {}, []
    tcp = res["qd1"].get("nvme-tcp")
    for s in ("smartio-client", "smartio-fio"):
        sm = res["qd1"].get(s)
        if not (tcp and sm):
            continue
        r = {"qd1_p50": sm["p50_us"] / tcp["p50_us"],
             "cpu_per_io_all_guests_qd1": sm["cpu_us_per_io_all_guests"] / tcp["cpu_us_per_io_all_guests"],
             f"lender_cpu_per_io_qd1_{db}": sm["guests"]["0"]["cpu_us_per_io"] / tcp["guests"]["0"]["cpu_us_per_io"]}
        if "nvme-tcp" in res["qd32"] and s in res["qd32"]:
            a, b = res["qd32"][s], res["qd32"]["nvme-tcp"]
            r["cpu_per_io_all_guests_qd32"] = a["cpu_us_per_io_all_guests"] / b["cpu_us_per_io_all_guests"]
            r[f"lender_cpu_per_io_qd32_{db}"] = a["guests"]["0"]["cpu_us_per_io"] / b["guests"]["0"]["cpu_us_per_io"]
        ratios[s] = r
        targets += [(s, "remote QD1 p50 <= 0.5x NVMe/TCP's", r["qd1_p50"], 0.5),
                    (s, "CPU per I/O, all guests, QD1 <= 0.33x", r["cpu_per_io_all_guests_qd1"], 0.33),
                    (s, f"lender CPU per I/O, QD1 <= 0.1x target's (doorbells {db})",
                     r[f"lender_cpu_per_io_qd1_{db}"], 0.1)]
    doc = {"benchmark": "nvmeof-vs-smartio",
           "emulation": "QEMU TCG (no KVM), three guests on a shared host: emulation speed; "
                        "read the ratios, taken in one run",
           "runtime_s": rt, "rounds": rounds, "guest": info, "io": "4 KiB random reads over 32 MiB",
           "figures": "the median of the rounds; CPU from each guest's /proc/stat (busy = user, nice, "
                      "system, irq, softirq, steal) and irq + softirq in USER_HZ ticks over the run; "
                      "kworker, ksoftirqd, the lender's processes and the emulation's threads from "
                      "their threads' schedstat (ns); cpu_us_per_io is busy less the emulation's "
                      "share (ntb_hw_ivshmem's ivntb_fwd threads: the stores NTB hardware forwards "
                      "onto the BAR itself), cpu_us_per_io_with_emulation all of it",
           "roles": ROLES,
           "doorbells": DOORBELLS[db],
           "kernel_work": "irq + softirq + kworker + ksoftirqd: for NVMe-oF the TCP/RDMA stack and "
                          "nvmet; for smartio ntb_hw_ivshmem's doorbell emulation, an upper bound "
                          "(on NTB hardware the adapter does it)",
           "results": res, "per_round": {f"{p}-{q}": v for (p, q), v in per_round.items()},
           "ratios_smartio_over_nvme_tcp": ratios,
           "targets": [{"path": s, "target": t, "ratio": v, "limit": lim, "met": v <= lim}
                       for s, t, v, lim in targets]}
    json.dump(doc, open(f"{out}/nvmeof-vs-smartio.json", "w"), indent=1)

    print("\nguest 1 reads guest 0's QEMU NVMe, 4 KiB random, %d s a run, median of %d rounds "
          "(QEMU TCG: emulation speed, read the ratios)" % (rt, rounds))
    for i in info:
        print("  " + i)
    hdr = "%-16s %4s %9s %9s %9s %11s %11s %11s %11s %11s %11s %11s"
    print(hdr % ("path", "qd", "IOPS", "p50 us", "p99 us", "cpu us/io", "g0 us/io", "g0 kern",
                 "g0 relay", "g0 emul", "g1 us/io", "g2 (idle)"))
    for qd in ("qd1", "qd32"):
        for p, r in res[qd].items():
            g0, g1, g2 = (r["guests"].get(g, {}) for g in "012")
            print("%-16s %4s %9.0f %9.1f %9.1f %11.1f %11.1f %11.1f %11.1f %11.1f %11.1f %11.1f" % (
                p, qd, r["iops"], r["p50_us"], r["p99_us"], r["cpu_us_per_io_all_guests"],
                g0.get("cpu_us_per_io", 0), g0.get("kernel_work_us_per_io", 0),
                g0.get("relay_us_per_io", 0), g0.get("emulation_us_per_io", 0),
                g1.get("cpu_us_per_io", 0), g2.get("cpu_us_per_io", 0)))
    print("(us of guest CPU per I/O; g0 emul: ntb_hw_ivshmem forwarding guest 1's stores onto "
          "the NVMe's BAR0, what NTB hardware does itself: left out of the other columns and the "
          "targets; g2 does nothing: its figure is an idle TCG guest's floor, timer ticks and the "
          "suite's own waits, spread over the run's I/Os)")
    print("\ntargets (smartio / NVMe/TCP, this run):")
    for s, t, v, lim in targets:
        print("  %-15s %-62s %6.2f  %s" % (s, t, v, "met" if v <= lim else "MISSED"))

    with open(f"{out}/nvmeof-vs-smartio.dat", "w") as d:
        d.write("# path qd1_p50_us qd1_p99_us qd1_iops qd32_iops "
                "qd1_g0_us_per_io qd1_g1_us_per_io qd1_g2_us_per_io qd32_g0 qd32_g1 qd32_g2 "
                "qd1_g0_emulation qd32_g0_emulation\n")
        for p in paths:
            a, b = res["qd1"].get(p), res["qd32"].get(p)
            if not (a and b):
                continue
            cpu1 = [a["guests"].get(g, {}).get("cpu_us_per_io", 0) for g in "012"]
            cpu32 = [b["guests"].get(g, {}).get("cpu_us_per_io", 0) for g in "012"]
            emul = [r["guests"].get("0", {}).get("emulation_us_per_io", 0) for r in (a, b)]
            d.write('"%s" %.1f %.1f %.0f %.0f %s %s %.1f %.1f\n' % (
                p, a["p50_us"], a["p99_us"], a["iops"], b["iops"], " ".join("%.1f" % c for c in cpu1),
                " ".join("%.1f" % c for c in cpu32), emul[0], emul[1]))
    open(f"{out}/nvmeof-vs-smartio.gp", "w").write(
        GNUPLOT.replace("@DOORBELLS@", "relayed" if db == "relayed" else "through the emulated window"))


GNUPLOT = """set terminal pngcairo size 1500,1000 noenhanced
set output 'nvmeof-vs-smartio.png'
set multiplot layout 2,2 title 'guest 1 reads the QEMU NVMe of guest 0: NVMe-oF vs smartio over the ntb fabric, 4 KiB random reads (QEMU TCG: emulation speed, read the ratios; smartio doorbells @DOORBELLS@)'
set yrange [0:*]
set title 'QD1 latency'
set ylabel 'us'
plot 'nvmeof-vs-smartio.dat' using 2:xtic(1) title 'p50', '' using 3 title 'p99'
set title 'IOPS'
set ylabel 'IOPS'
plot 'nvmeof-vs-smartio.dat' using 4:xtic(1) title 'QD1', '' using 5 title 'QD32'
set key top right
set title 'CPU per I/O per guest, QD1 (/proc/stat)'
set ylabel 'CPU us per I/O'
plot 'nvmeof-vs-smartio.dat' using 6:xtic(1) title 'guest 0 (target/lender)', '' using 7 title 'guest 1 (initiator)', '' using 8 title 'guest 2 (bystander)', '' using 12 title 'guest 0: NTB emulation (hardware on an NTB)'
set title 'CPU per I/O per guest, QD32 (/proc/stat)'
plot 'nvmeof-vs-smartio.dat' using 9:xtic(1) title 'guest 0 (target/lender)', '' using 10 title 'guest 1 (initiator)', '' using 11 title 'guest 2 (bystander)', '' using 13 title 'guest 0: NTB emulation (hardware on an NTB)'
unset multiplot
"""

if __name__ == "__main__":
    main()
