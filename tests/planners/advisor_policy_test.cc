// Policy features the Advisor added, through the policy I/O, Validate, the
// evaluation simulator and the checker: the schedule (item order in
// positions), wrapping items, clean items, the size-class pool and planned
// release waits. 100-byte tensors, 100 ns ops, 1 byte/ns each way.
//
// The trace (recorded order; W is a parameter written by sgd, V one that is
// only read; x and y are independent):
//   op 0 a:   -> A           op 3 c:   A, W, V -> C
//   op 1 x:   -> X           op 4 sgd: W -> W (OPTIMIZER)
//   op 2 y:   -> Y
// The schedule S = [0, 2, 1, 3, 4] (y before x) is a topological order.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/sim/checker.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {
namespace {

const Trace& T() {
  static const Trace t = testing::TraceFromJson(R"({
    "metadata": {"h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
    "tensors": [
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION", "name": "A"},
      {"id": 2, "size_bytes": 100, "kind": "TEMPORARY", "name": "X"},
      {"id": 3, "size_bytes": 100, "kind": "TEMPORARY", "name": "Y"},
      {"id": 4, "size_bytes": 100, "kind": "ACTIVATION", "name": "C"},
      {"id": 10, "size_bytes": 100, "kind": "PARAMETER", "name": "W"},
      {"id": 11, "size_bytes": 200, "kind": "PARAMETER", "name": "V"}],
    "iterations": [{"ops": [
      {"name": "a", "phase": "FORWARD", "outputs": [1], "duration_ns": 100},
      {"name": "x", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
      {"name": "y", "phase": "FORWARD", "outputs": [3], "duration_ns": 100},
      {"name": "c", "phase": "FORWARD", "inputs": [1, 10, 11], "outputs": [4], "duration_ns": 100},
      {"name": "sgd", "phase": "OPTIMIZER", "inputs": [10], "outputs": [10], "duration_ns": 100}
    ]}]})",
                                                         "advisor_policy.json");
  return t;
}

const std::vector<int32_t> kS = {0, 2, 1, 3, 4};

PolicyItem Item(uint64_t id, int64_t size, int32_t out, int32_t rel, int32_t in, int32_t use) {
  return testing::SwapItem(id, size, out, rel, in, use);
}

// A out after a (position 0), released after y (position 1), back at x
// (position 2) for c: in order only under S (in op indices 2 > 1).
const PolicyItem kA = Item(1, 100, 0, 2, 1, 3);
// W on the host across the boundary: in at a, used by c, out after sgd.
PolicyItem WrapW() {
  PolicyItem it = Item(10, 100, 4, 4, 0, 3);
  it.wraps = true;
  return it;
}

Policy Base(std::vector<PolicyItem> items, std::vector<int32_t> schedule = kS) {
  Policy p;
  p.fingerprint = ComputeFingerprint(T(), 0);
  p.device.capacity_bytes = 1000;
  p.device.h2d_bandwidth_bytes_per_s = 1e9;
  p.device.d2h_bandwidth_bytes_per_s = 1e9;
  p.planner = "test";
  p.items = std::move(items);
  p.schedule = std::move(schedule);
  return p;
}

std::vector<std::string> Messages(const CheckReport& r) {
  std::vector<std::string> m;
  for (const Violation& v : r.violations) m.push_back(v.message);
  return m;
}

CheckReport Check(const Policy& p) {
  absl::StatusOr<CheckReport> r = CheckPolicy(T(), p);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

SimulationResult Sim(const Policy& p, SimulatorOptions o = {}) {
  o.record_timeline = true;
  absl::StatusOr<SimulationResult> r = Simulate(T(), p, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

TEST_CASE("policy: schedule, pool, wraps and clean round-trip", "[advisor][policy]") {
  Policy p = Base({kA, WrapW()});
  p.items[1].clean = false;
  p.items[0].clean = false;
  p.pool = {{100, 200}, {0, 1}, {{100, 5}, {200, 1}}};
  REQUIRE(p.Validate().ok());
  for (bool json : {true, false}) {
    absl::StatusOr<Policy> q = json ? ParsePolicyJson(PolicyToJson(p), "p.json")
                                    : ParsePolicyBinary(PolicyToBinary(p), "p.pb");
    INFO(q.status().ToString());
    REQUIRE(q.ok());
    CHECK(q->schedule == p.schedule);
    CHECK(q->pool == p.pool);
    CHECK(q->items[1].wraps);
    CHECK_FALSE(q->items[0].wraps);
  }
  // Fields left at their defaults are not written: other policies' JSON is
  // unchanged.
  const std::string plain = PolicyToJson(Base({}, {}));
  for (const char* key : {"schedule", "pool", "wraps", "clean"}) {
    CHECK(plain.find(key) == std::string::npos);
  }
}

TEST_CASE("policy: Validate checks item order in schedule positions", "[advisor][policy]") {
  CHECK(Base({kA}).Validate().ok());
  CHECK(std::string(Base({kA}, {}).Validate().message()) ==
        "policy item 0 (tensor 1): ops must satisfy swap_out_op <= release_op < swap_in_op <= "
        "first_use_op, got 0, 2, 1, 3");
  CHECK(std::string(Base({kA}, {0, 1, 2, 3, 4}).Validate().message()) ==
        "policy item 0 (tensor 1): ops must satisfy swap_out_op <= release_op < swap_in_op <= "
        "first_use_op in schedule positions, got 0, 2, 1, 3");
  CHECK(std::string(Base({}, {0, 2, 2, 3, 4}).Validate().message()) ==
        "policy: schedule is not a permutation of the iteration's ops: entry 2 is 2 (repeated)");
  PolicyItem bad_wrap = WrapW();
  bad_wrap.swap_out_op = 0;  // out before its first use
  CHECK(std::string(Base({bad_wrap}).Validate().message()) ==
        "policy item 0 (tensor 10): a wrapping item's ops must satisfy swap_in_op <= "
        "first_use_op <= swap_out_op <= release_op in schedule positions, got 0, 3, 0, 4");
  PolicyItem rc = kA;
  rc.action = ItemAction::kRecompute;
  rc.clean = true;
  CHECK(std::string(Base({rc}).Validate().message()) ==
        "policy item 0 (tensor 1): clean is only allowed on SWAP items");
  Policy pool = Base({});
  pool.pool = {{100, 200}, {0, 2}, {{100, 1}, {200, 1}}};
  CHECK(std::string(pool.Validate().message()) ==
        "policy pool: size_class must start at 0 and step by 0 or +1 (entry 1 is 2)");
  pool.pool = {{100, 200}, {0, 0}, {{100, 1}}};
  CHECK(std::string(pool.Validate().message()) ==
        "policy pool: class 0 has object_bytes 100; must be its largest tensor size 200");
}

TEST_CASE("simulator: the policy's schedule, a wrapping item, the iteration end",
          "[advisor][sim]") {
  // Under S with A and W swapped:
  //   h2d  W 0-100 (triggered at a)          A 200-300 (at x, after its copy out)
  //   comp a 0-100 | y 100-200 | x 200-300 | c 300-400 | sgd 400-500
  //   d2h  A 100-200                                     W 500-600 (after sgd)
  // The iteration ends with W's copy out: 600.
  const SimulationResult r = Sim(Base({kA, WrapW()}));
  CHECK(r.iteration_time_ns == 600);
  CHECK(r.stall_ns == 0);
  CHECK(r.bytes_d2h == 200);
  CHECK(r.bytes_h2d == 200);
  // Bytes: W and V start... V (200) is resident throughout, W is not (it
  // wraps). a: V + A + W's block = 400.
  CHECK(r.bytes_in_use[0] == 400);
  // The same schedule passed explicitly gives the same run; the recorded
  // order rejects the item.
  absl::StatusOr<Simulator> sim = Simulator::Create(T(), 0);
  REQUIRE(sim.ok());
  Policy unscheduled = Base({kA}, {});
  absl::StatusOr<SimulationResult> via_arg = sim->Run(unscheduled, kS);
  REQUIRE(via_arg.ok());
  CHECK(via_arg->iteration_time_ns == 500);  // sgd ends at 500; W stays on the device
  absl::StatusOr<SimulationResult> recorded = sim->Run(unscheduled);
  CHECK(std::string(recorded.status().message()) ==
        "item 0 (tensor 1 'A'): ops must satisfy swap_out_op <= release_op < swap_in_op <= "
        "first_use_op, got 0, 2, 1, 3 [bad-op-order]");
}

TEST_CASE("simulator: clean items copy nothing out; a written tensor cannot be clean",
          "[advisor][sim]") {
  // V (200 bytes, only read) on the host across the boundary, back without
  // a copy after c: h2d 0-200, long done when c runs 300-400; sgd 400-500.
  PolicyItem v = Item(11, 200, 3, 3, 0, 3);
  v.wraps = true;
  v.clean = true;
  const SimulationResult r = Sim(Base({v}));
  CHECK(r.bytes_d2h == 0);
  CHECK(r.bytes_h2d == 200);
  CHECK(r.iteration_time_ns == 500);
  // W is written by sgd after it came from the host.
  PolicyItem w = WrapW();
  w.clean = true;
  absl::StatusOr<SimulationResult> bad = Simulate(T(), Base({w}));
  CHECK(std::string(bad.status().message()) ==
        "item 0 (tensor 10 'W'): marked clean, but op 4 (sgd, OPTIMIZER) at position 4 writes it "
        "after it came back from the host at op 3 (c, FORWARD) at position 3 "
        "[clean-but-written]");
  // A normal clean window needs an earlier return from the host.
  PolicyItem a = kA;
  a.clean = true;
  CHECK(std::string(Simulate(T(), Base({a})).status().message()) ==
        "item 0 (tensor 1 'A'): marked clean, but the host holds no copy: the tensor was not "
        "brought back from the host before its swap-out after op 0 (a, FORWARD) at position 0 "
        "[clean-not-on-host]");
}

TEST_CASE("simulator: size-class pool — a class out of objects is an OOM", "[advisor][sim]") {
  // Classes: 100 bytes x 3, 200 bytes x 1. At c: A, C, W (100-byte) and V.
  Policy p = Base({});
  p.pool = {{100, 200}, {0, 1}, {{100, 3}, {200, 1}}};
  CHECK_FALSE(Sim(p).oom.occurred);
  CHECK(Sim(p).pool_bytes == 500);
  // Two 100-byte objects: under S, y needs one for Y while W and A hold
  // both: the first OOM is class 0 at y, asking for 1 object with none free.
  p.pool.classes[0].count = 2;
  const SimulationResult r = Sim(p);
  REQUIRE(r.oom.occurred);
  CHECK(r.oom.op == 2);
  CHECK(r.oom.pool_class == 0);
  CHECK(r.oom.requested_bytes == 1);
  CHECK(r.oom.free_bytes == 0);
  // Bytes alone fit: without the pool model there is no OOM.
  SimulatorOptions bytes_only;
  bytes_only.model_pool = false;
  CHECK_FALSE(Sim(p, bytes_only).oom.occurred);
  // A pool larger than the device fails before the first op.
  p.pool.classes[0].count = 9;  // 900 + 200 bytes
  SimulatorOptions small;
  small.device.capacity_bytes = 1000;
  const SimulationResult big = Sim(p, small);
  REQUIRE(big.oom.occurred);
  CHECK(big.oom.op == 0);
  CHECK(big.oom.requested_bytes == 1100);
  CHECK(big.oom.pool_class == -1);
}

TEST_CASE("checker: schedule positions, wraps and planned release waits", "[advisor][checker]") {
  // Under S both items are fine: A's copy (100-200 ns on the stall-free
  // timeline) ends with y, its release point; W's copy out runs after the
  // last op.
  CheckReport ok = Check(Base({kA, WrapW()}));
  std::string violations;
  for (const std::string& m : Messages(ok)) violations += m + "\n";
  INFO(violations);
  CHECK(ok.clean());
  // Peak under S: 500 first at y (position 1): V 200, W, A (released after
  // y), Y.
  CHECK(ok.peak_bytes == 500);
  CHECK(ok.peak_op == 2);
  // Without the schedule A's ops are out of order.
  CHECK(Messages(Check(Base({kA}, {}))) ==
        std::vector<std::string>{"item 0 (tensor 1 'A'): ops must satisfy swap_out_op <= release_op "
                                 "< swap_in_op <= first_use_op, got 0, 2, 1, 3 [bad-op-order]"});
  // Release at a (position 0): its copy ends at 200 ns, during y.
  PolicyItem early = kA;
  early.release_op = 0;
  CHECK(Messages(Check(Base({early}))) ==
        std::vector<std::string>{
            "item 0 (tensor 1 'A'): released after op 0 (a, FORWARD) at "
            "position 0 (100.0 ns) but "
            "its copy out (100 bytes at 1.0 GB/s, started at 100.0 ns) completes at 200.0 ns, "
            "during op 2 (y, FORWARD) at position 1 [release-before-copy-done]"});
  // Marked as a planned wait: y (position 1, 100-200 ns) waits for the
  // copy until 200 ns: 100 ns.
  early.release_waits_for_copy = true;
  CheckReport w = Check(Base({early}));
  CHECK(w.clean());
  CHECK(w.release_waits == 1);
  CHECK(w.release_wait_ns == 100.0);
}

TEST_CASE("checker: schedule, wrap, clean and pool violations", "[advisor][checker]") {
  CHECK(Messages(Check(Base({}, {0, 1, 1, 3, 4}))) ==
        std::vector<std::string>{"schedule is not a permutation of the iteration's ops: entry 2 "
                                 "is 1 (repeated) [bad-schedule]"});
  // c before a: c reads A.
  CHECK(Messages(Check(Base({}, {3, 0, 1, 2, 4}))) ==
        std::vector<std::string>{
            "schedule is not a topological order of the dataflow graph: op 3 runs at position "
            "0, before its predecessor op 0 at position 1 [schedule-breaks-dependency]"});
  // A is made in the iteration: it cannot wrap.
  PolicyItem wa = Item(1, 100, 3, 3, 0, 0);
  wa.wraps = true;
  CHECK(Messages(Check(Base({wa}))) ==
        std::vector<std::string>{"item 0 (tensor 1 'A'): wraps around the iteration but the tensor "
                                 "is not resident before and after iteration 0 "
                                 "[wrap-not-persistent]"});
  PolicyItem ca = kA;
  ca.clean = true;
  CHECK(Messages(Check(Base({ca}))) ==
        std::vector<std::string>{
            "item 0 (tensor 1 'A'): marked clean, but the host holds no copy: the tensor was not "
            "brought back from the host before its swap-out after op 0 (a, FORWARD) at position "
            "0 [clean-not-on-host]"});
  PolicyItem cw = WrapW();
  cw.clean = true;
  CHECK(Messages(Check(Base({cw}))) ==
        std::vector<std::string>{
            "item 0 (tensor 10 'W'): marked clean, but op 4 (sgd, OPTIMIZER) at position 4 writes it "
            "after it came back from the host at op 3 (c, FORWARD) at position 3 "
            "[clean-but-written]"});
  Policy pool = Base({});
  pool.pool = {{100, 200}, {0, 1}, {{100, 2}, {200, 1}}};
  CHECK(Messages(Check(pool)) ==
        std::vector<std::string>{"op 2 (y, FORWARD) at position 1: class 0 (100-byte objects) "
                                 "needs 3 objects but has 2 (positions 1..3 are over) "
                                 "[pool-class-full]"});
  pool.pool.classes[0].count = 9;
  CHECK(Messages(Check(pool)) ==
        std::vector<std::string>{
            "the pool's 2 classes hold 1100 bytes, over the budget of 1000 [pool-over-budget]"});
  pool.pool = {{100}, {0}, {{100, 5}}};
  CHECK(Messages(Check(pool)) ==
        std::vector<std::string>{"tensor 11 'V' of 200 bytes fits no class of "
                                 "the pool (the largest "
                                 "object is 100 bytes) [pool-no-class]"});
}

}  // namespace
}  // namespace swapplan
