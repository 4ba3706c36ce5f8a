// Op timelines: Eq. (1) estimates, recorded durations, the auto rule, and
// the op during which a time falls.
#include <catch2/catch.hpp>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/trace/op_times.h"

namespace swapplan {
namespace {

// Four ops; durations 10, 20, 30, 40 ns on all or on some of them.
std::string FourOps(bool all_durations, int64_t wall) {
  return std::string(R"({"format": "swapplan-trace", "metadata": {},
    "tensors": [{"id": 1, "size_bytes": 100, "kind": "ACTIVATION"}],
    "iterations": [{"wall_time_ns": )") +
         std::to_string(wall) + R"(, "ops": [
      {"name": "a", "phase": "FORWARD", "outputs": [1], "duration_ns": 10},
      {"name": "b", "phase": "FORWARD", "inputs": [1], "duration_ns": 20},
      {"name": "c", "phase": "BACKWARD", "inputs": [1])" +
         (all_durations ? R"(, "duration_ns": 30)" : "") + R"(},
      {"name": "d", "phase": "BACKWARD", "inputs": [1], "duration_ns": 40}]}]})";
}

TEST_CASE("op times: Eq. (1) gives every op T_iter / N_iter", "[op_times]") {
  Trace t = testing::TraceFromJson(FourOps(false, 1000));
  absl::StatusOr<OpTimeline> tl = OpTimeline::Build(t, 0, OpTimeModel::kEq1);
  REQUIRE(tl.ok());
  CHECK(tl->source() == DurationSource::kEstimated);
  CHECK(tl->iteration_time_ns() == 1000);
  // 1000 / 4 = 250 ns per op.
  CHECK(tl->start_ns(0) == 0);
  CHECK(tl->end_ns(0) == 250);
  CHECK(tl->start_ns(2) == 500);
  CHECK(tl->end_ns(3) == 1000);
  CHECK(tl->duration_ns(1) == 250);
  // A copy completing at 500 ns completes during op 1 (ending exactly
  // then); at 500.5 during op 2; past the end: num_ops().
  CHECK(tl->OpEndingAtOrAfter(500) == 1);
  CHECK(tl->OpEndingAtOrAfter(500.5) == 2);
  CHECK(tl->OpEndingAtOrAfter(0) == 0);
  CHECK(tl->OpEndingAtOrAfter(1001) == 4);
  // An explicit iteration time replaces the wall time: 400 / 4 = 100.
  absl::StatusOr<OpTimeline> o = OpTimeline::Build(t, 0, OpTimeModel::kEq1, 400);
  REQUIRE(o.ok());
  CHECK(o->end_ns(1) == 200);
  // Eq. (1) shares T exactly in integers: 1000 over 3 ops is 333, 333, 334
  // (floor((k+1)T/m) - floor(kT/m)).
  Trace three = testing::TraceFromJson(R"({"iterations": [{"wall_time_ns": 1000, "ops": [
      {"name": "a", "phase": "FORWARD"}, {"name": "b", "phase": "FORWARD"},
      {"name": "c", "phase": "BACKWARD"}]}]})");
  absl::StatusOr<OpDurations> d = ComputeOpDurations(three, 0);
  REQUIRE(d.ok());
  CHECK(d->duration_ns == std::vector<int64_t>{333, 333, 334});
  CHECK(d->total_ns == 1000);
}

TEST_CASE("op times: auto with some durations shares the rest (mixed)", "[op_times]") {
  // a 10, b 20, d 40 recorded; c gets 1000 - 70 = 930.
  Trace t = testing::TraceFromJson(FourOps(false, 1000));
  absl::StatusOr<OpTimeline> tl = OpTimeline::Build(t, 0, OpTimeModel::kAuto);
  REQUIRE(tl.ok());
  CHECK(tl->source() == DurationSource::kMixed);
  CHECK(tl->end_ns(1) == 30);
  CHECK(tl->end_ns(2) == 960);
  CHECK(tl->total_ns() == 1000);
}

