// Algorithm 3 (OomHandling::kAlgorithm3) on hand-made allocation failures.
// 100 ns ops, 1 byte/ns both ways, tensors of 100-byte multiples: every copy
// of N bytes takes N ns and each expected value is read off the timeline in
// the comment. Then invariants on random traces.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {
namespace {

Trace MakeTrace(const std::string& tensors, const std::string& ops,
                const std::string& events = "") {
  return testing::TraceFromJson(
      R"({"format": "swapplan-trace", "metadata": {"device_name": "toy",
          "h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
          "tensors": [)" +
      tensors + R"(], "iterations": [{"wall_time_ns": 0, "ops": [)" + ops +
      R"(], "memory_events": [)" + events + "]}]}");
}

Policy PolicyFor(const Trace& t, std::vector<PolicyItem> items = {}) {
  Policy p;
  p.fingerprint = ComputeFingerprint(t, 0);
  p.planner = "test";
  p.items = std::move(items);
  return p;
}

SimulationResult Run(const Trace& t, const Policy& p, int64_t capacity,
                     OomHandling h = OomHandling::kAlgorithm3) {
  SimulatorOptions o;
  o.device.capacity_bytes = capacity;
  o.oom_handling = h;
  o.record_timeline = true;
  absl::StatusOr<SimulationResult> r = Simulate(t, p, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

// P: a 100-byte parameter (resident throughout, never a candidate).
// A made by op 0, used by ops 1 and 4; B made by op 1, used by op 2; C made
// by op 2, used by ops 3 and 4; D made and used by op 3.
const char* kTensors = R"({"id": 0, "size_bytes": 100, "kind": "PARAMETER"},
    {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
    {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
    {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"},
    {"id": 4, "size_bytes": 100, "kind": "TEMPORARY"})";
const char* kOps = R"({"name": "f0", "phase": "FORWARD", "inputs": [0], "outputs": [1], "duration_ns": 100},
    {"name": "f1", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 100},
    {"name": "f2", "phase": "FORWARD", "inputs": [2], "outputs": [3], "duration_ns": 100},
    {"name": "f3", "phase": "FORWARD", "inputs": [3], "outputs": [4], "duration_ns": 100},
    {"name": "b0", "phase": "BACKWARD", "inputs": [1, 3], "duration_ns": 100})";

TEST_CASE("Algorithm 3: passive swap-out on an allocation failure, passive swap-in at the next use",
          "[sim][oom]") {
  // Capacity 300. Bytes in use: op 0 P+A = 200, op 1 +B = 300, op 2 asks for
  // C (100) with 300 in use: fails, 100 missing. Step (i): no policy, nothing
  // in flight. Step (ii): candidates allocated in the iteration, live at op
  // 2, not used by it: A only (B is op 2's input, P is persistent) -> A goes
  // out, its block serves C.
  //
  //   t (ns)    0    100   200   300   400   500   600   700
  //   compute   |op0 |op1 |wait|op2 |op3 |wait|op4 |
  //   d2h                 |A-> |                           after op 1
  //   h2d                                |<-A |            at op 4's dispatch
  //   bytes     200   300   300   300   300                op 4: P + C + A
  //
  // After op 2 B is freed (200), op 3 adds D (300), D goes (200); op 4 needs A
  // back: 300 fits.
  Trace t = MakeTrace(kTensors, kOps);
  SimulationResult r = Run(t, PolicyFor(t), 300);
  CHECK_FALSE(r.oom.occurred);
  CHECK(r.oom_handling.allocation_failures == 1);
  CHECK(r.oom_handling.early_releases == 0);
  CHECK(r.oom_handling.passive_swap_outs == 1);
  CHECK(r.oom_handling.passive_swap_ins == 1);
  CHECK(r.oom_handling.passive_bytes_d2h == 100);
  CHECK(r.oom_handling.passive_bytes_h2d == 100);
  CHECK(r.oom_handling.unresolved == 0);
  CHECK(r.bytes_d2h == 100);
  CHECK(r.bytes_h2d == 100);
  CHECK(r.copies_d2h == 1);
  CHECK(r.copies_h2d == 1);
  CHECK(r.iteration_time_ns == 700);
  CHECK(r.ideal_time_ns == 500);
  // Op 2 waits 100 for the copy out (its block), op 4 100 for the copy in.
  CHECK(r.stall_ns == 200);
  CHECK(r.stall_passive_ns == 200);
  CHECK(r.oom_handling.passive_stall_ns == 200);
  CHECK(r.stall_swap_in_ns == 0);
  CHECK(r.bytes_in_use == std::vector<int64_t>{200, 300, 300, 300, 300});
  CHECK(r.peak_bytes == 300);
  REQUIRE(r.top_stalls.size() == 2);
  CHECK(r.top_stalls[0].op == 2);
  CHECK(r.top_stalls[0].cause == StallCause::kPassive);
  CHECK(r.top_stalls[0].tensor_id == 1);
  CHECK(r.top_stalls[1].op == 4);
  CHECK(r.top_stalls[1].tensor_id == 1);
  CHECK(StallCauseName(StallCause::kPassive) == "passive");

  // The default only reports: op 2 asked for 100 with 0 free.
  SimulationResult plain = Run(t, PolicyFor(t), 300, OomHandling::kReport);
  CHECK(plain.oom.occurred);
  CHECK(plain.oom.op == 2);
  CHECK(plain.oom.requested_bytes == 100);
  CHECK(plain.oom.free_bytes == 0);
  CHECK(plain.oom_handling.allocation_failures == 0);
  CHECK(plain.iteration_time_ns == 500);
}

TEST_CASE("Algorithm 3: step (i) releases an in-flight swap-out before its release point",
          "[sim][oom]") {
  // Policy: A out after op 1 (its last use before op 4), released after op
  // 2 (late on purpose), back at op 4. Op 2 (300 + C) fails while A's block
  // waits for its release point; step (i) releases it and op 2 waits for the
  // copy (event wait, 200..300); the allocation fits. The release point
  // itself then releases nothing.
  //
  //   t (ns)    0    100   200   300   400   500   600   700
  //   compute   |op0 |op1 |wait|op2 |op3 |wait|op4 |
  //   d2h                 |A-> |                       after op 1
  //   h2d                                |<-A |        at op 4's dispatch
  //   bytes     200   300   300   300   300
  Trace t = MakeTrace(kTensors, kOps);
  PolicyItem a;
  a.tensor_id = 1;
  a.swap_out_op = 1;  // A's last use before the window is op 1
  a.release_op = 2;
  a.swap_in_op = 4;
  a.first_use_op = 4;
  a.size_bytes = 100;
  SimulationResult r = Run(t, PolicyFor(t, {a}), 300);
  // A's copy follows op 1 (ends 200) -> 200..300; op 2 reaches at 200 and
  // waits 100 for the early-released block.
  CHECK_FALSE(r.oom.occurred);
  CHECK(r.oom_handling.allocation_failures == 1);
  CHECK(r.oom_handling.early_releases == 1);
  CHECK(r.oom_handling.passive_swap_outs == 0);
  CHECK(r.stall_release_ns == 100);
  CHECK(r.bytes_in_use == std::vector<int64_t>{200, 300, 300, 300, 300});
  // Released at op 2's dispatch: reuse interval 2 - 1 = 1 op.
  CHECK(r.reuse.blocks == 1);
  CHECK(r.reuse.max_ops == 1);
  // op0 0-100, op1 100-200, op2 300-400, op3 400-500; A back 500-600; op4 600-700.
  CHECK(r.iteration_time_ns == 700);
}

TEST_CASE("Algorithm 3: the candidate closest in size to what is missing, until it fits",
          "[sim][oom]") {
  // P 100 (persistent), A 100 (op 0), B 300 (op 1), C 300 asked for by op 2;
  // A back for op 3, B for op 4. Op 2: 500 in use + 300 = 800.
  const char* tensors = R"({"id": 0, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 2, "size_bytes": 300, "kind": "ACTIVATION"},
      {"id": 3, "size_bytes": 300, "kind": "ACTIVATION"})";
  const char* ops = R"({"name": "f0", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
      {"name": "f1", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "outputs": [3], "duration_ns": 100},
      {"name": "b0", "phase": "BACKWARD", "inputs": [1, 3], "duration_ns": 100},
      {"name": "b1", "phase": "BACKWARD", "inputs": [2], "duration_ns": 100})";
  Trace t = MakeTrace(tensors, ops);

  SECTION("capacity 550: 250 missing, B (50 away) beats A (150 away)") {
    SimulationResult r = Run(t, PolicyFor(t), 550);
    CHECK(r.oom_handling.passive_swap_outs == 1);
    CHECK(r.oom_handling.passive_bytes_d2h == 300);
    // Op 2: 200 + 300. Op 3: P + A + C. Op 4: A and C gone (100), B back.
    CHECK(r.bytes_in_use == std::vector<int64_t>{200, 500, 500, 500, 400});
    CHECK_FALSE(r.oom.occurred);
  }
  SECTION("capacity 600: 200 missing, A and B both 100 away: the larger wins") {
    SimulationResult r = Run(t, PolicyFor(t), 600);
    CHECK(r.oom_handling.passive_swap_outs == 1);
    CHECK(r.oom_handling.passive_bytes_d2h == 300);
    CHECK(r.bytes_in_use == std::vector<int64_t>{200, 500, 500, 500, 400});
  }
  SECTION("capacity 650: 150 missing: A (50 away) first, then B for the last 50") {
    //   t (ns)   0    100   200   300         600   700   800   900         1200  1300
    //   compute  |op0 |op1 |     wait         |op2 |wait|op3 |    wait     |op4 |
    //   d2h                |A-> |B---------->|
    //   h2d                                        |<-A |     |<-B--------|
    //   stalls: op 2 600 - 200, op 3 800 - 700, op 4 1200 - 900
    SimulationResult r = Run(t, PolicyFor(t), 650);
    CHECK(r.oom_handling.allocation_failures == 1);
    CHECK(r.oom_handling.passive_swap_outs == 2);
    CHECK(r.oom_handling.passive_swap_ins == 2);
    CHECK(r.oom_handling.passive_bytes_d2h == 400);
    CHECK(r.oom_handling.passive_bytes_h2d == 400);
    // Op 2: 100 + 300. Op 3: A back (500). Op 4: B back after A, C go (400).
    CHECK(r.bytes_in_use == std::vector<int64_t>{200, 500, 400, 500, 400});
    CHECK(r.iteration_time_ns == 1300);
    CHECK(r.stall_passive_ns == 400 + 100 + 300);
    CHECK_FALSE(r.oom.occurred);
  }
}

TEST_CASE("Algorithm 3: an unresolved failure is reported with the bytes missing", "[sim][oom]") {
  // Capacity 250. Op 1 asks for B with P + A = 200 in use: 50 missing, and
  // A is op 1's input — no candidate: unresolved (the run goes on over
  // capacity, 300). Op 2 asks for C: A can go (-100) but 300 > 250 and B is
  // op 2's input: unresolved. Op 3 asks for D with P + C = 200 in use
  // (B freed): 300 > 250, C is its input, A is off: unresolved. Op 4 wants A back
  // (200 + 100): C is its input: unresolved. Four failures, one passive swap.
  Trace t = MakeTrace(kTensors, kOps);
  SimulationResult r = Run(t, PolicyFor(t), 250);
  CHECK(r.oom_handling.allocation_failures == 4);
  CHECK(r.oom_handling.passive_swap_outs == 1);
  CHECK(r.oom_handling.passive_swap_ins == 1);
  CHECK(r.oom_handling.unresolved == 4);
  CHECK(r.oom_handling.first_unresolved_op == 1);
  CHECK(r.oom_handling.first_unresolved_missing_bytes == 50);
  CHECK(r.oom.occurred);
  CHECK(r.oom.op == 1);
  CHECK(r.oom.requested_bytes == 100);
  CHECK(r.oom.free_bytes == 50);
}

TEST_CASE("Algorithm 3: a tensor with no further use stays off until its free", "[sim][oom]") {
  // F (100) is made by op 0, never used again, freed explicitly after op 3.
  // Op 2 fails (P + F + B + C = 400 > 300): F goes out for good. The free
  // after op 3 must not count F again: op 4 then holds P + G (200) = 300.
  const char* tensors = R"({"id": 0, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 4, "size_bytes": 200, "kind": "ACTIVATION"})";
  const char* ops = R"({"name": "f0", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
      {"name": "f1", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "inputs": [2], "outputs": [3], "duration_ns": 100},
      {"name": "f3", "phase": "FORWARD", "inputs": [3], "duration_ns": 100},
      {"name": "f4", "phase": "FORWARD", "outputs": [4], "duration_ns": 100})";
  Trace t = MakeTrace(tensors, ops, R"({"op": 3, "kind": "FREE", "tensor": 1})");
  SimulationResult r = Run(t, PolicyFor(t), 300);
  CHECK(r.oom_handling.passive_swap_outs == 1);
  CHECK(r.oom_handling.passive_swap_ins == 0);
  // op 0: 200, op 1: 300, op 2: 300 (F out, C in), op 3: 200 (B gone),
  // op 4: C and F freed after op 3 -> 100, + G = 300.
  CHECK(r.bytes_in_use == std::vector<int64_t>{200, 300, 300, 200, 300});
  CHECK_FALSE(r.oom.occurred);
}

TEST_CASE("Algorithm 3: a persistent tensor used again later is the last resort",
          "[sim][oom]") {
  // P0 and P1 are 100-byte parameters read by op 0; P0 is read again by op
  // 3, P1 never again. A (200) is made by op 1 and read by op 2. Capacity
  // 300: op 1 asks for A with P0 + P1 = 200 in use, 100 missing, and no
  // tensor of the iteration is left. P1 has no later use (moving it would
  // change the resident set the next iteration starts with): P0 goes out,
  // after op 0, and comes back at op 3's dispatch.
  //
  //   t (ns)    0    100   200   300   400   500   600
  //   compute   |op0 |wait|op1 |op2 |wait|op3 |
  //   d2h            |P0->|
  //   h2d                            |<-P0|
  //   bytes     200   300   300   200           op 3: P0 + P1
  const char* tensors = R"({"id": 0, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 1, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 2, "size_bytes": 200, "kind": "ACTIVATION"})";
  const char* ops = R"({"name": "f0", "phase": "FORWARD", "inputs": [0, 1], "duration_ns": 100},
      {"name": "f1", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "inputs": [2], "duration_ns": 100},
      {"name": "f3", "phase": "FORWARD", "inputs": [0], "duration_ns": 100})";
  Trace t = MakeTrace(tensors, ops);
  SimulationResult r = Run(t, PolicyFor(t), 300);
  CHECK(r.oom_handling.allocation_failures == 1);
  CHECK(r.oom_handling.passive_swap_outs == 1);
  CHECK(r.oom_handling.persistent_passive_swap_outs == 1);
  CHECK(r.oom_handling.passive_swap_ins == 1);
  CHECK(r.oom_handling.unresolved == 0);
  CHECK_FALSE(r.oom.occurred);
  CHECK(r.bytes_in_use == std::vector<int64_t>{200, 300, 300, 200});
  CHECK(r.iteration_time_ns == 600);
  CHECK(r.ideal_time_ns == 400);
  REQUIRE(r.top_stalls.size() == 2);
  CHECK(r.top_stalls[0].tensor_id == 0);  // P0, out and back

