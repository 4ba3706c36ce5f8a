// RECOMPUTE items accounted exactly by the resolver, the checker and the
// simulator: compute time before the use, the recipe's transient peak, and
// chains (an input that is itself dropped is produced again). Trace, with
// recorded durations and allocation at first use / free after last use:
//
//   op  name                  phase     in       out  ns
//   0   aten::mm              FORWARD   X        A    400
//   1   aten::silu            FORWARD   A        S     50
//   2   aten::mul             FORWARD   S A      M     50
//   3   aten::native_dropout  FORWARD   M        L    100
//   4   loss_bwd              BACKWARD  L        G    100
//   5   aten::mul_backward    BACKWARD  M A G         100
//   6   aten::silu_backward   BACKWARD  S A G         100
//
// X 100 bytes (persistent input), A S M 200, L 100, G 300. Lifetimes: A
// 0..6, S 1..6, M 2..5, L 3..4, G 4..6. Unswapped bytes per op: 300, 500,
// 700, 800, 1100, 1000, 800. Ideal time 900 ns.
//
// Policy: M RECOMPUTE (out 3, release 3, in 5, use 5, 100 ns) and S
// RECOMPUTE (out 2, release 2, in 6, use 6, 50 ns). S is off during 3..5,
// M during 4. Bytes: 300, 500, 700, 800-200 = 600, 1100-400 = 700,
// 1000-200 = 800, 800. Before op 5, M's recipe re-runs silu then mul (S is
// off: a chain), 50 + 50 = 100 ns, holding S (200 bytes) while it runs:
// 800 - (nothing allocated by op 5 itself) + 200 = 1000 bytes, the peak.
// Before op 6, S = silu(A) alone: 50 ns, no transient. Time 900 + 150.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {
namespace {

const Trace& Chain() {
  static const Trace t = testing::TraceFromJson(R"({
    "format": "swapplan-trace", "metadata": {"device_name": "toy"},
    "tensors": [
      {"id": 0, "size_bytes": 100, "kind": "INPUT", "persistent": true},
      {"id": 1, "size_bytes": 200, "kind": "ACTIVATION", "name": "A"},
      {"id": 2, "size_bytes": 200, "kind": "ACTIVATION", "name": "S"},
      {"id": 3, "size_bytes": 200, "kind": "ACTIVATION", "name": "M"},
      {"id": 4, "size_bytes": 100, "kind": "ACTIVATION", "name": "L"},
      {"id": 5, "size_bytes": 300, "kind": "GRADIENT", "name": "G"}],
    "iterations": [{"wall_time_ns": 900, "memory_events": [], "ops": [
      {"name": "aten::mm", "phase": "FORWARD", "inputs": [0], "outputs": [1], "duration_ns": 400},
      {"name": "aten::silu", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 50},
      {"name": "aten::mul", "phase": "FORWARD", "inputs": [2, 1], "outputs": [3], "duration_ns": 50},
      {"name": "aten::native_dropout", "phase": "FORWARD", "inputs": [3], "outputs": [4],
       "duration_ns": 100},
      {"name": "loss_bwd", "phase": "BACKWARD", "inputs": [4], "outputs": [5], "duration_ns": 100},
      {"name": "aten::mul_backward", "phase": "BACKWARD", "inputs": [3, 1, 5], "outputs": [],
       "duration_ns": 100},
      {"name": "aten::silu_backward", "phase": "BACKWARD", "inputs": [2, 1, 5], "outputs": [],
       "duration_ns": 100}]}]})",
                                                "chain.json");
  return t;
}

PolicyItem Recompute(uint64_t id, int64_t size, int32_t out, int32_t in, int64_t ns) {
  PolicyItem it;
  it.tensor_id = id;
  it.size_bytes = size;
  it.swap_out_op = out;
  it.release_op = out;
  it.swap_in_op = in;
  it.first_use_op = in;
  it.action = ItemAction::kRecompute;
  it.recompute_ns = ns;
  return it;
}

