"""Per-op cost of swapplan.recorder, and how it grows with live storages.

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

import swapplan.recorder  # noqa: E402

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
            lambda: swapplan.recorder.Recorder(path))))
        label = "Recorder, %d live, no call sites" % live
        print("%-44s %8.2f us/op" % (label, timed(
            lambda: swapplan.recorder.Recorder(path, record_call_sites=False))))
        label = "Recorder, %d live, poll_every_op" % live
        print("%-44s %8.2f us/op" % (label, timed(
            lambda: swapplan.recorder.Recorder(path, poll_every_op=True))))
        del keep
    training_step_overhead(out)


def training_step_overhead(out):
    """Wall time of a real training step (examples/gpt2_small.py and
    examples/resnet18.py at their default sizes), plain and recorded."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "examples"))
    import torch.nn.functional as F
    import torchvision

    import gpt2_small

    def gpt():
        model = gpt2_small.GPT(512, 64, 128, 4, 4)
        opt = torch.optim.AdamW(model.parameters())

        def step():
            tokens = torch.randint(0, 512, (4, 65))
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(tokens[:, :-1]).reshape(-1, 512),
                            tokens[:, 1:].reshape(-1)).backward()
            opt.step()
        return model, opt, step

    def resnet():
        model = torchvision.models.resnet18(num_classes=10)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step():
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(torch.randn(8, 3, 64, 64)),
                            torch.randint(0, 10, (8,))).backward()
            opt.step()
        return model, opt, step

    for name, make in (("gpt2_small", gpt), ("resnet18", resnet)):
        model, opt, step = make()
        for _ in range(2):
            step()  # warm up, create optimizer state
        plain = []
        for _ in range(5):
            t0 = time.perf_counter_ns()
            step()
            plain.append(time.perf_counter_ns() - t0)
        recorded = []
        path = os.path.join(out, name + ".json.gz")
        with swapplan.recorder.Recorder(path, model=model, optimizer=opt) as rec:
            for _ in range(5):
                t0 = time.perf_counter_ns()
                step()
                recorded.append(time.perf_counter_ns() - t0)
                rec.step()
        ops = rec.summary["ops"] // 5
        print("%-12s training step: plain %7.1f ms, recorded %7.1f ms (%d ops)" % (
            name, statistics.median(plain) / 1e6, statistics.median(recorded) / 1e6, ops))


if __name__ == "__main__":
    main()
