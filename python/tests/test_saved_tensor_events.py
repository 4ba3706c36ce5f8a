"""record_saved_tensors=True: autograd's saved-tensor events in the trace
(docs/trace-format.md "Saved-tensor events"), hand-worked on one Tanh.

    x (10, 25) float32: 1000 B; y = tanh(x) saves its output y for backward.
"""

import unittest

import torch

from swapplan import _torch_compat as C

from . import support

TORCH_2 = C.torch_version() >= (2, 0)


class SavedTensorEvents(support.RecorderTestCase):
    @unittest.skipUnless(TORCH_2, "needs PyTorch >= 2.0")
    def test_tanh_saves_its_output_and_backward_unpacks_it(self):
        def body(rec):
            x = torch.randn(10, 25, requires_grad=True)   # op 0
            y = torch.tanh(x)                              # op 1; packs y after it
            y.sum().backward()                             # unpacks y in tanh_backward
            rec.step()
            return x, y

        rec, tr = self.record(body, record_call_sites=False, record_saved_tensors=True)
        names = tr.op_names()
        saved = tr.iterations[0]["saved_tensor_events"]
        self.assertEqual([e["kind"] for e in saved], ["PACK", "UNPACK"])
        y = tr.doc["iterations"][0]["ops"][names.index("aten::tanh")]["outputs"][0]
        self.assertEqual([e.get("tensor") for e in saved], [y, y])
        # Packed after tanh ran (its output exists); unpacked before
        # tanh_backward runs, and before the aten::detach autograd makes of
        # an unpacked output when hooks are installed (not in a plain run).
        self.assertEqual(saved[0]["position"], names.index("aten::tanh") + 1)
        self.assertEqual(names[saved[1]["position"]:names.index("aten::tanh_backward") + 1],
                         ["aten::detach", "aten::tanh_backward"])

    @unittest.skipUnless(TORCH_2, "needs PyTorch >= 2.0")
    def test_off_by_default(self):
        def body(rec):
            x = torch.randn(4, requires_grad=True)
            torch.tanh(x).sum().backward()
            rec.step()
            return x

        _, tr = self.record(body, record_call_sites=False)
        self.assertNotIn("saved_tensor_events", tr.iterations[0])

    @unittest.skipIf(TORCH_2, "torch 1.13 only")
    def test_refused_on_torch_1_13(self):
        with self.assertRaisesRegex(ValueError, "needs PyTorch >= 2.0"):
            support.swapplan.recorder.Recorder(self.path("t.json"), record_saved_tensors=True)


if __name__ == "__main__":
    unittest.main()
