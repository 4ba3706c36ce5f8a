// swapplan devices [--json] [-o FILE]
//
// Lists the device presets (device/presets.h) that --device names: capacity,
// pinned host-copy bandwidths and per-copy latency, peak dense 16-bit
// FLOP/s, memory bandwidth and device link. Sources: docs/devices.md.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "flags.h"
#include "swapplan/device/presets.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct DevicesArgs {
  FlagSet flags;
  bool json = false;
  std::optional<std::string> output;
};

std::string RenderText() {
  TextTable t({"device", "aliases", "memory", "h2d", "d2h", "latency", "16-bit peak", "HBM",
               "link"});
  for (const DevicePresetInfo& p : DevicePresets()) {
    const DeviceModel& m = p.model;
    t.AddRow({p.name, p.aliases.empty() ? "-" : absl::StrJoin(p.aliases, ","),
              FormatBytes(m.capacity_bytes), FormatBandwidth(m.h2d_bandwidth_bytes_per_s),
              FormatBandwidth(m.d2h_bandwidth_bytes_per_s), FormatDurationNs(m.copy_latency_ns),
              absl::StrFormat("%.0f TFLOP/s", m.peak_flops_per_s / 1e12),
              FormatBandwidth(m.memory_bandwidth_bytes_per_s),
              FormatBandwidth(m.interconnect_bandwidth_bytes_per_s)});
  }
  TextTable products({"device", "product", "vendor"});
  for (const DevicePresetInfo& p : DevicePresets()) {
    products.AddRow({p.name, p.product, std::string(DeviceVendorName(p.vendor))});
  }
  return absl::StrCat(t.Render(/*left_columns=*/2), "\n", products.Render(/*left_columns=*/3),
                      "\nbandwidths per direction; h2d/d2h: typical pinned-memory copies; sources "
                      "and assumptions: docs/devices.md\n");
}

std::string RenderJson() {
  using nlohmann::json;
  json devices = json::array();
  for (const DevicePresetInfo& p : DevicePresets()) {
    const DeviceModel& m = p.model;
    devices.push_back({{"name", p.name},
                       {"aliases", p.aliases},
                       {"product", p.product},
                       {"vendor", std::string(DeviceVendorName(p.vendor))},
                       {"capacity_bytes", m.capacity_bytes},
                       {"h2d_bandwidth_bytes_per_s", m.h2d_bandwidth_bytes_per_s},
                       {"d2h_bandwidth_bytes_per_s", m.d2h_bandwidth_bytes_per_s},
                       {"copy_latency_ns", m.copy_latency_ns},
                       {"copy_engines", m.copy_engines},
                       {"peak_flops_per_s", m.peak_flops_per_s},
                       {"memory_bandwidth_bytes_per_s", m.memory_bandwidth_bytes_per_s},
                       {"interconnect_bandwidth_bytes_per_s", m.interconnect_bandwidth_bytes_per_s}});
  }
  return json({{"devices", std::move(devices)}}).dump(2) + "\n";
}

}  // namespace

void SetupDevices(CLI::App& root, Action* action) {
  auto a = std::make_shared<DevicesArgs>();
  CLI::App* sub = root.add_subcommand(
      "devices",
      "List the device presets --device takes: capacity, pinned host-copy bandwidths and "
      "latency, peak dense 16-bit FLOP/s, memory and link bandwidth (sources: docs/devices.md).");
  sub->add_flag("--json", a->json, "Machine-readable JSON (docs/json/devices.schema.json)");
  a->flags.Text(sub, "-o,--output", &a->output, "Write the list to FILE instead of stdout");
  sub->callback([a, action] {
    *action = [a]() -> absl::Status {
      a->flags.Parse();
      if (!a->flags.ok()) return a->flags.Status();
      return WriteOutput(a->output.value_or(""), a->json ? RenderJson() : RenderText());
    };
  });
}

}  // namespace swapplan::cli
