#include "swapplan/trace/op_times.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace swapplan {

absl::string_view OpTimeModelName(OpTimeModel m) {
  switch (m) {
    case OpTimeModel::kAuto:
      return "auto";
    case OpTimeModel::kEq1:
      return "eq1";
    case OpTimeModel::kRecorded:
      return "recorded";
  }
  return "auto";
}

bool ParseOpTimeModel(absl::string_view name, OpTimeModel* out) {
  for (OpTimeModel m : {OpTimeModel::kAuto, OpTimeModel::kEq1, OpTimeModel::kRecorded}) {
    if (name == OpTimeModelName(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

absl::StatusOr<OpTimeline> OpTimeline::Build(const Trace& trace, int32_t iteration,
                                             OpTimeModel model, int64_t iteration_time_ns) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("op timeline: iteration ", iteration,
                                                   " is out of range (", trace.source(), " has ",
                                                   trace.num_iterations(), " iterations)"));
  }
  if (iteration_time_ns < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("op timeline: iteration time ", iteration_time_ns, " ns is negative"));
  }
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  bool all_durations = true;
  for (OpIndex i = iter.op_begin; i < iter.op_end && all_durations; ++i) {
    all_durations = trace.op(i).duration_ns >= 0;
  }
  if (model == OpTimeModel::kAuto) {
    model = all_durations && iteration_time_ns == 0 ? OpTimeModel::kRecorded : OpTimeModel::kEq1;
  }
  OpTimeline tl;
  tl.model_ = model;
  tl.end_ns_.resize(n);
  if (model == OpTimeModel::kRecorded) {
    if (!all_durations) {
      return absl::InvalidArgumentError(absl::StrCat(
          trace.source(), ": iteration ", iteration,
          ": op times 'recorded' need a duration on every op, and some ops have none"));
    }
    int64_t sum = 0;
    for (int32_t i = 0; i < n; ++i) {
      sum += trace.op(iter.op_begin + i).duration_ns;
      tl.end_ns_[i] = static_cast<double>(sum);
    }
    tl.iteration_time_ns_ = sum;
  } else {
    const int64_t t = iteration_time_ns > 0 ? iteration_time_ns : iter.wall_time_ns;
    if (t <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          trace.source(), ": iteration ", iteration,
          ": Eq. (1) op times need the iteration's wall time, and none was recorded "
          "(give the iteration time, or record op durations)"));
    }
    // end(i) = T * (i + 1) / N, computed per op rather than summed so that
    // round numbers stay exact and no error accumulates.
    for (int32_t i = 0; i < n; ++i) {
      tl.end_ns_[i] = static_cast<double>(t) * static_cast<double>(i + 1) / static_cast<double>(n);
    }
    tl.iteration_time_ns_ = t;
  }
  if (tl.total_ns() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(trace.source(), ": iteration ", iteration,
                     ": the ops' recorded durations sum to 0 ns; nothing can overlap with them"));
  }
  return tl;
}

int32_t OpTimeline::OpEndingAtOrAfter(double t) const {
  return static_cast<int32_t>(std::lower_bound(end_ns_.begin(), end_ns_.end(), t) -
                              end_ns_.begin());
}

}  // namespace swapplan
