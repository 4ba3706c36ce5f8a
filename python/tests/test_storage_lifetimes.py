"""Storage identity and lifetime: hand-worked traces with round sizes.

float32 throughout: a (10, 25) tensor is 1000 bytes, (4, 25) 400 bytes,
(10, 4) 160 bytes, a scalar 4 bytes.
"""

import weakref

import torch

from . import support


class HandWorkedLinearStep(support.RecorderTestCase):
    def test_forward_backward_of_a_bias_free_linear(self):
        model = torch.nn.Linear(25, 4, bias=False)   # weight (4, 25): 400 B

        def body(rec):
            x = torch.randn(10, 25)                   # 1000 B
            y = model(x)                              # (10, 4): 160 B
            loss = y.sum()                            # 4 B
            del y
            loss.backward()
            rec.step()
            return x, loss

        rec, tr = self.record(body, model=model, record_call_sites=False)
        self.assertEqual(tr.op_names(), [
            "aten::randn",                                  # 0 x
            "aten::t", "aten::mm",                          # 1-2 linear: y = x @ W^T
            "aten::sum",                                    # 3 loss
            "aten::ones_like",                              # 4 gradient seed
            "aten::expand",                                 # 5 sum backward
            "aten::t", "aten::mm", "aten::t",               # 6-8 dW = (dy^T @ x)
            "aten::t"] + support.ACCUMULATE_GRAD_OPS)       # 9-10 (11) AccumulateGrad
        last = len(tr.ops()) - 1                            # 11 on 1.13 and 2.6, 10 on 2.13
        self.assertEqual([o["phase"] for o in tr.ops()],
                         ["OTHER"] + ["FORWARD"] * 3 + ["BACKWARD"] * (last - 3))
        w = tr.by_name("weight")
        x = tr.by_name("aten::randn@0:0")
        y = tr.by_name("aten::mm@0:2")
        loss = tr.by_name("aten::sum@0:3")
        seed = tr.by_name("aten::ones_like@0:4")
        grad = tr.by_name("weight.grad")
        self.assertEqual([t["size_bytes"] for t in (w, x, y, loss, seed, grad)],
                         [400, 1000, 160, 4, 4, 400])
        self.assertEqual([t["kind"] for t in (w, x, y, loss, seed, grad)],
                         ["PARAMETER", "INPUT", "ACTIVATION", "ACTIVATION", "GRADIENT",
                          "GRADIENT"])
        # y is not saved for backward (sum's backward needs only the shape), so
        # `del y` frees it right after the sum; the seed lives to the end of
        # backward; x, loss and the gradient are alive when the recording ends.
        self.assertEqual(tr.events(), [
            (0, "ALLOC", x["id"]), (2, "ALLOC", y["id"]), (3, "ALLOC", loss["id"]),
            (3, "FREE", y["id"]), (4, "ALLOC", seed["id"]), (7, "ALLOC", grad["id"]),
            (last, "FREE", seed["id"])])
        self.assertEqual(tr.events_of(w["id"]), [])  # resident throughout
        for t in (x, loss, grad):
            self.assertTrue(t["persistent"])         # never freed
        # Peak during op 7 (the weight-gradient mm):
        #   W 400 + x 1000 + loss 4 + seed 4 + dW 400 = 1808 B.
        self.assertEqual(rec.peak_bytes, 1808)
        self.assertEqual(rec.summary["peak_op"], (0, 7))


class SavedForBackward(support.RecorderTestCase):
    def test_saved_activation_outlives_python_references_until_its_backward_op(self):
        """The experiment behind the design: a Python finalizer on the output
        tensor fires at `del`, while autograd still holds the storage; the
        storage weak reference expires only after the backward op using it."""
        model = torch.nn.Linear(25, 4)
        finalized_at = []

        def body(rec):
            x = torch.randn(10, 25)
            h = torch.tanh(model(x))       # tanh saves its result for backward
            weakref.finalize(h, lambda: finalized_at.append(rec.recording.num_ops))
            loss = h.sum()
            del h                          # the Python tensor dies here ...
            self.assertEqual(len(finalized_at), 1)
            loss.backward()                # ... the storage after tanh_backward
            rec.step()

        rec, tr = self.record(body, model=model, record_call_sites=False)
        names = tr.op_names()
        tanh = tr.by_name("aten::tanh@0:%d" % names.index("aten::tanh"))
        tanh_backward = names.index("aten::tanh_backward")
        self.assertEqual(tanh["kind"], "ACTIVATION")
        self.assertEqual(tr.events_of(tanh["id"]), [(names.index("aten::tanh"), "ALLOC"),
                                                     (tanh_backward, "FREE")])
        # The finalizer ran during the forward pass, long before that free.
        self.assertLessEqual(finalized_at[0], names.index("aten::ones_like"))
        # addmm's output is not saved (tanh saves its own result): it dies as
        # soon as tanh has consumed it, in the forward pass.
        addmm = tr.by_name("aten::addmm@0:%d" % names.index("aten::addmm"))
        (free_op, kind), = [e for e in tr.events_of(addmm["id"]) if e[1] == "FREE"]
        self.assertLess(free_op, names.index("aten::sum"))


