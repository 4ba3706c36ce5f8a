// The Advisor's swap planner on hand-made graphs (seed 002 Fig. 3, the
// double pass) and its genetic search: exhaustive cross-check on small
// graphs, determinism.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include "planners/advisor_support.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/advisor/advisor_planner.h"
#include "swapplan/planners/advisor/search.h"
#include "swapplan/sim/checker.h"

namespace swapplan {
namespace {

std::vector<int32_t> Identity(int32_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::unique_ptr<AdvisorProblem> MakeProblem(const Trace& t, int64_t budget,
                                            const AdvisorOptions& o = {}) {
  PlanningProblem pp{.trace = &t,
                     .iteration = 0,
                     .device = {.capacity_bytes = budget,
                     .h2d_bandwidth_bytes_per_s = 1e9,
                     .d2h_bandwidth_bytes_per_s = 1e9}};
  absl::StatusOr<std::unique_ptr<AdvisorProblem>> p = AdvisorProblem::Create(pp, o);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return std::move(p).value();
}

const PolicyItem* ItemOf(const Policy& p, uint64_t tensor) {
  for (const PolicyItem& it : p.items) {
    if (it.tensor_id == tensor) return &it;
  }
  return nullptr;
}

// Seed 002 Fig. 3: op1(W1) -> A1, op2(A1, W2) -> A2, op3(A2, W3) -> A3, all
// tensors one unit (100 bytes), a 4-unit device (one class of four 100-byte
// objects); A1..A3 are needed by the backward ops b3, b2, b1 (in that order).
const Trace& Fig3() {
  static const Trace t = testing::TraceFromJson(R"({
    "metadata": {"h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
    "tensors": [
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 11, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 12, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 13, "size_bytes": 100, "kind": "PARAMETER"}],
    "iterations": [{"ops": [
      {"name": "op1", "phase": "FORWARD", "inputs": [11], "outputs": [1], "duration_ns": 100},
      {"name": "op2", "phase": "FORWARD", "inputs": [1, 12], "outputs": [2], "duration_ns": 100},
      {"name": "op3", "phase": "FORWARD", "inputs": [2, 13], "outputs": [3], "duration_ns": 100},
      {"name": "b3", "phase": "BACKWARD", "inputs": [3], "duration_ns": 100},
      {"name": "b2", "phase": "BACKWARD", "inputs": [2], "duration_ns": 100},
      {"name": "b1", "phase": "BACKWARD", "inputs": [1], "duration_ns": 100}]}]})",
                                                         "fig3.json");
  return t;
}

TEST_CASE("swap planner: seed 002 Fig. 3 — W1 -> W3 and W2 -> A3", "[advisor][planner]") {
  AdvisorOptions o;
  o.planner.param_residency = ParamResidency::kStartOnHost;
  o.planner.eviction_threshold_ns = 0;  // plain Belady, as in the figure
  std::unique_ptr<AdvisorProblem> p = MakeProblem(Fig3(), 400, o);
  SwapPlanner planner(*p, o.planner);
  absl::StatusOr<SwapPlan> plan = planner.Plan({Identity(6), {{0}, {4}}});
  REQUIRE(plan.ok());
  // At op3 the class is full (W1, A1, W2, A2 were needed by op1 and op2).
  // A3 arrives first and evicts the furthest next use: W2 (next iteration,
  // position 6 + 1) before W1 (6 + 0) and A1 (b1, position 5); then W3
  // evicts W1. A1 and A2 stay. Parameters are not written, so they go back
  // without a copy, right after their use; they come in as early as the
  // objects allow — all from op1's dispatch, since W1's object is free
  // again after op1.
  const Policy& pol = plan->policy;
  CHECK(ItemOf(pol, 1) == nullptr);
  CHECK(ItemOf(pol, 2) == nullptr);
  for (uint64_t w : {11, 12, 13}) {
    const PolicyItem* it = ItemOf(pol, w);
    REQUIRE(it != nullptr);
    const int32_t use = static_cast<int32_t>(w - 11);
    CHECK(it->wraps);
    CHECK(it->clean);
    CHECK(it->swap_in_op == 0);
    CHECK(it->first_use_op == use);
    CHECK(it->swap_out_op == use);
    CHECK(it->release_op == use);
  }
  // h2d: W1 0-100, W2 100-200, W3 200-300; op1 100-200, op2 200-300,
  // op3 300-400, backward 400-700.
  absl::StatusOr<SimulationResult> r = p->simulator().Run(pol);
  REQUIRE(r.ok());
  CHECK_FALSE(r->oom.occurred);
  CHECK(r->iteration_time_ns == 700);
  CHECK(r->bytes_d2h == 0);
  CHECK(r->bytes_h2d == 300);
  absl::StatusOr<CheckReport> check = CheckPolicy(Fig3(), pol);
  REQUIRE(check.ok());
  CHECK(check->clean());
}

// Training-like: W1 and W2 are read in forward and backward and written by
// the optimizer step; 100-byte tensors, 100 ns ops.
//   0 f1(W1) -> A1   1 f2(A1, W2) -> A2   2 b2(A2, W2) -> G2
//   3 b1(A1, W1) -> G1   4 sgd(W1, W2, G1, G2) -> W1, W2
const Trace& Training() {
  static const Trace t = testing::TraceFromJson(R"({
    "metadata": {"h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
    "tensors": [
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 3, "size_bytes": 100, "kind": "GRADIENT"},
      {"id": 4, "size_bytes": 100, "kind": "GRADIENT"},
      {"id": 11, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 12, "size_bytes": 100, "kind": "PARAMETER"}],
    "iterations": [{"ops": [
      {"name": "f1", "phase": "FORWARD", "inputs": [11], "outputs": [1], "duration_ns": 100},
      {"name": "f2", "phase": "FORWARD", "inputs": [1, 12], "outputs": [2], "duration_ns": 100},
      {"name": "b2", "phase": "BACKWARD", "inputs": [2, 12], "outputs": [4], "duration_ns": 100},
      {"name": "b1", "phase": "BACKWARD", "inputs": [1, 11], "outputs": [3], "duration_ns": 100},
      {"name": "sgd", "phase": "OPTIMIZER", "inputs": [11, 12, 3, 4], "outputs": [11, 12],
       "duration_ns": 100}]}]})",
                                                         "training.json");
  return t;
}

