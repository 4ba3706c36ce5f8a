"""Property test: random tensor programs against a naive reference model.

The program makes tensors, views, slices, in-place updates, out-of-place
results and concatenations, and drops variables at random. The reference
tracks, per storage, how many live Python variables refer to it (CPython
frees at the last reference), and expects each storage to be allocated by the
op that made it and freed after the last op dispatched before its last
variable went away. It also rebuilds the per-op bytes-in-use curve. The
recorder's events, its peak, and swapplan's rebuilt peak must all agree.
"""

import random

import torch

from . import support

SEEDS = (1, 2, 3, 4, 5)
STEPS = 160


class Reference:
    def __init__(self):
        self.ops = 0               # ops dispatched so far
        self.groups = []           # [size_bytes, alloc_op, free_op or None, refs]
        self.vars = {}             # name -> (tensor, group index)

    def made(self, name, tensor, size_bytes):
        """`tensor` (a new storage) was made by the op just dispatched."""
        self.groups.append([size_bytes, self.ops - 1, None, 0])
        self._bind(name, tensor, len(self.groups) - 1)

    def aliased(self, name, tensor, group):
        self._bind(name, tensor, group)

    def _bind(self, name, tensor, group):
        # Like `vars[name] = tensor`: the new value is referenced before the
        # old one is released (it may be a view of it).
        self.groups[group][3] += 1
        if name in self.vars:
            self.drop(name)
        self.vars[name] = (tensor, group)

    def drop(self, name):
        _, group = self.vars.pop(name)
        g = self.groups[group]
        g[3] -= 1
        if g[3] == 0:
            g[2] = self.ops - 1    # after the last dispatched op

    def peak(self):
        best = 0
        for op in range(self.ops):
            live = sum(size for size, a, f, _ in self.groups
                       if a <= op and (f is None or op <= f))
            best = max(best, live)
        return best


def run_program(seed, rec, ref):
    rnd = random.Random(seed)
    names = ["v%d" % i for i in range(8)]
    ops_at_last_step = 0
    for _ in range(STEPS):
        target = rnd.choice(names)
        existing = sorted(ref.vars)
        action = rnd.choice(["new", "new", "view", "slice", "inplace", "mul", "cat", "drop",
                             "drop", "step"]) if existing else "new"
        if action == "new":
            n = rnd.randint(1, 64)
            t = torch.randn(n)                      # aten::randn
            ref.ops += 1
            ref.made(target, t, 4 * n)
        elif action in ("view", "slice"):
            src, group = ref.vars[rnd.choice(existing)]
            t = src.view(-1) if action == "view" else src[::2]   # aten::view / aten::slice
            del src
            ref.ops += 1
            ref.aliased(target, t, group)
        elif action == "inplace":
            src, _ = ref.vars[rnd.choice(existing)]
            src.mul_(0.5)                           # aten::mul_
            del src
            ref.ops += 1
        elif action == "mul":
            src, _ = ref.vars[rnd.choice(existing)]
            t = src * 2                             # aten::mul: a new storage
            n = t.numel()
            del src
            ref.ops += 1
            ref.made(target, t, 4 * n)
        elif action == "cat":
            a, _ = ref.vars[rnd.choice(existing)]
            b, _ = ref.vars[rnd.choice(existing)]
            t = torch.cat([a, b])                   # aten::cat
            n = t.numel()
            del a, b
            ref.ops += 1
            ref.made(target, t, 4 * n)
        elif action == "drop":
            ref.drop(rnd.choice(existing))
        elif ref.ops > ops_at_last_step:
            rec.step()
            ops_at_last_step = ref.ops
        t = None  # no hidden reference survives into the next step


class RandomPrograms(support.RecorderTestCase):
    def test_events_and_peak_match_the_reference(self):
        for seed in SEEDS:
            with self.subTest(seed=seed):
                ref = Reference()
                rec, tr = self.record(lambda r: run_program(seed, r, ref),
                                      name="random-%d.json" % seed, record_call_sites=False)
                msg = "seed %d" % seed
                self.assertEqual(rec.summary["ops"], ref.ops, msg)
                expected = sorted((size, a, f) for size, a, f, _ in ref.groups)
                got = []
                offsets, total = [], 0
                for it in tr.iterations:
                    offsets.append(total)
                    total += len(it["ops"])
                alloc, free = {}, {}
                for it, offset in enumerate(offsets):
                    for op, kind, tensor in tr.events(it):
                        (alloc if kind == "ALLOC" else free)[tensor] = offset + op
                for t in tr.doc["tensors"]:
                    got.append((t["size_bytes"], alloc[t["id"]], free.get(t["id"])))
                self.assertEqual(sorted(got), expected, msg)
                self.assertEqual(rec.peak_bytes, ref.peak(), msg)
