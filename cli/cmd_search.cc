// swapplan search TRACE --device-memory X [--reserve X] [--iteration N]
//   [--time-limit 60s] [--generations N] [--population 144] [--mutation 0.1]
//   [--threads N] [--seed S] [--convergence K] [more options]
//   [--seeds a,b|none] [--seed-mutants N] [--local-search N] [--oversubscription R]
//   [--islands [--migration-interval N] [--migrants N]]
//   [--latency T] [--bandwidth B] [--half-duplex] [-o policy] [--json] [--quiet]
//
// Runs the Advisor planner (planners/advisor/advisor_planner.h): a genetic
// search over operator schedules and size-class memory pools with a Belady
// swap planner and the evaluation simulator as fitness, seeded with the
// other planners' policies and with local search on its elite (never slower
// than the best seed: planners/advisor/search.h). Progress goes to
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
#include "absl/strings/str_split.h"
#include "cli.h"
#include "mpi_islands.h"
#include "trace_input.h"
#include "sim_flags.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/registry.h"
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
  double oversubscription = 0;
  // Seeds and local search (issue 20).
  std::string seeds = "default";
  int seed_mutants = SearchOptions().seed_mutants;
  int local_search = SearchOptions().local_search_moves;
  // Island model over MPI.
  bool islands = false;
  int migration_interval = IslandOptions().migration_interval;
  int migrants = IslandOptions().migrants;
  SimFlags sim;
  std::string output;
  // Per-generation CSV (elapsed, best chromosome, elite, best of all islands).
  std::string history;
  bool json = false;
  bool quiet = false;
};

std::string Ns(int64_t ns) { return ns < 0 ? std::string("-") : FormatDurationNs(ns); }

