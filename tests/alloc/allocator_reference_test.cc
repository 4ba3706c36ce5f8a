// Randomized cross-check: the models against naive references that keep
// segments as plain vectors of blocks and find the best fit by scanning
// every block (O(blocks) per request, no shared code with the library).
// Same rules (allocator_model.h), same model addresses: each cudaMalloc
// segment starts where the previous one's 2 MiB-rounded size ended.
#include <algorithm>
#include <random>

#include <catch2/catch.hpp>

#include "support/test_seed.h"
#include "swapplan/alloc/allocator_model.h"

namespace swapplan {
namespace {

constexpr int64_t MiB = int64_t{1} << 20;

struct NaiveCaching {
  struct B {
    int64_t addr, size;
    bool allocated;
    int64_t requested;
    int id;
  };
  struct Seg {
    int64_t addr, size;
    int stream;
    bool small;
    std::vector<B> blocks;
  };
  AllocatorOptions o;
  std::vector<Seg> segs;
  int64_t next_addr = 0;
  int next_id = 0;
  int ooms = 0;

  int64_t reserved() const {
    int64_t s = 0;
    for (const Seg& g : segs) s += g.size;
    return s;
  }
  int64_t allocated() const {
    int64_t s = 0;
    for (const Seg& g : segs)
      for (const B& b : g.blocks) s += b.allocated ? b.size : 0;
    return s;
  }
  int64_t largest_free() const {
    int64_t s = 0;
    for (const Seg& g : segs)
      for (const B& b : g.blocks) s = b.allocated ? s : std::max(s, b.size);
    return s;
  }
  // Best fit: smallest size, then lowest address, same pool and stream.
  bool Find(bool small, int stream, int64_t size, int* seg, int* blk) {
    int64_t best_size = -1, best_addr = 0;
    for (int i = 0; i < static_cast<int>(segs.size()); ++i) {
      if (segs[i].small != small || segs[i].stream != stream) continue;
      for (int j = 0; j < static_cast<int>(segs[i].blocks.size()); ++j) {
        const B& b = segs[i].blocks[j];
        if (b.allocated || b.size < size) continue;
        if (best_size < 0 || b.size < best_size || (b.size == best_size && b.addr < best_addr)) {
          best_size = b.size, best_addr = b.addr, *seg = i, *blk = j;
        }
      }
    }
    if (best_size < 0) return false;
    const int64_t ms = o.max_split_size_bytes;
    if (size < ms && best_size >= ms) return false;
    if (size >= ms && best_size >= size + kLargeBuffer) return false;
    return true;
  }
  void ReleaseWhole(std::function<bool(const Seg&)> which) {
    segs.erase(std::remove_if(segs.begin(), segs.end(),
                              [&](const Seg& g) {
                                return g.blocks.size() == 1 && !g.blocks[0].allocated && which(g);
                              }),
               segs.end());
  }
  bool NewSeg(bool small, int stream, int64_t alloc, bool force) {
    if (!force && reserved() + alloc > o.capacity_bytes) return false;
    segs.push_back({next_addr, alloc, stream, small, {{next_addr, alloc, false, 0, -1}}});
    next_addr += (alloc + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
    return true;
  }
  int Malloc(int64_t bytes, int stream) {
    const int64_t size = CachingRoundSize(bytes, o.roundup_power2_divisions);
    const bool small = size <= kSmallSize;
    const int64_t alloc = CachingSegmentSize(size);
    int s = -1, b = -1;
    if (!Find(small, stream, size, &s, &b)) {
      bool ok = NewSeg(small, stream, alloc, false);
      if (!ok && o.max_split_size_bytes != kNoMaxSplitSize) {
        // Oversize whole free segments of this pool and stream: one large
        // enough (the smallest such), else the largest ones until enough.
        const int64_t want = std::max(size, o.max_split_size_bytes);
        std::vector<int> cand;
        for (int i = 0; i < static_cast<int>(segs.size()); ++i) {
          const Seg& g = segs[i];
          if (g.small == small && g.stream == stream && g.blocks.size() == 1 &&
              !g.blocks[0].allocated && g.size >= o.max_split_size_bytes) {
            cand.push_back(i);
          }
        }
        std::sort(cand.begin(), cand.end(), [&](int x, int y) {
          return segs[x].size != segs[y].size ? segs[x].size < segs[y].size
                                              : segs[x].addr < segs[y].addr;
        });
        std::vector<int> drop;
        auto one = std::find_if(cand.begin(), cand.end(), [&](int i) { return segs[i].size >= want; });
        int64_t got = 0;
        if (one != cand.end()) {
          drop.push_back(*one);
          got = segs[*one].size;
        } else {
          for (auto it = cand.rbegin(); it != cand.rend() && got < want; ++it) {
            drop.push_back(*it);
            got += segs[*it].size;
          }
        }
        std::sort(drop.rbegin(), drop.rend());
        for (int i : drop) segs.erase(segs.begin() + i);
        if (got >= want) ok = NewSeg(small, stream, alloc, false);
      }
      if (!ok) {
        ReleaseWhole([](const Seg&) { return true; });
        ok = NewSeg(small, stream, alloc, false);
      }
      if (!ok) {
        ++ooms;
        NewSeg(small, stream, alloc, true);
      }
      s = static_cast<int>(segs.size()) - 1;
      b = 0;
    }
    Seg& g = segs[s];
    B found = g.blocks[b];
    const int64_t rem = found.size - size;
    const bool split = g.small ? rem >= kMinBlockSize
                               : (size < o.max_split_size_bytes && rem > kSmallSize);
    const int id = next_id++;
    if (split) {
      g.blocks[b] = {found.addr, size, true, bytes, id};
      g.blocks.insert(g.blocks.begin() + b + 1, {found.addr + size, rem, false, 0, -1});
    } else {
      g.blocks[b] = {found.addr, found.size, true, bytes, id};
    }
    return id;
  }
  void Free(int id) {
    for (Seg& g : segs) {
      for (size_t j = 0; j < g.blocks.size(); ++j) {
        if (g.blocks[j].id != id || !g.blocks[j].allocated) continue;
        g.blocks[j].allocated = false;
        g.blocks[j].id = -1;
        // Merge runs of free neighbours.
        std::vector<B> merged;
        for (const B& x : g.blocks) {
          if (!merged.empty() && !merged.back().allocated && !x.allocated) {
            merged.back().size += x.size;
          } else {
            merged.push_back(x);
          }
        }
        g.blocks = merged;
        return;
      }
    }
  }
};

TEST_CASE("caching model = naive reference on random sequences") {
  const uint64_t seed = testing::TestSeed("allocator reference");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 60; ++round) {
    AllocatorOptions o;
    if (rng() % 2) o.max_split_size_bytes = (21 + static_cast<int64_t>(rng() % 40)) * MiB;
    if (rng() % 3 == 0) o.roundup_power2_divisions = 1 << (1 + rng() % 3);
    if (rng() % 2) o.capacity_bytes = (40 + static_cast<int64_t>(rng() % 200)) * MiB;
    REQUIRE(o.Validate().ok());
    INFO("round " << round << " max_split " << o.max_split_size_bytes << " div "
                  << o.roundup_power2_divisions << " capacity " << o.capacity_bytes);
    auto model = MakeAllocatorModel(o);
    NaiveCaching ref{o};
    std::vector<std::pair<AllocBlockId, int>> live;
    for (int step = 0; step < 300; ++step) {
      const uint64_t r = rng() % 100;
      if (r < 55 || live.empty()) {
        int64_t bytes;
        switch (rng() % 4) {
          case 0: bytes = static_cast<int64_t>(rng() % (2 * MiB)); break;        // small/edge
          case 1: bytes = static_cast<int64_t>(rng() % (12 * MiB)); break;       // 1-10 MiB band
          case 2: bytes = static_cast<int64_t>(rng() % (64 * MiB)); break;       // large
          default: bytes = static_cast<int64_t>(1 + rng() % 8) * 4 * MiB; break;  // round sizes
        }
        const int stream = rng() % 5 == 0 ? 1 : 0;
        MallocResult m = model->Malloc(bytes, stream);
        live.push_back({m.block, ref.Malloc(bytes, stream)});
      } else if (r < 97) {
        const size_t k = rng() % live.size();
        model->Free(live[k].first);
        ref.Free(live[k].second);
        live.erase(live.begin() + static_cast<long>(k));
      } else {
        model->EmptyCache();
        ref.ReleaseWhole([](const NaiveCaching::Seg&) { return true; });
      }
      INFO("step " << step);
      REQUIRE(model->stats().reserved_bytes == ref.reserved());
      REQUIRE(model->stats().allocated_bytes == ref.allocated());
      REQUIRE(model->stats().largest_free_bytes == ref.largest_free());
      REQUIRE(model->stats().ooms == ref.ooms);
      REQUIRE(static_cast<size_t>(model->stats().segments) == ref.segs.size());
    }
  }
}

TEST_CASE("best-fit arena = naive reference on random sequences") {
  const uint64_t seed = testing::TestSeed("arena reference");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  AllocatorOptions o;
  o.kind = AllocatorKind::kBestFitArena;
  auto model = MakeAllocatorModel(o);
  // Naive: allocated [offset, end) ranges; a request goes to the smallest gap
  // between them (lowest offset on ties) that fits, else after the last.
  std::vector<std::tuple<int64_t, int64_t, AllocBlockId>> ranges;  // sorted by offset
  for (int step = 0; step < 4000; ++step) {
    if (rng() % 100 < 55 || ranges.empty()) {
      const int64_t bytes = static_cast<int64_t>(rng() % 5000);
      const int64_t size = (std::max<int64_t>(bytes, 1) + 255) / 256 * 256;
      int64_t best = -1, best_gap = 0, prev_end = 0;
      for (const auto& [off, end, id] : ranges) {
        const int64_t gap = off - prev_end;
        if (gap >= size && (best < 0 || gap < best_gap)) best = prev_end, best_gap = gap;
        prev_end = end;
      }
      const int64_t at = best >= 0 ? best : prev_end;
      MallocResult m = model->Malloc(bytes, 0);
      ranges.emplace_back(at, at + size, m.block);
      std::sort(ranges.begin(), ranges.end());
    } else {
      const size_t k = rng() % ranges.size();
      model->Free(std::get<2>(ranges[k]));
      ranges.erase(ranges.begin() + static_cast<long>(k));
    }
    const int64_t top = ranges.empty() ? 0 : std::get<1>(ranges.back());
    int64_t alloc = 0, largest = 0, prev_end = 0;
    for (const auto& [off, end, id] : ranges) {
      alloc += end - off;
      largest = std::max(largest, off - prev_end);
      prev_end = end;
    }
    INFO("step " << step);
    REQUIRE(model->stats().reserved_bytes == top);
    REQUIRE(model->stats().allocated_bytes == alloc);
    REQUIRE(model->stats().largest_free_bytes == largest);
  }
}

}  // namespace
}  // namespace swapplan
