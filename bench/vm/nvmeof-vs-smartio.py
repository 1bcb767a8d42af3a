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


def guest_cpu(g, d):
    """guest g's CPU seconds in a sample d, the emulation's left out. Guest 0
    (the target or lender) from its threads' run time: its work comes in
    bursts (nvmet's kworkers, the lender's rounds, the emulation's scans)
    shorter than a tick between idle periods, which /proc/stat's ticks
    miss (a smartio run's ticks came to 7 to 9 s of a 10 s run). That
    leaves out interrupt work done while the guest was idle (charged to the
    idle task, no thread), which makes NVMe-oF's target figure the lower and
    the ratios against it the higher. Guests 1 and 2 from /proc/stat: guest
    1's command has exited by the end sample, and its threads with it.
    Return: the seconds, and where they came from ("threads" or "ticks")."""
    if g == "0" and d["threads"] > 0:
        return d["threads"] - d["emul"], "threads"
    return d["busy"] - d["emul"], "ticks"


def idle_floor(cpu, name, g):
    """guest g's CPU seconds per second in the idle run before run NAME (the
    same state: connected, or lent), or None where there was none"""
    m = re.match(r"^(.*)-r(\d+)-qd\d+$", name)
    idle = "idle-%s-r%s" % ("smartio" if m.group(1).startswith("smartio") else m.group(1), m.group(2))
    se = cpu.get(idle, {}).get(g, {})
    if "begin" not in se or "end" not in se:
        return None
    d = cpu_seconds(se["begin"], se["end"])
    return guest_cpu(g, d)[0] / d["up"] if d["up"] > 0 else None


def run_figures(name, j, cpu):
    ios, iops, p50, p99 = io_figures(j)
    guests = {}
    for g, se in sorted(cpu.get(name, {}).items()):
        if "begin" not in se or "end" not in se:
            continue
        d = cpu_seconds(se["begin"], se["end"])
        c, source = guest_cpu(g, d)
        floor = idle_floor(cpu, name, g)
        # above the floor: what the I/O added to the guest's CPU (may come
        # out below 0 where the host's load moved between the two runs)
        above = c - floor * d["up"] if floor is not None and d["up"] > 0 else None
        guests[g] = {"cpu_s": c, "cpu_us_per_io": c / ios * 1e6,
                     "cpu_from": source,
                     "idle_floor_cpu_s_per_s": floor,
                     "cpu_us_per_io_above_idle": above / ios * 1e6 if above is not None else None,
                     "cpu_us_per_io_with_emulation": (c + d["emul"]) / ios * 1e6,
                     "emulation_us_per_io": d["emul"] / ios * 1e6,
                     # the kernel's share: TCP/RDMA and nvmet for NVMe-oF; for
                     # smartio, ntb_hw_ivshmem's doorbell emulation (an upper bound)
                     "kernel_work_us_per_io": (d["irq_softirq"] + d["kworker"] + d["ksoftirqd"]) / ios * 1e6,
                     "lender_processes_us_per_io": (d["lend"] + d["manager"] + d["serve"]) / ios * 1e6,
                     "relay_us_per_io": d["lend"] / ios * 1e6,
                     "cpu_s_by_field": d}
    total = sum(v["cpu_s"] for v in guests.values())
    above = [v["cpu_us_per_io_above_idle"] for v in guests.values()]
    return {"ios": ios, "iops": iops, "p50_us": p50, "p99_us": p99, "guests": guests,
            "cpu_us_per_io_all_guests": total / ios * 1e6 if ios else 0,
            "cpu_us_per_io_all_guests_above_idle": sum(above) if None not in above else None}


def med(vals):
    """the median of the rounds' figures, None where a round has none"""
    return None if None in vals or not vals else statistics.median(vals)


def fmt(v):
    return "-" if v is None else "%.1f" % v


