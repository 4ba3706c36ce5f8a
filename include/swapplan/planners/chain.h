// Planner chain: planners tried in order, cheapest first, until one's policy
// passes the checker at the budget and can run where it is going to run —
// what GenPolicy plans with (`swapplan replay`, the runtime's providers
// through `swapplan plan --planner chain` or the service's Plan with planner
// "chain"), so that no input goes without a policy while some planner of the
// chain fits it. Registered as the planner "chain" (planners/registry.h).
//
//   ChainPlanner chain;  // chameleon, hybrid, hyperoffload, then advisor (10 s)
//   SWAPPLAN_RETURN_IF_ERROR(chain.SetOption("planners", "chameleon,hyperoffload"));
//   SWAPPLAN_RETURN_IF_ERROR(chain.SetOption("chameleon.min-tensor-bytes", "0"));
//   absl::StatusOr<Policy> p = chain.Plan(problem);
//   // p->planner: the member that served; chain.last_attempts(): each try.
//   // ResourceExhausted when none fits: the message names the unswapped
//   // peak and the closest member's shortfall (ShortfallOf: its bytes).
//
// Acceptance of a member's policy: clean under the checker (sim/checker.h)
// for the problem's device — over-budget included — and executable where it
// runs (PlannerChainOptions::executable): `matched` (a replay: a matcher
// applies the items to another iteration in its own op order) refuses a
// schedule or a pool; `runtime` (the eager runtime shim) also an item that
// wraps around the iteration or names a tier beyond the host
// (CheckRuntimeExecutable). Where the order is fixed, hyperoffload plans
// with reorder=false (and tier=host for the runtime); a member whose
// policies always reorder (Planner::AlwaysReorders: the advisor) is skipped
// there without running. A searching member (UsesSeedPolicies) gets
// time-limit-ns = search_time_limit_ns. A member that fails (infeasible, not
// clean, not executable) is an attempt with its reason and shortfall.
//
// Complexity: the members' planning up to the first that fits, plus one
// check per policy returned (O(ops + tensors + items log items + uses)).
#ifndef SWAPPLAN_PLANNERS_CHAIN_H_
#define SWAPPLAN_PLANNERS_CHAIN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/planners/option_table.h"
#include "swapplan/planners/planner.h"

namespace swapplan {

// What has to execute the chain's policy.
enum class ChainExecutor : uint8_t {
  kAny = 0,      // the simulator and the checker (compare, advise)
  kMatched = 1,  // a matcher on later iterations (replay): items only
  kRuntime = 2,  // the eager runtime shim (CheckRuntimeExecutable)
};
// "any", "matched", "runtime"; the parser returns false for anything else.
absl::string_view ChainExecutorName(ChainExecutor e);
bool ParseChainExecutor(absl::string_view name, ChainExecutor* out);
// Why `executor` cannot run `p` (a schedule or a pool for kMatched and
// kRuntime; CheckRuntimeExecutable's reason for kRuntime); empty when it
// can. O(items).
std::string WhyNotExecutable(const Policy& p, ChainExecutor executor);

struct PlannerChainOptions {
  // Registry names tried in this order, cheapest first (not "chain",
  // "ideal" or a name twice).
  std::vector<std::string> planners = {"chameleon", "hybrid", "hyperoffload", "advisor"};
  // Time limit of a searching member (the advisor's time-limit-ns); 0 =
  // the member's own.
  int64_t search_time_limit_ns = 10'000'000'000;
  // What executes the policy (see above).
  ChainExecutor executable = ChainExecutor::kMatched;

  // InvalidArgument naming the field: no planner, an unknown, repeated or
  // excluded one, a negative time limit.
  absl::Status Validate() const;
};
const OptionTable<PlannerChainOptions>& PlannerChainOptionTable();

// One member's try in the last Plan.
struct ChainAttempt {
  std::string planner;
  // Its policy passed (the chain returned it).
  bool fits = false;
  // Not run: never executable here (Planner::AlwaysReorders).
  bool skipped = false;
  // Why it did not serve: the member's message, the checker's first
  // violation, or what the executor cannot run.
  std::string reason;
  // Bytes its best attempt peaks over the budget; -1 when unknown.
  int64_t shortfall_bytes = -1;
  int64_t plan_time_ns = 0;
};

class ChainPlanner : public Planner {
 public:
  explicit ChainPlanner(PlannerChainOptions options = {}) : options_(std::move(options)) {}

  std::string name() const override { return "chain"; }
  // The chain's own options (planners, search-time-limit-ns, executable),
  // or "MEMBER.OPTION" for a member (e.g. "chameleon.min-tensor-bytes"),
  // checked on a new instance of it now and applied after the chain's own
  // settings of that member.
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  std::vector<OptionInfo> DescribeOptions() const override;
  // Runs `planner` for the member of its name instead of a default-made one
  // (the replay's Chameleon with its options); the chain's settings and the
  // member options apply to it too (their errors returned).
  absl::Status SetMember(std::unique_ptr<Planner> planner);

  const PlannerChainOptions& options() const { return options_; }
  // The tries of the last Plan, in chain order.
  const std::vector<ChainAttempt>& last_attempts() const { return attempts_; }

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  // The member called `name`, made and configured on first use.
  absl::StatusOr<Planner*> Member(const std::string& name);
  // The chain's settings of member `name`, then its member options.
  absl::Status Configure(const std::string& name, Planner& p) const;

  PlannerChainOptions options_;
  // (member, option, value) in the order given.
  std::vector<std::tuple<std::string, std::string, std::string>> member_options_;
  std::map<std::string, std::unique_ptr<Planner>> members_;
  std::set<std::string> given_;  // members given with SetMember
  std::vector<ChainAttempt> attempts_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_CHAIN_H_
