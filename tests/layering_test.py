#!/usr/bin/env python3
"""Enforces the library layering (docs/architecture.md).

Every source and header under include/swapplan/, src/ and cli/ belongs to an
area (its first directory below swapplan/ or src/); every area belongs to a
layer. A file may include headers of its own layer and of the layers it is
allowed to see, nothing else; an installed header (include/swapplan/) only
installed ones, not the internals next to the sources (src/<area>/). The
runtime shim sees only `model`: it is loaded into training processes and
must stay small.

The core areas (util, trace, policy, device, varying, alloc) hold two
layers. `model` is the protobuf-free part: the sources of `model_sources`
in src/meson.build (the one list of them, which the build compiles without
protobuf) and every header of a core area that they include, directly or
through such headers, except a header whose own source (src/<area>/<name>.cc
for <area>/<name>.h) is core's; MIXED_CORE_HEADERS below names the two such
headers that model files may include. The rest of those areas is `core`. A
model or runtime file must not include a protobuf header
(<google/protobuf/...>, "*.pb.h") nor a header of any layer above model; the
build rejects the same (no protobuf include path, PROTOBUF_NAMESPACE
predefined, the shared model library linked without libprotobuf and with
--no-undefined).

Run by `meson test` (suite `layering`); exits 1 and lists every offending
include, 0 when the tree is clean.
"""
import os
import re
import sys

# area -> layer ('core' areas: 'model' for the files of model_files()).
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
    'model': set(),
    'core': {'model'},
    'analysis': {'model', 'core'},
    'import': {'model', 'core'},
    'runtime': {'model'},
    'sim': {'model', 'core', 'analysis'},
    'planners': {'model', 'core', 'analysis', 'sim'},
    'optimum': {'model', 'core', 'analysis', 'sim', 'planners'},
    # eval executes replays through the runtime shim (eval/replay_execute.h).
    'eval': {'model', 'core', 'analysis', 'sim', 'planners', 'optimum', 'import', 'runtime'},
    'report': {'model', 'core', 'analysis', 'sim', 'planners', 'optimum', 'eval', 'import',
               'runtime'},
    'service': {'model', 'core', 'analysis', 'sim', 'planners', 'optimum', 'eval', 'import',
                'runtime'},
    'cli': {'model', 'core', 'analysis', 'sim', 'planners', 'optimum', 'eval', 'import', 'report',
            'service', 'runtime'},
}

# Layers that compile without protobuf.
NO_PROTOBUF = {'model', 'runtime'}

# Core headers that also declare model code, which model and runtime files
# may include for it: trace/io.h (kTraceMagic, kTraceFormatVersion,
# TraceWriteOptions, ParseTraceJson and TraceToJson, defined in the model's
# trace/json_io.cc) and policy/policy_io.h (ComputeFingerprint, defined in
# policy/policy_runtime.cc). Their core declarations (files, the binary
# forms) cannot be called from there: the model library's link fails.
MIXED_CORE_HEADERS = {'include/swapplan/trace/io.h', 'include/swapplan/policy/policy_io.h'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ANY_INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^">]+)[">]')
MODEL_SOURCES = re.compile(r'^model_sources = files\((.*?)^\)', re.S | re.M)


def is_protobuf(path):
    return path.startswith('google/protobuf/') or path.endswith('.pb.h')


def include_file(root, path):
    """The file under `root` that `#include "path"` names, or None."""
    for base in (os.path.join(root, 'include'), os.path.join(root, 'src')):
        full = os.path.join(base, path)
        if os.path.isfile(full):
            return os.path.relpath(full, root)
    return None


def companion(rel):
    """src/<area>/<name>.cc for include/swapplan/<area>/<name>.h or src/<area>/<name>.h."""
    parts = rel[:-2].split('/')
    return 'src/' + '/'.join(parts[2:] if parts[0] == 'include' else parts[1:]) + '.cc'