class ViewsAndInPlace(support.RecorderTestCase):
    def test_views_share_one_storage_sized_tensor(self):
        def body(rec):
            x = torch.randn(100)             # 400 B
            v = x.view(10, 10)
            t = v.t()
            s = x[10:20]                     # a 40-byte window of the same storage
            y = s * 2                        # new: 10 floats, 40 B
            del x, v, t                      # s still holds the storage
            z = y + 1                        # an op after the dels: no free yet
            del s                            # now the storage dies
            w = z * 3
            rec.step()
            return y, w

        rec, tr = self.record(body)
        names = tr.op_names()
        self.assertEqual(names, ["aten::randn", "aten::view", "aten::t", "aten::slice",
                                 "aten::mul", "aten::add", "aten::mul"])
        x = tr.by_name("aten::randn@0:0")
        self.assertEqual(x["size_bytes"], 400)
        ops = tr.ops()
        for i in (1, 2, 3, 4):  # view, t, slice read x's storage; mul reads the slice
            self.assertEqual(ops[i]["inputs"], [x["id"]])
        for i in (1, 2, 3):     # views create nothing
            self.assertNotIn("outputs", ops[i])
        self.assertEqual(tr.by_name("aten::mul@0:4")["size_bytes"], 40)
        # Freed after op 5 (the add dispatched while `s` was still alive).
        self.assertEqual(tr.events_of(x["id"]), [(0, "ALLOC"), (5, "FREE")])
        self.assertEqual(len(tr.tensors), 4)

    def test_in_place_out_and_resize(self):
        def body(rec):
            a = torch.ones(10)               # 40 B
            a.add_(a)                        # in place: read and written, no alloc
            c = torch.empty(0)               # no bytes: not a trace tensor
            torch.mul(a, a, out=c)           # out= resizes c's storage: 40 B allocated here
            d = torch.zeros(10)              # 40 B
            d.resize_(20)                    # d's storage grows 40 -> 80 B
            rec.step()
            return c, d

        rec, tr = self.record(body)
        self.assertEqual(tr.op_names(), ["aten::ones", "aten::add_", "aten::empty", "aten::mul",
                                         "aten::zeros", "aten::resize_"])
        ops = tr.ops()
        a = tr.by_name("aten::ones@0:0")
        self.assertEqual((ops[1]["inputs"], ops[1]["outputs"]), ([a["id"]], [a["id"]]))
        self.assertNotIn("outputs", ops[2])
        c = tr.by_name("aten::mul@0:3")
        self.assertEqual(c["size_bytes"], 40)
        self.assertEqual((ops[3]["inputs"], ops[3]["outputs"]), ([a["id"]], [c["id"]]))
        old_d = tr.by_name("aten::zeros@0:4")
        new_d = tr.by_name("aten::resize_@0:5")
        self.assertEqual((old_d["size_bytes"], new_d["size_bytes"]), (40, 80))
        self.assertEqual(tr.events_of(old_d["id"]), [(4, "ALLOC"), (5, "FREE")])
        self.assertEqual(tr.events_of(new_d["id"]), [(5, "ALLOC")])
        self.assertEqual(ops[5]["outputs"], [new_d["id"]])
        # During the resize both d allocations exist (it copies):
        #   a 40 + c 40 + old d 40 + new d 80 = 200 B.
        self.assertEqual(rec.peak_bytes, 200)

    def test_frees_between_iterations_go_to_the_last_op_before_them(self):
        def body(rec):
            x = torch.ones(25)               # 100 B
            y = x * 2                        # op 1
            rec.step()
            del x                            # freed after iteration 0's last op
            z = y + 1                        # iteration 1, op 0
            rec.step()
            return z

        rec, tr = self.record(body)
        x = tr.by_name("aten::ones@0:0")
        self.assertEqual(tr.events_of(x["id"], iteration=0), [(0, "ALLOC"), (1, "FREE")])
        self.assertEqual(tr.events_of(x["id"], iteration=1), [])
        self.assertEqual(len(tr.iterations), 2)
