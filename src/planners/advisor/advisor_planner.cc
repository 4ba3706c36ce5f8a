#include "swapplan/planners/advisor/advisor_planner.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "swapplan/planners/advisor/problem.h"
#include "swapplan/planners/registry.h"
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
  if (islands_ != nullptr) search.SetIslands(islands_, island_options_);
  search.SetStop(stop_);
  // Seeds: the policies handed over, then every seed planner not among them.
  std::vector<SeedOutcome> failed;
  for (const Policy& p : seed_policies_) search.AddSeed(p.planner, p);
  for (const std::string& name : options_.seed_planners) {
    bool given = false;
    for (const Policy& p : seed_policies_) given = given || p.planner == name;
    if (given) continue;
    SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Planner> planner, CreatePlanner(name));
    absl::StatusOr<Policy> p = planner->Plan(problem);
    if (p.ok()) {
      search.AddSeed(name, *std::move(p));
    } else if (p.status().code() == absl::StatusCode::kResourceExhausted) {
      failed.push_back({name, -1, false, std::string(p.status().message())});
    } else {
      return absl::Status(p.status().code(),
                          absl::StrCat("advisor: seed planner ", name, ": ", p.status().message()));
    }
  }
  seed_policies_.clear();
  SWAPPLAN_ASSIGN_OR_RETURN(SearchResult r, search.Run(progress_));
  r.seeds.insert(r.seeds.end(), failed.begin(), failed.end());
  Policy policy = r.plan.policy;
  last_ = std::move(r);
  return policy;
}

absl::Status AdvisorPlanner::SetOption(absl::string_view name, absl::string_view value) {
  return AdvisorOptionTable().SetValidated("advisor", &options_, name, value);
}

std::vector<OptionInfo> AdvisorPlanner::DescribeOptions() const {
  return AdvisorOptionTable().Describe(options_);
}

}  // namespace swapplan