TEST_CASE("swap planner: double pass keeps what fits resident across iterations",
          "[advisor][planner]") {
  // Six objects hold everything: pass 1 loads W1, W2 from the host and ends
  // with them on the device, so pass 2 starts with both resident and needs
  // no swap at all.
  std::unique_ptr<AdvisorProblem> p = MakeProblem(Training(), 600);
  SwapPlanner planner(*p, SwapPlannerOptions());
  absl::StatusOr<SwapPlan> plan = planner.Plan({Identity(5), {{0}, {6}}});
  REQUIRE(plan.ok());
  CHECK(plan->policy.items.empty());
  CHECK(plan->initial_residents == 2);
  CHECK(plan->passes == 2);
  // Start-on-host instead: both parameters come in before their first use
  // and, written by sgd, go back with a copy after it.
  SwapPlannerOptions host;
  host.param_residency = ParamResidency::kStartOnHost;
  SwapPlanner planner2(*p, host);
  absl::StatusOr<SwapPlan> plan2 = planner2.Plan({Identity(5), {{0}, {6}}});
  REQUIRE(plan2.ok());
  REQUIRE(plan2->policy.items.size() == 2);
  for (const PolicyItem& it : plan2->policy.items) {
    CHECK(it.wraps);
    CHECK_FALSE(it.clean);  // sgd wrote it
    CHECK(it.swap_out_op == 4);
    CHECK(it.release_op == 4);  // the copy ends after the last op
    CHECK(it.swap_in_op == 0);
  }
  // h2d W1 0-100, W2 100-200: f1 100-200, f2 200-300, b2 300-400,
  // b1 400-500, sgd 500-600; d2h W1 600-700, W2 700-800: the iteration
  // ends with the last copy out.
  absl::StatusOr<SimulationResult> r = p->simulator().Run(plan2->policy);
  REQUIRE(r.ok());
  CHECK(r->iteration_time_ns == 800);
  absl::StatusOr<CheckReport> check = CheckPolicy(Training(), plan2->policy);
  REQUIRE(check.ok());
  CHECK(check->clean());
}

