// ideal and noswap: the two baselines without items.
#include "swapplan/planners/baselines/baselines.h"
#include "planners/baselines/common.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::StatusOr<Policy> IdealPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> unswapped, IterationUnswappedBytes(problem));
  Policy p = BaselinePolicy(problem, name(), {});  // no options
  p.expected_peak_bytes = PolicyPeak(unswapped, p).bytes;
  return p;
}

absl::StatusOr<Policy> NoSwapPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> unswapped, IterationUnswappedBytes(problem));
  Policy p = BaselinePolicy(problem, name(), {});
  SWAPPLAN_RETURN_IF_ERROR(
      CheckPolicyFits(problem, unswapped, "the iteration without swapping", &p));
  return p;
}

}  // namespace swapplan
