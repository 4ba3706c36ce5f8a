// Planning time of the hybrid planner against Chameleon's (issue 23's last
// target: the hybrid within 3x of the logical-layer planner on the 32-layer
// trace), per oversubscription, as `compare` plans them: the planners from
// the registry with their default options, the budget from
// OversubscriptionBudget, the device's links from the trace metadata.
//
//   ninja -C build bench/hybrid_bench
//   build/bench/hybrid_bench                      # 30 plans each, r = 2 3 4 6 8 12
//   build/bench/hybrid_bench --runs 10 --trace traces/other.trace.gz --r 4 --r 8
//   build/bench/hybrid_bench --hybrid-option swap-only-last=true   # Planner::SetOption
//
// The trace and its memory curve are loaded once, outside the timings. Each
// run plans Chameleon then the hybrid at every r (alternated, so a burst of
// load on the shared machine hits both). Per plan: the calling thread's CPU
// time (CLOCK_THREAD_CPUTIME_ID: what other processes' load does not
// inflate — the primary figure) and the wall time (steady_clock). Printed
// per r: min and median of each, and hybrid / chameleon of the medians.
// The policies' item counts are printed too, and a run whose policy differs
// from the first run's (item count or expected overhead) aborts the bench:
// planning is deterministic.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "swapplan/curve/oversubscription.h"
#include "swapplan/planners/registry.h"
#include "swapplan/trace/io.h"

namespace swapplan::bench {
namespace {

int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Samples {
  std::vector<int64_t> cpu_ns, wall_ns;
  bool ok = false;
  size_t items = 0;
  int64_t overhead_ns = 0;
};

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

int64_t Min(std::vector<int64_t> v) { return *std::min_element(v.begin(), v.end()); }
int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One timed plan; false (with a message) when the policy differs from the
// earlier runs' of the same (planner, r).
bool TimeOne(Planner& planner, const PlanningProblem& problem, Samples* s, bool first,
             const char* name, double r) {
  const int64_t c0 = ThreadCpuNs();
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<Policy> p = planner.Plan(problem);
  const auto t1 = std::chrono::steady_clock::now();
  const int64_t c1 = ThreadCpuNs();
  s->cpu_ns.push_back(c1 - c0);
  s->wall_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  const size_t items = p.ok() ? p->items.size() : 0;
  const int64_t overhead = p.ok() ? p->expected_overhead_ns : 0;
  if (first) {
    s->ok = p.ok();
    s->items = items;
    s->overhead_ns = overhead;
    return true;
  }
  if (p.ok() != s->ok || items != s->items || overhead != s->overhead_ns) {
    std::fprintf(stderr, "%s at r=%g: the policy differs between runs\n", name, r);
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  std::string path = std::string(SWAPPLAN_SOURCE_ROOT) + "/traces/llama2-7b-dp8-seq4096.trace.gz";
  int runs = 30;
  std::vector<double> ratios;
  std::vector<std::pair<std::string, std::string>> hybrid_options;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--trace") == 0 && has_value) {
      path = argv[++i];
    } else if (std::strcmp(argv[i], "--runs") == 0 && has_value) {
      runs = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--r") == 0 && has_value) {
      ratios.push_back(std::atof(argv[++i]));
    } else if (std::strcmp(argv[i], "--hybrid-option") == 0 && has_value) {
      const std::string kv = argv[++i];
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "--hybrid-option wants NAME=VALUE, got %s\n", kv.c_str());
        return 2;
      }
      hybrid_options.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
    } else {
      std::fprintf(stderr, "usage: %s [--trace PATH] [--runs N] [--r RATIO]... [--hybrid-option NAME=VALUE]...\n", argv[0]);
      return 2;
    }
  }
  if (runs < 1) {
    std::fprintf(stderr, "--runs must be >= 1\n");
    return 2;
  }
  if (ratios.empty()) ratios = {2, 3, 4, 6, 8, 12};
  absl::StatusOr<Trace> trace = ReadTrace(path);
  if (!trace.ok()) {
    std::fprintf(stderr, "%s\n", std::string(trace.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*trace);
  if (!curve.ok()) {
    std::fprintf(stderr, "%s\n", std::string(curve.status().message()).c_str());
    return 1;
  }
  std::vector<PlanningProblem> problems;
  for (double r : ratios) {
    absl::StatusOr<int64_t> budget = OversubscriptionBudget(curve->iterations()[0], r);
    if (!budget.ok()) {
      std::fprintf(stderr, "r=%g: %s\n", r, std::string(budget.status().message()).c_str());
      return 1;
    }
    DeviceModel d;
    d.capacity_bytes = *budget;
    d.h2d_bandwidth_bytes_per_s = trace->metadata().h2d_bandwidth_bytes_per_s;
    d.d2h_bandwidth_bytes_per_s = trace->metadata().d2h_bandwidth_bytes_per_s;
    problems.push_back({.trace = &*trace, .iteration = 0, .device = d, .curve = &*curve});
  }
  const char* names[2] = {"chameleon", "hybrid"};
  std::unique_ptr<Planner> planners[2];
  for (int k = 0; k < 2; ++k) {
    absl::StatusOr<std::unique_ptr<Planner>> p = CreatePlanner(names[k]);
    if (!p.ok()) {
      std::fprintf(stderr, "%s\n", std::string(p.status().message()).c_str());
      return 1;
    }
    planners[k] = *std::move(p);
  }
  for (const auto& [name, value] : hybrid_options) {
    if (absl::Status st = planners[1]->SetOption(name, value); !st.ok()) {
      std::fprintf(stderr, "hybrid.%s=%s: %s\n", name.c_str(), value.c_str(),
                   std::string(st.message()).c_str());
      return 2;
    }
  }
  std::vector<Samples> samples(ratios.size() * 2);
  for (int run = 0; run < runs; ++run) {
    for (size_t i = 0; i < ratios.size(); ++i) {
      for (int k = 0; k < 2; ++k) {
        if (!TimeOne(*planners[k], problems[i], &samples[2 * i + k], run == 0, names[k],
                     ratios[i])) {
          return 1;
        }
      }
    }
  }
  std::printf("%s: %d plans each; times in ms (cpu: CLOCK_THREAD_CPUTIME_ID, wall: steady)\n",
              path.c_str(), runs);
  std::printf("%5s  %-9s %6s  %8s %8s  %8s %8s\n", "r", "planner", "items", "cpu min", "cpu med",
              "wall min", "wall med");
  for (size_t i = 0; i < ratios.size(); ++i) {
    for (int k = 0; k < 2; ++k) {
      const Samples& s = samples[2 * i + k];
      std::printf("%5g  %-9s %6s  %8.2f %8.2f  %8.2f %8.2f\n", ratios[i], names[k],
                  s.ok ? std::to_string(s.items).c_str() : "none", Ms(Min(s.cpu_ns)),
                  Ms(Median(s.cpu_ns)), Ms(Min(s.wall_ns)), Ms(Median(s.wall_ns)));
    }
    const Samples& c = samples[2 * i];
    const Samples& h = samples[2 * i + 1];
    std::printf("%5g  hybrid/chameleon: cpu median %.2fx (min %.2fx), wall median %.2fx\n",
                ratios[i], static_cast<double>(Median(h.cpu_ns)) / Median(c.cpu_ns),
                static_cast<double>(Min(h.cpu_ns)) / Min(c.cpu_ns),
                static_cast<double>(Median(h.wall_ns)) / Median(c.wall_ns));
  }
  return 0;
}

}  // namespace
}  // namespace swapplan::bench

int main(int argc, char** argv) { return swapplan::bench::Main(argc, argv); }
