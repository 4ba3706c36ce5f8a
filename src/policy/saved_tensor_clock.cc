// The saved-tensor clock's rule (policy/saved_tensor_clock.h).
#include "swapplan/policy/saved_tensor_clock.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace swapplan {

SavedClockWindow SnapSavedWindow(absl::Span<const int32_t> event_positions,
                                 int32_t first_pack_event, int32_t release_position,
                                 int32_t restore_position) {
  const int32_t n = static_cast<int32_t>(event_positions.size());
  const int32_t at_or_after = static_cast<int32_t>(
      std::lower_bound(event_positions.begin(), event_positions.end(), release_position) -
      event_positions.begin());
  const int32_t out = std::max(at_or_after, first_pack_event);
  const int32_t in = static_cast<int32_t>(std::upper_bound(event_positions.begin(),
                                                           event_positions.end(),
                                                           restore_position) -
                                          event_positions.begin()) -
                     1;
  if (first_pack_event < 0 || out >= n || in <= out) return {};
  return {out, in};
}

absl::StatusOr<SavedClockPolicy> SnapToSavedTensorEvents(const Trace& trace, int32_t iteration,
                                                         const Policy& policy) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat(trace.source(), ": iteration ", iteration,
                                                   " is out of range (the trace has ",
                                                   trace.num_iterations(), ")"));
  }
  if (!trace.iteration(iteration).saved_recorded) {
    return absl::FailedPreconditionError(absl::StrCat(
        trace.source(), ": iteration ", iteration,
        " has no recorded saved-tensor events (swapplan.recorder records them on PyTorch >= "
        "2.0); the saved-tensor clock cannot be modelled without them"));
  }
  absl::Span<const SavedTensorEvent> events = trace.iteration_saved_events(iteration);
  std::vector<int32_t> positions(events.size());
  absl::flat_hash_map<uint64_t, int32_t> first_pack;  // trace id -> event index
  for (size_t e = 0; e < events.size(); ++e) {
    positions[e] = events[e].position;
    if (!events[e].unpack && events[e].tensor != kNoTensor) {
      first_pack.try_emplace(trace.tensor(events[e].tensor).trace_id, static_cast<int32_t>(e));
    }
  }
  // The runtime's hook mode watches ops from the root module's forward on
  // (the iteration's first FORWARD op): a tensor made before it is never
  // seen made, so no policy item of it runs (the batch stays resident).
  const IterationInfo& iter = trace.iteration(iteration);
  OpIndex first_forward = iter.op_begin;
  while (first_forward < iter.op_end && trace.op(first_forward).phase != Phase::kForward) {
    ++first_forward;
  }
  if (first_forward == iter.op_end) first_forward = iter.op_begin;
  absl::flat_hash_map<uint64_t, TensorId> by_trace_id;
  for (TensorId t = 0; t < trace.num_tensors(); ++t) by_trace_id.try_emplace(trace.tensor(t).trace_id, t);
  SavedClockPolicy out;
  auto per_op = [&](std::string why) {
    out.policy = policy;
    out.snapped_items = out.resident_items = out.before_forward_items = 0;
    out.per_op_reason = std::move(why);
    return std::move(out);
  };
  if (!policy.schedule.empty()) {
    return per_op("the policy reorders the iteration's ops; the saved-tensor events were "
                  "recorded in the recorded order");
  }
  out.policy = policy;
  out.policy.items.clear();
  // The runtime section's items go with theirs (one per item, same order).
  const bool with_runtime = policy.runtime.items.size() == policy.items.size();
  out.policy.runtime.items.clear();
  for (size_t k = 0; k < policy.items.size(); ++k) {
    const PolicyItem& item = policy.items[k];
    const std::string which = absl::StrCat("item ", k, " (tensor ", item.tensor_id, ")");
    if (item.action != ItemAction::kSwap) {
      return per_op(which + " is not a swap: the hook replay only copies");
    }
    if (item.wraps) return per_op(which + " wraps the iteration boundary");
    if (item.tier != 0) return per_op(which + " goes to a tier other than the host");
    auto known = by_trace_id.find(item.tensor_id);
    if (known != by_trace_id.end() && trace.lifetime(known->second).alloc_op >= iter.op_begin &&
        trace.lifetime(known->second).alloc_op < first_forward) {
      ++out.before_forward_items;
      continue;
    }
    auto pack = first_pack.find(item.tensor_id);
    if (pack == first_pack.end()) {
      return per_op(which + " is never saved for backward (no pack event names it)");
    }
    const SavedClockWindow w =
        SnapSavedWindow(positions, pack->second, item.release_op + 1, item.swap_in_op);
    if (w.resident()) {
      ++out.resident_items;
      continue;
    }
    PolicyItem snapped = item;
    snapped.swap_out_op = snapped.release_op = positions[w.release_event] - 1;
    snapped.release_waits_for_copy = true;
    snapped.swap_in_op = positions[w.restore_event];
    out.policy.items.push_back(snapped);
    if (with_runtime) out.policy.runtime.items.push_back(policy.runtime.items[k]);
    ++out.snapped_items;
  }
  return out;
}

}  // namespace swapplan
