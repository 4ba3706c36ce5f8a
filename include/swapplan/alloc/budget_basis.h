// Budget basis: which bytes a budget is held to — the bytes the program
// has allocated (the memory curve) or the bytes the device allocator has
// reserved for them (an allocator model replayed over the same sequence,
// curve/reserved_curve.h) — and which allocator a device model runs.
//
// The default per device model (DefaultBudgetBasis): a device preset
// (device/presets.h: NVIDIA, AMD, Huawei Ascend) is run by PyTorch, whose
// CUDA caching allocator (ROCm: the same code through HIP; Ascend:
// torch_npu's NPUCachingAllocator, a port of it) holds reserved bytes: the
// budget is on reserved bytes under the kCudaCaching model. A custom device
// (capacity and bandwidths given as figures) says nothing about its
// allocator: the budget stays on allocated bytes, and --budget-on reserved
// asks for the model explicitly.
//
//   BudgetBasis b = DefaultBudgetBasis(device);      // h100-80gb -> reserved
//   SWAPPLAN_ASSIGN_OR_RETURN(AllocatorOptions o,
//                             ParseAllocConf("expandable_segments:True,max_split_size_mb:128"));
//
// ParseAllocConf reads PYTORCH_CUDA_ALLOC_CONF's syntax (comma-separated
// key:value) for the keys the model has: max_split_size_mb,
// roundup_power2_divisions (one value), expandable_segments; other keys
// PyTorch knows (garbage_collection_threshold, pinned_use_cuda_host_register,
// release_lock_on_cudamalloc, ...) are accepted and ignored, unknown keys
// are an error. O(length of the text).
#ifndef SWAPPLAN_ALLOC_BUDGET_BASIS_H_
#define SWAPPLAN_ALLOC_BUDGET_BASIS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/alloc/allocator_model.h"
#include "swapplan/device/device_model.h"

namespace swapplan {

enum class BudgetOn : uint8_t {
  kAllocated = 0,
  kReserved = 1,
};
// "allocated", "reserved".
absl::string_view BudgetOnName(BudgetOn on);
bool ParseBudgetOn(absl::string_view name, BudgetOn* out);

struct BudgetBasis {
  BudgetOn on = BudgetOn::kAllocated;
  // The model reserved bytes are computed with (capacity_bytes is set from
  // the budget by whoever replays it).
  AllocatorOptions allocator;
  // Why this basis, for reports: "h100-80gb runs PyTorch's caching
  // allocator", "custom device: no allocator model".
  std::string reason;
};

// The default basis of `device` (see above). O(presets).
BudgetBasis DefaultBudgetBasis(const DeviceModel& device);

// The options PYTORCH_CUDA_ALLOC_CONF-style `text` sets, starting from
// `base`. InvalidArgument naming the key and the rule (a bad number,
// max_split_size_mb <= 20, a bad boolean, an unknown key).
absl::StatusOr<AllocatorOptions> ParseAllocConf(absl::string_view text,
                                                AllocatorOptions base = {});

// The PYTORCH_CUDA_ALLOC_CONF text of `options` ("" for the defaults):
// ParseAllocConf(AllocConfText(o)) gives o's caching fields back.
std::string AllocConfText(const AllocatorOptions& options);

// One line for reports: "reserved bytes (cuda-caching model, expandable
// segments: h100-80gb runs PyTorch's caching allocator)".
std::string BudgetBasisText(const BudgetBasis& basis);

}  // namespace swapplan

#endif  // SWAPPLAN_ALLOC_BUDGET_BASIS_H_
