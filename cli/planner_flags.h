// Planner options as command-line flags: one flag per entry of a planner's
// option table (planners/option_table.h), named after it — option
// min_tensor_bytes is --min-tensor-bytes — with the table's help and
// default, so `plan` and `search` take exactly the options their policies
// record.
//
//   AddPlannerOptionFlags(sub, &flags, ChameleonOptionTable().Describe(defaults),
//       [a](const std::string& name, const std::string& value) {
//         return ChameleonOptionTable().SetValue(&a->options, name, value);
//       });
//
// O(options) to declare.
#ifndef SWAPPLAN_CLI_PLANNER_FLAGS_H_
#define SWAPPLAN_CLI_PLANNER_FLAGS_H_

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "flags.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/option_table.h"

namespace swapplan::cli {

using OptionSetter = std::function<absl::Status(const std::string& name, const std::string& value)>;

// Declares --<name with '-'> for every option; a given value is handed to
// `set` by FlagSet::Parse (its error becomes the flag's problem).
void AddPlannerOptionFlags(CLI::App* sub, FlagSet* flags, const std::vector<OptionInfo>& options,
                           OptionSetter set);

// --planner-option PLANNER.NAME=VALUE, repeatable (compare, optimum): each
// value is checked by creating the planner and setting the option (its error
// becomes the flag's problem); accepted ones are appended to `out`, which
// must outlive FlagSet::Parse.
void AddPlannerOptionFlag(CLI::App* sub, FlagSet* flags,
                          std::vector<CompareOptions::PlannerOption>* out, const std::string& help);

// "--min-tensor-bytes" for "min_tensor_bytes".
std::string OptionFlag(const std::string& name);

// The value's name in --help: INT, UINT, NUMBER, SIZE, DURATION, BOOL, CHOICE.
std::string OptionTypeFlagName(OptionType t);

// The help line of an option: its help, then the values it takes and its
// default ("...; max|minmax, default max").
std::string OptionHelp(const OptionInfo& o);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_PLANNER_FLAGS_H_
