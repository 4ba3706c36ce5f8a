// Policy making for the replay and the executed replay's provider
// (replay_plan.h).
#include "eval/replay_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/varying/policy_library.h"
#include "swapplan/varying/tensor_roles.h"

namespace swapplan::replay_internal {

absl::StatusOr<SimulationResult> PolicyMaker::Simulate(const Trace& seg, int32_t t,
                                                       const Policy& policy,
                                                       OomHandling handling) {
  SimulatorOptions o = sim_options_;
  o.oom_handling = handling;
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(seg, 0, o));
  absl::StatusOr<SimulationResult> r = sim.Run(policy);
  if (!r.ok()) {
    return absl::Status(r.status().code(), absl::StrCat("replay: runtime iteration ", t, ": ",
                                                        r.status().message()));
  }
  return r;
}

absl::StatusOr<std::unique_ptr<PolicyRecord>> PolicyMaker::Make(Planner& planner,
                                                                const Trace& plan_on,
                                                                const DeviceModel& device,
                                                                int32_t t,
                                                                std::string* infeasible) {
  PlanningProblem problem;
  problem.trace = &plan_on;
  problem.iteration = 0;
  problem.device = device;
  absl::StatusOr<Policy> policy = planner.Plan(problem);
  if (!policy.ok()) {
    if (KindOf(policy.status()) == ErrorKind::kInfeasible) {
      *infeasible = std::string(policy.status().message());
      return std::unique_ptr<PolicyRecord>();
    }
    return absl::Status(policy.status().code(),
                        absl::StrCat("replay: planning runtime iteration ", t, ": ",
                                     policy.status().message()));
  }
  auto rec = std::make_unique<PolicyRecord>();
  rec->planned = *policy;
  SWAPPLAN_ASSIGN_OR_RETURN(
      PreparedPolicy prepared,
      PrepareForMatching(*std::move(policy), {.trace = &plan_on,
                                              .iteration = 0,
                                              .rebuild = true,
                                              .mask_bits = options_.runtime_key_bits}));
  rec->matchable = std::move(prepared.mp);
  const std::vector<uint64_t> roles = TensorRoles(plan_on, 0);
  for (const MatchableItem& mi : rec->matchable.items) {
    // The item's tensor: the one whose file id the policy names.
    const PolicyItem& pi = rec->matchable.policy.items[mi.item];
    TensorId tensor = kNoTensor;
    for (TensorId u : plan_on.uses(plan_on.iteration(0).op_begin + mi.decision.ordinal)) {
      if (plan_on.tensor(u).trace_id == pi.tensor_id) tensor = u;
    }
    rec->item_roles.push_back(tensor == kNoTensor ? 0 : roles[tensor]);
  }
  SWAPPLAN_ASSIGN_OR_RETURN(rec->matcher, CreateMatcher(options_.matcher, rec->matchable,
                                                        options_.matcher_options));
  return rec;
}

absl::StatusOr<std::pair<int64_t, int64_t>> PolicyMaker::PeakRange(
    PolicyRecord& rec, absl::Span<const Trace* const> iterations, int32_t t) {
  int64_t hi = 0, lo = std::numeric_limits<int64_t>::max();
  for (const Trace* it : iterations) {
    AppliedPolicy a = ApplyPolicy(*it, 0, rec.matchable, {}, *rec.matcher, table_);
    SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r,
                              Simulate(*it, t, a.policy, OomHandling::kReport));
    hi = std::max(hi, r.peak_bytes);
    lo = std::min(lo, r.peak_bytes);
  }
  return std::make_pair(hi, lo);
}

absl::StatusOr<std::unique_ptr<PolicyRecord>> PolicyMaker::MakeVerified(
    Planner& planner, absl::Span<const Trace* const> observed, const DeviceModel& device,
    int32_t t, std::string* infeasible) {
  if (observed.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("replay: runtime iteration ", t, ": no observed iteration to plan on"));
  }
  std::unique_ptr<PolicyRecord> rec;
  const Trace& latest = *observed.back();
  const int64_t limit = device.BudgetBytes();
  DeviceModel dev = device;
  // Grow the reserve (doubling steps: the planner's choices are discrete, a
  // little more reserve may give the same policy) until the policy holds,
  // then bisect between the last reserve that failed and the smallest that
  // held. Keep the policy of the smallest reserve that held, else the one
  // that lacked least.
  int64_t failed = -1, held = -1, step = 0;
  int64_t best_need = std::numeric_limits<int64_t>::max();
  bool best_held = false;
  for (int32_t round = 0; round < options_.verify_rounds; ++round) {
    SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PolicyRecord> r,
                              Make(planner, latest, dev, t, infeasible));
    if (r == nullptr) {
      held = held < 0 ? dev.reserve_bytes : held;  // no lower budget helps
      if (failed < 0 || held - failed <= 1) break;
    } else {
      SWAPPLAN_ASSIGN_OR_RETURN(auto range, PeakRange(*r, observed, t));
      const int64_t need =
          range.first +
          static_cast<int64_t>(std::ceil(options_.verify_margin *
                                         static_cast<double>(range.first - range.second))) -
          limit;
      if (need <= 0) {
        if (!best_held || dev.reserve_bytes < held || held < 0) {
          rec = std::move(r);
          best_held = true;
        }
        held = held < 0 ? dev.reserve_bytes : std::min(held, dev.reserve_bytes);
      } else {
        if (!best_held && need < best_need) {
          best_need = need;
          rec = std::move(r);
        }
        failed = std::max(failed, dev.reserve_bytes);
        if (held < 0) step = std::max(need, 2 * step);
      }
    }
    int64_t next;
    if (held < 0) {
      next = dev.reserve_bytes + step;
    } else if (failed >= 0 && held - failed > std::max<int64_t>(limit / 1000, 1)) {
      next = failed + (held - failed) / 2;
    } else {
      break;
    }
    if (next >= dev.capacity_bytes) break;
    dev.reserve_bytes = next;
  }
  return rec;
}

}  // namespace swapplan::replay_internal
