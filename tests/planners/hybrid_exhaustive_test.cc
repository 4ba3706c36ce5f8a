// The hybrid planner against an exhaustive reference on tiny traces (at most
// 8 ops, at most 4 candidate activations; seeds logged): every assignment of
// keep / swap / recompute to the candidates, each swap with every swap-in
// trigger between its release and its first backward use, is simulated and
// checked; the best clean one is the reference. The hybrid's policy must
// pass the checker and run without OOM whenever it plans, and its simulated
// time is compared with the reference's. The hybrid is a heuristic (a
// ladder of cut-offs, Chameleon's swap placement): it guarantees neither
// that it plans whenever some assignment fits nor the reference's time, so
// the test states measured tolerances (below), tight enough that the
// planner before the unhoisted retry fails them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <string>
#include <vector>

#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "planners/baselines/common.h"
#include "swapplan/planners/hybrid/hybrid_planner.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {
namespace {

// Simulated time of a clean (checker) policy that fits, else -1.
int64_t CleanTime(const Trace& trace, const Policy& p, const Simulator& sim,
                  const DeviceModel& device) {
  absl::StatusOr<SimulationResult> r = sim.Run(p);
  if (!r.ok() || r->oom.occurred) return -1;
  CheckOptions co;
  co.device = device;
  absl::StatusOr<CheckReport> c = CheckPolicy(trace, p, co);
  if (!c.ok() || !c->violations.empty()) return -1;
  return r->iteration_time_ns;
}

struct Reference {
  int64_t best_ns = -1;  // -1: no assignment fits
  int64_t assignments = 0;
};

// Every keep / recompute / swap(trigger) assignment of the candidates.
Reference Exhaustive(const PlanningProblem& problem, const Simulator& sim) {
  const Trace& trace = *problem.trace;
  const std::vector<ActivationWindow> windows = ActivationWindows(trace, 0);
  // Options per candidate: 0 keep, 1 recompute, 2 + k swap triggered at
  // last_forward_use + 1 + k.
  std::vector<int32_t> count;
  for (const ActivationWindow& w : windows) {
    count.push_back(2 + std::max(0, w.first_backward_use - w.last_forward_use));
  }
  Reference ref;
  std::vector<int32_t> choice(windows.size(), 0);
  while (true) {
    Policy p = BaselinePolicy(problem, "reference", {});
    for (size_t i = 0; i < windows.size(); ++i) {
      const ActivationWindow& w = windows[i];
      if (choice[i] == 0) continue;
      const int32_t in = choice[i] == 1 ? w.first_backward_use : w.last_forward_use + choice[i] - 1;
      PolicyItem item = MakePolicyItem(trace, 0, w.tensor, w.last_forward_use, w.last_forward_use,
                                       in, w.first_backward_use);
      if (choice[i] == 1) item.action = ItemAction::kRecompute;
      p.items.push_back(std::move(item));
    }
    std::sort(p.items.begin(), p.items.end(), [](const PolicyItem& a, const PolicyItem& b) {
      return std::tie(a.swap_in_op, a.first_use_op, a.tensor_id) <
             std::tie(b.swap_in_op, b.first_use_op, b.tensor_id);
    });
    ++ref.assignments;
    // Exact recipe costs (an item that cannot be recomputed is dropped: the
    // same assignment with that tensor kept, enumerated anyway).
    if (MakeRecomputeExact(problem, &p).ok()) {
      const int64_t t = CleanTime(trace, p, sim, problem.device);
      if (t >= 0 && (ref.best_ns < 0 || t < ref.best_ns)) ref.best_ns = t;
    }
    size_t i = 0;
    while (i < choice.size() && ++choice[i] == count[i]) choice[i++] = 0;
    if (i == choice.size()) break;
  }
  return ref;
}

TEST_CASE("hybrid: exhaustive keep/swap/recompute reference on tiny traces",
          "[hybrid][exhaustive]") {
  int32_t compared = 0, both_fit = 0, hybrid_missed = 0, within_10 = 0;
  double worst_ratio = 1.0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {  // seeds logged by INFO on failure
    INFO("seed " << seed);
    const Trace t = testing::TinyTrainingTrace(seed);
    REQUIRE(t.iteration(0).num_ops() <= 8);
    absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
    REQUIRE(curve.ok());
    const int64_t peak = curve->iterations()[0].peak_unswapped.bytes;
    for (int64_t cut : {100, 200, 300}) {
      const int64_t budget = peak - cut;
      INFO("budget " << budget << " (peak " << peak << ")");
      PlanningProblem problem;
      problem.trace = &t;
      problem.device = {.capacity_bytes = budget,
                        .h2d_bandwidth_bytes_per_s = 1e9,
                        .d2h_bandwidth_bytes_per_s = 1e9};
      SimulatorOptions so;
      so.device = problem.device;
      absl::StatusOr<Simulator> sim = Simulator::Create(t, 0, so);
      REQUIRE(sim.ok());
      const Reference ref = Exhaustive(problem, *sim);
      HybridOptions ho;
      ho.swap_min_tensor_bytes = 0;  // 100-byte tensors
      HybridPlanner hybrid(ho);
      absl::StatusOr<Policy> p = hybrid.Plan(problem);
      ++compared;
      if (!p.ok()) {
        INFO(p.status().ToString());
        CHECK(p.status().code() == absl::StatusCode::kResourceExhausted);
        if (ref.best_ns >= 0) ++hybrid_missed;
        continue;
      }
      // Whatever the hybrid returns fits and passes the checker.
      const int64_t h = CleanTime(t, *p, *sim, problem.device);
      CHECK(h >= 0);
      if (h < 0 || ref.best_ns < 0) continue;
      ++both_fit;
      const double ratio = static_cast<double>(h) / static_cast<double>(ref.best_ns);
      worst_ratio = std::max(worst_ratio, ratio);
      within_10 += ratio <= 1.10;
      INFO("hybrid " << h << " ns, reference " << ref.best_ns << " ns over " << ref.assignments
                     << " assignments");
    }
  }
  WARN("tiny traces: " << compared << " instances, both fit " << both_fit << ", hybrid missed "
                       << hybrid_missed << ", within 10 % " << within_10 << ", worst ratio "
                       << worst_ratio);
  // Stated tolerances (measured 2026-11-26 on these 60 seeds x 3 budgets:
  // 180 instances; the reference fits 125, the hybrid 123 of them (both fit
  // 123, hybrid missed 2), 81 within 10 % of the reference, worst 1.66x).
  // Before the unhoisted retry (hybrid_planner.cc: a variant that does not
  // fit is planned again with every chained tensor re-made as a transient
  // instead of held from the earlier recipe) the hybrid missed 28 of the
  // 125 and was within 10 % on 73: each bound below fails on that code. The
  // two misses need a recompute set the cut-off ladder does not offer (a
  // rank prefix by rho; docs/hybrid.md). On a miss the hybrid reports
  // ResourceExhausted; it never returned a policy that does not fit.
  const int32_t reference_fits = both_fit + hybrid_missed;
  CHECK(reference_fits >= 120);
  CHECK(hybrid_missed * 40 <= reference_fits);  // misses <= 2.5 % (was 22 %)
  CHECK(within_10 * 100 >= reference_fits * 64);  // >= 64 % within 10 % (was 58 %)
  CHECK(worst_ratio <= 1.7);
}

// Seed 7 (3 forward ops 0-2, backward ops 3-5): t1 (300 B, made by op 0
// from the parameter, read by op 1 and last by op 5) and t2 (300 B, made by
// op 1, read by op 2 and op 4). At the budget peak -
// 100 B the reference recomputes t1 before op 5. Both have rho about 0.5, so
// the ladder offers {t1, t2} together: t2's recipe before op 4 chains
// through t1, and hoisting t1 there holds it through op 4, the peak — over
// budget. The retry without hoisting re-makes t1 as a transient of t2's
// recipe and again before op 5, and fits (before the retry:
// ResourceExhausted).
TEST_CASE("hybrid: a chained tensor re-made as a transient when hoisting breaks the budget",
          "[hybrid][exhaustive]") {
  const Trace t = testing::TinyTrainingTrace(7);
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
  REQUIRE(curve.ok());
  const int64_t peak = curve->iterations()[0].peak_unswapped.bytes;
  REQUIRE(peak == 1300);
  const PlanningProblem problem = testing::OneBytePerNsProblem(t, peak - 100);
  HybridOptions ho;
  ho.swap_min_tensor_bytes = 0;
  absl::StatusOr<Policy> p = HybridPlanner(ho).Plan(problem);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  SimulatorOptions so;
  so.device = problem.device;
  absl::StatusOr<Simulator> sim = Simulator::Create(t, 0, so);
  REQUIRE(sim.ok());
  // Ops 0..5 take 150, 140, 60, 60, 130, 140 ns (ideal 680). Both tensors
  // are recomputed: t1 (made by op 0) dropped after op 1 and re-made before
  // op 5: 150 ns; t2 (made by op 1 from t1) dropped after op 2 and re-made
  // before op 4 with t1 re-made inside its recipe as a transient: 150 + 140
  // = 290 ns. No stall: 680 + 150 + 290 = 1120 ns.
  CHECK(testing::OpWindows(*p) == std::vector<testing::OpWindow>{{1, 1, 1, 5, 5}, {2, 2, 2, 4, 4}});
  REQUIRE(p->items.size() == 2);
  CHECK(p->items[0].action == ItemAction::kRecompute);
  CHECK(p->items[1].action == ItemAction::kRecompute);
  CHECK(p->items[0].recompute_ns == 150);
  CHECK(p->items[1].recompute_ns == 290);
  CHECK(CleanTime(t, *p, *sim, problem.device) == 1120);
}

}  // namespace
}  // namespace swapplan