def median_of(rs):
    """the median of the rounds, figure by figure"""
    out = {k: med([r[k] for r in rs]) for k in ("ios", "iops", "p50_us", "p99_us",
                                               "cpu_us_per_io_all_guests",
                                               "cpu_us_per_io_all_guests_above_idle")}
    out["guests"] = {}
    for g in rs[0]["guests"]:
        out["guests"][g] = {k: med([r["guests"][g][k] for r in rs if g in r["guests"]])
                            for k in ("cpu_us_per_io", "cpu_us_per_io_above_idle",
                                      "cpu_us_per_io_with_emulation",
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
        targets += [(s, "remote QD1 p50 <= 0.5x NVMe/TCP's", r["qd1_p50"], 0.5),
                    (s, "CPU per I/O, all guests, QD1 <= 0.33x", r["cpu_per_io_all_guests_qd1"], 0.33),
                    (s, f"lender CPU per I/O, QD1 <= 0.1x target's (doorbells {db})",
                     r[f"lender_cpu_per_io_qd1_{db}"], 0.1)]
        # the same two above each guest's idle floor, where the run had one
        a, b = sm["cpu_us_per_io_all_guests_above_idle"], tcp["cpu_us_per_io_all_guests_above_idle"]
        c, d = sm["guests"]["0"]["cpu_us_per_io_above_idle"], tcp["guests"]["0"]["cpu_us_per_io_above_idle"]
        if None not in (a, b, c, d) and b > 0 and d > 0:
            r["cpu_per_io_all_guests_qd1_above_idle"] = a / b
            r[f"lender_cpu_per_io_qd1_{db}_above_idle"] = c / d
            targets += [(s, "the same, above each guest's idle floor", a / b, 0.33),
                        (s, "the same, above guest 0's idle floor", c / d, 0.1)]
        ratios[s] = r
    doc = {"benchmark": "nvmeof-vs-smartio",
           "emulation": "QEMU TCG (no KVM), three guests on a shared host: emulation speed; "
                        "read the ratios, taken in one run",
           "runtime_s": rt, "rounds": rounds, "guest": info, "io": "4 KiB random reads over 32 MiB",
           "figures": "the median of the rounds; every guest's samples span guest 1's run; CPU of "
                      "guests 1 and 2 from /proc/stat (busy = user, nice, system, irq, softirq, "
                      "steal, USER_HZ ticks), of guest 0 from all its threads' schedstat run time "
                      "(its bursts are shorter than a tick, which ticks miss; interrupt work while "
                      "idle is not in it); kworker, ksoftirqd, the lender's processes and the "
                      "emulation's threads from their threads' schedstat (ns); cpu_us_per_io "
                      "leaves out the emulation's share (ntb_hw_ivshmem's ivntb_fwd threads: the "
                      "stores NTB hardware forwards onto the BAR itself), "
                      "cpu_us_per_io_with_emulation has it",
           "roles": ROLES,
           "doorbells": DOORBELLS[db],
           "kernel_work": "irq + softirq + kworker + ksoftirqd: for NVMe-oF the TCP/RDMA stack and "
                          "nvmet; for smartio ntb_hw_ivshmem's doorbell emulation, an upper bound "
                          "(on NTB hardware the adapter does it)",
           "idle_floor": "cpu_us_per_io_above_idle: each guest's CPU less its CPU per second in "
                         "an idle run of the same length just before (connected over NVMe-oF, or "
                         "lent over the ntb fabric, no I/O) times the run's time (uptime): what "
                         "the I/O added",
           "results": res, "per_round": {f"{p}-{q}": v for (p, q), v in per_round.items()},
           "ratios_smartio_over_nvme_tcp": ratios,
           "targets": [{"path": s, "target": t, "ratio": v, "limit": lim, "met": v <= lim}
                       for s, t, v, lim in targets]}
    json.dump(doc, open(f"{out}/nvmeof-vs-smartio.json", "w"), indent=1)

    print("\nguest 1 reads guest 0's QEMU NVMe, 4 KiB random, %d s a run, median of %d rounds "
          "(QEMU TCG: emulation speed, read the ratios)" % (rt, rounds))
    for i in info:
        print("  " + i)
    hdr = "%-16s %4s %9s %9s %9s %11s %11s %11s %11s %11s %11s %11s %11s %11s"
    print(hdr % ("path", "qd", "IOPS", "p50 us", "p99 us", "cpu us/io", "g0 us/io", "g0 kern",
                 "g0 relay", "g0 emul", "g1 us/io", "g2 (idle)", "all >floor", "g0 >floor"))
    for qd in ("qd1", "qd32"):
        for p, r in res[qd].items():
            g0, g1, g2 = (r["guests"].get(g, {}) for g in "012")
            print("%-16s %4s %9.0f %9.1f %9.1f %11.1f %11.1f %11.1f %11.1f %11.1f %11.1f %11.1f %11s %11s" % (
                p, qd, r["iops"], r["p50_us"], r["p99_us"], r["cpu_us_per_io_all_guests"],
                g0.get("cpu_us_per_io", 0), g0.get("kernel_work_us_per_io", 0),
                g0.get("relay_us_per_io", 0), g0.get("emulation_us_per_io", 0),
                g1.get("cpu_us_per_io", 0), g2.get("cpu_us_per_io", 0),
                fmt(r["cpu_us_per_io_all_guests_above_idle"]), fmt(g0.get("cpu_us_per_io_above_idle"))))
    print("(us of guest CPU per I/O; g0 emul: ntb_hw_ivshmem forwarding guest 1's stores onto "
          "the NVMe's BAR0, what NTB hardware does itself: left out of the other columns and the "
          "targets; g2 does nothing: its figure is an idle TCG guest's floor, timer ticks and the "
          "suite's own waits, spread over the run's I/Os; guest 0's CPU from its threads' run "
          "time, the others' from /proc/stat; >floor: above each guest's CPU per second in an idle "
          "run just before, in the same state, connected or lent)")
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
