// Planner comparison: every registered planner (planners/registry.h) on one
// iteration and one budget, each policy judged by the evaluation simulator
// (sim/simulator.h) — the engine of `swapplan compare`, and of `whatif` and
// `regress`, which run it many times.
//
//   CompareOptions o;
//   o.simulator.device = device;   // budget: capacity - reserve (BudgetBytes)
//   // or: o.oversubscription = 1.5;   // budget: 1.5x of the iteration's curve
//   SWAPPLAN_ASSIGN_OR_RETURN(Comparison c, ComparePlanners(trace, o));
//   for (const PlannerOutcome& row : c.rows) { row.planner; row.feasible; row.sim->... }
//
// A planner that cannot reach the budget (ResourceExhausted) is a row with
// feasible = false and its message, not an error; any other planner error is
// returned. Every policy is checked (sim/checker.h) before it is simulated:
// one that fails is a row with valid = false and the checker's first
// violation. Planners that do not reach the budget in the simulator (OOM) are
// rows too. `ideal` is judged with unlimited memory; its row is "feasible"
// when its peak fits the budget.
//
// Complexity: the memory curve O(ops + tensors + events) unless given; two
// simulators O(ops + uses + tensors); then per planner its own planning
// cost plus one check and one simulation O(ops + items + uses of the items'
// tensors); with `optimum`, one MILP solve bounded by its time limit.
#ifndef SWAPPLAN_EVAL_COMPARE_H_
#define SWAPPLAN_EVAL_COMPARE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/optimum/optimum.h"
#include "swapplan/planners/planner.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct CompareOptions {
  int32_t iteration = 0;
  // The device the planners plan for and the simulator runs on, and the
  // simulator's behaviour (record stream...). The budget is the device's
  // DeviceModel::BudgetBytes() (capacity - reserve; a capacity is
  // required); bandwidths 0 = the trace metadata's.
  SimulatorOptions simulator;
  // > 0: the budget is this oversubscription ratio (>= 1) of the
  // iteration's memory curve instead: the device becomes
  // OversubscribedDevice(simulator.device, curve, ratio)
  // (curve/oversubscription.h), its capacity and reserve replaced.
  // 0 = none.
  double oversubscription = 0;
  // Planner names, in row order; empty = the registry's default set.
  std::vector<std::string> planners;
  // Keep each planner's policy in its outcome (memory: O(items)).
  bool keep_policies = false;
  // Planner-specific options, Planner::SetOption(name, value) on the planner
  // called `planner` (e.g. {"advisor", "time-limit", "30s"}).
  struct PlannerOption {
    std::string planner;
    std::string name;
    std::string value;
  };
  std::vector<PlannerOption> planner_options;
  // How a row's policy is made instead of by the planner in this process
  // (`swapplan compare --server` plans on a planner service): called with
  // the planner's name, the problem and the options given for that planner
  // (planner_options, by name); returns the policy or the planner's error
  // (kInfeasible: a row that does not reach the budget). The planner is
  // still created here and given its options (so a bad option fails the
  // same way), but not run. A planner that uses seed policies (the
  // Advisor) gets none through it. Empty = plan in this process.
  using PlanFn = std::function<absl::StatusOr<Policy>(
      const std::string& planner, const PlanningProblem& problem,
      const std::map<std::string, std::string>& options)>;
  PlanFn plan;
  // The bytes the budget holds (alloc/budget_basis.h): with kReserved the
  // planners plan for reserved bytes under `allocator` (planners/planner.h,
  // `reserved_method`) and a row fits only when the model places every
  // allocation within the budget. model_reserved: replay `allocator` over
  // every row's policy (PlannerOutcome::reserved_*) with the budget on
  // allocated bytes too, so that a row that fits by allocated bytes but not
  // by reserved ones can be named.
  BudgetOn budget_on = BudgetOn::kAllocated;
  AllocatorOptions allocator;
  ReservedMethod reserved_method = ReservedMethod::kFeedback;
  bool model_reserved = false;
  // Also compute the exact bound (optimum/optimum.h) with these options,
  // warm-started from every policy that fits; each row then carries its
  // gap to the bound. Empty = no bound.
  std::optional<OptimumOptions> optimum;

  // InvalidArgument naming the field (iteration < 0, an oversubscription
  // that is not a finite ratio >= 1, no capacity without one, unknown
  // planner listing the known ones, bad simulator options — a reserve not
  // below the capacity among them; a planner option the planner rejects is
  // reported by ComparePlanners).
  absl::Status Validate() const;
};

