// ReadAllocatorRecording / AllocatorRecordingFromMemory
// (import/alloc_recording.h) on hand-made snapshots (JSON dumps of the dict
// _snapshot() returns), and the validation of what they read.
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "swapplan/import/alloc_recording.h"

namespace swapplan {
namespace {

// The recording of tests/alloc/recording_validation_test.cc's first case
// (A = 4294967296, B = 8589934592, C = 12884901888; MiB = 1048576), with a
// second stream (id 94000000000000) in the ring and PyTorch's
// allocator_settings (per-size divisions all 0, max_split_size -1):
//   20 MiB (entry 1), 60 MiB (3, 5, 6, 8), 50 MiB (11); the model the same.
constexpr char kSnapshot[] = R"({
 "segments": [
  {"device": 0, "address": 4294967296, "total_size": 20971520, "stream": 0,
   "segment_type": "large", "segment_pool_id": [0, 0], "is_expandable": false,
   "blocks": [{"address": 4294967296, "size": 8388608, "requested_size": 8388608,
               "state": "active_allocated"},
              {"address": 4303355904, "size": 12582912, "requested_size": 0,
               "state": "inactive"}]},
  {"device": 0, "address": 12884901888, "total_size": 31457280, "stream": 0,
   "segment_type": "large", "segment_pool_id": [0, 0], "is_expandable": false,
   "blocks": [{"address": 12884901888, "size": 31457280, "requested_size": 31457280,
               "state": "active_allocated"}]},
  {"device": 1, "address": 4096, "total_size": 2097152, "stream": 0, "blocks": []}
 ],
 "device_traces": [[
  {"action": "segment_alloc", "addr": 4294967296, "size": 20971520, "stream": 0},
  {"action": "alloc", "addr": 4294967296, "size": 4000000, "stream": 0},
  {"action": "segment_alloc", "addr": 8589934592, "size": 41943040, "stream": 0},
  {"action": "alloc", "addr": 8589934592, "size": 41943040, "stream": 0},
  {"action": "free_requested", "addr": 4294967296, "size": 4000000, "stream": 0},
  {"action": "free_completed", "addr": 4294967296, "size": 4000000, "stream": 0},
  {"action": "alloc", "addr": 4294967296, "size": 8388608, "stream": 0},
  {"action": "free_requested", "addr": 8589934592, "size": 41943040, "stream": 0},
  {"action": "free_completed", "addr": 8589934592, "size": 41943040, "stream": 0},
  {"action": "segment_free", "addr": 8589934592, "size": 41943040, "stream": 0},
  {"action": "segment_alloc", "addr": 12884901888, "size": 31457280, "stream": 0},
  {"action": "alloc", "addr": 12884901888, "size": 31457280, "stream": 0},
  {"action": "snapshot", "addr": 0, "size": 0, "stream": 94000000000000}
 ], []],
 "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
   "garbage_collection_threshold": 0.0, "expandable_segments": false,
   "roundup_power2_divisions": {"1": 0, "2": 0, "4": 0}}
})";

TEST_CASE("a snapshot's ring, segments and settings, and its validation", "[import][alloc]") {
  absl::StatusOr<AllocatorRecording> r = AllocatorRecordingFromMemory(kSnapshot, "snap.json");
  REQUIRE(r.ok());
  CHECK(r->device == 0);
  REQUIRE(r->events.size() == 13);
  CHECK(r->events[1].kind == RecordedAllocEvent::Kind::kAlloc);
  CHECK(r->events[1].address == 4294967296);
  CHECK(r->events[1].bytes == 4000000);
  CHECK(r->events[12].kind == RecordedAllocEvent::Kind::kSnapshot);
  CHECK(r->events[12].stream == 1);  // renumbered: the first stream other than 0
  REQUIRE(r->segments.size() == 2);  // device 1's segment is left out
  CHECK(r->segments[0].blocks.size() == 2);
  CHECK(r->segments[0].blocks[0].allocated);
  CHECK_FALSE(r->segments[0].blocks[1].allocated);
  CHECK_FALSE(r->segments[0].private_pool);
  CHECK(r->has_settings);
  CHECK(r->settings.max_split_size_bytes == kNoMaxSplitSize);
  CHECK(r->settings.roundup_power2_divisions == 0);
  CHECK(r->unmodelled_settings.empty());
  absl::StatusOr<ValidationReport> v = ValidateAgainstRecording(*r);
  REQUIRE(v.ok());
  CHECK(v->recorded_peak_reserved_bytes == 62914560);
  CHECK(v->model_peak_reserved_bytes == 62914560);
  CHECK(v->error_max_fraction == 0);
  CHECK(v->matching_layouts == 2);
  CHECK(v->within_tolerance);
}

TEST_CASE("recorded settings the model has, and those it lacks", "[import][alloc]") {
  const std::string snap =
      R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 0, "size": 1}]],
          "allocator_settings": {"max_split_size": 134217728, "expandable_segments": true,
            "garbage_collection_threshold": 0.8,
            "roundup_power2_divisions": {"1": 4, "2": 8}}})";
  absl::StatusOr<AllocatorRecording> r = AllocatorRecordingFromMemory(snap, "s.json");
  REQUIRE(r.ok());
  CHECK(r->settings.max_split_size_bytes == 134217728);
  CHECK(r->settings.expandable_segments);
  CHECK(r->unmodelled_settings ==
        std::vector<std::string>{
            "garbage-collection: threshold 0.8 (the model never frees cached blocks early)",
            "per-size-roundup: roundup_power2_divisions differs by size (the model has one "
            "value)"});
}

TEST_CASE("malformed recordings are refused with the entry named", "[import][alloc]") {
  auto err = [](const std::string& s) {
    return AllocatorRecordingFromMemory(s, "bad.json").status();
  };
  absl::Status no_size = err(R"({"device_traces": [[{"action": "alloc", "addr": 16}]]})");
  CHECK(no_size.code() == absl::StatusCode::kInvalidArgument);
  CHECK(no_size.message() ==
        "bad.json: device_traces[0][0]: has no non-negative 'size' [snapshot-schema]");
  absl::Status huge = err(
      R"({"device_traces": [[{"action": "alloc", "addr": 16, "size": 2251799813685248}]]})");
  CHECK(absl::StrContains(huge.message(), "'size' 2251799813685248 is above 1 PiB"));
  absl::Status negative = err(R"({"segments": [{"address": -4, "total_size": 0}]})");
  CHECK(negative.message() ==
        "bad.json: segments[0]: has no 'address' in [0, 2^62) [snapshot-schema]");
  absl::Status not_snapshot = err(R"({"nodes": [], "schema": "1.0.1"})");
  CHECK(absl::StrContains(not_snapshot.message(), "not a torch.cuda.memory._snapshot()"));
}

}  // namespace
}  // namespace swapplan
