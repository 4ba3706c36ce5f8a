// swapplan search TRACE --device-memory X [--reserve X] [--iteration N]
//   [--time-limit 60s] [--generations N] [--population 144] [--mutation 0.1]
//   [--threads N] [--seed S] [--convergence K] [more options]
//   [--latency T] [--bandwidth B] [--half-duplex] [-o policy] [--json] [--quiet]
//
// Runs the Advisor planner (planners/advisor/advisor_planner.h): a genetic
// search over operator schedules and size-class memory pools with a Belady
// swap planner and the evaluation simulator as fitness. Progress goes to
// stderr, one line per generation (best / mean / worst simulated iteration
// time of the survivors, evaluations per second). The best policy is
// verified with the checker (a rejected policy is an internal error, exit
// 1), summarised on stdout, and written with -o. Exit 3 when no schedule
// and pool fit the budget.
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "trace_input.h"
#include "sim_flags.h"
#include "swapplan/planners/advisor/advisor_planner.h"
#include "swapplan/sim/checker.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct SearchArgs {
  std::string trace;
  std::string device_memory;
  std::string reserve = "0";
  int iteration = -1;
  std::string time_limit = "60s";
  int generations = 0;
  int population = SearchOptions().population;
  double mutation = SearchOptions().mutation_probability;
  int threads = 0;
  uint64_t seed = SearchOptions().seed;
  int convergence = 0;
  double temperature = 1.0;
  int elites = SearchOptions().elites;
  std::string initial = "recorded";
  std::string param_residency = "double-pass";
  std::string threshold = "auto";
  SimFlags sim;
  std::string output;
  bool json = false;
  bool quiet = false;
};

std::string Ns(int64_t ns) { return ns < 0 ? std::string("-") : FormatDurationNs(ns); }

std::string ProgressLine(const GenerationStats& g) {
  return absl::StrFormat(
      "swapplan search: gen %4d  best %10s  mean %10s  worst %10s  feasible %3d/%-3d  %7.1f "
      "eval/s  %s\n",
      g.generation, Ns(g.best_ns), Ns(g.mean_ns), Ns(g.worst_ns), g.feasible, g.population,
      g.evaluations_per_s, FormatDurationNs(g.elapsed_ns));
}

