// Planner: the common interface of everything that turns one trace
// iteration and a device budget into a swap policy — the Chameleon
// logical-layer planner, the Advisor genetic search, and the baselines.
// `compare`, `whatif`, `regress` and `replay` drive planners only through
// this interface.
//
// Plan is the one place a policy is finished: every planner implements
// PlanPolicy (the items, its parameters and expectations), and Plan then
// records the device model the policy was planned for and builds its
// runtime section (policy/policy_runtime.h), so every policy any planner or
// baseline emits is self-contained (schema v2, docs/policy-format.md).
//
//   PlanningProblem problem{.trace = &trace, .iteration = 0};
//   problem.device.capacity_bytes = 64LL << 30;   // budget: capacity - reserve
//   problem.device.reserve_bytes = 4LL << 30;
//   problem.device.h2d_bandwidth_bytes_per_s = 25e9;
//   problem.device.d2h_bandwidth_bytes_per_s = 25e9;
//   SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
//   absl::StatusOr<Policy> policy = planner.Plan(problem);
//   // ResourceExhausted: no policy of this planner reaches the budget; the
//   // message says how many bytes are missing where.
//
// Budget on reserved bytes (problem.budget_on = kReserved, alloc/
// budget_basis.h): Plan holds the policy to the budget as bytes the
// allocator model reserves (curve/reserved_curve.h), not only as bytes
// allocated. ReservedMethod::kFeedback (the default): plan, replay the model
// over the policy with the budget as its capacity, and, while it cannot
// place an allocation, plan again with the planning budget lowered by the
// reserved bytes it lacked (at most kMaxReservedRounds plans).
// ReservedMethod::kMargin: one plan with the planning budget lowered by the
// model's fragmentation (reserved - allocated) at the unswapped peak; the
// result is replayed and refused (ResourceExhausted) when it does not fit.
// The budget is lowered by raising the planning device's reserve, so the
// one budget formula (capacity - reserve) stays where it is; the policy
// records the problem's own device and, in its parameters, budget_on,
// allocator, alloc_conf, reserved_margin_bytes and reserved_rounds.
#ifndef SWAPPLAN_PLANNERS_PLANNER_H_
#define SWAPPLAN_PLANNERS_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/alloc/budget_basis.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/option_table.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class ReservedMethod : uint8_t {
  kFeedback = 0,  // the model inside the feasibility check, re-planning
  kMargin = 1,    // one fragmentation margin from the unswapped run
};
// "feedback", "margin".
absl::string_view ReservedMethodName(ReservedMethod m);
bool ParseReservedMethod(absl::string_view name, ReservedMethod* out);
inline constexpr int32_t kMaxReservedRounds = 6;

struct PlanningProblem {
  // The trace; not owned, must outlive the call.
  const Trace* trace = nullptr;
  // Iteration to plan for.
  int32_t iteration = 0;
  // The device planned for: the budget is capacity - reserve (a capacity of
  // 0 plans for no memory at all), the copy times are its TransferNs
  // (bandwidths, latency, duplex mode), recorded op durations are scaled by
  // its compute_time_scale. Recorded in the policy (FinishPolicy).
  DeviceModel device;
  // Optional precomputed curve of `trace` (saves planners recomputing it).
  const MemoryCurve* curve = nullptr;
  // The bytes the budget holds (see "Budget on reserved bytes" above); the
  // allocator model's capacity_bytes is ignored (the budget is used).
  BudgetOn budget_on = BudgetOn::kAllocated;
  AllocatorOptions allocator;
  ReservedMethod reserved_method = ReservedMethod::kFeedback;

  // device.BudgetBytes() (capacity - reserve; unlimited for an unlimited
  // capacity), 0 when that is not positive. Requires a valid problem.
  int64_t budget_bytes() const;

  // InvalidArgument when the trace is missing, the iteration out of range,
  // a bandwidth not positive, or the device model invalid
  // (DeviceModel::ValidatePartial: a zero capacity is allowed).
  absl::Status Validate() const;
};

class Planner {
 public:
  virtual ~Planner() = default;
  // Short name used in policies, tables and --planners lists.
  virtual std::string name() const = 0;
  // Returns a policy for `problem` whose peak stays under the budget, with
  // the device model and the runtime section (FinishPolicy).
  // ResourceExhausted when this planner cannot reach the budget (the message
  // gives the bytes still missing and the op where); InvalidArgument for a
  // bad problem; Internal when the planner's policy names a tensor or op
  // the runtime section cannot anchor (a planner bug).
  absl::StatusOr<Policy> Plan(const PlanningProblem& problem);
  // Whether this planner's policies assume unlimited device memory (the
  // ideal baseline): they record an unlimited capacity.
  virtual bool unlimited_memory() const { return false; }
  // Whether every policy of this planner carries a schedule or a size-class
  // pool (the Advisor's), which neither a matcher on later iterations nor
  // the eager runtime can execute (planners/chain.h skips it there).
  virtual bool AlwaysReorders() const { return false; }
  // Sets a planner-specific option from its command-line spelling
  // (`compare --planner-option advisor.time-limit=30s` calls
  // SetOption("time-limit-ns", "30s") on the advisor). A usage error
  // (ErrorKind::kUsage) for an unknown name or a bad value; the default
  // knows no options.
  virtual absl::Status SetOption(absl::string_view name, absl::string_view value);
  // Every option SetOption accepts, with its type, help and current value
  // (planners/option_table.h): the names the planner records in
  // Policy::parameters. The default: none.
  virtual std::vector<OptionInfo> DescribeOptions() const { return {}; }

  // Planners that search from other planners' policies (the Advisor, issue
  // 20) say so here; `compare` then plans them after the others and hands
  // them every policy that fit, with the simulator settings it judges by.
  virtual bool UsesSeedPolicies() const { return false; }
  // Other planners' policies for the next Plan's problem (same iteration),
  // and the settings of the simulator that will judge the result. The
  // default ignores both.
  virtual void SetSeedPolicies(std::vector<Policy> policies, const SimulatorOptions& judge) {}

 protected:
  // The planner itself: the policy's fingerprint, items, schedule, pool,
  // parameters and expectations, as Plan describes. Called by Plan only.
  virtual absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) = 0;

 private:
  // Plan with the budget on reserved bytes (see above).
  absl::StatusOr<Policy> PlanForReserved(const PlanningProblem& problem);
};

// What Plan does to a planner's policy: records the device model of
// `problem` (with an unlimited capacity and no reserve when
// `unlimited_memory`) and the fingerprint, and builds the runtime section and the items' runtime keys
// from the trace (AttachPolicyRuntime, 32-bit masks). Internal naming the
// planner, item and tensor when an item cannot be anchored.
// O(ops + items × uses of their tensors).
absl::Status FinishPolicy(const PlanningProblem& problem, absl::string_view planner,
                          bool unlimited_memory, Policy* policy);

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_PLANNER_H_
