// swapplan search TRACE [--device NAME] [--device-memory X [--reserve X] |
//   --oversubscription 2x] [--iteration N]
//   [--time-limit-ns 60s] [--max-generations N] [--population 144]
//   [--mutation-probability 0.1] [--threads N] [--seed S] [--convergence-generations K]
//   [--seed-planners a,b|none] [--seed-mutants N] [--local-search-moves N]
//   [every other Advisor option] [--copy-latency T] [--h2d-bandwidth B] [--half-duplex]
//   [--islands [--migration-interval N] [--migrants N]] [--history CSV]
//   [-o policy] [--json] [--log-generations]
//   [--server ADDR [--token-file F] [--tls-ca F] [--server-timeout T]]
//
// Runs the Advisor planner (planners/advisor/advisor_planner.h): a genetic
// search over operator schedules and size-class memory pools with a Belady
// swap planner and the evaluation simulator as fitness, seeded with the
// other planners' policies and with local search on its elite (never slower
// than the best seed: planners/advisor/search.h). Progress is a bar on
// stderr when it is a terminal (cli/progress.h); --log-generations writes
// one line per generation instead-or-too (best / mean / worst simulated
// iteration time of the survivors, evaluations per second). The best policy is
// verified with the checker (a rejected policy is an internal error, exit
// 1), summarised on stdout, and written with -o. Exit 3 when no schedule
// and pool fit the budget. The Advisor's flags are its option table
// (AdvisorOptionTable): the names its policies record. With --server the
// search runs on a planner service (cli/remote.h; progress streamed, the
// answer cached there) and the policy is checked and reported here: the
// output is the same (--islands is local only).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli.h"
#include "common.h"
#include "device_flags.h"
#include "flags.h"
#include "mpi_islands.h"
#include "planner_flags.h"
#include "progress.h"
#include "remote.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/oversubscription.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/advisor/advisor_planner.h"
#include "swapplan/sim/checker.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct SearchArgs {
  FlagSet flags;
  std::string trace;
  DeviceFlags device;
  // Budget as a ratio instead of --device-memory (as compare).
  std::optional<double> oversubscription;
  std::optional<int64_t> iteration;
  AdvisorOptions options;
  // The Advisor options as given (name -> value), for --server.
  std::map<std::string, std::string> option_values;
  RemoteFlags remote;
  // Island model over MPI.
  bool islands = false;
  std::optional<int64_t> migration_interval;
  std::optional<int64_t> migrants;
  std::optional<std::string> output;
  // Per-generation CSV (elapsed, best chromosome, elite, best of all islands).
  std::optional<std::string> history;
  bool json = false;
  bool log_generations = false;
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

