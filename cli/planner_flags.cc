#include "planner_flags.h"

#include "absl/strings/str_cat.h"
#include "swapplan/planners/registry.h"
#include "absl/strings/str_replace.h"

namespace swapplan::cli {

void AddPlannerOptionFlag(CLI::App* sub, FlagSet* flags,
                          std::vector<CompareOptions::PlannerOption>* out, const std::string& help) {
  flags->Repeated(
      sub, "--planner-option",
      [out](const std::string& text) -> std::string {
        absl::StatusOr<CompareOptions::PlannerOption> o = ParsePlannerOption(text);
        if (!o.ok()) return std::string(o.status().message());
        absl::StatusOr<std::unique_ptr<Planner>> p = CreatePlanner(o->planner);
        if (!p.ok()) return std::string(p.status().message());
        if (absl::Status s = (*p)->SetOption(o->name, o->value); !s.ok()) {
          return std::string(s.message());
        }
        out->push_back(*std::move(o));
        return "";
      },
      help, "PLANNER.NAME=VALUE");
}

std::string OptionFlag(const std::string& name) {
  return absl::StrCat("--", absl::StrReplaceAll(name, {{"_", "-"}}));
}

std::string OptionTypeFlagName(OptionType t) {
  switch (t) {
    case OptionType::kInt: return "INT";
    case OptionType::kUint: return "UINT";
    case OptionType::kDecimal: return "NUMBER";
    case OptionType::kBytes: return "SIZE";
    case OptionType::kDurationNs: return "DURATION";
    case OptionType::kBool: return "BOOL";
    case OptionType::kChoice: return "CHOICE";
    case OptionType::kList: return "LIST";
  }
  return "VALUE";
}

std::string OptionHelp(const OptionInfo& o) {
  std::string values;
  switch (o.type) {
    case OptionType::kChoice:
      values = absl::StrReplaceAll(o.choices, {{", ", "|"}});
      break;
    case OptionType::kBytes:
      values = "size, e.g. 1MiB or bytes";
      break;
    case OptionType::kDurationNs:
      values = "duration, e.g. 1.5s or ns";
      break;
    default:
      values = std::string(OptionTypeName(o.type));
      break;
  }
  return absl::StrCat(o.help, " [", values, "; default ", o.default_value, "]");
}

void AddPlannerOptionFlags(CLI::App* sub, FlagSet* flags, const std::vector<OptionInfo>& options,
                           OptionSetter set) {
  for (const OptionInfo& o : options) {
    const std::string name = o.name;
    flags->Custom(
        sub, OptionFlag(name),
        [set, name](const std::string& value) -> std::string {
          absl::Status s = set(name, value);
          return s.ok() ? std::string() : std::string(s.message());
        },
        OptionHelp(o), OptionTypeFlagName(o.type));
  }
}

}  // namespace swapplan::cli
