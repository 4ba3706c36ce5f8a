"""The CUDA path's ordering rules (swapplan.runtime._cuda), on the CPU with a
fake torch.cuda (cuda_fakes.py: device work as a happens-before graph).
Each rule below has a test that fails when the rule is taken out of _cuda.py
(docs/runtime-torch.md "CUDA")."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from cuda_fakes import FakeCuda, FakeOOM, FakeStorage  # noqa: E402
from swapplan import _torch_compat as C  # noqa: E402
from swapplan.runtime import SwapRuntime  # noqa: E402
from swapplan.runtime import _cuda as K  # noqa: E402

KiB = 1024


def make_rig(block_bytes=64 * KiB):
    cuda = FakeCuda()
    pool = K.PinnedPool(block_bytes, alloc_block=cuda.block)
    return cuda, pool, K.CudaSwapper(cuda, pool, byte_view=cuda.byte_view)


class SwapOutTest(unittest.TestCase):
    """Rule 1: the D2H copy waits on an event of the producer's stream."""

    def test_copy_follows_the_producing_kernel(self):
        cuda, _, sw = make_rig()
        st = FakeStorage(cuda, 4 * KiB)
        made = cuda.launch("produce")
        swap = sw.swap_out(st)
        copy = cuda.copies[-1]
        self.assertIs(cuda.nodes[copy][1], sw.d2h)
        self.assertTrue(cuda.happens_before(made, copy))
        self.assertIs(swap.producer, cuda.default)

    def test_inside_with_stream_the_producer_is_that_stream(self):
        # torchtitan#2581: inside `with torch.cuda.stream(s)` the current
        # stream is s; waiting on the default stream orders nothing.
        cuda, _, sw = make_rig()
        side = cuda.Stream()
        st = FakeStorage(cuda, 4 * KiB)
        with cuda.stream(side):
            made = cuda.launch("produce")
            swap = sw.swap_out(st)
        self.assertTrue(cuda.happens_before(made, cuda.copies[-1]))
        self.assertIs(swap.producer, side)

    def test_copy_is_not_ordered_after_later_work(self):
        # The graph is not trivially connected: a kernel launched after the
        # swap-out on the compute stream is not before the copy.
        cuda, _, sw = make_rig()
        sw.swap_out(FakeStorage(cuda, KiB))
        later = cuda.launch("later")
        self.assertFalse(cuda.happens_before(later, cuda.copies[-1]))
        self.assertFalse(cuda.happens_before(cuda.copies[-1], later))


class ReleaseTest(unittest.TestCase):
    """Rule 2: the device bytes go back only after the stream that reuses
    them waited on copy-done."""

    def _reuse_after_release(self, side):
        cuda, _, sw = make_rig()
        st = FakeStorage(cuda, 8 * KiB)
        with cuda.stream(cuda.Stream() if side else cuda.default) as producer:
            cuda.launch("produce")
            swap = sw.swap_out(st)
        copy = cuda.copies[-1]
        cuda.launch("unrelated")
        sw.release(swap)
        self.assertEqual(st.nbytes(), 0)
        self.assertEqual(cuda.allocated, 0)
        # The allocator hands the freed block to the next allocation on the
        # stream it belongs to: that work must follow the copy.
        reuse = cuda.launch("reuse", producer)
        self.assertTrue(cuda.happens_before(copy, reuse))
        after = cuda.launch("next op")  # the current (compute) stream too
        self.assertTrue(cuda.happens_before(copy, after))
        # resize_(0) was called after the wait was enqueued (host order).
        resize = [e for e in cuda.host_log if e[0] == "resize" and e[2] == 0][-1]
        waits = [i for i, n in enumerate(cuda.nodes) if n[0] == "wait" and n[2] is swap.copied]
        self.assertTrue(waits and max(waits) < resize[4])

    def test_reuse_on_compute_follows_copy(self):
        self._reuse_after_release(False)

    def test_reuse_on_producer_side_stream_follows_copy(self):
        self._reuse_after_release(True)


