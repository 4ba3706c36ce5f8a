// Runtime: the tensor entry points, seed 004's manual API, results and
// shutdown. See runtime.h; the state machine they drive is in runtime.cc.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/file_io.h"
#include "runtime/runtime_state.h"
#include "swapplan/runtime/runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

// ---------------------------------------------------------------------------
// Tensors.

absl::StatusOr<TensorHandle> Runtime::AllocTensor(const TensorDesc& desc, void** device) {
  State& s = *s_;
  if (desc.size_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime: tensor of ", desc.size_bytes, " bytes"));
  }
  void* p = nullptr;
  SWAPPLAN_RETURN_IF_ERROR(s.Reserve(desc.size_bytes, /*owned=*/true, &p, -1));
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.NewSlot(desc, true, p));
  if (device != nullptr) *device = p;
  return s.residency.HandleOf(slot);
}

absl::StatusOr<TensorHandle> Runtime::RegisterTensor(const TensorDesc& desc, void* device) {
  State& s = *s_;
  if (desc.size_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime: tensor of ", desc.size_bytes, " bytes"));
  }
  absl::Status st = s.Reserve(desc.size_bytes, /*owned=*/false, nullptr, -1);
  if (!st.ok()) {
    // The framework's memory is there: take it over the budget (the OOM is
    // counted) when asked to.
    if (!s.options.overcommit_on_oom || RuleOf(st) != "out-of-memory") return st;
    s.Account(desc.size_bytes);
  }
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.NewSlot(desc, false, device));
  return s.residency.HandleOf(slot);
}

absl::Status Runtime::FreeTensor(TensorHandle handle) {
  State& s = *s_;
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.residency.SlotOf(handle));
  Slot& t = s.residency.slots[slot];
  absl::Status st;
  const int64_t on_device = t.state == Residency::kOffDevice ? 0 : t.size;
  switch (t.state) {
    case Residency::kResident:
      if (t.owned) st = s.backend->FreeAsync(t.device, s.compute);
      t.held = false;
      s.Account(-t.size);
      break;
    case Residency::kSwappingOut:
      st = s.CancelSwapOut(slot);
      if (t.owned) {
        absl::Status f = s.backend->FreeAsync(t.device, s.compute);
        if (st.ok()) st = f;
      }
      s.Account(-t.size);
      break;
    case Residency::kOffDevice: {
      if (s.FrameworkCopies(t)) {
        if (t.framework_host) st = s.CallCopy(t, FrameworkCopy::kDiscard);
        break;
      }
      if (t.out == kNoTicket) break;  // dropped for recomputation: no host copy
      const EventId done = s.queue->done_event(t.out);
      s.events->Ref(done);
      s.DropHost(t, done);
      break;
    }
    case Residency::kSwappingIn: {
      if (s.FrameworkCopies(t)) {
        // The copy in took the host copy; its storage is dead.
        st = s.Unhold(t, false);
        s.Account(-t.size);
        break;
      }
      st = s.queue->WaitOn(t.in, s.compute);
      EventId done = kNoEvent;  // a failed copy is over: no wait on it
      if (st.ok()) {
        done = s.queue->done_event(t.in);
        s.events->Ref(done);
      }
      s.DropHost(t, done);
      absl::Status f = t.owned ? s.backend->FreeAsync(t.device, s.compute) : s.Unhold(t, false);
      if (st.ok()) st = f;
      s.Account(-t.size);
      break;
    }
  }
  s.queue->Retire(t.in);
  s.queue->Retire(t.out);
  if (t.item >= 0 && t.item < static_cast<int32_t>(s.items.size())) s.items[t.item].slot = -1;
  s.record->AddEvent(s.PositionAfter(), MemoryEventKind::kFree, t.record_id, false, on_device);
  std::erase(s.manual_out, slot);
  std::erase(s.prefetch_list, slot);
  const uint32_t gen = t.generation + 1;
  t = Slot{};
  t.generation = gen;
  s.residency.free_slots.push_back(slot);
  --s.residency.live;
  return st;
}

absl::StatusOr<void*> Runtime::TensorData(TensorHandle handle) const {
  const State& s = *s_;
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.residency.SlotOf(handle));
  const Slot& t = s.residency.slots[slot];
  if (t.state == Residency::kOffDevice || t.state == Residency::kSwappingIn) {
    return CallOrder(absl::StrCat("runtime: tensor ", handle, " is off the device"));
  }
  return t.device;
}

absl::StatusOr<bool> Runtime::IsResident(TensorHandle handle) const {
  const State& s = *s_;
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.residency.SlotOf(handle));
  const Residency r = s.residency.slots[slot].state;
  return r == Residency::kResident || r == Residency::kSwappingOut;
}

// ---------------------------------------------------------------------------
// Seed 004.

absl::Status Runtime::PageOut(TensorHandle handle) {
  State& s = *s_;
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.residency.SlotOf(handle));
  if (s.residency.slots[slot].state != Residency::kResident) {
    return CallOrder(absl::StrCat("pageout_manual: tensor ", handle, " is not resident"));
  }
  SWAPPLAN_RETURN_IF_ERROR(s.StartSwapOut(slot, SwapReason::kManual));
  s.manual_out.push_back(slot);
  return absl::OkStatus();
}

