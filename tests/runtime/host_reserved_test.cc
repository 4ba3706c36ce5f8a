// The host backend's device memory under the allocator models
// (HostBackendOptions::allocator): its reserved figure against the model
// fed the same allocations and frees (curve/reserved_curve.h's replay), and
// an allocation that fits by bytes in use but not by reserved bytes. The
// sequence is docs/allocator.md's worked example: W (30 MiB) resident; op 0
// allocates A (30 MiB); op 1 B (4 MiB), then frees A; op 2 C (40 MiB), then
// frees B; op 3 nothing. Caching allocator, reserved during ops 0-3:
// 60, 80, 120, 120 MiB (A's and B's segments stay cached; C needs its own).
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "swapplan/curve/reserved_curve.h"
#include "swapplan/runtime/host_backend.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

AllocationSequence WorkedExample() {
  using K = AllocationStep::Kind;
  AllocationSequence s;
  s.num_positions = 4;
  s.slot_tensor = {0, 1, 2, 3};  // W, A, B, C
  s.steps = {{K::kAlloc, -1, 0, 30 * kMiB}, {K::kAlloc, 0, 1, 30 * kMiB},
             {K::kAlloc, 1, 2, 4 * kMiB},   {K::kFree, 1, 1, 30 * kMiB},
             {K::kAlloc, 2, 3, 40 * kMiB},  {K::kFree, 2, 2, 4 * kMiB}};
  return s;
}

std::unique_ptr<HostBackend> Make(int64_t capacity, AllocatorKind kind) {
  HostBackendOptions o;
  o.device.capacity_bytes = capacity;
  o.device.h2d_bandwidth_bytes_per_s = o.device.d2h_bandwidth_bytes_per_s = 1e9;
  o.allocator.kind = kind;
  absl::StatusOr<std::unique_ptr<HostBackend>> b = HostBackend::Create(o);
  REQUIRE(b.ok());
  return std::move(*b);
}

struct Executed {
  std::vector<int64_t> reserved_bytes;  // during each position
  int32_t ooms = 0;
  int32_t first_oom_position = -1;
  std::string first_oom;
};

// Runs the sequence's allocations and frees through the backend, reading
// its reserved counter after each position's allocations (before its frees,
// where the curve measures "during the op").
Executed Execute(HostBackend& b, const AllocationSequence& s) {
  Executed e;
  std::vector<void*> slot(s.slot_tensor.size(), nullptr);
  size_t k = 0;
  for (int32_t pos = -1; pos < s.num_positions; ++pos) {
    for (; k < s.steps.size() && s.steps[k].position == pos &&
           s.steps[k].kind == AllocationStep::Kind::kAlloc;
         ++k) {
      absl::StatusOr<void*> p = b.AllocAsync(s.steps[k].bytes, b.ComputeStream());
      if (!p.ok()) {
        if (e.ooms++ == 0) {
          e.first_oom_position = pos;
          e.first_oom = std::string(p.status().message());
        }
        continue;
      }
      slot[s.steps[k].slot] = *p;
    }
    if (pos >= 0) e.reserved_bytes.push_back(b.counters().arena_reserved_bytes);
    for (; k < s.steps.size() && s.steps[k].position == pos; ++k) {
      void*& p = slot[s.steps[k].slot];
      if (p != nullptr) REQUIRE(b.FreeAsync(p, b.ComputeStream()).ok());
      p = nullptr;
    }
  }
  return e;
}

