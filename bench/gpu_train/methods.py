"""How each row of the GPU training check keeps activations under a budget.

    method = open_method(spec, model, opt, "cuda")   # spec["method"] names it
    with method:                                     # the whole training loop
        loss = step(model, opt, x, y, method.forward)
    method.counts()                                  # swaps, stalls, ... (or {})

Methods: "reference" (nothing), "runtime" (swapplan's SwapRuntime running
spec["policy"], or no policy: the runtime's own overhead), "save_on_cpu"
(torch.autograd.graph.save_on_cpu(pin_memory=True) around the forward),
"checkpoint" (torch.utils.checkpoint around every block, non-reentrant, the
RNG state restored), "torchtune" (torchtune.training.OffloadActivations
around the forward, as its recipes use it) and "te" (TransformerEngine's CPU
offload: only reported as installed or not). A method that cannot run here
raises RowError with the reason; the driver reports it in the row.
"""

import os
import sys

import torch

_PYTHON = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "python"))
if _PYTHON not in sys.path:
    sys.path.insert(0, _PYTHON)


class RowError(Exception):
    """This row cannot run here; the message says why."""


class _Method:
    forward = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def counts(self):
        return {}


class Reference(_Method):
    pass


class Runtime(_Method):
    """SwapRuntime around the loop. On CUDA it is asked for device="cuda";
    a runtime without that path refuses, and the row says so."""

    def __init__(self, spec, model, opt, device):
        try:
            from swapplan.runtime import SwapRuntime
        except ImportError as e:
            raise RowError("swapplan.runtime does not import: %s" % e)
        kw = dict(device_memory=spec["runtime_budget_bytes"], model=model, optimizer=opt,
                  provider=None, on_oom="count")
        for key in ("h2d_bandwidth", "d2h_bandwidth", "copy_latency"):
            if spec.get(key):
                kw[key] = spec[key]
        if device != "cpu":
            kw["device"] = device
        try:
            self.rt = SwapRuntime(spec.get("policy"), **kw)
        except (TypeError, ValueError) as e:
            raise RowError("SwapRuntime(..., device=%r) refused: %s: %s"
                           % (device, type(e).__name__, e))

    def __enter__(self):
        try:
            self.rt.__enter__()
        except Exception as e:  # noqa: BLE001 - the row reports it
            raise RowError("SwapRuntime did not start: %s: %s" % (type(e).__name__, e))
        return self

    def __exit__(self, *exc):
        return self.rt.__exit__(*exc)

    def counts(self):
        s = self.rt.stats or {}
        keys = ("swaps", "policy_swaps", "passive_swaps", "stalls", "stall_ms", "ooms",
                "bytes_moved", "use_while_off_device", "peak_device_bytes",
                "device_budget_bytes", "policy_drops", "policy_recomputes",
                "recompute_fallbacks_to_swap", "iterations")
        return {"runtime_" + k: s.get(k) for k in keys}


class SaveOnCpu(_Method):
    def __init__(self):
        self._ctx = torch.autograd.graph.save_on_cpu

    def forward(self, model, x):
        with self._ctx(pin_memory=True):
            return model(x)


class Checkpoint(_Method):
    """Every block's forward through torch.utils.checkpoint (recomputed in
    the backward; preserve_rng_state restores the RNG for the re-run)."""

    def __init__(self, model):
        from torch.utils.checkpoint import checkpoint
        for block in model.blocks:
            inner = block.forward
            block.forward = (lambda x, inner=inner: checkpoint(
                inner, x, use_reentrant=False, preserve_rng_state=True))


class Torchtune(_Method):
    def __init__(self, device):
        try:
            from torchtune.training import OffloadActivations
        except Exception as e:  # noqa: BLE001 - ImportError, or its imports' errors
            raise RowError("torchtune does not import: %s: %s" % (type(e).__name__, e))
        try:
            self._ctx = OffloadActivations(use_streams=device != "cpu")
        except Exception as e:  # noqa: BLE001
            raise RowError("OffloadActivations refused: %s: %s" % (type(e).__name__, e))

    def forward(self, model, x):
        with self._ctx:
            return model(x)


def _transformer_engine():
    try:
        import transformer_engine.pytorch  # noqa: F401
    except Exception as e:  # noqa: BLE001
        raise RowError("TransformerEngine is not installed (transformer-engine-torch has no "
                       "wheel; it builds its extension against the local torch): %s: %s"
                       % (type(e).__name__, e))
    raise RowError("transformer_engine.pytorch imports, but its CPU offload "
                   "(get_cpu_offload_context) works on TransformerEngine's own layers; this "
                   "driver's model is plain torch.nn and is not converted")


def open_method(spec, model, opt, device):
    kind = spec["method"]
    if kind == "reference":
        return Reference()
    if kind == "runtime":
        return Runtime(spec, model, opt, device)
    if kind == "save_on_cpu":
        return SaveOnCpu()
    if kind == "checkpoint":
        return Checkpoint(model)
    if kind == "torchtune":
        return Torchtune(device)
    if kind == "te":
        _transformer_engine()
    raise ValueError("unknown method %r" % (kind,))
