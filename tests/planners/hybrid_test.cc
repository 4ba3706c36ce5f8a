// The hybrid planner: every policy passes the checker, recomputes only what
// can be recomputed, and is never slower (simulated) than the swap-only
// Chameleon policy it starts from, on the recorded llama_small trace and on
// random traces (seeds logged).
#include "swapplan/planners/hybrid/hybrid_planner.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "support/planner_fixtures.h"
#include "support/test_seed.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/planners/registry.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

PlanningProblem Problem(const Trace& trace, double fraction_of_peak, int64_t peak) {
  PlanningProblem p;
  p.trace = &trace;
  p.iteration = 0;
  p.device.capacity_bytes = static_cast<int64_t>(fraction_of_peak * static_cast<double>(peak));
  p.device.h2d_bandwidth_bytes_per_s = 1e9;
  p.device.d2h_bandwidth_bytes_per_s = 1e9;
  return p;
}

int64_t Simulated(const Trace& trace, const Policy& policy, const DeviceModel& device) {
  SimulatorOptions o;
  o.device = device;
  absl::StatusOr<SimulationResult> r = Simulate(trace, policy, o);
  REQUIRE(r.ok());
  CHECK_FALSE(r->oom.occurred);
  return r->iteration_time_ns;
}

// Plans `trace` at budgets of 50 .. 95 % of its unswapped peak; whenever
// Chameleon fits, the hybrid fits too, passes the checker and is no slower.
void CrossCheck(const Trace& trace) {
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(trace);
  REQUIRE(curve.ok());
  const int64_t peak = curve->iterations()[0].peak_unswapped.bytes;
  for (double f : {0.5, 0.65, 0.8, 0.95}) {
    INFO("budget " << f << " of the peak " << peak);
    const PlanningProblem problem = Problem(trace, f, peak);
    ChameleonPlanner chameleon;
    absl::StatusOr<Policy> base = chameleon.Plan(problem);
    HybridPlanner hybrid;
    absl::StatusOr<Policy> p = hybrid.Plan(problem);
    if (!base.ok()) continue;
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    absl::StatusOr<CheckReport> c = CheckPolicy(trace, *p);
    REQUIRE(c.ok());
    INFO(testing::ViolationMessages(*c));
    CHECK(c->violations.empty());
    CHECK(Simulated(trace, *p, problem.device) <= Simulated(trace, *base, problem.device));
  }
}

TEST_CASE("hybrid: registered, with its option table", "[hybrid]") {
  absl::StatusOr<std::unique_ptr<Planner>> p = CreatePlanner("hybrid");
  REQUIRE(p.ok());
  CHECK((*p)->name() == "hybrid");
  CHECK((*p)->SetOption("variants", "3").ok());
  absl::Status bad = (*p)->SetOption("min_ratio", "0");
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.message()), Catch::Contains("0 < min_ratio <= max_ratio"));
}

TEST_CASE("hybrid: recorded llama_small trace, never slower than swap-only", "[hybrid]") {
  absl::StatusOr<Trace> t =
      ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) + "/traces/llama_small.json.gz");
  REQUIRE(t.ok());
  CrossCheck(*t);
}

TEST_CASE("hybrid: random traces, never slower than swap-only", "[hybrid]") {
  const uint64_t seed = testing::TestSeed("hybrid random traces");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 10; ++k) {
    const uint64_t s = rng();
    INFO("trace seed " << s);
    CrossCheck(testing::RandomTrace(s));
  }
}

// prune_variants skips cut-offs by a lower bound on their simulated time:
// the policy must be the one planning every cut-off gives, item for item.
void SamePolicyPruned(const Trace& trace, const PlanningProblem& problem) {
  HybridPlanner pruned;
  HybridOptions all_options;
  all_options.prune_variants = false;
  HybridPlanner all(all_options);
  absl::StatusOr<Policy> a = pruned.Plan(problem);
  absl::StatusOr<Policy> b = all.Plan(problem);
  REQUIRE(a.ok() == b.ok());
  if (!a.ok()) {
    CHECK(a.status() == b.status());
    return;
  }
  REQUIRE(a->items.size() == b->items.size());
  for (size_t i = 0; i < a->items.size(); ++i) {
    INFO("item " << i);
    CHECK(a->items[i].tensor_id == b->items[i].tensor_id);
    CHECK(a->items[i].action == b->items[i].action);
    CHECK(a->items[i].swap_in_op == b->items[i].swap_in_op);
    CHECK(a->items[i].release_op == b->items[i].release_op);
    CHECK(a->items[i].recompute_ns == b->items[i].recompute_ns);
    CHECK(a->items[i].clean == b->items[i].clean);
    CHECK(a->items[i].tier == b->items[i].tier);
  }
  CHECK(testing::OpWindows(*a) == testing::OpWindows(*b));  // out, release, in, use
  CHECK(Simulated(trace, *a, problem.device) == Simulated(trace, *b, problem.device));
}

