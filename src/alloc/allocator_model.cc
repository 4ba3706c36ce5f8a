// Options, names, PyTorch's size rules and the factory (allocator_model.h).
#include "swapplan/alloc/allocator_model.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "alloc/models.h"

namespace swapplan {

absl::string_view AllocatorKindName(AllocatorKind kind) {
  switch (kind) {
    case AllocatorKind::kCudaCaching: return "cuda-caching";
    case AllocatorKind::kBestFitArena: return "best-fit";
  }
  return "cuda-caching";
}

bool ParseAllocatorKind(absl::string_view name, AllocatorKind* out) {
  for (AllocatorKind k : {AllocatorKind::kCudaCaching, AllocatorKind::kBestFitArena}) {
    if (name == AllocatorKindName(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

absl::Status AllocatorOptions::Validate() const {
  if (capacity_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocator options: capacity_bytes is ", capacity_bytes, "; must be > 0"));
  }
  if (max_split_size_bytes <= kLargeBuffer) {
    return absl::InvalidArgumentError(absl::StrCat(
        "allocator options: max_split_size_bytes is ", max_split_size_bytes,
        "; PyTorch requires max_split_size_mb > 20 (more than ", kLargeBuffer, " bytes)"));
  }
  if (roundup_power2_divisions < 0 || roundup_power2_divisions > 64 ||
      (roundup_power2_divisions > 1 &&
       !std::has_single_bit(static_cast<uint32_t>(roundup_power2_divisions)))) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocator options: roundup_power2_divisions is ", roundup_power2_divisions,
                     "; must be 0 or 1 (off) or a power of two up to 64"));
  }
  if (alignment_bytes <= 0 || !std::has_single_bit(static_cast<uint64_t>(alignment_bytes))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "allocator options: alignment_bytes is ", alignment_bytes, "; must be a power of two"));
  }
  return absl::OkStatus();
}

int64_t AllocSegmentInfo::allocated_bytes() const {
  int64_t sum = 0;
  for (const AllocBlockInfo& b : blocks) {
    if (b.allocated) sum += b.bytes;
  }
  return sum;
}

int64_t CachingRoundSize(int64_t bytes, int32_t roundup_power2_divisions) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  const int64_t d = roundup_power2_divisions;
  if (d > 1 && bytes > kMinBlockSize * d) {
    const uint64_t u = static_cast<uint64_t>(bytes);
    if (std::has_single_bit(u)) return bytes;
    const int64_t floor = static_cast<int64_t>(std::bit_floor(u));
    // d is a power of two: the d steps between floor and 2 × floor.
    const int64_t step = floor >> std::countr_zero(static_cast<uint64_t>(d));
    if (step == 0) return floor << 1;
    const int64_t down = bytes & ~(step - 1);
    return down == bytes ? bytes : down + step;
  }
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

int64_t CachingSegmentSize(int64_t rounded_bytes) {
  if (rounded_bytes <= kSmallSize) return kSmallBuffer;
  if (rounded_bytes < kMinLargeAlloc) return kLargeBuffer;
  return (rounded_bytes + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

namespace alloc_internal {

absl::Status CheckSeedBlocks(int64_t bytes, const std::vector<SeedBlock>& allocated) {
  int64_t at = 0;
  for (size_t i = 0; i < allocated.size(); ++i) {
    const SeedBlock& s = allocated[i];
    if (s.offset_bytes < at || s.bytes <= 0 || s.bytes > bytes - s.offset_bytes ||
        s.requested_bytes < 0 || s.requested_bytes > s.bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "allocator model: seeded block ", i, " (offset ", s.offset_bytes, ", ", s.bytes,
          " bytes, ", s.requested_bytes, " requested) does not fit a segment of ", bytes,
          " bytes after offset ", at));
    }
    at = s.offset_bytes + s.bytes;
  }
  return absl::OkStatus();
}

}  // namespace alloc_internal

std::unique_ptr<AllocatorModel> MakeAllocatorModel(const AllocatorOptions& options) {
  if (options.kind == AllocatorKind::kBestFitArena) {
    return std::make_unique<alloc_internal::BestFitArenaModel>(options);
  }
  return std::make_unique<alloc_internal::CachingAllocatorModel>(options);
}

}  // namespace swapplan
