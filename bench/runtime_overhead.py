"""Per-op cost of the PyTorch integration of the runtime shim
(swapplan.runtime.SwapRuntime) and of the hooks a cheaper op clock could use,
measured like bench/recorder_overhead.py.

    .venv/bin/python bench/runtime_overhead.py      # torch 2.x
    /usr/bin/python3 bench/runtime_overhead.py      # Debian's torch 1.13

Statistic. This 2-core box is shared and drifts (the same code measured
2x apart on two days), and interference only ever adds time, so each
figure is the difference of *minimums* over interleaved runs (what timeit
reports; the configurations of a row run one after the other, round after
round, so drift lands on all of them), with the difference of medians
beside it. Every figure is also stated as a fraction of plain PyTorch's own
per-op time measured in the same run, which carries over between machines
of this kind far better than microseconds do (docs/runtime-torch.md).

Per ATen op (a loop of one-element adds: the kernel costs almost nothing, so
the time is dispatch plus the hook), microseconds, with 0 and with 10,000
extra live storages (a hook must not grow with them):
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
tokens, AdamW): the step time (minimum and median) of plain PyTorch, of SwapRuntime's
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
SAVED = 2000


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


# The plain per-op time of the machine the issue's targets were set on
# (bench/runtime_overhead.py's one-element add there: 3.9 us): a figure
# divided by this run's plain per-op time and multiplied by it is that
# figure scaled to the issue's machine.
ISSUE_PLAIN_OP_US = 3.9


def run_ns(setup, body):
    with setup():
        t0 = time.perf_counter_ns()
        body()
        return time.perf_counter_ns() - t0


def median_ns(setup, body, runs=5):
    return statistics.median(run_ns(setup, body) for _ in range(runs))


def interleaved(setups, body, rounds):
    """name -> ns of each round; per round every setup runs once, in order."""
    times = {k: [] for k, _ in setups}
    for _ in range(rounds):
        for k, setup in setups:
            times[k].append(run_ns(setup, body))
    return times


def added_us(times, k, base, units):
    """(min-based, median-based) microseconds that `k` adds over `base` per unit."""
    return ((min(times[k]) - min(times[base])) / units / 1000.0,
            (statistics.median(times[k]) - statistics.median(times[base])) / units / 1000.0)


def scaled(us, plain_op_us):
    """`us` on the issue's machine, scaled by the plain per-op time."""
    return us / plain_op_us * ISSUE_PLAIN_OP_US


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


