// The host backend's device memory (host_backend.h): one reserved address
// range with a hard capacity in exact bytes. Blocks are placed by the
// best-fit arena model (alloc/allocator_model.h, kBestFitArena: 256-byte
// aligned as cudaMalloc's, smallest free range first, lowest address on
// ties), so a freed block is the next one handed out for a request of its
// size — what makes an early release visible to tests. The address range
// is twice the capacity plus 1 MiB (mmap, MAP_NORESERVE: committed only
// when touched) so that alignment padding and fragmentation never make an
// allocation fail that the capacity allows; if they ever did, the failure
// says so.
//
// What the capacity holds: by default the bytes in use (requested bytes,
// as the planners count them). With a kCudaCaching `reserved_model`, the
// reserved bytes of PyTorch's caching allocator fed the same allocations
// and frees: an allocation fails where that allocator could not place it
// within the capacity (after releasing its cache), and reserved_bytes() is
// its figure. (The bytes themselves still come from the best-fit range.)
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
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/alloc/allocator_model.h"

namespace swapplan::runtime::internal {

inline constexpr int64_t kArenaAlignment = 256;

class Arena {
 public:
  Arena() = default;
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Reserves the address range. InvalidArgument for capacity <= 0 or above
  // 1 TiB, or a reserved_model that is not a valid kCudaCaching model;
  // ResourceExhausted when the range cannot be reserved.
  absl::Status Init(int64_t capacity_bytes,
                    const std::optional<AllocatorOptions>& reserved_model = std::nullopt);

  // A block of `bytes` (>= 0). ResourceExhausted tagged "out-of-memory"
  // when in_use + bytes > capacity (with a reserved model: when the model
  // cannot place it within the capacity), or, never expected, when no free
  // range fits.
  absl::StatusOr<void*> Allocate(int64_t bytes);
  // InvalidArgument when `ptr` is not a block of this arena.
  absl::Status Free(void* ptr);

  // Whether [ptr, ptr + bytes) lies inside one allocated block.
  bool ContainsAllocated(const void* ptr, int64_t bytes) const;

  int64_t capacity_bytes() const { return capacity_; }
  int64_t in_use_bytes() const { return in_use_; }
  int64_t peak_bytes() const { return peak_; }
  // The reserved model's reserved bytes (now, at most); without one, the
  // best-fit range's extent (the end of the highest block in use).
  int64_t reserved_bytes() const;
  int64_t peak_reserved_bytes() const { return peak_reserved_; }
  int64_t blocks() const { return static_cast<int64_t>(allocated_.size()); }

 private:
  struct Block {
    AllocBlockId placed = -1;    // in placement_
    AllocBlockId reserved = -1;  // in reserved_, -1 without one
    int64_t requested = 0;
  };

  std::byte* base_ = nullptr;
  int64_t range_ = 0;
  int64_t capacity_ = 0;
  int64_t in_use_ = 0;
  int64_t peak_ = 0;
  int64_t peak_reserved_ = 0;  // after successful allocations
  std::unique_ptr<AllocatorModel> placement_;  // kBestFitArena over the range
  std::unique_ptr<AllocatorModel> reserved_;   // kCudaCaching, or null
  // Allocated blocks by offset.
  std::map<int64_t, Block> allocated_;
};

}  // namespace swapplan::runtime::internal

#endif  // SWAPPLAN_SRC_RUNTIME_ARENA_H_
