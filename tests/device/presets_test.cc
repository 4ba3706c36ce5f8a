// Device presets (device/presets.h): the presets the issue asks for, valid
// models with every figure, aliases that keep their spelling (the bundled
// synthesized traces name their device "ascend-910b-64g"), the figures the
// synthesizer's first presets had (so traces are reproduced byte for byte),
// and recognising recorded device names.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "swapplan/device/presets.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

TEST_CASE("presets: every required device, valid, with every figure", "[device][presets]") {
  std::set<std::string> names;
  for (const DevicePresetInfo& p : DevicePresets()) {
    INFO(p.name);
    names.insert(p.name);
    CHECK(p.model.name == p.name);
    CHECK(p.model.Validate().ok());
    CHECK(p.model.reserve_bytes == 0);
    CHECK(p.model.compute_time_scale == 1.0);
    CHECK(p.model.copy_latency_ns > 0);
    CHECK(p.model.copy_engines == 2);
    CHECK(p.model.peak_flops_per_s > 0);
    CHECK(p.model.memory_bandwidth_bytes_per_s > 0);
    CHECK(p.model.interconnect_bandwidth_bytes_per_s > 0);
    CHECK_FALSE(p.product.empty());
  }
  CHECK(names == std::set<std::string>{"a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "b200",
                                       "mi300x", "910b-64gb"});
  CHECK(DevicePresetNames().size() == DevicePresets().size());
}

TEST_CASE("presets: the synthesizer's first presets are aliases with their figures",
          "[device][presets]") {
  // name, capacity GiB, HBM B/s, FLOP/s, h2d, d2h, link: the values the
  // synthesizer had before presets moved to device/ (its traces depend on
  // them).
  struct Old {
    const char* alias;
    const char* preset;
    int64_t gib;
    double hbm, flops, h2d, d2h, link;
  };
  for (const Old& o : {Old{"a100-80g", "a100-80gb", 80, 2.039e12, 312e12, 24.5e9, 26.0e9, 300e9},
                       Old{"h100-80g", "h100-80gb", 80, 3.35e12, 989e12, 52e9, 53e9, 450e9},
                       Old{"h200-141g", "h200-141gb", 141, 4.8e12, 989e12, 52e9, 53e9, 450e9},
                       Old{"ascend-910b-64g", "910b-64gb", 64, 1.6e12, 313e12, 22e9, 24e9, 196e9}}) {
    INFO(o.alias);
    absl::StatusOr<DeviceModel> m = DevicePresetModel(o.alias);
    REQUIRE(m.ok());
    CHECK(m->name == o.alias);  // an alias keeps its spelling
    CHECK(FindDevicePreset(o.alias) == FindDevicePreset(o.preset));
    CHECK(m->capacity_bytes == o.gib << 30);
    CHECK(m->memory_bandwidth_bytes_per_s == o.hbm);
    CHECK(m->peak_flops_per_s == o.flops);
    CHECK(m->h2d_bandwidth_bytes_per_s == o.h2d);
    CHECK(m->d2h_bandwidth_bytes_per_s == o.d2h);
    CHECK(m->interconnect_bandwidth_bytes_per_s == o.link);
  }
  // Lookups ignore case; the name is written in lower case.
  CHECK(DevicePresetModel("H100-80GB")->name == "h100-80gb");
  CHECK(FindDevicePreset("910b-64gb")->vendor == DeviceVendor::kHuawei);
  CHECK(FindDevicePreset("mi300x")->vendor == DeviceVendor::kAmd);
}

TEST_CASE("presets: unknown names", "[device][presets]") {
  absl::StatusOr<DeviceModel> m = DevicePresetModel("tpu-v5");
  CHECK(KindOf(m.status()) == ErrorKind::kNotFound);
  CHECK(m.status().message() ==
        "unknown device preset 'tpu-v5' (known: a100-40gb, a100-80gb, h100-80gb, h200-141gb, "
        "b200, mi300x, 910b-64gb)");
  CHECK(FindDevicePreset("") == nullptr);
}

TEST_CASE("presets: recorded device names", "[device][presets]") {
  auto match = [](const char* recorded) {
    const DevicePresetInfo* p = MatchRecordedDevice(recorded);
    return p == nullptr ? std::string("-") : p->name;
  };
  CHECK(match("NVIDIA A100-SXM4-80GB") == "a100-80gb");
  CHECK(match("NVIDIA A100-PCIE-40GB") == "a100-40gb");
  CHECK(match("NVIDIA A100") == "-");  // which A100 is unknown
  CHECK(match("NVIDIA H100 80GB HBM3") == "h100-80gb");
  CHECK(match("NVIDIA H200") == "h200-141gb");
  CHECK(match("NVIDIA B200") == "b200");
  CHECK(match("AMD Instinct MI300X") == "mi300x");
  CHECK(match("Ascend910B3") == "910b-64gb");
  CHECK(match("ascend-910b-64g") == "910b-64gb");
  CHECK(match("cpu") == "-");
  CHECK(match("toy") == "-");
  CHECK(IsCpuDeviceName("cpu"));
  CHECK(IsCpuDeviceName("CPU"));
  CHECK(IsCpuDeviceName("cpu:0"));
  CHECK_FALSE(IsCpuDeviceName("cuda:0"));
  CHECK_FALSE(IsCpuDeviceName(""));
}

}  // namespace
}  // namespace swapplan
