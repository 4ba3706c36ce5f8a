// Device presets: DeviceModels of common training accelerators — capacity,
// typical pinned host-copy bandwidth per direction and per-copy latency,
// peak dense 16-bit FLOP/s, HBM bandwidth and device-to-device link — so
// that `--device h100-80gb` stands for a whole device model. Every figure's
// public source, the date it was read and which figures are assumptions
// are in docs/devices.md; `swapplan devices` lists them.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(DeviceModel d, DevicePresetModel("h100-80gb"));
//   d.reserve_bytes = int64_t{2} << 30;            // explicit flags override fields
//   const DevicePresetInfo* src = MatchRecordedDevice(trace.metadata().device_name);
//   // "NVIDIA A100-SXM4-80GB" -> the a100-80gb preset; "cpu" -> nullptr
//
// Names. Each preset has one canonical name (`a100-80gb`) and may have
// aliases: the synthesizer's first preset names (`a100-80g`, `h100-80g`,
// `h200-141g`, `ascend-910b-64g`) stay valid so that bundled traces and
// goldens are reproduced byte for byte; a model looked up by an alias
// carries the alias as its name (the name the synthesizer writes into a
// trace's device_name). Lookups ignore case. Capacities are the marketed
// figure read as GiB ("80GB" -> 80 GiB, what nvidia-smi reports for the
// A100/H100 80GB), an upper bound of what an allocator can hand out: give
// a --reserve for the rest.
//
// Lookups are O(presets).
#ifndef SWAPPLAN_DEVICE_PRESETS_H_
#define SWAPPLAN_DEVICE_PRESETS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/device/device_model.h"

namespace swapplan {

enum class DeviceVendor : uint8_t { kNvidia, kAmd, kHuawei };
// "nvidia", "amd", "huawei".
absl::string_view DeviceVendorName(DeviceVendor v);

struct DevicePresetInfo {
  // Canonical name, e.g. "h100-80gb".
  std::string name;
  // Other spellings accepted by FindDevicePreset (older preset names).
  std::vector<std::string> aliases;
  // Product, e.g. "NVIDIA H100 SXM5 80GB".
  std::string product;
  DeviceVendor vendor = DeviceVendor::kNvidia;
  // The device model; model.name == name, reserve 0, compute scale 1.
  DeviceModel model;
};

// Every preset, in listing order.
const std::vector<DevicePresetInfo>& DevicePresets();

// The preset named `name` (canonical or alias, any case), or nullptr.
const DevicePresetInfo* FindDevicePreset(absl::string_view name);

// The model of preset `name`, its `name` field set to the spelling that
// matched (canonical or alias, lower case). NotFound (ErrorKind::kNotFound)
// listing the canonical names otherwise.
absl::StatusOr<DeviceModel> DevicePresetModel(absl::string_view name);

// Canonical names in listing order.
std::vector<std::string> DevicePresetNames();

// The preset a trace's recorded device_name denotes: a preset name or
// alias, or a vendor string such as "NVIDIA A100-SXM4-80GB", "NVIDIA H100
// 80GB HBM3", "AMD Instinct MI300X", "Ascend910B3". nullptr when none is
// recognised (including CPUs).
const DevicePresetInfo* MatchRecordedDevice(absl::string_view device_name);

// True when a recorded device_name is a CPU ("cpu", "cpu:0", "CPU").
bool IsCpuDeviceName(absl::string_view device_name);

}  // namespace swapplan

#endif  // SWAPPLAN_DEVICE_PRESETS_H_
