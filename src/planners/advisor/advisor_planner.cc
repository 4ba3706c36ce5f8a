#include "swapplan/planners/advisor/advisor_planner.h"

#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "swapplan/planners/advisor/problem.h"
#include "swapplan/planners/registry.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

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

namespace {

absl::Status BadValue(absl::string_view name, absl::string_view value, absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("advisor option ", name, ": '", value, "' is not ", want));
}

}  // namespace

absl::Status AdvisorPlanner::SetOption(absl::string_view name, absl::string_view value) {
  AdvisorOptions next = options_;  // committed only when valid
  SearchOptions& s = next.search;
  int64_t i = 0;
  double d = 0;
  if (name == "time-limit") {
    absl::StatusOr<int64_t> ns = ParseDurationNs(value);
    if (!ns.ok()) return BadValue(name, value, "a duration like 30s");
    s.time_limit_ns = *ns;
  } else if (name == "generations" || name == "population" || name == "threads" ||
             name == "convergence" || name == "elites") {
    if (!absl::SimpleAtoi(value, &i) || i < 0 || i > INT32_MAX) {
      return BadValue(name, value, "a non-negative integer");
    }
    const int32_t v = static_cast<int32_t>(i);
    if (name == "generations") s.max_generations = v;
    if (name == "population") s.population = v;
    if (name == "threads") s.threads = v;
    if (name == "convergence") s.convergence_generations = v;
    if (name == "elites") s.elites = v;
  } else if (name == "seeds") {
    next.seed_planners.clear();
    if (value != "none") {
      for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        if (FindPlanner(part) == nullptr) {
          return BadValue(name, value, absl::StrCat("a list of planners (known: ", PlannerNames(), ") or none"));
        }
        next.seed_planners.emplace_back(part);
      }
    }
  } else if (name == "seed-mutants" || name == "local-search") {
    if (!absl::SimpleAtoi(value, &i) || i < 0 || i > INT32_MAX) {
      return BadValue(name, value, "a non-negative integer");
    }
    (name == "seed-mutants" ? s.seed_mutants : s.local_search_moves) = static_cast<int32_t>(i);
  } else if (name == "seed") {
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(value, &seed)) return BadValue(name, value, "an unsigned integer");
    s.seed = seed;
  } else if (name == "mutation" || name == "temperature") {
    if (!absl::SimpleAtod(value, &d)) return BadValue(name, value, "a number");
    (name == "mutation" ? s.mutation_probability : s.selection_temperature) = d;
  } else if (name == "initial") {
    if (!ParseInitialPopulation(value, &s.initial)) {
      return BadValue(name, value, "recorded or random");
    }
  } else if (name == "param-residency") {
    if (!ParseParamResidency(value, &next.planner.param_residency)) {
      return BadValue(name, value, "double-pass or start-on-host");
    }
  } else if (name == "threshold") {
    if (value == "-1" || value == "auto") {
      next.planner.eviction_threshold_ns = -1;
    } else {
      absl::StatusOr<int64_t> ns = ParseDurationNs(value);
      if (!ns.ok()) return BadValue(name, value, "a duration like 10us, or auto");
      next.planner.eviction_threshold_ns = *ns;
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "advisor has no option '", name,
        "' (known: time-limit, generations, population, mutation, threads, seed, convergence, "
        "temperature, elites, initial, param-residency, threshold, seeds, seed-mutants, "
        "local-search)"));
  }
  SWAPPLAN_RETURN_IF_ERROR(next.Validate());
  options_ = std::move(next);
  return absl::OkStatus();
}

}  // namespace swapplan