TEST_CASE("swap planner: a parameter that does not fit starts on the host (double pass)",
          "[advisor][planner]") {
  // Four 100-byte objects cannot hold W1, A1, W2, A2 and a gradient at
  // once, so the walk evicts and brings tensors back, and the double pass
  // settles which parameters start resident. Whatever it chose, the plan
  // fits the pool in the simulator and passes the checker, and every
  // persistent tensor either starts resident or wraps (one item).
  std::unique_ptr<AdvisorProblem> p = MakeProblem(Training(), 400);
  SwapPlanner planner(*p, SwapPlannerOptions());
  absl::StatusOr<SwapPlan> plan = planner.Plan({Identity(5), {{0}, {4}}});
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  absl::StatusOr<SimulationResult> r = p->simulator().Run(plan->policy);
  REQUIRE(r.ok());
  CHECK_FALSE(r->oom.occurred);
  absl::StatusOr<CheckReport> check = CheckPolicy(Training(), plan->policy);
  REQUIRE(check.ok());
  std::string violations;
  for (const Violation& v : check->violations) violations += v.message + "\n";
  INFO(violations);
  CHECK(check->clean());
  CHECK(check->peak_bytes <= 400);
  // Whatever starts on the device ends on it: every persistent tensor is
  // either an initial resident or has exactly one wrapping item.
  int32_t wraps = 0;
  for (const PolicyItem& it : plan->policy.items) wraps += it.wraps;
  CHECK(wraps + plan->initial_residents == 2);
}

// All topological orders of the iteration's graph, by DFS.
void ForEachTopologicalOrder(const DataflowGraph& g,
                             const std::function<void(const std::vector<int32_t>&)>& f) {
  const int32_t n = g.num_ops();
  std::vector<int32_t> indegree(n), order;
  for (int32_t v = 0; v < n; ++v) indegree[v] = g.in_degree(v);
  std::vector<bool> done(n, false);
  std::function<void()> dfs = [&] {
    if (static_cast<int32_t>(order.size()) == n) {
      f(order);
      return;
    }
    for (int32_t v = 0; v < n; ++v) {
      if (done[v] || indegree[v] != 0) continue;
      done[v] = true;
      order.push_back(v);
      for (int32_t w : g.successors(v)) --indegree[w];
      dfs();
      for (int32_t w : g.successors(v)) ++indegree[w];
      order.pop_back();
      done[v] = false;
    }
  };
  dfs();
}

TEST_CASE("search finds the exhaustive optimum over schedules on small graphs (fixed pool)",
          "[advisor][search]") {
  int32_t compared = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    INFO("seed " << seed);
    testing::RandomDagOptions ro;
    ro.ops = 6 + static_cast<int32_t>(seed % 3);  // 6..8 ops
    ro.params = 1 + static_cast<int32_t>(seed % 2);
    const Trace t = testing::RandomDag(seed, ro);
    absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
    REQUIRE(curve.ok());
    // The tightest pool with one class per size (each class at its
    // minimum count), or 60% of the unswapped peak if that is larger: tight
    // enough that schedules differ.
    std::unique_ptr<AdvisorProblem> p = MakeProblem(t, 1);
    Allocation pool = FinestAllocation(*p);
    pool.cnt = MinCounts(*p, pool.cls);
    const int64_t budget = std::max(*AllocationBytes(pool, p->sizes()),
                                    curve->iterations()[0].peak_unswapped.bytes * 6 / 10);
    p = MakeProblem(t, budget);
    REQUIRE(RepairCounts(p->sizes(), MinCounts(*p, pool.cls), budget, &pool));
    SwapPlanner planner(*p, SwapPlannerOptions());
    int64_t optimum = kInfeasibleNs;
    int32_t orders = 0;
    ForEachTopologicalOrder(p->graph(), [&](const std::vector<int32_t>& s) {
      ++orders;
      absl::StatusOr<int64_t> ns = EvaluateChromosome(*p, &planner, {s, pool});
      if (ns.ok()) optimum = std::min(optimum, *ns);
    });
    REQUIRE(optimum != kInfeasibleNs);
    AdvisorOptions o;
    o.search.population = 24;
    o.search.max_generations = 60;
    o.search.time_limit_ns = 0;
    o.search.threads = 1;
    o.search.seed = seed;
    // The genetic part alone: local search would change items, which the
    // exhaustive enumeration over schedules does not.
    o.search.local_search_moves = 0;
    GeneticSearch search(*p, o);
    search.FixAllocation(pool);
    absl::StatusOr<SearchResult> r = search.Run();
    REQUIRE(r.ok());
    INFO(orders << " topological orders, optimum " << optimum << " ns");
    CHECK(r->best_ns == optimum);
    CHECK(r->best.alloc.cnt == pool.cnt);
    ++compared;
  }
  CHECK(compared == 24);
}

