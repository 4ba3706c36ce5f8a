"""The examples in examples/, run with tiny sizes: each must produce a trace
that swapplan accepts and whose rebuilt peak is the recorder's own."""

import contextlib
import io

from . import support

import bilstm                   # noqa: E402  (examples/, on sys.path via support)
import gpt2_small               # noqa: E402
import llama_small              # noqa: E402
import loss_scale_validation    # noqa: E402


class Examples(support.RecorderTestCase):
    def run_example(self, module, *args):
        out = self.path(module.__name__ + ".json.gz")
        with contextlib.redirect_stdout(io.StringIO()):
            summary = module.main(["--out", out] + list(args))
        doc = support.load_trace(out)
        inspected = support.inspect_json(out)
        self.assertEqual(inspected["peak_unswapped_bytes"], summary["peak_bytes"])
        self.assertEqual(inspected["num_ops"], summary["ops"])
        return summary, support.TraceView(doc), inspected

    def assert_training_kinds(self, tr):
        for kind in ("PARAMETER", "GRADIENT", "OPTIMIZER_STATE", "ACTIVATION", "INPUT"):
            self.assertIn(kind, tr.kinds())

    def test_gpt2_small(self):
        summary, tr, inspected = self.run_example(
            gpt2_small, "--vocab", "64", "--context", "16", "--d-model", "32", "--heads", "2",
            "--layers", "2", "--batch", "2")
        md = tr.doc["metadata"]
        self.assertEqual((md["model_name"], md["model_layers"], md["device_name"]),
                         ("gpt2-small", 2, "cpu"))
        self.assertTrue(md["framework"].startswith("pytorch "))
        self.assertEqual(inspected["num_iterations"], 2)
        names = set(tr.op_names(1))
        self.assertTrue({"aten::_softmax", "aten::native_layer_norm", "aten::gelu",
                         "aten::embedding"} <= names)
        self.assert_training_kinds(tr)
        # Tied head: the embedding matrix is one parameter (64 x 32 floats).
        self.assertEqual(tr.by_name("wte.weight")["size_bytes"], 64 * 32 * 4)

    def test_llama_small(self):
        _, tr, _ = self.run_example(
            llama_small, "--vocab", "64", "--context", "16", "--dim", "32", "--heads", "4",
            "--kv-heads", "2", "--layers", "2", "--hidden", "64", "--batch", "2")
        names = tr.op_names(1)
        # RMSNorm, SwiGLU.
        self.assertTrue({"aten::rsqrt", "aten::silu", "aten::silu_backward"} <= set(names))
        # Grouped-query attention repeats keys and values (2 layers x k, v):
        # repeat_interleave is repeat_interleave + index_select on 1.13,
        # unsqueeze, expand, clone, view on 2.x.
        forms = [["aten::repeat_interleave", "aten::index_select"],
                 ["aten::unsqueeze", "aten::expand", "aten::clone", "aten::view"]]
        counts = [sum(names[i:i + len(f)] == f for i in range(len(names))) for f in forms]
        self.assertIn(4, counts, counts)
        self.assertEqual(tr.doc["metadata"]["model_layers"], 2)
        self.assert_training_kinds(tr)

    def test_resnet18(self):
        resnet18 = support.import_example("resnet18")   # needs torchvision
        _, tr, _ = self.run_example(resnet18, "--batch", "2", "--image", "32")
        names = set(tr.op_names(1))
        self.assertTrue({"aten::convolution", "aten::native_batch_norm",
                         "aten::max_pool2d_with_indices", "aten::convolution_backward"} <= names)
        params = [t for t in tr.doc["tensors"] if t["kind"] == "PARAMETER"]
        self.assertEqual(len(params), 62)      # torchvision's resnet18
        buffers = [t for t in tr.doc["tensors"] if t.get("name", "").endswith("momentum_buffer")]
        self.assertEqual(len(buffers), 62)
        self.assert_training_kinds(tr)

    def test_bilstm(self):
        _, tr, _ = self.run_example(
            bilstm, "--vocab", "50", "--embed", "8", "--hidden", "8", "--sequence", "5",
            "--batch", "2")
        names = tr.op_names(1)
        if support.LSTM_FUSED:
            # One oneDNN op per layer and direction, forward and backward.
            self.assertEqual(names.count("aten::mkldnn_rnn_layer"), 2 * 2)
            self.assertEqual(names.count("aten::mkldnn_rnn_layer_backward"), 2 * 2)
        else:
            # The recurrence: sigmoid gates per time step, direction and layer.
            self.assertEqual(names.count("aten::sigmoid_"), 3 * 5 * 2 * 2)
        self.assert_training_kinds(tr)

    def test_loss_scale_skip_and_validation(self):
        summary, tr, _ = self.run_example(
            loss_scale_validation, "--batch", "2", "--image", "8", "--channels", "4")
        self.assertEqual(summary["skipped_steps"], [0])
        self.assertEqual(summary["validated_steps"], [1, 3])
        attrs = tr.doc["metadata"]["attributes"]
        self.assertEqual((attrs["skipped_steps"], attrs["validated_steps"]), ("0", "1,3"))
        for it in range(4):
            phases = [o["phase"] for o in tr.ops(it)]
            self.assertEqual("OPTIMIZER" in phases, it != 0, "iteration %d" % it)
            # Two micro-batches of forward + backward.
            self.assertEqual(sorted({o["micro_batch"] for o in tr.ops(it) if "micro_batch" in o}),
                             [0, 1])
            # Validation: convolutions after the optimizer, under no_grad.
            late_convs = [o for o in tr.ops(it) if o["name"] == "aten::convolution" and
                          o["phase"] == "OTHER"]
            self.assertEqual(bool(late_convs), it in (1, 3), "iteration %d" % it)
