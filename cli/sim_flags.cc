#include "sim_flags.h"

#include "absl/strings/str_cat.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {

void AddSimFlags(CLI::App* sub, SimFlags* f) {
  sub->add_option("--latency", f->latency, "Fixed cost of every copy, e.g. 10us (default 0)");
  sub->add_option("--bandwidth", f->bandwidth,
                  "Copy bandwidth in both directions, e.g. 25GB/s (default: the trace's)");
  sub->add_option("--h2d-bandwidth", f->h2d_bandwidth, "Host-to-device bandwidth");
  sub->add_option("--d2h-bandwidth", f->d2h_bandwidth, "Device-to-host bandwidth");
  sub->add_flag("--half-duplex", f->half_duplex,
                "Both directions share one link (copies run one at a time)");
}

absl::Status ApplySimFlags(const SimFlags& f, SimulatorOptions* o) {
  auto with_flag = [](absl::string_view flag, const absl::Status& st) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", st.message()));
  };
  if (!f.latency.empty()) {
    absl::StatusOr<int64_t> v = ParseDurationNs(f.latency);
    if (!v.ok()) return with_flag("--latency", v.status());
    o->device.copy_latency_ns = *v;
  }
  auto bw = [&](const std::string& text, const char* flag, double* out) -> absl::Status {
    if (text.empty()) return absl::OkStatus();
    absl::StatusOr<double> v = ParseBandwidth(text);
    if (!v.ok()) return with_flag(flag, v.status());
    *out = *v;
    return absl::OkStatus();
  };
  DeviceModel& d = o->device;
  SWAPPLAN_RETURN_IF_ERROR(bw(f.bandwidth, "--bandwidth", &d.h2d_bandwidth_bytes_per_s));
  SWAPPLAN_RETURN_IF_ERROR(bw(f.bandwidth, "--bandwidth", &d.d2h_bandwidth_bytes_per_s));
  SWAPPLAN_RETURN_IF_ERROR(bw(f.h2d_bandwidth, "--h2d-bandwidth", &d.h2d_bandwidth_bytes_per_s));
  SWAPPLAN_RETURN_IF_ERROR(bw(f.d2h_bandwidth, "--d2h-bandwidth", &d.d2h_bandwidth_bytes_per_s));
  d.copy_engines = f.half_duplex ? 1 : 2;
  return absl::OkStatus();
}

std::string LinkText(const DeviceModel& d) {
  auto bw = [](double b) { return b > 0 ? FormatBandwidth(b) : std::string("unknown"); };
  return absl::StrCat("h2d ", bw(d.h2d_bandwidth_bytes_per_s), ", d2h ",
                      bw(d.d2h_bandwidth_bytes_per_s), ", latency ",
                      FormatDurationNs(d.copy_latency_ns),
                      d.half_duplex() ? ", half duplex" : ", full duplex");
}

std::string BytesExact(int64_t b) {
  return b < 1024 ? FormatBytes(b) : absl::StrCat(FormatBytes(b), " (", b, " B)");
}

std::string OpText(const Trace& trace, int32_t iteration, int32_t op) {
  return absl::StrCat("op ", op, " (", trace.op_name_at(trace.iteration(iteration).op_begin + op),
                      ")");
}

}  // namespace swapplan::cli
