// Reserved-bytes curve on a hand-made trace; values worked out in comments.
#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/curve/reserved_curve.h"

namespace swapplan {
namespace {

constexpr int64_t MiB = int64_t{1} << 20;

// W 30 MiB parameter; op 0: W -> A 30 MiB; op 1: A -> B 4 MiB (A's last
// use); op 2: B -> C 40 MiB (B's last use); op 3: C, W (C's last use).
//   before: W: a 30 MiB segment                              reserved 30
//   op 0: A: a 30 MiB segment                                reserved 60, requested 60
//   op 1: B: a 20 MiB segment (4 used, 16 free)              reserved 80, requested 64
//         then A is freed: its 30 MiB segment is cached
//   op 2: C 40 MiB: 30 and 16 MiB free blocks are too small: reserved 120, requested 74
//         then B is freed
//   op 3: nothing new                                        reserved 120, requested 70
// Peak: 120 MiB at op 2 (allocated 74: 46 MiB fragmentation), the free
// segments at it: A's 30 MiB (nothing in it) and B's 20 MiB (16 MiB free,
// pinned by B).
const char* kTrace = R"({
 "format": "swapplan-trace",
 "tensors": [
  {"id": 1, "size_bytes": 31457280, "kind": "PARAMETER"},
  {"id": 2, "size_bytes": 31457280, "kind": "ACTIVATION"},
  {"id": 3, "size_bytes": 4194304, "kind": "ACTIVATION"},
  {"id": 4, "size_bytes": 41943040, "kind": "ACTIVATION"}
 ],
 "iterations": [{"ops": [
  {"name": "a", "phase": "FORWARD", "inputs": [1], "outputs": [2]},
  {"name": "b", "phase": "FORWARD", "inputs": [2], "outputs": [3]},
  {"name": "c", "phase": "FORWARD", "inputs": [3], "outputs": [4]},
  {"name": "d", "phase": "BACKWARD", "inputs": [4, 1], "outputs": []}
 ]}]
})";

TEST_CASE("reserved curve: cached segments a larger request cannot reuse") {
  Trace t = testing::TraceFromJson(kTrace);
  absl::StatusOr<AllocationSequence> s = SequenceOfIteration(t, 0);
  REQUIRE(s.ok());
  absl::StatusOr<ReservedCurve> c = ReplayAllocations(*s, AllocatorOptions{});
  REQUIRE(c.ok());
  CHECK(c->reserved_bytes == std::vector<int64_t>{60 * MiB, 80 * MiB, 120 * MiB, 120 * MiB});
  CHECK(c->requested_bytes == std::vector<int64_t>{60 * MiB, 64 * MiB, 74 * MiB, 70 * MiB});
  CHECK(c->peak_reserved_bytes == 120 * MiB);
  CHECK(c->peak_position == 2);
  CHECK(c->peak_requested_bytes == 74 * MiB);
  CHECK(c->fragmentation_at_peak_bytes() == 46 * MiB);
  CHECK(c->largest_free_bytes[2] == 30 * MiB);
  REQUIRE(c->pinned.size() == 2);
  CHECK(c->pinned[0].free_bytes == 30 * MiB);
  CHECK(c->pinned[0].tensors.empty());
  CHECK(c->pinned[1].bytes == 20 * MiB);
  CHECK(c->pinned[1].free_bytes == 16 * MiB);
  CHECK(c->pinned[1].tensors == std::vector<TensorId>{2});  // B
  CHECK(c->ooms == 0);

  // At a 100 MiB capacity C's segment would need 30 + 20 + 30 + 40 = 120:
  // the retry releases A's cached 30 MiB segment -> 90 MiB, no OOM.
  AllocatorOptions cap;
  cap.capacity_bytes = 100 * MiB;
  c = ReplayAllocations(*s, cap);
  REQUIRE(c.ok());
  CHECK(c->peak_reserved_bytes == 90 * MiB);
  CHECK(c->ooms == 0);
  // At 80 MiB even that is not enough: 90 > 80, an OOM at op 2.
  cap.capacity_bytes = 80 * MiB;
  c = ReplayAllocations(*s, cap);
  REQUIRE(c.ok());
  CHECK(c->ooms == 1);
  CHECK(c->first_oom_position == 2);

  // The best-fit arena: W [0,30) A [30,60) B [60,64); A freed leaves the hole
  // [30,60); C (40) goes at the top [64,104): extent 104 MiB.
  AllocatorOptions arena;
  arena.kind = AllocatorKind::kBestFitArena;
  c = ReplayAllocations(*s, arena);
  REQUIRE(c.ok());
  CHECK(c->reserved_bytes == std::vector<int64_t>{60 * MiB, 64 * MiB, 104 * MiB, 104 * MiB});
}

TEST_CASE("reserved curve: the sequence is allocations then frees per position") {
  Trace t = testing::TraceFromJson(kTrace);
  absl::StatusOr<AllocationSequence> s = SequenceOfIteration(t, 0);
  REQUIRE(s.ok());
  // W before; A at 0; B at 1, A freed after 1; C at 2, B freed; C freed after 3.
  std::vector<std::tuple<int, int32_t, int32_t>> got;
  for (const AllocationStep& st : s->steps) {
    got.emplace_back(static_cast<int>(st.kind), st.position, st.slot);
  }
  const int a = static_cast<int>(AllocationStep::Kind::kAlloc);
  const int f = static_cast<int>(AllocationStep::Kind::kFree);
  CHECK(got == std::vector<std::tuple<int, int32_t, int32_t>>{
                   {a, -1, 0}, {a, 0, 1}, {a, 1, 2}, {f, 1, 1}, {a, 2, 3}, {f, 2, 2}, {f, 3, 3}});
  AllocationSequence bad = *s;
  bad.steps.push_back({AllocationStep::Kind::kFree, 3, 1, 0, 0});
  absl::StatusOr<ReservedCurve> c = ReplayAllocations(bad, AllocatorOptions{});
  CHECK(!c.ok());
  CHECK(c.status().message().find("not allocated") != std::string::npos);
}

}  // namespace
}  // namespace swapplan
