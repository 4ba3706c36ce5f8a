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
In Stable, a whole training step (DropoutLM of python/runtime_tests, 8 x 32
tokens, AdamW): the median step time of plain PyTorch, of SwapRuntime's
per-op clock (stable_clock="dispatch") and of its replay on saved-tensor
events (stable_clock="hooks"), once with a budget nothing exceeds (the
clock alone) and once with the issue's budget (the clock plus the policy's
copies); the difference over plain divided by the step's ATen ops and by
its saved tensors (each figure charges the whole difference to that unit).
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                "runtime_tests"))

from swapplan import _torch_compat as C  # noqa: E402
from swapplan.runtime import SwapRuntime  # noqa: E402
from swapplan.runtime import _hookclock as H  # noqa: E402

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


class ReplayHooks:
    """The saved-tensor clock's own hooks replaying a schedule of the loop
    with no action in it (_hookclock.py): its per-event cost alone."""

    def __init__(self, loop):
        self.clock = H.HookClock(H.HostCopies())
        self.clock.install()
        self.clock.begin_recording(lambda: 0)
        loop()
        self.schedule = self.clock.capture("k", True, 1 << 62)
        self.clock.uninstall()

    def __enter__(self):
        self.clock.install()
        self.clock.begin_hook_iteration(self.schedule)
        return self

    def __exit__(self, *exc):
        ok = self.clock.end_hook_iteration()
        self.clock.uninstall()
        assert ok, self.clock.last_rejection
        return False


def module_loop(module):
    x = torch.ones(1)
    for _ in range(OPS):
        module(x)


class _Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def step_units(make, step):
    """(ATen ops, saved tensors) of one training step."""
    model, opt = make()
    step(model, opt, 0)
    saved = [0]

    def pack(t):
        saved[0] += 1
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with _Count() as count:
            step(model, opt, 1)
    return count.ops, saved[0]


def step_times(make, step, steps, runtime_args):
    """Per step (wall ns, replayed on hooks?) of a run, under SwapRuntime
    when runtime_args is not None."""
    model, opt = make()
    rows = []
    rt = SwapRuntime(model=model, optimizer=opt, **runtime_args) if runtime_args else Plain()
    with rt:
        for i in range(steps):
            before = rt.stats["hook_iterations"] if runtime_args else 0
            t0 = time.perf_counter_ns()
            step(model, opt, i)
            dt = time.perf_counter_ns() - t0
            rows.append((dt, runtime_args is not None and
                         rt.stats["hook_iterations"] > before))
    return rows, (rt.stats if runtime_args else None)


def stable_rows(steps=40, repeats=5):
    """The Stable training-step rows (module docstring): each configuration
    run `repeats` times, interleaved; per run the median of its last
    steps/2 steps; printed: the median of the runs and their range."""
    from _measured import budget_of, lm_step, make_lm, measure_plain

    def step(model, opt, i):
        return lm_step(model, opt, i, 8)
    ops, saved = step_units(make_lm, step)
    _, peak, persistent = measure_plain(make_lm, step, 4)
    tight = budget_of(peak, persistent)
    print("Stable training step, DropoutLM 8 x 32: %d ATen ops, %d saved tensors per step; "
          "per run the median of the last %d of %d steps, %d runs" % (
              ops, saved, steps // 2, steps, repeats))
    configs = [("plain", None, None)] + [
        (what, budget, clock) for budget, what in ((1 << 30, "nothing exceeds"),
                                                   (tight, "issue's budget"))
        for clock in ("dispatch", "hooks")]
    out = []
    for extra in (0, 10000):
        keep = [torch.ones(1) for _ in range(extra)]
        times = {c: [] for c in configs}
        info = {}
        step_times(make_lm, step, steps, None)  # warm-up, not counted
        for _ in range(repeats):
            for c in configs:
                what, budget, clock = c
                args = None if clock is None else dict(
                    device_memory=budget, warmup_iterations=1, genpolicy_iterations=1,
                    stable_clock=clock, planner_args=["--min-tensor-bytes", "1KiB"])
                rows, stats = step_times(make_lm, step, steps, args)
                late = [t for t, hook in rows[steps // 2:] if hook == (clock == "hooks")]
                if late:
                    times[c].append(statistics.median(late))
                info[c] = stats
        plain = statistics.median(times[configs[0]])
        print("  %5d extra live: plain PyTorch %.2f ms per step (runs %.2f-%.2f)" % (
            extra, plain / 1e6, min(times[configs[0]]) / 1e6, max(times[configs[0]]) / 1e6))
        for c in configs[1:]:
            what, _, clock = c
            if not times[c]:
                print("    %-8s %-15s: no %s step in the second half (%s)" % (
                    clock, what, "replayed" if clock == "hooks" else "Stable",
                    info[c]["hook_last_rejection"]))
                continue
            t = statistics.median(times[c])
            d = (t - plain) / 1000.0
            lo, hi = (min(times[c]) - plain) / 1000.0, (max(times[c]) - plain) / 1000.0
            print("    %-8s %-15s: %.2f ms per step, %+.2f us per op (%+.2f..%+.2f), %+.2f us "
                  "per saved tensor; %d of %d steps replayed, %d swaps in them" % (
                      clock, what, t / 1e6, d / ops, lo / ops, hi / ops, d / saved,
                      info[c]["hook_iterations"], steps, info[c]["hook_swaps"]))
            out.append((extra, what, clock, d / ops, d / saved))
        del keep
    return out


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
    # Interleaved rounds (plain, identity, weak ref, the clock's replay):
    # run one after the other, drift in the machine's speed lands on all.
    for extra in (0, 10000):
        keep = [torch.ones(1) for _ in range(extra)]
        replay = ReplayHooks(saved_loop)
        setups = (("plain", Plain), ("identity", identity_hooks), ("weak ref", weakref_hooks),
                  ("clock", lambda: replay))
        times = {k: [] for k, _ in setups}
        for _ in range(7):
            for k, setup in setups:
                times[k].append(median_ns(setup, saved_loop, runs=1))
        base = statistics.median(times["plain"])
        if extra == 0:
            print("us per saved tensor (7 interleaved rounds x %d tanh, forward + backward), "
                  "over plain autograd (%.2f us per op pair)" % (SAVED, base / SAVED / 1000.0))
        for k, label in (("identity", "saved_tensors_hooks identity"),
                         ("weak ref", "saved_tensors_hooks weak ref"),
                         ("clock", "saved-tensor clock replaying")):
            print("  %-28s %5d extra live   +%.2f%s" % (
                label, extra, (statistics.median(times[k]) - base) / SAVED / 1000.0,
                "   (stable_clock='hooks' in Stable, no swap due)" if k == "clock" else ""))
        del keep
    m = torch.nn.Identity()
    bare = median_ns(Plain, lambda: module_loop(m))
    m.register_forward_pre_hook(lambda mod, inp: None)
    m.register_forward_hook(lambda mod, inp, out: None)
    hooked = median_ns(Plain, lambda: module_loop(m))
    print("us per module call: forward pre + post hooks   +%.2f" % ((hooked - bare) / OPS / 1000.0))
    stable_rows()
    return plain, null, rows


if __name__ == "__main__":
    main()