TEST_CASE("search: same seed, same result, whatever the thread count", "[advisor][search]") {
  testing::RandomDagOptions ro;
  ro.ops = 40;
  ro.params = 3;
  const Trace t = testing::RandomDag(99, ro);
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
  REQUIRE(curve.ok());
  const int64_t budget = curve->iterations()[0].peak_unswapped.bytes * 8 / 10;
  std::unique_ptr<AdvisorProblem> p = MakeProblem(t, budget);
  auto run = [&](int32_t threads, uint64_t seed) {
    AdvisorOptions o;
    o.search.population = 12;
    o.search.max_generations = 10;
    o.search.time_limit_ns = 0;
    o.search.threads = threads;
    o.search.seed = seed;
    GeneticSearch search(*p, o);
    absl::StatusOr<SearchResult> r = search.Run();
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    return std::move(r).value();
  };
  const SearchResult a = run(2, 5), b = run(2, 5), c = run(1, 5);
  CHECK(a.best.schedule == b.best.schedule);
  CHECK(a.best.alloc == b.best.alloc);
  CHECK(a.best_ns == b.best_ns);
  CHECK(a.best.schedule == c.best.schedule);
  CHECK(a.best.alloc == c.best.alloc);
  REQUIRE(a.history.size() == c.history.size());
  for (size_t g = 0; g < a.history.size(); ++g) {
    CHECK(a.history[g].best_ns == c.history[g].best_ns);
    CHECK(a.history[g].mean_ns == c.history[g].mean_ns);
    CHECK(a.history[g].worst_ns == c.history[g].worst_ns);
  }
  CHECK(a.generations == 10);
  CHECK(a.stop_reason == "generation limit");
  // The policy carries the search's schedule and pool and passes the checker.
  const Policy& pol = a.plan.policy;
  CHECK(pol.schedule == a.best.schedule);
  CHECK(pol.pool.size_class == a.best.alloc.cls);
  CHECK(pol.pool.TotalBytes() <= budget);
  absl::StatusOr<CheckReport> check = CheckPolicy(t, pol);
  REQUIRE(check.ok());
  std::string violations;
  for (const Violation& v : check->violations) violations += v.message + "\n";
  INFO(violations);
  CHECK(check->clean());
  CHECK(pol.simulated_iteration_time_ns == a.best_ns);
}

TEST_CASE("search: stops on convergence; progress once per generation", "[advisor][search]") {
  const Trace t = testing::RandomDag(3, {.ops = 8, .params = 1});
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
  REQUIRE(curve.ok());
  std::unique_ptr<AdvisorProblem> p = MakeProblem(t, curve->iterations()[0].peak_unswapped.bytes);
  AdvisorOptions o;
  o.search.population = 8;
  o.search.time_limit_ns = 0;
  o.search.convergence_generations = 3;
  o.search.threads = 1;
  GeneticSearch search(*p, o);
  std::vector<int32_t> seen;
  absl::StatusOr<SearchResult> r =
      search.Run([&](const GenerationStats& g) { seen.push_back(g.generation); });
  REQUIRE(r.ok());
  CHECK(r->stop_reason == "converged");
  REQUIRE(static_cast<int32_t>(seen.size()) == r->generations + 1);
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == static_cast<int32_t>(i));
  for (const GenerationStats& g : r->history) {
    CHECK(g.best_ns <= g.mean_ns);
    CHECK(g.mean_ns <= g.worst_ns);
  }
}

TEST_CASE("search: a stop callback ends it with the best so far", "[advisor][search]") {
  const Trace t = testing::RandomDag(3, {.ops = 8, .params = 1});
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
  REQUIRE(curve.ok());
  std::unique_ptr<AdvisorProblem> p = MakeProblem(t, curve->iterations()[0].peak_unswapped.bytes);
  AdvisorOptions o;
  o.search.population = 8;
  o.search.time_limit_ns = 0;
  o.search.max_generations = 1000;
  o.search.convergence_generations = 0;
  o.search.threads = 1;
  GeneticSearch search(*p, o);
  // Generation 0 is always evaluated whole; the stop is asked from
  // generation 1 on. Stopping once 2 generations are done ends the search
  // at the top of the next: 2 generations, not 1000.
  int32_t done = 0;
  search.SetStop([&] { return done >= 2; });
  absl::StatusOr<SearchResult> r = search.Run([&](const GenerationStats& g) { done = g.generation; });
  REQUIRE(r.ok());
  CHECK(r->stop_reason == "stopped");
  CHECK(r->generations == 2);
  CHECK(r->best_ns != kInfeasibleNs);
}