def model_files(root):
    """The model layer's files: model_sources of src/meson.build and the
    core-area headers they reach."""
    build = os.path.join(root, 'src', 'meson.build')
    if not os.path.isfile(build):
        return set()
    m = MODEL_SOURCES.search(open(build, encoding='utf-8').read())
    if not m:
        return set()
    todo = ['src/' + f for f in re.findall(r"'([^']+)'", m.group(1))]
    sources = set(todo)
    seen = set()
    while todo:
        rel = todo.pop()
        if rel in seen or not os.path.isfile(os.path.join(root, rel)):
            continue
        if (rel.endswith('.h') and companion(rel) not in sources and
                os.path.isfile(os.path.join(root, companion(rel)))):
            continue  # core's header (its source is not a model source)
        seen.add(rel)
        with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as fh:
            for line in fh:
                inc = INCLUDE.match(line)
                if inc and AREAS.get(area_of_include(inc.group(1))) == 'core':
                    target = include_file(root, inc.group(1))
                    if target:
                        todo.append(target)
    return seen


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
    model = model_files(root)
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
                layer = 'model' if rel in model else AREAS[area]
                checked += 1
                with open(full, encoding='utf-8', errors='replace') as fh:
                    for lineno, line in enumerate(fh, 1):
                        any_inc = ANY_INCLUDE.match(line)
                        if any_inc and layer in NO_PROTOBUF and is_protobuf(any_inc.group(1)):
                            problems.append(f'{rel}:{lineno}: layer {layer} includes protobuf '
                                            f'"{any_inc.group(1)}"')
                            continue
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc_area = area_of_include(m.group(1))
                        if inc_area is None:
                            continue
                        if inc_area not in AREAS:
                            problems.append(f'{rel}:{lineno}: includes "{m.group(1)}" of unknown area')
                            continue
                        if rel.startswith('include/') and not m.group(1).startswith('swapplan/'):
                            problems.append(f'{rel}:{lineno}: installed header includes '
                                            f'"{m.group(1)}", which is not installed')
                            continue
                        inc_layer = AREAS[inc_area]
                        target = include_file(root, m.group(1))
                        if inc_layer == 'core' and (target in model or
                                                    (layer in NO_PROTOBUF and
                                                     target in MIXED_CORE_HEADERS)):
                            inc_layer = 'model'
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

    # The model layer: src/trace/m.cc is a model source; it may include its
    # own header m.h (no core source of that name), not c.h (src/trace/c.cc
    # is core's) nor protobuf; core's c.cc may include m.h; the runtime may
    # include m.h, not c.h; the installed c.h may not include an internal
    # header of src/.
    with tempfile.TemporaryDirectory() as d:
        for sub in ('src/trace', 'src/runtime', 'include/swapplan/trace'):
            os.makedirs(os.path.join(d, sub))
        files = {
            'src/meson.build': "model_sources = files(\n  'trace/m.cc',\n)\n",
            'include/swapplan/trace/m.h': '',
            'include/swapplan/trace/c.h': '#include "trace/internal.h"\n',
            'src/trace/m.cc': ('#include "swapplan/trace/m.h"\n#include "swapplan/trace/c.h"\n'
                               '#include <google/protobuf/message.h>\n'),
            'src/trace/c.cc': '#include "swapplan/trace/m.h"\n#include "trace.pb.h"\n',
            'src/runtime/r.cc': '#include "swapplan/trace/m.h"\n#include "swapplan/trace/c.h"\n',
        }
        for rel, text in files.items():
            with open(os.path.join(d, rel), 'w') as f:
                f.write(text)
        checked, problems = check(d)
        assert checked == 5, checked
        assert sorted(problems) == [
            'include/swapplan/trace/c.h:1: installed header includes "trace/internal.h", '
            'which is not installed',
            'src/runtime/r.cc:2: layer runtime includes "swapplan/trace/c.h" of layer core',
            'src/trace/m.cc:2: layer model includes "swapplan/trace/c.h" of layer core',
            'src/trace/m.cc:3: layer model includes protobuf "google/protobuf/message.h"',
        ], problems


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
