// libFuzzer target: the size, bandwidth, duration, fraction and ratio parsers
// of command-line flags (util/units.h), bare and with the unit required.
// Accepted values must be in range (sizes and durations >= 0, bandwidths and
// ratios finite and > 0, fractions finite and >= 0) and format back without
// failing; errors are one line and exit 2.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "swapplan/util/units.h"

namespace {

void OneLine(const absl::Status& st) {
  if (!st.ok() && std::string(st.message()).find('\n') != std::string::npos) {
    swapplan::fuzz::Finding("multi-line message: " + std::string(st.message()));
  }
  if (!st.ok() && swapplan::ExitCode(st) != 2) {
    swapplan::fuzz::Finding("flag error is not exit 2: " + st.ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace swapplan;
  const absl::string_view text = fuzz::AsText(data, size);
  if (absl::StatusOr<int64_t> b = ParseBytes(text); b.ok()) {
    if (*b < 0) fuzz::Finding("negative size accepted");
    (void)FormatBytes(*b);
  } else {
    OneLine(b.status());
  }
  if (absl::StatusOr<double> bw = ParseBandwidth(text); bw.ok()) {
    if (!(*bw > 0) || !std::isfinite(*bw)) fuzz::Finding("bandwidth not finite and > 0");
    (void)FormatBandwidth(*bw);
  } else {
    OneLine(bw.status());
  }
  if (absl::StatusOr<int64_t> d = ParseDurationNs(text); d.ok()) {
    if (*d < 0) fuzz::Finding("negative duration accepted");
    (void)FormatDurationNs(*d);
  } else {
    OneLine(d.status());
  }
  if (absl::StatusOr<double> f = ParseFraction(text); f.ok()) {
    if (!(*f >= 0) || !std::isfinite(*f)) fuzz::Finding("fraction not finite and >= 0");
  } else {
    OneLine(f.status());
  }
  if (absl::StatusOr<double> r = ParseRatio(text); r.ok()) {
    if (!(*r > 0) || !std::isfinite(*r)) fuzz::Finding("ratio not finite and > 0");
  } else {
    OneLine(r.status());
  }
  // The forms the command-line flags use (unit required).
  if (absl::StatusOr<int64_t> b = ParseBytesWithUnit(text); b.ok()) {
    if (*b < 0) fuzz::Finding("negative size accepted (with unit)");
  } else {
    OneLine(b.status());
  }
  if (absl::StatusOr<double> bw = ParseBandwidthWithUnit(text); bw.ok()) {
    if (!(*bw > 0) || !std::isfinite(*bw)) fuzz::Finding("bandwidth not finite and > 0 (with unit)");
  } else {
    OneLine(bw.status());
  }
  if (absl::StatusOr<int64_t> d = ParseDurationWithUnit(text); d.ok()) {
    if (*d < 0) fuzz::Finding("negative duration accepted (with unit)");
  } else {
    OneLine(d.status());
  }
  return 0;
}
