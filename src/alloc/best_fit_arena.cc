// The best-fit arena model (allocator_model.h): one address range from 0,
// holes below the extent kept by offset and by (size, offset); a request no
// hole fits goes at the extent. Freeing the highest block lowers the extent
// (a hole below it merges into the free tail).
#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "alloc/models.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::alloc_internal {

void BestFitArenaModel::InsertHole(int64_t offset, int64_t size) {
  holes_.emplace(offset, size);
  holes_by_size_.emplace(size, offset);
}

void BestFitArenaModel::EraseHole(std::map<int64_t, int64_t>::iterator it) {
  holes_by_size_.erase({it->second, it->first});
  holes_.erase(it);
}

void BestFitArenaModel::Update() {
  stats_.reserved_bytes = top_;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, top_);
  stats_.largest_free_bytes = holes_by_size_.empty() ? 0 : holes_by_size_.rbegin()->first;
}

MallocResult BestFitArenaModel::Malloc(int64_t bytes, int32_t /*stream*/) {
  const int64_t a = options_.alignment_bytes;
  const int64_t size = (std::max<int64_t>(bytes, 1) + a - 1) / a * a;
  Block b{0, size, bytes};
  auto fit = holes_by_size_.lower_bound({size, -1});
  if (fit != holes_by_size_.end()) {
    b.offset = fit->second;
    const int64_t hole = fit->first;
    EraseHole(holes_.find(b.offset));
    if (hole > size) InsertHole(b.offset + size, hole - size);
  } else {
    b.offset = top_;
    top_ += size;
  }
  MallocResult r;
  r.block_bytes = size;
  r.address = b.offset;
  if (b.offset + size > options_.capacity_bytes) {
    r.oom = true;
    ++stats_.ooms;
  }
  if (!spare_.empty()) {
    r.block = spare_.back();
    spare_.pop_back();
    blocks_[r.block] = b;
  } else {
    blocks_.push_back(b);
    r.block = static_cast<AllocBlockId>(blocks_.size() - 1);
  }
  stats_.allocated_bytes += size;
  stats_.requested_bytes += bytes;
  stats_.segments = 1;
  Update();
  return r;
}

absl::StatusOr<std::vector<AllocBlockId>> BestFitArenaModel::AddSegment(
    int64_t bytes, int32_t /*stream*/, bool /*large*/, const std::vector<SeedBlock>& allocated) {
  const int64_t a = options_.alignment_bytes;
  if (bytes <= 0 || bytes > kMaxAllocatorRequestBytes || bytes % a != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "allocator model: a seeded arena range of ", bytes, " bytes (a positive multiple of the ",
        a, "-byte alignment)"));
  }
  SWAPPLAN_RETURN_IF_ERROR(CheckSeedBlocks(bytes, allocated));
  for (size_t i = 0; i < allocated.size(); ++i) {
    if (allocated[i].offset_bytes % a != 0 || allocated[i].bytes % a != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "allocator model: seeded block ", i, " (offset ", allocated[i].offset_bytes, ", ",
          allocated[i].bytes, " bytes) is not aligned to the arena's ", a, " bytes"));
    }
  }
  // The range goes on top of the extent; its gaps are holes, its free tail
  // too: what was reserved before the replay stays reserved (floor_).
  const int64_t base = top_;
  std::vector<AllocBlockId> ids;
  int64_t at = 0;
  auto hole = [&](int64_t end) {
    if (end > at) InsertHole(base + at, end - at);
  };
  for (const SeedBlock& sb : allocated) {
    hole(sb.offset_bytes);
    blocks_.push_back({base + sb.offset_bytes, sb.bytes, sb.requested_bytes});
    ids.push_back(static_cast<AllocBlockId>(blocks_.size() - 1));
    stats_.allocated_bytes += sb.bytes;
    stats_.requested_bytes += sb.requested_bytes;
    at = sb.offset_bytes + sb.bytes;
  }
  hole(bytes);
  // A hole that ended at the old extent now touches the new range's first
  // hole: merge them, as a Free there would have.
  auto first = holes_.find(base);
  if (first != holes_.end() && first != holes_.begin()) {
    auto below = std::prev(first);
    if (below->first + below->second == base) {
      const int64_t begin = below->first;
      const int64_t size = below->second + first->second;
      EraseHole(first);
      EraseHole(below);
      InsertHole(begin, size);
    }
  }
  top_ = base + bytes;
  floor_ = top_;
  stats_.segments = 1;
  Update();
  return ids;
}

void BestFitArenaModel::Free(AllocBlockId id) {
  const Block b = blocks_[id];
  spare_.push_back(id);
  stats_.allocated_bytes -= b.size;
  stats_.requested_bytes -= b.requested;
  int64_t begin = b.offset;
  int64_t size = b.size;
  auto next = holes_.lower_bound(begin);
  if (next != holes_.end() && next->first == begin + size) {
    size += next->second;
    EraseHole(next);
  }
  auto prev = holes_.lower_bound(begin);
  if (prev != holes_.begin()) {
    --prev;
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      size += prev->second;
      EraseHole(prev);
    }
  }
  if (begin + size == top_ && begin >= floor_) {
    top_ = begin;  // the free tail
  } else if (begin + size == top_) {
    // The free tail reaches into the seeded range: the extent stops at its end.
    InsertHole(begin, floor_ - begin);
    top_ = floor_;
  } else {
    InsertHole(begin, size);
  }
  if (top_ == 0) stats_.segments = 0;
  Update();
}

std::vector<AllocSegmentInfo> BestFitArenaModel::Segments() const {
  if (top_ == 0) return {};
  AllocSegmentInfo s;
  s.bytes = top_;
  std::vector<bool> dropped(blocks_.size(), false);
  for (int32_t id : spare_) dropped[id] = true;
  std::vector<std::pair<int64_t, AllocBlockInfo>> parts;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (dropped[i]) continue;
    const Block& b = blocks_[i];
    parts.push_back({b.offset, {b.size, b.requested, true, static_cast<AllocBlockId>(i)}});
  }
  for (const auto& [offset, size] : holes_) parts.push_back({offset, {size, 0, false, -1}});
  std::sort(parts.begin(), parts.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [offset, info] : parts) s.blocks.push_back(info);
  return {std::move(s)};
}

}  // namespace swapplan::alloc_internal
