#include "swapplan/planners/advisor/options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::string_view ParamResidencyName(ParamResidency r) {
  return r == ParamResidency::kStartOnHost ? "start-on-host" : "double-pass";
}

bool ParseParamResidency(absl::string_view name, ParamResidency* out) {
  if (name == "double-pass") {
    *out = ParamResidency::kDoublePass;
  } else if (name == "start-on-host") {
    *out = ParamResidency::kStartOnHost;
  } else {
    return false;
  }
  return true;
}

absl::string_view InitialPopulationName(InitialPopulation p) {
  return p == InitialPopulation::kRandom ? "random" : "recorded";
}

bool ParseInitialPopulation(absl::string_view name, InitialPopulation* out) {
  if (name == "recorded") {
    *out = InitialPopulation::kRecordedAndMutants;
  } else if (name == "random") {
    *out = InitialPopulation::kRandom;
  } else {
    return false;
  }
  return true;
}

namespace {

template <typename T>
absl::Status Bad(absl::string_view where, absl::string_view field, T value,
                 absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat(where, " options: ", field, " is ", value, "; ", rule));
}

}  // namespace

absl::Status SwapPlannerOptions::Validate() const {
  if (eviction_threshold_ns < -1) {
    return Bad("swap planner", "eviction_threshold_ns", eviction_threshold_ns,
               "must be >= 0 (or -1 for the per-class copy time)");
  }
  if (param_residency != ParamResidency::kDoublePass &&
      param_residency != ParamResidency::kStartOnHost) {
    return Bad("swap planner", "param_residency", static_cast<int>(param_residency),
               "unknown mode");
  }
  if (max_passes < 2) return Bad("swap planner", "max_passes", max_passes, "must be >= 2");
  return absl::OkStatus();
}

absl::Status SearchOptions::Validate() const {
  if (population < 2) return Bad("search", "population", population, "must be >= 2");
  if (!(mutation_probability >= 0 && mutation_probability <= 1)) {
    return Bad("search", "mutation_probability", mutation_probability, "must be in [0, 1]");
  }
  if (!(cnt_sigma_fraction >= 0) || !std::isfinite(cnt_sigma_fraction)) {
    return Bad("search", "cnt_sigma_fraction", cnt_sigma_fraction, "must be >= 0 and finite");
  }
  if (!(selection_temperature > 0) || !std::isfinite(selection_temperature)) {
    return Bad("search", "selection_temperature", selection_temperature,
               "must be > 0 and finite");
  }
  if (elites < 0 || elites > population) {
    return Bad("search", "elites", elites, "must be in [0, population]");
  }
  if (initial != InitialPopulation::kRecordedAndMutants && initial != InitialPopulation::kRandom) {
    return Bad("search", "initial", static_cast<int>(initial), "unknown mode");
  }
  if (time_limit_ns < 0) return Bad("search", "time_limit_ns", time_limit_ns, "must be >= 0");
  if (max_generations < 0) {
    return Bad("search", "max_generations", max_generations, "must be >= 0");
  }
  if (convergence_generations < 0) {
    return Bad("search", "convergence_generations", convergence_generations, "must be >= 0");
  }
  if (!(convergence_tolerance >= 0) || !std::isfinite(convergence_tolerance)) {
    return Bad("search", "convergence_tolerance", convergence_tolerance,
               "must be >= 0 and finite");
  }
  if (time_limit_ns == 0 && max_generations == 0 && convergence_generations == 0) {
    return absl::InvalidArgumentError(
        "search options: no stopping rule (set a time limit, a generation limit or a "
        "convergence window)");
  }
  if (threads < 0) return Bad("search", "threads", threads, "must be >= 0 (0 = all cores)");
  if (seed_mutants < 0) return Bad("search", "seed_mutants", seed_mutants, "must be >= 0");
  if (local_search_moves < 0) {
    return Bad("search", "local_search_moves", local_search_moves, "must be >= 0");
  }
  return absl::OkStatus();
}

absl::Status AdvisorOptions::Validate() const {
  SWAPPLAN_RETURN_IF_ERROR(planner.Validate());
  SWAPPLAN_RETURN_IF_ERROR(search.Validate());
  for (const std::string& name : seed_planners) {
    if (name == "advisor" || name == "ideal") {
      return absl::InvalidArgumentError(absl::StrCat(
          "advisor options: seed planner '", name,
          "' cannot seed the search (the advisor itself, or a policy judged without a budget)"));
    }
  }
  return graph.Validate();
}

std::vector<std::pair<std::string, std::string>> AdvisorOptions::Parameters() const {
  return {
      {"population", absl::StrCat(search.population)},
      {"mutation_probability", absl::StrCat(search.mutation_probability)},
      {"cnt_sigma_fraction", absl::StrCat(search.cnt_sigma_fraction)},
      {"selection_temperature", absl::StrCat(search.selection_temperature)},
      {"elites", absl::StrCat(search.elites)},
      {"initial", std::string(InitialPopulationName(search.initial))},
      {"time_limit_ns", absl::StrCat(search.time_limit_ns)},
      {"max_generations", absl::StrCat(search.max_generations)},
      {"convergence_generations", absl::StrCat(search.convergence_generations)},
      {"convergence_tolerance", absl::StrCat(search.convergence_tolerance)},
      {"seed", absl::StrCat(search.seed)},
      {"seed_mutants", absl::StrCat(search.seed_mutants)},
      {"local_search_moves", absl::StrCat(search.local_search_moves)},
      {"seed_planners", seed_planners.empty() ? "none" : absl::StrJoin(seed_planners, ",")},
      {"eviction_threshold_ns", absl::StrCat(planner.eviction_threshold_ns)},
      {"threshold_fallback", planner.threshold_fallback ? "true" : "false"},
      {"param_residency", std::string(ParamResidencyName(planner.param_residency))},
      {"max_passes", absl::StrCat(planner.max_passes)},
      {"order_optimizer_ops", graph.order_optimizer_ops ? "true" : "false"},
      {"order_side_effects", graph.order_side_effects ? "true" : "false"},
  };
}

}  // namespace swapplan
