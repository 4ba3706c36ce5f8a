// OptionTable: one declaration per planner option, from which everything
// that names the option is derived, so they cannot disagree:
//
//   name "min_tensor_bytes"  ->  Policy::parameters name  "min_tensor_bytes"
//                            ->  Planner::SetOption name  "min_tensor_bytes" or "min-tensor-bytes"
//                            ->  `plan` flag              "--min-tensor-bytes"
//                            ->  `compare` spelling       "chameleon.min-tensor-bytes=0"
//                            ->  --help text              the entry's help
//
// and every value a policy records (ToParameters) is accepted by Set, so
// a policy's parameters can always be replayed into a planner.
//
//   const OptionTable<LayerSwapOptions> kTable({
//       {"min_bytes", OptionType::kBytes, "Activations smaller than this stay", "",
//        [](const LayerSwapOptions& o) { return absl::StrCat(o.min_bytes); },
//        [](LayerSwapOptions& o, absl::string_view v) { return ParseOptionBytes(v, &o.min_bytes); }},
//   });
//   SWAPPLAN_RETURN_IF_ERROR(kTable.Set("vdnn", &options, "min-bytes", "20MiB"));
//
// Names are snake_case; '-' is accepted for '_'. Values: integers and
// decimals as written; sizes (names ending _bytes) as bytes or with a unit
// ("1MiB"); durations (names ending _ns) as nanoseconds or with a unit
// ("1.5s"); booleans true/false (or 1/0); choices by name. Lookups are
// O(options).
#ifndef SWAPPLAN_PLANNERS_OPTION_TABLE_H_
#define SWAPPLAN_PLANNERS_OPTION_TABLE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "swapplan/util/error.h"

namespace swapplan {

enum class OptionType : uint8_t { kInt, kUint, kDecimal, kBytes, kDurationNs, kBool, kChoice, kList };
// "integer", "unsigned integer", "number", "size", "duration", "true|false", "choice",
// "comma-separated list".
absl::string_view OptionTypeName(OptionType t);

// A planner option as the CLI and the docs see it.
struct OptionInfo {
  // snake_case; flags and SetOption also take it with '-'.
  std::string name;
  OptionType type = OptionType::kInt;
  std::string help;
  // kChoice: the values, ", "-separated.
  std::string choices;
  // The default, as ToParameters writes it.
  std::string default_value;
};

// Value parsers for the setters; InvalidArgument "'x' is not <what>".
absl::Status ParseOptionInt(absl::string_view v, int32_t* out);
absl::Status ParseOptionUint(absl::string_view v, uint64_t* out);
absl::Status ParseOptionDecimal(absl::string_view v, double* out);
absl::Status ParseOptionBytes(absl::string_view v, int64_t* out);
absl::Status ParseOptionDurationNs(absl::string_view v, int64_t* out);
absl::Status ParseOptionBool(absl::string_view v, bool* out);
// `parse` is one of the Parse<Enum>(string_view, Enum*) functions; `names`
// lists the values for the message.
template <typename E>
absl::Status ParseOptionChoice(absl::string_view v, bool (*parse)(absl::string_view, E*), E* out,
                               absl::string_view names) {
  if (parse(v, out)) return absl::OkStatus();
  return Error(ErrorKind::kUsage, absl::StrCat("'", v, "' is not one of ", names));
}

// "min-tensor-bytes" -> "min_tensor_bytes".
std::string CanonicalOptionName(absl::string_view name);

template <typename Options>
class OptionTable {
 public:
  struct Entry {
    const char* name;
    OptionType type;
    const char* help;
    // kChoice: the values, ", "-separated; "" otherwise.
    const char* choices;
    std::string (*get)(const Options&);
    absl::Status (*set)(Options&, absl::string_view value);
  };

  explicit OptionTable(std::vector<Entry> entries) : entries_(std::move(entries)) {}

  // Every option of `o` as (name, value) in declaration order: what a
  // policy records in Policy::parameters.
  std::vector<std::pair<std::string, std::string>> ToParameters(const Options& o) const {
    std::vector<std::pair<std::string, std::string>> v;
    v.reserve(entries_.size());
    for (const Entry& e : entries_) v.emplace_back(e.name, e.get(o));
    return v;
  }

  // Sets option `name` ('-' or '_') of `*o` from `value`. On error `*o` is
  // unchanged and the status (ErrorKind::kUsage) names `planner`, the
  // option and, for an unknown name, every known one. Range checks are the
  // options' Validate().
  absl::Status Set(absl::string_view planner, Options* o, absl::string_view name,
                   absl::string_view value) const {
    const std::string key = CanonicalOptionName(name);
    for (const Entry& e : entries_) {
      if (key != e.name) continue;
      if (absl::Status s = SetValue(o, name, value); !s.ok()) {
        return Error(ErrorKind::kUsage,
                     absl::StrCat(planner, " option ", name, ": ", s.message()));
      }
      return absl::OkStatus();
    }
    std::string known;
    for (const Entry& e : entries_) {
      absl::StrAppend(&known, known.empty() ? "" : ", ", absl::StrReplaceAll(e.name, {{"_", "-"}}));
    }
    return Error(ErrorKind::kUsage,
                 absl::StrCat(planner, " has no option '", name, "'",
                              known.empty() ? " (it takes none)" : absl::StrCat(" (known: ", known, ")")));
  }

  // Set() on a copy of `*o`, then the copy's Validate(); `*o` takes the copy
  // only when both succeed (a planner's SetOption). Returns the first error.
  absl::Status SetValidated(absl::string_view planner, Options* o, absl::string_view name,
                            absl::string_view value) const {
    Options next = *o;
    if (absl::Status s = Set(planner, &next, name, value); !s.ok()) return s;
    if (absl::Status s = next.Validate(); !s.ok()) return s;
    *o = std::move(next);
    return absl::OkStatus();
  }

  // Sets the value of known option `name` ('-' or '_'): the entry's parser's
  // status as is ("'x' is not an integer"), `*o` unchanged on error.
  // Requires a known name (InvalidArgument otherwise).
  absl::Status SetValue(Options* o, absl::string_view name, absl::string_view value) const {
    const std::string key = CanonicalOptionName(name);
    for (const Entry& e : entries_) {
      if (key != e.name) continue;
      Options next = *o;
      if (absl::Status s = e.set(next, value); !s.ok()) return s;
      *o = std::move(next);
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat("no option '", name, "'"));
  }

  // The options with their defaults (the values of `defaults`).
  std::vector<OptionInfo> Describe(const Options& defaults) const {
    std::vector<OptionInfo> v;
    for (const Entry& e : entries_) {
      v.push_back({e.name, e.type, e.help, e.choices, e.get(defaults)});
    }
    return v;
  }

 private:
  std::vector<Entry> entries_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_OPTION_TABLE_H_
