// Planning time of the Chameleon planner (issue 5's targets on this 2-core
// machine: under 100 ms on a Llama-2-7B-shaped iteration of 32 layers and
// under 2 s on a 1,000,000-op trace), and the checker on the result.
//
//   ninja -C build bench/chameleon_bench && build/bench/chameleon_bench
//   build/bench/chameleon_bench --report   # one plan per case: swaps, rounds, overhead
//
// The memory curve is computed once outside the timed loop (PlanningProblem
// ::curve), as `swapplan plan` does: its cost is ingest_bench's.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include "llama_trace.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/sim/checker.h"
#include "synthetic_trace.h"

namespace swapplan::bench {
namespace {

struct Case {
  const char* name;
  Trace trace;
  MemoryCurve curve;
  int64_t peak = 0;
};

Case MakeCase(const char* name, Trace t) {
  Case c{name, std::move(t), *ComputeMemoryCurve(t), 0};
  c.curve = *ComputeMemoryCurve(c.trace);
  c.peak = c.curve.peak_unswapped().bytes;
  return c;
}

Case& Llama() {
  static Case c = MakeCase("llama2-7b", LlamaTrace());
  return c;
}
Case& Million() {
  static Case c = MakeCase("synthetic-1m", SyntheticTrace(1000000));
  return c;
}

PlanningProblem Problem(const Case& c, double budget_fraction) {
  return {.trace = &c.trace,
          .iteration = 0,
          .device = {.capacity_bytes = static_cast<int64_t>(static_cast<double>(c.peak) *
                                                      budget_fraction),
                     .h2d_bandwidth_bytes_per_s = c.trace.metadata().h2d_bandwidth_bytes_per_s,
                     .d2h_bandwidth_bytes_per_s = c.trace.metadata().d2h_bandwidth_bytes_per_s},
          .curve = &c.curve};
}

ChameleonOptions Options() {
  ChameleonOptions o;
  o.min_tensor_bytes = 1 << 20;
  return o;
}

void Plan(benchmark::State& state, Case& c) {
  const double fraction = static_cast<double>(state.range(0)) / 100.0;
  PlanningProblem pr = Problem(c, fraction);
  ChameleonPlanner planner(Options());
  size_t items = 0;
  int64_t overhead = 0;
  bool ok = false;
  for (auto _ : state) {
    absl::StatusOr<Policy> p = planner.Plan(pr);
    ok = p.ok();
    if (ok) {
      items = p->items.size();
      overhead = p->expected_overhead_ns;
    }
    benchmark::DoNotOptimize(ok);
  }
  state.counters["ops"] = c.trace.num_ops();
  state.counters["feasible"] = ok;
  state.counters["swaps"] = static_cast<double>(items);
  state.counters["overhead_ms"] = static_cast<double>(overhead) / 1e6;
}

void BM_PlanLlama7B(benchmark::State& state) { Plan(state, Llama()); }
BENCHMARK(BM_PlanLlama7B)->Arg(95)->Arg(90)->Arg(80)->Unit(benchmark::kMillisecond);

void BM_Plan1MOps(benchmark::State& state) { Plan(state, Million()); }
BENCHMARK(BM_Plan1MOps)
    ->Arg(90)
    ->Arg(75)
    ->Arg(60)
    ->Arg(50)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// The same trace over a link 10x slower (2.5 GB/s): swap-ins no longer fit
// their layers and passes end in stall fallbacks.
void BM_Plan1MOpsSlowLink(benchmark::State& state) {
  Case& c = Million();
  PlanningProblem pr = Problem(c, static_cast<double>(state.range(0)) / 100.0);
  pr.device.h2d_bandwidth_bytes_per_s = pr.device.d2h_bandwidth_bytes_per_s = 2.5e9;
  ChameleonPlanner planner(Options());
  bool ok = false;
  size_t items = 0;
  int64_t overhead = 0;
  for (auto _ : state) {
    absl::StatusOr<Policy> p = planner.Plan(pr);
    ok = p.ok();
    if (ok) {
      items = p->items.size();
      overhead = p->expected_overhead_ns;
    }
  }
  state.counters["feasible"] = ok;
  state.counters["swaps"] = static_cast<double>(items);
  state.counters["overhead_ms"] = static_cast<double>(overhead) / 1e6;
}
BENCHMARK(BM_Plan1MOpsSlowLink)->Arg(95)->Arg(90)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_CheckLlama7B(benchmark::State& state) {
  Case& c = Llama();
  PlanningProblem pr = Problem(c, 0.9);
  absl::StatusOr<Policy> p = ChameleonPlanner(Options()).Plan(pr);
  if (!p.ok()) {
    state.SkipWithError("infeasible");
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<CheckReport> r = CheckPolicy(c.trace, *p, {});
    benchmark::DoNotOptimize(r->peak_bytes);
  }
}
BENCHMARK(BM_CheckLlama7B)->Unit(benchmark::kMillisecond);

void BM_Check1MOps(benchmark::State& state) {
  Case& c = Million();
  PlanningProblem pr = Problem(c, 0.75);
  absl::StatusOr<Policy> p = ChameleonPlanner(Options()).Plan(pr);
  if (!p.ok()) {
    state.SkipWithError("infeasible");
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<CheckReport> r = CheckPolicy(c.trace, *p, {});
    benchmark::DoNotOptimize(r->peak_bytes);
  }
}
BENCHMARK(BM_Check1MOps)->Unit(benchmark::kMillisecond)->Iterations(3);

// One explained plan per case, with the figures the README quotes.
void Report() {
  for (double link : {0.0, 2.5e9}) {
  for (Case* c : {&Llama(), &Million()}) {
    for (double f : {0.95, 0.9, 0.8, 0.75, 0.6, 0.5}) {
      PlanningProblem pr = Problem(*c, f);
      if (link > 0) pr.device.h2d_bandwidth_bytes_per_s = pr.device.d2h_bandwidth_bytes_per_s = link;
      const auto t0 = std::chrono::steady_clock::now();
      ChameleonExplanation x;
      absl::StatusOr<Policy> p = ChameleonPlanner(Options()).PlanExplained(pr, &x);
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0).count();
      int64_t bytes = p.ok() ? p->TotalItemBytes() : 0;
      std::printf(
          "%-13s %.1f GB/s budget %.2f x peak (%.1f GiB of %.1f): %s, %zu swaps (%.1f GiB), "
          "%d rounds, %zu passes, peak after %.1f GiB, expected overhead %.2f ms, T_iter %.1f ms, "
          "maximal fallback %s; %.0f ms with explanation\n",
          c->name, pr.device.d2h_bandwidth_bytes_per_s / 1e9, f, static_cast<double>(pr.budget_bytes()) / (1 << 30),
          static_cast<double>(c->peak) / (1 << 30), p.ok() ? "ok" : "infeasible",
          p.ok() ? p->items.size() : 0, static_cast<double>(bytes) / (1 << 30), x.rounds,
          x.passes.size(), static_cast<double>(x.peak_bytes) / (1 << 30),
          p.ok() ? static_cast<double>(p->expected_overhead_ns) / 1e6 : 0.0,
          static_cast<double>(x.iteration_time_ns) / 1e6, x.maximal_fallback_used ? "yes" : "no",
          ms);
    }
  }
  }
}

}  // namespace
}  // namespace swapplan::bench

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--report") == 0) {
    swapplan::bench::Report();
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