absl::Status Run(const SearchArgs& a) {
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(a.trace));
  const int32_t it = a.iteration >= 0 ? a.iteration : trace.num_iterations() - 1;
  if (it >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("--iteration ", it, " is out of range: ",
                                                   trace.source(), " has ",
                                                   trace.num_iterations(), " iterations"));
  }
  int64_t device = trace.metadata().device_memory_bytes;
  if (!a.device_memory.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(a.device_memory);
    if (!b.ok()) return absl::InvalidArgumentError(absl::StrCat("--device-memory: ", b.status().message()));
    device = *b;
  }
  if (device <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--device-memory is required: ", trace.source(),
                                                   " does not record the device memory"));
  }
  absl::StatusOr<int64_t> reserve = ParseBytes(a.reserve);
  if (!reserve.ok()) return absl::InvalidArgumentError(absl::StrCat("--reserve: ", reserve.status().message()));
  const int64_t budget = device - *reserve;
  if (budget <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--reserve ", FormatBytes(*reserve),
                                                   " leaves no budget out of ", FormatBytes(device)));
  }
  SimulatorOptions so;
  SWAPPLAN_RETURN_IF_ERROR(ApplySimFlags(a.sim, &so));
  DeviceModel& d = so.device;
  if (d.h2d_bandwidth_bytes_per_s == 0) d.h2d_bandwidth_bytes_per_s = trace.metadata().h2d_bandwidth_bytes_per_s;
  if (d.d2h_bandwidth_bytes_per_s == 0) d.d2h_bandwidth_bytes_per_s = trace.metadata().d2h_bandwidth_bytes_per_s;
  d.capacity_bytes = device;
  d.reserve_bytes = *reserve;
  if (!(d.h2d_bandwidth_bytes_per_s > 0) || !(d.d2h_bandwidth_bytes_per_s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no copy bandwidth: give --bandwidth (or --h2d-bandwidth and --d2h-bandwidth); ",
        trace.source(), " does not record one"));
  }

  AdvisorOptions o;
  {
    absl::StatusOr<int64_t> tl = ParseDurationNs(a.time_limit);
    if (!tl.ok()) return absl::InvalidArgumentError(absl::StrCat("--time-limit: ", tl.status().message()));
    o.search.time_limit_ns = *tl;
  }
  o.search.max_generations = a.generations;
  o.search.population = a.population;
  o.search.mutation_probability = a.mutation;
  o.search.threads = a.threads;
  o.search.seed = a.seed;
  o.search.convergence_generations = a.convergence;
  o.search.selection_temperature = a.temperature;
  o.search.elites = a.elites;
  ParseInitialPopulation(a.initial, &o.search.initial);                 // checked by CLI11
  ParseParamResidency(a.param_residency, &o.planner.param_residency);  // checked by CLI11
  if (a.threshold != "auto") {
    absl::StatusOr<int64_t> t = ParseDurationNs(a.threshold);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("--threshold: ", t.status().message()));
    o.planner.eviction_threshold_ns = *t;
  }
  SWAPPLAN_RETURN_IF_ERROR(o.Validate());

  AdvisorPlanner planner(o, so);
  if (!a.quiet) {
    planner.set_progress([](const GenerationStats& g) { std::cerr << ProgressLine(g); });
  }
  PlanningProblem problem{.trace = &trace, .iteration = it, .device = so.device};
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, planner.Plan(problem));
  const SearchResult& r = *planner.last_result();
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport check, CheckPolicy(trace, policy));
  if (!check.clean()) {
    return absl::InternalError(absl::StrCat("the advisor's policy fails the checker: ",
                                            check.violations.front().message));
  }
  if (!a.output.empty()) SWAPPLAN_RETURN_IF_ERROR(WritePolicy(policy, a.output));

  const SimulationResult& s = r.simulation;
  int32_t wrapping = 0, clean = 0;
  for (const PolicyItem& item : policy.items) {
    wrapping += item.wraps;
    clean += item.clean;
  }
  std::string out;
  if (a.json) {
    nlohmann::json j = {{"trace", trace.source()},
                        {"iteration", it},
                        {"budget_bytes", budget},
                        {"iteration_time_ns", s.iteration_time_ns},
                        {"ideal_time_ns", s.ideal_time_ns},
                        {"overhead_vs_ideal", s.overhead_vs_ideal},
                        {"stall_ns", s.stall_ns},
                        {"peak_bytes", s.peak_bytes},
                        {"pool_bytes", s.pool_bytes},
                        {"pool_classes", policy.pool.classes.size()},
                        {"bytes_d2h", s.bytes_d2h},
                        {"bytes_h2d", s.bytes_h2d},
                        {"items", policy.items.size()},
                        {"wrapping_items", wrapping},
                        {"clean_items", clean},
                        {"generations", r.generations},
                        {"evaluations", r.evaluations},
                        {"infeasible_evaluations", r.infeasible_evaluations},
                        {"search_time_ns", r.elapsed_ns},
                        {"stop_reason", r.stop_reason},
                        {"seed", o.search.seed}};
    out = j.dump(2) + "\n";
  } else {
    TextTable t({"search", trace.source()});
    t.AddRow({"iteration", absl::StrCat(it, " (", trace.iteration(it).num_ops(), " ops)")});
    t.AddRow({"budget", absl::StrCat(BytesExact(budget), " = device memory ", FormatBytes(device),
                                     " - reserve ", FormatBytes(*reserve))});
    t.AddRow({"link", LinkText(s.device)});
    t.AddRow({"iteration time", absl::StrCat(FormatDurationNs(s.iteration_time_ns), " (ideal ",
                                             FormatDurationNs(s.ideal_time_ns), ", ",
                                             absl::StrFormat("%+.2f%%", 100 * s.overhead_vs_ideal),
                                             "), stall ", FormatDurationNs(s.stall_ns))});
    const size_t classes = policy.pool.classes.size();
    t.AddRow({"peak", absl::StrCat(BytesExact(s.peak_bytes), " in a pool of ", classes,
                                   classes == 1 ? " size class, " : " size classes, ",
                                   BytesExact(s.pool_bytes))});
    t.AddRow({"swaps", absl::StrCat(policy.items.size(), " items (", wrapping,
                                    " across the iteration boundary, ", clean,
                                    " without a copy out), ", FormatBytes(s.bytes_d2h), " out, ",
                                    FormatBytes(s.bytes_h2d), " in")});
    t.AddRow({"search", absl::StrCat(r.generations, " generations, ", r.evaluations,
                                     " evaluations (", r.infeasible_evaluations, " infeasible) in ",
                                     FormatDurationNs(r.elapsed_ns), "; stopped: ", r.stop_reason)});
    t.AddRow({"checker", absl::StrCat("clean (", check.release_waits, " planned release waits)")});
    if (!a.output.empty()) t.AddRow({"policy", a.output});
    out = t.Render(2);
  }
  return WriteOutput("", out);
}

}  // namespace

