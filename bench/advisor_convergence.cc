// How fast the Advisor's search converges (issue 7): runs the genetic
// search for a fixed time and prints, per generation, the elapsed time and
// the best simulated iteration time so far; at the end, when the best first
// came within 1, 2 and 5 % of the run's final best. Run it once for 10
// minutes (the reference) and read off how long a run takes to get within
// 2 % of it.
//
//   ninja -C build bench/advisor_convergence
//   build/bench/advisor_convergence traces/bilstm.json.gz 9MiB 100MB/s 600s [threads] [seed]
//       [temperature]
//   (iteration: the trace's last)
#include <cstdio>
#include <string>

#include "swapplan/planners/advisor/search.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/units.h"

namespace swapplan {
namespace {

int Run(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s TRACE BUDGET BANDWIDTH TIME [threads] [seed] [temperature]\n",
                 argv[0]);
    return 2;
  }
  absl::StatusOr<Trace> trace = ReadTrace(argv[1]);
  absl::StatusOr<int64_t> budget = ParseBytes(argv[2]);
  absl::StatusOr<double> bw = ParseBandwidth(argv[3]);
  absl::StatusOr<int64_t> time = ParseDurationNs(argv[4]);
  if (!trace.ok() || !budget.ok() || !bw.ok() || !time.ok()) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  AdvisorOptions o;
  o.search.time_limit_ns = *time;
  o.search.threads = argc > 5 ? std::atoi(argv[5]) : 0;
  o.search.seed = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 1;
  o.search.selection_temperature = argc > 7 ? std::atof(argv[7]) : 1.0;
  PlanningProblem pp{.trace = &*trace,
                     .iteration = trace->num_iterations() - 1,
                     .device = {.capacity_bytes = *budget,
                     .h2d_bandwidth_bytes_per_s = *bw,
                     .d2h_bandwidth_bytes_per_s = *bw}};
  absl::StatusOr<std::unique_ptr<AdvisorProblem>> p = AdvisorProblem::Create(pp, o);
  if (!p.ok()) {
    std::fprintf(stderr, "%s\n", std::string(p.status().message()).c_str());
    return 1;
  }
  GeneticSearch search(**p, o);
  absl::StatusOr<SearchResult> r = search.Run();
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  std::printf("generation,elapsed_s,best_ever_ns,best_ns,mean_ns,worst_ns,evals_per_s\n");
  int64_t last = -2;
  for (const GenerationStats& g : r->history) {
    if (g.best_ever_ns == last && g.generation % 50 != 0) continue;  // print changes
    last = g.best_ever_ns;
    std::printf("%d,%.3f,%lld,%lld,%lld,%lld,%.1f\n", g.generation, g.elapsed_ns / 1e9,
                static_cast<long long>(g.best_ever_ns), static_cast<long long>(g.best_ns),
                static_cast<long long>(g.mean_ns), static_cast<long long>(g.worst_ns),
                g.evaluations_per_s);
  }
  const int64_t final_best = r->history.back().best_ever_ns;
  const int64_t ideal = r->simulation.ideal_time_ns;
  std::printf("# final best %lld ns (ideal %lld ns, %+.2f%%) after %d generations, %lld "
              "evaluations, %.1f s (%.1f evaluations/s)\n",
              static_cast<long long>(final_best), static_cast<long long>(ideal),
              100.0 * (final_best - ideal) / ideal, r->generations,
              static_cast<long long>(r->evaluations), r->elapsed_ns / 1e9,
              r->evaluations / (r->elapsed_ns / 1e9));
  for (double pct : {5.0, 2.0, 1.0}) {
    for (const GenerationStats& g : r->history) {
      if (g.best_ever_ns >= 0 && g.best_ever_ns <= final_best * (1 + pct / 100)) {
        std::printf("# within %.0f%% of the final best after %.1f s (generation %d)\n", pct,
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
