#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cpu-sampler.py FILE [TID]: tools/cpu-sampler.c's stacks as self and
inclusive shares per function (addr2line), for the thread with the most
samples unless TID names one."""
import collections
import subprocess
import sys


def load(path):
    maps, samples = [], []
    for line in open(path, errors="replace"):
        f = line.split()
        if line.startswith("S "):
            samples.append((int(f[1]), [int(a, 16) for a in f[2:] if a != "(nil)"]))
        elif line.startswith("M ") and len(f) >= 7 and "x" in f[2]:
            lo, hi = (int(x, 16) for x in f[1].split("-"))
            maps.append((lo, hi, int(f[3], 16), f[6]))
    return maps, samples


def where(maps, a):
    for lo, hi, off, path in maps:
        if lo <= a < hi:
            return path, a - lo + off
    return None, a


def names_of(maps, stacks):
    offs = collections.defaultdict(set)
    for st in stacks:
        for a in st:
            p, o = where(maps, a - 1)
            if p:
                offs[p].add(o)
    names = {}
    for p, os_ in offs.items():
        os_ = sorted(os_)
        try:
            out = subprocess.run(["addr2line", "-f", "-C", "-e", p] + [hex(o) for o in os_],
                                 capture_output=True, text=True, timeout=300).stdout.split("\n")
        except (OSError, subprocess.SubprocessError):
            out = []
        for i, o in enumerate(os_):
            fn = out[2 * i] if 2 * i < len(out) and out[2 * i] != "??" else "?"
            names[(p, o)] = fn + "@" + p.split("/")[-1]
    return names


def main():
    maps, samples = load(sys.argv[1])
    if not samples:
        sys.exit("cpu-sampler.py: no samples in " + sys.argv[1])
    by_tid = collections.Counter(t for t, _ in samples)
    print("samples per thread:", dict(by_tid.most_common(8)))
    want = int(sys.argv[2]) if len(sys.argv) > 2 else by_tid.most_common(1)[0][0]
    stacks = [st for t, st in samples if t == want]
    names = names_of(maps, stacks)
    self_c, incl = collections.Counter(), collections.Counter()
    for st in stacks:
        fns = [names.get(where(maps, a - 1), "?") for a in st]
        # the frames above the signal trampoline are the sampler's own
        cut = [i for i, f in enumerate(fns) if "sigaction" in f or "restore_rt" in f]
        fns = fns[cut[0] + 1:] if cut else fns
        if fns:
            self_c[fns[0]] += 1
        for f in set(fns):
            incl[f] += 1
    print(f"thread {want}: {len(stacks)} samples")
    for title, c, k in (("self", self_c, 25), ("inclusive", incl, 40)):
        print(title + ":")
        for f, v in c.most_common(k):
            print(f"  {100.0 * v / len(stacks):5.1f}%  {f}")


if __name__ == "__main__":
    main()