std::string ProgressLine(const GenerationStats& g, bool islands) {
  std::string line = absl::StrFormat(
      "swapplan search: gen %4d  best %10s  mean %10s  worst %10s  feasible %3d/%-3d  %7.1f "
      "eval/s  elite %10s",
      g.generation, Ns(g.best_ns), Ns(g.mean_ns), Ns(g.worst_ns), g.feasible, g.population,
      g.evaluations_per_s, Ns(g.elite_ns));
  if (islands) absl::StrAppend(&line, "  islands ", Ns(g.islands_best_ns));
  absl::StrAppend(&line, "  ", FormatDurationNs(g.elapsed_ns), "\n");
  return line;
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
  if (a.oversubscription != 0) {
    // As compare: persistent bytes + (unswapped peak - persistent) / r.
    if (!a.device_memory.empty() || a.reserve != "0") {
      return absl::InvalidArgumentError(
          "--oversubscription replaces --device-memory and --reserve: give one or the other");
    }
    SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
    BudgetSpec spec;
    spec.oversubscription = a.oversubscription;
    SWAPPLAN_ASSIGN_OR_RETURN(ResolvedBudget rb, ResolveBudget(trace, curve.iterations()[it], spec));
    device = rb.budget_bytes;
  } else if (!a.device_memory.empty()) {
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
  o.search.seed_mutants = a.seed_mutants;
  o.search.local_search_moves = a.local_search;
  if (a.seeds != "default") {
    o.seed_planners.clear();
    if (a.seeds != "none") {
      for (absl::string_view name : absl::StrSplit(a.seeds, ',', absl::SkipEmpty())) {
        if (FindPlanner(name) == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat("--seeds: unknown planner '", name,
                                                         "' (known: ", PlannerNames(), ")"));
        }
        o.seed_planners.emplace_back(name);
      }
    }
  }
  SWAPPLAN_RETURN_IF_ERROR(o.Validate());
  IslandOptions io{.migration_interval = a.migration_interval, .migrants = a.migrants};
  SWAPPLAN_RETURN_IF_ERROR(io.Validate());

  AdvisorPlanner planner(o, so);
  // Islands: one population per MPI rank; rank 0 reports and writes.
  std::unique_ptr<MpiIslands> mpi;
  if (a.islands) {
    SWAPPLAN_ASSIGN_OR_RETURN(mpi, MpiIslands::Start());
    planner.set_islands(mpi.get(), io);
  }
  const bool lead = mpi == nullptr || mpi->rank() == 0;
  if (!a.quiet && lead) {
    const bool islands = a.islands;
    planner.set_progress(
        [islands](const GenerationStats& g) { std::cerr << ProgressLine(g, islands); });
  }
  PlanningProblem problem{.trace = &trace, .iteration = it, .device = so.device};
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, planner.Plan(problem));
  const SearchResult& r = *planner.last_result();
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport check, CheckPolicy(trace, policy));
  if (!check.clean()) {
    return absl::InternalError(absl::StrCat("the advisor's policy fails the checker: ",
                                            check.violations.front().message));
  }
  if (!lead) return absl::OkStatus();
  if (!a.output.empty()) SWAPPLAN_RETURN_IF_ERROR(WritePolicy(policy, a.output));
  if (!a.history.empty()) {
    std::string csv = "generation,elapsed_ns,best_chromosome_ns,elite_ns,islands_best_ns,evaluations\n";
    for (const GenerationStats& g : r.history) {
      absl::StrAppend(&csv, g.generation, ",", g.elapsed_ns, ",", g.best_ever_ns, ",", g.elite_ns,
                      ",", g.islands_best_ns, ",", g.evaluations, "\n");
    }
    SWAPPLAN_RETURN_IF_ERROR(WriteOutput(a.history, csv));
  }

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
                        {"seed", o.search.seed},
                        {"source", r.source},
                        {"local_moves_tried", r.local_moves_tried},
                        {"local_moves_kept", r.local_moves_kept},
                        {"islands", r.islands},
                        {"migrations", r.migrations}};
    nlohmann::json seeds = nlohmann::json::array();
    for (const SeedOutcome& sd : r.seeds) {
      seeds.push_back({{"planner", sd.name},
                       {"iteration_time_ns", sd.time_ns >= 0 ? nlohmann::json(sd.time_ns)
                                                             : nlohmann::json()},
                       {"chromosome", sd.chromosome},
                       {"note", sd.note}});
    }
    j["seeds"] = seeds;
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
    t.AddRow({"peak", classes == 0 ? absl::StrCat(BytesExact(s.peak_bytes), ", byte-granular (no pool)")
                                   : absl::StrCat(BytesExact(s.peak_bytes), " in a pool of ", classes,
                                                  classes == 1 ? " size class, " : " size classes, ",
                                                  BytesExact(s.pool_bytes))});
    t.AddRow({"swaps", absl::StrCat(policy.items.size(), " items (", wrapping,
                                    " across the iteration boundary, ", clean,
                                    " without a copy out), ", FormatBytes(s.bytes_d2h), " out, ",
                                    FormatBytes(s.bytes_h2d), " in")});
    t.AddRow({"search", absl::StrCat(r.generations, " generations, ", r.evaluations,
                                     " evaluations (", r.infeasible_evaluations, " infeasible) in ",
                                     FormatDurationNs(r.elapsed_ns), "; stopped: ", r.stop_reason)});
    std::string best_seed = "none fits";
    int64_t best_seed_ns = -1;
    for (const SeedOutcome& sd : r.seeds) {
      if (sd.time_ns >= 0 && (best_seed_ns < 0 || sd.time_ns < best_seed_ns)) {
        best_seed_ns = sd.time_ns;
        best_seed = absl::StrCat(sd.name, " ", FormatDurationNs(sd.time_ns));
      }
    }
    t.AddRow({"result", absl::StrCat("from ", r.source, "; best seed: ", best_seed, " (",
                                     r.seeds.size(), " seeds); local search kept ",
                                     r.local_moves_kept, " of ", r.local_moves_tried, " moves")});
    if (r.islands > 1) {
      t.AddRow({"islands", absl::StrCat(r.islands, " (", r.migrations, " migrations each)")});
    }
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
  sub->add_option("--oversubscription", a->oversubscription,
                  "Budget as a ratio r >= 1 instead of --device-memory (as compare)");
  sub->add_option("--seeds", a->seeds,
                  "Planners whose policies seed the search, comma-separated, or none (default: "
                  "chameleon,noswap,recompute,vdnn,lru,bucket)")
      ->capture_default_str();
  sub->add_option("--seed-mutants", a->seed_mutants,
                  "Mutants of each seed chromosome in the first generation")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--local-search", a->local_search,
                  "Local-search moves on the elite policy per generation (0 = none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--islands", a->islands,
                "Island model over MPI: run under mpirun -np N, one population per rank, "
                "migration in a ring; rank 0 reports");
  sub->add_option("--migration-interval", a->migration_interval,
                  "Islands: generations between migrations")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--migrants", a->migrants, "Islands: best chromosomes sent per migration")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddSimFlags(sub, &a->sim);
  sub->add_option("-o,--output", a->output, "Write the policy (.json: JSON, else binary)");
  sub->add_option("--history", a->history,
                  "Write one CSV row per generation: elapsed_ns, best chromosome, elite, best of "
                  "all islands (-1: none yet)");
  sub->add_flag("--json", a->json, "Machine-readable summary on stdout");
  sub->add_flag("--quiet", a->quiet, "No progress on stderr");
  sub->callback([a, action] { *action = [a]() -> absl::Status { return Run(*a); }; });
}

}  // namespace swapplan::cli
