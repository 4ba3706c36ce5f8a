// The Advisor's evaluation throughput (issue 7): evaluations per second on
// a ~5,000-op graph — iteration 1 of traces/bilstm.json.gz (4,925 ops,
// 2-layer bidirectional LSTM unrolled per time step, 2,154 tensors on the
// device) at a 9 MiB budget and a 100 MB/s link, where swapping is needed.
// One evaluation = the swap planner (Belady walk, double pass, copy timing)
// for one chromosome plus the evaluation simulator run of its policy.
//
//   ninja -C build bench/advisor_bench && build/bench/advisor_bench
//
//   BM_Evaluate          one chromosome, one thread (planner + simulator)
//   BM_Plan / BM_Simulate  the two halves
//   BM_Generation/T      one generation of the search (2 x 144 children)
//                        on T threads; items/s = evaluations per second
#include <benchmark/benchmark.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "swapplan/planners/advisor/search.h"
#include "swapplan/trace/io.h"

namespace swapplan::bench {
namespace {

struct Fixture {
  Trace trace;
  std::unique_ptr<AdvisorProblem> problem;
  Chromosome recorded;   // recorded order, finest pool repaired
  Chromosome mutated;    // a mutant, as the search evaluates them
};

const Fixture& Get() {
  // Built once, on first use, and kept for the process (benchmarks re-run).
  static const std::unique_ptr<Fixture> f = [] {
    auto x = std::make_unique<Fixture>();
    x->trace = *ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) + "/traces/bilstm.json.gz");
    PlanningProblem pp{.trace = &x->trace,
                       .iteration = 1,
                       .device = {.capacity_bytes = 9 << 20,
                     .h2d_bandwidth_bytes_per_s = 100e6,
                     .d2h_bandwidth_bytes_per_s = 100e6}};
    x->problem = *AdvisorProblem::Create(pp, AdvisorOptions());
    const AdvisorProblem& p = *x->problem;
    x->recorded.schedule.resize(p.num_ops());
    std::iota(x->recorded.schedule.begin(), x->recorded.schedule.end(), 0);
    x->recorded.alloc = FinestAllocation(p);
    RepairCounts(p.sizes(), MinCounts(p, x->recorded.alloc.cls), p.budget_bytes(),
                 &x->recorded.alloc);
    Rng rng(1);
    x->mutated = x->recorded;
    MutateSchedule(p.graph(), x->recorded.schedule, 0.1, &rng, &x->mutated.schedule);
    MutateAllocation(0.1, 0.2, &rng, &x->mutated.alloc);
    RepairCounts(p.sizes(), MinCounts(p, x->mutated.alloc.cls), p.budget_bytes(),
                 &x->mutated.alloc);
    return x;
  }();
  return *f;
}

void BM_Evaluate(benchmark::State& state) {
  const Fixture& f = Get();
  SwapPlanner planner(*f.problem, SwapPlannerOptions());
  const Chromosome& c = state.range(0) == 0 ? f.recorded : f.mutated;
  int64_t feasible = 0;
  for (auto _ : state) {
    absl::StatusOr<int64_t> t = EvaluateChromosome(*f.problem, &planner, c);
    feasible += t.ok();
    benchmark::DoNotOptimize(t);
  }
  state.counters["ops"] = f.problem->num_ops();
  state.counters["feasible"] = static_cast<double>(feasible) / state.iterations();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Evaluate)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_Plan(benchmark::State& state) {
  const Fixture& f = Get();
  SwapPlanner planner(*f.problem, SwapPlannerOptions());
  int64_t items = 0;
  for (auto _ : state) {
    absl::StatusOr<SwapPlan> plan = planner.Plan(f.recorded);
    items = plan.ok() ? static_cast<int64_t>(plan->policy.items.size()) : -1;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["items"] = static_cast<double>(items);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Plan)->Unit(benchmark::kMicrosecond);

void BM_Simulate(benchmark::State& state) {
  const Fixture& f = Get();
  SwapPlanner planner(*f.problem, SwapPlannerOptions());
  const Policy policy = planner.Plan(f.recorded)->policy;
  for (auto _ : state) {
    absl::StatusOr<SimulationResult> r = f.problem->simulator().Run(policy);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Simulate)->Unit(benchmark::kMicrosecond);

void BM_Generation(benchmark::State& state) {
  const Fixture& f = Get();
  AdvisorOptions o;
  o.search.threads = static_cast<int32_t>(state.range(0));
  o.search.max_generations = 3;
  o.search.time_limit_ns = 0;
  int64_t evaluations = 0;
  for (auto _ : state) {
    GeneticSearch search(*f.problem, o);
    absl::StatusOr<SearchResult> r = search.Run();
    evaluations += r->evaluations;
    benchmark::DoNotOptimize(r);
  }
  state.counters["evals/s"] =
      benchmark::Counter(static_cast<double>(evaluations), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Generation)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

}  // namespace
}  // namespace swapplan::bench

BENCHMARK_MAIN();
