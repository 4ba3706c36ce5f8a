"""allocator_check: the CPU allocator's own reports against the recorded
events, op by op."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import support


class AllocatorCheck(support.RecorderTestCase):
    def record_training(self, model, make_batch, steps=3):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)   # no momentum: no Python scalars

        def body(rec):
            for _ in range(steps):
                x, y = make_batch()
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x), y).backward()
                opt.step()
                rec.step()

        return self.record(body, model=model, optimizer=opt, allocator_check=True)

    def test_mlp_training_matches_the_allocator_after_every_op(self):
        model = nn.Sequential(nn.Linear(25, 64), nn.ReLU(), nn.Linear(64, 10))
        rec, tr = self.record_training(
            model, lambda: (torch.randn(16, 25), torch.randint(0, 10, (16,))))
        check = rec.summary["allocator_check"]
        self.assertEqual(check["ops"], rec.summary["ops"])
        self.assertEqual(check["ops_with_after_diff"], 0, check)
        summary = support.inspect_json(rec.path)
        self.assertEqual(summary["allocator_diff"]["num_ops_compared"], rec.summary["ops"])
        self.assertEqual(summary["allocator_diff"]["max_abs_bytes"], 0)
        self.assertTrue(all("allocator_bytes_in_use" in o for o in tr.ops(2)))

    def test_conv_training_matches_and_reports_kernel_workspaces(self):
        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(8, 8, 3), nn.ReLU(), nn.Flatten(),
                              nn.Linear(8 * 14 * 14, 10))
        rec, _ = self.record_training(
            model, lambda: (torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))))
        check = rec.summary["allocator_check"]
        self.assertEqual(check["max_abs_after_diff_bytes"], 0, check)
        # Convolutions use im2col-style buffers inside the kernel: real memory
        # no dispatcher-level recorder can see. The check measures it.
        self.assertGreater(check["max_in_kernel_hidden_bytes"], 0)
        self.assertRegex(check["max_in_kernel_hidden_at"], r"aten::convolution")

    def test_python_scalar_arguments_are_the_known_residual(self):
        """`a.mul_(0.5)`: Python wraps 0.5 into an 8-byte CPU tensor before
        dispatch and a dispatch mode sees a float; the allocator holds those
        8 bytes from before the op until after it."""

        def body(rec):
            a = torch.ones(10)          # op 0: 40 B
            a.mul_(0.5)                 # op 1
            b = a + a                   # op 2: 40 B
            rec.step()
            return a, b

        rec, tr = self.record(body, allocator_check=True)
        recorded_after = [40, 40, 80]
        allocator = [o["allocator_bytes_in_use"] for o in tr.ops()]
        self.assertEqual(allocator, [40 + 8, 40, 80])
        self.assertEqual(rec.summary["allocator_check"]["ops_with_after_diff"], 1)
        self.assertEqual(recorded_after[1:], allocator[1:])
