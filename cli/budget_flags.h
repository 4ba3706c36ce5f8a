// The budget-basis flags (alloc/budget_basis.h), the same in every command
// that holds a policy to a budget (check, simulate, plan, advise, compare)
// or draws the reserved curve (curve):
//
//   --budget-on allocated|reserved   default: reserved for a device preset
//                                    (PyTorch's caching allocator), allocated
//                                    for a custom device
//   --allocator cuda-caching|best-fit  the model of reserved bytes
//   --alloc-conf TEXT                PYTORCH_CUDA_ALLOC_CONF-style options
//                                    of the cuda-caching model, e.g.
//                                    "expandable_segments:True,max_split_size_mb:128"
//   --reserved-method feedback|margin  how planners plan for reserved bytes
//                                    (planning commands only)
//
//   BudgetFlags f;  AddBudgetFlags(sub, &flags, &f, {.planning = true});
//   ...
//   BudgetBasis b = ResolveBudgetBasis(f, device.model, &flags);
//
// Every output states the basis (BudgetBasisText / BudgetBasisJson). O(1).
#ifndef SWAPPLAN_CLI_BUDGET_FLAGS_H_
#define SWAPPLAN_CLI_BUDGET_FLAGS_H_

#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "flags.h"
#include "swapplan/alloc/budget_basis.h"
#include "swapplan/planners/planner.h"

namespace swapplan::cli {

struct BudgetFlags {
  std::optional<std::string> budget_on;
  std::optional<std::string> allocator;
  std::optional<std::string> alloc_conf;
  std::optional<std::string> reserved_method;
};

struct BudgetFlagChoice {
  // --budget-on (commands with a budget; curve has none).
  bool budget_on = true;
  // --reserved-method.
  bool planning = false;
};

void AddBudgetFlags(CLI::App* sub, FlagSet* flags, BudgetFlags* f, const BudgetFlagChoice& choice);

// DefaultBudgetBasis(device), then the flags; problems (a bad --alloc-conf)
// go to `flags`. `recorded`: the basis a policy was planned on (check,
// simulate), used when no flag says otherwise.
BudgetBasis ResolveBudgetBasis(const BudgetFlags& f, const DeviceModel& device, FlagSet* flags,
                               const std::optional<BudgetBasis>& recorded = std::nullopt);
ReservedMethod ResolveReservedMethod(const BudgetFlags& f);
// Whether the allocator model was asked for (--allocator or --alloc-conf).
bool AllocatorGiven(const BudgetFlags& f);

// {"budget_on": ..., "allocator": ..., "alloc_conf": ..., "budget_basis": text}.
nlohmann::json BudgetBasisJson(const BudgetBasis& b);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_BUDGET_FLAGS_H_
