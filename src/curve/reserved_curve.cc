// Reserved-bytes curve (reserved_curve.h): sequences from lifetimes and
// policy items, and their replay through an allocator model.
#include "swapplan/curve/reserved_curve.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::Status AllocReplayOptions::Validate() const {
  if (pinned_segments < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("replay options: pinned_segments is ", pinned_segments, "; must be >= 0"));
  }
  return absl::OkStatus();
}

namespace {

// Builds the steps from on-device intervals: tensors (positions), and the
// items that take them off (release) and bring them back (in).
AllocationSequence Build(const Trace& trace, absl::Span<const ResolvedTensor> tensors,
                         absl::Span<const ResolvedItem> items, int32_t n) {
  AllocationSequence s;
  s.num_positions = n;
  const int32_t slots = static_cast<int32_t>(tensors.size());
  s.slot_tensor.reserve(slots);
  // Per position + 1 (index 0: before the first position): swap-ins, trace
  // allocations; per position: frees.
  std::vector<std::vector<int32_t>> back_in(n + 1), allocs(n + 1), frees(n);
  std::vector<bool> starts_off(slots, false);
  for (const ResolvedItem& it : items) {
    back_in[it.in + 1].push_back(it.slot);
    frees[it.release].push_back(it.slot);
    if (it.wraps) starts_off[it.slot] = true;
  }
  for (int32_t slot = 0; slot < slots; ++slot) {
    const ResolvedTensor& t = tensors[slot];
    s.slot_tensor.push_back(t.id);
    if (!starts_off[slot]) allocs[std::max(t.alloc, -1) + 1].push_back(slot);
    if (t.free < n) frees[t.free].push_back(slot);
  }
  for (int32_t p = -1; p < n; ++p) {
    for (const auto* list : {&back_in[p + 1], &allocs[p + 1]}) {
      for (int32_t slot : *list) {
        s.steps.push_back({AllocationStep::Kind::kAlloc, p, slot,
                           trace.tensor(s.slot_tensor[slot]).size_bytes, 0});
      }
    }
    if (p < 0) continue;
    std::sort(frees[p].begin(), frees[p].end());
    for (int32_t slot : frees[p]) {
      s.steps.push_back({AllocationStep::Kind::kFree, p, slot, 0, 0});
    }
  }
  return s;
}

}  // namespace

absl::StatusOr<AllocationSequence> SequenceOfIteration(const Trace& trace, int32_t iteration) {
  SWAPPLAN_ASSIGN_OR_RETURN(PolicyResolver r, PolicyResolver::Create(trace, iteration));
  return Build(trace, r.tensors(), {}, r.num_ops());
}

AllocationSequence SequenceOfPolicy(const Trace& trace, const ResolvedPolicy& policy) {
  return Build(trace, policy.tensors, policy.items, policy.num_ops);
}