class ReleaseReadersTest(unittest.TestCase):
    """Rule 2b: released while another stream than the block's is current,
    the block's stream also waits for the work issued on the current one (an
    op there may still read the tensor)."""

    def test_reader_on_the_current_stream_precedes_reuse(self):
        cuda, _, sw = make_rig()
        side = cuda.Stream()
        st = FakeStorage(cuda, 8 * KiB)
        with cuda.stream(side):
            cuda.launch("produce")
            swap = sw.swap_out(st)
        reader = cuda.launch("reads it on compute")  # not ordered with the copy
        sw.release(swap)                             # compute is current
        reuse = cuda.launch("reuse", side)
        self.assertTrue(cuda.happens_before(reader, reuse))

    def test_drop_orders_reuse_after_the_current_stream(self):
        cuda, _, sw = make_rig()
        side = cuda.Stream()
        st = FakeStorage(cuda, 4 * KiB)
        reader = cuda.launch("reads it on compute")
        sw.drop(st, side)
        reuse = cuda.launch("reuse", side)
        self.assertTrue(cuda.happens_before(reader, reuse))
        self.assertEqual(st.nbytes(), 0)


class SplitSwapInTest(unittest.TestCase):
    """Rule 4b: a prefetch (allocate + fill at its anchor) does not make the
    consumer wait; the consumer waits at its use (wait_filled)."""

    def test_fill_does_not_stall_the_consumer_until_the_use(self):
        cuda, pool, sw = make_rig()
        st = FakeStorage(cuda, 6 * KiB)
        swap = sw.swap_out(st)
        sw.release(swap)
        sw.allocate(swap)
        sw.fill(swap)
        h2d = cuda.copies[-1]
        between = cuda.launch("an op before the use")
        self.assertFalse(cuda.happens_before(h2d, between))  # overlapped
        sw.wait_filled(swap)
        use = cuda.launch("the use")
        self.assertTrue(cuda.happens_before(h2d, use))
        self.assertEqual(pool.in_use_bytes, 0)  # the slice is back, fenced by the copy

    def test_discard_waits_for_the_copy_before_a_write(self):
        cuda, pool, sw = make_rig()
        st = FakeStorage(cuda, 6 * KiB)
        swap = sw.swap_out(st)
        d2h = cuda.copies[-1]
        sw.discard(swap)
        write = cuda.launch("writes it")
        self.assertTrue(cuda.happens_before(d2h, write))
        self.assertEqual((pool.in_use_bytes, st.nbytes()), (0, 6 * KiB))


class HotPathTest(unittest.TestCase):
    """Rule 3: no host synchronization, no record_stream, non-blocking copies."""

    def test_a_full_cycle_never_syncs_the_host(self):
        cuda, _, sw = make_rig()
        side = cuda.Stream()
        for i in range(3):
            st = FakeStorage(cuda, (i + 1) * 3 * KiB)
            with cuda.stream(side if i % 2 else cuda.default):
                swap = sw.swap_out(st)
            sw.release(swap)
            sw.swap_in(swap)
        self.assertEqual(cuda.host_syncs, [])
        self.assertEqual(cuda.record_streams, [])
        self.assertEqual(len(cuda.copies), 6)


class SwapInTest(unittest.TestCase):
    """Rule 4: allocation on the consumer's stream, the H2D copy after it,
    the consumer's op after the copy."""

    def _cycle(self, consumer_side):
        cuda, _, sw = make_rig()
        st = FakeStorage(cuda, 6 * KiB)
        swap = sw.swap_out(st)
        sw.release(swap)
        consumer = cuda.Stream() if consumer_side else cuda.default
        before = cuda.launch("earlier op on the consumer", consumer)  # may have used the block
        if consumer_side:
            # Named, while another stream (compute) is current.
            sw.swap_in(swap, consumer=consumer)
        else:
            sw.swap_in(swap)
        use = cuda.launch("consuming op", consumer)
        h2d = cuda.copies[-1]
        self.assertIs(cuda.nodes[h2d][1], sw.h2d)
        resize = [e for e in cuda.host_log if e[0] == "resize" and e[2] == 6 * KiB][-1]
        self.assertIs(resize[3], consumer)  # the consumer's block
        self.assertTrue(cuda.happens_before(before, h2d))
        self.assertTrue(cuda.happens_before(h2d, use))
        self.assertEqual(st.nbytes(), 6 * KiB)
        self.assertEqual(cuda.allocated, 6 * KiB)

    def test_on_compute(self):
        self._cycle(False)

    def test_swap_in_before_release_copies_nothing(self):
        # The storage never left the device (released later, or never).
        cuda, pool, sw = make_rig()
        st = FakeStorage(cuda, 6 * KiB)
        swap = sw.swap_out(st)
        self.assertIs(sw.swap_in(swap), st)
        self.assertEqual((len(cuda.copies), st.nbytes(), pool.in_use_bytes), (1, 6 * KiB, 0))
        self.assertEqual(pool._free[0][0][2], [swap.copied])  # fenced by the D2H copy

    def test_on_a_side_stream(self):
        self._cycle(True)


