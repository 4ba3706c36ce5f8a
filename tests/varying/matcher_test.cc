// Runtime keys and matching: key equality and inequality driven through the
// runtime API (as a runtime shim calls it), the fuzzy and the naive matcher
// on an iteration that starts with a validation pass, keys recomputed from a
// trace against Chameleon's stored ones, and the error messages.
#include "swapplan/varying/matcher.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "support/synth_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/synth/synth.h"
#include "swapplan/eval/replay.h"
#include "swapplan/varying/tensor_roles.h"

namespace swapplan {
namespace {

// ---------------------------------------------------------------------------
// The runtime API on a hand-built policy. Three op names ranked 0, 1, 2:
// name n has one-hot bit n and rank byte n.

constexpr NameId kMm = 0, kRelu = 1, kAdd = 2;

MatchablePolicy HandPolicy(std::vector<MatchableItem> items) {
  MatchablePolicy mp;
  mp.codes = {{1u << 0, 0}, {1u << 1, 1}, {1u << 2, 2}};
  mp.source_ops = 100;
  for (size_t k = 0; k < items.size(); ++k) {
    items[k].item = static_cast<int32_t>(k);
    mp.policy.items.emplace_back();
  }
  mp.items = std::move(items);
  return mp;
}

// The key of a tensor used by mm then relu: count 2, mask 0b011, history
// (0 << 8) | 1 = 0x0001.
MatchableItem MmRelu(int32_t phase_ordinal, int64_t size = 100, uint64_t shape_hash = 7) {
  MatchableItem m;
  m.decision = {Phase::kForward, phase_ordinal, phase_ordinal};
  m.key.op_count = 2;
  m.key.op_mask = 0b011;
  m.key.op_history = 0x0001;
  m.dtype = DType::kFloat32;
  m.size_bytes = size;
  m.shape_hash = shape_hash;
  return m;
}

struct Runtime {
  explicit Runtime(const MatchablePolicy& mp, int32_t window = 0, int32_t slots = 8) {
    MatcherOptions o;
    o.window_ops = window;
    matcher = *CreateMatcher(MatcherKind::kFuzzy, mp, o);
    table.Reset(slots);
    for (int32_t s = 0; s < slots; ++s) table.Describe(s, DType::kFloat32, 100, 7);
    matcher->BeginIteration();
  }
  void Op(NameId name, std::vector<int32_t> slots, Phase phase = Phase::kForward) {
    matcher->OnOp(name, phase, slots, table, &out);
  }
  std::unique_ptr<TensorMatcher> matcher;
  RuntimeTensorTable table;
  std::vector<MatchDecision> out;
};

TEST_CASE("Runtime keys: equal features match at the decision point", "[varying][match]") {
  // Slot 3 is used by mm (forward op 0) and relu (forward op 1): its key
  // becomes {2, 0b011, 0x0001} after op 1, the item's decision point.
  MatchablePolicy mp = HandPolicy({MmRelu(1)});
  Runtime rt(mp);
  rt.Op(kMm, {3});
  CHECK(rt.out.empty());
  rt.Op(kRelu, {3});
  REQUIRE(rt.out.size() == 1);
  CHECK(rt.out[0].item == 0);
  CHECK(rt.out[0].slot == 3);
  CHECK(rt.table[3].key.op_count == 2);
  CHECK(rt.table[3].key.op_mask == 0b011);
  CHECK(rt.table[3].key.op_history == 0x0001);
  CHECK(rt.table[3].matched_item == 0);
}

TEST_CASE("Runtime keys: any differing feature keeps a tensor from matching", "[varying][match]") {
  MatchablePolicy mp = HandPolicy({MmRelu(1)});
  SECTION("users in the other order: history 0x0100") {
    Runtime rt(mp);
    rt.Op(kRelu, {3});
    rt.Op(kMm, {3});
    CHECK(rt.table[3].key.op_history == 0x0100);
    CHECK(rt.table[3].key.op_mask == 0b011);
    CHECK(rt.out.empty());
  }
  SECTION("another op: mask 0b101, history 0x0002") {
    Runtime rt(mp);
    rt.Op(kMm, {3});
    rt.Op(kAdd, {3});
    CHECK(rt.out.empty());
  }
  SECTION("a third use: count 3") {
    Runtime rt(mp, /*window=*/4);
    rt.Op(kMm, {3});
    rt.Op(kMm, {3});
    rt.Op(kRelu, {3});
    CHECK(rt.table[3].key.op_count == 3);
    CHECK(rt.out.empty());
  }
  SECTION("dtype float16") {
    Runtime rt(mp);
    rt.table.Describe(3, DType::kFloat16, 100, 7);
    rt.Op(kMm, {3});
    rt.Op(kRelu, {3});
    CHECK(rt.out.empty());
  }
  SECTION("same features in another phase") {
    Runtime rt(mp);
    rt.Op(kMm, {3}, Phase::kOther);
    rt.Op(kRelu, {3}, Phase::kOther);
    CHECK(rt.out.empty());
  }
  SECTION("an op using the tensor twice updates it once") {
    Runtime rt(mp);
    rt.Op(kMm, {3, 3});
    rt.Op(kRelu, {3});
    REQUIRE(rt.out.size() == 1);
    CHECK(rt.table[3].key.op_count == 2);
  }
  SECTION("an op name outside the ranking: rank byte 255, no bit") {
    Runtime rt(mp);
    rt.Op(kMm, {3});
    rt.Op(/*name=*/17, {3});
    CHECK(rt.table[3].key.op_history == 0x00ff);
    CHECK(rt.table[3].key.op_mask == 0b001);
    CHECK(rt.out.empty());
  }
}

TEST_CASE("Runtime keys: size and shape break ties among equal features", "[varying][match]") {
  // Slots 1 and 2 both reach the item's key at op 1; slot 1 (first in use
  // order) is 200 bytes, slot 2 has the item's 100 bytes and shape: slot 2.
  MatchablePolicy mp = HandPolicy({MmRelu(1)});
  Runtime rt(mp);
  rt.table.Describe(1, DType::kFloat32, 200, 7);
  rt.Op(kMm, {1, 2});
  rt.Op(kRelu, {1, 2});
  REQUIRE(rt.out.size() == 1);
  CHECK(rt.out[0].slot == 2);

  // Neither equals in size or shape: the first one found wins.
  Runtime rt2(mp);
  rt2.table.Describe(1, DType::kFloat32, 200, 7);
  rt2.table.Describe(2, DType::kFloat32, 100, 9);
  rt2.Op(kMm, {1, 2});
  rt2.Op(kRelu, {1, 2});
  REQUIRE(rt2.out.size() == 1);
  CHECK(rt2.out[0].slot == 1);
}

TEST_CASE("Runtime keys: the position among the op's uses breaks ties of equal tensors",
          "[varying][match]") {
  // Two items decided at the same op with identical keys and sizes (q and k
  // into an attention op): item 0 was the op's second input, item 1 its
  // first. Slots 5 and 6 are the op's inputs in that order: slot 5 takes
  // item 1, slot 6 item 0.
  MatchableItem second = MmRelu(1), first = MmRelu(1);
  second.use_index = 1;
  first.use_index = 0;
  MatchablePolicy mp = HandPolicy({second, first});
  Runtime rt(mp);
  rt.Op(kMm, {5, 6});
  rt.Op(kRelu, {5, 6});
  REQUIRE(rt.out.size() == 2);
  CHECK(rt.out[0].slot == 5);
  CHECK(rt.out[0].item == 1);
  CHECK(rt.out[1].slot == 6);
  CHECK(rt.out[1].item == 0);
}

TEST_CASE("Fuzzy matcher: items with equal keys match in order, within the window",
          "[varying][match]") {
  // Two items with the same key (a repeated layer), decision points at
  // forward positions 1 and 5. Tensors 0 and 1 reach that key at 1 and 5.
  MatchablePolicy mp = HandPolicy({MmRelu(1), MmRelu(5)});
  {
    Runtime rt(mp);
    rt.Op(kMm, {0});       // 0
    rt.Op(kRelu, {0});     // 1: tensor 0 -> item 0
    rt.Op(kAdd, {});       // 2
    rt.Op(kAdd, {});       // 3
    rt.Op(kMm, {1});       // 4
    rt.Op(kRelu, {1});     // 5: tensor 1 -> item 1
    REQUIRE(rt.out.size() == 2);
    CHECK(rt.out[0].item == 0);
    CHECK(rt.out[0].slot == 0);
    CHECK(rt.out[1].item == 1);
    CHECK(rt.out[1].slot == 1);
  }
  {
    // One op inserted before: the tensors reach the key at 2 and 6. Window
    // 0: both items' positions pass -> nothing matches. Window 1: both match.
    for (int32_t window : {0, 1}) {
      INFO("window " << window);
      Runtime rt(mp, window);
      rt.Op(kAdd, {});      // 0 (inserted)
      rt.Op(kMm, {0});      // 1
      rt.Op(kRelu, {0});    // 2
      rt.Op(kAdd, {});      // 3
      rt.Op(kAdd, {});      // 4
      rt.Op(kMm, {1});      // 5
      rt.Op(kRelu, {1});    // 6
      CHECK(rt.out.size() == (window == 0 ? 0u : 2u));
    }
  }
  {
    // A per-iteration restart: BeginIteration forgets matches and positions.
    Runtime rt(mp);
    rt.Op(kMm, {0});
    rt.Op(kRelu, {0});
    rt.table.Reset(8);
    for (int32_t s = 0; s < 8; ++s) rt.table.Describe(s, DType::kFloat32, 100, 7);
    rt.matcher->BeginIteration();
    rt.out.clear();
    rt.Op(kMm, {4});
    rt.Op(kRelu, {4});
    REQUIRE(rt.out.size() == 1);
    CHECK(rt.out[0].slot == 4);
  }
}

// ---------------------------------------------------------------------------
// Two iterations of one trace. Iteration 0: forward f0 (linear) f1 (relu)
// f2 (loss), backward b0, b1; the policy swaps X (tensor 1) out after f1 and
// back at b0 for b1. Iteration 1 starts with a three-op validation pass
// (phase OTHER: linear, relu, add) and then repeats iteration 0 with new
// tensors (X' = 11).
//
//   it 1 ops:  0 v0 linear  1 v1 relu  2 v2 add  3 f0 linear  4 f1 relu
//              5 f2 loss    6 b0       7 b1

const char* kTwoIterations = R"({"format": "swapplan-trace",
  "metadata": {"device_name": "toy", "h2d_bandwidth_bytes_per_s": 1e9,
               "d2h_bandwidth_bytes_per_s": 1e9},
  "tensors": [{"id": 0, "size_bytes": 100, "kind": "PARAMETER"},
    {"id": 1, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]},
    {"id": 2, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]},
    {"id": 3, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]},
    {"id": 10, "size_bytes": 100, "kind": "TEMPORARY", "dtype": "float32", "shape": [25]},
    {"id": 14, "size_bytes": 100, "kind": "TEMPORARY", "dtype": "float32", "shape": [25]},
    {"id": 11, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]},
    {"id": 12, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]},
    {"id": 13, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]}],
  "iterations": [
   {"wall_time_ns": 500, "ops": [
     {"name": "linear", "phase": "FORWARD", "inputs": [0], "outputs": [1], "duration_ns": 100},
     {"name": "relu", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 100},
     {"name": "loss", "phase": "FORWARD", "inputs": [2], "outputs": [3], "duration_ns": 100},
     {"name": "relu_bw", "phase": "BACKWARD", "inputs": [2, 3], "duration_ns": 100},
     {"name": "linear_bw", "phase": "BACKWARD", "inputs": [1, 0], "duration_ns": 100}]},
   {"wall_time_ns": 800, "ops": [
     {"name": "linear", "phase": "OTHER", "inputs": [0], "outputs": [10], "duration_ns": 100},
     {"name": "relu", "phase": "OTHER", "inputs": [10], "outputs": [14], "duration_ns": 100},
     {"name": "add", "phase": "OTHER", "inputs": [10, 14], "duration_ns": 100},
     {"name": "linear", "phase": "FORWARD", "inputs": [0], "outputs": [11], "duration_ns": 100},
     {"name": "relu", "phase": "FORWARD", "inputs": [11], "outputs": [12], "duration_ns": 100},
     {"name": "loss", "phase": "FORWARD", "inputs": [12], "outputs": [13], "duration_ns": 100},
     {"name": "relu_bw", "phase": "BACKWARD", "inputs": [12, 13], "duration_ns": 100},
     {"name": "linear_bw", "phase": "BACKWARD", "inputs": [11, 0], "duration_ns": 100}]}]})";

