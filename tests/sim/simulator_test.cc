// Hand-made cases for the evaluation simulator. Every trace runs at 1 byte/ns
// in both directions with 100 ns ops and 100-byte tensors, so a copy takes
// 100 ns and each expected value can be read off the timeline in the comment.
#include "swapplan/sim/simulator.h"
#include "swapplan/util/error.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"

namespace swapplan {
namespace {

// A trace of `ops` (JSON op objects) over `tensors`, 1 byte/ns each way.
Trace MakeTrace(const std::string& tensors, const std::string& ops, int64_t wall_ns = 0) {
  return testing::TraceFromJson(
      R"({"format": "swapplan-trace", "metadata": {"device_name": "toy",
          "h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
          "tensors": [)" +
      tensors + R"(], "iterations": [{"wall_time_ns": )" + std::to_string(wall_ns) +
      R"(, "ops": [)" + ops + "]}]}");
}

PolicyItem Item(uint64_t tensor, int32_t out, int32_t release, int32_t in, int32_t use,
                int64_t size = 100) {
  PolicyItem it;
  it.tensor_id = tensor;
  it.swap_out_op = out;
  it.release_op = release;
  it.swap_in_op = in;
  it.first_use_op = use;
  it.size_bytes = size;
  return it;
}

Policy PolicyFor(const Trace& t, std::vector<PolicyItem> items) {
  Policy p;
  p.fingerprint = ComputeFingerprint(t, 0);
  p.planner = "test";
  p.items = std::move(items);
  return p;
}

SimulationResult Run(const Trace& t, const Policy& p, SimulatorOptions o = {}) {
  o.record_timeline = true;
  absl::StatusOr<SimulationResult> r = Simulate(t, p, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

// Six 100 ns ops; A (tensor 1) is made by op 0 and needed again by op 5;
// B (tensor 2) is a temporary of op 2.
const char* kSixTensors = R"({"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                             {"id": 2, "size_bytes": 100, "kind": "TEMPORARY"})";
const char* kSixOps = R"({"name": "f0", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
    {"name": "f1", "phase": "FORWARD", "duration_ns": 100},
    {"name": "f2", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
    {"name": "b0", "phase": "BACKWARD", "duration_ns": 100},
    {"name": "b1", "phase": "BACKWARD", "duration_ns": 100},
    {"name": "b2", "phase": "BACKWARD", "inputs": [1], "duration_ns": 100})";

TEST_CASE("overlap hides a transfer", "[sim]") {
  // A out after op 0, released after op 1, in when op 3 is dispatched:
  //
  //   t (ns)    0    100   200   300   400   500   600
  //   compute   |op0 |op1 |op2 |op3 |op4 |op5 |
  //   d2h            |A-> |                          copy ends at 200 = end of op 1
  //   h2d                       |<-A |               done at 400, needed at 500
  //   bytes     100   100    100   100   100   100   (A off during op 2, B on)
  //
  // Without the policy op 2 holds A and B: 200 bytes.
  Trace t = MakeTrace(kSixTensors, kSixOps);
  SimulationResult r = Run(t, PolicyFor(t, {Item(1, 0, 1, 3, 5)}), {.device = {.capacity_bytes = 100}});
  CHECK(r.iteration_time_ns == 600);
  CHECK(r.ideal_time_ns == 600);
  CHECK(r.overhead_vs_ideal == 0.0);
  CHECK(r.stall_ns == 0);
  CHECK(r.compute_ns == 600);
  CHECK(r.peak_bytes == 100);
  CHECK_FALSE(r.oom.occurred);
  CHECK(r.bytes_d2h == 100);
  CHECK(r.bytes_h2d == 100);
  CHECK(r.copies_d2h == 1);
  CHECK(r.copies_h2d == 1);
  CHECK(r.bytes_in_use == std::vector<int64_t>{100, 100, 100, 100, 100, 100});
  CHECK(r.durations == DurationSource::kRecorded);
  // Reuse interval: the block may serve op 2's allocations: 2 - 0 = 2 ops.
  CHECK(r.reuse.blocks == 1);
  CHECK(r.reuse.max_ops == 2);
  CHECK(r.reuse.mean_ops == 2.0);
  // 6 ops + 2 copies.
  CHECK(r.events == 8);
  const std::vector<TimelineSpan> expected = {
      {SpanKind::kOp, 0, 0, 100},   {SpanKind::kD2H, 0, 100, 200}, {SpanKind::kOp, 1, 100, 200},
      {SpanKind::kOp, 2, 200, 300}, {SpanKind::kH2D, 0, 300, 400}, {SpanKind::kOp, 3, 300, 400},
      {SpanKind::kOp, 4, 400, 500}, {SpanKind::kOp, 5, 500, 600}};
  REQUIRE(r.timeline.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("span " << i);
    CHECK(r.timeline[i].kind == expected[i].kind);
    CHECK(r.timeline[i].index == expected[i].index);
    CHECK(r.timeline[i].start_ns == expected[i].start_ns);
    CHECK(r.timeline[i].end_ns == expected[i].end_ns);
  }

  // No policy at 100 bytes: op 2 asks for B (100) with A (100) resident: free 0.
  SimulationResult none = Run(t, PolicyFor(t, {}), {.device = {.capacity_bytes = 100}});
  CHECK(none.oom.occurred);
  CHECK(none.oom.op == 2);
  CHECK(none.oom.requested_bytes == 100);
  CHECK(none.oom.free_bytes == 0);
  CHECK(none.oom.ops_over_capacity == 1);
  CHECK(none.oom.max_excess_bytes == 100);
  CHECK(none.peak_bytes == 200);
  CHECK(none.peak_op == 2);
}

TEST_CASE("a late swap-in stalls the op that needs it", "[sim]") {
  // Swap-in triggered by op 5 itself:
  //
  //   t (ns)    0    100   200   300   400   500   600   700
  //   compute   |op0 |op1 |op2 |op3 |op4 |.....|op5 |
  //   d2h            |A-> |
  //   h2d                                   |<-A |
  //                                         ^ op 5 reached at 500, A ready at 600
  Trace t = MakeTrace(kSixTensors, kSixOps);
  SimulationResult r = Run(t, PolicyFor(t, {Item(1, 0, 1, 5, 5)}));
  CHECK(r.iteration_time_ns == 700);
  CHECK(r.stall_ns == 100);
  CHECK(r.stall_swap_in_ns == 100);
  CHECK(r.stall_release_ns == 0);
  CHECK(r.stall_by_phase_ns[static_cast<int>(Phase::kBackward)] == 100);
  CHECK(r.overhead_vs_ideal == Approx(100.0 / 600.0));
  CHECK(r.ops_with_stall == 1);
  REQUIRE(r.top_stalls.size() == 1);
  CHECK(r.top_stalls[0].op == 5);
  CHECK(r.top_stalls[0].stall_ns == 100);
  CHECK(r.top_stalls[0].cause == StallCause::kSwapIn);
  CHECK(r.top_stalls[0].tensor_id == 1);
}

TEST_CASE("d2h copies queue FIFO; a release point before the copy ends stalls", "[sim]") {
  // A (1) and C (3) both leave after op 0 and are released after op 1. The
  // d2h stream is FIFO, so C's copy waits for A's; op 2 may reuse both
  // blocks only once both copies are done (the event wait of the custom
  // record-stream):
  //
  //   t (ns)    0    100   200   300   400   500   600   700
  //   compute   |op0 |op1 |.....|op2 |op3 |op4 |op5 |
  //   d2h            |A-> |C-> |
  //   h2d                             |<-A |<-C |        (both triggered at op 3)
  //                         ^ op 2 reached at 200, C's copy ends at 300
  Trace t = MakeTrace(R"({"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                         {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"})",
                      R"({"name": "f0", "phase": "FORWARD", "outputs": [1, 3], "duration_ns": 100},
      {"name": "f1", "phase": "FORWARD", "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "duration_ns": 100},
      {"name": "b0", "phase": "BACKWARD", "duration_ns": 100},
      {"name": "b1", "phase": "BACKWARD", "duration_ns": 100},
      {"name": "b2", "phase": "BACKWARD", "inputs": [1, 3], "duration_ns": 100})");
  SimulationResult r = Run(t, PolicyFor(t, {Item(1, 0, 1, 3, 5), Item(3, 0, 1, 3, 5)}));
  CHECK(r.iteration_time_ns == 700);
  CHECK(r.stall_ns == 100);
  CHECK(r.stall_release_ns == 100);
  REQUIRE(r.top_stalls.size() == 1);
  CHECK(r.top_stalls[0].op == 2);
  CHECK(r.top_stalls[0].cause == StallCause::kRelease);
  CHECK(r.top_stalls[0].tensor_id == 3);
  // op 3 is reached at 400: A in 400-500, C in 500-600, op 5 at 600.
  CHECK(r.d2h_busy_ns == 200);
  CHECK(r.h2d_busy_ns == 200);
  CHECK(r.peak_bytes == 200);  // ops 0, 1 and 3..5
}

TEST_CASE("half-duplex serialises the two directions", "[sim]") {
  // E (4) out after op 0, back for op 3; A (1) out after op 1, back for op 5.
  //
  // Full duplex:
  //   t (ns)    0    100   200   300   400   500   600
  //   compute   |op0 |op1 |op2 |op3 |op4 |op5 |
  //   d2h            |E-> |A-> |
  //   h2d                 |<-E |      |<-A |
  //
  // Half duplex (one link, program order: E out, A out, E in, A in):
  //   t (ns)    0    100   200   300   400   500   600   700
  //   compute   |op0 |op1 |op2 |.....|op3 |op4 |op5 |
  //   link           |E-> |A-> |<-E |      |<-A |
  //                              ^ op 3 reached at 300, E back at 400
  Trace t = MakeTrace(R"({"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                         {"id": 4, "size_bytes": 100, "kind": "ACTIVATION"})",
                      R"({"name": "f0", "phase": "FORWARD", "outputs": [4], "duration_ns": 100},
      {"name": "f1", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "duration_ns": 100},
      {"name": "b0", "phase": "BACKWARD", "inputs": [4], "duration_ns": 100},
      {"name": "b1", "phase": "BACKWARD", "duration_ns": 100},
      {"name": "b2", "phase": "BACKWARD", "inputs": [1], "duration_ns": 100})");
  Policy p = PolicyFor(t, {Item(4, 0, 1, 2, 3), Item(1, 1, 2, 4, 5)});
  SimulationResult duplex = Run(t, p);
  CHECK(duplex.iteration_time_ns == 600);
  CHECK(duplex.stall_ns == 0);
  SimulationResult half = Run(t, p, {.device = {.copy_engines = 1}});
  CHECK(half.device.half_duplex());
  CHECK(half.iteration_time_ns == 700);
  CHECK(half.stall_ns == 100);
  REQUIRE(half.top_stalls.size() == 1);
  CHECK(half.top_stalls[0].op == 3);
  CHECK(half.top_stalls[0].tensor_id == 4);
}

TEST_CASE("OOM is reported with exact numbers and the run continues", "[sim]") {
  // P (persistent, 100) is resident from the start. Bytes during each op:
  //   op 0: P + A         = 200
  //   op 1: P + A + B     = 300   <- first OOM at 250: asks 100 (B), 50 free
  //   op 2: P + A + B + C = 400   <- worst: 150 over
  //   op 3: P + A + C     = 300
  Trace t = MakeTrace(
      R"({"id": 10, "size_bytes": 100, "kind": "PARAMETER"},
                         {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                         {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
                         {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"})",
      R"({"name": "f0", "phase": "FORWARD", "inputs": [10], "outputs": [1], "duration_ns": 100},
      {"name": "f1", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "inputs": [2], "outputs": [3], "duration_ns": 100},
      {"name": "b0", "phase": "BACKWARD", "inputs": [1, 3], "duration_ns": 100})");
  SimulationResult r = Run(t, PolicyFor(t, {}), {.device = {.capacity_bytes = 250}});
  CHECK(r.oom.occurred);
  CHECK(r.oom.op == 1);
  CHECK(r.oom.requested_bytes == 100);
  CHECK(r.oom.free_bytes == 50);
  CHECK(r.oom.ops_over_capacity == 3);
  CHECK(r.oom.max_excess_bytes == 150);
  CHECK(r.peak_bytes == 400);
  CHECK(r.peak_op == 2);
  CHECK(r.iteration_time_ns == 400);  // the timeline is still complete
  CHECK(r.bytes_in_use == std::vector<int64_t>{200, 300, 400, 300});
}

TEST_CASE("naive record-stream: the host sees the copy late and blocks are reused later", "[sim]") {
  // The six-op trace with A out after op 0 (copy 100-200), released after
  // op 1, back at op 3. A launch queue of 3 lets the host run 3 ops ahead:
  //
  //   host dispatch  op0..op2 at 0 | op3 at 100 (op0 done) | op4 at 200 | op5 at 300
  //   compute        |op0 |op1 |op2 |op3 |op4 |op5 |
  //   d2h                 |A-> |
  //   h2d                            |<-A |
  //
  // Custom: A's block serves op 2 (reuse interval 2); bytes 100 throughout.
  // Naive: polls at op1 (t=0), op2 (0), op3 (100) see the copy running; at
  // op4 (200) it has ended: reuse interval 4. A's old block is still counted
  // during op 2 (with B: 200) and op 3 (with A's new block: 200).
  Trace t = MakeTrace(kSixTensors, kSixOps);
  Policy p = PolicyFor(t, {Item(1, 0, 1, 3, 5)});
  SimulatorOptions o{.launch_queue_depth = 3};
  SimulationResult custom = Run(t, p, o);
  CHECK(custom.reuse.max_ops == 2);
  CHECK(custom.peak_bytes == 100);
  CHECK(custom.host_event_queries == 0);

  o.record_stream = RecordStreamMode::kNaive;
  SimulationResult naive = Run(t, p, o);
  CHECK(naive.iteration_time_ns == 600);
  CHECK(naive.reuse.blocks == 1);
  CHECK(naive.reuse.max_ops == 4);
  CHECK(naive.reuse.mean_ops == 4.0);
  CHECK(naive.peak_bytes == 200);
  CHECK(naive.bytes_in_use == std::vector<int64_t>{100, 100, 200, 200, 100, 100});
  CHECK(naive.host_event_queries == 4);  // op1..op4 query the one pending block
  CHECK(naive.host_syncs == 0);

  // At 150 bytes op 2's allocation (B) does not fit while A is pending: the
  // host waits for A's copy (ends at 200), releases it, and goes on. The
  // device is at 200 anyway, so nothing is lost, but the host synchronised.
  o.device.capacity_bytes = 150;
  SimulationResult synced = Run(t, p, o);
  CHECK_FALSE(synced.oom.occurred);
  CHECK(synced.host_syncs == 1);
  CHECK(synced.reuse.max_ops == 2);
  CHECK(synced.host_event_queries == 2);  // op1 and op2
  CHECK(synced.peak_bytes == 100);
  CHECK(synced.iteration_time_ns == 600);

  // With a host that waits for every op (depth 1) naive equals custom here.
  o = {.record_stream = RecordStreamMode::kNaive, .launch_queue_depth = 1};
  SimulationResult paced = Run(t, p, o);
  CHECK(paced.reuse.max_ops == 2);
  CHECK(paced.peak_bytes == 100);
}

TEST_CASE("event queries slow the host until the device waits for it", "[sim]") {
  // Naive mode; each dispatch costs 10 ns plus 200 ns per pending block, and
  // the host waits for each op to end before dispatching the next (depth 1).
  // A's copy runs 110-210; the dispatch of op 1 queries it (the only query):
  //
  //   t (ns)    0  10        110                       320       420 430 ...
  //   host      |d0|          |d1: 10 + 200 query      |          |d2|
  //   compute      |op0       |                        |op1       |  |op2 ...
  //   d2h                     |A->       |
  //
  // Host waits: 10 (op 0), 210 (op 1), then 10 before each of ops 2..5.
  Trace t = MakeTrace(kSixTensors, kSixOps);
  Policy p = PolicyFor(t, {Item(1, 0, 1, 3, 5)});
  SimulationResult r = Run(t, p,
                           {.record_stream = RecordStreamMode::kNaive,
                            .host_dispatch_ns = 10,
                            .host_event_query_ns = 200,
                            .launch_queue_depth = 1});
  CHECK(r.host_event_queries == 1);
  CHECK(r.reuse.max_ops == 1);
  CHECK(r.host_wait_ns == 10 + 210 + 4 * 10);
  CHECK(r.iteration_time_ns == 600 + 10 + 210 + 4 * 10);
  // The ideal has no queries: 6 × (10 + 100).
  CHECK(r.ideal_time_ns == 660);
}

TEST_CASE("recomputation is charged on the compute stream before the trigger op", "[sim]") {
  // A dropped after op 0 and rematerialised (50 ns) when op 4 is dispatched:
  //
  //   t (ns)    0    100   200   300   400  450   550   650
  //   compute   |op0 |op1 |op2 |op3 |rc |op4 |op5 |
  //   bytes     100   0    100   0    100   100     (A off during ops 1-3)
  Trace t = MakeTrace(kSixTensors, kSixOps);
  PolicyItem it = Item(1, 0, 0, 4, 5);
  it.action = ItemAction::kRecompute;
  it.recompute_ns = 50;
  SimulationResult r = Run(t, PolicyFor(t, {it}));
  CHECK(r.iteration_time_ns == 650);
  CHECK(r.recompute_ns == 50);
  CHECK(r.recomputed_items == 1);
  CHECK(r.stall_ns == 0);
  CHECK(r.bytes_d2h == 0);
  CHECK(r.bytes_h2d == 0);
  CHECK(r.reuse.blocks == 0);
  CHECK(r.bytes_in_use == std::vector<int64_t>{100, 0, 100, 0, 100, 100});
  CHECK(r.events == 7);  // 6 ops + 1 recomputation
}

TEST_CASE("latency is added to every copy; bandwidth rounding is a ceiling", "[sim]") {
  // The device model's TransferNs is the simulator's copy time.
  CHECK(TransferNs(100, 1e9, 10) == 110);
  CHECK(TransferNs(100, 3e9, 0) == 34);          // 33.3 ns -> 34
  CHECK(TransferNs(1 << 20, 25e9, 0) == 41944);  // 41943.04 ns
  // With 10 ns latency A's copy out ends at 210, 10 ns into op 2, which
  // waits for it (release after op 1): a 10 ns release stall.
  Trace t = MakeTrace(kSixTensors, kSixOps);
  SimulationResult r =
      Run(t, PolicyFor(t, {Item(1, 0, 1, 3, 5)}), {.device = {.copy_latency_ns = 10}});
  CHECK(r.stall_release_ns == 10);
  CHECK(r.iteration_time_ns == 610);
  CHECK(r.device.copy_latency_ns == 10);
}

TEST_CASE("Eq. 1 durations when the trace has none; the result says so", "[sim]") {
  // Three ops, no durations, 1000 ns wall time: 333, 333, 334.
  Trace t = MakeTrace(R"({"id": 1, "size_bytes": 100, "kind": "ACTIVATION"})",
                      R"({"name": "f0", "phase": "FORWARD", "outputs": [1]},
                         {"name": "f1", "phase": "FORWARD"},
                         {"name": "b0", "phase": "BACKWARD", "inputs": [1]})",
                      1000);
  absl::StatusOr<OpDurations> d = ComputeOpDurations(t, 0);
  REQUIRE(d.ok());
  CHECK(d->duration_ns == std::vector<int64_t>{333, 333, 334});
  CHECK(d->source == DurationSource::kEstimated);
  SimulationResult r = Run(t, PolicyFor(t, {}));
  CHECK(r.durations == DurationSource::kEstimated);
  CHECK(r.iteration_time_ns == 1000);

  // One op recorded (100 ns): the other two share the remaining 900.
  Trace mixed = MakeTrace(R"({"id": 1, "size_bytes": 100, "kind": "ACTIVATION"})",
                          R"({"name": "f0", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
                             {"name": "f1", "phase": "FORWARD"},
                             {"name": "b0", "phase": "BACKWARD", "inputs": [1]})",
                          1000);
  d = ComputeOpDurations(mixed, 0);
  REQUIRE(d.ok());
  CHECK(d->duration_ns == std::vector<int64_t>{100, 450, 450});
  CHECK(d->source == DurationSource::kMixed);

  Trace none = MakeTrace(R"({"id": 1, "size_bytes": 100, "kind": "ACTIVATION"})",
                         R"({"name": "f0", "phase": "FORWARD", "outputs": [1]})");
  absl::StatusOr<Simulator> s = Simulator::Create(none, 0);
  CHECK(s.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(s.status().message() ==
        "test.json: iteration 0: 1 of 1 ops have no duration and Eq. (1) needs the iteration's "
        "wall time, which was not recorded (give the iteration time, or record op durations)");
}

TEST_CASE("a schedule reorders ops and their memory", "[sim]") {
  // Recorded: op0 makes A, op1 makes B, op2 reads A, op3 reads B: A and B
  // overlap (200 bytes at ops 1, 2). Schedule 0, 2, 1, 3: A lives at
  // positions 0-1 and B at 2-3: peak 100. Durations move with their ops.
  Trace t = MakeTrace(R"({"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                         {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"})",
                      R"({"name": "a", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
                         {"name": "b", "phase": "FORWARD", "outputs": [2], "duration_ns": 50},
                         {"name": "c", "phase": "BACKWARD", "inputs": [1], "duration_ns": 100},
                         {"name": "d", "phase": "BACKWARD", "inputs": [2], "duration_ns": 100})");
  absl::StatusOr<Simulator> sim = Simulator::Create(t, 0, {.record_timeline = true});
  REQUIRE(sim.ok());
  Policy p = PolicyFor(t, {});
  absl::StatusOr<SimulationResult> recorded = sim->Run(p);
  REQUIRE(recorded.ok());
  CHECK(recorded->peak_bytes == 200);
  const std::vector<int32_t> schedule = {0, 2, 1, 3};
  absl::StatusOr<SimulationResult> r = sim->Run(p, schedule);
  REQUIRE(r.ok());
  CHECK(r->peak_bytes == 100);
  CHECK(r->iteration_time_ns == 350);
  // bytes_in_use is indexed by op: op 1 (b) runs third.
  CHECK(r->bytes_in_use == std::vector<int64_t>{100, 100, 100, 100});
  // Op 1 ("b") runs from 200 to 250.
  bool found = false;
  for (const TimelineSpan& s : r->timeline) {
    if (s.kind == SpanKind::kOp && s.index == 1) {
      CHECK(s.start_ns == 200);
      CHECK(s.end_ns == 250);
      found = true;
    }
  }
  CHECK(found);

  // Under a schedule, an item's ops must be in order of position: op 2 (c)
  // runs before op 1 (b) here, so "out after b, back for c" is backwards.
  PolicyItem backwards;
  backwards.tensor_id = 2;
  backwards.size_bytes = 100;
  backwards.swap_out_op = 1;
  backwards.release_op = 1;
  backwards.swap_in_op = 3;
  backwards.first_use_op = 3;
  Policy with_item = PolicyFor(t, {backwards});
  CHECK(sim->Run(with_item).ok());
  const std::vector<int32_t> late_b = {0, 2, 3, 1};
  // The rules are the resolver's (policy/resolver.h), as in the checker.
  absl::Status st = sim->Run(with_item, late_b).status();
  CHECK(st.message() ==
        "item 0 (tensor 2): swap-in at op 3 (d, BACKWARD) at position 2 is not after the "
        "swap-out at op 1 (b, FORWARD) at position 3 [swap-in-before-swap-out]");
  CHECK(RuleOf(st) == std::optional<std::string>("swap-in-before-swap-out"));
  const std::vector<int32_t> bad = {0, 2, 2, 3};
  CHECK(sim->Run(p, bad).status().message() ==
        "schedule is not a permutation of the iteration's ops: entry 2 is 2 (repeated) "
        "[bad-schedule]");
}

TEST_CASE("policies that do not fit the trace are rejected with the item named", "[sim]") {
  Trace t = MakeTrace(kSixTensors, kSixOps);
  auto message = [&](std::vector<PolicyItem> items) {
    absl::StatusOr<SimulationResult> r = Simulate(t, PolicyFor(t, std::move(items)));
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  CHECK(message({Item(9, 0, 1, 3, 5)}) ==
        "item 0 (tensor 9): no such tensor in test.json [unknown-tensor]");
  CHECK(message({Item(1, 0, 1, 3, 9)}) ==
        "item 0 (tensor 1): first_use_op 9 is outside iteration 0 (6 ops) [op-out-of-range]");
  PolicyItem negative = Item(1, 0, 0, 3, 5);
  negative.action = ItemAction::kRecompute;
  negative.recompute_ns = -4;
  CHECK(message({negative}) ==
        "item 0 (tensor 1): recompute_ns is -4; must be >= 0, and 0 for a SWAP item "
        "[bad-action]");
  CHECK(message({Item(1, 0, 1, 3, 5, 64)}) ==
        "item 0 (tensor 1): size_bytes 64 but the trace says 100 [size-mismatch]");
  // B lives during op 2 only.
  CHECK(message({Item(2, 2, 2, 3, 4)}) ==
        "item 0 (tensor 2): the tensor is not allocated throughout ops 2..4 (it is allocated "
        "during ops 2..2) [not-resident]");
  CHECK(message({Item(1, 0, 1, 3, 5), Item(1, 2, 2, 4, 5)}) ==
        "item 1 (tensor 1): window ops 2..5 overlaps item 0's window ops 0..5 "
        "[overlapping-items]");
  // A is made by op 0: it cannot leave after an op before it exists.
  Trace late = MakeTrace(kSixTensors, R"({"name": "f0", "phase": "FORWARD", "duration_ns": 100},
      {"name": "f1", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "inputs": [1], "duration_ns": 100},
      {"name": "b0", "phase": "BACKWARD", "duration_ns": 100},
      {"name": "b1", "phase": "BACKWARD", "inputs": [1], "duration_ns": 100})");
  absl::StatusOr<SimulationResult> r = Simulate(late, PolicyFor(late, {Item(1, 0, 0, 3, 4)}));
  CHECK(r.status().message() ==
        "item 0 (tensor 1): the tensor is not allocated throughout ops 0..4 (it is allocated "
        "during ops 1..4) [not-resident]");
  r = Simulate(late, PolicyFor(late, {Item(1, 1, 1, 3, 4)}));
  CHECK(r.status().message() ==
        "item 0 (tensor 1): used by op 2 (f2, FORWARD) between its swap-out after op 1 and its "
        "first use at op 4 [use-while-off-device]");
  CHECK(RuleOf(r.status()) == std::optional<std::string>("use-while-off-device"));

  // A policy for another op sequence.
  Policy other = PolicyFor(late, {});
  r = Simulate(t, other);
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(r.status().message()), Catch::EndsWith("[fingerprint-mismatch]"));

  // No bandwidth anywhere.
  Trace slow = testing::TraceFromJson(std::string(R"({"tensors": [)") + kSixTensors +
                                      R"(], "iterations": [{"ops": [)" + kSixOps + "]}]}");
  r = Simulate(slow, PolicyFor(slow, {Item(1, 0, 1, 3, 5)}));
  CHECK(r.status().message() ==
        "the policy swaps tensors but no h2d bandwidth is known: none given, none in the "
        "metadata of test.json, none in the policy");
  // ... unless the options or the policy give one.
  Policy with_bw = PolicyFor(slow, {Item(1, 0, 1, 3, 5)});
  with_bw.device.h2d_bandwidth_bytes_per_s = with_bw.device.d2h_bandwidth_bytes_per_s = 1e9;
  CHECK(Simulate(slow, with_bw).ok());
}

TEST_CASE("the device's compute_time_scale scales the recorded op durations", "[sim]") {
  // Six 100 ns ops on a device 1.5 times as slow: 150 ns each, 900 ns, and
  // A's 100-byte copies (1 byte/ns) now fit inside single ops.
  Trace t = MakeTrace(kSixTensors, kSixOps);
  SimulationResult r =
      Run(t, PolicyFor(t, {Item(1, 0, 1, 3, 5)}), {.device = {.compute_time_scale = 1.5}});
  CHECK(r.ideal_time_ns == 900);
  CHECK(r.iteration_time_ns == 900);
  CHECK(r.compute_ns == 900);
  CHECK(r.stall_ns == 0);
}

TEST_CASE("simulator options are validated", "[sim]") {
  CHECK(SimulatorOptions{}.Validate().ok());
  CHECK(SimulatorOptions{.device = {.capacity_bytes = -1}}.Validate().message() ==
        "simulator options: device.capacity_bytes is -1; must be >= 0 (0 = unlimited)");
  CHECK(SimulatorOptions{.device = {.copy_latency_ns = -1}}.Validate().message() ==
        "simulator options: device model \"custom\": copy_latency_ns must be in [0, 1e17]");
  CHECK(SimulatorOptions{.launch_queue_depth = 0}.Validate().message() ==
        "simulator options: launch_queue_depth is 0; must be >= 1");
  // Bandwidths: 0 = from the trace or the policy; otherwise positive.
  CHECK(SimulatorOptions{.device = {.h2d_bandwidth_bytes_per_s = -5}}.Validate().message() ==
        "simulator options: device model \"custom\": h2d_bandwidth_bytes_per_s must be positive "
        "and finite");
  // compute_time_scale: positive.
  CHECK(SimulatorOptions{.device = {.compute_time_scale = 0}}.Validate().message() ==
        "simulator options: device model \"custom\": compute_time_scale must be positive and "
        "finite");
  Trace t = MakeTrace(kSixTensors, kSixOps);
  CHECK(Simulator::Create(t, 0, {.host_dispatch_ns = -2}).status().message() ==
        "simulator options: host_dispatch_ns is -2; must be >= 0");
  CHECK(Simulator::Create(t, 1).status().message() ==
        "iteration 1 is out of range (test.json has 1 iterations)");
}

}  // namespace
}  // namespace swapplan
