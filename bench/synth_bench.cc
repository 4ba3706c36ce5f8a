// Trace synthesizer throughput (issue 3's target: a 1,000,000-op trace
// generated and written in binary form in under 3 s).
//
//   ninja -C build bench/synth_bench && build/bench/synth_bench
//
// The workload is the paper's Llama2-7B data-parallel configuration
// (ascend-910b-64g, DP8, ZeRO-2, seq 4096) with 8 micro-batches per
// iteration: 10,816 ops per iteration, 97 iterations = 1,049,152 ops.
// `synth_bench --once PATH` runs synthesize + write once and prints the
// phases' wall times and the peak RSS.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include "swapplan/synth/synth.h"
#include "swapplan/trace/io.h"

namespace swapplan::bench {
namespace {

SynthOptions MillionOps(bool names) {
  SynthOptions o;
  o.model = *ModelPreset("llama2-7b");
  if (!UseDevicePreset("ascend-910b-64g", &o).ok()) std::abort();
  o.parallel.data_parallel = 8;
  o.parallel.zero_stage = 2;
  o.num_micro_batches = 8;
  o.iterations = 97;
  o.tensor_names = names;
  return o;
}

void BM_Synthesize(benchmark::State& state) {
  const SynthOptions o = MillionOps(state.range(0) != 0);
  int64_t ops = 0, tensors = 0;
  for (auto _ : state) {
    absl::StatusOr<Trace> t = SynthesizeTrace(o);
    if (!t.ok()) state.SkipWithError(std::string(t.status().message()).c_str());
    ops = t->num_ops();
    tensors = t->num_tensors();
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["tensors"] = static_cast<double>(tensors);
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate |
                                    benchmark::Counter::kInvert);
}
BENCHMARK(BM_Synthesize)->Arg(1)->Arg(0)->ArgName("names")->Unit(benchmark::kMillisecond)
    ->Iterations(3);

void BM_SynthesizeAndWriteBinary(benchmark::State& state) {
  const SynthOptions o = MillionOps(state.range(0) != 0);
  for (auto _ : state) {
    absl::StatusOr<Trace> t = SynthesizeTrace(o);
    if (!t.ok()) state.SkipWithError(std::string(t.status().message()).c_str());
    if (!WriteTrace(*t, "/tmp/swapplan_synth_bench.trace").ok()) state.SkipWithError("write");
  }
}
BENCHMARK(BM_SynthesizeAndWriteBinary)->Arg(1)->Arg(0)->ArgName("names")
    ->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace swapplan::bench

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--once") == 0) {
    using Clock = std::chrono::steady_clock;
    auto t0 = Clock::now();
    absl::StatusOr<swapplan::Trace> t =
        swapplan::SynthesizeTrace(swapplan::bench::MillionOps(true));
    if (!t.ok()) return 1;
    auto t1 = Clock::now();
    if (!swapplan::WriteTrace(*t, argv[2]).ok()) return 1;
    auto t2 = Clock::now();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::printf("ops %d tensors %d uses %lld: synthesize %.0f ms, write %.0f ms, total %.0f ms, "
                "model %.1f MiB, peak_rss %.1f MiB\n",
                t->num_ops(), t->num_tensors(), static_cast<long long>(t->num_uses()),
                ms(t1 - t0), ms(t2 - t1), ms(t2 - t0),
                static_cast<double>(t->ApproximateMemoryBytes()) / (1 << 20),
                static_cast<double>(ru.ru_maxrss) / 1024.0);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
