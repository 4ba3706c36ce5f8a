// PyTorch's CUDA caching allocator as a model (allocator_model.h lists the
// rules). Written from the rules of c10/cuda/CUDACachingAllocator.cpp, not
// from its code: blocks live in one vector (indices instead of pointers),
// the free blocks of each pool in a set ordered (stream, size, address) —
// PyTorch's BlockComparatorSize, so lower_bound is its best fit.
#include <algorithm>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "alloc/models.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::alloc_internal {

namespace {

int64_t RoundUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Saturating: a model never wraps (requests are bounded, so this is a guard).
int64_t SatAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

}  // namespace

CachingAllocatorModel::CachingAllocatorModel(const AllocatorOptions& options)
    : options_(options) {}

int32_t CachingAllocatorModel::NewBlock(const Block& b) {
  if (!spare_.empty()) {
    const int32_t id = spare_.back();
    spare_.pop_back();
    blocks_[id] = b;
    return id;
  }
  blocks_.push_back(b);
  return static_cast<int32_t>(blocks_.size() - 1);
}

void CachingAllocatorModel::DropBlock(int32_t id) { spare_.push_back(id); }

int64_t CachingAllocatorModel::TakeSegmentAddress(int64_t bytes) {
  int64_t a = next_address_;
  if (placed_address_ >= 0) {
    a = placed_address_;
    placed_address_ = -1;
  }
  next_address_ = std::max(next_address_, SatAdd(a, RoundUp(bytes, kRoundLarge)));
  return a;
}

void CachingAllocatorModel::InsertFree(int32_t id) {
  const Block& b = blocks_[id];
  free_[b.small].emplace(b.stream, b.size, b.addr, id);
  free_sizes_.insert(b.size);
  stats_.largest_free_bytes = *free_sizes_.rbegin();
}

void CachingAllocatorModel::EraseFree(int32_t id) {
  const Block& b = blocks_[id];
  if (free_[b.small].erase({b.stream, b.size, b.addr, id}) == 0) return;
  free_sizes_.erase(free_sizes_.find(b.size));
  stats_.largest_free_bytes = free_sizes_.empty() ? 0 : *free_sizes_.rbegin();
}

void CachingAllocatorModel::InsertUnmapped(int32_t id) {
  const Block& b = blocks_[id];
  unmapped_[b.small].emplace(b.stream, b.addr, id);
}

void CachingAllocatorModel::EraseUnmapped(int32_t id) {
  const Block& b = blocks_[id];
  unmapped_[b.small].erase({b.stream, b.addr, id});
}

