"""Helpers shared by the recorder tests: recording into a temporary file,
reading traces back, and running the swapplan CLI on them."""

import gc
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

SOURCE_ROOT = os.environ.get(
    "SWAPPLAN_SOURCE_ROOT",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
for _p in (os.path.join(SOURCE_ROOT, "python"), os.path.join(SOURCE_ROOT, "examples")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import swapplan.recorder  # noqa: E402
from swapplan import _torch_compat as C  # noqa: E402

torch.set_num_threads(1)

# How the running PyTorch spells what the hand-worked tests count (1.13:
# Debian 12; 2.x: Debian 13, pip):
# - a record_function range (optimizer.step(), zero_grad()) opens with a
#   4-byte aten::zeros on 1.13, with no op on 2.x;
RECORD_FUNCTION_OPS = ["aten::zeros"] if C.record_function_placeholder() else []
# - AccumulateGrad storing a new gradient: two detaches on 1.13 and 2.6, one
#   on 2.13 (measured on the running torch, without the recorder);
ACCUMULATE_GRAD_OPS = C.accumulate_grad_ops()
# - a float32 nn.LSTM on CPU is one aten::mkldnn_rnn_layer per layer and
#   direction (and one backward) where the op exists and oneDNN is on (2.x),
#   else sigmoid / tanh gate ops per time step (1.13).
LSTM_FUSED = (hasattr(torch.ops.aten, "mkldnn_rnn_layer") and torch.backends.mkldnn.is_available()
              and torch.backends.mkldnn.enabled)


def import_example(name):
    """Imports examples/<name>.py; skips the test when it needs a package
    that is missing, unless SWAPPLAN_REQUIRE_TORCH=1 — except torchvision,
    required only under SWAPPLAN_REQUIRE_TORCHVISION=1: Debian has it beside
    its python3-torch (.ci/run's torch-distro stage sets that), pip has no
    CPU build of it (PyPI's needs a CUDA torch)."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError as e:
        required = "SWAPPLAN_REQUIRE_TORCHVISION" if e.name == "torchvision" \
            else "SWAPPLAN_REQUIRE_TORCH"
        if os.environ.get(required) == "1":
            raise
        raise unittest.SkipTest("example %s needs %s" % (name, e.name))


def swapplan_binary():
    path = os.environ.get("SWAPPLAN_BINARY") or os.path.join(SOURCE_ROOT, "build", "swapplan")
    if not os.path.exists(path):
        raise unittest.SkipTest("no swapplan binary at %s (set SWAPPLAN_BINARY)" % path)
    return path


def load_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def inspect_json(path):
    """`swapplan inspect --json` on a trace: validates it and returns the summary."""
    r = subprocess.run([swapplan_binary(), "inspect", "--json", path], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise AssertionError("swapplan inspect %s failed (exit %d): %s" % (path, r.returncode,
                                                                          r.stderr))
    return json.loads(r.stdout)


class TraceView:
    """A recorded trace, indexed for assertions."""

    def __init__(self, doc):
        self.doc = doc
        self.names = doc.get("op_names", [])
        self.tensors = {t["id"]: t for t in doc["tensors"]}
        self.iterations = doc["iterations"]

    def ops(self, iteration=0):
        out = []
        for o in self.iterations[iteration]["ops"]:
            name = o["name"] if isinstance(o["name"], str) else self.names[o["name"]]
            out.append(dict(o, name=name))
        return out

    def op_names(self, iteration=0):
        return [o["name"] for o in self.ops(iteration)]

    def events(self, iteration=0):
        """(op index, kind, tensor id) in file order."""
        return [(e["op"], e["kind"], e["tensor"])
                for e in self.iterations[iteration]["memory_events"]]

    def events_of(self, tensor, iteration=0):
        return [(op, kind) for op, kind, t in self.events(iteration) if t == tensor]

    def by_name(self, name):
        found = [t for t in self.doc["tensors"] if t.get("name") == name]
        if len(found) != 1:
            raise AssertionError("%d tensors named %r" % (len(found), name))
        return found[0]

    def kinds(self):
        out = {}
        for t in self.doc["tensors"]:
            out[t["kind"]] = out.get(t["kind"], 0) + 1
        return out


class RecorderTestCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="swapplan-recorder-test-")
        self.addCleanup(self._tmp.cleanup)
        torch.manual_seed(0)
        gc.collect()

    def path(self, name):
        return os.path.join(self._tmp.name, name)

    def record(self, body, name="trace.json", **options):
        """Runs body(rec) under a Recorder; returns (recorder, TraceView).
        Whatever body returns stays alive until the recording has ended. The
        trace must pass swapplan's validation with the recorder's own peak."""
        options.setdefault("record_addresses", False)
        path = self.path(name)
        with swapplan.recorder.Recorder(path, **options) as rec:
            kept = body(rec)
        del kept
        self.assert_valid_and_peak_matches(rec)
        return rec, TraceView(load_trace(path))

    def assert_valid_and_peak_matches(self, rec):
        """swapplan accepts the trace and rebuilds the recorder's own peak."""
        summary = inspect_json(rec.path)
        self.assertEqual(summary["peak_unswapped_bytes"], rec.peak_bytes,
                         "recorder peak vs rebuilt curve peak for %s" % rec.path)
        return summary
