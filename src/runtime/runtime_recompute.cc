// Runtime: RECOMPUTE items — dropping a block without a copy and having the
// framework rematerialise it (runtime.h, "Recomputation"; the state machine
// is in runtime_state.h).
#include "absl/strings/str_cat.h"
#include "runtime/runtime_state.h"
#include "swapplan/runtime/runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

bool Runtime::State::CanRecompute(const Slot& t) const {
  return callbacks.can_recompute && callbacks.recompute && callbacks.can_recompute(t.framework_id);
}

absl::Status Runtime::State::Drop(int32_t slot) {
  Slot& t = residency.slots[slot];
  if (t.state != Residency::kResident || t.reason != SwapReason::kRecompute) {
    return CallOrder(absl::StrCat("runtime: drop of tensor ", residency.HandleOf(slot),
                                  " which is not a resident RECOMPUTE item's tensor"));
  }
  if (t.owned) {
    // In compute-stream order: after every op issued so far has read it.
    SWAPPLAN_RETURN_IF_ERROR(backend->FreeAsync(t.device, compute));
  } else if (absl::Status freed = Unhold(t, /*free_memory=*/true); !freed.ok()) {
    if (RuleOf(freed) != "release-refused") return freed;
    // The framework cannot free this storage: it stays, for good.
    t.reason = SwapReason::kNone;
    t.persistent = true;
    t.immovable = true;
    stats.Count(&SwapCounts::cancelled_swap_outs);
    return absl::OkStatus();
  }
  t.device = nullptr;
  t.state = Residency::kOffDevice;
  Account(-t.size);
  stats.Count(&SwapCounts::policy_drops);
  record->AddEvent(PositionAfter(), MemoryEventKind::kSwapOut, t.record_id, false, t.size);
  return absl::OkStatus();
}

absl::Status Runtime::State::Rematerialise(int32_t slot, bool demand) {
  Slot& t = residency.slots[slot];
  if (t.state != Residency::kOffDevice || t.reason != SwapReason::kRecompute) {
    return CallOrder(absl::StrCat("runtime: recomputation of tensor ", residency.HandleOf(slot),
                                  " which was not dropped for recomputation"));
  }
  if (!callbacks.recompute) {
    return WithRule(absl::FailedPreconditionError(absl::StrCat(
                        "runtime: tensor ", residency.HandleOf(slot),
                        " was dropped for recomputation but no recompute callback is set")),
                    "recompute-failed");
  }
  SWAPPLAN_ASSIGN_OR_RETURN(void* device, ClaimBlock(slot));
  // The framework re-runs the producing op on inputs it holds, which the
  // runtime does not know: a tensor whose copy in is still on the link has
  // its storage restored but its bytes half-written. Every such copy is
  // waited for first (the compute stream waits, as for a use), so the
  // recipe never reads a partial input. O(slots) per recomputation.
  for (size_t k = 0; k < residency.slots.size(); ++k) {
    if (static_cast<int32_t>(k) == slot || !residency.slots[k].live ||
        residency.slots[k].state != Residency::kSwappingIn) {
      continue;
    }
    SWAPPLAN_RETURN_IF_ERROR(WaitIn(static_cast<int32_t>(k)));
  }
  // The recipe's own temporaries (an output computed aside, inputs off the
  // device recomputed on the way): room is made for them as for an
  // allocation and they count while the callback runs, so the budget and
  // the peak are what the device's allocator sees. An eviction that makes
  // the room may take one of the recipe's inputs away, which the recipe
  // then recomputes too: the framework is asked again until its answer
  // holds (bounded; each round can only add such inputs).
  int64_t workspace = 0;
  if (callbacks.recompute_workspace_bytes) {
    for (int round = 0; round < 4; ++round) {
      absl::StatusOr<int64_t> need = callbacks.recompute_workspace_bytes(t.framework_id);
      if (need.ok() && *need <= workspace) break;
      absl::Status st = need.status();
      if (st.ok()) st = Reserve(*need - workspace, /*owned=*/false, nullptr, slot);
      if (!st.ok()) {
        Account(-workspace);
        (void)FreeDeviceBlock(t, false);
        return st;
      }
      workspace = *need;
    }
  }
  absl::Status st = callbacks.recompute(t.framework_id, device);
  Account(-workspace);
  if (!st.ok()) {
    // Its bytes were never copied anywhere: it stays off the device, and
    // the next use asks the framework again.
    (void)FreeDeviceBlock(t, false);
    return WithRule(Error(ErrorKind::kUnavailable,
                          absl::StrCat("recomputation of tensor ", residency.HandleOf(slot), " (",
                                       t.size, " bytes, framework id ", t.framework_id,
                                       ") failed: ", st.message(),
                                       "; it stays off the device")),
                    "recompute-failed");
  }
  t.state = Residency::kResident;
  t.reason = SwapReason::kNone;
  t.resident_since_op = PositionBefore();
  Touch(slot);
  record->AddEvent(PositionBefore(), MemoryEventKind::kSwapIn, t.record_id, demand);
  return Unhold(t, false);
}

}  // namespace swapplan::runtime
