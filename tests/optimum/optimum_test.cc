// The exact bound (optimum/): CBC on a toy MILP, the swap model on tiny
// traces with hand-worked optima, and a cross-check against brute force
// over every policy of the model's class on random traces of at most 8
// tensors.
#include "swapplan/optimum/optimum.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/checker.h"

namespace swapplan {
namespace {

// Six ops, A (tensor 1, 100 bytes) made by op 0 and read by op 5, B (tensor
// 2, 100 bytes) a temporary of op 2; op 0 takes 200 ns, the others 100 ns.
// `bw` bytes/ns both ways.
Trace SixOps(double bw_bytes_per_ns) {
  return testing::TraceFromJson(
      R"({"format": "swapplan-trace", "metadata": {"device_name": "toy",
          "h2d_bandwidth_bytes_per_s": )" +
      std::to_string(bw_bytes_per_ns * 1e9) + R"(, "d2h_bandwidth_bytes_per_s": )" +
      std::to_string(bw_bytes_per_ns * 1e9) + R"(},
          "tensors": [{"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                      {"id": 2, "size_bytes": 100, "kind": "TEMPORARY"}],
          "iterations": [{"wall_time_ns": 0, "ops": [
            {"name": "f0", "phase": "FORWARD", "outputs": [1], "duration_ns": 200},
            {"name": "f1", "phase": "FORWARD", "duration_ns": 100},
            {"name": "f2", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
            {"name": "b0", "phase": "BACKWARD", "duration_ns": 100},
            {"name": "b1", "phase": "BACKWARD", "duration_ns": 100},
            {"name": "b2", "phase": "BACKWARD", "inputs": [1], "duration_ns": 100}]}]})");
}

PlanningProblem Problem(const Trace& t, int64_t budget) {
  return {.trace = &t,
          .iteration = 0,
          .device = {.capacity_bytes = budget,
                     .h2d_bandwidth_bytes_per_s = t.metadata().h2d_bandwidth_bytes_per_s,
                     .d2h_bandwidth_bytes_per_s = t.metadata().d2h_bandwidth_bytes_per_s}};
}

OptimumResult Solve(const Trace& t, int64_t budget, bool recompute = true,
                    std::vector<Policy> warm = {}) {
  OptimumOptions o;
  o.recompute = recompute;
  o.time_limit_ns = 60'000'000'000;
  absl::StatusOr<OptimumResult> r = ComputeOptimum(Problem(t, budget), o, {}, warm);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

TEST_CASE("CBC solves a small knapsack", "[optimum]") {
  // max 3a + 4b + 5c  s.t. 2a + 3b + 4c <= 5, binary: a + b (weight 5,
  // value 7) beats c alone (5) and a + c (weight 6 > 5).
  MilpProblem p;
  const int32_t a = p.AddColumn(0, 1, -3, true);
  const int32_t b = p.AddColumn(0, 1, -4, true);
  const int32_t c = p.AddColumn(0, 1, -5, true);
  p.AddRow({{a, 2}, {b, 3}, {c, 4}}, -kMilpInfinity, 5);
  absl::StatusOr<MilpSolution> s = SolveMilp(p, {});
  REQUIRE(s.ok());
  CHECK(s->status == MilpStatus::kOptimal);
  CHECK(s->objective == Approx(-7));
  CHECK(s->best_bound == Approx(-7));
  CHECK(s->values[a] == Approx(1));
  CHECK(s->values[b] == Approx(1));
  CHECK(s->values[c] == Approx(0));
  CHECK(p.MaxViolation(s->values) < 1e-6);

  // x >= 2 with x binary: infeasible.
  MilpProblem q;
  const int32_t x = q.AddColumn(0, 1, 1, true);
  q.AddRow({{x, 1}}, 2, kMilpInfinity);
  s = SolveMilp(q, {});
  REQUIRE(s.ok());
  CHECK(s->status == MilpStatus::kInfeasible);

  MilpOptions bad;
  bad.start = {{7, 1.0}};
  CHECK(SolveMilp(q, bad).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a swap the link hides reaches the ideal time", "[optimum]") {
  // 1 byte/ns: copies take 100 ns. Budget 100: op 2 holds A and B (200).
  //   t       0     200   300   400   500   600   700
  //   compute |op0  |op1  |op2  |op3  |op4  |op5  |
  //   d2h           |A->  |                         release after op 1: done at 300
  //   h2d                       |<-A  |             trigger op 3 (reach 400), done 500
  // Ideal = 200 + 5 * 100 = 700; no stall, so the optimum is 700.
  Trace t = SixOps(1.0);
  OptimumResult r = Solve(t, 100);
  CHECK(r.ideal_ns == 700);
  CHECK(r.lower_bound_ns == 700);
  CHECK(r.incumbent_ns == 700);
  CHECK(r.proven_optimal);
  CHECK(r.gap == 0.0);
  CHECK(r.model.over_budget_ops == 1);
  // A: one SWAP and one RECOMPUTE window (B has no gap).
  CHECK(r.model.windows[static_cast<int>(WindowKind::kSwap)] == 1);
  CHECK(r.model.windows[static_cast<int>(WindowKind::kRecompute)] == 1);
  REQUIRE(r.policy.has_value());
  REQUIRE(r.policy->items.size() == 1);
  const PolicyItem& it = r.policy->items[0];
  CHECK(it.action == ItemAction::kSwap);
  CHECK(it.swap_out_op == 0);
  CHECK(it.release_op == 1);
  CHECK(it.first_use_op == 5);
  absl::StatusOr<CheckReport> check = CheckPolicy(t, *r.policy);
  REQUIRE(check.ok());
  CHECK(check->clean());
}

TEST_CASE("a slow link: the release waits and the optimum says how long", "[optimum]") {
  // 0.5 byte/ns: copies take 200 ns. Release is after op 1 (the only op
  // before the over-budget op 2), so op 2 waits for the copy out:
  //   t       0     200   300   400   500   600   700   800
  //   compute |op0  |op1  |wait |op2  |op3  |op4  |op5  |
  //   d2h           |A->        |                         done at 400: op 2 starts at 400
  //   h2d                             |<-A        |       trigger op 3 (reach 500), done 700
  // op 5 starts at max(700, 700) = 700: T = 800. A later trigger is worse
  // (op 4: reach 600, done 800, T = 900). Recomputing A costs op 0 again
  // (200 ns) in front of a later op: 700 + 200 = 900. Optimum 800.
  Trace t = SixOps(0.5);
  OptimumResult r = Solve(t, 100);
  CHECK(r.ideal_ns == 700);
  CHECK(r.lower_bound_ns == 800);
  CHECK(r.incumbent_ns == 800);
  CHECK(r.proven_optimal);
  CHECK(r.exact);
  REQUIRE(r.policy->items.size() == 1);
  CHECK(r.policy->items[0].action == ItemAction::kSwap);
  CHECK(r.policy->items[0].swap_in_op == 3);
  // The checker sees the release before the copy ends: a planned wait.
  CHECK(r.policy->items[0].release_waits_for_copy);
}

TEST_CASE("recomputation wins when the link is slow enough", "[optimum]") {
  // 0.25 byte/ns: copies take 400 ns.
  // Swap: copy out [200, 600], op 2 waits until 600 (stall 300); op 3 runs
  //   [700, 800] -> copy in from 700 (trigger op 3) to 1100; op 5 waits
  //   until 1100: T = 1200.
  // Recompute: A dropped after op 1, re-made by op 0's 200 ns before a
  //   backward op: 700 + 200 = 900.
  Trace t = SixOps(0.25);
  OptimumResult with = Solve(t, 100, /*recompute=*/true);
  CHECK(with.lower_bound_ns == 900);
  CHECK(with.incumbent_ns == 900);
  CHECK(with.proven_optimal);
  REQUIRE(with.policy->items.size() == 1);
  CHECK(with.policy->items[0].action == ItemAction::kRecompute);
  CHECK(with.policy->items[0].recompute_ns == 200);

  OptimumResult without = Solve(t, 100, /*recompute=*/false);
  CHECK(without.lower_bound_ns == 1200);
  CHECK(without.incumbent_ns == 1200);
  CHECK(without.proven_optimal);
  CHECK(without.model.windows[static_cast<int>(WindowKind::kRecompute)] == 0);
  REQUIRE(without.policy->items.size() == 1);
  CHECK(without.policy->items[0].action == ItemAction::kSwap);
}

TEST_CASE("a recomputation's input coming back at the recompute op is not yet there",
          "[optimum]") {
  // P (tensor 0, PARAMETER, 100 B) feeds f0, which makes A (tensor 1,
  // 100 B) in 10 ns; f1 makes X (300 B), f2 Y (100 B), b3 G1 (100 B),
  // b4 reads A, P and G1. 1 byte/ns: a copy of 100 B takes 100 ns.
  //   resident  op0 200, op1 500, op2 600, op3 700, op4 400 (X, Y freed)
  // Budget 500: op 2 needs 100 B off, op 3 200 B: both A and P off during
  // op 3, so both come back at op 4 (a trigger at 3 holds them during 3).
  // Recomputing A at op 4 needs P, whose copy in triggered at op 4 is still
  // on the link (the resolver's and the checker's view): not a policy.
  // (That one would run op 4 at max(310 + 10, 310 + 100) = 410, T = 510;
  // the model used to take it and the checker refused it.)
  // Swapping both: outs [10, 110] (P), [110, 210] (A), no stall; ins after
  // op 3 ends at 310: [310, 410], [410, 510]; op 4 [510, 610]: T = 610.
  Trace t = testing::TraceFromJson(
      R"({"format": "swapplan-trace", "metadata": {"device_name": "toy",
          "h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
          "tensors": [{"id": 0, "size_bytes": 100, "kind": "PARAMETER"},
                      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                      {"id": 2, "size_bytes": 300, "kind": "ACTIVATION"},
                      {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"},
                      {"id": 4, "size_bytes": 100, "kind": "GRADIENT"},
                      {"id": 5, "size_bytes": 100, "kind": "GRADIENT"}],
          "iterations": [{"wall_time_ns": 0, "ops": [
            {"name": "f0", "phase": "FORWARD", "inputs": [0], "outputs": [1], "duration_ns": 10},
            {"name": "f1", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 100},
            {"name": "f2", "phase": "FORWARD", "inputs": [2], "outputs": [3], "duration_ns": 100},
            {"name": "b3", "phase": "BACKWARD", "inputs": [3, 2], "outputs": [4],
             "duration_ns": 100},
            {"name": "b4", "phase": "BACKWARD", "inputs": [1, 0, 4], "outputs": [5],
             "duration_ns": 100}]}]})");
  for (int32_t pairs : {0, 20000}) {
    INFO("max_order_pairs " << pairs);
    OptimumOptions o;
    o.time_limit_ns = 60'000'000'000;
    o.max_order_pairs = pairs;
    absl::StatusOr<OptimumResult> r = ComputeOptimum(Problem(t, 500), o);
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    CHECK(r->model.windows[static_cast<int>(WindowKind::kRecompute)] >= 1);  // offered
    // Without pairwise orders both copies in may start "first in line"
    // (the batch relaxation): the bound may be as low as 510.
    CHECK(r->lower_bound_ns <= 610);
    if (pairs > 0) CHECK(r->lower_bound_ns == 610);
    CHECK(r->incumbent_ns == 610);
    REQUIRE(r->policy.has_value());
    REQUIRE(r->policy->items.size() == 2);
    for (const PolicyItem& item : r->policy->items) {
      CHECK(item.action == ItemAction::kSwap);
      CHECK(item.swap_in_op == 4);
    }
    absl::StatusOr<CheckReport> check = CheckPolicy(t, *r->policy);
    REQUIRE(check.ok());
    CHECK(check->violations.empty());
  }
}

TEST_CASE("recompute transients: the producer's other outputs must fit", "[optimum]") {
  // SixOps at 0.25 byte/ns with two more tensors: op 0 also makes C (50 B,
  // a temporary read by nothing else), op 3 makes D (50 B) that op 5 reads.
  //   op     0    1    2    3    4    5
  //   bytes  150  100  200  150  150  150   (A + C, A, A + B, A + D, ...)
  // Budget 150: op 2 is over, so A (100 B) must be off there.
  // Without transients: recompute A (op 0's 200 ns) before op 3, 4 or 5:
  //   T = 700 + 200 = 900, as in the test above.
  // With transients: re-running op 0 re-makes C beside A and D:
  //   100 + 50 + 50 = 200 > 150 at every trigger (3, 4, 5), so A is swapped:
  //   copy out [200, 600], op 2 waits until 600, trigger op 3 (reach 700),
  //   in [700, 1100], op 5 starts at 1100: T = 1200.
  Trace t = testing::TraceFromJson(
      R"({"format": "swapplan-trace", "metadata": {"device_name": "toy",
          "h2d_bandwidth_bytes_per_s": 250000000, "d2h_bandwidth_bytes_per_s": 250000000},
          "tensors": [{"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                      {"id": 2, "size_bytes": 100, "kind": "TEMPORARY"},
                      {"id": 3, "size_bytes": 50, "kind": "TEMPORARY"},
                      {"id": 4, "size_bytes": 50, "kind": "GRADIENT"}],
          "iterations": [{"wall_time_ns": 0, "ops": [
            {"name": "f0", "phase": "FORWARD", "outputs": [1, 3], "duration_ns": 200},
            {"name": "f1", "phase": "FORWARD", "duration_ns": 100},
            {"name": "f2", "phase": "FORWARD", "outputs": [2], "duration_ns": 100},
            {"name": "b0", "phase": "BACKWARD", "outputs": [4], "duration_ns": 100},
            {"name": "b1", "phase": "BACKWARD", "duration_ns": 100},
            {"name": "b2", "phase": "BACKWARD", "inputs": [1, 4], "duration_ns": 100}]}]})");
  // Without the transient rows the MILP picks the 900 ns recompute, which
  // the simulator (exact RECOMPUTE accounting: the recipe re-makes C too)
  // finds 200 B over the 150 B budget: the model is wrong for it, an
  // internal error — why the transient rows are the default.
  OptimumOptions plain;
  plain.recompute_transient = false;
  plain.time_limit_ns = 60'000'000'000;
  absl::StatusOr<OptimumResult> without = ComputeOptimum(Problem(t, 150), plain, {}, {});
  CHECK(without.status().code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(without.status().message()),
             Catch::Contains("runs out of memory in the simulator"));

  OptimumOptions o;
  CHECK(o.recompute_transient);  // the default
  absl::StatusOr<OptimumResult> r = ComputeOptimum(Problem(t, 150), o, {}, {});
  REQUIRE(r.ok());
  // The RECOMPUTE window is still offered (1 of each kind); its triggers
  // are ruled out by the transient rows at ops 3, 4 and 5.
  CHECK(r->model.windows[static_cast<int>(WindowKind::kRecompute)] == 1);
  CHECK(r->lower_bound_ns == 1200);
  CHECK(r->incumbent_ns == 1200);
  CHECK(r->proven_optimal);
  REQUIRE(r->policy->items.size() == 1);
  CHECK(r->policy->items[0].action == ItemAction::kSwap);
  CHECK(r->policy->items[0].swap_in_op == 3);
  // The option is recorded in the policy when set (the default).
  CHECK(std::find(r->policy->parameters.begin(), r->policy->parameters.end(),
                  std::pair<std::string, std::string>{"recompute_transient", "true"}) !=
        r->policy->parameters.end());
}

TEST_CASE("nothing over the budget: no policy, ideal time", "[optimum]") {
  Trace t = SixOps(1.0);
  OptimumResult r = Solve(t, 200);  // the unswapped peak is 200
  CHECK(r.model.over_budget_ops == 0);
  CHECK(r.lower_bound_ns == 700);
  CHECK(r.incumbent_ns == 700);
  CHECK(r.proven_optimal);
  REQUIRE(r.policy.has_value());
  CHECK(r.policy->items.empty());
}

TEST_CASE("a budget no policy can reach is infeasible, naming the op", "[optimum]") {
  // Op 0 makes A (100 bytes): nothing can be off the device while it runs.
  Trace t = SixOps(1.0);
  absl::StatusOr<OptimumResult> r = ComputeOptimum(Problem(t, 99), OptimumOptions());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("op 0 (f0)"));
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("it needs 100 B"));
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("over the budget of 99 B"));
}

TEST_CASE("unsupported simulator settings and limits are refused", "[optimum]") {
  Trace t = SixOps(1.0);
  PlanningProblem half = Problem(t, 100);
  half.device.copy_engines = 1;
  absl::StatusOr<OptimumResult> r = ComputeOptimum(half, OptimumOptions());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("half-duplex"));
  OptimumOptions small;
  small.max_ops = 5;
  r = ComputeOptimum(Problem(t, 100), small);
  CHECK(r.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("has 6 ops"));
}

TEST_CASE("a warm start maps into the model", "[optimum]") {
  // The hand-made policy of the first case, with its release one op early
  // (after op 0): the mapping moves it to op 1 (the first op over the budget
  // minus one) and keeps the trigger.
  Trace t = SixOps(1.0);
  Policy w;
  w.fingerprint = ComputeFingerprint(t, 0);
  PolicyItem it;
  it.tensor_id = 1;
  it.size_bytes = 100;
  it.swap_out_op = 0;
  it.release_op = 0;
  it.swap_in_op = 3;
  it.first_use_op = 5;
  w.items.push_back(it);
  OptimumResult r = Solve(t, 100, true, {w});
  CHECK(r.warm_start_items == 1);
  CHECK(r.warm_start_skipped == 0);
  CHECK(r.incumbent_ns == 700);
}

}  // namespace
}  // namespace swapplan
