"""The recorded traces bundled in traces/ are valid, and swapplan rebuilds
the peak the recorder measured while recording them."""

import glob
import os

from . import support


class BundledTraces(support.RecorderTestCase):
    def test_recorded_traces_validate_and_match_the_recorder_peak(self):
        paths = sorted(glob.glob(os.path.join(support.SOURCE_ROOT, "traces", "*.json.gz")))
        recorded = []
        for path in paths:
            doc = support.load_trace(path)
            md = doc["metadata"]
            if md.get("recorder") != "swapplan_recorder":
                continue  # synthesized traces are checked by their own tests
            recorded.append(os.path.basename(path))
            with self.subTest(trace=os.path.basename(path)):
                summary = support.inspect_json(path)
                self.assertEqual(summary["peak_unswapped_bytes"],
                                 int(md["attributes"]["recorder.peak_during_op_bytes"]))
                self.assertEqual(md["attributes"]["recorder.unsignaled_frees"], "0")
                self.assertTrue(summary["has_op_durations"])
        self.assertEqual(recorded, ["bilstm.json.gz", "gpt2_small.json.gz", "llama_small.json.gz",
                                    "loss_scale_validation.json.gz", "resnet18.json.gz"])
