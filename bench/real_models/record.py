"""The two recordings of the same training steps of a corpus model:
torch.profiler (ExecutionTraceObserver + Kineto with memory, shapes and
stacks) and swapplan's own recorder. Each starts from a freshly built model
with the same seed and the same batches, so both see the same steps.

    import models, record
    losses = record.with_profiler(lambda: models.build("gpt2"), 3, "gpt2_et.json", "gpt2_kineto.json")
    losses, summary = record.with_recorder(lambda: models.build("gpt2"), 3, "gpt2.json.gz")
"""

import os
import sys

_PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "..", "python"))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

import torch  # noqa: E402
from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule  # noqa: E402


def with_profiler(make_spec, steps, et_path, kineto_path):
    """Runs `steps` training steps under torch.profiler with an execution
    trace observer; writes the ET JSON and the Kineto Chrome trace. Returns
    the losses."""
    spec = make_spec()
    spec.prepare(steps)
    et = ExecutionTraceObserver().register_callback(et_path)
    losses = []
    # A schedule makes the profiler mark each step (ProfilerStep#N); all
    # `steps` are active, the first one included.
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True, execution_trace_observer=et,
                 schedule=schedule(wait=0, warmup=0, active=steps, repeat=1)) as prof:
        for s in range(steps):
            losses.append(spec.train_step(s))
            prof.step()
    prof.export_chrome_trace(kineto_path)
    et.unregister_callback()
    return losses


def with_recorder(make_spec, steps, path, **options):
    """Runs the same steps under swapplan.recorder; returns (losses, summary)."""
    import swapplan.recorder
    spec = make_spec()
    spec.prepare(steps)
    losses = []
    with swapplan.recorder.Recorder(path, model=spec.model, optimizer=spec.optimizer,
                                    model_name=spec.name, attributes=dict(spec.config),
                                    **options) as rec:
        for s in range(steps):
            losses.append(spec.train_step(s))
            rec.step()
    return losses, rec.summary
