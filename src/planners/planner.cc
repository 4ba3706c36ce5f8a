#include "swapplan/planners/planner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
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
  return absl::OkStatus();
}

int64_t PlanningProblem::budget_bytes() const {
  if (device.capacity_bytes == kUnlimitedCapacityBytes) return kUnlimitedCapacityBytes;
  return std::max<int64_t>(device.capacity_bytes - device.reserve_bytes, 0);
}

absl::StatusOr<Policy> Planner::Plan(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
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
