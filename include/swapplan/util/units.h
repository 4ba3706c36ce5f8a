// Parsing and printing of sizes, bandwidths and durations for the CLI and
// for human-readable reports.
//
//   ParseBytes("64GiB")        -> 68719476736
//   ParseBytes("1.5GB")        -> 1500000000
//   ParseBandwidth("25GB/s")   -> 25e9 (bytes per second)
//   ParseDurationNs("60s")     -> 60000000000
//   FormatBytes(68719476736)   -> "64.00 GiB"
//
// Decimal prefixes (kB, MB, GB, TB) are powers of 1000 and binary prefixes
// (KiB, MiB, GiB, TiB) powers of 1024, as in IEC 80000-13. A bare number is
// bytes (or bytes per second, or nanoseconds for durations) for the Parse*
// functions; the Parse*WithUnit ones refuse it.
#ifndef SWAPPLAN_UTIL_UNITS_H_
#define SWAPPLAN_UTIL_UNITS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace swapplan {

// Returns the number of bytes `text` denotes, rounded to the nearest byte.
// InvalidArgument for an unknown suffix, a negative or non-finite value, or
// one that does not fit in int64.
absl::StatusOr<int64_t> ParseBytes(absl::string_view text);

// Returns bytes per second. Accepts "25GB/s", "25GB" (the "/s" is optional),
// "12.5GiB/s" and bare numbers. InvalidArgument for zero or negative values.
absl::StatusOr<double> ParseBandwidth(absl::string_view text);

// Returns nanoseconds. Accepts suffixes ns, us, ms, s, min, h and bare
// numbers (nanoseconds). InvalidArgument for negative values.
absl::StatusOr<int64_t> ParseDurationNs(absl::string_view text);

// Returns a non-negative fraction: "1%" -> 0.01, "0.25" -> 0.25, "150%" ->
// 1.5. InvalidArgument for anything else (negative, not finite, a suffix
// other than %).
absl::StatusOr<double> ParseFraction(absl::string_view text);

// The same where a unit is expected (command-line flags, SPEC §10): a bare
// number is refused with InvalidArgument "'600' needs a unit, e.g. 600B or
// 600GiB" (25GB/s for bandwidths, 10us for durations); an empty text with
// "empty value".
absl::StatusOr<int64_t> ParseBytesWithUnit(absl::string_view text);
absl::StatusOr<double> ParseBandwidthWithUnit(absl::string_view text);
absl::StatusOr<int64_t> ParseDurationWithUnit(absl::string_view text);

// A ratio: "1.5x" or "1.5" (dimensionless, so no unit to forget). Returns
// the value; InvalidArgument unless it is positive and finite.
absl::StatusOr<double> ParseRatio(absl::string_view text);

// "1.50 GiB", "512.00 MiB", "100 B": binary prefixes, two decimals.
std::string FormatBytes(int64_t bytes);
// "25.0 GB/s": decimal prefixes, as link bandwidths are quoted.
std::string FormatBandwidth(double bytes_per_s);
// "1.234 s", "56.7 ms", "890 us", "12 ns".
std::string FormatDurationNs(int64_t ns);

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_UNITS_H_