TEST_CASE("hybrid: pruning cut-offs keeps the policy (4-layer llama, random traces)",
          "[hybrid]") {
  absl::StatusOr<Trace> t = ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) +
                                      "/traces/llama2-7b-4layers-dp8-seq4096.trace.gz");
  REQUIRE(t.ok());
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*t);
  REQUIRE(curve.ok());
  const int64_t peak = curve->iterations()[0].peak_unswapped.bytes;
  for (double f : {0.6, 0.75, 0.9}) {
    INFO("llama 4 layers, budget " << f << " of the peak");
    PlanningProblem problem = Problem(*t, f, peak);
    problem.device.h2d_bandwidth_bytes_per_s = 22e9;  // the trace's link, about
    problem.device.d2h_bandwidth_bytes_per_s = 24e9;
    SamePolicyPruned(*t, problem);
  }
  const uint64_t seed = testing::TestSeed("hybrid prune");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 6; ++k) {
    const uint64_t s = rng();
    INFO("trace seed " << s);
    const Trace r = testing::RandomTrace(s);
    absl::StatusOr<MemoryCurve> rc = ComputeMemoryCurve(r);
    REQUIRE(rc.ok());
    for (double f : {0.5, 0.8}) {
      SamePolicyPruned(r, Problem(r, f, rc->iterations()[0].peak_unswapped.bytes));
    }
  }
}

// swap_only_last plans a subset of the sets the default order plans, or
// sets the default pruned (each slower than a variant the default checked),
// so its policy is never faster than the default's; it passes the checker
// and fits whenever it plans. Returns whether the two policies are the same.
bool HeuristicNoFaster(const Trace& trace, const PlanningProblem& problem,
                       const HybridOptions& options = {}) {
  HybridOptions full = options;
  full.swap_only_last = false;
  HybridPlanner plain(full);
  HybridOptions o = options;
  o.swap_only_last = true;
  HybridPlanner heuristic(o);
  absl::StatusOr<Policy> a = plain.Plan(problem);
  absl::StatusOr<Policy> b = heuristic.Plan(problem);
  if (!b.ok()) {
    CHECK(b.status().code() == absl::StatusCode::kResourceExhausted);
    return !a.ok();
  }
  CheckOptions co;
  co.device = problem.device;
  absl::StatusOr<CheckReport> report = CheckPolicy(trace, *b, co);
  REQUIRE(report.ok());
  CHECK(report->violations.empty());
  const int64_t tb = Simulated(trace, *b, problem.device);
  CHECK(tb >= 0);  // fits
  if (!a.ok()) return false;
  const int64_t ta = Simulated(trace, *a, problem.device);
  CHECK(tb >= ta);
  if (a->items.size() != b->items.size()) return false;
  for (size_t i = 0; i < a->items.size(); ++i) {
    if (a->items[i].tensor_id != b->items[i].tensor_id ||
        a->items[i].action != b->items[i].action ||
        a->items[i].swap_in_op != b->items[i].swap_in_op) {
      return false;
    }
  }
  return true;
}

TEST_CASE("hybrid: swap_only_last is never faster than the default order", "[hybrid]") {
  absl::StatusOr<Trace> t = ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) +
                                      "/traces/llama2-7b-4layers-dp8-seq4096.trace.gz");
  REQUIRE(t.ok());
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*t);
  REQUIRE(curve.ok());
  const int64_t peak = curve->iterations()[0].peak_unswapped.bytes;
  int32_t cases = 0, same = 0;
  for (double f : {0.6, 0.75, 0.9}) {
    INFO("llama 4 layers, budget " << f << " of the peak");
    PlanningProblem problem = Problem(*t, f, peak);
    problem.device.h2d_bandwidth_bytes_per_s = 22e9;
    problem.device.d2h_bandwidth_bytes_per_s = 24e9;
    ++cases;
    same += HeuristicNoFaster(*t, problem);
  }
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    INFO("tiny trace seed " << seed);
    const Trace r = testing::TinyTrainingTrace(seed);
    absl::StatusOr<MemoryCurve> rc = ComputeMemoryCurve(r);
    REQUIRE(rc.ok());
    for (double f : {0.6, 0.8}) {
      ++cases;
      HybridOptions small;
      small.swap_min_tensor_bytes = 0;  // 100-byte tensors
      same += HeuristicNoFaster(r, Problem(r, f, rc->iterations()[0].peak_unswapped.bytes), small);
    }
  }
  WARN("swap_only_last: the default order's policy in " << same << " of " << cases << " cases");
}

TEST_CASE("hybrid: swap_only_last option", "[hybrid]") {
  HybridPlanner p;
  CHECK(p.options().swap_only_last);
  CHECK(p.options().swap_only_skip_overhead_fraction == 0.05);
  REQUIRE(p.SetOption("swap-only-last", "false").ok());
  CHECK_FALSE(p.options().swap_only_last);
  absl::Status bad = p.SetOption("swap_only_last", "sometimes");
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(p.SetOption("swap-only-skip-overhead", "0.1").ok());
  CHECK(p.options().swap_only_skip_overhead_fraction == 0.1);
  absl::Status negative = p.SetOption("swap-only-skip-overhead", "-0.1");
  CHECK(negative.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(negative.message()), Catch::Contains("must be a finite fraction >= 0"));
}

TEST_CASE("hybrid: prune_variants option", "[hybrid]") {
  HybridPlanner p;
  CHECK(p.options().prune_variants);
  REQUIRE(p.SetOption("prune-variants", "false").ok());
  CHECK_FALSE(p.options().prune_variants);
  absl::Status bad = p.SetOption("prune_variants", "maybe");
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace swapplan
