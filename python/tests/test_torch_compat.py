"""swapplan._torch_compat on the running PyTorch: every version difference it
holds answers the same way on 1.13 (Debian 12), 2.6 (Debian 13) and 2.13
(pip). Runs in the recorder suite of each torch point (README, "Tests and
CI")."""

import gc
import os
import unittest
from unittest import mock

import torch

from . import support  # noqa: F401  (puts python/ first on sys.path)
from swapplan import _torch_compat as C

try:
    from hypothesis import given, settings, strategies as st
except ImportError:  # Debian's python3 without python3-hypothesis
    given = None


class TorchVersionTest(unittest.TestCase):
    def test_parses_release_local_and_prerelease_spellings(self):
        self.assertEqual(C.torch_version("2.13.0+cpu"), (2, 13))
        self.assertEqual(C.torch_version("1.13.1"), (1, 13))
        self.assertEqual(C.torch_version("2.6.0a0+gitabc"), (2, 6))
        self.assertEqual(C.torch_version("2.7.0rc1"), (2, 7))

    def test_running_torch_is_supported(self):
        self.assertGreaterEqual(C.torch_version(), C.OLDEST_TORCH, torch.__version__)

    if given is not None:
        @settings(max_examples=50, database=None, deadline=None)
        @given(st.integers(1, 9), st.integers(0, 40), st.integers(0, 9),
               st.sampled_from(["", "+cpu", "+cu121", "a0+git1234", "rc2"]))
        def test_any_version_string_round_trips(self, major, minor, patch, suffix):
            self.assertEqual(C.torch_version("%d.%d.%d%s" % (major, minor, patch, suffix)),
                             (major, minor))


class StorageTest(unittest.TestCase):
    def test_views_share_one_storage_and_its_bytes(self):
        t = torch.zeros(4, 8)  # 32 float32 = 128 bytes
        v = t[1:3].t()
        self.assertEqual(C.storage_id(t), C.storage_id(v))
        self.assertEqual(C.untyped_storage(v).nbytes(), 128)
        self.assertNotEqual(C.storage_id(t), C.storage_id(t.clone()))

    def test_weak_ref_expires_with_the_last_tensor(self):
        t = torch.ones(16)
        handle = C.weak_ref(C.untyped_storage(t))
        view = t[4:]
        del t
        gc.collect()
        self.assertFalse(C.expired(handle))  # the view still holds the storage
        del view
        gc.collect()
        self.assertTrue(C.expired(handle))
        C.free_weak_ref(handle)

    if given is not None:
        @settings(max_examples=30, database=None, deadline=None)
        @given(st.integers(1, 6), st.integers(1, 6), st.data())
        def test_every_slice_of_a_tensor_has_its_storage_id(self, rows, cols, data):
            t = torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols)
            r0 = data.draw(st.integers(0, rows - 1))
            r1 = data.draw(st.integers(r0 + 1, rows))
            view = t[r0:r1, ::data.draw(st.integers(1, cols))]
            self.assertEqual(C.storage_id(view), C.storage_id(t))
            self.assertEqual(C.untyped_storage(view).nbytes(), rows * cols * 4)


class _Counting(C.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


class DispatchModeTest(unittest.TestCase):
    def test_depth_counts_nested_modes(self):
        self.assertEqual(C.dispatch_mode_depth(), 0)
        outer, inner = _Counting(), _Counting()
        with outer:
            self.assertEqual(C.dispatch_mode_depth(), 1)
            with inner:
                self.assertEqual(C.dispatch_mode_depth(), 2)
                torch.ones(2) + 1
            self.assertEqual(C.dispatch_mode_depth(), 1)
        self.assertEqual(C.dispatch_mode_depth(), 0)
        # The inner mode sees the ops first; what it runs reaches the outer.
        self.assertIn(torch.ops.aten.add.Tensor, inner.ops)
        self.assertIn(torch.ops.aten.add.Tensor, outer.ops)


class SchemaTest(unittest.TestCase):
    def test_in_place_out_and_view_schemas(self):
        aten = torch.ops.aten
        self.assertEqual(C.schema_effects(aten.add_.Tensor), ([0], set(), (True,), False))
        pos, kw, returns_alias, profiler = C.schema_effects(aten.add.out)
        self.assertEqual((pos, kw, profiler), ([], {"out"}, False))
        self.assertEqual(C.schema_effects(aten.view.default)[2], (True,))
        self.assertEqual(C.schema_effects(aten.mm.default), ([], set(), (False,), False))

    def test_dtype_names(self):
        self.assertEqual(C.dtype_name(torch.bfloat16), "bfloat16")
        self.assertEqual(C.dtype_name(torch.complex128), "unknown")


class AccumulateGradTest(unittest.TestCase):
    def test_first_gradient_is_stored_with_one_or_two_detaches(self):
        # 1.13 and 2.6: two; 2.13: one. Anything else is a torch this module
        # has not seen, and the recorder's hand-worked op lists need a look.
        ops = C.accumulate_grad_ops()
        self.assertIn(ops, (["aten::detach"], ["aten::detach"] * 2), torch.__version__)


class CompileTest(unittest.TestCase):
    def test_reason_names_what_is_missing(self):
        if not hasattr(torch, "compile"):  # 1.13
            self.assertEqual(C.compile_unavailable_reason(),
                             "torch %s has no torch.compile" % torch.__version__)
            return
        # A torch whose C++ headers are not where inductor looks for them (a
        # Debian python3-torch without libtorch-dev): the reason names the
        # folder and the package, unless dynamo refuses this Python first.
        with mock.patch.object(torch, "__file__", "/nonexistent/torch/__init__.py"):
            reason = C.compile_unavailable_reason()
        if not reason.startswith("torch.compile is not supported here"):
            self.assertIn("/nonexistent/torch/include/ATen is missing", reason)
            self.assertIn("libtorch-dev", reason)


@unittest.skipUnless(C.legacy_profiler_available(), "no legacy profiler in this PyTorch")
class LegacyProfilerTest(unittest.TestCase):
    def test_range_and_cpu_allocations_are_recorded(self):
        from torch.autograd import _disable_profiler_legacy, _enable_profiler_legacy
        _enable_profiler_legacy(C.legacy_profiler_config())
        try:
            handle = C.record_function_enter("swapplan::test")
            t = torch.empty(1 << 20, dtype=torch.uint8)  # 1 MiB
            C.record_function_exit(handle)
            del t
        finally:
            records = _disable_profiler_legacy()
        flat = [r for thread in records for r in thread]
        self.assertTrue(any(r.kind() == "push" and r.name() == "swapplan::test" for r in flat))
        allocs = [r.cpu_memory_usage() for r in flat if r.kind() == "memory_alloc"]
        self.assertIn(1 << 20, allocs)
        self.assertIn(-(1 << 20), allocs)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    unittest.main()