void CachingAllocatorModel::AddReserved(int64_t bytes) {
  stats_.reserved_bytes = SatAdd(stats_.reserved_bytes, bytes);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

MallocResult CachingAllocatorModel::Malloc(int64_t bytes, int32_t stream) {
  const int64_t size = CachingRoundSize(bytes, options_.roundup_power2_divisions);
  const bool small = size <= kSmallSize;
  const int64_t alloc_size = CachingSegmentSize(size);
  MallocResult r;
  int32_t id = GetFreeBlock(small, stream, size);
  if (id < 0) {
    id = AllocBlock(small, stream, size, alloc_size, false);
    if (id < 0 && ReleaseAvailableCachedBlocks(small, stream, size)) {
      id = AllocBlock(small, stream, size, alloc_size, false);
    }
    if (id < 0) {
      ReleaseCachedBlocks();
      id = AllocBlock(small, stream, size, alloc_size, false);
    }
    if (id < 0) {
      r.oom = true;
      ++stats_.ooms;
      id = AllocBlock(small, stream, size, alloc_size, true);
    }
  }
  r.block = AllocFound(id, size, bytes, ShouldSplit(id, size));
  r.block_bytes = size;
  r.address = blocks_[r.block].addr;
  return r;
}

absl::StatusOr<std::vector<AllocBlockId>> CachingAllocatorModel::AddSegment(
    int64_t bytes, int32_t stream, bool large, const std::vector<SeedBlock>& allocated) {
  if (bytes <= 0 || bytes > kMaxAllocatorRequestBytes || stream < 0) {
    return absl::InvalidArgumentError(absl::StrCat("allocator model: a seeded segment of ", bytes,
                                                   " bytes on stream ", stream));
  }
  SWAPPLAN_RETURN_IF_ERROR(CheckSeedBlocks(bytes, allocated));
  // The range's neighbours: none for a cudaMalloc segment; the unmapped
  // rest of its expandable segment otherwise.
  int32_t before = -1, after = -1, expandable = -1;
  int64_t base = 0;
  if (options_.expandable_segments) {
    SWAPPLAN_ASSIGN_OR_RETURN(const int32_t u, TakeSeedRange(!large, stream, bytes));
    base = blocks_[u].addr;
    before = blocks_[u].prev;
    after = blocks_[u].next;
    expandable = blocks_[u].expandable;
    DropBlock(u);
  } else {
    base = TakeSegmentAddress(bytes);
    ++stats_.segments;
  }
  AddReserved(bytes);
  std::vector<AllocBlockId> ids;
  int32_t prev = before;
  auto append = [&](int64_t offset, int64_t size, bool in_use, int64_t requested) {
    Block b;
    b.addr = base + offset;
    b.size = size;
    b.requested = requested;
    b.stream = stream;
    b.small = !large;
    b.allocated = in_use;
    b.expandable = expandable;
    b.prev = prev;
    const int32_t id = NewBlock(b);
    if (prev >= 0) blocks_[prev].next = id;
    prev = id;
    if (in_use) {
      stats_.allocated_bytes += size;
      stats_.requested_bytes += requested;
      ids.push_back(id);
    } else {
      InsertFree(id);
    }
  };
  int64_t at = 0;
  for (const SeedBlock& sb : allocated) {
    if (sb.offset_bytes > at) append(at, sb.offset_bytes - at, false, 0);
    append(sb.offset_bytes, sb.bytes, true, sb.requested_bytes);
    at = sb.offset_bytes + sb.bytes;
  }
  if (at < bytes) append(at, bytes - at, false, 0);
  if (after >= 0) {
    blocks_[prev].next = after;
    blocks_[after].prev = prev;
  }
  return ids;
}

int32_t CachingAllocatorModel::SplitUnmapped(int32_t id, int64_t offset) {
  Block rest = blocks_[id];
  rest.addr += offset;
  rest.size -= offset;
  rest.prev = id;
  const int32_t r = NewBlock(rest);
  if (blocks_[r].next >= 0) blocks_[blocks_[r].next].prev = r;
  blocks_[id].next = r;
  blocks_[id].size = offset;
  InsertUnmapped(r);
  return r;
}

absl::StatusOr<int32_t> CachingAllocatorModel::TakeSeedRange(bool small, int32_t stream,
                                                             int64_t bytes) {
  const int64_t page = small ? kSmallBuffer : kLargeBuffer;
  if (bytes % page != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "allocator model: a seeded range of an expandable segment must be whole ", page,
        "-byte pages (", small ? "small" : "large", " pool); ", bytes, " bytes is not"));
  }
  const int64_t placed = placed_address_;
  placed_address_ = -1;
  const std::pair<bool, int32_t> key{small, stream};
  auto origin = seed_origin_.find(key);
  const int64_t want = placed >= 0 && origin != seed_origin_.end() ? placed - origin->second : -1;
  auto mapped = [&](int32_t b) { return b >= 0 && blocks_[b].mapped; };
  // The lowest unmapped range with room for `bytes` at least a page away
  // from any mapped range (two recorded ranges stay two), at `want` when
  // that lies in one.
  auto find = [&](int64_t at) -> std::pair<int32_t, int64_t> {
    std::set<UnmappedKey>& unmapped = unmapped_[small];
    for (auto it = unmapped.lower_bound({stream, std::numeric_limits<int64_t>::min(), -1});
         it != unmapped.end() && std::get<0>(*it) == stream; ++it) {
      const Block& u = blocks_[std::get<2>(*it)];
      const int64_t lo = u.addr + (mapped(u.prev) ? page : 0);
      const int64_t hi = u.addr + u.size - (mapped(u.next) ? page : 0);
      if (at < 0 && hi - lo >= bytes) return {std::get<2>(*it), lo};
      if (at >= 0 && at >= lo && at % page == 0 && hi - at >= bytes) return {std::get<2>(*it), at};
    }
    return {-1, 0};
  };
  auto [u, start] = find(want);
  if (u < 0 && want >= 0) std::tie(u, start) = find(-1);
  if (u < 0) {
    u = NewExpandable(small, stream, bytes);
    start = blocks_[u].addr;
  }
  if (start > blocks_[u].addr) u = SplitUnmapped(u, start - blocks_[u].addr);
  if (blocks_[u].size > bytes) SplitUnmapped(u, bytes);
  EraseUnmapped(u);
  if (placed >= 0 && origin == seed_origin_.end()) seed_origin_[key] = placed - start;
  return u;
}

