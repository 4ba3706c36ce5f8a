"""swapplan.testing.residency.ResidencyMeter on worked values: views counted
once, dead storages dropped, a storage resized to 0 counting 0, tensors made
before the meter counted, the peak at the kernel (before a later free), a
violation named by op; and the same peak as a naive reference (a gc scan of
every tensor plus the autograd-saved ones) on a small training step."""

import os
import sys
import unittest
import warnings

SOURCE_ROOT = os.environ.get(
    "SWAPPLAN_SOURCE_ROOT",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "python"))

import torch  # noqa: E402

from swapplan import _torch_compat as C  # noqa: E402
from swapplan.testing.residency import ResidencyMeter  # noqa: E402

torch.set_num_threads(1)


class ResidencyMeterTest(unittest.TestCase):
    def test_worked_values(self):
        before = torch.ones(1000)  # 4000 bytes, made before the meter
        with ResidencyMeter(budget_bytes=10**9, include_existing=True) as meter:
            base = meter.resident_bytes()
            self.assertGreaterEqual(base, 4000)
            x = torch.ones(250)        # + 1000
            v = x.view(25, 10)         # a view: + 0
            self.assertEqual(meter.resident_bytes() - base, 1000)
            y = v * 2                  # + 1000
            self.assertEqual(meter.resident_bytes() - base, 2000)
            del x, v
            self.assertEqual(meter.resident_bytes() - base, 1000)  # x's storage is gone
            C.untyped_storage(y).resize_(0)  # freed as a runtime frees
            self.assertEqual(meter.resident_bytes() - base, 0)
            C.untyped_storage(y).resize_(1000)
            self.assertEqual(meter.resident_bytes() - base, 1000)
            before.add_(1)  # in place: + 0
            self.assertEqual(meter.resident_bytes() - base, 1000)
        del before, y

    def test_cpu_default_counts_a_tensor_from_its_first_use(self):
        old = torch.ones(2500)  # 10000 bytes, made before the meter
        with ResidencyMeter() as meter:
            self.assertEqual(meter.resident_bytes(), 0)
            y = old * 1                # old used: on the device, and y: 20000
            self.assertEqual(meter.resident_bytes(), 20000)
            del y
            self.assertEqual(meter.resident_bytes(), 10000)
        del old

    def test_peak_is_at_the_kernel_and_violations_name_the_op(self):
        with ResidencyMeter() as probe:
            base = probe.resident_bytes()
        # 4 MB made and dropped inside one expression: the peak sees it.
        budget = base + 6_000_000
        with ResidencyMeter(budget_bytes=budget, keep_samples=True) as meter:
            a = torch.zeros(1_000_000)          # 4 MB
            b = (a + 1).sum()                   # a + 1: 8 MB at the add's kernel
            del a, b
        self.assertGreaterEqual(meter.peak_bytes, base + 8_000_000)
        self.assertIn(meter.peak_op, ("aten::add", "aten::sum"))  # sum adds its 4 bytes
        self.assertGreaterEqual(meter.violation_count, 1)
        v = meter.violations[0]
        self.assertEqual((v.op, v.when), ("aten::add", "after"))
        self.assertTrue(any(s[1] == "aten::add" for s in meter.samples))

    def test_same_peak_as_a_naive_reference_on_a_training_step(self):
        # Reference: after every op, the distinct storages of every tensor the
        # gc sees plus every tensor autograd saved (kept in a list by a
        # saved-tensor hook so that they are gc-visible). Its sample comes
        # after the meter's (the meter is the outer mode's callee), so the two
        # are compared op by op on the "after" samples.
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                    torch.nn.Linear(64, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        saved = []

        def pack(t):
            saved.append(t)
            return t

        reference = []

        class Naive(torch.utils._python_dispatch.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                import gc
                seen, total = set(), 0
                for o in gc.get_objects() + saved + [out]:
                    ts = o if isinstance(o, (list, tuple)) else [o]
                    for t in ts:
                        if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                            try:
                                sid = C.storage_id(t)
                            except (RuntimeError, NotImplementedError):
                                continue
                            if sid not in seen:
                                seen.add(sid)
                                total += C.untyped_storage(t).nbytes()
                reference.append((meter.ops - 1, total))  # the meter's op index
                return out

        x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Naive entered inside the meter: intended here
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                with ResidencyMeter(keep_samples=True, include_existing=True) as meter, Naive():
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(model(x), y).backward()
                    opt.step()
        afters = [s[3] for s in meter.samples]
        # Torch 1.13 sends autograd's saved-variable detaches past the inner
        # mode: the reference sees a subset of the ops, aligned by index.
        self.assertGreater(len(reference), 40)
        # The naive scan sees everything gc sees; the meter only what it was
        # shown, so it can only be lower, and on this step it is equal at the
        # peak (every storage of a training step passes through an op).
        pairs = [(afters[i], r) for i, r in reference]
        self.assertTrue(all(a <= r for a, r in pairs), [p for p in pairs if p[0] > p[1]])
        self.assertEqual(max(a for a, _ in pairs), max(r for _, r in pairs))


if __name__ == "__main__":
    unittest.main()
