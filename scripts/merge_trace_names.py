#!/usr/bin/env python3
"""Copies tensor names from a re-recording into a recorded trace.

    scripts/merge_trace_names.py RERECORDED.json.gz BUNDLED.json.gz [-o OUT.json.gz]

The PyTorch recorder is deterministic in everything but time: re-running an
example script (seeded, one thread) gives the same ops, tensors and events;
wall times, per-op durations, allocator figures, device addresses and the
call sites' line numbers differ (traces/README.md). This tool takes the
tensor names (and nothing else) of RERECORDED and writes BUNDLED with them,
so that a newer recorder's names (module paths: `blocks.0.attn.qkv.addmm`)
reach a bundled trace without replacing its measured durations by those of
a re-recording on a busy machine.

It refuses (exit 1, naming the first difference) unless both files hold the
same trace up to what varies from run to run: format, op names, every
tensor's id, size, kind, dtype and shape, every op's name, phase, inputs,
outputs and hints, every memory event, and the metadata except attributes.
OUT defaults to BUNDLED (rewritten in place). The output is gzip-compressed
JSON with a fixed mtime, so the same inputs give the same bytes.
"""
import argparse
import gzip
import io
import json
import sys

# Per op and per iteration: what differs between two recordings of one run.
VOLATILE_OP = ('duration_ns', 'allocator_bytes_in_use')
VOLATILE_ITERATION = ('wall_time_ns',)
VOLATILE_TENSOR = ('name', 'device_address')


def load(path):
    with gzip.open(path, 'rt', encoding='utf-8') as f:
        return json.load(f)


def stable_view(trace):
    """`trace` without what varies from run to run (a deep copy)."""
    d = json.loads(json.dumps(trace))
    d['metadata'].pop('attributes', None)
    for t in d['tensors']:
        for k in VOLATILE_TENSOR:
            t.pop(k, None)
    for it in d['iterations']:
        for k in VOLATILE_ITERATION:
            it.pop(k, None)
        for op in it['ops']:
            for k in VOLATILE_OP:
                op.pop(k, None)
    return d


def first_difference(a, b, where='$'):
    if type(a) is not type(b):
        return where
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return where + '.' + k
            d = first_difference(a[k], b[k], where + '.' + k)
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return where + ' (length %d vs %d)' % (len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, '%s[%d]' % (where, i))
            if d:
                return d
        return None
    return None if a == b else where


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('rerecorded')
    p.add_argument('bundled')
    p.add_argument('-o', '--output')
    a = p.parse_args()
    new, old = load(a.rerecorded), load(a.bundled)
    diff = first_difference(stable_view(new), stable_view(old))
    if diff:
        print('%s and %s are not the same recording: they differ at %s' %
              (a.rerecorded, a.bundled, diff), file=sys.stderr)
        return 1
    renamed = 0
    for t_new, t_old in zip(new['tensors'], old['tensors']):
        name = t_new.get('name')
        if t_old.get('name') != name:
            renamed += 1
        if name is None:
            t_old.pop('name', None)
        else:
            t_old['name'] = name
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode='wb', mtime=0, filename='') as g:
        g.write(json.dumps(old, separators=(',', ':')).encode('utf-8'))
    out = a.output or a.bundled
    with open(out, 'wb') as f:
        f.write(buf.getvalue())
    print('%s: %d of %d tensors renamed' % (out, renamed, len(old['tensors'])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
