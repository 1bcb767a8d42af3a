#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Make a manual page from a program's --help and a page of its own.

  mkman.py --name NAME --section N --summary TEXT --version V
           [--prog PATH] [--extra FILE] --output FILE

The program's --help is the one source of its synopsis and options (so the
page cannot drift from the program); FILE (docs/man/NAME.txt) adds what a
help text has no room for, in sections headed [DESCRIPTION] (put before
the help's own text), [ENVIRONMENT], [EXIT STATUS], [EXAMPLES] and
[SEE ALSO]. Without --prog (the fio engine) FILE has [SYNOPSIS] and
[OPTIONS] too. In FILE, a line indented by two spaces is shown as typed
(a command), "TAG :: TEXT" is a tagged paragraph, and a blank line starts
a new paragraph. What FILE leaves out comes from the contract every
program keeps (src/tools/prog.h) and docs/env.md.
"""
import argparse
import re
import subprocess
import sys

ENV_DEFAULT = """\
SMARTIO_FABRIC :: the fabric to use when no NAME or --fabric is given
SMARTIO_NODE :: the node to join as when --node is not given (else 0)
SMARTIO_QUIET :: set, hides the library's notice that a uio-lent device has no huge pages
SMARTIO_LOCK_TIMEOUT_MS :: how long to wait for the fabric's registry lock

docs/env.md lists every variable the programs and libraries read."""

EXIT_DEFAULT = """\
0 :: success; --help and --version
1 :: a runtime failure, said on stderr (a fabric, node or device that does not exist included)
2 :: a usage error: an unknown option, a bad value or a stray argument, named on stderr"""

SECTIONS = ('SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'ENVIRONMENT', 'EXIT STATUS', 'EXAMPLES',
            'SEE ALSO')


def esc(s):
    """Text as roff prints it: backslashes and leading dots kept, '-' a minus."""
    s = s.replace('\\', '\\e').replace('-', '\\-')
    return '\\&' + s if s[:1] in ('.', "'") else s


def render(text):
    """FILE's markup as roff: paragraphs, tagged paragraphs, commands."""
    out, code = [], False
    for line in text.strip('\n').split('\n'):
        if line.startswith('  ') and line.strip():
            if not code:
                out += ['.PP', '.RS 4', '.nf']
                code = True
            out.append(esc(line[2:]))
            continue
        if code:
            out += ['.fi', '.RE']
            code = False
        if not line.strip():
            out.append('.PP')
        elif ' :: ' in line:
            tag, body = line.split(' :: ', 1)
            out += ['.TP', '.B ' + esc(tag), esc(body)]
        else:
            out.append(esc(line))
    if code:
        out += ['.fi', '.RE']
    return out


def read_extra(path):
    secs = {}
    if not path:
        return secs
    cur = None
    with open(path) as f:
        for line in f.read().split('\n'):
            m = re.fullmatch(r'\[([A-Z ]+)\]', line)
            if m:
                cur = m.group(1)
                secs[cur] = ''
            elif cur:
                secs[cur] += line + '\n'
    return secs


def parse_help(text):
    """--help as (synopsis lines, description lines, [(tag, text)] entries)."""
    lines = text.rstrip('\n').split('\n')
    syn, desc, entries = [], [], []
    i = 0
    if lines and lines[0].lower().startswith('usage:'):
        syn.append(lines[0][6:].strip())
        i = 1
        # more forms of the command: "       PROG ..." aligned under the first
        while i < len(lines) and re.match(r'\s{4,}\S', lines[i]) and \
                not re.match(r'\s{20,}', lines[i]) and not lines[i].strip().startswith('-'):
            syn.append(lines[i].strip())
            i += 1
    last = None
    for line in lines[i:]:
        m = re.match(r'  (\S.*?)(?:\s{2,}(\S.*))?$', line)
        if line.startswith('  ') and not line.startswith('    ') and m:
            last = [m.group(1), m.group(2) or '']
            entries.append(last)
        elif re.match(r'\s{4,}\S', line) and last is not None:
            more = line.strip()
            if not last[1] and more.startswith('['):
                # a tag continued ("[--adapters 1|2] ..."), maybe with its text
                t = re.match(r'(\S.*?)(?:\s{2,}(\S.*))?$', more)
                last[0] += ' ' + t.group(1)
                last[1] = t.group(2) or ''
            else:
                last[1] = (last[1] + ' ' + more).strip()
        elif line.strip():
            last = None
            desc.append(line.strip())
        else:
            last = None
            desc.append('')
    return syn, desc, entries


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--name', required=True)
    ap.add_argument('--section', default='1')
    ap.add_argument('--summary', required=True)
    ap.add_argument('--version', required=True)
    ap.add_argument('--prog')
    ap.add_argument('--extra')
    ap.add_argument('--output', required=True)
    a = ap.parse_args()
    extra = read_extra(a.extra)
    syn, desc, entries = [], [], []
    if a.prog:
        r = subprocess.run([a.prog, '--help'], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            sys.exit(f'mkman: {a.prog} --help exited {r.returncode}: {r.stderr.strip()}')
        syn, desc, entries = parse_help(r.stdout)
    exit_from_help = ''
    keep, in_exit = [], False
    for line in desc:	# the help's "Exit status: ..." paragraph goes to EXIT STATUS
        if line.lower().startswith('exit status:'):
            in_exit = True
            line = line[len('exit status:'):]
        elif not line:
            in_exit = False
        if in_exit:
            exit_from_help = (exit_from_help + ' ' + line.strip()).strip()
        else:
            keep.append(line)
    desc = keep
    out = [f'.TH {a.name.upper()} {a.section} "" "smartio {a.version}" "smartio"',
           '.SH NAME', f'{esc(a.name)} \\- {esc(a.summary)}', '.SH SYNOPSIS']
    if 'SYNOPSIS' in extra:
        out += render(extra['SYNOPSIS'])
    for s in syn:
        out += ['.PP', '.nf', esc(s), '.fi']
    out.append('.SH DESCRIPTION')
    if 'DESCRIPTION' in extra:
        out += render(extra['DESCRIPTION'])
        out.append('.PP')
    out += render('\n'.join(desc)) if any(desc) else []
    out.append('.SH OPTIONS')
    cmds = [e for e in entries if not e[0].startswith('-')]
    opts = [e for e in entries if e[0].startswith('-')]
    if cmds:	# smartio's subcommands, each its own entry
        out += ['.SS Commands']
        for tag, body in cmds:
            out += ['.TP', '.B ' + esc(tag), esc(body) if body else '']
        out += ['.SS Options']
    for tag, body in opts:
        out += ['.TP', '.B ' + esc(tag), esc(body) if body else '']
    if 'OPTIONS' in extra:
        out += render(extra['OPTIONS'])
    out.append('.SH ENVIRONMENT')
    out += render(extra.get('ENVIRONMENT', ENV_DEFAULT))
    out.append('.SH EXIT STATUS')
    if 'EXIT STATUS' in extra:
        out += render(extra['EXIT STATUS'])
    elif exit_from_help:
        out.append(esc(exit_from_help))
    else:
        out += render(EXIT_DEFAULT)
    out.append('.SH EXAMPLES')
    if 'EXAMPLES' not in extra:
        sys.exit(f'mkman: {a.extra or a.name}: no [EXAMPLES] section')
    out += render(extra['EXAMPLES'])
    out.append('.SH SEE ALSO')
    out += render(extra.get('SEE ALSO', 'smartio(1); README.md and docs/ in the source tree'))
    with open(a.output, 'w') as f:
        f.write('\n'.join(l for l in out if l is not None) + '\n')


if __name__ == '__main__':
    main()
