# SPDX-License-Identifier: MIT
"""Sphinx directive for the headers' kernel-doc comments.

``.. kernel-doc:: include/smartio/fabric.h`` runs the kernel's
scripts/kernel-doc (Debian: linux-kbuild-6.1) on the file, in its reST
mode, and parses what it prints in place: the DOC sections, then each
documented struct, enum, macro and function. ``:doc: TITLE`` takes one
DOC section alone. Whatever kernel-doc warns about (a parameter not
described, a comment that names another function) is a Sphinx warning,
with the header's file and line, so ``sphinx-build -W`` fails on it.

Config values: ``kerneldoc_bin`` (the script) and ``kerneldoc_srctree``
(what the paths are relative to), given with -D by docs/meson.build.
"""

import re
import subprocess

import sphinx
from docutils import nodes, statemachine
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, switch_source_input
from sphinx.util.nodes import nested_parse_with_titles

logger = logging.getLogger(__name__)
LINENO = re.compile(r'^\.\. LINENO (\d+)$')
STRUCT = re.compile(r'^\.\. c:struct:: (\w+)$')
FUNCTION = re.compile(r'^\.\. c:function:: [^(]*?(\w+) \(')
WARNING = re.compile(r'^(.*?):(\d+): (?:warning|error): (.*)$')


class KernelDoc(SphinxDirective):
    required_arguments = 1
    option_spec = {'doc': directives.unchanged_required}

    def run(self):
        cfg = self.env.config
        path = f'{cfg.kerneldoc_srctree}/{self.arguments[0]}'
        cmd = [cfg.kerneldoc_bin, '-rst', '-enable-lineno', '-sphinx-version', sphinx.__version__]
        if 'doc' in self.options:
            cmd += ['-function', self.options['doc']]
        self.env.note_dependency(path)
        try:
            run = subprocess.run(cmd + [path], capture_output=True, text=True, check=False)
        except OSError as e:
            raise self.error(f'kernel-doc ({cfg.kerneldoc_bin}) did not run: {e}')
        for line in run.stderr.splitlines():
            m = WARNING.match(line)
            if m:
                logger.warning(m.group(3), location=f'{m.group(1)}:{m.group(2)}')
            elif line.strip():
                logger.warning(line, location=path)
        if run.returncode:
            raise self.error(f'kernel-doc failed on {path} (exit {run.returncode})')

        # Lines as the header numbers them, so messages point into it. A
        # getter named as the struct it fills (sio_segment_info()) is fine
        # C, but one name to Sphinx's C domain: the function goes into a
        # scope of its own there, and the struct keeps the plain name.
        lines = statemachine.string2lines(run.stdout, 8, convert_whitespace=True)
        structs = {m.group(1) for m in map(STRUCT.match, lines) if m}
        text = statemachine.ViewList()
        lineno = 0
        scoped = False
        for line in lines:
            m = LINENO.match(line)
            if m:
                lineno = int(m.group(1)) - 1
                continue
            if scoped and line and not line[0].isspace():
                text.append('.. c:namespace-pop::', path, lineno)
                text.append('', path, lineno)
                scoped = False
            m = FUNCTION.match(line)
            if m and m.group(1) in structs:
                text.append('.. c:namespace-push:: getter', path, lineno)
                text.append('', path, lineno)
                scoped = True
            text.append(line, path, lineno)
        if scoped:
            text.append('', path, lineno)
            text.append('.. c:namespace-pop::', path, lineno)
        node = nodes.section()
        with switch_source_input(self.state, text):
            nested_parse_with_titles(self.state, text, node)
        return node.children


def setup(app):
    app.add_config_value('kerneldoc_bin', 'kernel-doc', 'env')
    app.add_config_value('kerneldoc_srctree', '.', 'env')
    app.add_directive('kernel-doc', KernelDoc)
    return {'version': '1', 'parallel_read_safe': True, 'parallel_write_safe': True}
