#include "swapplan/trace/stats.h"

#include <algorithm>

namespace swapplan {

TraceStats ComputeTraceStats(const Trace& trace) {
  TraceStats s;
  std::vector<int64_t> per_name(trace.num_op_names(), 0);
  for (OpIndex i = 0; i < trace.num_ops(); ++i) {
    const OpInfo& op = trace.op(i);
    ++s.ops_per_phase[static_cast<int>(op.phase)];
    ++per_name[op.name];
  }
  // Totals that Finish() checked (rule overflow); the per-kind byte sums
  // below are sums of subsets of total_tensor_bytes() and fit as well.
  s.total_op_duration_ns = trace.total_op_duration_ns();
  s.total_wall_time_ns = trace.total_wall_time_ns();
  for (NameId n = 0; n < trace.num_op_names(); ++n) {
    if (per_name[n] > 0) s.op_name_counts.emplace_back(n, per_name[n]);
  }
  std::sort(s.op_name_counts.begin(), s.op_name_counts.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorInfo& info = trace.tensor(t);
    ++s.tensors_per_kind[static_cast<int>(info.kind)];
    // A partial sum of sizes > 0: at most total_tensor_bytes(), which fits.
    s.bytes_per_kind[static_cast<int>(info.kind)] += info.size_bytes;
  }
  for (int32_t it = 0; it < trace.num_iterations(); ++it) {
    int64_t w = trace.iteration(it).wall_time_ns;
    s.min_wall_time_ns = it == 0 ? w : std::min(s.min_wall_time_ns, w);
    s.max_wall_time_ns = std::max(s.max_wall_time_ns, w);
  }
  s.memory_events = static_cast<int64_t>(trace.events().size());
  for (const MemoryEvent& e : trace.events()) {
    if (e.kind != MemoryEventKind::kSwapOut) continue;
    if (e.passive) {
      ++s.passive_swaps;
    } else {
      ++s.active_swaps;
    }
  }
  return s;
}

}  // namespace swapplan
