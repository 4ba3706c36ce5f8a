#include "swapplan/planners/planner.h"

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
  if (device_budget_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("planning problem: device budget ",
                                                   device_budget_bytes, " bytes is negative"));
  }
  for (auto [name, bw] : {std::pair<const char*, double>{"h2d", h2d_bandwidth_bytes_per_s},
                          {"d2h", d2h_bandwidth_bytes_per_s}}) {
    if (!(bw > 0) || !std::isfinite(bw)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "planning problem: ", name, " bandwidth must be > 0 (none given and the trace "
          "metadata has none)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Policy> Planner::Plan(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, PlanPolicy(problem));
  SWAPPLAN_RETURN_IF_ERROR(FinishPolicy(problem, name(), unlimited_memory(), &policy));
  return policy;
}

absl::Status FinishPolicy(const PlanningProblem& problem, absl::string_view planner,
                          bool unlimited_memory, Policy* policy) {
  DeviceModel& d = policy->device;
  d = DeviceModel{};
  d.capacity_bytes = unlimited_memory ? kUnlimitedCapacityBytes : problem.device_budget_bytes;
  d.h2d_bandwidth_bytes_per_s = problem.h2d_bandwidth_bytes_per_s;
  d.d2h_bandwidth_bytes_per_s = problem.d2h_bandwidth_bytes_per_s;
  policy->device_budget_bytes = d.capacity_bytes;
  policy->h2d_bandwidth_bytes_per_s = d.h2d_bandwidth_bytes_per_s;
  policy->d2h_bandwidth_bytes_per_s = d.d2h_bandwidth_bytes_per_s;
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
  return absl::InvalidArgumentError(absl::StrCat("planner ", this->name(), " has no option '",
                                                 name, "' (given '", value, "')"));
}

}  // namespace swapplan
