#include "swapplan/planners/option_table.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "swapplan/util/units.h"

namespace swapplan {
namespace {

absl::Status Not(absl::string_view v, absl::string_view what) {
  return Error(ErrorKind::kUsage, absl::StrCat("'", v, "' is not ", what));
}

}  // namespace

absl::string_view OptionTypeName(OptionType t) {
  switch (t) {
    case OptionType::kInt: return "integer";
    case OptionType::kUint: return "unsigned integer";
    case OptionType::kDecimal: return "number";
    case OptionType::kBytes: return "size";
    case OptionType::kDurationNs: return "duration";
    case OptionType::kBool: return "true|false";
    case OptionType::kChoice: return "choice";
    case OptionType::kList: return "comma-separated list";
  }
  return "integer";
}

std::string CanonicalOptionName(absl::string_view name) {
  return absl::StrReplaceAll(name, {{"-", "_"}});
}

absl::Status ParseOptionInt(absl::string_view v, int32_t* out) {
  if (!absl::SimpleAtoi(v, out)) return Not(v, "an integer");
  return absl::OkStatus();
}

absl::Status ParseOptionUint(absl::string_view v, uint64_t* out) {
  if (!absl::SimpleAtoi(v, out)) return Not(v, "an unsigned integer");
  return absl::OkStatus();
}

absl::Status ParseOptionDecimal(absl::string_view v, double* out) {
  if (!absl::SimpleAtod(v, out)) return Not(v, "a number");
  return absl::OkStatus();
}

absl::Status ParseOptionBytes(absl::string_view v, int64_t* out) {
  absl::StatusOr<int64_t> b = ParseBytes(v);
  if (!b.ok()) return Not(v, "a size like 1048576 or 1MiB");
  *out = *b;
  return absl::OkStatus();
}

absl::Status ParseOptionDurationNs(absl::string_view v, int64_t* out) {
  absl::StatusOr<int64_t> ns = ParseDurationNs(v);
  if (!ns.ok()) return Not(v, "a duration like 1500000000 or 1.5s");
  *out = *ns;
  return absl::OkStatus();
}

absl::Status ParseOptionBool(absl::string_view v, bool* out) {
  if (v == "true" || v == "1") {
    *out = true;
  } else if (v == "false" || v == "0") {
    *out = false;
  } else {
    return Not(v, "true or false");
  }
  return absl::OkStatus();
}

}  // namespace swapplan
