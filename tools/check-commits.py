#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that commit messages follow CONTRIBUTING.md.

    tools/check-commits.py [RANGE]
    tools/check-commits.py --message FILE    (as a commit-msg hook)

RANGE defaults to BASE..HEAD, BASE being the commit named in
.ci/commit-style-base: the last one written before the convention, so the
history before it is left as it is. Merge commits are not checked.

Each message must have:
  - a subject "part: summary" of at most 72 characters, where "part" names
    the subsystem (a folder, program or module: "winfab", "ntb_hw_ivshmem",
    "vm suite ntb") and the summary starts with an imperative verb, not a
    past tense or a gerund ("add", not "added" or "adding"), and does not
    end with a period;
  - a blank second line and a body that says why;
  - body lines of at most 72 columns, except lines that cannot be broken:
    indented ones (commands, quoted output, tables) and lines of one word
    (an address).

Exit 0 when every commit passes, 1 otherwise, with each problem on a line
of its own: "COMMIT: what is wrong".
"""
import os
import re
import subprocess
import sys

MAX = 72
SUBJECT = re.compile(r"^(?P<part>[A-Za-z0-9_.,/+ -]{1,40}): (?P<summary>\S.*)$")
# Verbs whose -ed or -ing form would pass a naive test, and words that end
# so without being a tense.
NOT_TENSES = {"embed", "feed", "need", "seed", "speed", "shed", "bring",
              "string", "ring", "bed", "red"}


def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True,
                          text=True).stdout


def problems(msg):
    lines = msg.rstrip("\n").split("\n")
    subject = lines[0]
    out = []
    if len(subject) > MAX:
        out.append(f"subject is {len(subject)} characters, at most {MAX}")
    m = SUBJECT.match(subject)
    if not m:
        out.append("subject is not 'part: imperative summary'")
    else:
        word = re.split(r"[\s,:;()]", m.group("summary"), 1)[0].lower()
        if word not in NOT_TENSES and re.search(r"(ed|ing)$", word):
            out.append(f"summary starts with '{word}': write the imperative")
        if subject.endswith("."):
            out.append("subject ends with a period")
    if len(lines) < 3 or not any(l.strip() for l in lines[2:]):
        out.append("no body: say why, after a blank line")
    elif lines[1].strip():
        out.append("second line is not blank")
    for n, line in enumerate(lines[2:], start=3):
        if len(line) <= MAX or line.startswith((" ", "\t")):
            continue
        if len(line.split()) <= 1:
            continue
        out.append(f"body line {n} is {len(line)} columns, at most {MAX}")
    return out


def check_file(path):
    with open(path) as f:
        # git's commit-msg hook sees the comment lines too.
        msg = "".join(l for l in f if not l.startswith("#"))
    out = problems(msg)
    for p in out:
        print(f"{path}: {p}")
    return 1 if out else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--message":
        return check_file(sys.argv[2])
    root = git("rev-parse", "--show-toplevel").strip()
    if len(sys.argv) > 1:
        rng = sys.argv[1]
    else:
        with open(os.path.join(root, ".ci", "commit-style-base")) as f:
            base = f.read().split()[0]
        if subprocess.run(["git", "cat-file", "-e", base + "^{commit}"],
                          capture_output=True).returncode != 0:
            # A shallow clone without the base: check what it has.
            print(f"check-commits: {base} is not in this clone; "
                  "checking HEAD only")
            rng = "HEAD~1..HEAD" if subprocess.run(
                ["git", "rev-parse", "-q", "--verify", "HEAD~1"],
                capture_output=True).returncode == 0 else "HEAD"
        else:
            rng = base + "..HEAD"
    revs = git("rev-list", "--no-merges", rng).split()
    bad = 0
    for rev in revs:
        for p in problems(git("log", "-1", "--format=%B", rev)):
            print(f"{rev[:12]}: {p}")
            bad = 1
    print(f"check-commits: {len(revs)} commits in {rng}, "
          f"{'some do not follow CONTRIBUTING.md' if bad else 'all follow CONTRIBUTING.md'}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
