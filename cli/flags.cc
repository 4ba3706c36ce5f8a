#include "flags.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "swapplan/util/error.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

// "--device-memory" of "-m,--device-memory"; the first name otherwise.
std::string DisplayName(const std::string& names) {
  std::string first;
  for (absl::string_view n : absl::StrSplit(names, ',')) {
    if (absl::StartsWith(n, "--")) return std::string(n);
    if (first.empty()) first = std::string(n);
  }
  return first;
}

template <typename T>
FlagSet::Parser Store(std::optional<T>* out, absl::StatusOr<T> (*parse)(absl::string_view)) {
  return [out, parse](const std::string& v) -> std::string {
    absl::StatusOr<T> x = parse(v);
    if (!x.ok()) return std::string(x.status().message());
    *out = *x;
    return "";
  };
}

}  // namespace

FlagSet::Entry& FlagSet::Declare(CLI::App* sub, const std::string& names, const std::string& help,
                                 Parser parse, const std::string& type) {
  values_.emplace_back();
  Entry e;
  e.option = sub->add_option(names, values_.back(), help)->type_name(type);
  e.flag = DisplayName(names);
  e.parse = std::move(parse);
  entries_.push_back(std::move(e));
  return entries_.back();
}

CLI::Option* FlagSet::Size(CLI::App* sub, const std::string& names, std::optional<int64_t>* out,
                           const std::string& help) {
  return Declare(sub, names, help, Store<int64_t>(out, &ParseBytesWithUnit), "SIZE").option;
}

CLI::Option* FlagSet::Bandwidth(CLI::App* sub, const std::string& names,
                                std::optional<double>* out, const std::string& help) {
  return Declare(sub, names, help, Store<double>(out, &ParseBandwidthWithUnit), "RATE").option;
}

CLI::Option* FlagSet::Duration(CLI::App* sub, const std::string& names,
                               std::optional<int64_t>* out, const std::string& help) {
  return Declare(sub, names, help, Store<int64_t>(out, &ParseDurationWithUnit), "DURATION")
      .option;
}

CLI::Option* FlagSet::Ratio(CLI::App* sub, const std::string& names, std::optional<double>* out,
                            const std::string& help) {
  return Declare(sub, names, help, Store<double>(out, &ParseRatio), "RATIO").option;
}

CLI::Option* FlagSet::Fraction(CLI::App* sub, const std::string& names,
                               std::optional<double>* out, const std::string& help) {
  return Declare(sub, names, help, Store<double>(out, &ParseFraction), "FRACTION").option;
}

CLI::Option* FlagSet::Int(CLI::App* sub, const std::string& names, std::optional<int64_t>* out,
                          const std::string& help, int64_t min, int64_t max) {
  return Declare(sub, names, help,
                 [out, min, max](const std::string& v) -> std::string {
                   int64_t x = 0;
                   if (!absl::SimpleAtoi(v, &x)) return absl::StrCat("'", v, "' is not an integer");
                   if (x < min || x > max) {
                     return absl::StrCat(x, " is out of range [", min, ", ", max, "]");
                   }
                   *out = x;
                   return "";
                 },
                 "INT")
      .option;
}

CLI::Option* FlagSet::Number(CLI::App* sub, const std::string& names, std::optional<double>* out,
                             const std::string& help, double min, double max) {
  return Declare(sub, names, help,
                 [out, min, max](const std::string& v) -> std::string {
                   double x = 0;
                   if (!absl::SimpleAtod(v, &x) || !std::isfinite(x)) {
                     return absl::StrCat("'", v, "' is not a number");
                   }
                   if (x < min || x > max) {
                     return absl::StrCat(v, " is out of range [", min, ", ", max, "]");
                   }
                   *out = x;
                   return "";
                 },
                 "NUMBER")
      .option;
}

CLI::Option* FlagSet::Text(CLI::App* sub, const std::string& names,
                           std::optional<std::string>* out, const std::string& help) {
  return Declare(sub, names, help,
                 [out](const std::string& v) -> std::string {
                   *out = v;
                   return "";
                 },
                 "TEXT")
      .option;
}

CLI::Option* FlagSet::Choice(CLI::App* sub, const std::string& names,
                             std::optional<std::string>* out, std::vector<std::string> choices,
                             const std::string& help) {
  return Declare(sub, names, help,
                 [out, choices](const std::string& v) -> std::string {
                   for (const std::string& c : choices) {
                     if (v == c) {
                       *out = v;
                       return "";
                     }
                   }
                   return absl::StrCat("'", v, "' is not one of ", absl::StrJoin(choices, ", "));
                 },
                 absl::StrCat("{", absl::StrJoin(choices, ","), "}"))
      .option;
}

CLI::Option* FlagSet::Custom(CLI::App* sub, const std::string& names, Parser parse,
                             const std::string& help, const std::string& type) {
  return Declare(sub, names, help, std::move(parse), type).option;
}

CLI::Option* FlagSet::Repeated(CLI::App* sub, const std::string& names, Parser parse,
                               const std::string& help, const std::string& type) {
  repeated_values_.emplace_back();
  Entry e;
  e.option = sub->add_option(names, repeated_values_.back(), help)->type_name(type);
  e.flag = DisplayName(names);
  e.parse = std::move(parse);
  e.repeated = true;
  entries_.push_back(std::move(e));
  return entries_.back().option;
}

CLI::Option* FlagSet::Positional(CLI::App* sub, const std::string& name, std::string* out,
                                 const std::string& help, bool required) {
  Entry e;
  e.option = sub->add_option(name, *out, required ? help + " (required)" : help)->type_name("FILE");
  e.flag = name;
  e.positional_required = required;
  e.positional = out;
  e.parse = [](const std::string&) { return std::string(); };
  entries_.push_back(std::move(e));
  return entries_.back().option;
}

void FlagSet::Parse() {
  size_t value = 0, repeated = 0;
  for (Entry& e : entries_) {
    const std::string* single = e.positional;
    const std::vector<std::string>* many = nullptr;
    if (e.repeated) {
      many = &repeated_values_[repeated++];
    } else if (e.positional == nullptr) {
      single = &values_[value++];
    }
    if (e.option->count() == 0) {
      if (e.positional_required) Add(absl::StrCat("missing ", e.flag, " argument"));
      continue;
    }
    auto check = [&](const std::string& v) {
      if (v.empty()) {
        Add(absl::StrCat(e.flag, ": empty value (leave the flag out instead)"));
        return;
      }
      std::string problem = e.parse(v);
      if (!problem.empty()) Add(absl::StrCat(e.flag, ": ", problem));
    };
    if (many != nullptr) {
      for (const std::string& v : *many) check(v);
    } else {
      check(*single);
    }
  }
}

bool FlagSet::Given(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (e.flag == name) return e.option->count() > 0;
  }
  return false;
}

void FlagSet::Add(std::string problem) { problems_.push_back(std::move(problem)); }

absl::Status FlagSet::Status() const {
  if (problems_.empty()) return absl::OkStatus();
  return Error(ErrorKind::kUsage, absl::StrJoin(problems_, "\n"));
}

std::vector<std::string> StatusLines(const absl::Status& status) {
  return absl::StrSplit(status.message(), '\n');
}

}  // namespace swapplan::cli