Policy ChainPolicy(int64_t m_ns = 100) {
  Policy p;
  p.fingerprint = ComputeFingerprint(Chain(), 0);
  p.device.capacity_bytes = 900;
  p.items = {Recompute(3, 200, 3, 5, m_ns), Recompute(2, 200, 2, 6, 50)};
  return p;
}

TEST_CASE("recompute accounting: the resolver groups items into recipes", "[recompute]") {
  absl::StatusOr<PolicyResolver> r = PolicyResolver::Create(Chain(), 0);
  REQUIRE(r.ok());
  absl::StatusOr<ResolvedPolicy> rp = r->Resolve(ChainPolicy(), DeviceModel{});
  REQUIRE(rp.ok());
  REQUIRE(rp->recomputes.size() == 2);
  // Before op 5: M with S chained (silu + mul = 100 ns, S held: 200 bytes).
  CHECK(rp->recomputes[0].position == 5);
  CHECK(rp->recomputes[0].cost_ns == 100);
  CHECK(rp->recomputes[0].stated_ns == 100);
  CHECK(rp->recomputes[0].transient_bytes == 200);
  // Before op 6: S from resident A (50 ns, nothing held).
  CHECK(rp->recomputes[1].position == 6);
  CHECK(rp->recomputes[1].cost_ns == 50);
  CHECK(rp->recomputes[1].transient_bytes == 0);
}

TEST_CASE("recompute accounting: the checker counts the transient peak", "[recompute]") {
  absl::StatusOr<CheckReport> c = CheckPolicy(Chain(), ChainPolicy());
  REQUIRE(c.ok());
  // 1000 bytes before op 5 (800 in use + S held by the chain), 100 over
  // the budget of 900; without the transient op 5 would hold 800.
  CHECK(c->peak_bytes == 1000);
  CHECK(c->peak_op == 5);
  REQUIRE(c->violations.size() == 1);
  CHECK(c->violations[0].kind == ViolationKind::kOverBudget);
  CHECK(c->violations[0].op == 5);
  CHECK(c->violations[0].bytes == 100);
  // With a budget of 1000 it passes.
  Policy p = ChainPolicy();
  p.device.capacity_bytes = 1000;
  c = CheckPolicy(Chain(), p);
  REQUIRE(c.ok());
  CHECK(c->violations.empty());
}

TEST_CASE("recompute accounting: understated cost and unrecomputable tensors are violations",
          "[recompute]") {
  Policy p = ChainPolicy(/*m_ns=*/60);
  p.device.capacity_bytes = 1000;
  absl::StatusOr<CheckReport> c = CheckPolicy(Chain(), p);
  REQUIRE(c.ok());
  REQUIRE(c->violations.size() == 1);
  CHECK(c->violations[0].kind == ViolationKind::kRecomputeUnderstated);
  CHECK_THAT(c->violations[0].message,
             Catch::Contains("state 60 ns, but re-running their 2 op(s) takes 100 ns"));
  // L comes from native_dropout: no recorded RNG state, no recompute.
  p = ChainPolicy();
  p.device.capacity_bytes = 1000;
  p.items.push_back(Recompute(4, 100, 3, 4, 100));
  c = CheckPolicy(Chain(), p);
  REQUIRE(c.ok());
  REQUIRE(c->violations.size() == 1);
  CHECK(c->violations[0].kind == ViolationKind::kNotRecomputable);
  CHECK(c->violations[0].item == 2);
  CHECK_THAT(c->violations[0].message, Catch::Contains("tensor 4 'L' in its recipe is random-state"));
}

