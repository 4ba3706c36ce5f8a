// Options of the Advisor planner (SPEC §5, seed 002 §4–6): the swap
// planner run for one chromosome, and the genetic search around it. Every
// default is the paper's where the paper gives one (§6.1: population 144,
// mutation probability 10%); where it is silent the choice is ours, named
// in the comment ("ours"), and an option.
//
//   AdvisorOptions o;
//   o.search.time_limit_ns = 60'000'000'000;
//   o.search.threads = 0;          // all cores
//   SWAPPLAN_RETURN_IF_ERROR(o.Validate());
#ifndef SWAPPLAN_PLANNERS_ADVISOR_OPTIONS_H_
#define SWAPPLAN_PLANNERS_ADVISOR_OPTIONS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "swapplan/planners/option_table.h"
#include "swapplan/trace/dataflow.h"

namespace swapplan {

// Which persistent tensors (resident before and after the iteration:
// parameters, optimizer states, persistent gradient buffers) are on the
// device when the iteration starts.
enum class ParamResidency : uint8_t {
  // Seed 002 §4.2: pass 1 starts with none of them; those resident at its
  // end are the initial residents of pass 2, which drops any it has to
  // evict before use; repeated while an initial resident ends the pass off
  // the device (ours: the paper does exactly two passes, which can leave the
  // end set different from the start set).
  kDoublePass = 0,
  // Pass 1 only: every used persistent tensor starts on the host and goes
  // back there after its last use — seed 002 Fig. 1's setting.
  kStartOnHost = 1,
};
absl::string_view ParamResidencyName(ParamResidency r);  // "double-pass", "start-on-host"
bool ParseParamResidency(absl::string_view name, ParamResidency* out);

// The swap planner of seed 002 §4.2 for one (schedule, pool) chromosome.
struct SwapPlannerOptions {
  // Belady candidates must have been last used at least this long ago
  // (seed 002 §4.2's threshold, on the stall-free timeline of the
  // schedule). -1 = per class, the time to copy one of its objects out
  // (ours: the paper gives no value).
  int64_t eviction_threshold_ns = -1;
  // When no candidate meets the threshold, evict the Belady choice among
  // all candidates (true, ours) instead of declaring the chromosome
  // infeasible.
  bool threshold_fallback = true;
  ParamResidency param_residency = ParamResidency::kDoublePass;
  // Passes of the double pass before falling back to pass 1's plan (every
  // persistent tensor starting on the host), >= 2.
  int32_t max_passes = 4;

  absl::Status Validate() const;
};

// How the first generation is made.
enum class InitialPopulation : uint8_t {
  // The recorded order and ready-set mutations of it with mutation
  // probabilities spread over (0, 1] (ours: a uniformly random topological
  // order of a training graph interleaves forward and backward and needs far
  // more memory than any budget of interest).
  kRecordedAndMutants = 0,
  // Seed 002 §5.1: every schedule a random topological order.
  kRandom = 1,
};
absl::string_view InitialPopulationName(InitialPopulation p);  // "recorded", "random"
bool ParseInitialPopulation(absl::string_view name, InitialPopulation* out);

// The genetic search of seed 002 §5.
struct SearchOptions {
  // Np: individuals that survive each generation (§6.1: 144).
  int32_t population = 144;
  // P: per-node probability of a random pick in the schedule mutation, and
  // per-element probability of mutating CLS and CNT (§6.1: 10%).
  double mutation_probability = 0.1;
  // CNT mutation: Gaussian with the count as mean and this fraction of it
  // (at least 1) as standard deviation (ours: the paper names no spread).
  double cnt_sigma_fraction = 0.2;
  // Survival: softmax over t_norm = (T_best - t) / T_best divided by this
  // temperature (1 = the paper's Eq. 1).
  double selection_temperature = 1.0;
  // The best individuals that survive regardless of the softmax draw
  // (ours: the paper's survival draw can lose the best; 0 = the paper).
  int32_t elites = 1;
  InitialPopulation initial = InitialPopulation::kRecordedAndMutants;
  // Stop after this long (0 = no limit), after this many generations (0 =
  // no limit), or when the best has not improved by more than
  // `convergence_tolerance` (relative) for `convergence_generations`
  // generations (0 = never). At least one limit must be set.
  int64_t time_limit_ns = 60'000'000'000;
  int32_t max_generations = 0;
  int32_t convergence_generations = 0;
  double convergence_tolerance = 1e-4;
  // Evaluation threads; 0 = all cores. The result depends only on the
  // seed, not on the thread count (each child's work is a pure function of
  // a per-child seed drawn in order), unless the time limit ends the search:
  // then the number of generations depends on the speed.
  int32_t threads = 0;
  uint64_t seed = 1;

  absl::Status Validate() const;
};

struct AdvisorOptions {
  SwapPlannerOptions planner;
  SearchOptions search;
  DataflowOptions graph;

  absl::Status Validate() const;
  // (name, value) pairs for Policy::parameters, in AdvisorOptionTable()
  // order.
  std::vector<std::pair<std::string, std::string>> Parameters() const;
};

// The one declaration of every option (planners/option_table.h): the names
// policies record, AdvisorPlanner::SetOption and `swapplan search`'s flags
// accept (snake_case or with '-'): population, mutation_probability,
// cnt_sigma_fraction, selection_temperature, elites, initial,
// time_limit_ns, max_generations, convergence_generations,
// convergence_tolerance, threads, seed, eviction_threshold_ns (-1 or auto:
// per class), threshold_fallback, param_residency, max_passes,
// order_optimizer_ops, order_side_effects.
const OptionTable<AdvisorOptions>& AdvisorOptionTable();

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_ADVISOR_OPTIONS_H_
