// ValidateAgainstRecording (alloc/recording_validation.h) on hand-made
// recordings whose reserved bytes are worked out in the comments. MiB =
// 1,048,576 B; requests round up to 512 B.
#include <catch2/catch.hpp>

#include <memory>

#include "absl/strings/match.h"
#include "swapplan/alloc/recording_validation.h"

namespace swapplan {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
using K = RecordedAllocEvent::Kind;

RecordedAllocEvent Ev(K kind, int64_t address, int64_t bytes) {
  RecordedAllocEvent e;
  e.kind = kind;
  e.address = address;
  e.bytes = bytes;
  return e;
}

RecordedSegment Seg(int64_t address, int64_t bytes, std::vector<RecordedBlock> blocks) {
  RecordedSegment s;
  s.address = address;
  s.bytes = bytes;
  s.blocks = std::move(blocks);
  return s;
}

constexpr int64_t kA = 0x100000000, kB = 0x200000000, kC = 0x300000000;

// A recording from the first allocation, PyTorch's defaults:
//   0 segment_alloc A 20 MiB   1 alloc A 4,000,000 (block 4,000,256; a
//     request in [1, 10) MiB opens 20 MiB, 16,971,264 B stay free)  -> 20 MiB
//   2 segment_alloc B 40 MiB   3 alloc B 40 MiB (the free 16.2 MB block is
//     too small: a segment of the request)                           -> 60 MiB
//   4 free_requested A  5 free_completed A (A's segment wholly free)  -> 60 MiB
//   6 alloc A 8 MiB (best fit: A's 20 MiB block, split, 12 MiB free)  -> 60 MiB
//   7 free_requested B  8 free_completed B                           -> 60 MiB
//   9 segment_free B 40 MiB (empty_cache: B is the only free segment)
//  10 segment_alloc C 30 MiB  11 alloc C 30 MiB (12 MiB free too small) -> 50 MiB
// At the end: A [8 MiB allocated | 12 MiB free], C [30 MiB allocated].
AllocatorRecording FirstAllocationRecording() {
  AllocatorRecording r;
  r.source = "hand-made";
  r.events = {Ev(K::kSegmentAlloc, kA, 20 * kMiB), Ev(K::kAlloc, kA, 4'000'000),
              Ev(K::kSegmentAlloc, kB, 40 * kMiB), Ev(K::kAlloc, kB, 40 * kMiB),
              Ev(K::kFreeRequested, kA, 4'000'000), Ev(K::kFreeCompleted, kA, 4'000'000),
              Ev(K::kAlloc, kA, 8 * kMiB),
              Ev(K::kFreeRequested, kB, 40 * kMiB), Ev(K::kFreeCompleted, kB, 40 * kMiB),
              Ev(K::kSegmentFree, kB, 40 * kMiB),
              Ev(K::kSegmentAlloc, kC, 30 * kMiB), Ev(K::kAlloc, kC, 30 * kMiB)};
  r.segments = {Seg(kA, 20 * kMiB, {{kA, 8 * kMiB, 8 * kMiB, true},
                                    {kA + 8 * kMiB, 12 * kMiB, 0, false}}),
                Seg(kC, 30 * kMiB, {{kC, 30 * kMiB, 30 * kMiB, true}})};
  return r;
}

TEST_CASE("a recording the model follows: every reserved figure and segment matches",
          "[alloc][validation]") {
  absl::StatusOr<ValidationReport> v = ValidateAgainstRecording(FirstAllocationRecording());
  REQUIRE(v.ok());
  CHECK(v->events == 12);
  CHECK(v->compared_events == 6);  // entries 1, 3, 5, 6, 8, 11
  CHECK(v->initial_reserved_bytes == 0);
  CHECK(v->error_max_fraction == 0);
  CHECK(v->error_p99_fraction == 0);
  CHECK(v->recorded_peak_reserved_bytes == 60 * kMiB);
  CHECK(v->model_peak_reserved_bytes == 60 * kMiB);
  CHECK(v->recorded_final_reserved_bytes == 50 * kMiB);
  CHECK(v->model_final_reserved_bytes == 50 * kMiB);
  CHECK(v->recorded_segment_allocs == 3);
  CHECK(v->model_segment_allocs == 3);
  CHECK(v->matched_segment_allocs == 3);
  CHECK(v->divergences == 0);
  CHECK(v->releases_replayed == 1);
  CHECK(v->recorded_segments == 2);
  CHECK(v->model_segments == 2);
  CHECK(v->matching_segments == 2);
  CHECK(v->matching_layouts == 2);
  CHECK(v->missing_rules.empty());
  CHECK(v->within_tolerance);
}

TEST_CASE("a segment the model does not open: the error per event and the divergence",
          "[alloc][validation]") {
  // 0 segment_alloc X 20 MiB, 1 alloc X 4,000,000 -> 20 MiB both;
  // 2 segment_alloc Y 20 MiB, 3 alloc Y 4,000,000: the model splits X's
  // free 16,971,264 B instead -> recorded 40 MiB, model 20 MiB: 50 %.
  // Errors [0, 0.5]: p50 (rank ceil(0.5 x 2) = 1) 0, p90 and p99 (rank 2) 0.5.
  AllocatorRecording r;
  r.events = {Ev(K::kSegmentAlloc, kA, 20 * kMiB), Ev(K::kAlloc, kA, 4'000'000),
              Ev(K::kSegmentAlloc, kB, 20 * kMiB), Ev(K::kAlloc, kB, 4'000'000)};
  r.segments = {Seg(kA, 20 * kMiB, {{kA, 4'000'256, 4'000'000, true},
                                    {kA + 4'000'256, 16'971'264, 0, false}}),
                Seg(kB, 20 * kMiB, {{kB, 4'000'256, 4'000'000, true},
                                    {kB + 4'000'256, 16'971'264, 0, false}})};
  absl::StatusOr<ValidationReport> v = ValidateAgainstRecording(r);
  REQUIRE(v.ok());
  CHECK(v->error_p50_fraction == 0);
  CHECK(v->error_p90_fraction == Approx(0.5));
  CHECK(v->error_max_fraction == Approx(0.5));
  CHECK(v->error_max_bytes == 20 * kMiB);
  CHECK(v->error_max_event == 3);
  CHECK(v->peak_error_fraction == Approx(0.5));
  CHECK(v->matched_segment_allocs == 1);
  CHECK(v->divergences == 1);
  REQUIRE(v->divergence_notes.size() == 1);
  CHECK(v->divergence_notes[0] ==
        "event 3: alloc of 4000000 B (stream 0): the recording opened 20971520 B of segments, "
        "the model reused a cached block");
  // The model has one segment: only A's pool, stream and size match.
  CHECK(v->matching_segments == 1);
  CHECK_FALSE(v->within_tolerance);
}

TEST_CASE("a recording that starts late is seeded from the segments at the end",
          "[alloc][validation]") {
  // Segment S (20 MiB) holds before the ring P (6 MiB, never freed) and Q
  // (3,000,000 requested, freed by the ring: size inferred, 3,000,320, and
  // split off since 11,679,744 B > 1 MiB would remain). The ring frees Q
  // (14 MiB free from S + 6 MiB) and allocates R 5,000,000 (5,000,192):
  // best fit, that free block, split. Reserved stays 20 MiB; at the end S is
  // [P 6 MiB | R 5,000,192 | 9,679,872 free], as recorded.
  const int64_t s = kA, q = kA + 6 * kMiB;
  AllocatorRecording r;
  r.events = {Ev(K::kFreeRequested, q, 3'000'000), Ev(K::kFreeCompleted, q, 3'000'000),
              Ev(K::kAlloc, q, 5'000'000)};
  r.segments = {Seg(s, 20 * kMiB, {{s, 6 * kMiB, 6 * kMiB, true},
                                   {q, 5'000'192, 5'000'000, true},
                                   {q + 5'000'192, 9'679'872, 0, false}})};
  absl::StatusOr<ValidationReport> v = ValidateAgainstRecording(r);
  REQUIRE(v.ok());
  CHECK(v->initial_reserved_bytes == 20 * kMiB);
  CHECK(v->initial_segments == 1);
  CHECK(v->initial_blocks == 2);
  CHECK(v->inferred_blocks == 1);
  CHECK(v->compared_events == 2);
  CHECK(v->error_max_fraction == 0);
  CHECK(v->matching_layouts == 1);
  CHECK(v->missing_rules.empty());
  CHECK(v->within_tolerance);
}

TEST_CASE("what the model lacks is named", "[alloc][validation]") {
  AllocatorRecording r = FirstAllocationRecording();
  RecordedAllocEvent user;
  user.kind = K::kOther;
  user.action = "user_defined";
  r.events.push_back(user);
  // A free of a block in no segment at all.
  r.events.push_back(Ev(K::kFreeCompleted, 0x900000000, 1000));
  r.segments[1].private_pool = true;
  r.unmodelled_settings.push_back("garbage-collection: threshold 0.8");
  absl::StatusOr<ValidationReport> v = ValidateAgainstRecording(r);
  REQUIRE(v.ok());
  CHECK(v->missing_rules == std::vector<std::string>{
                                "garbage-collection: threshold 0.8",
                                "event-kind: 1 'user_defined' events (no rule in the model)",
                                "private-pool: 1 segments belong to CUDA graph private pools "
                                "(replayed as the default pool)",
                                "seed: 1 blocks allocated before the ring lie in no segment "
                                "reserved then",
                                "unknown-free: 1 frees of blocks neither the ring nor the "
                                "segments account for"});
}

TEST_CASE("validation refuses what it cannot run", "[alloc][validation]") {
  absl::StatusOr<ValidationReport> empty = ValidateAgainstRecording(AllocatorRecording{});
  CHECK(empty.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(empty.status().message(), "no allocation trace"));
  ValidationOptions o;
  o.allocator.kind = AllocatorKind::kBestFitArena;
  CHECK(absl::StrContains(o.Validate().message(), "validates the cuda-caching model only"));
  o = {};
  o.tolerance_fraction = 2;
  CHECK(absl::StrContains(o.Validate().message(), "tolerance_fraction is 2"));
}

TEST_CASE("a seeded segment's blocks must fit it", "[alloc][validation]") {
  std::unique_ptr<AllocatorModel> m = MakeAllocatorModel({});
  // 2 MiB small segment: a block at 1 MiB of 1.5 MiB runs past its end.
  absl::StatusOr<std::vector<AllocBlockId>> bad =
      m->AddSegment(2 * kMiB, 0, /*large=*/false, {{kMiB, 3 * kMiB / 2, 100}});
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad.status().message(), "seeded block 0"));
  // [1 MiB allocated | 1 MiB free]: 2 MiB reserved, 1 MiB allocated; a
  // 1 MiB request takes the free block (no new segment).
  absl::StatusOr<std::vector<AllocBlockId>> ok =
      m->AddSegment(2 * kMiB, 0, /*large=*/false, {{0, kMiB, kMiB}});
  REQUIRE(ok.ok());
  CHECK(m->stats().reserved_bytes == 2 * kMiB);
  CHECK(m->stats().allocated_bytes == kMiB);
  m->Malloc(kMiB, 0);
  CHECK(m->stats().reserved_bytes == 2 * kMiB);
  CHECK(m->stats().segments == 1);
}

}  // namespace
}  // namespace swapplan
