// Planner registry: every planner `compare` (and later `whatif`, `regress`)
// can run, by name. Adding a planner is one line in src/planners/registry.cc.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Planner> p, CreatePlanner("vdnn"));
//   for (const PlannerInfo& info : RegisteredPlanners()) { ... info.name ... }
#ifndef SWAPPLAN_PLANNERS_REGISTRY_H_
#define SWAPPLAN_PLANNERS_REGISTRY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/planners/planner.h"

namespace swapplan {

struct PlannerInfo {
  // Name in --planners lists, tables and policies.
  const char* name;
  // One line for --help.
  const char* description;
  // Judged with unlimited device memory (the ideal baseline).
  bool unlimited_memory;
  // Part of `compare`'s default list (false for planners too slow to run by
  // default).
  bool in_default_set;
  // A planner with default options.
  std::unique_ptr<Planner> (*create)();
};

// Every registered planner, in table order.
absl::Span<const PlannerInfo> RegisteredPlanners();

// The entry named `name`, or nullptr.
const PlannerInfo* FindPlanner(absl::string_view name);

// A planner by name. InvalidArgument listing the known names otherwise.
absl::StatusOr<std::unique_ptr<Planner>> CreatePlanner(absl::string_view name);

// "ideal, noswap, ..." in table order.
std::string PlannerNames();

// The planners compare runs on request only (PlannerInfo::in_default_set
// false), "hybrid, advisor, ..." in table order.
std::string PlannerNamesOutsideDefaultSet();

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_REGISTRY_H_
