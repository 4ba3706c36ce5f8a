#!/usr/bin/env python3
"""Enforces the library layering (docs/architecture.md).

Every source and header under include/swapplan/, src/ and cli/ belongs to an
area (its first directory below swapplan/ or src/); every area belongs to a
layer. A file may include headers of its own layer and of the layers it is
allowed to see, nothing else. The runtime shim sees only `core`: it is
loaded into training processes and must stay small.

Run by `meson test` (suite `layering`); exits 1 and lists every offending
include, 0 when the tree is clean.
"""
import os
import re
import sys

# area -> layer
AREAS = {
    'util': 'core', 'trace': 'core', 'policy': 'core', 'device': 'core', 'varying': 'core',
    'alloc': 'core',
    'curve': 'analysis', 'synth': 'analysis',
    'import': 'import',
    'sim': 'sim',
    'planners': 'planners',
    'optimum': 'optimum',
    'eval': 'eval',
    'report': 'report',
    'runtime': 'runtime',
    'service': 'service',
    'cli': 'cli',
}

# layer -> layers it may include (besides itself)
ALLOWED = {
    'core': set(),
    'analysis': {'core'},
    'import': {'core'},
    'runtime': {'core'},
    'sim': {'core', 'analysis'},
    'planners': {'core', 'analysis', 'sim'},
    'optimum': {'core', 'analysis', 'sim', 'planners'},
    # eval executes replays through the runtime shim (eval/replay_execute.h).
    'eval': {'core', 'analysis', 'sim', 'planners', 'optimum', 'import', 'runtime'},
    'report': {'core', 'analysis', 'sim', 'planners', 'optimum', 'eval', 'import', 'runtime'},
    'service': {'core', 'analysis', 'sim', 'planners', 'optimum', 'eval', 'import', 'runtime'},
    'cli': {'core', 'analysis', 'sim', 'planners', 'optimum', 'eval', 'import', 'report',
            'service', 'runtime'},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def area_of_path(rel):
    parts = rel.split('/')
    if parts[0] == 'include':
        return parts[2] if len(parts) > 3 else None
    if parts[0] == 'src':
        return parts[1] if len(parts) > 2 else None
    if parts[0] == 'cli':
        return 'cli'
    return None


def area_of_include(path):
    parts = path.split('/')
    if parts[0] == 'swapplan' and len(parts) > 2:
        return parts[1]
    if len(parts) > 1 and parts[0] in AREAS:  # src-private header, e.g. "sim/oom_handler.h"
        return parts[0]
    return None


def check(root):
    """Returns (files checked, list of violations) for the tree at `root`."""
    problems = []
    checked = 0
    for top in ('include', 'src', 'cli'):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(('.h', '.cc', '.c', '.cu')):
                    continue
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, root)
                area = area_of_path(rel)
                if area is None:
                    continue
                if area not in AREAS:
                    problems.append(f'{rel}: area "{area}" has no layer (add it to tests/layering_test.py)')
                    continue
                layer = AREAS[area]
                checked += 1
                with open(full, encoding='utf-8', errors='replace') as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc_area = area_of_include(m.group(1))
                        if inc_area is None:
                            continue
                        if inc_area not in AREAS:
                            problems.append(f'{rel}:{lineno}: includes "{m.group(1)}" of unknown area')
                            continue
                        inc_layer = AREAS[inc_area]
                        if inc_layer != layer and inc_layer not in ALLOWED[layer]:
                            problems.append(f'{rel}:{lineno}: layer {layer} includes "{m.group(1)}" '
                                            f'of layer {inc_layer}')
    return checked, problems


def self_test():
    """The check must flag a core file that includes a planner header, and
    accept the same include from the eval layer."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, 'src', 'trace'))
        os.makedirs(os.path.join(d, 'src', 'eval'))
        for sub in ('trace', 'eval'):
            with open(os.path.join(d, 'src', sub, 'x.cc'), 'w') as f:
                f.write('#include "swapplan/planners/planner.h"\n')
        checked, problems = check(d)
        assert checked == 2, checked
        assert problems == ['src/trace/x.cc:1: layer core includes "swapplan/planners/planner.h" '
                            'of layer planners'], problems


def main():
    self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    checked, problems = check(os.path.abspath(root))
    if checked == 0:
        print('layering: no sources found under', root)
        return 1
    for p in problems:
        print(p)
    print(f'layering: {checked} files checked, {len(problems)} violations')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
