// MILP solve time of the exact bound (issue 20, optimum/optimum.h):
//
//   BM_OptimumTwoLayers    tests/data/traces/two_layers.json (12 ops), 400 B at
//                          250 MB/s: the bound above the ideal, proven optimal
//   BM_OptimumLossScale    traces/loss_scale_validation.json.gz iteration 1
//                          (251 ops), r = 1.1 at 16 GB/s (the quality entry)
//   BM_BuildLlama4Layers   building (not solving) the model of the 456-op
//                          4-layer llama2-7b trace at r = 2: its size
//
// Counters: lower bound and incumbent (ns), gap, binary columns, rows.
//   ninja -C build bench/optimum_bench && build/bench/optimum_bench
#include <benchmark/benchmark.h>

#include <string>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/oversubscription.h"
#include "swapplan/optimum/optimum.h"
#include "swapplan/trace/io.h"

namespace swapplan::bench {
namespace {

// The budget: `capacity_bytes`, or with `oversubscription` > 0 that ratio of
// the iteration's curve.
void Solve(benchmark::State& state, const std::string& path, int32_t iteration,
           int64_t capacity_bytes, double oversubscription, double bandwidth) {
  const Trace trace = *ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) + "/" + path);
  const MemoryCurve curve = *ComputeMemoryCurve(trace);
  DeviceModel device;
  device.capacity_bytes = capacity_bytes;
  device.h2d_bandwidth_bytes_per_s = bandwidth;
  device.d2h_bandwidth_bytes_per_s = bandwidth;
  if (oversubscription > 0) {
    device = *OversubscribedDevice(device, curve.iterations()[iteration], oversubscription);
  }
  const PlanningProblem pp{.trace = &trace, .iteration = iteration, .device = device};
  OptimumOptions o;
  o.time_limit_ns = 300'000'000'000;
  OptimumResult last;
  for (auto _ : state) {
    absl::StatusOr<OptimumResult> r = ComputeOptimum(pp, o);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    last = *std::move(r);
  }
  state.counters["lower_bound_ns"] = static_cast<double>(last.lower_bound_ns);
  state.counters["incumbent_ns"] = static_cast<double>(last.incumbent_ns);
  state.counters["gap"] = last.gap;
  state.counters["binaries"] = last.model.binaries;
  state.counters["rows"] = last.model.rows;
}

void BM_OptimumTwoLayers(benchmark::State& state) {
  Solve(state, "tests/data/traces/two_layers.json", 0, 400, 0, 250e6);
}
BENCHMARK(BM_OptimumTwoLayers)->Unit(benchmark::kMillisecond);

void BM_OptimumLossScale(benchmark::State& state) {
  Solve(state, "traces/loss_scale_validation.json.gz", 1, 0, 1.1, 16e9);
}
BENCHMARK(BM_OptimumLossScale)->Unit(benchmark::kSecond)->Iterations(1);

void BM_BuildLlama4Layers(benchmark::State& state) {
  const Trace trace = *ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) +
                                 "/traces/llama2-7b-4layers-dp8-seq4096.trace.gz");
  const MemoryCurve curve = *ComputeMemoryCurve(trace);
  SimulatorOptions so;
  so.device = *OversubscribedDevice(so.device, curve.iterations()[0], 2.0);
  SwapModelStats stats;
  for (auto _ : state) {
    absl::StatusOr<SwapModel> m = SwapModel::Build(trace, 0, so, {});
    if (!m.ok()) {
      state.SkipWithError(std::string(m.status().message()).c_str());
      return;
    }
    stats = m->stats();
  }
  state.counters["binaries"] = stats.binaries;
  state.counters["rows"] = stats.rows;
  state.counters["nonzeros"] = static_cast<double>(stats.nonzeros);
}
BENCHMARK(BM_BuildLlama4Layers)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace swapplan::bench

BENCHMARK_MAIN();
