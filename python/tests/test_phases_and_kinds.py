"""Phases from hooks, micro-batches, layer hints, and tensor kinds."""

import torch
import torch.nn.functional as F

import swapplan.recorder

from . import support


def mlp():
    # Linear(25, 4): weight 400 B, bias 16 B; Linear(4, 2): weight 32 B, bias 8 B.
    return torch.nn.Sequential(torch.nn.Linear(25, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


class Phases(support.RecorderTestCase):
    def test_training_step_then_validation(self):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def body(rec):
            x, y = torch.randn(10, 25), torch.randint(0, 2, (10,))
            loss = train_step(model, opt, x, y)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # after step: OTHER
            with torch.no_grad():
                val = model(x)                                       # validation: OTHER
            rec.step()
            return loss, val

        rec, tr = self.record(body, model=model, optimizer=opt)
        phases = [o["phase"] for o in tr.ops()]
        # Contiguous runs in order; nothing FORWARD/BACKWARD after OPTIMIZER.
        runs = [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p]
        self.assertEqual(runs, ["OTHER", "FORWARD", "BACKWARD", "OPTIMIZER", "OTHER"])
        names = tr.op_names()
        first_opt = phases.index("OPTIMIZER")
        # The 4-byte placeholder of the record_function range optimizer.step()
        # opens (1.13 only), then SGD without momentum: one in-place add_ per
        # parameter.
        expected = support.RECORD_FUNCTION_OPS + ["aten::add_"] * 4
        self.assertEqual(names[first_opt:first_opt + len(expected)], expected)
        # The validation forward (after clip_grad_norm_) runs the model under
        # no_grad: OTHER, yet with layer hints.
        last_addmm = len(names) - 1 - names[::-1].index("aten::addmm")
        self.assertEqual(phases[last_addmm], "OTHER")
        self.assertEqual(tr.ops()[last_addmm]["layer"], 2)
        self.assertEqual(rec.summary["phase_demoted_ops"], 0)

    def test_gradient_accumulation_gets_micro_batch_hints(self):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def body(rec):
            opt.zero_grad()
            for _ in range(3):
                x, y = torch.randn(10, 25), torch.randint(0, 2, (10,))
                F.cross_entropy(model(x), y).backward()
            opt.step()
            rec.step()

        rec, tr = self.record(body, model=model, optimizer=opt)
        seen = []
        for o in tr.ops():
            if o["phase"] in ("FORWARD", "BACKWARD"):
                key = (o["micro_batch"], o["phase"])
                if not seen or seen[-1] != key:
                    seen.append(key)
        self.assertEqual(seen, [(0, "FORWARD"), (0, "BACKWARD"), (1, "FORWARD"), (1, "BACKWARD"),
                                (2, "FORWARD"), (2, "BACKWARD")])

    def test_closure_optimizer_ops_are_demoted_not_invalid(self):
        model = mlp()
        opt = torch.optim.LBFGS(model.parameters(), max_iter=2)
        x, y = torch.randn(10, 25), torch.randint(0, 2, (10,))

        def body(rec):
            def closure():
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                return loss
            opt.step(closure)
            rec.step()

        rec, tr = self.record(body, model=model, optimizer=opt)
        phases = {o["phase"] for o in tr.ops()}
        self.assertNotIn("FORWARD", phases)  # the closure's forward runs inside step()
        self.assertGreater(rec.summary["phase_demoted_ops"], 0)  # its backward: OTHER

    def test_layer_hints_follow_top_level_units(self):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Linear(8, 8)
                self.blocks = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))
                self.head = torch.nn.Linear(8, 2)

            def forward(self, x):
                x = self.embed(x)
                for b in self.blocks:
                    x = torch.relu(b(x))
                return self.head(x)

        model = Net()

        def body(rec):
            model(torch.randn(4, 8)).sum().backward()
            rec.step()

        rec, tr = self.record(body, model=model)
        addmm_layers = [o["layer"] for o in tr.ops()
                        if o["name"] == "aten::addmm" and o["phase"] == "FORWARD"]
        self.assertEqual(addmm_layers, [0, 1, 2, 3, 4])   # embed, blocks.0-2, head
        relu_layers = [o.get("layer") for o in tr.ops() if o["name"] == "aten::relu"]
        self.assertEqual(relu_layers, [None] * 3)         # run by Net.forward itself
        attrs = tr.doc["metadata"]["attributes"]
        self.assertEqual([attrs["layer.%d" % i] for i in range(5)],
                         ["embed", "blocks.0", "blocks.1", "blocks.2", "head"])
        self.assertEqual(tr.doc["metadata"]["model_layers"], 3)  # the ModuleList