int32_t CachingAllocatorModel::NewExpandable(bool small, int32_t stream, int64_t size) {
  // Address space for 1 1/8 of the device (PyTorch's figure).
  const int64_t space = options_.capacity_bytes == std::numeric_limits<int64_t>::max()
                            ? int64_t{1} << 52
                            : RoundUp(SatAdd(options_.capacity_bytes, options_.capacity_bytes / 8),
                                      kLargeBuffer);
  expandable_.push_back({small ? kSmallBuffer : kLargeBuffer});
  Block b;
  b.addr = RoundUp(next_address_, kLargeBuffer);  // page-aligned for both page sizes
  b.size = std::max(space, RoundUp(size, kLargeBuffer));
  b.stream = stream;
  b.small = small;
  b.mapped = false;
  b.expandable = static_cast<int32_t>(expandable_.size() - 1);
  next_address_ = SatAdd(b.addr, b.size);
  ++stats_.segments;
  const int32_t id = NewBlock(b);
  InsertUnmapped(id);
  return id;
}

int32_t CachingAllocatorModel::GetFreeBlock(bool small, int32_t stream, int64_t size) {
  std::set<FreeKey>& pool = free_[small];
  auto it = pool.lower_bound({stream, size, std::numeric_limits<int64_t>::min(), -1});
  if (it == pool.end() || std::get<0>(*it) != stream) return -1;
  if (blocks_[std::get<3>(*it)].expandable >= 0) {
    // The tail block of an expandable segment counts as the size it can
    // grow to (its unmapped neighbour included) for the best fit.
    auto expandable_size = [&](const FreeKey& k) {
      const Block& b = blocks_[std::get<3>(k)];
      return b.size + (b.next >= 0 && !blocks_[b.next].mapped ? blocks_[b.next].size : 0);
    };
    auto next = std::next(it);
    while (blocks_[std::get<3>(*it)].expandable >= 0 && next != pool.end() &&
           std::get<0>(*next) == stream && expandable_size(*next) < expandable_size(*it)) {
      it = next++;
    }
  }
  const int64_t found = std::get<1>(*it);
  const int64_t max_split = options_.max_split_size_bytes;
  // An oversize block serves only oversize requests, and those only when
  // it is less than kLargeBuffer larger.
  if (size < max_split && found >= max_split) return -1;
  if (size >= max_split && found >= SatAdd(size, kLargeBuffer)) return -1;
  const int32_t id = std::get<3>(*it);
  EraseFree(id);
  return id;
}

int32_t CachingAllocatorModel::AllocBlock(bool small, int32_t stream, int64_t size,
                                          int64_t alloc_size, bool ignore_capacity) {
  if (options_.expandable_segments) return AllocExpandable(small, stream, size, ignore_capacity);
  if (!ignore_capacity && SatAdd(stats_.reserved_bytes, alloc_size) > options_.capacity_bytes) {
    return -1;
  }
  Block b;
  b.addr = TakeSegmentAddress(alloc_size);
  b.size = alloc_size;
  b.stream = stream;
  b.small = small;
  ++stats_.segments;
  AddReserved(alloc_size);
  return NewBlock(b);
}

int32_t CachingAllocatorModel::FindExpandable(bool small, int32_t stream, int64_t size) {
  auto has_room = [&](int32_t b) {
    int64_t bytes = 0;
    while (bytes < size && Allocatable(b)) {
      bytes += blocks_[b].size;
      b = blocks_[b].next;
    }
    return bytes >= size;
  };
  std::set<UnmappedKey>& unmapped = unmapped_[small];
  for (auto it = unmapped.lower_bound({stream, std::numeric_limits<int64_t>::min(), -1});
       it != unmapped.end() && std::get<0>(*it) == stream; ++it) {
    int32_t c = std::get<2>(*it);
    // A free block just before the unmapped range can be its start.
    if (Allocatable(blocks_[c].prev)) c = blocks_[c].prev;
    if (has_room(c)) return c;
  }
  return NewExpandable(small, stream, size);
}

