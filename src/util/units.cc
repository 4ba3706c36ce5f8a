#include "swapplan/util/units.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "swapplan/util/utf8.h"

namespace swapplan {
namespace {

// Input text quoted in a message: control characters escaped, so that the
// message stays on one line (issue 19), and long values shortened.
std::string Quoted(absl::string_view text) { return EscapeForMessage(text, 40); }

struct Suffix {
  const char* name;
  double factor;
};

// Splits "1.5GiB" into 1.5 and "GiB". InvalidArgument when there is no
// leading number.
absl::Status SplitNumber(absl::string_view text, absl::string_view what, double* value,
                         std::string* suffix) {
  std::string s(absl::StripAsciiWhitespace(text));
  if (s.empty()) return absl::InvalidArgumentError(absl::StrCat("empty ", what));
  const char* begin = s.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid ", what, " '", Quoted(text), "'"));
  }
  *value = v;
  *suffix = std::string(absl::StripAsciiWhitespace(absl::string_view(end)));
  return absl::OkStatus();
}

bool LookupSuffix(const std::string& suffix, const Suffix* table, size_t n, double* factor) {
  for (size_t i = 0; i < n; ++i) {
    if (absl::EqualsIgnoreCase(suffix, table[i].name)) {
      // Units match case-insensitively ("gib" == "GiB"); binary and decimal
      // prefixes differ by the 'i', never by case.
      *factor = table[i].factor;
      return true;
    }
  }
  return false;
}

constexpr Suffix kByteSuffixes[] = {
    {"", 1.0},          {"B", 1.0},
    {"k", 1e3},         {"kB", 1e3},          {"K", 1e3},
    {"M", 1e6},         {"MB", 1e6},          {"G", 1e9},  {"GB", 1e9},
    {"T", 1e12},        {"TB", 1e12},
    {"KiB", 1024.0},    {"Ki", 1024.0},
    {"MiB", 1048576.0}, {"Mi", 1048576.0},
    {"GiB", 1073741824.0}, {"Gi", 1073741824.0},
    {"TiB", 1099511627776.0}, {"Ti", 1099511627776.0},
};

constexpr Suffix kDurationSuffixes[] = {
    {"", 1.0},   {"ns", 1.0},   {"us", 1e3},    {"ms", 1e6},
    {"s", 1e9},  {"min", 60e9}, {"h", 3600e9},
};

}  // namespace

absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  double v = 0;
  std::string suffix;
  absl::Status st = SplitNumber(text, "size", &v, &suffix);
  if (!st.ok()) return st;
  double factor = 0;
  if (!LookupSuffix(suffix, kByteSuffixes, sizeof(kByteSuffixes) / sizeof(Suffix), &factor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid size '", Quoted(text), "': unknown unit '", Quoted(suffix), "' (use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)"));
  }
  double bytes = std::round(v * factor);
  if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("size '", Quoted(text), "' is negative"));
  // 2^63 is exactly representable and is the first value past int64 (the
  // max itself rounds up to it as a double): compare with it, not with max.
  if (!(bytes < 9223372036854775808.0)) {
    return absl::InvalidArgumentError(absl::StrCat("size '", Quoted(text), "' is too large"));
  }
  return static_cast<int64_t>(bytes);
}

absl::StatusOr<double> ParseBandwidth(absl::string_view text) {
  std::string t(absl::StripAsciiWhitespace(text));
  if (absl::EndsWith(t, "/s")) t.resize(t.size() - 2);
  absl::StatusOr<int64_t> bytes = ParseBytes(t);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid bandwidth '", Quoted(text), "' (e.g. 25GB/s, 12GiB/s)"));
  }
  if (*bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("bandwidth '", Quoted(text), "' must be > 0"));
  }
  return static_cast<double>(*bytes);
}

absl::StatusOr<int64_t> ParseDurationNs(absl::string_view text) {
  double v = 0;
  std::string suffix;
  absl::Status st = SplitNumber(text, "duration", &v, &suffix);
  if (!st.ok()) return st;
  double factor = 0;
  bool found = false;
  for (const Suffix& s : kDurationSuffixes) {
    if (suffix == s.name) {
      factor = s.factor;
      found = true;
    }
  }
  if (!found) {
    return absl::InvalidArgumentError(absl::StrCat("invalid duration '", Quoted(text),
                                                   "': unknown unit '", Quoted(suffix), "' (use ns, us, ms, s, min or h)"));
  }
  double ns = std::round(v * factor);
  if (ns < 0) return absl::InvalidArgumentError(absl::StrCat("duration '", Quoted(text), "' is negative"));
  if (!(ns < 9223372036854775808.0)) {
    return absl::InvalidArgumentError(absl::StrCat("duration '", Quoted(text), "' is too large"));
  }
  return static_cast<int64_t>(ns);
}

