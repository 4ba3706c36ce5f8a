// Planner: the common interface of everything that turns one trace
// iteration and a device budget into a swap policy — the Chameleon
// logical-layer planner, the Advisor genetic search, and the baselines.
// `compare`, `whatif`, `regress` and `replay` drive planners only through
// this interface.
//
//   PlanningProblem problem{.trace = &trace, .iteration = 0,
//                           .device_budget_bytes = 60LL << 30,
//                           .h2d_bandwidth_bytes_per_s = 25e9,
//                           .d2h_bandwidth_bytes_per_s = 25e9};
//   SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
//   absl::StatusOr<Policy> policy = planner.Plan(problem);
//   // ResourceExhausted: no policy of this planner reaches the budget; the
//   // message says how many bytes are missing where.
#ifndef SWAPPLAN_PLANNERS_PLANNER_H_
#define SWAPPLAN_PLANNERS_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct PlanningProblem {
  // The trace; not owned, must outlive the call.
  const Trace* trace = nullptr;
  // Iteration to plan for.
  int32_t iteration = 0;
  // Device memory the policy must stay under (capacity minus reserve).
  int64_t device_budget_bytes = 0;
  // Copy bandwidth per direction.
  double h2d_bandwidth_bytes_per_s = 0;
  double d2h_bandwidth_bytes_per_s = 0;
  // Optional precomputed curve of `trace` (saves planners recomputing it).
  const MemoryCurve* curve = nullptr;

  // InvalidArgument when the trace is missing, the iteration out of range,
  // the budget negative or a bandwidth not positive.
  absl::Status Validate() const;
};

class Planner {
 public:
  virtual ~Planner() = default;
  // Short name used in policies, tables and --planners lists.
  virtual std::string name() const = 0;
  // Returns a policy for `problem` whose peak stays under the budget.
  // ResourceExhausted when this planner cannot reach the budget (the message
  // gives the bytes still missing and the op where); InvalidArgument for a
  // bad problem.
  virtual absl::StatusOr<Policy> Plan(const PlanningProblem& problem) = 0;
  // Sets a planner-specific option from its command-line spelling
  // (`compare --planner-option advisor.time-limit=30s` calls
  // SetOption("time-limit", "30s") on the advisor). InvalidArgument for an
  // unknown name or a bad value; the default knows no options.
  virtual absl::Status SetOption(absl::string_view name, absl::string_view value);

  // Planners that search from other planners' policies (the Advisor, issue
  // 20) say so here; `compare` then plans them after the others and hands
  // them every policy that fit, with the simulator settings it judges by.
  virtual bool UsesSeedPolicies() const { return false; }
  // Other planners' policies for the next Plan's problem (same iteration),
  // and the settings of the simulator that will judge the result. The
  // default ignores both.
  virtual void SetSeedPolicies(std::vector<Policy> policies, const SimulatorOptions& judge) {}
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_PLANNER_H_