int32_t CachingAllocatorModel::AllocExpandable(bool small, int32_t stream, int64_t size,
                                               bool ignore_capacity) {
  int32_t c = FindExpandable(small, stream, size);
  if (!blocks_[c].mapped && !MapBlock(c, std::min(blocks_[c].size, size), ignore_capacity)) {
    return -1;
  }
  while (blocks_[c].size < size) {
    const int32_t next = blocks_[c].next;  // unmapped: free -> unmapped -> ...
    if (!MapBlock(next, std::min(size - blocks_[c].size, blocks_[next].size), ignore_capacity)) {
      return -1;
    }
    c = next;  // MapBlock merged c into next
  }
  EraseFree(c);
  return c;
}

bool CachingAllocatorModel::MapBlock(int32_t id, int64_t size, bool ignore_capacity) {
  const int64_t page = expandable_[blocks_[id].expandable].page;
  const int64_t mapped = std::min(RoundUp(size, page), blocks_[id].size);
  if (!ignore_capacity && SatAdd(stats_.reserved_bytes, mapped) > options_.capacity_bytes) {
    return false;
  }
  if (mapped < blocks_[id].size) SplitUnmapped(id, mapped);  // the rest stays unmapped
  EraseUnmapped(id);
  blocks_[id].mapped = true;
  TryMerge(id, blocks_[id].prev);
  TryMerge(id, blocks_[id].next);
  InsertFree(id);
  AddReserved(mapped);
  return true;
}

void CachingAllocatorModel::UnmapBlock(int32_t id) {
  Block& b = blocks_[id];
  const int64_t base = b.addr;
  const int64_t page = expandable_[b.expandable].page;
  // Whole pages inside the free block (segments start page-aligned at
  // multiples of 20 MiB, so absolute addresses work).
  const int64_t begin = RoundUp(base, page);
  const int64_t end = (base + b.size) / page * page;
  if (end <= begin) return;
  EraseFree(id);
  if (begin > base) {
    Block before = blocks_[id];
    before.size = begin - base;
    before.next = id;
    const int32_t bf = NewBlock(before);
    if (blocks_[bf].prev >= 0) blocks_[blocks_[bf].prev].next = bf;
    blocks_[id].prev = bf;
    InsertFree(bf);
  }
  if (base + blocks_[id].size > end) {
    Block after = blocks_[id];
    after.addr = end;
    after.size = base + blocks_[id].size - end;
    after.prev = id;
    const int32_t af = NewBlock(after);
    if (blocks_[af].next >= 0) blocks_[blocks_[af].next].prev = af;
    blocks_[id].next = af;
    InsertFree(af);
  }
  blocks_[id].addr = begin;
  blocks_[id].size = end - begin;
  blocks_[id].mapped = false;
  TryMerge(id, blocks_[id].prev);
  TryMerge(id, blocks_[id].next);
  InsertUnmapped(id);
  stats_.reserved_bytes -= end - begin;
}

bool CachingAllocatorModel::ShouldSplit(int32_t id, int64_t size) const {
  const Block& b = blocks_[id];
  const int64_t remaining = b.size - size;
  if (b.small || options_.expandable_segments) return remaining >= kMinBlockSize;
  return size < options_.max_split_size_bytes && remaining > kSmallSize;
}

int32_t CachingAllocatorModel::AllocFound(int32_t id, int64_t size, int64_t requested,
                                          bool split) {
  int32_t out = id;
  if (split) {
    // The allocation takes the front; the remainder stays free.
    Block front = blocks_[id];
    front.size = size;
    front.next = id;
    out = NewBlock(front);
    if (blocks_[out].prev >= 0) blocks_[blocks_[out].prev].next = out;
    Block& rest = blocks_[id];
    rest.prev = out;
    rest.addr += size;
    rest.size -= size;
    InsertFree(id);
  }
  Block& b = blocks_[out];
  b.allocated = true;
  b.requested = requested;
  stats_.allocated_bytes += b.size;
  stats_.requested_bytes += requested;
  return out;
}

