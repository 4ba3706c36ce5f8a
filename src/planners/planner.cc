#include "swapplan/planners/planner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "swapplan/curve/reserved_curve.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::Status PlanningProblem::Validate() const {
  if (trace == nullptr) return absl::InvalidArgumentError("planning problem: no trace");
  if (iteration < 0 || iteration >= trace->num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("planning problem: iteration ", iteration,
                                                   " is out of range (", trace->source(), " has ",
                                                   trace->num_iterations(), " iterations)"));
  }
  if (device.capacity_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("planning problem: device capacity ",
                                                   device.capacity_bytes, " bytes is negative"));
  }
  for (auto [name, bw] :
       {std::pair<const char*, double>{"h2d", device.h2d_bandwidth_bytes_per_s},
        {"d2h", device.d2h_bandwidth_bytes_per_s}}) {
    if (!(bw > 0) || !std::isfinite(bw)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "planning problem: ", name, " bandwidth must be > 0 (none given and the trace "
          "metadata has none)"));
    }
  }
  if (device.capacity_bytes > 0 && device.reserve_bytes >= device.capacity_bytes &&
      device.capacity_bytes != kUnlimitedCapacityBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "planning problem: reserve ", device.reserve_bytes, " bytes leaves no budget out of ",
        device.capacity_bytes));
  }
  if (absl::Status st = device.ValidatePartial(); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("planning problem: ", st.message()));
  }
  if (absl::Status st = allocator.Validate(); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("planning problem: ", st.message()));
  }
  return absl::OkStatus();
}

int64_t PlanningProblem::budget_bytes() const {
  return std::max<int64_t>(device.BudgetBytes(), 0);
}

absl::string_view ReservedMethodName(ReservedMethod m) {
  return m == ReservedMethod::kMargin ? "margin" : "feedback";
}

bool ParseReservedMethod(absl::string_view name, ReservedMethod* out) {
  if (name == "feedback") {
    *out = ReservedMethod::kFeedback;
  } else if (name == "margin") {
    *out = ReservedMethod::kMargin;
  } else {
    return false;
  }
  return true;
}

namespace {

// Slack added to each feedback step (one large-pool rounding step).
constexpr int64_t kReservedSlackBytes = kRoundLarge;

}  // namespace

absl::StatusOr<Policy> Planner::PlanForReserved(const PlanningProblem& problem) {
  const int64_t budget = problem.budget_bytes();
  AllocatorOptions model = problem.allocator;
  model.capacity_bytes = std::max<int64_t>(budget, 1);
  PlanningProblem p = problem;
  int64_t margin = 0;
  if (problem.reserved_method == ReservedMethod::kMargin) {
    // The model's fragmentation at the unswapped run's allocated peak.
    SWAPPLAN_ASSIGN_OR_RETURN(AllocationSequence s,
                              SequenceOfIteration(*problem.trace, problem.iteration));
    AllocatorOptions unlimited = model;
    unlimited.capacity_bytes = kUnlimitedCapacityBytes;
    SWAPPLAN_ASSIGN_OR_RETURN(ReservedCurve c,
                              ReplayAllocations(s, unlimited, {.pinned_segments = 0}));
    if (c.peak_requested_position >= 0) {
      margin = c.reserved_bytes[c.peak_requested_position] -
               c.requested_bytes[c.peak_requested_position];
    }
  }
  const int32_t rounds = problem.reserved_method == ReservedMethod::kMargin ? 1 : kMaxReservedRounds;
  for (int32_t round = 1;; ++round) {
    p.device.reserve_bytes = problem.device.reserve_bytes + margin;
    if (p.budget_bytes() <= 0) {
      return Error(ErrorKind::kInfeasible,
                   absl::StrCat(name(), ": no budget left for allocated bytes once the ",
                                AllocatorKindName(model.kind), " allocator's ", margin,
                                " bytes of fragmentation are set aside (budget ", budget, ")"));
    }
    absl::StatusOr<Policy> planned = PlanPolicy(p);
    if (!planned.ok()) {
      if (margin == 0) return planned.status();
      return Error(KindOf(planned.status()),
                   absl::StrCat(planned.status().message(), " (planning budget lowered by ",
                                margin, " bytes for the ", AllocatorKindName(model.kind),
                                " allocator's fragmentation)"));
    }
    Policy policy = *std::move(planned);
    SWAPPLAN_RETURN_IF_ERROR(FinishPolicy(problem, name(), unlimited_memory(), &policy));
    SWAPPLAN_ASSIGN_OR_RETURN(
        ReservedCurve c, PolicyReservedCurve(*problem.trace, policy, problem.device, model,
                                             {.pinned_segments = 0}));
    if (c.ooms == 0) {
      for (auto [k, v] : {std::pair<const char*, std::string>{"budget_on", "reserved"},
                          {"allocator", std::string(AllocatorKindName(model.kind))},
                          {"alloc_conf", AllocConfText(model)},
                          {"reserved_method", std::string(ReservedMethodName(problem.reserved_method))},
                          {"reserved_margin_bytes", absl::StrCat(margin)},
                          {"reserved_rounds", absl::StrCat(round)}}) {
        policy.parameters.emplace_back(k, std::move(v));
      }
      return policy;
    }
    if (round >= rounds) {
      return Error(ErrorKind::kInfeasible,
                   absl::StrCat(name(), ": the ", AllocatorKindName(model.kind),
                                " allocator model needs ", c.peak_reserved_bytes,
                                " reserved bytes for the policy planned with ", margin,
                                " bytes set aside (", round, " plans), over the budget of ",
                                budget, " [reserved-over-budget]"));
    }
    margin += std::max<int64_t>(c.peak_reserved_bytes - budget, 0) + kReservedSlackBytes;
  }
}

absl::StatusOr<Policy> Planner::Plan(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  if (problem.budget_on == BudgetOn::kReserved && !unlimited_memory() &&
      problem.budget_bytes() != kUnlimitedCapacityBytes) {
    return PlanForReserved(problem);
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, PlanPolicy(problem));
  SWAPPLAN_RETURN_IF_ERROR(FinishPolicy(problem, name(), unlimited_memory(), &policy));
  return policy;
}

absl::Status FinishPolicy(const PlanningProblem& problem, absl::string_view planner,
                          bool unlimited_memory, Policy* policy) {
  policy->device = problem.device;
  if (unlimited_memory) {
    policy->device.capacity_bytes = kUnlimitedCapacityBytes;
    policy->device.reserve_bytes = 0;
  }
  policy->format_version = kPolicyFormatVersion;
  policy->fingerprint = ComputeFingerprint(*problem.trace, problem.iteration);
  if (absl::Status st = AttachPolicyRuntime(*problem.trace, problem.iteration, policy);
      !st.ok()) {
    return Error(ErrorKind::kInternal,
                 absl::StrCat(planner, ": the policy cannot be made self-contained: ",
                              st.message()));
  }
  return absl::OkStatus();
}

absl::Status Planner::SetOption(absl::string_view name, absl::string_view value) {
  return Error(ErrorKind::kUsage, absl::StrCat(this->name(), " has no option '", name,
                                               "' (it takes none; given '", value, "')"));
}

}  // namespace swapplan
