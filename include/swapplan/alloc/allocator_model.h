// Allocator models: what a device allocator *reserves* for a sequence of
// allocations and frees, not only what the program has allocated. A PyTorch
// job runs out of memory on reserved bytes: its caching allocator rounds
// requests, keeps small and large pools apart, carves blocks out of segments
// and returns nothing to the driver until empty_cache() (or an allocation
// that would otherwise fail). Two models share one interface:
//
//   kCudaCaching   PyTorch's CUDA caching allocator (c10/cuda/
//                  CUDACachingAllocator.cpp; torch_npu's NPUCachingAllocator
//                  follows the same rules). Rules, with the constants below:
//                  * a request is rounded to a multiple of kMinBlockSize
//                    (512 B; below 512 B: 512 B), or, with
//                    roundup_power2_divisions d > 1 and size > 512 × d, up to
//                    the next of d equal steps between two powers of two;
//                  * rounded sizes <= kSmallSize (1 MiB) use the small pool,
//                    larger ones the large pool; each pool is searched per
//                    stream (blocks freed on one stream serve only it);
//                  * best fit: the smallest free block of the pool and stream
//                    with size >= the request (ties: lowest address);
//                    oversize blocks (>= max_split_size) serve only requests
//                    >= max_split_size, and those only from blocks smaller
//                    than request + kLargeBuffer (20 MiB);
//                  * no fitting block: a new segment (cudaMalloc) of
//                    kSmallBuffer (2 MiB) for small requests, kLargeBuffer
//                    (20 MiB) for requests below kMinLargeAlloc (10 MiB),
//                    else the request rounded up to kRoundLarge (2 MiB);
//                  * the found block is split when the remainder is >= 512 B
//                    (small pool, or expandable segments), or > kSmallSize
//                    and the request < max_split_size (large pool);
//                  * a freed block merges with free neighbours of its own
//                    segment only; segments never merge;
//                  * a segment that would take reserved bytes past
//                    capacity_bytes: first the oversize free segments are
//                    released (when max_split_size is set), then every
//                    wholly free segment (release_cached_blocks, what
//                    empty_cache() does), then the allocation is retried;
//                    failing that it is an OOM (recorded; the model goes on
//                    over the capacity so that one replay shows every OOM);
//                  * expandable_segments: one segment per pool and stream
//                    that grows by mapping pages (2 MiB small, 20 MiB large)
//                    at its lowest free address; freeing unmaps nothing until
//                    empty_cache() or an OOM retry unmaps the free pages.
//                  Not modelled: CUDA graph private pools, record_stream
//                  events (a free is final when it is replayed), the
//                  garbage-collection threshold, per-size-range
//                  roundup_power2_divisions lists (one value for all sizes).
//   kBestFitArena  One address range, requests aligned to alignment_bytes
//                  and placed best fit (smallest free range, lowest address),
//                  freed ranges coalesced: the runtime's host backend
//                  (src/runtime/arena.h) and a plain aclrtMalloc/cudaMalloc
//                  user. "Reserved" is the arena's extent: the end of the
//                  highest block in use, what the range must hold.
//
//   AllocatorOptions o;                       // kCudaCaching, PyTorch defaults
//   std::unique_ptr<AllocatorModel> m = MakeAllocatorModel(o);
//   MallocResult a = m->Malloc(3'000'000, /*stream=*/0);  // 2,999,808 + ... -> one
//   m->stats().reserved_bytes;                // 20 MiB: a 3 MB request is in [1, 10) MiB
//   m->Free(a.block);                         // still 20 MiB reserved
//   m->EmptyCache();                          // 0
//
// Complexity: Malloc, Free O(log B) (B: blocks, free and allocated);
// EmptyCache and an OOM retry O(B log B); ForEachSegment O(B). Memory O(B).
#ifndef SWAPPLAN_ALLOC_ALLOCATOR_MODEL_H_
#define SWAPPLAN_ALLOC_ALLOCATOR_MODEL_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace swapplan {