Policy XPolicy(const Trace& t) {
  Policy p;
  p.fingerprint = ComputeFingerprint(t, 0);
  p.planner = "test";
  PolicyItem x;
  x.tensor_id = 1;
  x.swap_out_op = 1;
  x.release_op = 1;
  x.swap_in_op = 3;
  x.first_use_op = 4;
  x.size_bytes = 100;
  p.items.push_back(x);
  return p;
}

TEST_CASE("A validation pass first: fuzzy finds X', naive swaps a validation tensor",
          "[varying][match]") {
  Trace t = testing::TraceFromJson(kTwoIterations);
  absl::StatusOr<MatchablePolicy> mp = MakeMatchablePolicy(t, 0, XPolicy(t));
  REQUIRE(mp.ok());
  const MatchableItem& x = mp->items[0];
  // Ranking of iteration 0: five names once each, ties by name: linear 0,
  // linear_bw 1, loss 2, relu 3, relu_bw 4. X is used by linear then relu.
  CHECK(x.key.op_count == 2);
  CHECK(x.key.op_mask == ((1u << 0) | (1u << 3)));
  CHECK(x.key.op_history == 0x0003);
  CHECK(x.decision.phase == Phase::kForward);
  CHECK(x.decision.phase_ordinal == 1);
  CHECK(x.decision.ordinal == 1);
  CHECK(x.use_index == 0);
  CHECK(x.swap_in.phase == Phase::kBackward);
  CHECK(x.swap_in.phase_ordinal == 0);
  const std::vector<uint64_t> roles_a = TensorRoles(t, 0);
  const std::vector<uint64_t> item_roles = {roles_a[1]};
  RuntimeTensorTable table;

  SECTION("fuzzy") {
    // Decision (FORWARD, 1) is op 4 of iteration 1, where X' (11) has been
    // used by linear (op 3) and relu (op 4): the key of X. The validation
    // tensor 10 has the same uses but in phase OTHER. Swap-in (BACKWARD, 0)
    // is op 6; X' is next used at op 7.
    std::unique_ptr<TensorMatcher> m = *CreateMatcher(MatcherKind::kFuzzy, *mp, {});
    AppliedPolicy a = ApplyPolicy(t, 1, *mp, item_roles, *m, table);
    CHECK(a.items == 1);
    CHECK(a.matched == 1);
    CHECK(a.mismatched == 0);
    CHECK(a.missed == 0);
    CHECK(a.uses_while_off_device == 0);
    REQUIRE(a.policy.items.size() == 1);
    const PolicyItem& it = a.policy.items[0];
    CHECK(it.tensor_id == 11);
    CHECK(it.swap_out_op == 4);
    CHECK(it.release_op == 4);
    CHECK(it.swap_in_op == 6);
    CHECK(it.first_use_op == 7);
    CHECK(a.reports[0].expected_tensor_id == 11);
    // And on its own iteration: X, ops as planned.
    AppliedPolicy own = ApplyPolicy(t, 0, *mp, item_roles, *m, table);
    CHECK(own.matched == 1);
    REQUIRE(own.policy.items.size() == 1);
    CHECK(own.policy.items[0].tensor_id == 1);
    CHECK(own.policy.items[0].swap_out_op == 1);
    CHECK(own.policy.items[0].swap_in_op == 3);
    CHECK(own.policy.items[0].first_use_op == 4);
  }
  SECTION("naive") {
    // (op 1, input 0) in iteration 1 is v1's input: validation tensor 10.
    // It is used again by op 2, before the swap-in at op 3 (ordinal of b0 in
    // iteration 0): a use while off device — a crash.
    std::unique_ptr<TensorMatcher> m = *CreateMatcher(MatcherKind::kNaive, *mp, {});
    AppliedPolicy a = ApplyPolicy(t, 1, *mp, item_roles, *m, table);
    CHECK(a.matched == 0);
    CHECK(a.mismatched == 1);
    CHECK(a.uses_while_off_device == 1);
    CHECK(a.first_off_device_op == 2);
    CHECK(a.first_off_device_tensor == 10);
    CHECK(a.reports[0].outcome == ItemOutcome::kMismatched);
    CHECK(a.reports[0].tensor_id == 10);
    CHECK(a.reports[0].expected_tensor_id == 11);
    CHECK(a.reports[0].next_use_op == 2);
    CHECK(a.reports[0].swap_in_op == 3);
    // Simulated as a stalling passive swap-in at the use.
    REQUIRE(a.policy.items.size() == 1);
    CHECK(a.policy.items[0].swap_out_op == 1);
    CHECK(a.policy.items[0].release_op == 1);
    CHECK(a.policy.items[0].swap_in_op == 2);
    CHECK(a.policy.items[0].first_use_op == 2);
    // On its own iteration the naive key is exact.
    AppliedPolicy own = ApplyPolicy(t, 0, *mp, item_roles, *m, table);
    CHECK(own.matched == 1);
    CHECK(own.uses_while_off_device == 0);
  }
}

