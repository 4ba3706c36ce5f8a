// Full recomputation baseline (see baselines.h).
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/baselines/baselines.h"
#include "planners/baselines/common.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/sim/checker.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::Status RecomputeOptions::Validate() const {
  if (logical_layers < 0) {
    return absl::InvalidArgumentError(absl::StrCat("recompute options: logical_layers is ",
                                                   logical_layers, "; must be >= 0 (0 = default)"));
  }
  return absl::OkStatus();
}

const OptionTable<RecomputeOptions>& RecomputeOptionTable() {
  using O = RecomputeOptions;
  static const OptionTable<O> table({
      {"logical_layers", OptionType::kInt,
       "Logical layers per phase when the trace has no layer hints (0: metadata model_layers, "
       "else 12)",
       "", [](const O& o) { return absl::StrCat(o.logical_layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.logical_layers); }},
  });
  return table;
}

absl::Status RecomputePlanner::SetOption(absl::string_view name, absl::string_view value) {
  return RecomputeOptionTable().SetValidated("recompute", &options_, name, value);
}

absl::StatusOr<Policy> RecomputePlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const Trace& trace = *problem.trace;
  const int32_t it = problem.iteration;
  const IterationInfo& iter = trace.iteration(it);
  SWAPPLAN_ASSIGN_OR_RETURN(
      OpDurations durations,
      ComputeOpDurations(trace, it, OpTimeModel::kAuto, 0, problem.device.compute_time_scale));
  SWAPPLAN_ASSIGN_OR_RETURN(LayerSegments layers,
                            SegmentLayers(trace, it, options_.logical_layers));
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> unswapped, IterationUnswappedBytes(problem));

  // Dropped activations per forward segment: made and used (forward) only
  // inside it. The first use in the iteration is the producing op.
  std::map<int32_t, std::vector<ActivationWindow>> groups;
  for (const ActivationWindow& w : ActivationWindows(trace, it)) {
    absl::Span<const OpIndex> uses = trace.tensor_uses(w.tensor);
    const OpIndex first =
        *std::lower_bound(uses.begin(), uses.end(), iter.op_begin) - iter.op_begin;
    const int32_t seg = layers.segment_of_op[first];
    if (seg < 0 || layers.segments[seg].phase != Phase::kForward) continue;
    if (layers.segment_of_op[w.last_forward_use] != seg) continue;  // a later layer's input
    groups[seg].push_back(w);
  }
  Policy p = BaselinePolicy(problem, name(), RecomputeOptionTable().ToParameters(options_));
  for (auto& [seg, windows] : groups) {
    const LayerSegment& s = layers.segments[seg];
    int64_t forward_ns = 0;
    for (int32_t i = s.first_op; i <= s.last_op; ++i) forward_ns += durations.duration_ns[i];
    // The re-run happens when the first dropped tensor is needed.
    AppendGroupRecompute(trace, it, windows, forward_ns, &p);
  }
  SWAPPLAN_RETURN_IF_ERROR(MakeRecomputeExact(problem, &p));
  int64_t total_recompute = 0;
  for (const PolicyItem& item : p.items) total_recompute += item.recompute_ns;
  p.expected_overhead_ns = total_recompute;
  SWAPPLAN_RETURN_IF_ERROR(CheckPolicyFits(
      problem, unswapped,
      absl::StrCat("dropping ", p.items.size(), " activations of ", groups.size(), " layers"), &p));
  // The peak with the recipes' transients (the checker's exact account).
  CheckOptions check;
  check.device = problem.device;
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport report, CheckPolicy(trace, p, check));
  p.expected_peak_bytes = report.peak_bytes;
  if (report.peak_bytes > problem.budget_bytes()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        name(), ": dropping ", p.items.size(), " activations peaks at ", report.peak_bytes,
        " bytes at op ", report.peak_op, " while a layer is recomputed (its transient), ",
        report.peak_bytes - problem.budget_bytes(), " bytes over the budget of ",
        problem.budget_bytes()));
  }
  return p;
}

}  // namespace swapplan