TEST_CASE("recompute accounting: the simulator runs recipes on the compute stream",
          "[recompute]") {
  SimulatorOptions o;
  absl::StatusOr<SimulationResult> r = Simulate(Chain(), ChainPolicy(), o);
  REQUIRE(r.ok());
  CHECK(r->iteration_time_ns == 1050);  // 900 of ops + 100 + 50 re-run
  CHECK(r->recompute_ns == 150);
  CHECK(r->peak_bytes == 1000);
  CHECK(r->peak_op == 5);
  CHECK_FALSE(r->oom.occurred);
  // At 900 bytes the recipe before op 5 does not fit: 100 bytes over.
  o.device.capacity_bytes = 900;
  r = Simulate(Chain(), ChainPolicy(), o);
  REQUIRE(r.ok());
  CHECK(r->oom.occurred);
  CHECK(r->oom.op == 5);
  CHECK(r->oom.max_excess_bytes == 100);
  // An understated policy (the checker's recompute-understated) runs what
  // it states: 900 + 60 + 50.
  r = Simulate(Chain(), ChainPolicy(60), SimulatorOptions{});
  REQUIRE(r.ok());
  CHECK(r->iteration_time_ns == 1010);
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

// RecipeMemo: a resolution sharing the memo reuses a recipe only when the
// availability answers its walk depended on are the same. ChainPolicy():
// before op 5, M's walk asks about S (off: M's recipe chains through it)
// and A (resident); before op 6, S's walk asks about A. Second resolution
// of the same policy: both recipes reused (2 hits), same figures. Then a
// policy with only M's item: S is resident at op 5, so the remembered
// answer "S off" no longer holds: a miss, and M = mul(S, A) alone, 50 ns,
// no transient, exactly what a resolution without the memo gives.
TEST_CASE("recompute accounting: a recipe memo reuses walks only with the same answers",
          "[recompute]") {
  absl::StatusOr<PolicyResolver> r = PolicyResolver::Create(Chain(), 0);
  REQUIRE(r.ok());
  absl::StatusOr<RecomputeAnalysis> analysis = RecomputeAnalysis::Build(Chain(), 0, DeviceModel{});
  REQUIRE(analysis.ok());
  RecipeMemo memo;
  const ResolveOptions o{.all_issues = true, .recompute_analysis = &*analysis,
                         .recipe_memo = &memo};
  absl::StatusOr<ResolvedPolicy> first = r->Resolve(ChainPolicy(), DeviceModel{}, o);
  REQUIRE(first.ok());
  CHECK(memo.misses == 2);
  CHECK(memo.hits == 0);
  absl::StatusOr<ResolvedPolicy> again = r->Resolve(ChainPolicy(), DeviceModel{}, o);
  REQUIRE(again.ok());
  CHECK(memo.misses == 2);
  CHECK(memo.hits == 2);
  REQUIRE(again->recomputes.size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    CHECK(again->recomputes[k].cost_ns == first->recomputes[k].cost_ns);
    CHECK(again->recomputes[k].transient_bytes == first->recomputes[k].transient_bytes);
    CHECK(again->recomputes[k].leaves == first->recomputes[k].leaves);
    CHECK(again->recomputes[k].intermediates == first->recomputes[k].intermediates);
  }
  CHECK(again->recomputes[0].cost_ns == 100);  // silu + mul

  Policy only_m = ChainPolicy(50);
  only_m.items.pop_back();  // S stays resident
  absl::StatusOr<ResolvedPolicy> with_memo = r->Resolve(only_m, DeviceModel{}, o);
  absl::StatusOr<ResolvedPolicy> fresh = r->Resolve(only_m, DeviceModel{}, {.all_issues = true});
  REQUIRE(with_memo.ok());
  REQUIRE(fresh.ok());
  CHECK(memo.misses == 3);
  CHECK(memo.hits == 2);
  REQUIRE(with_memo->recomputes.size() == 1);
  CHECK(with_memo->recomputes[0].cost_ns == 50);  // mul alone: S and A resident
  CHECK(with_memo->recomputes[0].transient_bytes == 0);
  CHECK(with_memo->recomputes[0].cost_ns == fresh->recomputes[0].cost_ns);
  CHECK(with_memo->recomputes[0].leaves == fresh->recomputes[0].leaves);
  CHECK(with_memo->recomputes[0].intermediates.empty());
  CHECK(with_memo->issues.size() == fresh->issues.size());
}

}  // namespace
}  // namespace swapplan