// Parses "PLANNER.NAME=VALUE" (compare --planner-option, the
// "planner_options" of a quality baseline), e.g. "advisor.time-limit=30s".
// InvalidArgument for another form or an unknown planner (listing the known
// ones); whether the planner knows NAME is checked when it is set.
absl::StatusOr<CompareOptions::PlannerOption> ParsePlannerOption(absl::string_view text);

struct PlannerOutcome {
  std::string planner;
  // Judged with unlimited memory (ideal).
  bool unlimited_memory = false;
  // The planner returned a policy (false: ResourceExhausted, see note).
  bool planned = false;
  // The policy passes the checker (sim/checker.h, with CheckOptionsFor);
  // false: `invalid_reason` holds the checker's first violation, the policy
  // is not simulated and not feasible.
  bool valid = false;
  std::string invalid_reason;
  // The policy is valid and its simulated run stays within the budget
  // (ideal: its peak fits).
  bool feasible = false;
  // The simulation of the policy (when planned and valid).
  std::optional<SimulationResult> sim;
  std::optional<Policy> policy;  // with keep_policies
  int64_t plan_time_ns = 0;
  size_t items = 0;
  // With CompareOptions::model_reserved or a budget on reserved bytes (a
  // valid, planned row): the allocator model's reserved peak with the budget
  // as its capacity, and whether it placed every allocation within it.
  bool reserved_modelled = false;
  int64_t reserved_peak_bytes = 0;
  bool reserved_fits = false;
  // The planner's ResourceExhausted message (without a "<planner>: "
  // prefix); empty when planned.
  std::string infeasible_reason;
  // With a bound: (iteration time - lower bound) / lower bound for a row
  // that fits. Negative when the policy lies outside the bound's class (a
  // reordered schedule, an on-demand copy out: optimum.h).
  std::optional<double> gap_to_bound;
};

struct Comparison {
  int32_t iteration = 0;
  int32_t num_ops = 0;
  // The budget: simulator.device.BudgetBytes().
  int64_t budget_bytes = 0;
  // CompareOptions::oversubscription: > 0 when the budget is that ratio of
  // the iteration's curve (simulator.device then has capacity = the budget
  // and no reserve), 0 when it is the device's capacity - reserve.
  double oversubscription = 0;
  PeakInfo peak;  // unswapped peak of the iteration
  int64_t persistent_bytes = 0;
  int64_t ideal_time_ns = 0;
  DurationSource durations = DurationSource::kRecorded;
  // The simulator options the rows were judged with: the device model every
  // planner planned for (bandwidths resolved; with an oversubscription, its
  // capacity is the ratio's budget).
  SimulatorOptions simulator;
  std::vector<PlannerOutcome> rows;
  // With CompareOptions::optimum: the bound and the MILP's incumbent, or
  // why there is none (too many ops, a simulator setting the model does not
  // represent, no policy of its class fits).
  std::optional<OptimumResult> optimum;
  absl::Status optimum_status;
  // The bound's class includes recomputation (OptimumOptions::recompute).
  bool optimum_recompute = false;

  // True when some planner other than ideal reaches the budget.
  bool AnyFeasible() const;
};

// How ComparePlanners judges one planned policy: row->planned, items; the
// checker (CheckOptionsFor) sets valid (else invalid_reason: its first
// violation, and nothing is simulated); a valid policy is simulated with
// `sim` and feasible set (unlimited_memory rows, which must be set before:
// the peak fits budget_bytes; others: no OOM). The policy goes into
// row->policy with options.keep_policies. The budget basis of `options`
// (budget_on, allocator, model_reserved) sets the row's reserved_* fields;
// with the budget on reserved bytes a row the allocator model cannot place
// is not feasible. Errors of the checker or the simulator.
absl::Status JudgePolicy(const Trace& trace, const Simulator& sim, int64_t budget_bytes,
                         const CompareOptions& options, Policy policy, PlannerOutcome* row);

// Called after each row (for progress reports); may be empty.
using CompareProgress = std::function<void(const PlannerOutcome&)>;

// Runs the comparison. `curve` may be ComputeMemoryCurve(trace) computed
// before (else it is computed). Errors: options (InvalidArgument), no
// bandwidth known (InvalidArgument), planner errors other than
// ResourceExhausted (their code, prefixed with the planner's name).
absl::StatusOr<Comparison> ComparePlanners(const Trace& trace, const CompareOptions& options,
                                           const MemoryCurve* curve = nullptr,
                                           const CompareProgress& progress = {});

}  // namespace swapplan

#endif  // SWAPPLAN_EVAL_COMPARE_H_