class CallSites(support.RecorderTestCase):
    def test_call_site_is_the_first_frame_outside_torch_and_the_recorder(self):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def body(rec):
            x, y = torch.randn(10, 25), torch.randint(0, 2, (10,))
            train_step(model, opt, x, y)
            rec.step()

        rec, tr = self.record(body, model=model, optimizer=opt)
        attrs = tr.doc["metadata"]["attributes"]
        sites = {int(k.split(".")[1]): v for k, v in attrs.items() if k.startswith("call_site.")}
        used = {o["stack_id"] for o in tr.ops()}
        self.assertEqual(used, set(sites))
        lines = {}
        for o in tr.ops():
            lines.setdefault(o["phase"], set()).add(sites[o["stack_id"]])
        # nn.Sequential / nn.Linear, autograd and torch.optim are skipped: every
        # op is attributed to a line of this file.
        for site in sites.values():
            self.assertRegex(site, r"test_phases_and_kinds\.py:\d+ \((body|train_step)\)")
        # The backward pass and the optimizer step each come from one line.
        self.assertEqual(len(lines["BACKWARD"]), 1)
        self.assertRegex(lines["BACKWARD"].pop(), r"\(train_step\)")
        self.assertEqual(len(lines["OPTIMIZER"]), 1)


class Kinds(support.RecorderTestCase):
    def test_optimizer_state_gradients_parameters_inputs(self):
        model = mlp()
        opt = torch.optim.Adam(model.parameters())

        def body(rec):
            for _ in range(2):
                x, y = torch.randn(10, 25), torch.randint(0, 2, (10,))
                train_step(model, opt, x, y)
                rec.step()

        rec, tr = self.record(body, model=model, optimizer=opt)
        params = ["0.weight", "0.bias", "2.weight", "2.bias"]
        sizes = [400, 16, 32, 8]
        for name, size in zip(params, sizes):
            self.assertEqual(tr.by_name(name)["kind"], "PARAMETER")
            self.assertEqual(tr.by_name(name)["size_bytes"], size)
            for state in ("exp_avg", "exp_avg_sq"):
                t = tr.by_name("%s.%s" % (name, state))
                self.assertEqual((t["kind"], t["size_bytes"]), ("OPTIMIZER_STATE", size))
                # Made by the first step, kept: ALLOC in iteration 0, no FREE.
                (op, kind), = tr.events_of(t["id"], iteration=0)
                self.assertEqual((tr.ops(0)[op]["phase"], kind), ("OPTIMIZER", "ALLOC"))
                self.assertEqual(tr.events_of(t["id"], iteration=1), [])
            step = tr.by_name("%s.step" % name)  # Adam's step counter tensor
            self.assertEqual(step["kind"], "OPTIMIZER_STATE")
        # set_to_none: each iteration's gradients are freed by the next
        # zero_grad; the last ones are alive at the end.
        grads = [t for t in tr.doc["tensors"] if t.get("name", "").endswith(".grad")]
        self.assertEqual(sorted(t["name"] for t in grads),
                         sorted(p + ".grad" for p in params for _ in range(2)))
        for t in grads:
            alloc = [(it, op) for it in (0, 1) for op, kind in tr.events_of(t["id"], it)
                     if kind == "ALLOC"]
            (it, op), = alloc
            self.assertEqual(tr.ops(it)[op]["phase"], "BACKWARD")
        inputs = [t for t in tr.doc["tensors"] if t["kind"] == "INPUT"]
        self.assertEqual(sorted(t["size_bytes"] for t in inputs), [80, 80, 1000, 1000])
        self.assertEqual(tr.kinds()["PARAMETER"], 4)

    def test_state_existing_before_recording_is_resident(self):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = torch.randn(10, 25), torch.randint(0, 2, (10,))
        train_step(model, opt, x, y)  # creates momentum buffers and .grad

        def body(rec):
            train_step(model, opt, x, y)
            rec.step()

        rec, tr = self.record(body, model=model, optimizer=opt)
        buf = tr.by_name("0.weight.momentum_buffer")
        self.assertEqual((buf["kind"], buf["size_bytes"]), ("OPTIMIZER_STATE", 400))
        self.assertEqual(tr.events_of(buf["id"]), [])     # resident, kept
        grads = [t for t in tr.doc["tensors"] if t.get("name") == "0.weight.grad"]
        # zero_grad(set_to_none=True) drops the old gradient. On 1.13 it is
        # resident from the start and freed after the recording's first op
        # (the 4-byte placeholder of zero_grad's record_function range); on
        # 2.x zero_grad runs no op, so it is gone before the first op and not
        # in the trace.
        if support.RECORD_FUNCTION_OPS:
            old_grad, new_grad = grads
            self.assertEqual(tr.op_names()[0], "aten::zeros")
            self.assertTrue(old_grad["persistent"])
            self.assertEqual(tr.events_of(old_grad["id"]), [(0, "FREE")])
        else:
            new_grad, = grads
            self.assertEqual(tr.op_names()[:2], ["aten::t", "aten::addmm"])  # the forward
        self.assertEqual([k for _, k in tr.events_of(new_grad["id"])], ["ALLOC"])
        x_t = [t for t in tr.doc["tensors"] if t["size_bytes"] == 1000]
        self.assertEqual([t["kind"] for t in x_t], ["INPUT"])  # pre-existing, read by forward

    def test_pause_and_untouched_tensors(self):
        model = mlp()
        table = torch.randn(50, 25)                   # 5000 B, never used

        def body(rec):
            with rec.pause():
                x = torch.randn(10, 25)               # not recorded
            model(x).sum().backward()
            rec.step()

        rec, tr = self.record(body, model=model)
        self.assertEqual(tr.op_names()[:2], ["aten::t", "aten::addmm"])
        x = [t for t in tr.doc["tensors"] if t["size_bytes"] == 1000]
        self.assertEqual(len(x), 1)
        # Made while paused: allocated, in the trace, at its first use.
        self.assertEqual(tr.events_of(x[0]["id"])[0], (1, "ALLOC"))
        self.assertEqual(x[0]["kind"], "INPUT")
        # Alive before and after, never touched: left out, counted aside.
        self.assertFalse(any(t["size_bytes"] == 5000 for t in tr.doc["tensors"]))
        self.assertGreaterEqual(rec.summary["untouched_resident_bytes"], 5000)
        del table

    def test_register(self):
        model = mlp()
        table = torch.randn(50, 25)                   # 5000 B, never used
        rec = swapplan.recorder.Recorder(self.path("t.json"), model=model)
        rec.register(table, "INPUT", "lookup table")
        with rec:
            model(torch.randn(10, 25)).sum().backward()
            rec.step()
        tr = support.TraceView(support.load_trace(rec.path))
        t = tr.by_name("lookup table")
        # Registered tensors stay in the trace even when untouched: resident
        # from before the first op, never freed.
        self.assertEqual((t["kind"], t["size_bytes"], t["persistent"]), ("INPUT", 5000, True))
        self.assertEqual(tr.events_of(t["id"]), [])
        with self.assertRaisesRegex(ValueError, "unknown tensor kind 'WEIGHT'"):
            rec.register(table, "WEIGHT")
        self.assert_valid_and_peak_matches(rec)