absl::StatusOr<double> ParseFraction(absl::string_view text) {
  double v = 0;
  std::string suffix;
  absl::Status st = SplitNumber(text, "fraction", &v, &suffix);
  if (!st.ok()) return st;
  if (suffix != "" && suffix != "%") {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid fraction '", Quoted(text), "': unknown unit '", Quoted(suffix), "' (use % or none)"));
  }
  if (suffix == "%") v /= 100;
  if (!(v >= 0) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat("fraction '", Quoted(text), "' is negative"));
  }
  return v;
}

namespace {

// InvalidArgument when `text` is empty or a bare number: `example_unit` is
// appended to the number in the suggestion ("B or 600GiB").
absl::Status RequireUnit(absl::string_view text, absl::string_view what,
                         absl::string_view suggestion) {
  absl::string_view t = absl::StripAsciiWhitespace(text);
  if (t.empty()) return absl::InvalidArgumentError("empty value");
  double v = 0;
  std::string suffix;
  absl::Status st = SplitNumber(t, what, &v, &suffix);
  if (!st.ok()) return st;
  if (suffix.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", Quoted(t), "' needs a unit, e.g. ",
                                                   absl::StrReplaceAll(suggestion, {{"N", Quoted(t)}})));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> ParseBytesWithUnit(absl::string_view text) {
  if (absl::Status s = RequireUnit(text, "size", "NB or NGiB"); !s.ok()) return s;
  return ParseBytes(text);
}

absl::StatusOr<double> ParseBandwidthWithUnit(absl::string_view text) {
  if (absl::Status s = RequireUnit(text, "bandwidth", "NGB/s"); !s.ok()) return s;
  // A flag wants a rate: "25GB" is a size (ParseBandwidth alone, for files
  // written before this rule, still reads it as 25 GB/s).
  if (!absl::EndsWith(absl::StripAsciiWhitespace(text), "/s")) {
    return absl::InvalidArgumentError(absl::StrCat("bandwidth '", Quoted(text),
                                                   "' is a size: a rate needs /s, e.g. ",
                                                   Quoted(absl::StripAsciiWhitespace(text)),
                                                   "/s"));
  }
  return ParseBandwidth(text);
}

absl::StatusOr<int64_t> ParseDurationWithUnit(absl::string_view text) {
  if (absl::Status s = RequireUnit(text, "duration", "Nus or Nms"); !s.ok()) return s;
  return ParseDurationNs(text);
}

absl::StatusOr<double> ParseRatio(absl::string_view text) {
  double v = 0;
  std::string suffix;
  absl::Status st = SplitNumber(text, "ratio", &v, &suffix);
  if (!st.ok()) return st;
  if (suffix != "" && suffix != "x") {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ratio '", Quoted(text), "': unknown unit '", Quoted(suffix), "' (use x or none)"));
  }
  if (!(v > 0) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat("ratio '", Quoted(text), "' must be > 0"));
  }
  return v;
}

std::string FormatBytes(int64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  double mag = std::fabs(v);
  if (mag < 1024.0) return absl::StrCat(bytes, " B");
  int u = -1;
  while (mag >= 1024.0 && u < 3) {
    v /= 1024.0;
    mag /= 1024.0;
    ++u;
  }
  return absl::StrFormat("%.2f %s", v, units[u]);
}

std::string FormatBandwidth(double bytes_per_s) {
  if (bytes_per_s >= 1e9) return absl::StrFormat("%.1f GB/s", bytes_per_s / 1e9);
  if (bytes_per_s >= 1e6) return absl::StrFormat("%.1f MB/s", bytes_per_s / 1e6);
  return absl::StrFormat("%.0f B/s", bytes_per_s);
}

std::string FormatDurationNs(int64_t ns) {
  double v = static_cast<double>(ns);
  double mag = std::fabs(v);
  if (mag >= 1e9) return absl::StrFormat("%.3f s", v / 1e9);
  if (mag >= 1e6) return absl::StrFormat("%.1f ms", v / 1e6);
  if (mag >= 1e3) return absl::StrFormat("%.1f us", v / 1e3);
  return absl::StrCat(ns, " ns");
}

}  // namespace swapplan
