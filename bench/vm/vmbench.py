#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the vm benchmarks' analyses (bench/vm/*.py) share: the guests'
consoles read into their CPU samples, their runs' JSON and their notes.

A guest prints "SIO-BENCH-CPU NAME begin|end G busy irq+softirq kworker
ksoftirqd lend manager serve [emul [threads all up]]" lines (the first two
in USER_HZ ticks, the groups of threads in ns of run time; emul, the NTB
stand-in's threads that do what NTB hardware does; threads, every thread
alive at the sample together; all, every tick of /proc/stat's cpu line,
idle too; up, /proc/uptime in hundredths of a second; 0 where absent), a
run's JSON between
"SIO-BENCH-BEGIN NAME" and "SIO-BENCH-END NAME", and "SIO-BENCH-INFO ..."
notes.
"""
import json
import re

HZ = 100        # USER_HZ of /proc/stat
CPU_FIELDS = ("busy", "irq_softirq", "kworker", "ksoftirqd", "lend", "manager", "serve", "emul",
              "threads", "all", "up")
TICK_FIELDS = ("busy", "irq_softirq", "all", "up")    # the others: ns, from the threads' schedstat


def cpu_seconds(begin, end):
    """the CPU seconds of each field between two samples"""
    return {k: (end[k] - begin[k]) / (HZ if k in TICK_FIELDS else 1e9) for k in CPU_FIELDS}


def read_logs(work):
    cpu, runs, info = {}, {}, []
    for g in ("g0", "g1", "g2"):
        cur, buf = None, []
        for line in open(f"{work}/{g}.log", errors="replace"):
            line = line.rstrip("\r\n")
            if re.match(r"^\[ *[0-9]+\.[0-9]+\]", line):
                continue
            if line.startswith("SIO-BENCH-INFO "):
                info.append(line[15:])
            m = re.match(r"^SIO-BENCH-CPU (\S+) (begin|end) (\d) ((?:\d+ ?){7,11})$", line)
            if m:
                vals = dict.fromkeys(CPU_FIELDS, 0)
                vals.update(zip(CPU_FIELDS, map(int, m.group(4).split())))
                cpu.setdefault(m.group(1), {}).setdefault(m.group(3), {})[m.group(2)] = vals
                continue
            m = re.match(r"^SIO-BENCH-BEGIN (\S+)", line)
            if m:
                cur, buf = m.group(1), []
                continue
            if cur and line.startswith("SIO-BENCH-END"):
                runs[cur] = json.loads("\n".join(buf))
                cur = None
            elif cur:
                buf.append(line)
    return cpu, runs, info


def io_figures(j):
    """ios, IOPS, p50 and p99 in us, from fio's or nvme-client's JSON"""
    if "jobs" in j:
        r = j["jobs"][0]["read"]
        pct = r["lat_ns"]["percentile"]
        return r["total_ios"], r["iops"], pct["50.000000"] / 1e3, pct["99.000000"] / 1e3
    r = j["read"]
    return r["ios"], r["iops"], r["lat_us"]["p50"], r["lat_us"]["p99"]
