#!/usr/bin/env python3
"""Every module of the Python package is installed.

python/meson.build lists the package's files one by one (py.install_sources);
a module added under python/swapplan/ but not listed works from the checkout
(tests put python/ on PYTHONPATH) and breaks only after `pip install .`, with
an ImportError in the user's process. This test compares the two sets.

Run by `meson test` (suite `layering`); exits 1 naming each unlisted or
missing file, 0 when they agree.
"""
import os
import re
import sys

root = sys.argv[1]
python_dir = os.path.join(root, 'python')
on_disk = set()
for dirpath, dirnames, filenames in os.walk(os.path.join(python_dir, 'swapplan')):
    dirnames[:] = [d for d in dirnames if d != '__pycache__']
    for name in filenames:
        if name.endswith('.py'):
            on_disk.add(os.path.relpath(os.path.join(dirpath, name), python_dir))

with open(os.path.join(python_dir, 'meson.build')) as f:
    listed = set(re.findall(r"'(swapplan/[^']+\.py)'", f.read()))

problems = ['not installed (add it to python/meson.build): python/' + p
            for p in sorted(on_disk - listed)]
problems += ['listed in python/meson.build but missing: python/' + p
             for p in sorted(listed - on_disk)]
for p in problems:
    print(p)
if not problems:
    print('%d package modules, all installed' % len(on_disk))
sys.exit(1 if problems else 0)