TEST_CASE("Recomputed keys equal Chameleon's stored keys", "[varying][match]") {
  // Four-layer GPT-2-shaped model with a small vocabulary (activations make
  // the peak) on a device slowed to 1% of its roofline (so the link can move
  // enough during the forward pass); one iteration, budget 85% of the peak.
  SynthOptions o = testing::SmallGpt2Options();
  absl::StatusOr<Trace> t = SynthesizeTrace(o);
  REQUIRE(t.ok());
  ChameleonOptions co;
  co.min_tensor_bytes = 0;
  ChameleonPlanner planner(co);
  PlanningProblem problem;
  problem.trace = &*t;
  problem.iteration = 0;
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*t);
  REQUIRE(curve.ok());
  problem.device.capacity_bytes = curve->iterations()[0].peak_unswapped.bytes * 85 / 100;
  problem.device.h2d_bandwidth_bytes_per_s = 25e9;
  problem.device.d2h_bandwidth_bytes_per_s = 25e9;
  absl::StatusOr<Policy> p = planner.Plan(problem);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  REQUIRE(!p->items.empty());
  absl::StatusOr<MatchablePolicy> mp = MakeMatchablePolicy(*t, 0, *p);
  REQUIRE(mp.ok());
  for (size_t k = 0; k < p->items.size(); ++k) {
    INFO("item " << k);
    const RuntimeKey& stored = p->items[k].runtime_key;
    const MatchableItem& m = mp->items[k];
    CHECK(m.key.op_count == stored.op_count);
    CHECK(m.key.op_mask == stored.op_mask);
    CHECK(m.key.op_history == stored.op_history);
    CHECK(m.dtype == stored.dtype);
    CHECK(m.size_bytes == stored.size_bytes);
    CHECK(m.decision.ordinal == p->items[k].swap_out_op);
  }
  // Applied to its own iteration, the fuzzy matcher finds every tensor.
  std::unique_ptr<TensorMatcher> m = *CreateMatcher(MatcherKind::kFuzzy, *mp, {});
  RuntimeTensorTable table;
  const std::vector<uint64_t> roles = TensorRoles(*t, 0);
  std::vector<uint64_t> item_roles;
  for (const PolicyItem& it : p->items) item_roles.push_back(roles[it.tensor_id]);
  AppliedPolicy a = ApplyPolicy(*t, 0, *mp, item_roles, *m, table);
  CHECK(a.matched == static_cast<int32_t>(p->items.size()));
  CHECK(a.mismatched == 0);
  CHECK(a.missed == 0);
  CHECK(a.uses_while_off_device == 0);
}

