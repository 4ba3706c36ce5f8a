// The host backend's device memory (host_backend.h): one reserved address
// range with a hard capacity in exact bytes. Blocks are 256-byte aligned
// (as cudaMalloc's) and placed best-fit, lowest address first, so a freed
// block is the next one handed out for a request of its size — what makes an
// early release visible to tests. The address range is twice the capacity
// plus 1 MiB (mmap, MAP_NORESERVE: committed only when touched) so that
// alignment padding and fragmentation never make an allocation fail that the
// capacity allows; if they ever did, the failure says so.
//
//   Arena a;
//   SWAPPLAN_RETURN_IF_ERROR(a.Init(1000));
//   SWAPPLAN_ASSIGN_OR_RETURN(void* p, a.Allocate(100));  // in_use 100
//   SWAPPLAN_RETURN_IF_ERROR(a.Free(p));
//
// Not thread-safe (the backend locks around it). Allocate/Free O(log blocks).
#ifndef SWAPPLAN_SRC_RUNTIME_ARENA_H_
#define SWAPPLAN_SRC_RUNTIME_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace swapplan::runtime::internal {

inline constexpr int64_t kArenaAlignment = 256;

class Arena {
 public:
  Arena() = default;
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Reserves the address range. InvalidArgument for capacity <= 0 or above
  // 1 TiB; ResourceExhausted when the range cannot be reserved.
  absl::Status Init(int64_t capacity_bytes);

  // A block of `bytes` (>= 0). ResourceExhausted tagged "out-of-memory"
  // when in_use + bytes > capacity (or, never expected, when no free range
  // fits).
  absl::StatusOr<void*> Allocate(int64_t bytes);
  // InvalidArgument when `ptr` is not a block of this arena.
  absl::Status Free(void* ptr);

  // Whether [ptr, ptr + bytes) lies inside one allocated block.
  bool ContainsAllocated(const void* ptr, int64_t bytes) const;

  int64_t capacity_bytes() const { return capacity_; }
  int64_t in_use_bytes() const { return in_use_; }
  int64_t peak_bytes() const { return peak_; }
  int64_t blocks() const { return static_cast<int64_t>(allocated_.size()); }

 private:
  void InsertFree(int64_t offset, int64_t size);
  void EraseFree(std::map<int64_t, int64_t>::iterator it);

  std::byte* base_ = nullptr;
  int64_t range_ = 0;
  int64_t capacity_ = 0;
  int64_t in_use_ = 0;
  int64_t peak_ = 0;
  // Free ranges by offset (for coalescing) and by (size, offset) (best fit).
  std::map<int64_t, int64_t> free_by_offset_;
  std::set<std::pair<int64_t, int64_t>> free_by_size_;
  // Allocated blocks: offset -> (aligned size, requested bytes).
  absl::flat_hash_map<int64_t, std::pair<int64_t, int64_t>> allocated_;
  // Allocated blocks by offset, for ContainsAllocated.
  std::map<int64_t, int64_t> allocated_by_offset_;
};

}  // namespace swapplan::runtime::internal

#endif  // SWAPPLAN_SRC_RUNTIME_ARENA_H_