// PyTorch's constants (c10/cuda/CUDACachingAllocator.cpp).
inline constexpr int64_t kMinBlockSize = 512;
inline constexpr int64_t kSmallSize = int64_t{1} << 20;
inline constexpr int64_t kSmallBuffer = int64_t{2} << 20;
inline constexpr int64_t kLargeBuffer = int64_t{20} << 20;
inline constexpr int64_t kMinLargeAlloc = int64_t{10} << 20;
inline constexpr int64_t kRoundLarge = int64_t{2} << 20;
// max_split_size_bytes when max_split_size_mb is not set.
inline constexpr int64_t kNoMaxSplitSize = std::numeric_limits<int64_t>::max();
// The largest request a model accepts (1 PiB): sums of segments stay far
// from int64 overflow.
inline constexpr int64_t kMaxAllocatorRequestBytes = int64_t{1} << 50;

enum class AllocatorKind : uint8_t {
  kCudaCaching = 0,
  kBestFitArena = 1,
};
// "cuda-caching", "best-fit".
absl::string_view AllocatorKindName(AllocatorKind kind);
// Parses the names above. False for anything else.
bool ParseAllocatorKind(absl::string_view name, AllocatorKind* out);

struct AllocatorOptions {
  AllocatorKind kind = AllocatorKind::kCudaCaching;
  // Reserved bytes the allocator may hold (the device memory it is given);
  // above it the OOM rules apply. Unlimited: INT64_MAX.
  int64_t capacity_bytes = std::numeric_limits<int64_t>::max();

  // --- kCudaCaching, named after PYTORCH_CUDA_ALLOC_CONF ---
  // max_split_size_mb × 1 MiB: blocks this large are never split; unset
  // (kNoMaxSplitSize) by default. PyTorch requires more than 20 MiB.
  int64_t max_split_size_bytes = kNoMaxSplitSize;
  // roundup_power2_divisions: 0 or 1 = off (the default); else a power of
  // two >= 2, applied to every size.
  int32_t roundup_power2_divisions = 0;
  // expandable_segments:True.
  bool expandable_segments = false;

  // --- kBestFitArena ---
  // Block alignment (the host backend's arena: 256 bytes, as cudaMalloc).
  int64_t alignment_bytes = 256;

  // InvalidArgument naming the field: capacity <= 0, max_split_size_bytes
  // <= 20 MiB, roundup_power2_divisions < 0 or > 1 and not a power of two
  // (or above 64), alignment not a positive power of two.
  absl::Status Validate() const;
};

// A block handed out by Malloc (an index, valid until its Free).
using AllocBlockId = int32_t;

struct MallocResult {
  AllocBlockId block = -1;
  // Bytes of the block (the rounded request).
  int64_t block_bytes = 0;
  // The block's model address: an offset in the model's address space
  // (caching: segments laid out one after another, each 2 MiB aligned;
  // arena: the offset in the range). A new segment's first block starts it.
  int64_t address = 0;
  // The request did not fit the capacity even after releasing the cache:
  // PyTorch raises OutOfMemoryError here. The block is still handed out
  // (reserved bytes go past the capacity).
  bool oom = false;
};

struct AllocatorStats {
  // Bytes held from the device: segments (caching), mapped pages
  // (expandable), the extent (arena).
  int64_t reserved_bytes = 0;
  // Bytes of allocated blocks (rounded sizes) and of the requests behind
  // them.
  int64_t allocated_bytes = 0;
  int64_t requested_bytes = 0;
  // The largest free block (0 when none); what torch.cuda's cacheInfo
  // reports.
  int64_t largest_free_bytes = 0;
  int32_t segments = 0;
  int32_t ooms = 0;
  int64_t peak_reserved_bytes = 0;
};

