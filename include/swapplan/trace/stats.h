// Trace statistics for summaries: op counts per phase, an op-name histogram,
// tensor counts and bytes per kind, iteration times.
//
//   TraceStats s = ComputeTraceStats(trace);
//   s.ops_per_phase[static_cast<int>(Phase::kBackward)];
//   s.top_op_names[0];   // {name id, count}, most frequent first
//
// Sums cannot overflow: the totals come from the Trace, whose Finish()
// checked them (rule overflow), and the per-kind byte counts are partial
// sums of the checked total of tensor sizes.
//
// Complexity: O(ops + tensors + names log names).
#ifndef SWAPPLAN_TRACE_STATS_H_
#define SWAPPLAN_TRACE_STATS_H_

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "swapplan/trace/trace.h"

namespace swapplan {

struct TraceStats {
  std::array<int64_t, kNumPhases> ops_per_phase{};
  // (name id, op count) sorted by count descending, then name id; all names
  // that occur.
  std::vector<std::pair<NameId, int64_t>> op_name_counts;
  std::array<int64_t, kNumTensorKinds> tensors_per_kind{};
  std::array<int64_t, kNumTensorKinds> bytes_per_kind{};
  // Sum and extremes of iteration wall times.
  int64_t total_wall_time_ns = 0;
  int64_t min_wall_time_ns = 0;
  int64_t max_wall_time_ns = 0;
  // Sum of recorded op durations (0 when none recorded).
  int64_t total_op_duration_ns = 0;
  int64_t memory_events = 0;
  int64_t passive_swaps = 0;  // SWAP_OUT events flagged passive
  int64_t active_swaps = 0;   // SWAP_OUT events a policy asked for
};

TraceStats ComputeTraceStats(const Trace& trace);

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_STATS_H_