class Devices(support.RecorderTestCase):
    def test_tensors_on_other_devices_are_ignored(self):
        def body(rec):
            a = torch.ones(25)                       # cpu, 100 B
            m = torch.empty(25, device="meta")       # another device: not recorded
            b = a * 2
            n = m * 2
            rec.step()
            return a, b, n

        rec, tr = self.record(body)
        self.assertEqual(tr.op_names(), ["aten::ones", "aten::empty", "aten::mul", "aten::mul"])
        ops = tr.ops()
        self.assertNotIn("outputs", ops[1])
        self.assertEqual((ops[3].get("inputs"), ops[3].get("outputs")), (None, None))
        self.assertEqual(sorted(t["size_bytes"] for t in tr.doc["tensors"]), [100, 100])
        self.assertEqual(rec.peak_bytes, 200)


class Errors(support.RecorderTestCase):
    def test_path_must_be_json(self):
        with self.assertRaisesRegex(ValueError, r"must end in \.json or \.json\.gz, got "
                                                r"'x\.trace'"):
            swapplan.recorder.Recorder("x.trace")

    def test_exception_leaves_no_file_and_restores_hooks(self):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        backward, step = torch.autograd.backward, opt.step
        path = self.path("t.json")
        with self.assertRaisesRegex(RuntimeError, "boom"):
            with swapplan.recorder.Recorder(path, model=model, optimizer=opt):
                model(torch.randn(2, 25))
                raise RuntimeError("boom")
        self.assertFalse(__import__("os").path.exists(path))
        self.assertIs(torch.autograd.backward, backward)
        self.assertNotIn("step", opt.__dict__)
        self.assertEqual(opt.step, step)
        self.assertEqual(len(model._forward_pre_hooks), 0)

    def test_nothing_recorded(self):
        with self.assertRaisesRegex(RuntimeError, "no op was recorded; nothing written to"):
            with swapplan.recorder.Recorder(self.path("t.json")):
                pass

    def test_step_without_ops_warns_and_records_no_iteration(self):
        def body(rec):
            torch.ones(1)
            rec.step()
            with self.assertWarnsRegex(UserWarning, r"step\(\) with no op since the previous "
                                                    r"step; no iteration recorded"):
                rec.step()

        rec, tr = self.record(body)
        self.assertEqual(len(tr.iterations), 1)

    def test_recorder_is_single_use(self):
        rec = swapplan.recorder.Recorder(self.path("t.json"))
        with rec:
            torch.ones(1)
        with self.assertRaisesRegex(RuntimeError, "records once"):
            with rec:
                pass
        with self.assertRaisesRegex(RuntimeError, r"step\(\) outside the with-block"):
            rec.step()


