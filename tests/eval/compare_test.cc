// Oversubscription budgets (curve/oversubscription.h) and the comparison
// engine (eval/compare.h) on the two-layer toy of
// tests/planners/chameleon_test.cc: unswapped peak 1200 bytes at op 5,
// persistent 200 bytes (parameter P and gradient buffer Gb), so
// budget(r) = 200 + 1000 / r.
#include <cmath>
#include <limits>
#include <random>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

#include "support/test_seed.h"
#include "support/test_traces.h"
#include "swapplan/curve/oversubscription.h"
#include "swapplan/eval/compare.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

const Trace& Toy() {
  static const Trace t = testing::DataTrace("traces/chameleon_toy.json");
  return t;
}

const IterationCurve& ToyCurve() {
  static const MemoryCurve c = [] {
    absl::StatusOr<MemoryCurve> r = ComputeMemoryCurve(Toy());
    REQUIRE(r.ok());
    return std::move(r).value();
  }();
  return c.iterations()[0];
}

TEST_CASE("oversubscription: budget = persistent + (peak - persistent) / r", "[eval]") {
  const IterationCurve& c = ToyCurve();
  REQUIRE(c.peak_unswapped.bytes == 1200);
  REQUIRE(c.persistent_bytes == 200);
  CHECK(*OversubscriptionBudget(c, 1.0) == 1200);   // nothing to move
  CHECK(*OversubscriptionBudget(c, 1.25) == 1000);  // 200 + 800
  CHECK(*OversubscriptionBudget(c, 2.0) == 700);    // 200 + 500
  CHECK(*OversubscriptionBudget(c, 3.0) == 533);    // 200 + floor(333.3)
  CHECK(*OversubscriptionBudget(c, 4.0) == 450);    // 200 + 250
  CHECK(OversubscriptionOf(c, 700) == 2.0);
  CHECK(OversubscriptionOf(c, 450) == 4.0);
  CHECK(OversubscriptionOf(c, 1200) == 1.0);
  CHECK(OversubscriptionOf(c, 5000) == 1.0);
  CHECK(std::isinf(OversubscriptionOf(c, 200)));
  for (double bad : {0.0, 0.99, -2.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    absl::StatusOr<int64_t> b = OversubscriptionBudget(c, bad);
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK(OversubscriptionBudget(c, 0.5).status().message() ==
        "oversubscription 0.5 is not a finite ratio >= 1 (1 = the unswapped peak fits)");
}

TEST_CASE("oversubscription: the ratio of the budget of r is r", "[eval][property]") {
  const uint64_t seed = testing::TestSeed("oversubscription budgets");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 1000; ++i) {
    IterationCurve c;
    c.persistent_bytes = std::uniform_int_distribution<int64_t>(0, int64_t{1} << 40)(rng);
    c.peak_unswapped.bytes =
        c.persistent_bytes + std::uniform_int_distribution<int64_t>(1, int64_t{1} << 40)(rng);
    const double r = std::uniform_real_distribution<double>(1.0, 20.0)(rng);
    INFO("persistent " << c.persistent_bytes << ", peak " << c.peak_unswapped.bytes << ", r "
                       << r);
    const int64_t b = *OversubscriptionBudget(c, r);
    CHECK(b >= c.persistent_bytes);
    CHECK(b <= c.peak_unswapped.bytes);
    // b is the largest budget whose ratio is still at least r: one more byte
    // would be a smaller ratio (up to double rounding of the ratio itself).
    if (b > c.persistent_bytes) CHECK(OversubscriptionOf(c, b) >= r * (1 - 1e-12));
    if (b < c.peak_unswapped.bytes) CHECK(OversubscriptionOf(c, b + 1) <= r * (1 + 1e-12));
  }
}

TEST_CASE("an oversubscription is a device model; compare options name a bad budget",
          "[eval]") {
  // r = 2 over the toy: capacity 200 + 1000 / 2 = 700, the reserve dropped
  // (the ratio states the budget), every other figure kept.
  const DeviceModel d{.capacity_bytes = 1000, .reserve_bytes = 300,
                      .h2d_bandwidth_bytes_per_s = 1e9, .d2h_bandwidth_bytes_per_s = 2e9};
  absl::StatusOr<DeviceModel> r = OversubscribedDevice(d, ToyCurve(), 2);
  REQUIRE(r.ok());
  CHECK(r->capacity_bytes == 700);
  CHECK(r->reserve_bytes == 0);
  CHECK(r->BudgetBytes() == 700);
  CHECK(r->h2d_bandwidth_bytes_per_s == 1e9);
  CHECK(r->d2h_bandwidth_bytes_per_s == 2e9);
  CHECK(OversubscribedDevice(d, ToyCurve(), 0.5).status().message() ==
        "oversubscription 0.5 is not a finite ratio >= 1 (1 = the unswapped peak fits)");

  CompareOptions o;  // no capacity, no ratio
  CHECK(o.Validate().message() ==
        "budget: simulator.device.capacity_bytes is 0; give the device's capacity or an "
        "oversubscription");
  o.simulator.device.capacity_bytes = kUnlimitedCapacityBytes;
  CHECK(o.Validate().message() ==
        "budget: simulator.device.capacity_bytes is unlimited; give the device's capacity or an "
        "oversubscription");
  o.oversubscription = 0.5;
  CHECK(o.Validate().message() == "budget: oversubscription 0.5 is not a finite ratio >= 1");
  o.oversubscription = 2;
  CHECK(o.Validate().ok());  // the ratio replaces the capacity
  o.oversubscription = 0;
  o.simulator.device.capacity_bytes = 1000;
  o.simulator.device.reserve_bytes = 1000;
  CHECK(o.Validate().message() ==
        "simulator options: device model \"custom\": reserve_bytes must be below "
        "capacity_bytes");
  // The trace's 1000 B - 300 B = 700 B of budget, as planned and simulated.
  o.simulator.device.reserve_bytes = 300;
  o.planners = {"noswap"};
  absl::StatusOr<Comparison> c = ComparePlanners(Toy(), o);
  REQUIRE(c.ok());
  CHECK(c->budget_bytes == 700);
  CHECK(c->oversubscription == 0);
  CHECK(c->simulator.device.capacity_bytes == 1000);
  CHECK(c->simulator.device.reserve_bytes == 300);
}

TEST_CASE("compare engine: rows per planner at an oversubscription", "[eval]") {
  // r = 2 -> budget 700. noswap cannot fit (1200); recompute drops A, B, C
  // inside their layers but layer 1 still peaks at 800 at op 5 (it keeps
  // the layer's input C and the temporary T); lru evicts on demand and
  // stalls (the simulator's figures; baselines_test.cc works LRU out).
  // Registry defaults: chameleon ignores tensors under 1 MiB, so it has no
  // candidate here (chameleon_test.cc plans the toy with min 0).
  CompareOptions o;
  o.oversubscription = 2;
  o.planners = {"ideal", "noswap", "recompute", "lru"};
  o.keep_policies = true;
  int progress = 0;
  absl::StatusOr<Comparison> c =
      ComparePlanners(Toy(), o, nullptr, [&](const PlannerOutcome&) { ++progress; });
  REQUIRE(c.ok());
  CHECK(progress == 4);
  CHECK(c->budget_bytes == 700);
  CHECK(c->oversubscription == 2.0);
  CHECK(c->persistent_bytes == 200);
  CHECK(c->peak.bytes == 1200);
  CHECK(c->ideal_time_ns == 1300);
  CHECK(c->simulator.device.capacity_bytes == 700);
  CHECK(c->simulator.device.d2h_bandwidth_bytes_per_s == 2e9);  // from the trace metadata
  REQUIRE(c->rows.size() == 4);
  CHECK(c->rows[0].unlimited_memory);
  CHECK_FALSE(c->rows[0].feasible);  // its 1200-byte peak does not fit
  CHECK(c->rows[0].sim->iteration_time_ns == 1300);
  CHECK_FALSE(c->rows[1].planned);
  CHECK(c->rows[1].infeasible_reason ==
        "the iteration without swapping peaks at 1.17 KiB at op 5 (loss), 500 B over the budget "
        "of 700 B");
  CHECK_FALSE(c->rows[2].planned);
  CHECK(c->rows[2].infeasible_reason ==
        "dropping 3 activations of 2 layers peaks at 800 B at op 5 (loss), 100 B over the "
        "budget of 700 B");
  CHECK(c->rows[3].feasible);
  CHECK(c->rows[3].valid);  // lru's policy passes the checker
  CHECK(c->rows[3].sim->iteration_time_ns == 1550);  // 1300 + 250 of stall
  CHECK(c->rows[3].sim->stall_ns == 250);
  REQUIRE(c->rows[3].policy.has_value());
  CHECK(c->rows[3].policy->simulated_iteration_time_ns == 1550);
  CHECK(c->AnyFeasible());

  o.planners = {"noswap"};
  c = ComparePlanners(Toy(), o);
  REQUIRE(c.ok());
  CHECK_FALSE(c->AnyFeasible());

  o.planners = {"chameleon9"};
  CHECK(ComparePlanners(Toy(), o).status().message() ==
        "unknown planner 'chameleon9' (known: ideal, noswap, chameleon, recompute, vdnn, lru, "
        "bucket, hybrid, advisor"
        ", selective, te-offload, save-on-cpu, hyperoffload, chain)");
  o.planners = {};
  o.iteration = 1;
  CHECK(ComparePlanners(Toy(), o).status().message() ==
        absl::StrCat("iteration 1 is out of range: ", Toy().source(), " has 1 iterations"));
}

TEST_CASE("compare: a policy that fails the checker is invalid, with its first violation",
          "[eval]") {
  absl::StatusOr<Simulator> sim = Simulator::Create(Toy(), 0, {.device = {.capacity_bytes = 700}});
  REQUIRE(sim.ok());
  Policy p;
  p.fingerprint = ComputeFingerprint(Toy(), 0);
  p.device = {.capacity_bytes = 700, .h2d_bandwidth_bytes_per_s = 1e9,
              .d2h_bandwidth_bytes_per_s = 1e9};
  p.planner = "test";
  PolicyItem ghost;
  ghost.tensor_id = 999;  // not in the trace
  ghost.swap_out_op = 1;
  ghost.release_op = 1;
  ghost.swap_in_op = 3;
  ghost.first_use_op = 4;
  ghost.size_bytes = 100;
  p.items.push_back(ghost);
  PlannerOutcome row;
  REQUIRE(JudgePolicy(Toy(), *sim, 700, {.keep_policies = true}, p, &row).ok());
  CHECK(row.planned);
  CHECK_FALSE(row.valid);
  CHECK_FALSE(row.feasible);
  CHECK_FALSE(row.sim.has_value());
  CHECK_THAT(row.invalid_reason, Catch::StartsWith("item 0 (tensor 999): no such tensor in ") &&
                                     Catch::EndsWith("[unknown-tensor]"));
  CHECK(row.policy.has_value());
  // Without the item, on 700 bytes, the checker finds it over the budget
  // (the unswapped peak is 1200).
  p.items.clear();
  PlannerOutcome over;
  REQUIRE(JudgePolicy(Toy(), *sim, 700, {}, p, &over).ok());
  CHECK_FALSE(over.valid);
  CHECK(over.invalid_reason ==
        "op 5 (loss, FORWARD): 1200 bytes in use, 500 over the budget of 700 (ops 3..8 are "
        "over) [over-budget]");
  // As an unlimited-memory row (ideal): valid, simulated, its peak does not
  // fit 700.
  p.device.capacity_bytes = kUnlimitedCapacityBytes;
  PlannerOutcome ok;
  ok.unlimited_memory = true;
  REQUIRE(JudgePolicy(Toy(), *sim, 700, {}, p, &ok).ok());
  CHECK(ok.valid);
  CHECK(ok.invalid_reason.empty());
  REQUIRE(ok.sim.has_value());
  CHECK(ok.sim->peak_bytes == 1200);
  CHECK_FALSE(ok.feasible);
  CHECK_FALSE(ok.policy.has_value());
}

}  // namespace
}  // namespace swapplan
