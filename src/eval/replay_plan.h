// Policy making shared by the simulated replay (replay.cc) and the executed
// one's policy provider (replay_execute.cc): one planner run on one
// iteration, and the observed planning of ReplayOptions::kObserved — plan
// the latest iteration observed with a key, match and simulate the policy on
// every observed iteration, lower the budget until all peak under it.
//
//   PolicyMaker maker(options, sim_options);
//   std::string why;
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PolicyRecord> rec,
//                             maker.MakeVerified(planner, observed, device, t, &why));
//   if (rec == nullptr) ... infeasible: `why` is the planner's message
//
// Internal to the eval layer (not installed). Threading: a PolicyMaker is
// used by one thread at a time (it keeps a tensor table between calls).
#ifndef SWAPPLAN_SRC_EVAL_REPLAY_PLAN_H_
#define SWAPPLAN_SRC_EVAL_REPLAY_PLAN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/eval/replay.h"
#include "swapplan/planners/planner.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"
#include "swapplan/varying/matcher.h"

namespace swapplan::replay_internal {

// A generated policy, ready for matching (what its GenPolicy runs showed
// is the policy library's: varying/policy_library.h, under its id).
struct PolicyRecord {
  int32_t id = 0;
  // The planner's policy as it returned it (what a provider hands a runtime).
  Policy planned;
  MatchablePolicy matchable;
  std::vector<uint64_t> item_roles;
  std::unique_ptr<TensorMatcher> matcher;
};

class PolicyMaker {
 public:
  // `options`: matcher, runtime-key bits, verify_* fields; `sim_options`: the
  // simulator the verification runs (its device with all of its capacity).
  // Both must outlive the maker.
  PolicyMaker(const ReplayOptions& options, const SimulatorOptions& sim_options)
      : options_(options), sim_options_(sim_options) {}

  // A policy for iteration 0 of `plan_on` on `device`, ready to match;
  // nullptr with the planner's message in *infeasible when it cannot reach
  // the budget; other planner errors name runtime iteration `t`.
  // O(planner + items × uses of their decision ops).
  absl::StatusOr<std::unique_ptr<PolicyRecord>> Make(Planner& planner, const Trace& plan_on,
                                                     const DeviceModel& device, int32_t t,
                                                     std::string* infeasible);

  // Observed planning: plans observed.back() (iteration 0 of each trace),
  // then grows the planning reserve (doubling steps, then bisection, at most
  // options.verify_rounds plans) until the policy, matched and simulated on
  // every observed trace, peaks at most capacity − reserve of `device` after
  // adding options.verify_margin × the peaks' spread. Returns the policy of
  // the smallest reserve that held, else the one that lacked least; nullptr
  // (with *infeasible) when no plan succeeded. Requires `observed` non-empty.
  // O(verify_rounds × (planner + observed × simulation)).
  absl::StatusOr<std::unique_ptr<PolicyRecord>> MakeVerified(
      Planner& planner, absl::Span<const Trace* const> observed, const DeviceModel& device,
      int32_t t, std::string* infeasible);

  // Simulates `policy` on iteration 0 of `seg` with `handling`; errors name
  // runtime iteration `t`.
  absl::StatusOr<SimulationResult> Simulate(const Trace& seg, int32_t t, const Policy& policy,
                                            OomHandling handling);

  // The table the matchers of this maker's policies use.
  RuntimeTensorTable& table() { return table_; }

 private:
  // The highest and lowest simulated peak of `rec` applied to `iterations`.
  absl::StatusOr<std::pair<int64_t, int64_t>> PeakRange(PolicyRecord& rec,
                                                        absl::Span<const Trace* const> iterations,
                                                        int32_t t);

  const ReplayOptions& options_;
  const SimulatorOptions& sim_options_;
  RuntimeTensorTable table_;
};

}  // namespace swapplan::replay_internal

#endif  // SWAPPLAN_SRC_EVAL_REPLAY_PLAN_H_