TEST_CASE("advisor planner: infeasible budget and options", "[advisor][search]") {
  const Trace& t = Training();
  AdvisorPlanner planner;
  REQUIRE(planner.SetOption("max-generations", "2").ok());
  REQUIRE(planner.SetOption("population", "4").ok());
  REQUIRE(planner.SetOption("threads", "1").ok());
  // sgd alone uses four 100-byte tensors: 300 bytes cannot run it.
  PlanningProblem pp{.trace = &t,
                     .iteration = 0,
                     .device = {.capacity_bytes = 300,
                     .h2d_bandwidth_bytes_per_s = 1e9,
                     .d2h_bandwidth_bytes_per_s = 1e9}};
  absl::StatusOr<Policy> r = planner.Plan(pp);
  REQUIRE(r.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(r.status().message()) ==
        "advisor: the budget of 300 B cannot hold the pool objects the recorded order needs "
        "whatever is swapped — each op's tensors and those no eviction can move (400 B with one "
        "class per tensor size; op 4 (sgd) alone pins 400 B)");
  CHECK(std::string(planner.SetOption("popsize", "4").message()).rfind(
            "advisor has no option 'popsize'", 0) == 0);
  CHECK(std::string(planner.SetOption("mutation-probability", "2").message()) ==
        "search options: mutation_probability is 2; must be in [0, 1]");
  pp.device.capacity_bytes = 600;
  absl::StatusOr<Policy> ok = planner.Plan(pp);
  REQUIRE(ok.ok());
  CHECK(ok->planner == "advisor");
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

// Property: whatever chromosome the search ends with, its policy fits its
// pool and budget in the simulator and passes the checker (release points
// at or after the copies' end on the checker's FIFO, or marked as planned
// waits; windows consistent with the schedule; clean items really clean).
TEST_CASE("advisor policies pass the checker and the simulator (random graphs)",
          "[advisor][property]") {
  int32_t planned = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    INFO("seed " << seed);
    testing::RandomDagOptions ro;
    ro.ops = 10 + static_cast<int32_t>(seed % 30);
    ro.params = static_cast<int32_t>(seed % 4);
    ro.in_place = 0.1 * static_cast<double>(seed % 4);
    const Trace t = testing::RandomDag(seed, ro);
    std::unique_ptr<AdvisorProblem> probe = MakeProblem(t, 1);
    Allocation pool = FinestAllocation(*probe);
    pool.cnt = MinCounts(*probe, pool.cls);
    // From the tightest finest pool up to 30% more.
    const int64_t budget = *AllocationBytes(pool, probe->sizes()) * (10 + seed % 4) / 10;
    std::unique_ptr<AdvisorProblem> p = MakeProblem(t, budget);
    AdvisorOptions o;
    o.search.population = 8;
    o.search.max_generations = 3;
    o.search.time_limit_ns = 0;
    o.search.threads = 1;
    o.search.seed = seed;
    o.planner.param_residency =
        seed % 2 ? ParamResidency::kDoublePass : ParamResidency::kStartOnHost;
    GeneticSearch search(*p, o);
    absl::StatusOr<SearchResult> r = search.Run();
    if (!r.ok()) {
      CHECK(r.status().code() == absl::StatusCode::kResourceExhausted);
      continue;
    }
    ++planned;
    const Policy& pol = r->plan.policy;
    CHECK(pol.Validate().ok());
    CHECK_FALSE(r->simulation.oom.occurred);
    absl::StatusOr<CheckReport> check = CheckPolicy(t, pol);
    REQUIRE(check.ok());
    std::string violations;
    for (const Violation& v : check->violations) violations += v.message + "\n";
    INFO(violations);
    CHECK(check->clean());
    CHECK(check->peak_bytes <= budget);
  }
  CHECK(planned >= 20);
}

}  // namespace
}  // namespace swapplan
