#include "swapplan/trace/op_times.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "swapplan/util/checked.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/utf8.h"

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

absl::StatusOr<OpDurations> ComputeOpDurations(const Trace& trace, int32_t iteration,
                                               OpTimeModel model, int64_t iteration_time_ns,
                                               double compute_time_scale) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("iteration ", iteration, " is out of range (",
                                                   trace.source(), " has ",
                                                   trace.num_iterations(), " iterations)"));
  }
  if (iteration_time_ns < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("iteration time ", iteration_time_ns, " ns is negative"));
  }
  if (!(compute_time_scale > 0) || !std::isfinite(compute_time_scale)) {
    return absl::InvalidArgumentError(absl::StrCat("compute time scale ", compute_time_scale,
                                                   " is not positive and finite"));
  }
  // Recorded times (op durations, the wall time) on the device planned for.
  // A scaled time past int64 ns is an input error naming the record (issue
  // 19: llround of an out-of-range double is unspecified, and came back as a
  // negative "no duration").
  auto scaled = [compute_time_scale](int64_t ns, const auto& where) -> absl::StatusOr<int64_t> {
    if (compute_time_scale == 1.0) return ns;
    const double x = std::round(static_cast<double>(ns) * compute_time_scale);
    if (!(x < 9223372036854775808.0)) {
      return OverflowError(where(), absl::StrCat(ns, " ns x compute time scale ",
                                                 compute_time_scale,
                                                 " overflows 64-bit nanoseconds"));
    }
    return static_cast<int64_t>(x);
  };
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  OpDurations d;
  d.duration_ns.resize(n);
  auto op_where = [&](int32_t i) {
    return absl::StrCat(trace.source(), ": iteration ", iteration, ", op ", i, " (",
                        EscapeForMessage(trace.op_name_at(iter.op_begin + i)), ")");
  };
  // Durations are checked sums (util/checked.h); Finish() bounded the total
  // of all recorded durations, so for a Finish()-built trace they fit.
  int64_t recorded_sum = 0;
  int32_t missing = 0;
  for (int32_t i = 0; i < n; ++i) {
    const int64_t recorded = trace.op(iter.op_begin + i).duration_ns;
    int64_t v = -1;
    if (model != OpTimeModel::kEq1 && recorded >= 0) {
      SWAPPLAN_ASSIGN_OR_RETURN(v, scaled(recorded, [&] { return op_where(i); }));
    }
    d.duration_ns[i] = v;
    if (v < 0) {
      ++missing;
    } else {
      SWAPPLAN_ASSIGN_OR_RETURN(recorded_sum,
                                AddOrError(recorded_sum, v, [&] { return op_where(i); }));
    }
  }
  if (model == OpTimeModel::kRecorded && missing > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        trace.source(), ": iteration ", iteration, ": op times 'recorded' need a duration on "
        "every op, and ", missing, " of ", n, " ops have none"));
  }
  if (missing == 0 && iteration_time_ns == 0) {
    d.source = DurationSource::kRecorded;
    d.total_ns = recorded_sum;
    return d;
  }
  if (missing == 0) {
    // An explicit iteration time asks for Eq. (1) over every op.
    std::fill(d.duration_ns.begin(), d.duration_ns.end(), -1);
    missing = n;
    recorded_sum = 0;
  }
  int64_t t = iteration_time_ns;
  if (t == 0) {
    SWAPPLAN_ASSIGN_OR_RETURN(t, scaled(iter.wall_time_ns, [&] {
      return absl::StrCat(trace.source(), ": iteration ", iteration, " (wall_time_ns)");
    }));
  }
  if (t == 0 && iteration_time_ns == 0 && iter.wall_time_ns > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        trace.source(), ": iteration ", iteration, ": its wall time ", iter.wall_time_ns,
        " ns x compute time scale ", compute_time_scale,
        " rounds to 0 ns, and Eq. (1) needs a positive time for the ", missing, " of ", n,
        " ops without a duration (use a larger compute time scale)"));
  }
  if (t <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        trace.source(), ": iteration ", iteration, ": ", missing, " of ", n,
        " ops have no duration and Eq. (1) needs the iteration's wall time, which was not "
        "recorded (give the iteration time, or record op durations)"));
  }
  d.source = missing == n ? DurationSource::kEstimated : DurationSource::kMixed;
  // t >= 0 and recorded_sum >= 0: the difference cannot overflow.
  const int64_t rest = std::max<int64_t>(0, t - recorded_sum);
  int32_t k = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (d.duration_ns[i] >= 0) continue;
    // Exact even-split of `rest` (rest * k < 2^94 fits in 128 bits).
    const __int128 lo = static_cast<__int128>(rest) * k / missing;
    const __int128 hi = static_cast<__int128>(rest) * (k + 1) / missing;
    d.duration_ns[i] = static_cast<int64_t>(hi - lo);
    ++k;
  }
  // max(t, recorded_sum): fits.
  d.total_ns = recorded_sum + rest;
  return d;
}

absl::StatusOr<OpTimeline> OpTimeline::Build(const Trace& trace, int32_t iteration,
                                             OpTimeModel model, int64_t iteration_time_ns,
                                             double compute_time_scale) {
  SWAPPLAN_ASSIGN_OR_RETURN(OpDurations d, ComputeOpDurations(trace, iteration, model,
                                                              iteration_time_ns,
                                                              compute_time_scale));
  OpTimeline tl;
  tl.source_ = d.source;
  tl.end_ns_.resize(d.duration_ns.size());
  int64_t sum = 0;
  for (size_t i = 0; i < d.duration_ns.size(); ++i) {
    SWAPPLAN_ASSIGN_OR_RETURN(
        sum, AddOrError(sum, d.duration_ns[i], [&] {
          return absl::StrCat(trace.source(), ": iteration ", iteration, ", op ", i,
                              ": the op end times");
        }));
    tl.end_ns_[i] = static_cast<double>(sum);
  }
  tl.iteration_time_ns_ = d.total_ns;
  if (tl.total_ns() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(trace.source(), ": iteration ", iteration,
                     ": the ops' durations sum to 0 ns; nothing can overlap with them"));
  }
  return tl;
}

int32_t OpTimeline::OpEndingAtOrAfter(double t) const {
  return static_cast<int32_t>(std::lower_bound(end_ns_.begin(), end_ns_.end(), t) -
                              end_ns_.begin());
}

}  // namespace swapplan

namespace swapplan {

absl::Status OpTimeline::AddComputeBefore(absl::Span<const int64_t> extra_ns) {
  if (extra_ns.size() != end_ns_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("timeline: ", extra_ns.size(),
                                                   " extra compute times for ", end_ns_.size(),
                                                   " ops"));
  }
  double shift = 0;
  for (size_t i = 0; i < end_ns_.size(); ++i) {
    if (extra_ns[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("timeline: extra compute before op ", i, " is ", extra_ns[i], " ns"));
    }
    shift += static_cast<double>(extra_ns[i]);
    end_ns_[i] += shift;
  }
  return absl::OkStatus();
}

}  // namespace swapplan