class PinnedPoolTest(unittest.TestCase):
    """Rule 5: blocks allocated once, grown by one block, reused; no
    power-of-two rounding. Worked values: 4 KiB blocks, 512-byte alignment."""

    def test_worked_values(self):
        cuda = FakeCuda()
        pool = K.PinnedPool(4096, alloc_block=cuda.block)
        a = pool.allocate(1000)          # span 1024 at 0 of block 0
        b = pool.allocate(3000)          # span 3072 at 1024: block 0 full
        self.assertEqual((a.block, a.offset, a.span), (0, 0, 1024))
        self.assertEqual((b.block, b.offset, b.span), (0, 1024, 3072))
        self.assertEqual((pool.reserved_bytes, len(cuda.blocks)), (4096, 1))
        c = pool.allocate(1)             # span 512: a second block
        self.assertEqual((c.block, c.offset), (1, 0))
        self.assertEqual(pool.reserved_bytes, 8192)
        pool.free(a)
        d = pool.allocate(600)           # reuses a's 1024 bytes, no new block
        self.assertEqual((d.block, d.offset, d.span), (0, 0, 1024))
        self.assertEqual(len(cuda.blocks), 2)
        big = pool.allocate(10000)       # its own block of 10240 (not 16384)
        self.assertEqual((big.block, big.span, cuda.blocks[-1].nbytes), (2, 10240, 10240))
        self.assertEqual(pool.reserved_bytes, 4096 + 4096 + 10240)
        self.assertEqual(pool.in_use_bytes, 1024 + 3072 + 512 + 10240)
        pool.free(b)
        pool.free(d)                     # merged with b's range: block 0 whole again
        self.assertEqual(pool._free[0], [[0, 4096, []]])
        e = pool.allocate(4096)
        self.assertEqual((e.block, e.offset), (0, 0))
        self.assertEqual(len(cuda.blocks), 3)
        self.assertEqual(pool.view(e).stop - pool.view(e).start, 4096)
        pool.close()
        self.assertEqual((pool.reserved_bytes, pool.in_use_bytes), (0, 0))

    def test_swaps_reuse_the_pool(self):
        cuda, pool, sw = make_rig(block_bytes=16 * KiB)
        for _ in range(10):
            st = FakeStorage(cuda, 10 * KiB)
            swap = sw.swap_out(st)
            sw.release(swap)
            sw.swap_in(swap)
        self.assertEqual(len(cuda.blocks), 1)
        self.assertEqual(pool.in_use_bytes, 0)
        self.assertEqual(sw.stats()["pinned_reserved_bytes"], 16 * KiB)

    def test_reused_slice_waits_for_the_h2d_copy_reading_it(self):
        # hyper-parallel#894: a staging buffer rewritten while its copy is in
        # flight. The next D2H into the slice follows the H2D that read it.
        cuda, _, sw = make_rig(block_bytes=16 * KiB)
        first = sw.swap_out(FakeStorage(cuda, 10 * KiB))
        sw.release(first)
        sw.swap_in(first)
        h2d = cuda.copies[-1]
        # Produced on a stream that never waited on the H2D copy (so only
        # the slice's fence orders the two).
        with cuda.stream(cuda.Stream()):
            second = sw.swap_out(FakeStorage(cuda, 10 * KiB))
        self.assertEqual((second.host.block, second.host.offset), (0, 0))
        self.assertTrue(cuda.happens_before(h2d, cuda.copies[-1]))

    def test_block_size_must_be_aligned(self):
        with self.assertRaisesRegex(ValueError, "multiple of 512"):
            K.PinnedPool(1000)


