"""The traces the GPU training check plans from, recorded in a process of
their own on the device the rows run on.

    python3 bench/gpu_train/trace_phase.py SPEC.json

After `warmup` plain steps (AdamW's state exists, the allocator is warm):

1. swapplan's recorder records one step (swapplan.recorder.Recorder, the
   op clock the runtime matches policies on) into SPEC["trace"];
2. the same step is timed op by op (`timed_steps` steps, the median per
   op): CUDA events around each ATen op on a GPU, the wall clock on the
   CPU; the times go into the recorded trace as its ops' duration_ns (the
   recorder's own durations would be launch times on an asynchronous
   device). The timed ops must have the recorded ops' names, one for one;
3. torch.profiler records one more step with an execution trace and a
   Kineto trace with memory events (SPEC["et"], SPEC["kineto"]): the
   importer path users take (`swapplan import ET KINETO`). Where this
   PyTorch has no ExecutionTraceObserver the result says so.

The result (SPEC["result"], JSON) lists what was written and any error.
"""

import gzip
import json
import os
import statistics
import sys
import time
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import methods  # noqa: E402,F401  (puts python/ on sys.path)
import model as M  # noqa: E402
from swapplan.recorder import Recorder  # noqa: E402
from swapplan._torch_compat import schema_effects  # noqa: E402


class OpTimer(TorchDispatchMode):
    """Times every ATen op the recorder records (profiler:: ranges are
    instrumentation, skipped by both): per op its name and duration."""

    def __init__(self, cuda):
        super().__init__()
        self.cuda = cuda
        self.names = []
        self.marks = []
        self._skip = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        skip = self._skip.get(func)
        if skip is None:
            skip = self._skip[func] = schema_effects(func)[3]
        if skip:
            return func(*args, **kwargs)
        self.names.append(func._schema.name)
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = func(*args, **kwargs)
            end.record()
            self.marks.append((start, end))
        else:
            t0 = time.perf_counter_ns()
            out = func(*args, **kwargs)
            self.marks.append(time.perf_counter_ns() - t0)
        return out

    def durations_ns(self):
        if not self.cuda:
            return list(self.marks)
        torch.cuda.synchronize()
        return [int(s.elapsed_time(e) * 1e6) for s, e in self.marks]


def time_ops(model, opt, cfg, device, first_step, steps):
    """Op names and the median duration of each op over `steps` steps."""
    names, runs = None, []
    for k in range(steps):
        x, y = M.batch(cfg, first_step + k, device)
        timer = OpTimer(device != "cpu")
        with timer:
            M.step(model, opt, x, y)
        if names is not None and timer.names != names:
            raise RuntimeError("timed step %d ran another op sequence (%d ops, %d before)"
                               % (k, len(timer.names), len(names)))
        names = timer.names
        runs.append(timer.durations_ns())
    return names, [int(statistics.median(r[i] for r in runs)) for i in range(len(names))]


def merge_durations(trace_path, names, durations):
    """Writes `durations` into the recorded trace's single iteration, after
    checking that its ops are `names` one for one. Returns the op count."""
    with gzip.open(trace_path, "rt", encoding="utf-8") as f:
        trace = json.load(f)
    op_names = trace["op_names"]
    ops = trace["iterations"][-1]["ops"]
    recorded = [op_names[o["name"]] for o in ops]
    if recorded != names:
        first = next((i for i, (a, b) in enumerate(zip(recorded, names)) if a != b),
                     min(len(recorded), len(names)))
        raise RuntimeError("the timed step's ops differ from the recorded ones at op %d "
                           "(%d recorded, %d timed)" % (first, len(recorded), len(names)))
    for o, d in zip(ops, durations):
        o["duration_ns"] = max(1, d)
    tmp = trace_path + ".tmp"
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(trace, f, separators=(",", ":"))
    os.replace(tmp, trace_path)
    return len(ops)


def profile_step(model, opt, cfg, device, step_index, et_path, kineto_path):
    """One warm-up and one active profiler step with an execution trace."""
    from torch import profiler as P
    if not hasattr(P, "ExecutionTraceObserver"):
        raise RuntimeError("torch %s has no torch.profiler.ExecutionTraceObserver"
                           % torch.__version__)
    et = P.ExecutionTraceObserver().register_callback(et_path)
    batches = [M.batch(cfg, step_index + k, device) for k in range(2)]
    activities = [P.ProfilerActivity.CPU] + ([P.ProfilerActivity.CUDA] if device != "cpu" else [])
    with P.profile(activities=activities, profile_memory=True, record_shapes=True,
                   schedule=P.schedule(wait=0, warmup=1, active=1),
                   execution_trace_observer=et,
                   on_trace_ready=lambda p: p.export_chrome_trace(kineto_path)) as prof:
        for x, y in batches:
            M.step(model, opt, x, y)
            prof.step()
    try:
        et.unregister_callback()  # writes the file's end (the profiler may have)
    except RuntimeError:
        pass


def run(spec):
    cfg = M.SIZES[spec["size"]]
    device = spec["device"]
    result = {"status": "running"}
    t0 = time.perf_counter()
    try:
        M.deterministic()
        if device == "cpu":
            torch.set_num_threads(spec.get("threads", 1))
        model, opt = M.make(cfg, device)
        for i in range(spec["warmup"]):
            M.step(model, opt, *M.batch(cfg, i, device))
        i = spec["warmup"]
        x, y = M.batch(cfg, i, device)  # outside the recording, as in the rows
        with Recorder(spec["trace"], model=model, optimizer=opt, device=device,
                      model_name="GPT") as rec:
            M.step(model, opt, x, y)
            rec.step()
        result["recorder"] = rec.summary
        result["status"] = "ok"
        try:
            names, durations = time_ops(model, opt, cfg, device, i + 1, spec["timed_steps"])
            result["timed_ops"] = merge_durations(spec["trace"], names, durations)
            result["timed_op_total_ms"] = sum(durations) / 1e6
        except RuntimeError as e:
            # Planned all the same, on the recorded iteration's wall time
            # (the planners' Eq. 1): the predictions say so in the results.
            result["durations_error"] = str(e)
        try:
            profile_step(model, opt, cfg, device, i + 1 + spec["timed_steps"], spec["et"],
                         spec["kineto"])
            result["et"] = os.path.basename(spec["et"])
            result["kineto"] = os.path.basename(spec["kineto"])
        except Exception as e:  # noqa: BLE001 - the importer path is reported, not required
            result["et_error"] = "%s: %s" % (type(e).__name__, e)
    except Exception as e:  # noqa: BLE001
        result["status"] = "error"
        result["error"] = "%s: %s" % (type(e).__name__, e)
        result["traceback"] = traceback.format_exc()[-4000:]
    result["wall_s"] = time.perf_counter() - t0
    with open(spec["result"], "w") as f:
        json.dump(result, f, default=str)
    return result


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        run(json.load(f))
