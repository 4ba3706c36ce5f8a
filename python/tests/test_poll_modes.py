"""Candidate checks (default) against checking every live storage before
every op (poll_every_op=True): the same events on real training loops, and
the one documented way they differ."""

import contextlib
import io
import unittest

import torch

from . import support

import bilstm                   # noqa: E402
import gpt2_small               # noqa: E402
import llama_small              # noqa: E402
import loss_scale_validation    # noqa: E402

TINY = {
    gpt2_small: ["--vocab", "64", "--context", "16", "--d-model", "32", "--heads", "2",
                 "--layers", "2", "--batch", "2"],
    llama_small: ["--vocab", "64", "--context", "16", "--dim", "32", "--heads", "4",
                  "--kv-heads", "2", "--layers", "2", "--hidden", "64", "--batch", "2"],
    bilstm: ["--vocab", "50", "--embed", "8", "--hidden", "8", "--sequence", "5", "--batch", "2"],
    loss_scale_validation: ["--batch", "2", "--image", "8", "--channels", "4"],
}


def comparable(doc):
    """Ops, tensors and events without what differs run to run (wall times,
    data pointers, call-site paths)."""
    out = []
    for it in doc["iterations"]:
        out.append(([(o["name"], o["phase"], o.get("inputs"), o.get("outputs"),
                      o.get("micro_batch"), o.get("layer")) for o in it["ops"]],
                    sorted((e["op"], e["kind"], e["tensor"]) for e in it["memory_events"])))
    tensors = [(t["id"], t["size_bytes"], t["kind"], t.get("persistent"), t.get("name"))
               for t in doc["tensors"]]
    return out, tensors


class PollModes(support.RecorderTestCase):
    def test_examples_record_identically_in_both_modes(self):
        examples = dict(TINY)
        try:
            examples[support.import_example("resnet18")] = ["--batch", "2", "--image", "32"]
        except unittest.SkipTest:  # no torchvision: the other examples still run
            pass
        for module, args in examples.items():
            with self.subTest(example=module.__name__):
                docs, summaries = [], []
                for exact in (False, True):
                    out = self.path("%s-%s.json" % (module.__name__, exact))
                    flags = ["--poll-every-op"] if exact else []
                    with contextlib.redirect_stdout(io.StringIO()):
                        summaries.append(module.main(["--out", out] + args + flags))
                    docs.append(support.load_trace(out))
                self.assertEqual(comparable(docs[0]), comparable(docs[1]))
                # Every free was signalled by a tensor object dying.
                self.assertEqual(summaries[0]["unsignaled_frees"], 0)
                self.assertEqual(summaries[0]["peak_bytes"], summaries[1]["peak_bytes"])

    def test_storage_held_only_by_a_storage_object_is_caught_late(self):
        def body(rec):
            t = torch.ones(25)           # op 0: 100 B
            s = support.C.untyped_storage(t)  # a storage object: no tensor
            del t                        # the tensor dies, the storage does not
            a = torch.zeros(1)           # op 1
            del s                        # the storage dies: no tensor signals it
            b = torch.zeros(1)           # op 2
            c = torch.zeros(1)           # op 3
            rec.step()
            return a, b, c

        results = {}
        for exact in (False, True):
            rec, tr = self.record(body, name="late-%s.json" % exact, poll_every_op=exact)
            t = tr.by_name("aten::ones@0:0")
            results[exact] = (tr.events_of(t["id"]), rec.summary["unsignaled_frees"])
        # Exact: freed after op 1. Default: found by the full check at step(),
        # attributed to the last op, and counted.
        self.assertEqual(results[True], ([(0, "ALLOC"), (1, "FREE")], 0))
        self.assertEqual(results[False], ([(0, "ALLOC"), (3, "FREE")], 1))