  // Without the last resort (the behaviour before): op 1 is unresolved, and
  // op 2 runs with 400 bytes in use: unresolved again.
  SimulatorOptions o;
  o.device.capacity_bytes = 300;
  o.oom_handling = OomHandling::kAlgorithm3;
  o.oom_persistent_victims = false;
  absl::StatusOr<SimulationResult> off = Simulate(t, PolicyFor(t), o);
  REQUIRE(off.ok());
  CHECK(off->oom_handling.passive_swap_outs == 0);
  CHECK(off->oom_handling.allocation_failures == 2);
  CHECK(off->oom_handling.unresolved == 2);
  CHECK(off->oom_handling.first_unresolved_op == 1);
  CHECK(off->oom_handling.first_unresolved_missing_bytes == 100);
}

TEST_CASE("Algorithm 3: a tensor inside a wrapping policy window is no candidate",
          "[sim][oom]") {
  // P0 and P1 are 100-byte parameters; a wrapping item keeps P0 on the host
  // across the boundary: back from op 3 (its copy in) for op 4, out again
  // after op 4. P1 is read by ops 0 and 4, A (150) made by op 1 and read by
  // op 2. Capacity 200: the iteration starts with P1 only (100); op 1 asks
  // for A, 50 missing. P0 is off the device (inside its window, as far as
  // op 3): no candidate, though it is persistent and used later; P1 goes,
  // and comes back at op 4 (P0 + P1 = 200).
  const char* tensors = R"({"id": 0, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 1, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 2, "size_bytes": 150, "kind": "ACTIVATION"})";
  const char* ops = R"({"name": "f0", "phase": "FORWARD", "inputs": [1], "duration_ns": 100},
      {"name": "f1", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "inputs": [2], "duration_ns": 100},
      {"name": "f3", "phase": "FORWARD", "duration_ns": 100},
      {"name": "f4", "phase": "FORWARD", "inputs": [0, 1], "duration_ns": 100})";
  Trace t = MakeTrace(tensors, ops);
  PolicyItem wrap;
  wrap.tensor_id = 0;
  wrap.size_bytes = 100;
  wrap.swap_in_op = 3;
  wrap.first_use_op = 4;
  wrap.swap_out_op = 4;
  wrap.release_op = 4;
  wrap.wraps = true;
  SimulationResult r = Run(t, PolicyFor(t, {wrap}), 200);
  CHECK(r.oom_handling.allocation_failures == 1);
  CHECK(r.oom_handling.persistent_passive_swap_outs == 1);
  CHECK(r.oom_handling.passive_swap_ins == 1);
  CHECK(r.oom_handling.unresolved == 0);
  CHECK_FALSE(r.oom.occurred);
  for (int64_t b : r.bytes_in_use) CHECK(b <= 200);
  // Every passive wait is for P1.
  bool passive = false;
  for (const StallSite& st : r.top_stalls) {
    if (st.cause != StallCause::kPassive) continue;
    passive = true;
    CHECK(st.tensor_id == 1);
  }
  CHECK(passive);
}