namespace {

// One pass of the replay; stops after the allocations of `stop_at` unless
// it is kNoStop (the model is left in that state).
constexpr int32_t kNoStop = -2;

struct Pass {
  std::unique_ptr<AllocatorModel> model;
  std::vector<AllocBlockId> block_of_slot;
  absl::flat_hash_map<AllocBlockId, int32_t> slot_of_block;
};

absl::Status Run(const AllocationSequence& s, const AllocatorOptions& options, int32_t stop_at,
                 ReservedCurve* curve, Pass* pass) {
  pass->model = MakeAllocatorModel(options);
  pass->block_of_slot.assign(s.slot_tensor.size(), -1);
  AllocatorModel& m = *pass->model;
  const int32_t n = s.num_positions;
  auto record = [&](int32_t p) {
    if (curve == nullptr || p < 0) return;
    const AllocatorStats& st = m.stats();
    curve->reserved_bytes[p] = st.reserved_bytes;
    curve->allocated_bytes[p] = st.allocated_bytes;
    curve->requested_bytes[p] = st.requested_bytes;
    curve->largest_free_bytes[p] = st.largest_free_bytes;
  };
  size_t k = 0;
  for (int32_t p = -1; p < n; ++p) {
    for (; k < s.steps.size() && s.steps[k].position == p &&
           s.steps[k].kind != AllocationStep::Kind::kFree;
         ++k) {
      const AllocationStep& st = s.steps[k];
      if (st.kind == AllocationStep::Kind::kEmptyCache) {
        m.EmptyCache();
        continue;
      }
      if (st.bytes < 0 || st.bytes > kMaxAllocatorRequestBytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "allocator replay: position ", p, " requests ", st.bytes,
            " bytes (at most ", kMaxAllocatorRequestBytes, ")"));
      }
      if (pass->block_of_slot[st.slot] >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("allocator replay: position ", p, " allocates slot ", st.slot, " twice"));
      }
      MallocResult r = m.Malloc(st.bytes, st.stream);
      pass->block_of_slot[st.slot] = r.block;
      if (stop_at != kNoStop) pass->slot_of_block[r.block] = st.slot;
      if (r.oom && curve != nullptr && curve->first_oom_position < 0) {
        curve->first_oom_position = std::max(p, 0);
      }
    }
    record(p);
    if (p == stop_at) return absl::OkStatus();
    for (; k < s.steps.size() && s.steps[k].position == p; ++k) {
      const AllocationStep& st = s.steps[k];
      if (st.kind != AllocationStep::Kind::kFree) {
        return absl::InvalidArgumentError(absl::StrCat(
            "allocator replay: position ", p, ": an allocation after a free (steps out of order)"));
      }
      const AllocBlockId b = pass->block_of_slot[st.slot];
      if (b < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "allocator replay: position ", p, " frees slot ", st.slot, ", which is not allocated"));
      }
      m.Free(b);
      pass->block_of_slot[st.slot] = -1;
      if (stop_at != kNoStop) pass->slot_of_block.erase(b);
    }
  }
  if (k != s.steps.size()) {
    return absl::InvalidArgumentError("allocator replay: steps out of position order");
  }
  if (curve != nullptr) curve->ooms = m.stats().ooms;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReservedCurve> ReplayAllocations(const AllocationSequence& sequence,
                                                const AllocatorOptions& options,
                                                const AllocReplayOptions& replay) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_RETURN_IF_ERROR(replay.Validate());
  const int32_t n = sequence.num_positions;
  ReservedCurve c;
  c.options = options;
  for (auto* v : {&c.reserved_bytes, &c.allocated_bytes, &c.requested_bytes,
                  &c.largest_free_bytes}) {
    v->assign(n, 0);
  }
  Pass pass;
  SWAPPLAN_RETURN_IF_ERROR(Run(sequence, options, kNoStop, &c, &pass));
  for (int32_t p = 0; p < n; ++p) {
    if (c.peak_position < 0 || c.reserved_bytes[p] > c.peak_reserved_bytes) {
      c.peak_reserved_bytes = c.reserved_bytes[p];
      c.peak_position = p;
    }
    if (c.peak_requested_position < 0 || c.requested_bytes[p] > c.peak_requested_bytes) {
      c.peak_requested_bytes = c.requested_bytes[p];
      c.peak_requested_position = p;
    }
  }
  if (c.peak_position < 0 || replay.pinned_segments == 0) return c;
  // The segments at the peak: replay again up to it.
  Pass at_peak;
  SWAPPLAN_RETURN_IF_ERROR(Run(sequence, options, c.peak_position, nullptr, &at_peak));
  for (const AllocSegmentInfo& seg : at_peak.model->Segments()) {
    if (seg.free_bytes() == 0) continue;
    PinnedSegment ps;
    ps.bytes = seg.bytes;
    ps.free_bytes = seg.free_bytes();
    std::vector<std::pair<int64_t, TensorId>> held;
    for (const AllocBlockInfo& b : seg.blocks) {
      if (!b.allocated) {
        ps.largest_free_bytes = std::max(ps.largest_free_bytes, b.bytes);
        continue;
      }
      auto it = at_peak.slot_of_block.find(b.block);
      if (it != at_peak.slot_of_block.end()) {
        held.push_back({-b.bytes, sequence.slot_tensor[it->second]});
      }
    }
    std::sort(held.begin(), held.end());
    for (const auto& [neg, t] : held) ps.tensors.push_back(t);
    c.pinned.push_back(std::move(ps));
  }
  std::stable_sort(c.pinned.begin(), c.pinned.end(),
                   [](const PinnedSegment& a, const PinnedSegment& b) {
                     return a.free_bytes > b.free_bytes;
                   });
  if (c.pinned.size() > static_cast<size_t>(replay.pinned_segments)) {
    c.pinned.resize(replay.pinned_segments);
  }
  return c;
}

absl::StatusOr<ReservedCurve> PolicyReservedCurve(const Trace& trace, const Policy& policy,
                                                  const DeviceModel& device,
                                                  const AllocatorOptions& options,
                                                  const AllocReplayOptions& replay) {
  SWAPPLAN_ASSIGN_OR_RETURN(PolicyResolver r,
                            PolicyResolver::Create(trace, policy.fingerprint.iteration));
  SWAPPLAN_ASSIGN_OR_RETURN(ResolvedPolicy rp, r.Resolve(policy, device));
  return ReplayAllocations(SequenceOfPolicy(trace, rp), options, replay);
}

}  // namespace swapplan
