#include "swapplan/varying/segment.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "recorded_op.h"
#include "swapplan/trace/builder.h"

namespace swapplan {

absl::string_view IterationBoundaryName(IterationBoundary b) {
  return b == IterationBoundary::kOptimizerEnd ? "optimizer" : "trace";
}

bool ParseIterationBoundary(absl::string_view name, IterationBoundary* out) {
  if (name == "trace") {
    *out = IterationBoundary::kTrace;
  } else if (name == "optimizer") {
    *out = IterationBoundary::kOptimizerEnd;
  } else {
    return false;
  }
  return true;
}

std::vector<OpRange> RuntimeIterations(const Trace& trace, IterationBoundary boundary) {
  std::vector<OpRange> out;
  out.reserve(trace.num_iterations());
  OpIndex begin = 0;
  for (int32_t it = 0; it < trace.num_iterations(); ++it) {
    const IterationInfo& info = trace.iteration(it);
    OpIndex end = info.op_end;
    if (boundary == IterationBoundary::kOptimizerEnd && it + 1 < trace.num_iterations()) {
      for (OpIndex op = info.op_end - 1; op >= info.op_begin; --op) {
        if (trace.op(op).phase == Phase::kOptimizer) {
          end = op + 1;
          break;
        }
      }
    }
    if (end > begin) {
      out.push_back({begin, end});
      begin = end;
    }
  }
  if (begin < trace.num_ops()) {
    // Only reachable when the last ranges were empty: extend the last one.
    if (out.empty()) {
      out.push_back({begin, trace.num_ops()});
    } else {
      out.back().end = trace.num_ops();
    }
  }
  return out;
}

SegmentExtractor::SegmentExtractor(const Trace& trace, std::vector<OpRange> ranges)
    : trace_(&trace), ranges_(std::move(ranges)) {
  auto segment_of = [&](OpIndex op) -> int32_t {
    // Index of the range containing op; -1 before the first, S after.
    if (op < 0) return -1;
    if (op >= trace.num_ops()) return static_cast<int32_t>(ranges_.size());
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), op,
                               [](OpIndex v, const OpRange& r) { return v < r.begin; });
    return static_cast<int32_t>(it - ranges_.begin()) - 1;
  };
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (!lt.occupies_device()) continue;
    if (segment_of(lt.alloc_op) != segment_of(lt.free_op)) crossing_.push_back(t);
  }
  stamp_.assign(trace.num_tensors(), -1);
}

absl::StatusOr<Trace> SegmentExtractor::Extract(int32_t i) {
  const Trace& tr = *trace_;
  const OpRange r = ranges_[i];
  TraceBuilder b(absl::StrCat(tr.source(), " (runtime iteration ", i, ")"));
  b.metadata() = tr.metadata();
  for (const std::string& name : tr.op_names()) b.AddOpName(name);

  // Tensors occupying the device during some op of the range.
  std::vector<TensorId> tensors;
  auto take = [&](TensorId t) {
    if (stamp_[t] == i) return;
    stamp_[t] = i;
    tensors.push_back(t);
  };
  for (TensorId t : crossing_) {
    const TensorLifetime& lt = tr.lifetime(t);
    if (lt.alloc_op < r.end && lt.free_op >= r.begin) take(t);
  }
  int64_t uses = 0;
  for (OpIndex op = r.begin; op < r.end; ++op) {
    for (TensorId t : tr.uses(op)) take(t);
    uses += static_cast<int64_t>(tr.uses(op).size());
  }
  // Events of the range: events are sorted by op.
  absl::Span<const MemoryEvent> events = tr.events();
  auto ev_lo = std::lower_bound(events.begin(), events.end(), r.begin,
                                [](const MemoryEvent& e, OpIndex v) { return e.op < v; });
  for (auto e = ev_lo; e != events.end() && e->op < r.end; ++e) {
    if (tr.lifetime(e->tensor).occupies_device()) take(e->tensor);
  }
  std::sort(tensors.begin(), tensors.end());
  b.Reserve(static_cast<int64_t>(tensors.size()), r.num_ops(), uses,
            2 * static_cast<int64_t>(tensors.size()));

  struct Ev {
    uint32_t op;
    MemoryEventKind kind;
    uint64_t id;
  };
  std::vector<Ev> evs;
  evs.reserve(2 * tensors.size());
  for (TensorId t : tensors) {
    const TensorInfo& info = tr.tensor(t);
    const TensorLifetime& lt = tr.lifetime(t);
    const bool from_before = lt.alloc_op < r.begin;
    const bool to_after = lt.free_op >= r.end;
    TensorSpec spec;
    spec.id = info.trace_id;
    spec.size_bytes = info.size_bytes;
    spec.dtype = info.dtype;
    spec.shape = tr.shape(t);
    spec.kind = info.kind;
    if (info.storage_id >= 0) spec.storage_id = info.storage_id;
    spec.device_address = info.device_address;
    spec.persistent = (from_before || to_after) ? 1 : 0;
    spec.name = tr.tensor_name(t);
    b.AddTensor(spec);
    if (!from_before) {
      evs.push_back({static_cast<uint32_t>(lt.alloc_op - r.begin), MemoryEventKind::kAlloc,
                     info.trace_id});
    }
    if (!to_after) {
      evs.push_back({static_cast<uint32_t>(lt.free_op - r.begin), MemoryEventKind::kFree,
                     info.trace_id});
    }
  }

  // Wall time: each source iteration's share in proportion to its ops taken.
  double wall = 0;
  for (int32_t it = tr.IterationOf(r.begin); it < tr.num_iterations(); ++it) {
    const IterationInfo& info = tr.iteration(it);
    if (info.op_begin >= r.end) break;
    const OpIndex lo = std::max(info.op_begin, r.begin);
    const OpIndex hi = std::min(info.op_end, r.end);
    wall += static_cast<double>(info.wall_time_ns) * (hi - lo) / info.num_ops();
  }

  b.BeginIteration();
  std::vector<uint64_t> in, out;
  for (OpIndex op = r.begin; op < r.end; ++op) {
    internal::AppendRecordedOp(tr, op, /*keep_allocator_bytes=*/true, b, in, out);
  }
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& c) { return a.op < c.op; });
  for (const Ev& e : evs) b.AddMemoryEvent(e.op, e.kind, e.id);
  b.EndIteration(static_cast<int64_t>(std::llround(wall)));
  return std::move(b).Finish();
}

}  // namespace swapplan
