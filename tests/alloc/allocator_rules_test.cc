// The allocator models' rules, each on a hand-made sequence whose reserved
// bytes are worked out in the comments (PyTorch's constants: 512 B blocks,
// 1 MiB small limit, 2 MiB small segments, 20 MiB segments for 1-10 MiB
// requests, 2 MiB rounding of larger segments).
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
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

TEST_CASE("seeded ranges of expandable segments: pages, distance, merging") {
  AllocatorOptions o;
  o.expandable_segments = true;
  auto m = Caching(o);
  // A recording that starts late: two mapped ranges of stream 0's large
  // expandable segment (20 MiB pages). [0, 40): a 30 MiB block, 10 free;
  // the second range a page away, at [60, 80), all free. 60 MiB reserved.
  absl::StatusOr<std::vector<AllocBlockId>> first =
      m->AddSegment(40 * MiB, 0, /*large=*/true, {{0, 30 * MiB, 30 * MiB}});
  REQUIRE(first.ok());
  REQUIRE(first->size() == 1);
  REQUIRE(m->AddSegment(20 * MiB, 0, true, {}).ok());
  CHECK(m->stats().reserved_bytes == 60 * MiB);
  CHECK(m->stats().allocated_bytes == 30 * MiB);
  CHECK(m->stats().segments == 1);  // one expandable segment (address space)
  std::vector<AllocSegmentInfo> s = m->Segments();
  REQUIRE(s.size() == 2);
  CHECK(s[0].bytes == 40 * MiB);
  CHECK(s[1].address == 60 * MiB);
  CHECK(s[1].bytes == 20 * MiB);
  // 25 MiB: the free [30, 40) grows into the unmapped page [40, 60), which
  // joins the second range: one mapping [0, 80), 80 MiB reserved; the block
  // is [30, 55).
  MallocResult a = m->Malloc(25 * MiB, 0);
  CHECK(a.address == 30 * MiB);
  CHECK(m->stats().reserved_bytes == 80 * MiB);
  CHECK(m->stats().allocated_bytes == 55 * MiB);
  s = m->Segments();
  REQUIRE(s.size() == 1);
  CHECK(s[0].bytes == 80 * MiB);
  // The seeded block freed, empty_cache: [0, 30) is free, its whole page
  // [0, 20) goes back; [55, 80) holds the page [60, 80): 40 MiB stay.
  m->Free((*first)[0]);
  m->EmptyCache();
  CHECK(m->stats().reserved_bytes == 40 * MiB);
  // Ranges must be whole pages of their pool: 30 MiB is not (large, 20 MiB).
  absl::StatusOr<std::vector<AllocBlockId>> bad = m->AddSegment(30 * MiB, 0, true, {});
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad.status().message(), "whole 20971520-byte pages"));
  // The small pool has its own segment and 2 MiB pages.
  REQUIRE(m->AddSegment(2 * MiB, 0, /*large=*/false, {}).ok());
  CHECK(m->stats().reserved_bytes == 42 * MiB);
  CHECK(m->stats().segments == 2);
}

TEST_CASE("seeded expandable ranges keep their recorded distance") {
  AllocatorOptions o;
  o.expandable_segments = true;
  auto m = Caching(o);
  // Recorded at 1000 MiB and 1100 MiB: the first fixes the offset (model
  // address 0), the second lands 100 MiB above it.
  m->PlaceNextSegmentAt(1000 * MiB);
  REQUIRE(m->AddSegment(20 * MiB, 0, true, {}).ok());
  m->PlaceNextSegmentAt(1100 * MiB);
  REQUIRE(m->AddSegment(40 * MiB, 0, true, {{20 * MiB, 20 * MiB, 20 * MiB}}).ok());
  std::vector<AllocSegmentInfo> s = m->Segments();
  REQUIRE(s.size() == 2);
  CHECK(s[0].address == 0);
  CHECK(s[1].address == 100 * MiB);
  REQUIRE(s[1].blocks.size() == 2);  // [20 free][20 allocated]
  CHECK(!s[1].blocks[0].allocated);
  CHECK(s[1].blocks[1].allocated);
  // A placement that would overlap a mapped range falls back to the lowest
  // free spot a page away: [40, 60) (after [0, 20) and a page gap).
  m->PlaceNextSegmentAt(1010 * MiB);
  REQUIRE(m->AddSegment(20 * MiB, 0, true, {}).ok());
  s = m->Segments();
  REQUIRE(s.size() == 3);
  CHECK(s[1].address == 40 * MiB);
  CHECK(m->stats().reserved_bytes == 80 * MiB);
}

TEST_CASE("best-fit arena: a seeded range stays reserved") {
  AllocatorOptions o;
  o.kind = AllocatorKind::kBestFitArena;  // 256-byte alignment
  auto m = MakeAllocatorModel(o);
  MallocResult a = m->Malloc(1000, 0);  // [0, 1024)
  // A recorded range of 4096 B on top: [1024, 2048) free, [2048, 3072) a
  // block of 1000 requested bytes, [3072, 5120) free. Extent 5120.
  absl::StatusOr<std::vector<AllocBlockId>> ids =
      m->AddSegment(4096, 0, true, {{1024, 1024, 1000}});
  REQUIRE(ids.ok());
  CHECK(m->stats().reserved_bytes == 5120);
  CHECK(m->stats().allocated_bytes == 2048);
  CHECK(m->stats().requested_bytes == 2000);
  CHECK(m->stats().largest_free_bytes == 2048);
  m->Free(a.block);  // [0, 1024) joins the hole above it: [0, 2048)
  CHECK(m->stats().largest_free_bytes == 2048);
  m->Free((*ids)[0]);  // all free; the extent stays at the seeded 5120
  CHECK(m->stats().reserved_bytes == 5120);
  CHECK(m->stats().allocated_bytes == 0);
  CHECK(m->stats().largest_free_bytes == 5120);
  MallocResult b = m->Malloc(5000, 0);  // 5120: the one hole, no growth
  CHECK(b.address == 0);
  CHECK(m->stats().reserved_bytes == 5120);
  std::vector<AllocSegmentInfo> s = m->Segments();
  REQUIRE(s.size() == 1);
  CHECK(s[0].bytes == 5120);
  // A range must be a multiple of the alignment; blocks must fit it.
  CHECK(m->AddSegment(1000, 0, true, {}).status().code() == absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<AllocBlockId>> over = m->AddSegment(1024, 0, true, {{512, 1024, 0}});
  CHECK(over.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(over.status().message(), "seeded block 0"));
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
