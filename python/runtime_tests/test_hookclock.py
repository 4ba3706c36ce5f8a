"""The saved-tensor clock's schedule (swapplan.runtime._hookclock.snap and
the replay's bookkeeping), on hand-made recordings with worked values.

Positions are ops completed. Ten ops, each with a resident bound of 500
bytes; events (pack P / unpack U) at positions:

    event   0   1   2   3   4   5   6
    pos     1   2   4   4   7   8   9
    kind    P   P   P   U   U   U   U
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import torch
except ImportError:
    print("needs PyTorch")
    sys.exit(77)

from swapplan.runtime import _hookclock as H  # noqa: E402

EVENTS = [1, 2, 4, 4, 7, 8, 9]
SHAPES = [torch.Size([4]), torch.Size([8]), torch.Size([2]), None, None, None, None]
BOUND = [500] * 10


def snap(actions, packs, budget=1000, bound=BOUND):
    return H.snap(EVENTS, SHAPES, packs, actions, bound, budget)


class SnapTest(unittest.TestCase):
    def test_release_and_restore_on_the_events_around_the_recorded_ones(self):
        # Storage 10 (100 bytes, packed at event 0) released after 3 ops,
        # restored before op 7. Release: the first event at pos >= 3 is
        # event 2 (pos 4), so ops 3 keeps it resident: +100 over [3, 4).
        # Restore: the last event at pos <= 7 is event 4 (pos 7): on time.
        s, why = snap([(3, H._OUT, 10), (7, H._IN, 10)], {10: ([0], 100)})
        self.assertIsNone(why)
        self.assertEqual(s.at, {0: ((H._GRAB, 0),), 2: ((H._OUT, 0),), 4: ((H._IN, 0),)})
        self.assertEqual(s.nbytes, [100])
        self.assertEqual(s.checked_peak_bytes, 600)   # 500 + 100 during op 3
        self.assertEqual(s.resident_items, 0)
        self.assertEqual(s.events, 7)

    def test_restore_moves_earlier(self):
        # Restored before op 6 in the recording: the last event at pos <= 6
        # is event 3 (pos 4), so it is back over [4, 6): +100 there.
        s, _ = snap([(2, H._OUT, 10), (6, H._IN, 10)], {10: ([0], 100)})
        self.assertEqual(s.at[1], ((H._OUT, 0),))
        self.assertEqual(s.at[3], ((H._IN, 0),))
        self.assertEqual(s.checked_peak_bytes, 600)

    def test_release_waits_for_the_pack(self):
        # Released after 1 op but packed only at event 2 (pos 4): grab and
        # release at event 2, resident over [1, 4).
        s, _ = snap([(1, H._OUT, 10), (9, H._IN, 10)], {10: ([2], 100)})
        self.assertEqual(s.at[2], ((H._GRAB, 0), (H._OUT, 0)))
        self.assertEqual(s.at[6], ((H._IN, 0),))

    def test_other_saved_views_are_wrapped(self):
        s, _ = snap([(2, H._OUT, 10), (9, H._IN, 10)], {10: ([0, 1], 100)})
        self.assertEqual(s.at[0], ((H._GRAB, 0),))
        self.assertEqual(s.at[1], ((H._WRAP, 0), (H._OUT, 0)))

    def test_no_event_between_keeps_the_item_resident(self):
        # Off over ops [5, 6): no event at pos 5 or 6 other than... event 4
        # is at pos 7 > 6, event 3 at 4 < 5: nothing in between.
        s, why = snap([(5, H._OUT, 10), (6, H._IN, 10)], {10: ([0], 100)})
        self.assertIsNone(why)
        self.assertEqual(s.at, {})
        self.assertEqual(s.resident_items, 1)
        self.assertEqual(s.checked_peak_bytes, 600)

    def test_over_the_budget_is_rejected(self):
        # Two items of 300 bytes each kept resident over op 5: 500 + 600.
        s, why = snap([(5, H._OUT, 10), (5, H._OUT, 11), (6, H._IN, 10), (6, H._IN, 11)],
                      {10: ([0], 300), 11: ([1], 300)})
        self.assertIsNone(s)
        self.assertIn("1100 bytes, over the budget of 1000", why)

    def test_unreplayable_recordings(self):
        self.assertIn("never saved for backward",
                      snap([(3, H._OUT, 10), (7, H._IN, 10)], {})[1])
        self.assertIn("released and not restored", snap([(3, H._OUT, 10)], {10: ([0], 1)})[1])
        self.assertIn("restored without a release", snap([(3, H._IN, 10)], {10: ([0], 1)})[1])
        self.assertIn("released twice", snap([(3, H._OUT, 10), (4, H._OUT, 10)],
                                             {10: ([0], 1)})[1])


class RecordingTest(unittest.TestCase):
    def record(self, same_stream):
        # One op completed, a tensor saved, released after op 1 and
        # restored before op 3 (an unpack at position 3).
        c = H.HookClock(H.HostCopies(), same_stream=same_stream)
        pos = [1]
        c.begin_recording(lambda: pos[0])
        t = torch.zeros(4)
        c._pack(t)
        sid = H.C.storage_id(t)
        c.action(1, H._OUT, sid)
        pos[0] = 3
        c._unpack(t)
        c.action(3, H._IN, sid)
        return c, c.capture("k", True, 1 << 20)

    def test_a_clean_recording_becomes_the_keys_schedule(self):
        c, s = self.record(None)
        self.assertIs(c.schedules["k"], s)
        self.assertEqual(s.at, {0: ((H._GRAB, 0), (H._OUT, 0)), 1: ((H._IN, 0),)})

    def test_cuda_a_storage_saved_on_another_stream_than_its_writer_is_not_replayed(self):
        # The replay orders a copy out after the stream current at the pack;
        # a tensor written on another one would be copied before its write.
        c, s = self.record(lambda sid: False)
        self.assertIsNone(s)
        self.assertIn("another stream", c.last_rejection)


class ReplayTest(unittest.TestCase):
    """The pack/unpack hooks on a schedule, with real CPU storages."""

    def setUp(self):
        self.clock = H.HookClock(H.HostCopies())
        s, _ = snap([(3, H._OUT, 10), (7, H._IN, 10)], {10: ([0], 16)})
        self.schedule = s

    def test_a_storage_leaves_and_comes_back_with_its_bytes(self):
        c, s = self.clock, self.schedule
        c.begin_hook_iteration(s)
        t = torch.arange(4, dtype=torch.float32)           # 16 bytes, shape [4]
        packed = c._pack(t)                                # event 0: grab
        c._pack(torch.zeros(8))                            # event 1
        c._pack(torch.zeros(2))                            # event 2: release
        self.assertEqual(H.C.untyped_storage(t).nbytes(), 0)
        c._unpack(torch.zeros(1))                          # event 3
        c._unpack(torch.zeros(1))                          # event 4: restore
        self.assertEqual(H.C.untyped_storage(t).nbytes(), 16)
        back = c._unpack(packed)                           # event 5
        self.assertIs(back, t)
        self.assertEqual(back.tolist(), [0.0, 1.0, 2.0, 3.0])
        c._unpack(torch.zeros(1))                          # event 6
        self.assertTrue(c.end_hook_iteration())
        self.assertEqual((c.swaps, c.bytes_moved, c.divergences, c.late_restores),
                         (1, 32, 0, 0))
        self.assertIsNone(s.storage[0])                    # not held past the iteration

    def test_a_shape_that_differs_is_a_divergence_and_brings_everything_back(self):
        c, s = self.clock, self.schedule
        c.schedules["k"] = s
        c.begin_hook_iteration(s)
        t = torch.arange(4, dtype=torch.float32)
        c._pack(t)
        c._pack(torch.zeros(8))
        c._pack(torch.zeros(2))                            # released
        c._unpack(torch.zeros(1))
        packed = c._pack(torch.zeros(3))                   # event 4 is an unpack: diverged
        self.assertEqual(c.divergences, 1)
        self.assertNotIn("k", c.schedules)                 # the key goes back to per-op
        self.assertIn("divergence", c.last_rejection)
        c._unpack(torch.zeros(1))                          # no restore runs any more
        self.assertEqual(H.C.untyped_storage(t).nbytes(), 0)
        self.assertIs(c._unpack(packed), packed)           # the diverged pack was not wrapped
        self.assertFalse(c.end_hook_iteration())           # the end brings it back
        self.assertEqual(H.C.untyped_storage(t).nbytes(), 16)
        self.assertEqual(t.tolist(), [0.0, 1.0, 2.0, 3.0])
        self.assertEqual(c.late_restores, 0)

    def test_after_a_divergence_a_storage_comes_back_at_its_unpack(self):
        c, s = self.clock, self.schedule
        c.begin_hook_iteration(s)
        t = torch.arange(4, dtype=torch.float32)
        packed = c._pack(t)
        c._pack(torch.zeros(8))
        c._pack(torch.zeros(2))                            # released
        c._pack(torch.zeros(3))                            # diverged
        self.assertEqual(H.C.untyped_storage(t).nbytes(), 0)
        self.assertEqual(c._unpack(packed).tolist(), [0.0, 1.0, 2.0, 3.0])
        self.assertFalse(c.end_hook_iteration())

    def test_the_stats_keys_are_the_same_with_the_clock_off(self):
        self.assertEqual(set(H.NO_HOOK_STATS), set(H.HookClock(None).stats()))
        self.assertEqual(H.NO_HOOK_STATS, H.HookClock(None).stats())

    def test_too_few_events_is_a_divergence(self):
        c, s = self.clock, self.schedule
        c.begin_hook_iteration(s)
        c._pack(torch.zeros(4))
        self.assertFalse(c.end_hook_iteration())
        self.assertEqual(c.divergences, 1)


if __name__ == "__main__":
    unittest.main()
