// Allocator models replayed over a 1,000,000-op synthetic trace
// (bench/synthetic_trace.h: ~1M tensors of 1-5 MiB, every one allocated and
// freed). Target (issue 35): a replay under 1 s. Complexity: O(steps log
// blocks) per replay (curve/reserved_curve.h); the pinned-segment listing
// replays once more up to the peak.
//
//   ninja -C build bench/alloc_bench && build/bench/alloc_bench
#include <benchmark/benchmark.h>

#include "swapplan/curve/reserved_curve.h"
#include "synthetic_trace.h"

namespace swapplan::bench {
namespace {

constexpr int64_t kOps = 1000000;

struct Fixture {
  Trace trace;
  AllocationSequence sequence;
};

const Fixture& Get() {
  static Fixture f;
  static const bool ready = [] {
    f.trace = SyntheticTrace(kOps);
    f.sequence = *SequenceOfIteration(f.trace, 0);
    return true;
  }();
  (void)ready;
  return f;
}

void Replay(benchmark::State& state, AllocatorOptions o, int32_t pinned) {
  const Fixture& f = Get();
  ReservedCurve c;
  for (auto _ : state) {
    c = *ReplayAllocations(f.sequence, o, {.pinned_segments = pinned});
    benchmark::DoNotOptimize(c.peak_reserved_bytes);
  }
  state.counters["ops"] = f.sequence.num_positions;
  state.counters["steps"] = static_cast<double>(f.sequence.steps.size());
  state.counters["peak_reserved_MiB"] = static_cast<double>(c.peak_reserved_bytes) / (1 << 20);
  state.counters["peak_requested_MiB"] = static_cast<double>(c.peak_requested_bytes) / (1 << 20);
}

void BM_Sequence(benchmark::State& state) {
  const Fixture& f = Get();
  for (auto _ : state) {
    AllocationSequence s = *SequenceOfIteration(f.trace, 0);
    benchmark::DoNotOptimize(s.steps.data());
  }
}
BENCHMARK(BM_Sequence)->Unit(benchmark::kMillisecond);

void BM_CachingCurve(benchmark::State& state) { Replay(state, {}, 0); }
BENCHMARK(BM_CachingCurve)->Unit(benchmark::kMillisecond);

void BM_CachingCurveAndPins(benchmark::State& state) { Replay(state, {}, 5); }
BENCHMARK(BM_CachingCurveAndPins)->Unit(benchmark::kMillisecond);

void BM_CachingExpandable(benchmark::State& state) {
  AllocatorOptions o;
  o.expandable_segments = true;
  Replay(state, o, 0);
}
BENCHMARK(BM_CachingExpandable)->Unit(benchmark::kMillisecond);

void BM_CachingMaxSplit(benchmark::State& state) {
  AllocatorOptions o;
  o.max_split_size_bytes = int64_t{128} << 20;
  Replay(state, o, 0);
}
BENCHMARK(BM_CachingMaxSplit)->Unit(benchmark::kMillisecond);

void BM_BestFitArena(benchmark::State& state) {
  AllocatorOptions o;
  o.kind = AllocatorKind::kBestFitArena;
  Replay(state, o, 0);
}
BENCHMARK(BM_BestFitArena)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace swapplan::bench

BENCHMARK_MAIN();
