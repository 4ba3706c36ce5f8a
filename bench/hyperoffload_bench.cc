// Planning time of the hyperoffload planner (issue 17's target on this
// 2-core machine: under 2 s on a 1,000,000-op trace), with and without the
// execution-order refinement's reordering, and with a remote tier.
//
//   ninja -C build bench/hyperoffload_bench && build/bench/hyperoffload_bench
//
// The memory curve is computed once outside the timed loop (PlanningProblem
// ::curve), as `swapplan plan` does. Each plan includes the planner's own
// final check (sim/checker.h).
#include <string>

#include <benchmark/benchmark.h>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/hyperoffload/hyperoffload_planner.h"
#include "synthetic_trace.h"

namespace swapplan::bench {
namespace {

struct Case {
  Trace trace;
  MemoryCurve curve;
  int64_t peak = 0;
};

Case& Million() {
  static Case c = [] {
    Case x{SyntheticTrace(1000000), {}, 0};
    x.curve = *ComputeMemoryCurve(x.trace);
    x.peak = x.curve.peak_unswapped().bytes;
    return x;
  }();
  return c;
}

// range(0): budget in % of the unswapped peak; range(1): 1 = reorder;
// range(2): 1 = a remote tier (4x the host link, room for everything).
void BM_Plan1MOps(benchmark::State& state) {
  Case& c = Million();
  PlanningProblem pr{.trace = &c.trace, .iteration = 0, .curve = &c.curve};
  pr.device.capacity_bytes =
      static_cast<int64_t>(static_cast<double>(c.peak) * static_cast<double>(state.range(0)) / 100);
  pr.device.h2d_bandwidth_bytes_per_s = c.trace.metadata().h2d_bandwidth_bytes_per_s;
  pr.device.d2h_bandwidth_bytes_per_s = c.trace.metadata().d2h_bandwidth_bytes_per_s;
  if (state.range(2) != 0) {
    pr.device.tiers.push_back({.name = "remote", .capacity_bytes = c.peak,
                               .store_bandwidth_bytes_per_s = 4 * pr.device.d2h_bandwidth_bytes_per_s,
                               .load_bandwidth_bytes_per_s = 4 * pr.device.h2d_bandwidth_bytes_per_s});
  }
  HyperOffloadOptions o;
  o.reorder = state.range(1) != 0;
  HyperOffloadPlanner planner(o);
  bool ok = false;
  size_t items = 0;
  bool reordered = false;
  std::string error;
  for (auto _ : state) {
    absl::StatusOr<Policy> p = planner.Plan(pr);
    ok = p.ok();
    if (ok) {
      items = p->items.size();
      reordered = !p->schedule.empty();
    } else {
      error = std::string(p.status().message());
    }
    benchmark::DoNotOptimize(ok);
  }
  if (!ok) state.SetLabel(error.substr(0, 120));
  state.counters["ops"] = c.trace.num_ops();
  state.counters["feasible"] = ok;
  state.counters["windows"] = static_cast<double>(items);
  state.counters["reordered"] = reordered;
}
BENCHMARK(BM_Plan1MOps)
    ->Args({90, 1, 0})
    ->Args({75, 1, 0})
    ->Args({75, 0, 0})
    ->Args({75, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace swapplan::bench

BENCHMARK_MAIN();
