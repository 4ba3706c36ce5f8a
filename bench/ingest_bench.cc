// Ingest + validate + curve on a 1,000,000-op synthetic trace (issue 2's
// target: under 2 s for the binary form on a 2-core machine).
//
//   ninja -C build bench/ingest_bench && build/bench/ingest_bench
//
// Also reports the in-memory model size. Peak RSS of a read alone is
// measured by `ingest_bench --rss PATH` (one read, then getrusage), so the
// generator's own memory does not count.
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/trace/io.h"
#include "synthetic_trace.h"

namespace swapplan::bench {
namespace {

constexpr int64_t kOps = 1000000;

const std::string& BinaryPath() {
  static const std::string path = [] {
    std::string p = "/tmp/swapplan_bench_1m.trace";
    Trace t = SyntheticTrace(kOps);
    if (!WriteTrace(t, p).ok()) std::abort();
    return p;
  }();
  return path;
}

void BM_ReadValidateCurve(benchmark::State& state) {
  const std::string& path = BinaryPath();
  int64_t ops = 0, uses = 0, model = 0;
  for (auto _ : state) {
    absl::StatusOr<Trace> t = ReadTrace(path);
    if (!t.ok()) state.SkipWithError(std::string(t.status().message()).c_str());
    absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(*t);
    benchmark::DoNotOptimize(c->peak_unswapped().bytes);
    ops = t->num_ops();
    uses = t->num_uses();
    model = t->ApproximateMemoryBytes();
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["uses"] = static_cast<double>(uses);
  state.counters["model_MiB"] = static_cast<double>(model) / (1 << 20);
}
BENCHMARK(BM_ReadValidateCurve)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_CurveOnly(benchmark::State& state) {
  static Trace t = SyntheticTrace(kOps);
  for (auto _ : state) {
    absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t);
    benchmark::DoNotOptimize(c->peak_unswapped().bytes);
  }
}
BENCHMARK(BM_CurveOnly)->Unit(benchmark::kMillisecond);

void BM_WriteBinary(benchmark::State& state) {
  static Trace t = SyntheticTrace(kOps);
  for (auto _ : state) {
    if (!WriteTrace(t, "/tmp/swapplan_bench_write.trace").ok()) state.SkipWithError("write");
  }
}
BENCHMARK(BM_WriteBinary)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace swapplan::bench

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--rss") == 0) {
    absl::StatusOr<swapplan::Trace> t = swapplan::ReadTrace(argv[2]);
    if (!t.ok()) return 1;
    absl::StatusOr<swapplan::MemoryCurve> c = swapplan::ComputeMemoryCurve(*t);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    std::printf("ops %d uses %lld model %.1f MiB peak_rss %.1f MiB\n", t->num_ops(),
                static_cast<long long>(t->num_uses()),
                static_cast<double>(t->ApproximateMemoryBytes()) / (1 << 20),
                static_cast<double>(ru.ru_maxrss) / 1024.0);
    return c.ok() ? 0 : 1;
  }
  if (argc == 3 && std::strcmp(argv[1], "--generate") == 0) {
    return swapplan::WriteTrace(swapplan::bench::SyntheticTrace(1000000), argv[2]).ok() ? 0 : 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
