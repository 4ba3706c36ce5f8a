// torch.autograd.graph.save_on_cpu baseline (see practice.h).
//
//   compute  |.. op u (saves t) ..|  wait  |.. op u+1 ..| ... |wait|.. op v (unpacks t) ..|
//   d2h                           |= out t =|
//   h2d                                                  |= in t =|
//
// The pack hook's .cpu() blocks until the copy is done, so op u+1 starts
// after it; the unpack's .to(device) is issued when backward reaches op v,
// which waits for it.
#include <utility>

#include "absl/strings/str_cat.h"
#include "planners/baselines/common.h"
#include "swapplan/planners/baselines/practice.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::Status SaveOnCpuOptions::Validate() const {
  if (min_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("save-on-cpu options: min_bytes is ", min_bytes, "; must be >= 0"));
  }
  return absl::OkStatus();
}

const OptionTable<SaveOnCpuOptions>& SaveOnCpuOptionTable() {
  using O = SaveOnCpuOptions;
  static const OptionTable<O> table({
      {"min_bytes", OptionType::kBytes,
       "Saved activations smaller than this stay on the device (0: every one, as save_on_cpu)",
       "", [](const O& o) { return absl::StrCat(o.min_bytes); },
       [](O& o, absl::string_view v) { return ParseOptionBytes(v, &o.min_bytes); }},
  });
  return table;
}

absl::Status SaveOnCpuPlanner::SetOption(absl::string_view name, absl::string_view value) {
  return SaveOnCpuOptionTable().SetValidated("save-on-cpu", &options_, name, value);
}

absl::StatusOr<Policy> SaveOnCpuPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const Trace& trace = *problem.trace;
  const int32_t it = problem.iteration;
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> unswapped, IterationUnswappedBytes(problem));
  Policy p = BaselinePolicy(problem, name(), SaveOnCpuOptionTable().ToParameters(options_));
  for (const ActivationWindow& w : ActivationWindows(trace, it)) {
    if (w.size_bytes < options_.min_bytes) continue;
    const int32_t u = w.last_forward_use, v = w.first_backward_use;
    PolicyItem item = MakePolicyItem(trace, it, w.tensor, u, u, v, v);
    // The synchronous pack: the next op waits for the copy out.
    item.release_waits_for_copy = true;
    p.items.push_back(std::move(item));
  }
  SWAPPLAN_RETURN_IF_ERROR(CheckPolicyFits(
      problem, unswapped, absl::StrCat("saving ", p.items.size(), " activations on the host"),
      &p));
  return p;
}

}  // namespace swapplan
