"""End to end on the runtime: a policy `advise` chose, run back through the
runtime shim (CPU, host backend) on the same model and data, measured from
outside by an independent residency meter, and the runtime's record of that
run planned again.

    res = run_policy(lambda: models.build("gpt2"), 3, "policy.pb", budget, "exec.json.gz")
    res["losses"], res["meter_peak_bytes"], res["stats"]["policy_swaps"]
"""

import os
import sys

_PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "..", "python"))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)


def residency_meter():
    """swapplan.testing.residency.ResidencyMeter, or None when this tree
    does not have it yet."""
    try:
        from swapplan.testing.residency import ResidencyMeter
    except ImportError:
        return None
    return ResidencyMeter


def run_policy(make_spec, steps, policy, budget_bytes, record):
    """Trains `steps` steps with the runtime running `policy` every
    iteration at `budget_bytes`; returns losses, the meter's peak (None
    without a meter), the runtime's stats and per-iteration rows, or the
    exception text when the run failed."""
    from swapplan.runtime import SwapRuntime
    meter_cls = residency_meter()
    spec = make_spec()
    spec.prepare(steps)
    out = {"losses": [], "meter_peak_bytes": None, "error": None}
    meter = meter_cls(budget_bytes=budget_bytes) if meter_cls else None
    try:
        if meter is not None:
            meter.__enter__()
        try:
            with SwapRuntime(policy=policy, device_memory=budget_bytes, model=spec.model,
                             optimizer=spec.optimizer, record=record, provider=None,
                             on_oom="count") as rt:
                for s in range(steps):
                    out["losses"].append(spec.train_step(s))
        finally:
            if meter is not None:
                meter.__exit__(None, None, None)
    except Exception as e:  # reported in the table, not hidden
        out["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
        return out
    out["stats"] = rt.stats
    out["iterations"] = rt.iterations
    if meter is not None:
        out["meter_peak_bytes"] = meter.peak_bytes
    return out
