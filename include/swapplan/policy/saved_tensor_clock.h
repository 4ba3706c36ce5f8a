// The saved-tensor clock: where a policy's swaps can act when the runtime
// watches autograd's saved-tensor events instead of every op (the PyTorch
// runtime's stable_clock="hooks", python/swapplan/runtime/_hookclock.py).
// One rule, used by the runtime (through the C API's
// swapplan_rt_snap_saved_window) and by the simulator
// (SimulatorOptions::clock), so that `simulate --clock saved-tensors`
// predicts what the hook clock runs.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(SavedClockPolicy s,
//                             SnapToSavedTensorEvents(trace, iteration, policy));
//   if (s.per_op_reason.empty()) Simulate(trace, s.policy, options);  // what the hooks run
//
// Positions count the ops of the iteration completed (0 .. n). An item
// released at r and restored at s on the per-op clock (r = release_op + 1,
// s = swap_in_op) acts at events only:
//
//    ops        0 ........ r ......... s ...... u
//    per-op     |--------- |off device |--------|
//    events        P1   P2   P3       U7  U8  U9      (P pack, U unpack)
//    hooks      |------------|off dev.|-----------|
//                            ^ first event >= r     ^ last event <= s
//                              (and >= its pack)       (and after the release)
//
// The release moves later and the restore earlier: the tensor stays
// resident over [r, first event) and [last event, s). With no event after
// the release event and at or before s, the item stays resident.
//
// A tensor made in the iteration before its first FORWARD op (the batch)
// stays resident: the runtime's hook mode watches ops from the root
// module's forward on and never sees it made.
//
// What the hook clock cannot run at all, so that the runtime keeps the
// per-op clock for the iteration (per_op_reason): a RECOMPUTE item (the hook
// replay only copies), an item whose window wraps the iteration, an item on
// a tier other than the host, a SWAP item whose tensor is never saved for
// backward (no pack event names it).
//
// Complexity: SnapSavedWindow O(log events); SnapToSavedTensorEvents
// O(events + items log events).
#ifndef SWAPPLAN_POLICY_SAVED_TENSOR_CLOCK_H_
#define SWAPPLAN_POLICY_SAVED_TENSOR_CLOCK_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/policy/policy.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// One item's events on the saved-tensor clock: indices into the event list;
// release_event < 0 when the item stays resident.
struct SavedClockWindow {
  int32_t release_event = -1;
  int32_t restore_event = -1;
  bool resident() const { return release_event < 0; }
};

// event_positions: per event, ops completed when it fired (non-decreasing);
// first_pack_event: the index of the tensor's first pack event; release_
// and restore_position: the per-op clock's positions (r and s above). The
// release event is the first event at or after both r and the first pack;
// the restore event the last one at or before s; resident unless the
// restore event comes after the release event.
SavedClockWindow SnapSavedWindow(absl::Span<const int32_t> event_positions,
                                 int32_t first_pack_event, int32_t release_position,
                                 int32_t restore_position);

struct SavedClockPolicy {
  // The policy as the hook clock runs it: every SWAP item moved to its
  // events' positions (swap_out_op = release_op = release event's position
  // - 1, release_waits_for_copy: the next op waits for the copy, as the
  // stream-ordered release makes it; swap_in_op = the restore event's
  // position), items that stay resident removed (with their runtime
  // section's items; its decision anchors are the per-op clock's, so the
  // result is for simulation: the runtime snaps its own). The input policy unchanged
  // when per_op_reason is set.
  Policy policy;
  int32_t snapped_items = 0;
  int32_t resident_items = 0;
  // SWAP items of tensors made in the iteration before its first FORWARD
  // op (the batch): the runtime's hook mode watches ops from the root
  // module's forward on, never sees them made and runs none of their items
  // (removed: they stay resident).
  int32_t before_forward_items = 0;
  // Why the runtime keeps the per-op clock for this iteration ("" when the
  // hook clock runs it), naming the item and tensor.
  std::string per_op_reason;
};

// FailedPrecondition when the iteration's saved-tensor events were not
// recorded (Trace::iteration(i).saved_recorded: swapplan.recorder on
// PyTorch >= 2.0 records them); InvalidArgument for an iteration out of
// range.
absl::StatusOr<SavedClockPolicy> SnapToSavedTensorEvents(const Trace& trace, int32_t iteration,
                                                         const Policy& policy);

}  // namespace swapplan

#endif  // SWAPPLAN_POLICY_SAVED_TENSOR_CLOCK_H_