class _Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.softmax(self.q(x), -1)


class _Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Sequential(_Attention()) for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x.sum()


class ModuleNames(support.RecorderTestCase):
    def run_stack(self, **options):
        model = _Stack()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def body(rec):
            x = torch.randn(4, 16)
            opt.zero_grad(set_to_none=True)
            model(x).backward()
            opt.step()
            rec.step()

        return self.record(body, model=model, optimizer=opt, **options)[1]

    def test_tensors_are_named_after_the_module_and_op_that_made_them(self):
        tr = self.run_stack()
        # Linear inside layers.1's attention: addmm [4,16] float32 = 4·16·4 = 256 B.
        for i in (0, 1):
            t = tr.by_name("layers.%d.0.q.addmm" % i)
            self.assertEqual((t["shape"], t["dtype"], t["size_bytes"], t["kind"]),
                             ([4, 16], "float32", 256, "ACTIVATION"))
            # softmax runs in the attention module itself (not in q).
            self.assertEqual(tr.by_name("layers.%d.0._softmax" % i)["shape"], [4, 16])
        # Parameters and gradients keep their parameter names.
        self.assertEqual(tr.by_name("layers.1.0.q.weight")["kind"], "PARAMETER")
        self.assertEqual(tr.by_name("layers.1.0.q.weight.grad")["kind"], "GRADIENT")
        # The root's own op (sum) and backward ops: outside any module, named
        # by the writer after the op and its position (iteration:op).
        self.assertEqual([t["kind"] for t in tr.doc["tensors"]
                          if t.get("name", "").startswith("aten::sum@0:")], ["ACTIVATION"])
        self.assertEqual(len([t for t in tr.doc["tensors"] if t.get("name", "").startswith(
            "aten::_softmax_backward_data@0:")]), 2)
        # Every tensor has a name.
        self.assertEqual([t["id"] for t in tr.doc["tensors"] if not t.get("name")], [])

    def test_module_names_off(self):
        tr = self.run_stack(record_module_names=False)
        names = [t.get("name", "") for t in tr.doc["tensors"]]
        self.assertIn("layers.1.0.q.weight", names)
        self.assertNotIn("layers.0.0.q.addmm", names)
        self.assertTrue(any(n.startswith("aten::addmm@0:") for n in names))
