#include "swapplan/planners/advisor/advisor_planner.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/advisor/problem.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

AdvisorOptions AdvisorPlanner::CompareDefaults() {
  AdvisorOptions o;
  o.search.max_generations = 30;
  o.search.time_limit_ns = 20'000'000'000;
  return o;
}

absl::StatusOr<Policy> AdvisorPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<AdvisorProblem> ap,
                            AdvisorProblem::Create(problem, options_, sim_options_));
  GeneticSearch search(*ap, options_);
  SWAPPLAN_ASSIGN_OR_RETURN(SearchResult r, search.Run(progress_));
  Policy policy = r.plan.policy;
  last_ = std::move(r);
  return policy;
}

absl::Status AdvisorPlanner::SetOption(absl::string_view name, absl::string_view value) {
  AdvisorOptions next = options_;  // committed only when valid
  SWAPPLAN_RETURN_IF_ERROR(AdvisorOptionTable().Set("advisor", &next, name, value));
  SWAPPLAN_RETURN_IF_ERROR(next.Validate());
  options_ = std::move(next);
  return absl::OkStatus();
}

std::vector<OptionInfo> AdvisorPlanner::DescribeOptions() const {
  return AdvisorOptionTable().Describe(options_);
}

}  // namespace swapplan
