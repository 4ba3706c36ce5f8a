// PinnedBlocks: the pinned host blocks a vendor backend handed out
// (HostAlloc), so that CopyAsync can refuse host memory outside them —
// pageable memory, which makes an "asynchronous" copy synchronous on CUDA
// and which ACL's aclrtMemcpyAsync does not accept — before the vendor call.
//
//   PinnedBlocks blocks;
//   blocks.Add(p, 1 << 26);
//   if (!blocks.Contains(host, bytes)) return ...;
//
// Thread-safe (a mutex). Add / Remove / Contains O(log blocks).
#ifndef SWAPPLAN_SRC_RUNTIME_PINNED_BLOCKS_H_
#define SWAPPLAN_SRC_RUNTIME_PINNED_BLOCKS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "swapplan/device/device_model.h"

namespace swapplan::runtime::internal {

class PinnedBlocks {
 public:
  void Add(const void* p, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_[reinterpret_cast<uintptr_t>(p)] = bytes;
  }
  // False when `p` is not a block's start.
  bool Remove(const void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    return blocks_.erase(reinterpret_cast<uintptr_t>(p)) > 0;
  }
  // Whether [p, p + bytes) lies inside one block.
  bool Contains(const void* p, int64_t bytes) const {
    std::lock_guard<std::mutex> lock(mu_);
    const auto h = reinterpret_cast<uintptr_t>(p);
    auto it = blocks_.upper_bound(h);
    if (it == blocks_.begin()) return false;
    --it;
    return h + static_cast<uint64_t>(bytes) <= it->first + static_cast<uint64_t>(it->second);
  }

 private:
  mutable std::mutex mu_;
  std::map<uintptr_t, int64_t> blocks_;
};

inline std::string Ptr(const void* p) {
  return absl::StrCat("0x", absl::Hex(reinterpret_cast<uintptr_t>(p)));
}

inline const char* DirectionName(Direction d) {
  return d == Direction::kDeviceToHost ? "DeviceToHost" : "HostToDevice";
}

}  // namespace swapplan::runtime::internal

#endif  // SWAPPLAN_SRC_RUNTIME_PINNED_BLOCKS_H_