TEST_CASE("op times: recorded durations back to back", "[op_times]") {
  Trace t = testing::TraceFromJson(FourOps(true, 1000));
  absl::StatusOr<OpTimeline> tl = OpTimeline::Build(t, 0, OpTimeModel::kAuto);
  REQUIRE(tl.ok());
  CHECK(tl->source() == DurationSource::kRecorded);
  // 10, 20, 30, 40 -> ends 10, 30, 60, 100.
  CHECK(tl->end_ns(0) == 10);
  CHECK(tl->end_ns(1) == 30);
  CHECK(tl->start_ns(3) == 60);
  CHECK(tl->total_ns() == 100);
  CHECK(tl->iteration_time_ns() == 100);
  // eq1 can still be asked for: 1000 / 4.
  CHECK(OpTimeline::Build(t, 0, OpTimeModel::kEq1)->end_ns(0) == 250);
}

TEST_CASE("op times: missing inputs are errors", "[op_times]") {
  Trace no_wall = testing::TraceFromJson(FourOps(false, 0));
  absl::StatusOr<OpTimeline> a = OpTimeline::Build(no_wall, 0, OpTimeModel::kAuto);
  CHECK(a.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(a.status().message() ==
        "test.json: iteration 0: 1 of 4 ops have no duration and Eq. (1) needs the iteration's "
        "wall time, which was not recorded (give the iteration time, or record op durations)");
  absl::StatusOr<OpTimeline> b = OpTimeline::Build(no_wall, 0, OpTimeModel::kRecorded);
  CHECK(b.status().message() ==
        "test.json: iteration 0: op times 'recorded' need a duration on every op, and 1 of 4 "
        "ops have none");
  CHECK(OpTimeline::Build(no_wall, 3, OpTimeModel::kAuto).status().message() ==
        "iteration 3 is out of range (test.json has 1 iterations)");
}

TEST_CASE("op times: names and transfer times", "[op_times]") {
  OpTimeModel m;
  REQUIRE(ParseOpTimeModel("recorded", &m));
  CHECK(m == OpTimeModel::kRecorded);
  CHECK_FALSE(ParseOpTimeModel("exact", &m));
  CHECK(OpTimeModelName(OpTimeModel::kEq1) == "eq1");
  // Eq. (3): 100 bytes at 1 GB/s = 100 ns exactly; 3 bytes at 2 B/ns = 1.5.
  CHECK(TransferNs(100, 1e9) == 100.0);
  CHECK(TransferNs(3, 2e9) == 1.5);
}

TEST_CASE("op times: the device's compute_time_scale scales recorded times", "[op_times]") {
  // All four recorded (10, 20, 30, 40 ns), on a device twice as slow: 20,
  // 40, 60, 80 ns.
  Trace t = testing::TraceFromJson(FourOps(true, 1000));
  absl::StatusOr<OpDurations> d = ComputeOpDurations(t, 0, OpTimeModel::kAuto, 0, 2.0);
  REQUIRE(d.ok());
  CHECK(d->duration_ns == std::vector<int64_t>{20, 40, 60, 80});
  CHECK(d->total_ns == 200);
  // Eq. (1) shares the recorded wall time, scaled too: 1000 * 0.5 / 4 = 125.
  d = ComputeOpDurations(t, 0, OpTimeModel::kEq1, 0, 0.5);
  REQUIRE(d.ok());
  CHECK(d->duration_ns == std::vector<int64_t>{125, 125, 125, 125});
  // An explicit iteration time is taken as given: 400 / 4 = 100.
  d = ComputeOpDurations(t, 0, OpTimeModel::kEq1, 400, 0.5);
  REQUIRE(d.ok());
  CHECK(d->duration_ns == std::vector<int64_t>{100, 100, 100, 100});
  // Mixed: recorded 10, 20, 40 scaled by 0.5 to 5, 10, 20 (35 ns); c
  // gets the rest of the scaled wall time 500 - 35 = 465.
  Trace some = testing::TraceFromJson(FourOps(false, 1000));
  d = ComputeOpDurations(some, 0, OpTimeModel::kAuto, 0, 0.5);
  REQUIRE(d.ok());
  CHECK(d->duration_ns == std::vector<int64_t>{5, 10, 465, 20});
  absl::StatusOr<OpTimeline> tl = OpTimeline::Build(t, 0, OpTimeModel::kRecorded, 0, 3.0);
  REQUIRE(tl.ok());
  CHECK(tl->total_ns() == 300);
  CHECK(ComputeOpDurations(t, 0, OpTimeModel::kAuto, 0, 0).status().message() ==
        "compute time scale 0 is not positive and finite");
}

}  // namespace
}  // namespace swapplan
