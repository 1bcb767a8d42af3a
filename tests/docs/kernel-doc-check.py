#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every function that a public header declares has a kernel-doc comment.

Reads include/smartio/**/*.h and *.cuh as kernel-doc reads them: a
function's comment opens with "/**", names it on its first line
("name() - what it does") and ends right above the declaration (blank
lines between are allowed). Top-level declarations and inline definitions
are found by their shape (kernel style: they start in column 0); bodies,
comments, macros and typedefs are skipped, and so are names with a double
underscore (sio__x, sio_nvme__x: private helpers of an inline function, by
the project's convention). Each function without such a comment is named
with its file and line, and the test fails.

And every public header is in the rendered API reference: named by a
".. kernel-doc::" line of docs/api/*.rst.

Usage: kernel-doc-check.py SOURCE_DIR
"""
import pathlib
import re
import sys

NAME = re.compile(r'^\s*/?\*+\s*([A-Za-z_]\w*)\s*(?:\(\))?\s*-')
CALL = re.compile(r'([A-Za-z_]\w*)\s*\(')


def doc_name(comment):
    """The name a /** comment documents, or None."""
    for line in comment:
        text = line.strip()
        if text in ('/**', '*', ''):
            continue
        m = NAME.match(text if text.startswith(('/', '*')) else '* ' + text)
        return m.group(1) if m else None
    return None


def functions(path):
    """(line, name, documented) for each function the header declares."""
    lines = path.read_text().split('\n')
    out = []
    depth = 0
    last_doc = None		# (name, line the comment ended on)
    last_code = 0		# line of the last non-blank, non-comment line
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith('/*'):
            start = i
            while '*/' not in lines[i]:
                i += 1
            if stripped.startswith('/**') and depth == 0:
                last_doc = (doc_name(lines[start:i + 1]), i)
            i += 1
            continue
        if not stripped:
            i += 1
            continue
        if stripped.startswith('#'):
            while lines[i].rstrip().endswith('\\'):
                i += 1
            last_code = i
            i += 1
            continue
        if depth == 0 and not line[0].isspace() and line[0] not in '{}':
            # a statement from column 0: gather it up to ; or {
            start = i
            text = line
            while not re.search(r'[;{]', re.sub(r'/\*.*?\*/', '', text)) and i + 1 < len(lines):
                i += 1
                text += ' ' + lines[i].strip()
            code = re.sub(r'/\*.*?\*/', '', text)
            head = code.split('{')[0] if '(' in code.split('{')[0] else code
            m = CALL.search(head)
            if (m and not code.startswith(('typedef', 'struct', 'union', 'enum', 'extern "C"'))
                    and not m.group(1).isupper() and '__' not in m.group(1)):
                documented = (last_doc is not None and last_doc[0] == m.group(1)
                              and last_doc[1] > last_code)
                out.append((start + 1, m.group(1), documented))
            if not code.startswith('extern "C"'):	# its block is the whole header
                depth += code.count('{') - code.count('}')
            last_code = i
            i += 1
            continue
        code = re.sub(r'/\*.*?\*/', '', line)
        depth = max(0, depth + code.count('{') - code.count('}'))
        last_code = i
        i += 1
    return out


def main():
    root = pathlib.Path(sys.argv[1])
    inc = root / 'include'
    headers = sorted(list(inc.glob('smartio/**/*.h')) + list(inc.glob('smartio/**/*.cuh')))
    missing = []
    total = 0
    for h in headers:
        for line, name, documented in functions(h):
            total += 1
            if not documented:
                missing.append(f'{h.relative_to(root)}:{line}: {name}() has no kernel-doc '
                               f'comment right above it ("/** {name}() - what it does")')
    rendered = set()
    for rst in (root / 'docs' / 'api').glob('*.rst'):
        rendered |= set(re.findall(r'^\.\. kernel-doc:: (\S+)', rst.read_text(), re.M))
    for h in headers:
        if str(h.relative_to(root)) not in rendered:
            missing.append(f'{h.relative_to(root)} is in no ".. kernel-doc::" of docs/api/*.rst: '
                           f'the API reference leaves it out')
    for m in missing:
        print(m)
    if missing:
        print(f'FAIL: {len(missing)} problems ({total} public functions)')
        return 1
    print(f'{total} public functions in {len(headers)} headers, each with its kernel-doc '
          f'comment; every header in docs/api')
    return 0


if __name__ == '__main__':
    sys.exit(main())
