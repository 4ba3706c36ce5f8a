// The comparison engine, what-if search and regression (eval/*.h) at scale.
//
//   ninja -C build bench/eval_bench && build/bench/eval_bench
//
// * BM_CompareLlama7B/<r x 100>: all seven planners on the synthesized
//   Llama-2-7B step of traces/llama2-7b-dp8-seq4096.trace.gz (ascend-910b-64g,
//   DP 8 ZeRO-2, seq 4096, 2 micro-batches; 3,172 ops) at oversubscription r.
// * BM_Compare1MOps/<r x 100>: the same on the 1,000,001-op synthetic trace
//   (bench/synthetic_trace.h) over a 25 GB/s link.
// * BM_WhatIf/<dimension>: the whole search for the 5-layer Llama-2 start of
//   seed 001 Table 4 (batch 4, seq 4096, hidden 4096), DP 8 ZeRO-2.
// The memory curve is computed once per trace, outside the timed loop, for
// the compare cases (as whatif and regress do per evaluation, it is inside
// there).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/eval/compare.h"
#include "swapplan/eval/whatif.h"
#include "swapplan/synth/synth.h"
#include "synthetic_trace.h"

namespace swapplan::bench {
namespace {

SynthOptions Llama(int32_t layers, int32_t micro_batches) {
  SynthOptions o;
  o.model = *ModelPreset("llama2-7b");
  o.model.layers = layers;
  if (!UseDevicePreset("ascend-910b-64g", &o).ok()) std::abort();
  o.parallel.data_parallel = 8;
  o.parallel.zero_stage = 2;
  o.seq_length_tokens = 4096;
  o.num_micro_batches = micro_batches;
  o.flops_efficiency = 0.45;
  o.tensor_names = false;
  return o;
}

struct Loaded {
  Trace trace;
  MemoryCurve curve;
};

const Loaded& LlamaTrace() {
  static const std::unique_ptr<Loaded> l = [] {
    auto x = std::make_unique<Loaded>(Loaded{*SynthesizeTrace(Llama(32, 2)), {}});
    x->curve = *ComputeMemoryCurve(x->trace);
    return x;
  }();
  return *l;
}

const Loaded& Synthetic1M() {
  static const std::unique_ptr<Loaded> l = [] {
    auto x = std::make_unique<Loaded>(Loaded{SyntheticTrace(1000000), {}});
    x->curve = *ComputeMemoryCurve(x->trace);
    return x;
  }();
  return *l;
}

void RunCompare(benchmark::State& state, const Loaded& l, double bandwidth) {
  CompareOptions o;
  o.oversubscription = static_cast<double>(state.range(0)) / 100.0;
  o.simulator.device.h2d_bandwidth_bytes_per_s = bandwidth;
  o.simulator.device.d2h_bandwidth_bytes_per_s = bandwidth;
  int feasible = 0;
  for (auto _ : state) {
    absl::StatusOr<Comparison> c = ComparePlanners(l.trace, o, &l.curve);
    if (!c.ok()) {
      state.SkipWithError(std::string(c.status().message()).c_str());
      return;
    }
    feasible = 0;
    for (const PlannerOutcome& r : c->rows) feasible += r.feasible;
  }
  state.counters["ops"] = l.trace.num_ops();
  state.counters["feasible_planners"] = feasible;
}

void BM_CompareLlama7B(benchmark::State& state) { RunCompare(state, LlamaTrace(), 0); }
BENCHMARK(BM_CompareLlama7B)->Arg(125)->Arg(150)->Arg(200)->Arg(300)->Unit(benchmark::kMillisecond);

void BM_Compare1MOps(benchmark::State& state) { RunCompare(state, Synthetic1M(), 25e9); }
BENCHMARK(BM_Compare1MOps)->Arg(150)->Arg(300)->Iterations(2)->Unit(benchmark::kMillisecond);

void BM_WhatIf(benchmark::State& state) {
  WhatIfOptions o;
  o.base = Llama(5, 1);
  o.base.micro_batch_sequences = 4;
  o.dimension = static_cast<ScaleDimension>(state.range(0));
  int32_t evaluations = 0;
  for (auto _ : state) {
    absl::StatusOr<WhatIfResult> r = RunWhatIf(o);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    evaluations = r->evaluations;
  }
  state.SetLabel(std::string(ScaleDimensionName(o.dimension)));
  state.counters["evaluations"] = evaluations;
}
BENCHMARK(BM_WhatIf)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace swapplan::bench

BENCHMARK_MAIN();
