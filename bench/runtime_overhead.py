"""Per-op cost of the PyTorch integration of the runtime shim
(swapplan.runtime.SwapRuntime), measured like bench/recorder_overhead.py.

    /usr/bin/python3 bench/runtime_overhead.py

Times a loop of tiny ops (one-element adds: the kernel costs almost nothing,
so the time is dispatch plus the shim) three ways: plain PyTorch, under an
empty TorchDispatchMode (what any dispatch-mode hook pays), and under
SwapRuntime with a budget nothing exceeds (no swaps: the per-op path —
storage lookups, registration of the new output, the frees the death
tracker reports, two calls into the C library). The shim's cost is the
difference to the empty mode; microseconds per op, median of 5 runs, also
with 10,000 extra storages alive (the per-op path must not grow with them).
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from swapplan.runtime import SwapRuntime  # noqa: E402

OPS = 20000


class NullMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class Plain:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def loop():
    x = torch.ones(1)
    for _ in range(OPS):
        x = x + 1   # one aten::add; the previous x dies between ops


def timed(setup):
    runs = []
    for _ in range(5):
        with setup():
            t0 = time.perf_counter_ns()
            loop()
            runs.append(time.perf_counter_ns() - t0)
    return statistics.median(runs) / OPS / 1000.0


def shim():
    return SwapRuntime(device_memory="1GiB", provider=None, timed_copies=False)


def main():
    torch.set_num_threads(1)
    plain = timed(Plain)
    null = timed(NullMode)
    print("us per op (median of 5 x %d one-element adds)" % OPS)
    print("  plain PyTorch                 %6.2f" % plain)
    print("  empty TorchDispatchMode       %6.2f" % null)
    rows = []
    for extra in (0, 10000):
        keep = [torch.ones(1) for _ in range(extra)]
        with_shim = timed(shim)
        rows.append((extra, with_shim))
        print("  SwapRuntime, %5d extra live %6.2f   (shim: %.2f over the empty mode)"
              % (extra, with_shim, with_shim - null))
        del keep
    return plain, null, rows


if __name__ == "__main__":
    main()
