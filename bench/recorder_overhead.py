"""Per-op cost of swapplan_recorder, and how it grows with live storages.

    /usr/bin/python3 bench/recorder_overhead.py

Times a loop of tiny ops (one-element adds: the kernel costs almost nothing,
so the time is dispatch plus recording) three ways: plain PyTorch, under an
empty TorchDispatchMode (the cost any dispatch-mode recorder pays), and under
the Recorder, with 0, 1,000 and 10,000 extra storages kept alive: by default
the recorder checks only storages whose tensors died (independent of the live
count); with poll_every_op it checks all of them before each op (linear).
Reports microseconds per op, median of 5 runs.
"""

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import swapplan_recorder  # noqa: E402

OPS = 20000


class NullMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def loop():
    x = torch.ones(1)
    for _ in range(OPS):
        x = x + 1   # one aten::add; the previous x dies between ops


def timed(setup):
    runs = []
    for _ in range(5):
        with setup() as ctx:
            t0 = time.perf_counter_ns()
            loop()
            runs.append(time.perf_counter_ns() - t0)
            if hasattr(ctx, "step"):
                ctx.step()
    return statistics.median(runs) / OPS / 1000.0


class Plain:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main():
    torch.set_num_threads(1)
    out = tempfile.mkdtemp(prefix="swapplan-overhead-")
    print("PyTorch %s, %d ops per run" % (torch.__version__, OPS))
    print("%-44s %8.2f us/op" % ("plain", timed(Plain)))
    print("%-44s %8.2f us/op" % ("empty TorchDispatchMode", timed(NullMode)))
    for live in (0, 1000, 10000):
        keep = [torch.ones(1) for _ in range(live)]
        path = os.path.join(out, "t.json.gz")
        label = "Recorder, %d other live storages" % live
        print("%-44s %8.2f us/op" % (label, timed(
            lambda: swapplan_recorder.Recorder(path))))
        label = "Recorder, %d live, no call sites" % live
        print("%-44s %8.2f us/op" % (label, timed(
            lambda: swapplan_recorder.Recorder(path, record_call_sites=False))))
        label = "Recorder, %d live, poll_every_op" % live
        print("%-44s %8.2f us/op" % (label, timed(
            lambda: swapplan_recorder.Recorder(path, poll_every_op=True))))
        del keep


if __name__ == "__main__":
    main()
