// Evaluation simulator and baseline planners on a 1,000,000-op synthetic
// trace (bench/synthetic_trace.h). Target (issue 6): >= 10 million simulated
// events per second, where an event is a task on one of the three streams —
// an op, a copy, or a recomputation (SimulationResult::events).
//
//   ninja -C build bench/sim_bench && build/bench/sim_bench
//
// The policies come from the baselines themselves: vdnn swaps every saved
// activation (~0.28 items per op, two copies each), lru evicts under a budget
// of 60% of the way from the persistent bytes to the unswapped peak.
#include <benchmark/benchmark.h>

#include <numeric>
#include <string>
#include <vector>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/baselines/baselines.h"
#include "swapplan/sim/simulator.h"
#include "synthetic_trace.h"

namespace swapplan::bench {
namespace {

constexpr int64_t kOps = 1000000;

struct Fixture {
  Trace trace;
  MemoryCurve curve;
  PlanningProblem problem;
  Policy vdnn, lru, recompute;
};

const Fixture& Get() {
  static Fixture f;
  static const bool ready = [] {
    f.trace = SyntheticTrace(kOps);
    f.curve = *ComputeMemoryCurve(f.trace);
    const IterationCurve& ic = f.curve.iterations()[0];
    f.problem = {.trace = &f.trace,
                 .iteration = 0,
                 .device = {.capacity_bytes = ic.persistent_bytes + (ic.peak_unswapped.bytes - ic.persistent_bytes) * 6 / 10,
                     .h2d_bandwidth_bytes_per_s = 25e9,
                     .d2h_bandwidth_bytes_per_s = 25e9},
                 .curve = &f.curve};
    PlanningProblem roomy = f.problem;
    roomy.device.capacity_bytes = ic.peak_unswapped.bytes;
    f.vdnn = *LayerSwapPlanner("vdnn", VdnnOptions()).Plan(roomy);
    f.lru = *LruPlanner().Plan(f.problem);
    f.recompute = *RecomputePlanner().Plan(roomy);
    return true;
  }();
  (void)ready;
  return f;
}

void Report(benchmark::State& state, const SimulationResult& r, size_t items) {
  state.counters["ops"] = r.num_ops;
  state.counters["items"] = static_cast<double>(items);
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(r.events), benchmark::Counter::kIsIterationInvariantRate);
}

void RunPolicy(benchmark::State& state, const Policy& policy, SimulatorOptions o,
               bool explicit_schedule = false) {
  const Fixture& f = Get();
  Simulator sim = *Simulator::Create(f.trace, 0, o);
  std::vector<int32_t> schedule;
  if (explicit_schedule) {
    schedule.resize(sim.num_ops());
    std::iota(schedule.begin(), schedule.end(), 0);
  }
  SimulationResult last;
  for (auto _ : state) {
    absl::StatusOr<SimulationResult> r = sim.Run(policy, schedule);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(r->iteration_time_ns);
    last = std::move(*r);
  }
  Report(state, last, policy.items.size());
}

void BM_SimulateVdnn(benchmark::State& state) { RunPolicy(state, Get().vdnn, {}); }
BENCHMARK(BM_SimulateVdnn)->Unit(benchmark::kMillisecond);

void BM_SimulateVdnnHalfDuplexLatency(benchmark::State& state) {
  RunPolicy(state, Get().vdnn, {.device = {.copy_latency_ns = 10000, .copy_engines = 1}});
}
BENCHMARK(BM_SimulateVdnnHalfDuplexLatency)->Unit(benchmark::kMillisecond);

void BM_SimulateVdnnNaive(benchmark::State& state) {
  RunPolicy(state, Get().vdnn,
            {.record_stream = RecordStreamMode::kNaive, .host_event_query_ns = 1000});
}
BENCHMARK(BM_SimulateVdnnNaive)->Unit(benchmark::kMillisecond);

void BM_SimulateVdnnSchedule(benchmark::State& state) {
  RunPolicy(state, Get().vdnn, {}, /*explicit_schedule=*/true);
}
BENCHMARK(BM_SimulateVdnnSchedule)->Unit(benchmark::kMillisecond);

void BM_SimulateVdnnTimeline(benchmark::State& state) {
  RunPolicy(state, Get().vdnn, {.record_timeline = true});
}
BENCHMARK(BM_SimulateVdnnTimeline)->Unit(benchmark::kMillisecond);

// vdnn on the saved-tensor clock: every item moved to its tensor's pack and
// unpack events (policy/saved_tensor_clock.h, O(events + items log
// events)) before the same run.
void BM_SimulateVdnnSavedClock(benchmark::State& state) {
  RunPolicy(state, Get().vdnn, {.clock = TriggerClock::kSavedTensors});
}
BENCHMARK(BM_SimulateVdnnSavedClock)->Unit(benchmark::kMillisecond);

void BM_SimulateLru(benchmark::State& state) {
  RunPolicy(state, Get().lru, {.device = {.capacity_bytes = Get().problem.budget_bytes()}});
}
BENCHMARK(BM_SimulateLru)->Unit(benchmark::kMillisecond);

void BM_SimulateRecompute(benchmark::State& state) { RunPolicy(state, Get().recompute, {}); }
BENCHMARK(BM_SimulateRecompute)->Unit(benchmark::kMillisecond);

void BM_SimulatorCreate(benchmark::State& state) {
  const Fixture& f = Get();
  for (auto _ : state) {
    absl::StatusOr<Simulator> s = Simulator::Create(f.trace, 0, {});
    benchmark::DoNotOptimize(s->ideal_time_ns());
  }
}
BENCHMARK(BM_SimulatorCreate)->Unit(benchmark::kMillisecond);

template <typename MakePlanner>
void PlanBench(benchmark::State& state, MakePlanner make, bool roomy) {
  const Fixture& f = Get();
  PlanningProblem p = f.problem;
  if (roomy) p.device.capacity_bytes = f.curve.iterations()[0].peak_unswapped.bytes;
  size_t items = 0;
  for (auto _ : state) {
    auto planner = make();
    absl::StatusOr<Policy> policy = planner->Plan(p);
    if (!policy.ok()) {
      state.SkipWithError(std::string(policy.status().message()).c_str());
      return;
    }
    items = policy->items.size();
  }
  state.counters["items"] = static_cast<double>(items);
}

void BM_PlanVdnn(benchmark::State& state) {
  PlanBench(
      state, [] { return std::make_unique<LayerSwapPlanner>("vdnn", VdnnOptions()); }, true);
}
BENCHMARK(BM_PlanVdnn)->Unit(benchmark::kMillisecond);

void BM_PlanRecompute(benchmark::State& state) {
  PlanBench(
      state, [] { return std::make_unique<RecomputePlanner>(); }, true);
}
BENCHMARK(BM_PlanRecompute)->Unit(benchmark::kMillisecond);

void BM_PlanLru(benchmark::State& state) {
  PlanBench(
      state, [] { return std::make_unique<LruPlanner>(); }, false);
}
BENCHMARK(BM_PlanLru)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace swapplan::bench

BENCHMARK_MAIN();