void SetupSearch(CLI::App& root, Action* action) {
  auto a = std::make_shared<SearchArgs>();
  CLI::App* sub = root.add_subcommand(
      "search",
      "Advisor planner (SwapAdvisor, seed 002): genetic search over operator schedules and "
      "size-class memory pools, Belady swaps, the evaluation simulator as fitness. Progress per "
      "generation on stderr. Exit 3 when nothing fits the budget.");
  sub->add_option("trace", a->trace, "Trace file")->required();
  sub->add_option("--device-memory", a->device_memory,
                  "Device memory, e.g. 64GiB (default: the trace's)");
  sub->add_option("--reserve", a->reserve, "Memory kept back; budget = device memory - reserve")
      ->capture_default_str();
  sub->add_option("--iteration", a->iteration,
                  "Iteration to plan (default: the last, as plan does)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--time-limit", a->time_limit, "Stop after this long (0 = no limit)")
      ->capture_default_str();
  sub->add_option("--generations", a->generations, "Stop after N generations (0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--population", a->population, "Individuals per generation (seed 002: 144)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  sub->add_option("--mutation", a->mutation, "Mutation probability P (seed 002: 0.1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--threads", a->threads, "Evaluation threads (0 = all cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--seed", a->seed, "Random seed (same seed: same result)")->capture_default_str();
  sub->add_option("--convergence", a->convergence,
                  "Stop after K generations without improving the best by more than 0.01% "
                  "(0 = never)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--temperature", a->temperature,
                  "Softmax temperature of the survival draw (1 = seed 002's Eq. 1)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--elites", a->elites, "Fastest individuals that always survive (0 = seed 002)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--initial", a->initial,
                  "First generation: recorded (the recorded order and mutants) or random")
      ->capture_default_str()
      ->check(CLI::IsMember({"recorded", "random"}));
  sub->add_option("--param-residency", a->param_residency,
                  "Persistent tensors at the iteration boundary: double-pass (seed 002 §4.2) or "
                  "start-on-host")
      ->capture_default_str()
      ->check(CLI::IsMember({"double-pass", "start-on-host"}));
  sub->add_option("--threshold", a->threshold,
                  "Belady candidates last used at least this long ago, e.g. 10us (auto: the "
                  "time to copy one object of the class out)")
      ->capture_default_str();
  AddSimFlags(sub, &a->sim);
  sub->add_option("-o,--output", a->output, "Write the policy (.json: JSON, else binary)");
  sub->add_flag("--json", a->json, "Machine-readable summary on stdout");
  sub->add_flag("--quiet", a->quiet, "No progress on stderr");
  sub->callback([a, action] { *action = [a]() -> absl::Status { return Run(*a); }; });
}

}  // namespace swapplan::cli
