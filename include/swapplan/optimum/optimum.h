// The optimum of a small swap problem: the swap MILP (swap_model.h) solved
// with CBC (milp.h), its best bound reported as a lower bound on the
// simulated iteration time of every policy of the model's class, and the
// policy of its incumbent cross-checked in the evaluation simulator.
//
//   OptimumOptions o;
//   o.time_limit_ns = 60'000'000'000;
//   SWAPPLAN_ASSIGN_OR_RETURN(OptimumResult r, ComputeOptimum(problem, o, sim_options));
//   r.lower_bound_ns;          // no policy of the class runs faster
//   r.incumbent_ns;            // the extracted policy, simulated (-1: none)
//   r.proven_optimal;          // r.lower_bound_ns == r.incumbent_ns
//
// Reading the result:
//   lower_bound_ns  max(ideal, the MILP's best bound): valid whether or not
//                   the solve finished (a stopped branch and bound still
//                   proves its bound);
//   incumbent_ns    the simulator's time for the policy of the MILP's best
//                   solution; it equals milp_objective_ns when the solution
//                   issues no two copies of one direction at one op (the
//                   relaxed part of the model is then inactive: `exact`);
//   gap             (incumbent - lower bound) / lower bound.
// A planner whose simulated time is below lower_bound_ns used something
// outside the class (a reordered schedule, an on-demand copy out); compare
// --optimum says so.
//
// Threading: one CBC solve, single-threaded by default; reentrant.
// Complexity: building O(model size, swap_model.h); the solve is bounded by
// the time limit; one simulation of the extracted policy.
#ifndef SWAPPLAN_OPTIMUM_OPTIMUM_H_
#define SWAPPLAN_OPTIMUM_OPTIMUM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/optimum/milp.h"
#include "swapplan/optimum/swap_model.h"
#include "swapplan/planners/planner.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {

struct OptimumOptions {
  // Branch-and-bound wall-clock limit (0 = none: prove optimality).
  int64_t time_limit_ns = 60'000'000'000;
  // Offer RECOMPUTE windows (the hybrid swap + recompute bound); false =
  // swap only, the bound of the swap-only planners.
  bool recompute = true;
  // Count each recomputation's transient memory (the producer's other
  // outputs) at its trigger op (swap_model.h, "Transient memory"); the bound
  // is then on the policies whose transients fit. On by default: the
  // simulator judging the MILP's policy accounts RECOMPUTE exactly, the
  // recipe's transient included (trace/recompute.h), so a model without the
  // transient rows picks policies that run out of memory there. Warm starts
  // with RECOMPUTE items are not used (their transients are unchecked).
  bool recompute_transient = true;
  // Offer the Advisor's CLEAN and WRAP windows.
  bool advisor_kinds = true;
  // Refuse iterations with more ops than this (the model grows with the
  // ops over the budget times the gaps covering them; "small traces").
  int32_t max_ops = 2000;
  // Refuse models with more binary columns than this.
  int32_t max_binaries = 400'000;
  // CBC threads (1: the same result on every run).
  int32_t threads = 1;
  // Pairwise copy orders that make batches exact (swap_model.h); models
  // with more pairs keep the batch relaxation. 0 = always the relaxation.
  int32_t max_order_pairs = 20000;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
  // (name, value) pairs for Policy::parameters.
  std::vector<std::pair<std::string, std::string>> Parameters() const;
};

struct OptimumResult {
  MilpStatus status = MilpStatus::kNoSolution;
  int32_t iteration = 0;
  int64_t budget_bytes = 0;
  int64_t ideal_ns = 0;
  // Lower bound on the simulated time of every policy of the class.
  int64_t lower_bound_ns = 0;
  // The MILP's own bound (before the max with ideal) and objective.
  int64_t milp_bound_ns = 0;
  int64_t milp_objective_ns = -1;
  // The incumbent's policy and its simulated time (-1: no incumbent).
  std::optional<Policy> policy;
  int64_t incumbent_ns = -1;
  // The incumbent's simulated time equals its MILP objective.
  bool exact = false;
  // lower_bound_ns == incumbent_ns: the incumbent is optimal in the class.
  bool proven_optimal = false;
  // (incumbent - lower bound) / lower bound; -1 without an incumbent.
  double gap = -1;
  // Two times within this many ns count as equal (the model's numerical
  // tolerance: CBC's integrality tolerance times the big M, and rounding).
  int64_t tolerance_ns = 0;
  // Items of the warm-start policies that mapped into the model, and those
  // that did not.
  int32_t warm_start_items = 0;
  int32_t warm_start_skipped = 0;
  SwapModelStats model;
  int64_t build_time_ns = 0;
  int64_t solve_time_ns = 0;
  int64_t nodes = 0;
};

// Solves `problem` (its budget is the capacity; `sim_options` carries the
// link latency and must satisfy SwapModel::Build). `warm_starts` are
// policies of the same iteration (e.g. every planner's) whose best mapping
// seeds the branch and bound. Errors: InvalidArgument for bad options, an
// unsupported simulator setting or an iteration above max_ops / a model
// above max_binaries (kResourceLimit); ResourceExhausted (kInfeasible) when
// no policy of the class fits the budget; Internal when the extracted
// policy does not reproduce the model in the simulator (a bug).
absl::StatusOr<OptimumResult> ComputeOptimum(const PlanningProblem& problem,
                                             const OptimumOptions& options,
                                             const SimulatorOptions& sim_options = {},
                                             absl::Span<const Policy> warm_starts = {});

}  // namespace swapplan

#endif  // SWAPPLAN_OPTIMUM_OPTIMUM_H_