TEST_CASE("Matching errors name the item", "[varying][match]") {
  Trace t = testing::TraceFromJson(kTwoIterations, "two.json");
  Policy p = XPolicy(t);
  p.items[0].tensor_id = 99;
  CHECK(MakeMatchablePolicy(t, 0, p).status().message() ==
        "policy runtime: policy item 0 (tensor 99): no such tensor in two.json");
  p = XPolicy(t);
  p.items[0].tensor_id = 3;  // made by op 2, after swap_out_op 1
  CHECK(MakeMatchablePolicy(t, 0, p).status().message() ==
        "policy runtime: policy item 0 (tensor 3): not used in iteration 0 at or before swap_out_op 1");
  p = XPolicy(t);
  p.items[0].first_use_op = 9;
  CHECK(MakeMatchablePolicy(t, 0, p).status().message() ==
        "policy runtime: policy item 0 (tensor 1): op 9 is outside iteration 0 of two.json (5 ops)");
  CHECK(MakeMatchablePolicy(t, 2, XPolicy(t)).status().message() ==
        "policy runtime: iteration 2 is out of range: two.json has 2 iterations");
  CHECK(MakeMatchablePolicy(t, 0, XPolicy(t), 48).status().message() ==
        "runtime keys: mask bits must be 32 or 64, got 48");
  absl::StatusOr<MatchablePolicy> mp = MakeMatchablePolicy(t, 0, XPolicy(t));
  MatcherOptions o;
  o.window_ops = -1;
  CHECK(CreateMatcher(MatcherKind::kFuzzy, *mp, o).status().message() ==
        "matcher options: window_ops is -1; must be >= 0");
  MatcherKind k;
  CHECK(ParseMatcherKind("naive", &k));
  CHECK(k == MatcherKind::kNaive);
  CHECK_FALSE(ParseMatcherKind("exact", &k));
}

}  // namespace
}  // namespace swapplan