absl::Status Runtime::NeedPrefetch(TensorHandle handle) {
  State& s = *s_;
  SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.residency.SlotOf(handle));
  const Residency r = s.residency.slots[slot].state;
  if (r != Residency::kOffDevice && r != Residency::kSwappingOut) {
    return CallOrder(absl::StrCat("need_prefetch: tensor ", handle, " is not swapped out"));
  }
  s.prefetch_list.push_back(slot);
  return absl::OkStatus();
}

absl::Status Runtime::PrefetchInit() {
  State& s = *s_;
  s.prefetch_list.clear();
  return s.queue->SetHold(TransferLane::kIn, true);
}

absl::Status Runtime::WaitAllSwapOuts() {
  State& s = *s_;
  const absl::Status waited = s.queue->WaitAll(false, Direction::kDeviceToHost);
  absl::Status first;  // a failed release names its tensor: reported first
  const std::vector<int32_t> manual = std::move(s.manual_out);
  s.manual_out.clear();
  for (int32_t slot : manual) {
    if (s.residency.slots[slot].state != Residency::kSwappingOut) continue;
    absl::Status st = s.Release(slot);
    if (!st.ok() && first.ok()) first = st;
  }
  return first.ok() ? waited : first;
}

absl::Status Runtime::PrefetchAll() {
  State& s = *s_;
  absl::Status first;
  const std::vector<int32_t> list = std::move(s.prefetch_list);
  s.prefetch_list.clear();
  for (int32_t slot : list) {
    Slot& t = s.residency.slots[slot];
    absl::Status st;
    if (t.state == Residency::kSwappingOut) {
      std::erase(s.manual_out, slot);
      st = s.CancelSwapOut(slot);
    } else if (t.state == Residency::kOffDevice) {
      st = s.StartSwapIn(slot, /*demand=*/false);
      if (st.ok()) {
        s.stats.Count(&SwapCounts::manual_swap_ins);
      }
    }
    if (!st.ok() && first.ok()) first = st;
  }
  absl::Status st = s.queue->SetHold(TransferLane::kIn, false);
  return first.ok() ? st : first;
}

// ---------------------------------------------------------------------------
// Results and shutdown.

RuntimeStats Runtime::Stats() const {
  const State& s = *s_;
  RuntimeStats r;
  r.counts = s.stats.counts;
  r.iterations = static_cast<int32_t>(s.stats.rows.size());
  r.stage = s.library->stage();
  r.device_budget_bytes = s.budget;
  r.device_bytes_in_use = s.residency.resident_bytes;
  r.peak_device_bytes = s.residency.peak_bytes;
  r.live_tensors = s.residency.live;
  r.policies_loaded = static_cast<int32_t>(s.policies.size());
  r.active_policy = s.active;
  r.policy_of_other_input = s.stats.policy_of_other_input;
  r.known_sequence_returns = s.library->known_sequence_returns();
  r.policy_keys = static_cast<int32_t>(s.library->keys().size());
  r.pinned = s.pinned->stats();
  r.queue = s.queue->stats();
  r.events_created = s.events->created();
  r.event_reclaims = s.events->reclaims();
  return r;
}

absl::Status Runtime::SavedTensorEvent(bool unpack, TensorHandle handle) {
  State& s = *s_;
  int64_t record_id = 0;
  if (handle != kNoTensorHandle) {
    SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.residency.SlotOf(handle));
    record_id = s.residency.slots[slot].record_id;
  }
  s.record->AddSavedTensorEvent(unpack, record_id);
  return absl::OkStatus();
}

absl::Status Runtime::MarkSavedTensorEventsRecorded() {
  s_->record->MarkSavedTensorEventsRecorded();
  return absl::OkStatus();
}

const std::vector<IterationStats>& Runtime::IterationRows() const { return s_->stats.rows; }

absl::StatusOr<Trace> Runtime::RecordTrace() const {
  const State& s = *s_;
  const ExecutionRecord& rec = *s.record;
  if (rec.num_iterations() == rec.first_kept()) {
    return absl::FailedPreconditionError("runtime: no iteration recorded yet");
  }
  return rec.BuildTrace(s.op_names, s.RecordMetadata(), rec.first_kept(),
                        rec.num_iterations() - 1);
}

absl::Status Runtime::WriteRecord(const std::string& path) const {
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, RecordTrace());
  return WriteTraceFile(trace, path);
}

absl::Status Runtime::Close() {
  State& s = *s_;
  if (s.closed) return absl::OkStatus();
  s.closed = true;
  absl::Status first = s.queue->WaitAll(true);
  s.budget = std::numeric_limits<int64_t>::max() / 4;  // everything comes back
  for (int32_t k = 0; k < static_cast<int32_t>(s.residency.slots.size()); ++k) {
    Slot& t = s.residency.slots[k];
    if (!t.live) continue;
    absl::Status st;
    switch (t.state) {
      case Residency::kResident:
        break;
      case Residency::kSwappingOut:
        st = s.CancelSwapOut(k);
        break;
      case Residency::kSwappingIn:
        st = s.WaitIn(k);
        break;
      case Residency::kOffDevice:
        if (t.reason == SwapReason::kRecompute) {
          st = s.Rematerialise(k, /*demand=*/true);
          break;
        }
        st = s.StartSwapIn(k, /*demand=*/true);
        if (st.ok()) st = s.WaitIn(k);
        break;
    }
    if (!st.ok() && first.ok()) first = st;
  }
  absl::Status st = s.queue->WaitAll(true);
  return first.ok() ? st : first;
}

}  // namespace swapplan::runtime