TEST_CASE("host backend with the caching model: its reserved bytes are the model's",
          "[host-backend][alloc]") {
  const AllocationSequence s = WorkedExample();
  AllocatorOptions model;  // cuda-caching, PyTorch's defaults, unlimited
  absl::StatusOr<ReservedCurve> predicted = ReplayAllocations(s, model);
  REQUIRE(predicted.ok());
  REQUIRE(predicted->reserved_bytes ==
          std::vector<int64_t>{60 * kMiB, 80 * kMiB, 120 * kMiB, 120 * kMiB});
  auto b = Make(int64_t{1} << 30, AllocatorKind::kCudaCaching);
  const Executed e = Execute(*b, s);
  CHECK(e.reserved_bytes == predicted->reserved_bytes);
  CHECK(e.ooms == 0);
  CHECK(b->counters().arena_peak_reserved_bytes == predicted->peak_reserved_bytes);
  // In use at the end: W and C, 70 MiB (exact bytes, as before).
  CHECK(b->counters().arena_in_use_bytes == 70 * kMiB);
}

TEST_CASE("host backend: fits by bytes in use, not by the caching allocator's reserved bytes",
          "[host-backend][alloc]") {
  const AllocationSequence s = WorkedExample();
  // 80 MiB: C needs a 40 MiB segment with 80 MiB reserved; releasing A's
  // cached segment leaves 50 + 40 = 90 MiB > 80: an OOM at op 2 with 74 MiB
  // in use. The model with that capacity predicts the same.
  AllocatorOptions model;
  model.capacity_bytes = 80 * kMiB;
  absl::StatusOr<ReservedCurve> predicted = ReplayAllocations(s, model);
  REQUIRE(predicted.ok());
  CHECK(predicted->ooms == 1);
  CHECK(predicted->first_oom_position == 2);
  auto caching = Make(80 * kMiB, AllocatorKind::kCudaCaching);
  const Executed e = Execute(*caching, s);
  CHECK(e.ooms == 1);
  CHECK(e.first_oom_position == 2);
  CHECK(absl::StrContains(e.first_oom, "cannot place them within 83886080 reserved bytes"));
  // The arena on bytes in use: 74 MiB fit in 80.
  auto arena = Make(80 * kMiB, AllocatorKind::kBestFitArena);
  CHECK(Execute(*arena, s).ooms == 0);
  // With 100 MiB the retry after releasing A's segment fits: 90 MiB at op 2.
  auto roomy = Make(100 * kMiB, AllocatorKind::kCudaCaching);
  const Executed r = Execute(*roomy, s);
  CHECK(r.ooms == 0);
  CHECK(r.reserved_bytes[2] == 90 * kMiB);
}

TEST_CASE("host backend's arena is the best-fit model: its extent is the model's reserved bytes",
          "[host-backend][alloc]") {
  // Best fit, 256-byte aligned: W [0, 30), A [30, 60), B [60, 64); A freed
  // leaves a 30 MiB hole C (40 MiB) does not fit: C at [64, 104). Extent
  // during ops 0-3: 60, 64, 104, 104 MiB.
  const AllocationSequence s = WorkedExample();
  AllocatorOptions model;
  model.kind = AllocatorKind::kBestFitArena;
  absl::StatusOr<ReservedCurve> predicted = ReplayAllocations(s, model);
  REQUIRE(predicted.ok());
  REQUIRE(predicted->reserved_bytes ==
          std::vector<int64_t>{60 * kMiB, 64 * kMiB, 104 * kMiB, 104 * kMiB});
  auto b = Make(int64_t{1} << 30, AllocatorKind::kBestFitArena);
  CHECK(Execute(*b, s).reserved_bytes == predicted->reserved_bytes);
}

TEST_CASE("host backend refuses caching options that do not validate", "[host-backend][alloc]") {
  HostBackendOptions o;
  o.device.capacity_bytes = kMiB;
  o.device.h2d_bandwidth_bytes_per_s = o.device.d2h_bandwidth_bytes_per_s = 1e9;
  o.allocator.kind = AllocatorKind::kCudaCaching;
  o.allocator.max_split_size_bytes = kMiB;
  absl::Status s = o.Validate();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(s.message(), "host backend: allocator options: max_split_size_bytes"));
}

}  // namespace
}  // namespace swapplan::runtime
