// Time to quality of the seeded Advisor search (issue 20): runs `search` on
// one trace and budget for a fixed time and prints, per generation that
// changed it, the elite's simulated time; at the end the best seed
// (Chameleon's and the baselines' policies), when the search first beat it,
// and when it first came within 1 % and 0.1 % of its final result.
//
//   ninja -C build bench/search_quality
//   build/bench/search_quality traces/llama2-7b-4layers-dp8-seq4096.trace.gz 3 60s [threads] [seed]
//   (the second argument is the oversubscription r; iteration 0)
#include <cstdio>
#include <string>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/oversubscription.h"
#include "swapplan/planners/advisor/advisor_planner.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/units.h"

namespace swapplan {
namespace {

int Run(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s TRACE R TIME [threads] [seed]\n", argv[0]);
    return 2;
  }
  absl::StatusOr<Trace> trace = ReadTrace(argv[1]);
  absl::StatusOr<int64_t> time = ParseDurationNs(argv[3]);
  if (!trace.ok() || !time.ok()) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*trace);
  DeviceModel base;
  base.h2d_bandwidth_bytes_per_s = trace->metadata().h2d_bandwidth_bytes_per_s;
  base.d2h_bandwidth_bytes_per_s = trace->metadata().d2h_bandwidth_bytes_per_s;
  absl::StatusOr<DeviceModel> device =
      OversubscribedDevice(base, curve->iterations()[0], std::atof(argv[2]));
  if (!device.ok()) {
    std::fprintf(stderr, "%s\n", std::string(device.status().message()).c_str());
    return 2;
  }
  AdvisorOptions o;
  o.search.time_limit_ns = *time;
  o.search.threads = argc > 4 ? std::atoi(argv[4]) : 0;
  o.search.seed = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1;
  AdvisorPlanner planner(o);
  PlanningProblem pp{.trace = &*trace, .iteration = 0, .device = *device};
  absl::StatusOr<Policy> p = planner.Plan(pp);
  if (!p.ok()) {
    std::fprintf(stderr, "%s\n", std::string(p.status().message()).c_str());
    return 1;
  }
  const SearchResult& r = *planner.last_result();
  int64_t best_seed = -1;
  std::string seed_name = "none";
  for (const SeedOutcome& s : r.seeds) {
    if (s.time_ns >= 0 && (best_seed < 0 || s.time_ns < best_seed)) {
      best_seed = s.time_ns;
      seed_name = s.name;
    }
  }
  std::printf("generation,elapsed_s,elite_ns,best_chromosome_ns\n");
  int64_t last = -2;
  for (const GenerationStats& g : r.history) {
    if (g.elite_ns == last) continue;
    last = g.elite_ns;
    std::printf("%d,%.3f,%lld,%lld\n", g.generation, g.elapsed_ns / 1e9,
                static_cast<long long>(g.elite_ns), static_cast<long long>(g.best_ever_ns));
  }
  std::printf("# best seed %s %lld ns; final %lld ns (%+.3f%%) after %d generations, %.1f s; "
              "source: %s\n",
              seed_name.c_str(), static_cast<long long>(best_seed),
              static_cast<long long>(r.best_ns),
              best_seed > 0 ? 100.0 * (r.best_ns - best_seed) / best_seed : 0.0, r.generations,
              r.elapsed_ns / 1e9, r.source.c_str());
  for (const GenerationStats& g : r.history) {
    if (g.elite_ns >= 0 && best_seed >= 0 && g.elite_ns < best_seed) {
      std::printf("# beat the best seed after %.1f s (generation %d)\n", g.elapsed_ns / 1e9,
                  g.generation);
      break;
    }
  }
  for (double pct : {1.0, 0.1}) {
    for (const GenerationStats& g : r.history) {
      if (g.elite_ns >= 0 && g.elite_ns <= r.best_ns * (1 + pct / 100)) {
        std::printf("# within %.1f%% of the final after %.1f s (generation %d)\n", pct,
                    g.elapsed_ns / 1e9, g.generation);
        break;
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace swapplan

int main(int argc, char** argv) { return swapplan::Run(argc, argv); }