TEST_CASE("Algorithm 3 invariants on random traces", "[sim][oom][property]") {
  // With Algorithm 3: bytes in use never exceed the capacity when no failure
  // is unresolved; every passive swap-in follows a swap-out; the run is
  // never faster than ideal; the default mode's OOM implies a failure here.
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    INFO("seed " << seed);
    testing::RandomTraceOptions ro;
    ro.ops_per_iteration = 40 + static_cast<int32_t>(seed % 40);
    ro.swap_probability = 0;
    Trace t = testing::RandomTrace(seed, ro);
    absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
    REQUIRE(curve.ok());
    const int64_t peak = curve->iterations()[0].peak_unswapped.bytes;
    std::mt19937_64 rng(seed);
    const int64_t capacity = std::max<int64_t>(1, peak * (50 + rng() % 50) / 100);
    SimulatorOptions o;
    o.device.capacity_bytes = capacity;
    o.device.h2d_bandwidth_bytes_per_s = 1e9;
    o.device.d2h_bandwidth_bytes_per_s = 1e9;
    o.record_timeline = true;
    o.oom_handling = OomHandling::kAlgorithm3;
    absl::StatusOr<SimulationResult> r = Simulate(t, PolicyFor(t), o);
    REQUIRE(r.ok());
    o.oom_handling = OomHandling::kReport;
    absl::StatusOr<SimulationResult> plain = Simulate(t, PolicyFor(t), o);
    REQUIRE(plain.ok());
    const OomHandlingStats& s = r->oom_handling;
    CHECK(s.passive_swap_ins <= s.passive_swap_outs);
    CHECK(r->iteration_time_ns >= r->ideal_time_ns);
    CHECK(r->oom.occurred == (s.unresolved > 0));
    if (plain->oom.occurred) CHECK(s.allocation_failures > 0);
    if (!plain->oom.occurred) CHECK(s.allocation_failures == 0);
    if (s.unresolved == 0) {
      for (int64_t b : r->bytes_in_use) CHECK(b <= capacity);
    }
    for (int64_t b : r->bytes_in_use) CHECK(b >= 0);
  }
}

}  // namespace
}  // namespace swapplan