// An allocated block of a segment that exists before the first Malloc
// (AllocatorModel::AddSegment: a recorded state to start from).
struct SeedBlock {
  int64_t offset_bytes = 0;  // from the segment's start
  int64_t bytes = 0;         // the block (rounded)
  int64_t requested_bytes = 0;
};

// One block of a segment, as a snapshot lists it.
struct AllocBlockInfo {
  int64_t bytes = 0;
  int64_t requested_bytes = 0;  // 0 when free
  bool allocated = false;
  AllocBlockId block = -1;      // the Malloc handle when allocated
};

// One segment (one contiguous mapped range for expandable segments; the
// whole arena for kBestFitArena).
struct AllocSegmentInfo {
  int64_t address = 0;  // model address (ordering only)
  int64_t bytes = 0;
  int32_t stream = 0;
  bool large = true;    // large pool
  std::vector<AllocBlockInfo> blocks;  // by address
  int64_t allocated_bytes() const;
  int64_t free_bytes() const { return bytes - allocated_bytes(); }
};

class AllocatorModel {
 public:
  virtual ~AllocatorModel() = default;
  // A block of at least `bytes` (0 <= bytes <= kMaxAllocatorRequestBytes)
  // on `stream` (>= 0).
  virtual MallocResult Malloc(int64_t bytes, int32_t stream) = 0;
  // Frees a block Malloc handed out and not yet freed.
  virtual void Free(AllocBlockId block) = 0;
  // Returns the cached free memory to the device (torch.cuda.empty_cache()).
  virtual void EmptyCache() = 0;
  // Adds a segment of `bytes` that was reserved before the replay starts
  // (a recording that began after the first allocation): in the large pool
  // unless !large, on `stream`, with `allocated` blocks (ascending offsets,
  // inside the segment, not overlapping); the gaps between them are free
  // blocks of the segment. Returns the blocks' handles, in order.
  // With expandable_segments the segment is one mapped range of whole pages
  // (2 MiB small, 20 MiB large) of the pool's and stream's expandable
  // segment, a page or more away from its other mapped ranges, so that two
  // recorded ranges stay two until an allocation maps the pages between
  // them. The best-fit arena puts the range on top of its extent (gaps and
  // tail become holes) and never lowers the extent below what was seeded:
  // memory reserved before the replay stays reserved.
  // InvalidArgument naming the block that does not fit, or the range when
  // it is not whole pages (expandable) or not aligned (arena).
  virtual absl::StatusOr<std::vector<AllocBlockId>> AddSegment(
      int64_t bytes, int32_t stream, bool large, const std::vector<SeedBlock>& allocated) = 0;
  // The address the next segment the model opens (Malloc) or seeds
  // (AddSegment) starts at, instead of the model's own layout (segments one
  // after another): a recording replayed at its device addresses, so that
  // best-fit ties between equal free blocks, broken by address, go the same
  // way (recording_validation.h). The caller keeps live segments apart; the
  // model's own later segments go above it. A negative address clears it.
  // With expandable segments it places seeded ranges only: the first range
  // seeded in a pool and stream fixes the offset between recorded and model
  // addresses, later ranges keep their recorded distance from it (when the
  // model's layout has room there). The best-fit arena ignores it.
  virtual void PlaceNextSegmentAt(int64_t address) = 0;
  virtual const AllocatorStats& stats() const = 0;
  // Every segment, by address.
  virtual std::vector<AllocSegmentInfo> Segments() const = 0;
};

// The model `options` describe. Requires valid options.
std::unique_ptr<AllocatorModel> MakeAllocatorModel(const AllocatorOptions& options);

// PyTorch's round_size and get_allocation_size (exposed for tests and
// docs). Require 0 <= bytes <= kMaxAllocatorRequestBytes.
int64_t CachingRoundSize(int64_t bytes, int32_t roundup_power2_divisions);
int64_t CachingSegmentSize(int64_t rounded_bytes);

}  // namespace swapplan

#endif  // SWAPPLAN_ALLOC_ALLOCATOR_MODEL_H_
