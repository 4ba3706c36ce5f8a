// The allocator models' rules, each on a hand-made sequence whose reserved
// bytes are worked out in the comments (PyTorch's constants: 512 B blocks,
// 1 MiB small limit, 2 MiB small segments, 20 MiB segments for 1-10 MiB
// requests, 2 MiB rounding of larger segments).
#include <catch2/catch.hpp>

#include "swapplan/alloc/allocator_model.h"

namespace swapplan {
namespace {

constexpr int64_t MiB = int64_t{1} << 20;

std::unique_ptr<AllocatorModel> Caching(AllocatorOptions o = {}) {
  REQUIRE(o.Validate().ok());
  return MakeAllocatorModel(o);
}

TEST_CASE("rounding: 512-byte blocks, power-of-two divisions, segment sizes") {
  CHECK(CachingRoundSize(0, 0) == 512);
  CHECK(CachingRoundSize(1, 0) == 512);
  CHECK(CachingRoundSize(513, 0) == 1024);
  CHECK(CachingRoundSize(40 * MiB + 1, 0) == 40 * MiB + 512);
  // roundup_power2_divisions 4: 5000 lies in [4096, 8192), steps of 1024 -> 5120;
  // 40 MiB + 1 in [32, 64) MiB, steps of 8 MiB -> 48 MiB; 2000 <= 512 x 4 keeps 512s.
  CHECK(CachingRoundSize(5000, 4) == 5120);
  CHECK(CachingRoundSize(40 * MiB + 1, 4) == 48 * MiB);
  CHECK(CachingRoundSize(2000, 4) == 2048);
  CHECK(CachingRoundSize(4096, 4) == 4096);
  // Segments: <= 1 MiB -> 2 MiB; < 10 MiB -> 20 MiB; else 2 MiB multiples.
  CHECK(CachingSegmentSize(1 * MiB) == 2 * MiB);
  CHECK(CachingSegmentSize(1 * MiB + 512) == 20 * MiB);
  CHECK(CachingSegmentSize(10 * MiB) == 10 * MiB);
  CHECK(CachingSegmentSize(10 * MiB + 512) == 12 * MiB);

  auto m = Caching();
  MallocResult a = m->Malloc(1, 0);  // 512 B from a new 2 MiB small segment
  CHECK(a.block_bytes == 512);
  CHECK(m->stats().reserved_bytes == 2 * MiB);
  CHECK(m->stats().allocated_bytes == 512);
  CHECK(m->stats().requested_bytes == 1);
  m->Malloc(MiB + 1, 0);  // 1 MiB + 512 is large: a 20 MiB segment -> 22 MiB
  CHECK(m->stats().reserved_bytes == 22 * MiB);
  CHECK(m->stats().largest_free_bytes == 19 * MiB - 512);  // the split remainder
  m->Malloc(10 * MiB + 1, 0);  // 10 MiB + 512 fits the 19 MiB - 512 remainder: 22 MiB
  CHECK(m->stats().reserved_bytes == 22 * MiB);
  m->Malloc(10 * MiB + 1, 0);  // 9 MiB - 1 KiB left: a 12 MiB segment -> 34 MiB
  CHECK(m->stats().reserved_bytes == 34 * MiB);
  CHECK(m->stats().segments == 3);
}

TEST_CASE("a split: requests share a segment while the remainder is large enough") {
  auto m = Caching();
  // Small pool: two 1 KiB blocks out of one 2 MiB segment (remainder >= 512 B).
  m->Malloc(1000, 0);
  m->Malloc(1000, 0);
  CHECK(m->stats().reserved_bytes == 2 * MiB);
  CHECK(m->stats().allocated_bytes == 2048);
  // Large pool: 3 MiB takes a 20 MiB segment and leaves 17 MiB free (> 1 MiB:
  // split); 5 MiB and then 12 MiB come out of it: still one segment.
  m->Malloc(3 * MiB, 0);
  CHECK(m->stats().reserved_bytes == 22 * MiB);
  CHECK(m->stats().largest_free_bytes == 17 * MiB);
  m->Malloc(5 * MiB, 0);
  m->Malloc(12 * MiB, 0);
  CHECK(m->stats().reserved_bytes == 22 * MiB);
  CHECK(m->stats().allocated_bytes == 2048 + 20 * MiB);
  // No split when the remainder is <= 1 MiB: 11 MiB gets a 12 MiB segment
  // and the whole of it (allocated counts the block: 12 MiB).
  m->Malloc(11 * MiB, 0);
  CHECK(m->stats().reserved_bytes == 34 * MiB);
  CHECK(m->stats().allocated_bytes == 2048 + 32 * MiB);
  CHECK(m->stats().requested_bytes == 2000 + 31 * MiB);
}

TEST_CASE("a segment that a larger request cannot reuse") {
  SECTION("unlimited: the free 30 MiB segment stays, a 40 MiB one is added") {
    auto m = Caching();
    MallocResult a = m->Malloc(30 * MiB, 0);
    m->Free(a.block);
    m->Malloc(40 * MiB, 0);  // 30 MiB free < 40: new segment; 70 MiB reserved
    CHECK(m->stats().reserved_bytes == 70 * MiB);
    CHECK(m->stats().allocated_bytes == 40 * MiB);
    CHECK(m->stats().largest_free_bytes == 30 * MiB);
    CHECK(m->stats().ooms == 0);
  }
  SECTION("at a 50 MiB capacity the retry releases the free segment") {
    AllocatorOptions o;
    o.capacity_bytes = 50 * MiB;
    auto m = Caching(o);
    MallocResult a = m->Malloc(30 * MiB, 0);
    m->Free(a.block);
    m->Malloc(40 * MiB, 0);  // 30 + 40 > 50: release 30, then 40 fits
    CHECK(m->stats().reserved_bytes == 40 * MiB);
    CHECK(m->stats().peak_reserved_bytes == 40 * MiB);
    CHECK(m->stats().ooms == 0);
  }
  SECTION("a split segment cannot be released: OOM although allocated bytes fit") {
    AllocatorOptions o;
    o.capacity_bytes = 21 * MiB;
    auto m = Caching(o);
    MallocResult a = m->Malloc(12 * MiB, 0);  // a 12 MiB segment
    m->Free(a.block);
    m->Malloc(4 * MiB, 0);  // best fit: the free 12 MiB block, split: 8 MiB stay free
    CHECK(m->stats().reserved_bytes == 12 * MiB);
    // 10 MiB: the 8 MiB block is too small; a 10 MiB segment needs 22 MiB > 21
    // and the 12 MiB segment is in use: OOM with 14 MiB allocated.
    MallocResult c = m->Malloc(10 * MiB, 0);
    CHECK(c.oom);
    CHECK(m->stats().ooms == 1);
    CHECK(m->stats().allocated_bytes == 14 * MiB);
    CHECK(m->stats().reserved_bytes == 22 * MiB);
    CHECK(m->stats().largest_free_bytes == 8 * MiB);
  }
}

TEST_CASE("the oversize threshold (max_split_size_mb)") {
  AllocatorOptions o;
  o.max_split_size_bytes = 32 * MiB;
  SECTION("an oversize free block serves no small request and is never split") {
    auto m = Caching(o);
    MallocResult a = m->Malloc(40 * MiB, 0);
    m->Free(a.block);
    m->Malloc(10 * MiB, 0);  // 10 < 32 and the free block is 40 >= 32: new 10 MiB segment
    CHECK(m->stats().reserved_bytes == 50 * MiB);
    m->Malloc(38 * MiB, 0);  // >= 32, 40 < 38 + 20: reused whole (no split)
    CHECK(m->stats().reserved_bytes == 50 * MiB);
    CHECK(m->stats().allocated_bytes == 50 * MiB);
    CHECK(m->stats().largest_free_bytes == 0);
  }
  SECTION("an oversize request takes a block only within 20 MiB of its size") {
    auto m = Caching(o);
    MallocResult a = m->Malloc(100 * MiB, 0);
    m->Free(a.block);
    m->Malloc(64 * MiB, 0);  // 100 >= 64 + 20: not reused; 164 MiB
    CHECK(m->stats().reserved_bytes == 164 * MiB);
  }
  SECTION("without the threshold the same blocks are split and reused") {
    auto m = Caching();
    MallocResult a = m->Malloc(40 * MiB, 0);
    m->Free(a.block);
    m->Malloc(10 * MiB, 0);  // split: 30 MiB stay free
    CHECK(m->stats().reserved_bytes == 40 * MiB);
    CHECK(m->stats().largest_free_bytes == 30 * MiB);
  }
  SECTION("at capacity, oversize free segments are released first") {
    o.capacity_bytes = 60 * MiB;
    auto m = Caching(o);
    MallocResult a = m->Malloc(40 * MiB, 0);
    m->Free(a.block);
    m->Malloc(30 * MiB, 0);  // 40 + 30 > 60: the oversize 40 MiB goes, then 30 fits
    CHECK(m->stats().reserved_bytes == 30 * MiB);
    CHECK(m->stats().ooms == 0);
  }
}

TEST_CASE("expandable_segments on and off") {
  // a, b: 30 MiB each; b freed; then 40 MiB.
  auto run = [](bool expandable) {
    AllocatorOptions o;
    o.expandable_segments = expandable;
    auto m = MakeAllocatorModel(o);
    MallocResult a = m->Malloc(30 * MiB, 0);
    MallocResult b = m->Malloc(30 * MiB, 0);
    m->Free(b.block);
    m->Malloc(40 * MiB, 0);
    return std::make_pair(std::move(m), a);
  };
  SECTION("off: 30 + 30 MiB segments, the free 30 MiB cannot hold 40: 100 MiB") {
    auto [m, a] = run(false);
    CHECK(m->stats().reserved_bytes == 100 * MiB);
    CHECK(m->stats().allocated_bytes == 70 * MiB);
  }
  SECTION("on: 20 MiB pages; the freed tail grows by one page: 80 MiB") {
    // a maps pages [0, 40) and uses [0, 30); b uses [30, 40) plus the page
    // [40, 60): 60 MiB. b freed: [30, 60) free at the end of the mapping.
    // 40 MiB: [30, 60) + one more page [60, 80) -> 80 MiB, [70, 80) free.
    auto [m, a] = run(true);
    CHECK(m->stats().reserved_bytes == 80 * MiB);
    CHECK(m->stats().allocated_bytes == 70 * MiB);
    CHECK(m->stats().largest_free_bytes == 10 * MiB);
    // empty_cache unmaps whole free pages only: a freed -> [0, 30) free, the
    // page [0, 20) goes back: 60 MiB.
    m->Free(a.block);
    m->EmptyCache();
    CHECK(m->stats().reserved_bytes == 60 * MiB);
  }
}

TEST_CASE("empty_cache returns wholly free segments only") {
  auto m = Caching();
  MallocResult a = m->Malloc(30 * MiB, 0);  // 30 MiB segment
  MallocResult b = m->Malloc(3 * MiB, 0);   // 20 MiB segment, split
  MallocResult c = m->Malloc(1000, 0);      // 2 MiB small segment
  CHECK(m->stats().reserved_bytes == 52 * MiB);
  m->Free(a.block);
  m->Free(c.block);
  m->EmptyCache();  // 30 and 2 go; b's segment is in use: 20 MiB
  CHECK(m->stats().reserved_bytes == 20 * MiB);
  CHECK(m->stats().segments == 1);
  m->Free(b.block);  // merges back into one free 20 MiB block
  CHECK(m->stats().reserved_bytes == 20 * MiB);
  m->EmptyCache();
  CHECK(m->stats().reserved_bytes == 0);
  CHECK(m->stats().peak_reserved_bytes == 52 * MiB);
}

TEST_CASE("per-stream pools: a block freed on one stream does not serve another") {
  auto m = Caching();
  MallocResult a = m->Malloc(1000, 0);
  m->Free(a.block);
  m->Malloc(1000, 1);  // a second 2 MiB segment
  CHECK(m->stats().reserved_bytes == 4 * MiB);
  m->Malloc(1000, 0);  // back in stream 0's segment
  CHECK(m->stats().reserved_bytes == 4 * MiB);
}

TEST_CASE("segments list blocks in address order") {
  auto m = Caching();
  MallocResult a = m->Malloc(3 * MiB, 0);
  m->Malloc(5 * MiB, 0);
  m->Free(a.block);
  std::vector<AllocSegmentInfo> s = m->Segments();
  REQUIRE(s.size() == 1);
  CHECK(s[0].bytes == 20 * MiB);
  REQUIRE(s[0].blocks.size() == 3);  // [3 free][5 allocated][12 free]
  CHECK(!s[0].blocks[0].allocated);
  CHECK(s[0].blocks[1].allocated);
  CHECK(s[0].blocks[1].bytes == 5 * MiB);
  CHECK(s[0].blocks[2].bytes == 12 * MiB);
  CHECK(s[0].free_bytes() == 15 * MiB);
}

TEST_CASE("best-fit arena: extent, holes, capacity") {
  AllocatorOptions o;
  o.kind = AllocatorKind::kBestFitArena;
  o.capacity_bytes = 1500;
  auto m = MakeAllocatorModel(o);
  MallocResult a = m->Malloc(100, 0);   // [0, 256)
  MallocResult b = m->Malloc(1000, 0);  // [256, 1280)
  m->Free(a.block);                     // hole [0, 256)
  MallocResult c = m->Malloc(300, 0);   // 512: no hole fits; [1280, 1792) > 1500: OOM
  CHECK(c.oom);
  CHECK(m->stats().reserved_bytes == 1792);
  CHECK(m->stats().allocated_bytes == 1536);
  CHECK(m->stats().largest_free_bytes == 256);
  MallocResult d = m->Malloc(200, 0);  // best fit: the 256-byte hole
  CHECK(!d.oom);
  CHECK(m->stats().largest_free_bytes == 0);
  m->Free(c.block);  // the top block: extent back to 1280
  CHECK(m->stats().reserved_bytes == 1280);
  m->Free(b.block);
  m->Free(d.block);
  CHECK(m->stats().reserved_bytes == 0);
  CHECK(m->stats().peak_reserved_bytes == 1792);
}

TEST_CASE("options are validated with the field named") {
  AllocatorOptions o;
  o.max_split_size_bytes = 20 * MiB;
  CHECK(o.Validate().message().find("max_split_size") != std::string::npos);
  o = {};
  o.roundup_power2_divisions = 3;
  CHECK(o.Validate().message().find("roundup_power2_divisions") != std::string::npos);
  o = {};
  o.capacity_bytes = 0;
  CHECK(o.Validate().message().find("capacity_bytes") != std::string::npos);
  o = {};
  o.alignment_bytes = 100;
  CHECK(o.Validate().message().find("alignment_bytes") != std::string::npos);
  AllocatorKind k;
  CHECK(ParseAllocatorKind("best-fit", &k));
  CHECK(k == AllocatorKind::kBestFitArena);
  CHECK(!ParseAllocatorKind("bfc", &k));
}

}  // namespace
}  // namespace swapplan
