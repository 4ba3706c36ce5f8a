#include "swapplan/planners/planner.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"

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

absl::Status Planner::SetOption(absl::string_view name, absl::string_view value) {
  return Error(ErrorKind::kUsage, absl::StrCat(this->name(), " has no option '", name,
                                               "' (it takes none; given '", value, "')"));
}

}  // namespace swapplan
