#include "swapplan/sim/op_durations.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace swapplan {

absl::string_view DurationSourceName(DurationSource s) {
  switch (s) {
    case DurationSource::kRecorded:
      return "recorded";
    case DurationSource::kEstimated:
      return "estimated (Eq. 1)";
    case DurationSource::kMixed:
      return "mixed (recorded + Eq. 1)";
  }
  return "recorded";
}

absl::StatusOr<OpDurations> ComputeOpDurations(const Trace& trace, int32_t iteration) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("iteration ", iteration, " is out of range (",
                                                   trace.source(), " has ", trace.num_iterations(),
                                                   " iterations)"));
  }
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  OpDurations d;
  d.duration_ns.resize(n);
  int64_t recorded_sum = 0;
  int32_t missing = 0;
  for (int32_t i = 0; i < n; ++i) {
    const int64_t v = trace.op(iter.op_begin + i).duration_ns;
    d.duration_ns[i] = v;
    if (v < 0) {
      ++missing;
    } else {
      recorded_sum += v;
    }
  }
  if (missing == 0) {
    d.source = DurationSource::kRecorded;
    d.total_ns = recorded_sum;
    return d;
  }
  if (iter.wall_time_ns <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(trace.source(), ": iteration ", iteration, " has ", missing, " of ", n,
                     " ops without a duration and no wall time to estimate them from (Eq. 1)"));
  }
  d.source = missing == n ? DurationSource::kEstimated : DurationSource::kMixed;
  const int64_t rest = std::max<int64_t>(0, iter.wall_time_ns - recorded_sum);
  int32_t k = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (d.duration_ns[i] >= 0) continue;
    const __int128 lo = static_cast<__int128>(rest) * k / missing;
    const __int128 hi = static_cast<__int128>(rest) * (k + 1) / missing;
    d.duration_ns[i] = static_cast<int64_t>(hi - lo);
    ++k;
  }
  d.total_ns = recorded_sum + rest;
  return d;
}

}  // namespace swapplan
