# SPDX-License-Identifier: MIT
# The API reference, from the headers' kernel-doc comments (docs/meson.build:
# `ninja -C build docs`).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'sphinx'))

project = 'smartio'
author = 'the smartio authors'
extensions = ['kerneldoc']
primary_domain = 'c'
highlight_language = 'c'
html_theme = 'alabaster'
html_theme_options = {'description': 'userspace drivers over a shared PCIe fabric',
                      'page_width': '1100px'}
html_show_sourcelink = False
master_doc = 'index'
# What the headers' declarations carry that the C domain would not parse:
# the host/device marker of queue.h's inline functions and CUDA's own.
c_id_attributes = ['SIO_HD', 'SIO_HD_HOT', '__host__', '__device__', '__forceinline__', '__global__']
c_paren_attributes = ['__attribute__']
