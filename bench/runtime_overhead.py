"""Per-op cost of the PyTorch integration of the runtime shim
(swapplan.runtime.SwapRuntime) and of the hooks a cheaper op clock could use,
measured like bench/recorder_overhead.py.

    .venv/bin/python bench/runtime_overhead.py      # torch 2.x
    /usr/bin/python3 bench/runtime_overhead.py      # Debian's torch 1.13

Per ATen op (a loop of one-element adds: the kernel costs almost nothing, so
the time is dispatch plus the hook), microseconds, median of 5 runs, with 0
and with 10,000 extra live storages (a hook must not grow with them):
  plain PyTorch; an empty TorchDispatchMode (the floor of any per-op Python
  hook); SwapRuntime with a budget nothing exceeds (no swaps: storage
  lookups, the output prediction, registration, frees, two or three calls
  into the C library), with and without predict_allocations.
Per saved tensor (a chain of tanh under autograd: each op saves one tensor
for backward), forward + backward, the cost over plain autograd of:
  torch.autograd.graph.saved_tensors_hooks with identity pack/unpack (the
  floor of the saved-tensor clock); the same pack hook also taking the
  storage's weak reference and an id (what a runtime needs to find the
  storage again).
Per module call (an nn.Identity forward): forward pre + post hooks (the
floor of a module-boundary clock).
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from swapplan import _torch_compat as C  # noqa: E402
from swapplan.runtime import SwapRuntime  # noqa: E402

OPS = 20000
SAVED = 5000


class NullMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class Plain:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def op_loop():
    x = torch.ones(1)
    for _ in range(OPS):
        x = x + 1   # one aten::add; the previous x dies between ops


def median_ns(setup, body, runs=5):
    times = []
    for _ in range(runs):
        with setup():
            t0 = time.perf_counter_ns()
            body()
            times.append(time.perf_counter_ns() - t0)
    return statistics.median(times)


def per_op(setup):
    return median_ns(setup, op_loop) / OPS / 1000.0


def saved_loop():
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(SAVED):
        y = torch.tanh(y)   # saves its output for backward
    y.backward()


def identity_hooks():
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


def weakref_hooks():
    table = {}

    def pack(t):
        sid = C.storage_id(t)
        if sid not in table:
            table[sid] = C.weak_ref(C.untyped_storage(t))
        return (sid, t)

    def unpack(p):
        return p[1]

    return torch.autograd.graph.saved_tensors_hooks(pack, unpack)


def module_loop(module):
    x = torch.ones(1)
    for _ in range(OPS):
        module(x)


def main():
    torch.set_num_threads(1)
    print("torch %s" % torch.__version__)
    plain = per_op(Plain)
    null = per_op(NullMode)
    print("us per ATen op (median of 5 x %d one-element adds)" % OPS)
    print("  plain PyTorch                         %6.2f" % plain)
    print("  empty TorchDispatchMode               %6.2f   (+%.2f)" % (null, null - plain))
    rows = []
    for extra in (0, 10000):
        keep = [torch.ones(1) for _ in range(extra)]
        for predict in (True, False):
            t = per_op(lambda: SwapRuntime(device_memory="1GiB", provider=None,
                                           timed_copies=False, predict_allocations=predict))
            rows.append((extra, predict, t))
            print("  SwapRuntime %-13s %5d extra live %6.2f   (+%.2f over plain)"
                  % ("predicting," if predict else "no predict,", extra, t, t - plain))
        del keep
    base = median_ns(Plain, saved_loop)
    print("us per saved tensor (median of 5 x %d tanh, forward + backward), over plain "
          "autograd (%.2f us per op pair)" % (SAVED, base / SAVED / 1000.0))
    for extra in (0, 10000):
        keep = [torch.ones(1) for _ in range(extra)]
        ident = median_ns(identity_hooks, saved_loop)
        weak = median_ns(weakref_hooks, saved_loop)
        print("  saved_tensors_hooks identity, %5d extra live   +%.2f" %
              (extra, (ident - base) / SAVED / 1000.0))
        print("  saved_tensors_hooks weak ref, %5d extra live   +%.2f" %
              (extra, (weak - base) / SAVED / 1000.0))
        del keep
    m = torch.nn.Identity()
    bare = median_ns(Plain, lambda: module_loop(m))
    m.register_forward_pre_hook(lambda mod, inp: None)
    m.register_forward_hook(lambda mod, inp, out: None)
    hooked = median_ns(Plain, lambda: module_loop(m))
    print("us per module call: forward pre + post hooks   +%.2f" % ((hooked - bare) / OPS / 1000.0))
    return plain, null, rows


if __name__ == "__main__":
    main()
