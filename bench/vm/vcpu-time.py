#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The host's CPU time of a TCG guest's vCPUs, at marks the guest prints.

usage: vcpu-time.py CONSOLE OUT

Follows CONSOLE (a guest's serial console, written by QEMU as the guest
runs) until the QEMU that writes it exits. At each line
"SIO-BENCH-MARK NAME begin" or "SIO-BENCH-MARK NAME end" it appends
"NAME begin|end VCPU_NS QEMU_NS WALL_NS" to OUT: the CPU time (ns) the host
gave the QEMU threads that run the guest's CPUs ("CPU N/TCG", which QEMU
names with -name debug-threads=on), the whole QEMU's, and the host's
monotonic clock. A vCPU thread runs while its CPU runs guest code and sleeps
while the guest idles (HLT), so its time is what the guest's CPUs took of
the host, tick or no tick; under TCG it includes the translation and the
device emulation done in that thread (MMIO exits). The QEMU is the one whose
command line names CONSOLE's directory.
"""
import os
import sys
import time


def find_qemu(tag, deadline):
    """The pid of the QEMU whose command line holds @tag, waiting for it."""
    while time.monotonic() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and b"qemu-system" in argv[0] and any(tag.encode() in a for a in argv):
                return int(pid)
        time.sleep(0.2)
    return None


def cpu_ns(pid):
    """(vCPU threads' ns, all threads' ns) of @pid, from each thread's
    schedstat (time on a CPU, ns); None once it is gone."""
    vcpu = total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                ns = int(f.read().split()[0])
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                comm = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue        # a thread that ended between the list and the read
        total += ns
        if comm.startswith("CPU ") and comm.endswith("/TCG"):
            vcpu += ns
    return vcpu, total


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    console, out = sys.argv[1], sys.argv[2]
    pid = find_qemu(os.path.dirname(os.path.abspath(console)), time.monotonic() + 120)
    if pid is None:
        sys.exit("vcpu-time: no QEMU names %s" % os.path.dirname(console))
    pos, part = 0, b""
    with open(out, "w") as o:
        while True:
            alive = os.path.exists("/proc/%d" % pid)
            try:
                with open(console, "rb") as f:
                    f.seek(pos)
                    data = f.read()
            except OSError:
                data = b""
            pos += len(data)
            lines = (part + data).split(b"\n")
            part = lines.pop()
            for line in lines:
                w = line.decode(errors="replace").strip().split()
                if len(w) == 3 and w[0] == "SIO-BENCH-MARK" and w[2] in ("begin", "end"):
                    c = cpu_ns(pid)
                    if c:
                        o.write("%s %s %d %d %d\n" % (w[1], w[2], c[0], c[1], time.monotonic_ns()))
                        o.flush()
            if not alive:
                return
            time.sleep(0.02)


if __name__ == "__main__":
    main()
