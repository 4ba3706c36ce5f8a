#include "swapplan/planners/advisor/options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
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
  return absl::OkStatus();
}

absl::Status AdvisorOptions::Validate() const {
  SWAPPLAN_RETURN_IF_ERROR(planner.Validate());
  SWAPPLAN_RETURN_IF_ERROR(search.Validate());
  return graph.Validate();
}

const OptionTable<AdvisorOptions>& AdvisorOptionTable() {
  using O = AdvisorOptions;
  using T = OptionType;
  static const OptionTable<O> table({
      {"population", T::kInt, "Individuals that survive each generation (seed 002: 144)", "",
       [](const O& o) { return absl::StrCat(o.search.population); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.search.population); }},
      {"mutation_probability", T::kDecimal, "Mutation probability P (seed 002: 0.1)", "",
       [](const O& o) { return absl::StrCat(o.search.mutation_probability); },
       [](O& o, absl::string_view v) {
         return ParseOptionDecimal(v, &o.search.mutation_probability);
       }},
      {"cnt_sigma_fraction", T::kDecimal,
       "CNT mutation: standard deviation as a fraction of the count", "",
       [](const O& o) { return absl::StrCat(o.search.cnt_sigma_fraction); },
       [](O& o, absl::string_view v) { return ParseOptionDecimal(v, &o.search.cnt_sigma_fraction); }},
      {"selection_temperature", T::kDecimal,
       "Softmax temperature of the survival draw (1 = seed 002's Eq. 1)", "",
       [](const O& o) { return absl::StrCat(o.search.selection_temperature); },
       [](O& o, absl::string_view v) {
         return ParseOptionDecimal(v, &o.search.selection_temperature);
       }},
      {"elites", T::kInt, "Fastest individuals that always survive (0 = seed 002)", "",
       [](const O& o) { return absl::StrCat(o.search.elites); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.search.elites); }},
      {"initial", T::kChoice,
       "First generation: the recorded order and mutants of it, or random orders",
       "recorded, random",
       [](const O& o) { return std::string(InitialPopulationName(o.search.initial)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseInitialPopulation, &o.search.initial,
                                  "recorded, random");
       }},
      {"time_limit_ns", T::kDurationNs, "Stop after this long, e.g. 60s (0 = no limit)", "",
       [](const O& o) { return absl::StrCat(o.search.time_limit_ns); },
       [](O& o, absl::string_view v) { return ParseOptionDurationNs(v, &o.search.time_limit_ns); }},
      {"max_generations", T::kInt, "Stop after this many generations (0 = no limit)", "",
       [](const O& o) { return absl::StrCat(o.search.max_generations); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.search.max_generations); }},
      {"convergence_generations", T::kInt,
       "Stop after this many generations without improving the best by more than the "
       "convergence tolerance (0 = never)",
       "", [](const O& o) { return absl::StrCat(o.search.convergence_generations); },
       [](O& o, absl::string_view v) {
         return ParseOptionInt(v, &o.search.convergence_generations);
       }},
      {"convergence_tolerance", T::kDecimal, "Relative improvement that counts as progress", "",
       [](const O& o) { return absl::StrCat(o.search.convergence_tolerance); },
       [](O& o, absl::string_view v) {
         return ParseOptionDecimal(v, &o.search.convergence_tolerance);
       }},
      {"threads", T::kInt, "Evaluation threads (0 = all cores; the result does not depend on it)",
       "", [](const O& o) { return absl::StrCat(o.search.threads); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.search.threads); }},
      {"seed", T::kUint, "Random seed (same seed, same result)", "",
       [](const O& o) { return absl::StrCat(o.search.seed); },
       [](O& o, absl::string_view v) { return ParseOptionUint(v, &o.search.seed); }},
      {"eviction_threshold_ns", T::kDurationNs,
       "Belady candidates last used at least this long ago, e.g. 10us (-1 or auto: the time to "
       "copy one object of the class out)",
       "", [](const O& o) { return absl::StrCat(o.planner.eviction_threshold_ns); },
       [](O& o, absl::string_view v) {
         if (v == "auto" || v == "-1") {
           o.planner.eviction_threshold_ns = -1;
           return absl::OkStatus();
         }
         return ParseOptionDurationNs(v, &o.planner.eviction_threshold_ns);
       }},
      {"threshold_fallback", T::kBool,
       "When no candidate meets the threshold, evict the Belady choice among all (false: the "
       "chromosome is infeasible)",
       "", [](const O& o) { return std::string(o.planner.threshold_fallback ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.planner.threshold_fallback); }},
      {"param_residency", T::kChoice,
       "Persistent tensors at the iteration boundary: double-pass (seed 002 §4.2) or "
       "start-on-host",
       "double-pass, start-on-host",
       [](const O& o) { return std::string(ParamResidencyName(o.planner.param_residency)); },
       [](O& o, absl::string_view v) {
         return ParseOptionChoice(v, &ParseParamResidency, &o.planner.param_residency,
                                  "double-pass, start-on-host");
       }},
      {"max_passes", T::kInt, "Passes of the double pass before falling back to pass 1's plan",
       "", [](const O& o) { return absl::StrCat(o.planner.max_passes); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.planner.max_passes); }},
      {"order_optimizer_ops", T::kBool,
       "Keep optimizer ops in their recorded order in the dataflow graph", "",
       [](const O& o) { return std::string(o.graph.order_optimizer_ops ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.graph.order_optimizer_ops); }},
      {"order_side_effects", T::kBool,
       "Keep ops with side effects in their recorded order in the dataflow graph", "",
       [](const O& o) { return std::string(o.graph.order_side_effects ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.graph.order_side_effects); }},
  });
  return table;
}

std::vector<std::pair<std::string, std::string>> AdvisorOptions::Parameters() const {
  return AdvisorOptionTable().ToParameters(*this);
}

}  // namespace swapplan