void CachingAllocatorModel::Free(AllocBlockId id) {
  Block& b = blocks_[id];
  b.allocated = false;
  stats_.allocated_bytes -= b.size;
  stats_.requested_bytes -= b.requested;
  b.requested = 0;
  TryMerge(id, blocks_[id].prev);
  TryMerge(id, blocks_[id].next);
  InsertFree(id);
}

int64_t CachingAllocatorModel::TryMerge(int32_t dst, int32_t src) {
  if (src < 0 || blocks_[src].allocated || blocks_[src].mapped != blocks_[dst].mapped) return 0;
  if (blocks_[src].mapped) {
    EraseFree(src);
  } else {
    EraseUnmapped(src);
  }
  Block& d = blocks_[dst];
  const Block& s = blocks_[src];
  if (d.prev == src) {
    d.addr = s.addr;
    d.prev = s.prev;
    if (d.prev >= 0) blocks_[d.prev].next = dst;
  } else {
    d.next = s.next;
    if (d.next >= 0) blocks_[d.next].prev = dst;
  }
  d.size += s.size;
  const int64_t subsumed = s.size;
  DropBlock(src);
  return subsumed;
}

void CachingAllocatorModel::ReleaseSegment(int32_t id) {
  EraseFree(id);
  stats_.reserved_bytes -= blocks_[id].size;
  --stats_.segments;
  DropBlock(id);
}

bool CachingAllocatorModel::ReleaseAvailableCachedBlocks(bool small, int32_t stream,
                                                         int64_t size) {
  const int64_t max_split = options_.max_split_size_bytes;
  if (max_split == kNoMaxSplitSize || options_.expandable_segments) return false;
  std::set<FreeKey>& pool = free_[small];
  const int64_t want = std::max(size, max_split);
  auto it = pool.lower_bound({stream, want, std::numeric_limits<int64_t>::min(), -1});
  if (it != pool.end() && std::get<0>(*it) == stream) {
    const int32_t id = std::get<3>(*it);
    if (blocks_[id].prev >= 0 || blocks_[id].next >= 0) return false;
    ReleaseSegment(id);
    return true;
  }
  // No single block is large enough: release oversize blocks of the
  // stream, largest first, until `want` bytes are back.
  if (it == pool.begin()) return false;
  --it;
  int64_t released = 0;
  while (released < want && std::get<1>(*it) >= max_split && std::get<0>(*it) == stream) {
    const int32_t id = std::get<3>(*it);
    const bool first = it == pool.begin();
    if (!first) --it;
    if (blocks_[id].prev < 0 && blocks_[id].next < 0) {
      released += blocks_[id].size;
      ReleaseSegment(id);
    }
    if (first) break;
  }
  return released >= want;
}

void CachingAllocatorModel::ReleaseCachedBlocks() {
  for (int small = 0; small < 2; ++small) {
    std::vector<int32_t> ids;
    for (const FreeKey& k : free_[small]) ids.push_back(std::get<3>(k));
    for (int32_t id : ids) {
      if (blocks_[id].expandable >= 0) {
        UnmapBlock(id);
      } else if (blocks_[id].prev < 0 && blocks_[id].next < 0) {
        ReleaseSegment(id);
      }
    }
  }
  // An expandable segment left wholly unmapped stays as address space: it
  // reserves nothing, and PyTorch's release of it changes no figure here.
}

std::vector<AllocSegmentInfo> CachingAllocatorModel::Segments() const {
  std::vector<AllocSegmentInfo> out;
  std::vector<bool> dropped(blocks_.size(), false);
  for (int32_t id : spare_) dropped[id] = true;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& head = blocks_[i];
    if (dropped[i] || !head.mapped) continue;
    if (head.prev >= 0 && blocks_[head.prev].mapped) continue;
    AllocSegmentInfo s;
    s.address = head.addr;
    s.stream = head.stream;
    s.large = !head.small;
    for (int32_t b = static_cast<int32_t>(i); b >= 0 && blocks_[b].mapped; b = blocks_[b].next) {
      const Block& x = blocks_[b];
      s.blocks.push_back({x.size, x.requested, x.allocated, x.allocated ? b : -1});
      s.bytes += x.size;
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const AllocSegmentInfo& a, const AllocSegmentInfo& b) { return a.address < b.address; });
  return out;
}

}  // namespace swapplan::alloc_internal