def stable_rows(plain_op_us, steps=40, repeats=5):
    """The Stable training-step rows (module docstring): each configuration
    run `repeats` times, interleaved; the samples are the last steps/2 steps
    of every run (those on the clock being measured); printed: the
    difference of minimums and of medians over plain, per ATen op and per
    saved tensor, and the range of the runs' medians."""
    from _measured import budget_of, lm_step, make_lm, measure_plain

    def step(model, opt, i):
        return lm_step(model, opt, i, 8)
    ops, saved = step_units(make_lm, step)
    _, peak, persistent = measure_plain(make_lm, step, 4)
    tight = budget_of(peak, persistent)
    print("Stable training step, DropoutLM 8 x 32: %d ATen ops, %d saved tensors per step; "
          "samples: the last %d of %d steps of %d interleaved runs" % (
              ops, saved, steps // 2, steps, repeats))
    configs = [("plain", None, None)] + [
        (what, budget, clock) for budget, what in ((1 << 30, "nothing exceeds"),
                                                   (tight, "issue's budget"))
        for clock in ("dispatch", "hooks")]
    out = []
    for extra in (0, 10000):
        keep = [torch.ones(1) for _ in range(extra)]
        samples = {c: [] for c in configs}
        run_medians = {c: [] for c in configs}
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
                    samples[c].extend(late)
                    run_medians[c].append(statistics.median(late))
                info[c] = stats
        base = configs[0]
        print("  %5d extra live: plain PyTorch %.2f ms per step min, %.2f median" % (
            extra, min(samples[base]) / 1e6, statistics.median(samples[base]) / 1e6))
        for c in configs[1:]:
            what, _, clock = c
            if not samples[c]:
                print("    %-8s %-15s: no %s step in the second half (%s)" % (
                    clock, what, "replayed" if clock == "hooks" else "Stable",
                    info[c]["hook_last_rejection"]))
                continue
            d_min, d_med = added_us(samples, c, base, 1)
            lo = (min(run_medians[c]) - statistics.median(samples[base])) / 1000.0
            hi = (max(run_medians[c]) - statistics.median(samples[base])) / 1000.0
            print("    %-8s %-15s: %.2f ms per step min; per op %+.2f us min-based "
                  "(= %+.2f at the issue's plain op), %+.2f median-based (runs %+.2f..%+.2f); "
                  "per saved tensor %+.2f min-based; %d of %d steps replayed, %d swaps in them" % (
                      clock, what, min(samples[c]) / 1e6, d_min / ops,
                      scaled(d_min / ops, plain_op_us), d_med / ops, lo / ops, hi / ops,
                      d_min / saved, info[c]["hook_iterations"], steps, info[c]["hook_swaps"]))
            out.append((extra, what, clock, d_min / ops, d_min / saved))
        del keep
    return out


def main():
    torch.set_num_threads(1)
    print("torch %s" % torch.__version__)
    print("us per ATen op (%d one-element adds, 7 interleaved rounds; min-based, "
          "median-based in parentheses)" % OPS)
    rows = []
    plain_op_us = None
    for extra in (0, 10000):
        keep = [torch.ones(1) for _ in range(extra)]
        setups = [("plain", Plain), ("null", NullMode)] + [
            (predict, lambda p=predict: SwapRuntime(
                device_memory="1GiB", provider=None, timed_copies=False,
                predict_allocations=p)) for predict in (True, False)]
        times = interleaved(setups, op_loop, 7)
        plain = min(times["plain"]) / OPS / 1000.0
        if extra == 0:
            plain_op_us = plain
            print("  plain PyTorch                         %6.2f   (%.2f)" % (
                plain, statistics.median(times["plain"]) / OPS / 1000.0))
            print("  empty TorchDispatchMode               %+6.2f   (%+.2f)" % added_us(
                times, "null", "plain", OPS))
        for predict in (True, False):
            a_min, a_med = added_us(times, predict, "plain", OPS)
            rows.append((extra, predict, a_min))
            print("  SwapRuntime per-op clock, %-13s %5d extra live %+6.2f   (%+.2f)"
                  % ("predicting," if predict else "no predict,", extra, a_min, a_med))
        del keep
    # Interleaved rounds (plain, identity, weak ref, the clock's replay).
    for extra in (0, 10000):
        keep = [torch.ones(1) for _ in range(extra)]
        replay = ReplayHooks(saved_loop)
        setups = (("plain", Plain), ("identity", identity_hooks), ("weak ref", weakref_hooks),
                  ("clock", lambda: replay))
        times = interleaved(setups, saved_loop, 41)
        if extra == 0:
            print("us per saved tensor (41 interleaved rounds x %d tanh, forward + backward), "
                  "over plain autograd (%.2f us per op pair); min-based, median-based in "
                  "parentheses, the min-based one at the issue's plain op" % (
                      SAVED, min(times["plain"]) / SAVED / 1000.0))
        for k, label in (("identity", "saved_tensors_hooks identity"),
                         ("weak ref", "saved_tensors_hooks weak ref"),
                         ("clock", "saved-tensor clock replaying")):
            a_min, a_med = added_us(times, k, "plain", SAVED)
            print("  %-28s %5d extra live   %+.2f (%+.2f) = %+.2f%s" % (
                label, extra, a_min, a_med, scaled(a_min, plain_op_us),
                "   (stable_clock='hooks' in Stable, no swap due)" if k == "clock" else ""))
        del keep
    m = torch.nn.Identity()
    bare = median_ns(Plain, lambda: module_loop(m))
    m.register_forward_pre_hook(lambda mod, inp: None)
    m.register_forward_hook(lambda mod, inp, out: None)
    hooked = median_ns(Plain, lambda: module_loop(m))
    print("us per module call: forward pre + post hooks   +%.2f" % ((hooked - bare) / OPS / 1000.0))
    stable_rows(plain_op_us)
    return plain_op_us, rows


if __name__ == "__main__":
    main()