class OomRetryTest(unittest.TestCase):
    """Rule 6: an OOM frees room (Algorithm 3) and the op runs once more."""

    MSG = "CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; ...)"

    def _op(self, failures):
        calls = []

        def call():
            calls.append(1)
            if len(calls) <= failures:
                raise FakeOOM(self.MSG)
            return "out"
        return call, calls

    def test_evict_then_retry_once(self):
        call, calls = self._op(1)
        asked = []
        out = K.call_with_oom_retry(call, lambda n: asked.append(n) or n, FakeOOM, "aten::mm")
        self.assertEqual((out, len(calls), asked), ("out", 2, [2 << 20]))

    def test_second_oom_is_raised_with_a_message(self):
        call, calls = self._op(2)
        asked = []
        with self.assertRaisesRegex(FakeOOM, r"aten::mm: CUDA out of memory again after swapping "
                                             r"out 2097152 bytes and one retry"):
            K.call_with_oom_retry(call, lambda n: asked.append(n) or n, FakeOOM, "aten::mm")
        self.assertEqual((len(calls), len(asked)), (2, 1))

    def test_nothing_to_free_is_not_retried(self):
        call, calls = self._op(1)
        with self.assertRaisesRegex(FakeOOM, "found nothing to swap out for 2097152 bytes"):
            K.call_with_oom_retry(call, lambda n: 0, FakeOOM, "aten::mm")
        self.assertEqual(len(calls), 1)

    def test_other_errors_pass_through(self):
        def call():
            raise ValueError("not an OOM")
        with self.assertRaises(ValueError):
            K.call_with_oom_retry(call, lambda n: 1, FakeOOM, "aten::mm")

    def test_requested_bytes(self):
        self.assertEqual(K.requested_bytes("Tried to allocate 20.00 MiB"), 20 << 20)
        self.assertEqual(K.requested_bytes("Tried to allocate 512 B"), 512)
        self.assertEqual(K.requested_bytes("something else"), 0)


class BudgetMeasureTest(unittest.TestCase):
    def test_allocated_and_reserved(self):
        cuda = FakeCuda()
        st = FakeStorage(cuda, 3 * KiB)
        st.resize_(5 * KiB)
        st.resize_(3 * KiB)              # peak 5 KiB
        cuda.reserved = 2 << 20
        d = K.device_memory(cuda)
        self.assertEqual(d, {"cuda_memory_allocated_bytes": 3 * KiB,
                             "cuda_memory_reserved_bytes": 2 << 20,
                             "cuda_max_memory_allocated_bytes": 5 * KiB,
                             "cuda_max_memory_reserved_bytes": 2 << 20})
        self.assertTrue(K.fits(cuda, 4 * KiB, KiB))
        self.assertFalse(K.fits(cuda, 4 * KiB, KiB + 1))


class DeviceTest(unittest.TestCase):
    def test_cuda_with_cuda_is_the_cuda_device(self):
        self.assertEqual(K.check_device("cuda", FakeCuda()), "cuda")
        self.assertEqual(K.check_device("cuda:0", FakeCuda()), "cuda")
        self.assertEqual(K.check_device("cpu", FakeCuda()), "cpu")


class CudaRngTest(unittest.TestCase):
    """Rule 7: RECOMPUTE of a random op restores the CUDA generator state it
    ran with (through SwapRuntime's recipes: the state is taken at the op,
    set for the re-run, and the current one put back)."""

    def test_recompute_sets_and_restores_the_cuda_state(self):
        cuda = FakeCuda()
        rt = SwapRuntime(device_memory=1 << 30, provider=None, recipes=True)
        rt._recipes.rng = K.RngStates(cuda)
        with rt:
            cuda.rng = b"state-at-the-op"
            b = torch.rand(100)
            expected = b.clone()
            sid = C.storage_id(b)
            self.assertTrue(rt._recipes.can_recompute(sid))
            cuda.rng = b"state-later"
            with rt.pause():
                b.zero_()
            rt._recompute_for_test(sid)
        self.assertTrue(torch.equal(b, expected))  # the CPU state as before
        self.assertEqual(cuda.rng_sets, [b"state-at-the-op", b"state-later"])
        self.assertEqual(cuda.rng, b"state-later")
        self.assertEqual(rt._recipes.recomputed_seeded, 1)

    def test_cpu_runtime_leaves_cuda_alone(self):
        s = K.RngStates()
        state = s.get()
        self.assertIsNone(state[1])
        with s.applied(state):
            pass


if __name__ == "__main__":
    unittest.main()
