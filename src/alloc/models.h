// The two allocator models behind AllocatorModel (allocator_model.h): the
// classes the factory builds. Internal to src/alloc.
#ifndef SWAPPLAN_SRC_ALLOC_MODELS_H_
#define SWAPPLAN_SRC_ALLOC_MODELS_H_

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "swapplan/alloc/allocator_model.h"

namespace swapplan::alloc_internal {

// OK when `allocated` lie inside a range of `bytes`, ascending, apart, each
// of a positive size and requesting at most its size; else InvalidArgument
// naming the first block that does not (AllocatorModel::AddSegment).
absl::Status CheckSeedBlocks(int64_t bytes, const std::vector<SeedBlock>& allocated);

// PyTorch's caching allocator (caching_allocator.cc).
class CachingAllocatorModel final : public AllocatorModel {
 public:
  explicit CachingAllocatorModel(const AllocatorOptions& options);
  MallocResult Malloc(int64_t bytes, int32_t stream) override;
  void Free(AllocBlockId block) override;
  void EmptyCache() override { ReleaseCachedBlocks(); }
  absl::StatusOr<std::vector<AllocBlockId>> AddSegment(
      int64_t bytes, int32_t stream, bool large, const std::vector<SeedBlock>& allocated) override;
  void PlaceNextSegmentAt(int64_t address) override { placed_address_ = address; }
  const AllocatorStats& stats() const override { return stats_; }
  std::vector<AllocSegmentInfo> Segments() const override;

 private:
  struct Block {
    int64_t addr = 0;
    int64_t size = 0;
    int64_t requested = 0;
    int32_t stream = 0;
    int32_t prev = -1, next = -1;
    int32_t expandable = -1;  // index into expandable_, -1 for a cudaMalloc segment
    bool small = false;
    bool allocated = false;
    bool mapped = true;
  };
  // Free mapped blocks of a pool, best fit first: (stream, size, address).
  using FreeKey = std::tuple<int32_t, int64_t, int64_t, int32_t>;
  // Unmapped ranges of expandable segments: (stream, address).
  using UnmappedKey = std::tuple<int32_t, int64_t, int32_t>;
  struct Expandable {
    int64_t page = 0;
  };

  int32_t NewBlock(const Block& b);
  void DropBlock(int32_t id);
  // Where a new cudaMalloc segment of `bytes` starts (PlaceNextSegmentAt's
  // address once, else the model's layout).
  int64_t TakeSegmentAddress(int64_t bytes);
  void InsertFree(int32_t id);
  void EraseFree(int32_t id);
  void InsertUnmapped(int32_t id);
  void EraseUnmapped(int32_t id);
  void AddReserved(int64_t bytes);

  int32_t GetFreeBlock(bool small, int32_t stream, int64_t size);
  int32_t AllocBlock(bool small, int32_t stream, int64_t size, int64_t alloc_size,
                     bool ignore_capacity);
  int32_t AllocExpandable(bool small, int32_t stream, int64_t size, bool ignore_capacity);
  int32_t FindExpandable(bool small, int32_t stream, int64_t size);
  // A new expandable segment (address space only) for (small, stream) with
  // room for `size`: its one unmapped block.
  int32_t NewExpandable(bool small, int32_t stream, int64_t size);
  // Splits unmapped block `id` at `offset` (0 < offset < size): the rest is
  // a new unmapped block, returned.
  int32_t SplitUnmapped(int32_t id, int64_t offset);
  // AddSegment with expandable segments: an unmapped range of exactly
  // `bytes` (whole pages) taken out of the unmapped set, at the placed
  // address relative to the first range seeded in this pool and stream when
  // given, else the lowest that keeps a page between it and mapped ranges.
  absl::StatusOr<int32_t> TakeSeedRange(bool small, int32_t stream, int64_t bytes);
  bool MapBlock(int32_t id, int64_t size, bool ignore_capacity);
  void UnmapBlock(int32_t id);
  bool ShouldSplit(int32_t id, int64_t size) const;
  int32_t AllocFound(int32_t id, int64_t size, int64_t requested, bool split);
  int64_t TryMerge(int32_t dst, int32_t src);
  bool ReleaseAvailableCachedBlocks(bool small, int32_t stream, int64_t size);
  void ReleaseCachedBlocks();
  void ReleaseSegment(int32_t id);
  bool Allocatable(int32_t id) const { return id >= 0 && !blocks_[id].allocated; }

  AllocatorOptions options_;
  std::vector<Block> blocks_;
  std::vector<int32_t> spare_;
  std::set<FreeKey> free_[2];  // [small]
  std::set<UnmappedKey> unmapped_[2];
  std::multiset<int64_t> free_sizes_;
  std::vector<Expandable> expandable_;
  int64_t next_address_ = 0;
  int64_t placed_address_ = -1;
  // Expandable segments seeded at placed addresses: recorded address minus
  // model address of the first range, per (small, stream).
  std::map<std::pair<bool, int32_t>, int64_t> seed_origin_;
  AllocatorStats stats_;
};

// The best-fit arena (best_fit_arena.cc).
class BestFitArenaModel final : public AllocatorModel {
 public:
  explicit BestFitArenaModel(const AllocatorOptions& options) : options_(options) {}
  MallocResult Malloc(int64_t bytes, int32_t stream) override;
  void Free(AllocBlockId block) override;
  void EmptyCache() override {}
  absl::StatusOr<std::vector<AllocBlockId>> AddSegment(
      int64_t bytes, int32_t stream, bool large, const std::vector<SeedBlock>& allocated) override;
  void PlaceNextSegmentAt(int64_t) override {}
  const AllocatorStats& stats() const override { return stats_; }
  std::vector<AllocSegmentInfo> Segments() const override;

 private:
  struct Block {
    int64_t offset = 0;
    int64_t size = 0;
    int64_t requested = 0;
  };
  void InsertHole(int64_t offset, int64_t size);
  void EraseHole(std::map<int64_t, int64_t>::iterator it);
  void Update();

  AllocatorOptions options_;
  std::vector<Block> blocks_;
  std::vector<int32_t> spare_;
  // Holes below the extent, by offset and by (size, offset).
  std::map<int64_t, int64_t> holes_;
  std::set<std::pair<int64_t, int64_t>> holes_by_size_;
  int64_t top_ = 0;
  // The extent of the seeded ranges (AddSegment): reserved before the
  // replay, the extent never falls below it.
  int64_t floor_ = 0;
  AllocatorStats stats_;
};

}  // namespace swapplan::alloc_internal

#endif  // SWAPPLAN_SRC_ALLOC_MODELS_H_
