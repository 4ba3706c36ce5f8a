// Budget basis and PYTORCH_CUDA_ALLOC_CONF parsing (budget_basis.h).
#include "swapplan/alloc/budget_basis.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "swapplan/device/presets.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::string_view BudgetOnName(BudgetOn on) {
  return on == BudgetOn::kReserved ? "reserved" : "allocated";
}

bool ParseBudgetOn(absl::string_view name, BudgetOn* out) {
  if (name == "allocated") {
    *out = BudgetOn::kAllocated;
  } else if (name == "reserved") {
    *out = BudgetOn::kReserved;
  } else {
    return false;
  }
  return true;
}

BudgetBasis DefaultBudgetBasis(const DeviceModel& device) {
  BudgetBasis b;
  const DevicePresetInfo* preset = FindDevicePreset(device.name);
  if (preset == nullptr) {
    b.reason = absl::StrCat(device.name, " device: no allocator model");
    return b;
  }
  b.on = BudgetOn::kReserved;
  b.reason = absl::StrCat(preset->name, preset->vendor == DeviceVendor::kHuawei
                                            ? " runs torch_npu's caching allocator"
                                            : " runs PyTorch's caching allocator");
  return b;
}

namespace {

absl::Status ConfError(absl::string_view key, absl::string_view value, absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("allocator configuration: ", key, ":", value, ": ", rule));
}

}  // namespace

absl::StatusOr<AllocatorOptions> ParseAllocConf(absl::string_view text, AllocatorOptions base) {
  AllocatorOptions o = base;
  // Keys PyTorch reads that change nothing in the model.
  static const std::vector<absl::string_view> kIgnored = {
      "garbage_collection_threshold", "pinned_use_cuda_host_register",
      "pinned_num_register_threads", "release_lock_on_cudamalloc", "backend",
      "pinned_use_background_threads", "max_non_split_rounding_mb"};
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    const size_t colon = item.find(':');
    if (colon == absl::string_view::npos) {
      return ConfError(item, "", "expected key:value");
    }
    const absl::string_view key = absl::StripAsciiWhitespace(item.substr(0, colon));
    const absl::string_view value = absl::StripAsciiWhitespace(item.substr(colon + 1));
    if (key == "max_split_size_mb") {
      int64_t mb = 0;
      if (!absl::SimpleAtoi(value, &mb) || mb <= 20 || mb > (kMaxAllocatorRequestBytes >> 20)) {
        return ConfError(key, value, "must be an integer above 20 (MiB)");
      }
      o.max_split_size_bytes = mb << 20;
    } else if (key == "roundup_power2_divisions") {
      int32_t d = 0;
      if (!absl::SimpleAtoi(value, &d)) {
        return ConfError(key, value, "must be one integer (per-size lists are not modelled)");
      }
      o.roundup_power2_divisions = d;
    } else if (key == "expandable_segments") {
      if (value == "True" || value == "true") {
        o.expandable_segments = true;
      } else if (value == "False" || value == "false") {
        o.expandable_segments = false;
      } else {
        return ConfError(key, value, "must be True or False");
      }
    } else if (std::find(kIgnored.begin(), kIgnored.end(), key) == kIgnored.end()) {
      return ConfError(key, value, "unknown key");
    }
  }
  if (absl::Status st = o.Validate(); !st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocator configuration '", text, "': ", st.message()));
  }
  return o;
}

std::string AllocConfText(const AllocatorOptions& a) {
  std::vector<std::string> parts;
  if (a.max_split_size_bytes != kNoMaxSplitSize) {
    parts.push_back(absl::StrCat("max_split_size_mb:", a.max_split_size_bytes >> 20));
  }
  if (a.roundup_power2_divisions > 1) {
    parts.push_back(absl::StrCat("roundup_power2_divisions:", a.roundup_power2_divisions));
  }
  if (a.expandable_segments) parts.push_back("expandable_segments:True");
  return absl::StrJoin(parts, ",");
}

std::string BudgetBasisText(const BudgetBasis& basis) {
  if (basis.on == BudgetOn::kAllocated) {
    return absl::StrCat("allocated bytes (", basis.reason, ")");
  }
  const AllocatorOptions& a = basis.allocator;
  std::string model(AllocatorKindName(a.kind));
  if (a.kind == AllocatorKind::kCudaCaching) {
    if (a.expandable_segments) absl::StrAppend(&model, ", expandable segments");
    if (a.max_split_size_bytes != kNoMaxSplitSize) {
      absl::StrAppend(&model, ", max_split_size_mb ", a.max_split_size_bytes >> 20);
    }
    if (a.roundup_power2_divisions > 1) {
      absl::StrAppend(&model, ", roundup_power2_divisions ", a.roundup_power2_divisions);
    }
  }
  return absl::StrCat("reserved bytes (", model, " model: ", basis.reason, ")");
}

}  // namespace swapplan