absl::Status Run(SearchArgs& a) {
  a.flags.Parse();
  if (absl::Status st = a.options.Validate(); !st.ok()) a.flags.Add(std::string(st.message()));
  IslandOptions io;
  if (a.migration_interval) io.migration_interval = static_cast<int32_t>(*a.migration_interval);
  if (a.migrants) io.migrants = static_cast<int32_t>(*a.migrants);
  if (absl::Status st = io.Validate(); !st.ok()) a.flags.Add(std::string(st.message()));
  const double ratio = CheckOversubscription(a.oversubscription, a.device, &a.flags);
  SWAPPLAN_ASSIGN_OR_RETURN(Trace recorded, ReadTraceArg(a.trace, &a.flags));
  const int32_t it = ResolveIteration(a.iteration, recorded, &a.flags);
  ResolvedDevice device =
      ResolveDevice(a.device, TraceDeviceDefaults(recorded),
                    {.capacity = !a.oversubscription.has_value()}, &a.flags);
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  PrintWarnings(device.warnings);
  // The planner and the simulator scale recorded durations by the device
  // model's compute_time_scale themselves.
  const Trace& trace = recorded;
  if (ratio > 0) {
    // As compare: persistent bytes + (unswapped peak - persistent) / r.
    SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
    SWAPPLAN_ASSIGN_OR_RETURN(device.model,
                              OversubscribedDevice(device.model, curve.iterations()[it], ratio));
  }
  SimulatorOptions so;
  so.device = device.model;
  const AdvisorOptions& o = a.options;
  AdvisorPlanner planner(o, so);
  if (a.remote.server && a.islands) {
    return Error(ErrorKind::kUsage, "--islands runs over MPI in this process: drop --server");
  }
  // Islands: one population per MPI rank; rank 0 reports and writes.
  std::unique_ptr<MpiIslands> mpi;
  if (a.islands) {
    SWAPPLAN_ASSIGN_OR_RETURN(mpi, MpiIslands::Start());
    planner.set_islands(mpi.get(), io);
  }
  const bool lead = mpi == nullptr || mpi->rank() == 0;
  // A bar on a terminal (rank 0 only): generations of --max-generations, or
  // seconds of the time limit, whichever is further along.
  ProgressBar bar("search", ProgressUnit::kFraction);
  const bool log = a.log_generations && !GlobalQuiet() && lead;
  const bool islands = a.islands;
  ProgressCallback progress;
  if (lead) {
    progress = [&, islands](const GenerationStats& g) {
      if (log) std::cerr << ProgressLine(g, islands);
      const SearchOptions& s = o.search;
      const double by_generations =
          s.max_generations > 0 ? (g.generation + 1.0) / s.max_generations : 0.0;
      const double by_time = s.time_limit_ns > 0 ? static_cast<double>(g.elapsed_ns) /
                                                       static_cast<double>(s.time_limit_ns)
                                                 : 0.0;
      bar.Update(static_cast<int64_t>(1000 * std::max(by_generations, by_time)), 1000);
    };
    planner.set_progress(progress);
  }
  PlanningProblem problem{.trace = &trace, .iteration = it, .device = device.model};
  const int64_t budget = problem.budget_bytes();
  std::optional<RemoteSearchOutcome> remote;
  if (a.remote.server) {
    // The server's advisor starts from the registry's defaults
    // (AdvisorPlanner::CompareDefaults: 30 generations, 20 s), this command
    // from AdvisorOptions': send every option whose value differs from the
    // server's default too, so the search (and the options its policy
    // records) is the local one.
    std::set<std::string> given;
    for (const auto& [name, value] : a.option_values) given.insert(CanonicalOptionName(name));
    std::map<std::string, std::string> remote_options;
    const auto server_defaults =
        AdvisorOptionTable().ToParameters(AdvisorPlanner::CompareDefaults());
    const auto here = AdvisorOptionTable().ToParameters(a.options);
    for (size_t i = 0; i < here.size() && i < server_defaults.size(); ++i) {
      if (given.count(here[i].first) > 0 || here[i].second != server_defaults[i].second) {
        remote_options[here[i].first] = here[i].second;
      }
    }
    SWAPPLAN_ASSIGN_OR_RETURN(remote, RemoteSearch(a.remote, trace, it, device.model,
                                                   remote_options, progress));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy,
                            remote ? absl::StatusOr<Policy>(remote->policy) : planner.Plan(problem));
  bar.Finish();
  policy.device = device.model;
  const SearchResult& r = remote ? remote->result : *planner.last_result();
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport check, CheckPolicy(trace, policy));
  if (!check.clean()) {
    return absl::InternalError(absl::StrCat("the advisor's policy fails the checker: ",
                                            check.violations.front().message));
  }
  if (!lead) return absl::OkStatus();
  const std::string output = a.output.value_or("");
  if (!output.empty()) SWAPPLAN_RETURN_IF_ERROR(WritePolicy(policy, output));
  if (a.history) {
    std::string csv = "generation,elapsed_ns,best_chromosome_ns,elite_ns,islands_best_ns,evaluations\n";
    for (const GenerationStats& g : r.history) {
      absl::StrAppend(&csv, g.generation, ",", g.elapsed_ns, ",", g.best_ever_ns, ",", g.elite_ns,
                      ",", g.islands_best_ns, ",", g.evaluations, "\n");
    }
    SWAPPLAN_RETURN_IF_ERROR(WriteOutput(*a.history, csv));
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
                        {"num_ops", trace.iteration(it).num_ops()},
                        {"device", DeviceJson(device)},
                        {"budget_bytes", budget},
                        {"warnings", WarningsJson(device.warnings)},
                        {"feasible", !s.oom.occurred},
                        {"iteration_time_ns", s.iteration_time_ns},
                        {"ideal_iteration_time_ns", s.ideal_time_ns},
                        {"overhead_vs_ideal_fraction", s.overhead_vs_ideal},
                        {"stall_ns", s.stall_ns},
                        {"peak_with_policy_bytes", s.peak_bytes},
                        {"pool_bytes", s.pool_bytes},
                        {"num_pool_classes", policy.pool.classes.size()},
                        {"d2h_bytes", s.bytes_d2h},
                        {"h2d_bytes", s.bytes_h2d},
                        {"num_items", policy.items.size()},
                        {"num_wrapping_items", wrapping},
                        {"num_clean_items", clean},
                        {"num_generations", r.generations},
                        {"num_evaluations", r.evaluations},
                        {"num_infeasible_evaluations", r.infeasible_evaluations},
                        {"search_time_ns", r.elapsed_ns},
                        {"stop_reason", r.stop_reason},
                        {"seed", o.search.seed},
                        {"result_source", r.source},
                        {"num_local_moves_tried", r.local_moves_tried},
                        {"num_local_moves_kept", r.local_moves_kept},
                        {"num_islands", r.islands},
                        {"num_migrations", r.migrations}};
    nlohmann::json seeds = nlohmann::json::array();
    for (const SeedOutcome& sd : r.seeds) {
      seeds.push_back({{"planner", sd.name},
                       {"iteration_time_ns", sd.time_ns >= 0 ? nlohmann::json(sd.time_ns)
                                                             : nlohmann::json()},
                       {"chromosome", sd.chromosome},
                       {"note", sd.note}});
    }
    j["seeds"] = seeds;
    if (!output.empty()) j["policy_file"] = output;
    out = j.dump(2) + "\n";
  } else {
    TextTable t({"search", trace.source()});
    t.AddRow({"iteration", absl::StrCat(it, " (", trace.iteration(it).num_ops(), " ops)")});
    t.AddRow({"budget", absl::StrCat(BytesExact(budget), " = device memory ",
                                     FormatBytes(device.model.capacity_bytes), " (",
                                     device.model.name, ") - reserve ",
                                     FormatBytes(device.model.reserve_bytes))});
    t.AddRow({"link", LinkText(device.model)});
    t.AddRow({"compute", ComputeScaleText(device)});
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
    if (!output.empty()) t.AddRow({"policy", output});
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
      "size-class memory pools, Belady swaps, the evaluation simulator as fitness. A progress bar "
      "on stderr (a terminal); --log-generations: one line per generation. Exit 3 when nothing fits the budget.");
  a->flags.Positional(sub, "trace", &a->trace, "Trace file", /*required=*/true);
  AddDeviceFlags(sub, &a->flags, &a->device, {.remote_tier = true});
  AddOversubscriptionFlag(sub, &a->flags, &a->oversubscription);
  AddIterationFlag(sub, &a->flags, &a->iteration);
  // A plain pointer: the setter lives in a->flags, inside *a (a shared_ptr
  // here would be a reference cycle).
  AdvisorOptions* options = &a->options;
  std::map<std::string, std::string>* values = &a->option_values;
  AddPlannerOptionFlags(sub, &a->flags, AdvisorOptionTable().Describe(AdvisorOptions()),
                        [options, values](const std::string& name, const std::string& value) {
                          (*values)[name] = value;
                          return AdvisorOptionTable().SetValue(options, name, value);
                        });
  sub->add_flag("--islands", a->islands,
                "Island model over MPI: run under mpirun -np N, one population per rank, "
                "migration in a ring; rank 0 reports");
  a->flags.Int(sub, "--migration-interval", &a->migration_interval,
               absl::StrCat("Islands: generations between migrations [default ",
                            IslandOptions().migration_interval, "]"),
               1, 1 << 20);
  a->flags.Int(sub, "--migrants", &a->migrants,
               absl::StrCat("Islands: best chromosomes sent per migration [default ",
                            IslandOptions().migrants, "]"),
               0, 1 << 20);
  a->flags.Text(sub, "-o,--output", &a->output, "Write the policy (.json: JSON, else binary)");
  a->flags.Text(sub, "--history", &a->history,
                "Write one CSV row per generation: elapsed_ns, best chromosome, elite, best of "
                "all islands (-1: none yet)");
  sub->add_flag("--json", a->json, "Machine-readable JSON report (docs/json/search.schema.json)");
  sub->add_flag("--log-generations", a->log_generations,
                "One line per generation on stderr (best, mean, worst, feasible, evaluations/s), "
                "also when stderr is not a terminal");
  AddRemoteFlags(sub, &a->flags, &a->remote);
  sub->callback([a, action] { *action = [a]() -> absl::Status { return Run(*a); }; });
}

}  // namespace swapplan::cli
