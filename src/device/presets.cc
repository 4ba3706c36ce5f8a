// Device presets. Every figure and its source: docs/devices.md. The four
// presets the synthesizer had first (a100-80g, h100-80g, h200-141g,
// ascend-910b-64g, now aliases) keep their figures exactly, so synthesized
// traces are reproduced byte for byte.
#include "swapplan/device/presets.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// Per-copy latency of every preset: an assumption (docs/devices.md), the
// order of a cudaMemcpyAsync launch plus DMA setup.
constexpr int64_t kCopyLatencyNs = 10'000;

DevicePresetInfo Preset(std::string name, std::vector<std::string> aliases, std::string product,
                        DeviceVendor vendor, int64_t capacity_gib, double h2d, double d2h,
                        double peak_flops, double hbm, double link) {
  DevicePresetInfo p;
  p.name = name;
  p.aliases = std::move(aliases);
  p.product = std::move(product);
  p.vendor = vendor;
  DeviceModel& m = p.model;
  m.name = std::move(name);
  m.capacity_bytes = capacity_gib * kGiB;
  m.h2d_bandwidth_bytes_per_s = h2d;
  m.d2h_bandwidth_bytes_per_s = d2h;
  m.copy_latency_ns = kCopyLatencyNs;
  m.copy_engines = 2;
  m.peak_flops_per_s = peak_flops;
  m.memory_bandwidth_bytes_per_s = hbm;
  m.interconnect_bandwidth_bytes_per_s = link;
  return p;
}

std::vector<DevicePresetInfo> MakePresets() {
  using V = DeviceVendor;
  // name, aliases, product, vendor, capacity GiB, pinned h2d, pinned d2h,
  // dense 16-bit FLOP/s, HBM B/s, device link per direction B/s.
  return {
      Preset("a100-40gb", {}, "NVIDIA A100 SXM4 40GB", V::kNvidia, 40, 24.5e9, 26.0e9, 312e12,
             1.555e12, 300e9),
      Preset("a100-80gb", {"a100-80g"}, "NVIDIA A100 SXM4 80GB", V::kNvidia, 80, 24.5e9, 26.0e9,
             312e12, 2.039e12, 300e9),
      Preset("h100-80gb", {"h100-80g"}, "NVIDIA H100 SXM5 80GB", V::kNvidia, 80, 52e9, 53e9, 989e12,
             3.35e12, 450e9),
      Preset("h200-141gb", {"h200-141g"}, "NVIDIA H200 SXM 141GB", V::kNvidia, 141, 52e9, 53e9,
             989e12, 4.8e12, 450e9),
      Preset("b200", {"b200-180gb"}, "NVIDIA B200 (HGX/DGX B200, 180GB)", V::kNvidia, 180, 52e9,
             53e9, 2.25e15, 8.0e12, 900e9),
      Preset("mi300x", {"mi300x-192gb"}, "AMD Instinct MI300X 192GB", V::kAmd, 192, 52e9, 53e9,
             1307.4e12, 5.3e12, 448e9),
      Preset("910b-64gb", {"ascend-910b-64g"}, "Huawei Ascend 910B 64GB", V::kHuawei, 64, 22e9,
             24e9, 313e12, 1.6e12, 196e9),
  };
}

std::string Lower(absl::string_view s) { return absl::AsciiStrToLower(s); }

// Lower-case letters and digits only: "NVIDIA A100-SXM4-80GB" ->
// "nvidiaa100sxm480gb".
std::string Squash(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

}  // namespace

absl::string_view DeviceVendorName(DeviceVendor v) {
  switch (v) {
    case DeviceVendor::kNvidia: return "nvidia";
    case DeviceVendor::kAmd: return "amd";
    case DeviceVendor::kHuawei: return "huawei";
  }
  return "nvidia";
}

const std::vector<DevicePresetInfo>& DevicePresets() {
  static const std::vector<DevicePresetInfo> presets = MakePresets();
  return presets;
}

const DevicePresetInfo* FindDevicePreset(absl::string_view name) {
  for (const DevicePresetInfo& p : DevicePresets()) {
    if (absl::EqualsIgnoreCase(p.name, name)) return &p;
    for (const std::string& a : p.aliases) {
      if (absl::EqualsIgnoreCase(a, name)) return &p;
    }
  }
  return nullptr;
}

absl::StatusOr<DeviceModel> DevicePresetModel(absl::string_view name) {
  const DevicePresetInfo* p = FindDevicePreset(name);
  if (p == nullptr) {
    return Error(ErrorKind::kNotFound,
                 absl::StrCat("unknown device preset '", name, "' (known: ",
                              absl::StrJoin(DevicePresetNames(), ", "), ")"));
  }
  DeviceModel m = p->model;
  m.name = Lower(name);
  return m;
}

std::vector<std::string> DevicePresetNames() {
  std::vector<std::string> v;
  for (const DevicePresetInfo& p : DevicePresets()) v.push_back(p.name);
  return v;
}

bool IsCpuDeviceName(absl::string_view device_name) {
  const std::string n = Lower(absl::StripAsciiWhitespace(device_name));
  return n == "cpu" || absl::StartsWith(n, "cpu:");
}

const DevicePresetInfo* MatchRecordedDevice(absl::string_view device_name) {
  if (const DevicePresetInfo* p = FindDevicePreset(absl::StripAsciiWhitespace(device_name))) {
    return p;
  }
  const std::string s = Squash(device_name);
  if (s.empty() || IsCpuDeviceName(device_name)) return nullptr;
  auto has = [&](absl::string_view part) { return absl::StrContains(s, part); };
  if (has("a100")) {
    if (has("80g")) return FindDevicePreset("a100-80gb");
    if (has("40g")) return FindDevicePreset("a100-40gb");
    return nullptr;  // the capacity decides which A100
  }
  if (has("h100")) return FindDevicePreset("h100-80gb");
  if (has("h200")) return FindDevicePreset("h200-141gb");
  if (has("b200")) return FindDevicePreset("b200");
  if (has("mi300x")) return FindDevicePreset("mi300x");
  if (has("910b")) return FindDevicePreset("910b-64gb");
  return nullptr;
}

}  // namespace swapplan
