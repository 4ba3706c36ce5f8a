// swapplan compare TRACE [--device-memory X [--reserve X] | --oversubscription R]
//                  [--planners a,b,...] [--optimum [--optimum-time-limit D]] [--json]
//
// Runs every planner (registry.h) on one iteration with the same budget and
// judges each policy with the evaluation simulator (eval/compare.h): one row
// per planner, and below the table what limits each.
// A planner that cannot reach the budget is a row with feasible = false and
// its reason, not a failure of the command. Exit 3 when no planner other
// than ideal reaches the budget (the table is printed first).
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli.h"
#include "trace_input.h"
#include "sim_flags.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct CompareArgs {
  std::string trace;
  std::string device_memory;
  std::string reserve;
  double oversubscription = 0;
  std::string planners;
  int iteration = 0;
  SimFlags sim;
  std::string save_policies;
  // PLANNER.NAME=VALUE, applied with Planner::SetOption.
  std::vector<std::string> planner_options;
  bool json = false;
  std::string output;
  // --optimum: the MILP bound (optimum/optimum.h) and every row's gap to it.
  bool optimum = false;
  std::string optimum_time_limit = "60s";
  bool optimum_no_recompute = false;
};

std::string Percent(double x) { return absl::StrFormat("%+.2f%%", 100.0 * x); }

// What limits a feasible policy, in one line.
std::string Limit(const Trace& t, int32_t it, const PlannerOutcome& row, const Policy& p,
                  const SimulationResult& r) {
  if (row.unlimited_memory) return "unlimited memory (the reference for overhead)";
  if (p.items.empty()) return "fits without swapping";
  std::vector<std::string> parts;
  if (r.recompute_ns > 0) {
    parts.push_back(absl::StrCat("recomputes ", FormatDurationNs(r.recompute_ns),
                                 " of forward for ", r.recomputed_items, " tensors"));
  }
  if (r.stall_ns > 0) {
    const StallSite& s = r.top_stalls.front();
    parts.push_back(
        absl::StrCat("stalls ", FormatDurationNs(r.stall_ns), " in ", r.ops_with_stall,
                     " ops (swap-in ", FormatDurationNs(r.stall_swap_in_ns), ", release ",
                     FormatDurationNs(r.stall_release_ns), "), longest ",
                     FormatDurationNs(s.stall_ns), " at ", OpText(t, it, s.op), " waiting for the ",
                     s.cause == StallCause::kRelease ? "copy out of tensor " : "copy in of tensor ",
                     s.tensor_id));
  }
  if (r.bytes_d2h > 0 && r.stall_ns == 0) {
    parts.push_back(absl::StrCat("all ", FormatBytes(r.bytes_d2h), " of copies hidden"));
  }
  std::string out;
  for (const std::string& s : parts) absl::StrAppend(&out, out.empty() ? "" : "; ", s);
  return out;
}

// The note below the table for one row.
std::string Note(const Trace& t, int32_t it, const PlannerOutcome& row) {
  if (!row.planned) return row.infeasible_reason;
  if (!row.valid) return absl::StrCat("invalid policy (fails the checker): ", row.invalid_reason);
  const SimulationResult& r = *row.sim;
  if (!row.unlimited_memory && r.oom.occurred && r.oom.pool_class >= 0) {
    return absl::StrCat("simulated OOM at ", OpText(t, it, r.oom.op), ": pool class ",
                        r.oom.pool_class, " needed ", r.oom.requested_bytes, " objects with ",
                        r.oom.free_bytes, " free");
  }
  if (!row.unlimited_memory && r.oom.occurred) {
    return absl::StrCat("simulated OOM at ", OpText(t, it, r.oom.op), ": requested ",
                        BytesExact(r.oom.requested_bytes), " with ",
                        BytesExact(r.oom.free_bytes), " free");
  }
  return Limit(t, it, row, *row.policy, r);
}

std::string BudgetText(const Comparison& c) {
  if (c.budget.oversubscription > 0) {
    return absl::StrCat(BytesExact(c.budget.budget_bytes), " = persistent ",
                        FormatBytes(c.persistent_bytes), " + (unswapped peak - persistent) / ",
                        absl::StrFormat("%g", c.budget.oversubscription), " (oversubscription)");
  }
  return absl::StrCat(BytesExact(c.budget.budget_bytes), " = device memory ",
                      FormatBytes(c.budget.device_memory_bytes), " - reserve ",
                      FormatBytes(c.budget.reserve_bytes));
}

std::string RenderText(const Trace& t, const Comparison& c, const std::vector<std::string>& notes) {
  std::string out;
  absl::StrAppend(&out, "trace     ", t.source(), ", iteration ", c.iteration, " (", c.num_ops,
                  " ops, op durations ", DurationSourceName(c.durations), ")\n");
  absl::StrAppend(&out, "budget    ", BudgetText(c), "; unswapped peak ", BytesExact(c.peak.bytes),
                  " at ", OpText(t, c.iteration, c.peak.local_op), "\n");
  absl::StrAppend(&out, "link      ", LinkText(c.simulator.device), "\n");
  absl::StrAppend(&out, "ideal     ", FormatDurationNs(c.ideal_time_ns), " per iteration\n");
  const bool bound = c.optimum.has_value();
  if (bound) {
    const OptimumResult& o = *c.optimum;
    absl::StrAppend(&out, "bound     ", FormatDurationNs(o.lower_bound_ns),
                    c.optimum_recompute ? " lower bound, swap + recompute" : " lower bound, swap only",
                    " (MILP ", MilpStatusName(o.status), " in ",
                    FormatDurationNs(o.solve_time_ns), "; its incumbent ",
                    o.incumbent_ns >= 0 ? FormatDurationNs(o.incumbent_ns) : std::string("-"),
                    o.proven_optimal ? ", proven optimal" : "", ")\n");
  } else if (!c.optimum_status.ok()) {
    absl::StrAppend(&out, "bound     none: ", c.optimum_status.message(), "\n");
  }
  absl::StrAppend(&out, "\n");
  std::vector<std::string> header = {"planner", "feasible", "peak", "iteration", "overhead",
                                     "stall", "d2h", "h2d"};
  if (bound) header.push_back("gap to bound");
  header.push_back("plan time");
  TextTable table(header);
  for (const PlannerOutcome& r : c.rows) {
    std::vector<std::string> row;
    if (!r.sim) {
      row = {r.planner, r.planned && !r.valid ? "invalid" : "no", "-", "-", "-", "-", "-", "-"};
    } else {
      const SimulationResult& s = *r.sim;
      row = {r.planner, r.feasible ? "yes" : "no", FormatBytes(s.peak_bytes),
             FormatDurationNs(s.iteration_time_ns), Percent(s.overhead_vs_ideal),
             FormatDurationNs(s.stall_ns), FormatBytes(s.bytes_d2h), FormatBytes(s.bytes_h2d)};
    }
    if (bound) row.push_back(r.gap_to_bound ? Percent(*r.gap_to_bound) : "-");
    row.push_back(FormatDurationNs(r.plan_time_ns));
    table.AddRow(std::move(row));
  }
  absl::StrAppend(&out, table.Render(/*left_columns=*/2), "\n");
  for (size_t i = 0; i < c.rows.size(); ++i) {
    absl::StrAppend(&out, c.rows[i].planner, ": ", notes[i], "\n");
  }
  return out;
}

std::string RenderJson(const Trace& t, const Comparison& c, const std::vector<std::string>& notes) {
  using nlohmann::json;
  json j;
  j["trace"] = t.source();
  j["iteration"] = c.iteration;
  j["ops"] = c.num_ops;
  j["durations"] = std::string(DurationSourceName(c.durations));
  j["device_memory_bytes"] = c.budget.device_memory_bytes;
  j["reserve_bytes"] = c.budget.reserve_bytes;
  if (c.budget.oversubscription > 0) {
    j["oversubscription"] = c.budget.oversubscription;
  } else {
    j["oversubscription"] = nullptr;
  }
  j["budget_bytes"] = c.budget.budget_bytes;
  j["unswapped_peak_bytes"] = c.peak.bytes;
  j["persistent_bytes"] = c.persistent_bytes;
  j["ideal_iteration_time_ns"] = c.ideal_time_ns;
  json out_rows = json::array();
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const PlannerOutcome& r = c.rows[i];
    json row;
    row["planner"] = r.planner;
    row["feasible"] = r.feasible;
    // A policy that fails the checker: its first violation.
    if (r.planned && !r.valid) row["invalid"] = r.invalid_reason;
    if (r.sim) {
      const SimulationResult& s = *r.sim;
      row["peak_bytes"] = s.peak_bytes;
      row["iteration_time_ns"] = s.iteration_time_ns;
      row["overhead_vs_ideal"] = s.overhead_vs_ideal;
      row["stall_ns"] = s.stall_ns;
      row["recompute_ns"] = s.recompute_ns;
      row["bytes_d2h"] = s.bytes_d2h;
      row["bytes_h2d"] = s.bytes_h2d;
    } else {
      for (const char* k : {"peak_bytes", "iteration_time_ns", "overhead_vs_ideal", "stall_ns",
                            "recompute_ns", "bytes_d2h", "bytes_h2d"}) {
        row[k] = nullptr;
      }
    }
    row["items"] = r.items;
    row["plan_time_ns"] = r.plan_time_ns;
    if (c.optimum) {
      row["gap_to_bound"] = r.gap_to_bound ? json(*r.gap_to_bound) : json();
    }
    row["note"] = notes[i];
    out_rows.push_back(row);
  }
  j["rows"] = out_rows;
  if (c.optimum) {
    const OptimumResult& o = *c.optimum;
    j["optimum"] = {{"lower_bound_ns", o.lower_bound_ns},
                    {"recompute", c.optimum_recompute},
                    {"status", std::string(MilpStatusName(o.status))},
                    {"incumbent_ns", o.incumbent_ns},
                    {"proven_optimal", o.proven_optimal},
                    {"gap", o.gap},
                    {"solve_time_ns", o.solve_time_ns}};
  } else if (!c.optimum_status.ok()) {
    j["optimum"] = {{"error", std::string(c.optimum_status.message())}};
  }
  return j.dump(2) + "\n";
}

absl::Status Run(const CompareArgs& args) {
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(args.trace));
  if (args.iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("--iteration ", args.iteration,
                                                   " is out of range: ", trace.source(), " has ",
                                                   trace.num_iterations(), " iterations"));
  }
  CompareOptions options;
  options.iteration = args.iteration;
  options.keep_policies = true;  // the notes and --save-policies read them
  for (absl::string_view name : absl::StrSplit(args.planners, ',', absl::SkipEmpty())) {
    if (FindPlanner(name) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--planners: unknown planner '", name, "' (known: ", PlannerNames(), ")"));
    }
    options.planners.emplace_back(name);
  }
  for (const std::string& opt : args.planner_options) {
    absl::StatusOr<CompareOptions::PlannerOption> o = ParsePlannerOption(opt);
    if (!o.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--planner-option ", o.status().message()));
    }
    options.planner_options.push_back(*std::move(o));
  }
  // Flag-level checks first, so messages name the flags.
  if (args.oversubscription != 0) {
    if (!args.device_memory.empty() || !args.reserve.empty()) {
      return absl::InvalidArgumentError(
          "--oversubscription replaces --device-memory and --reserve: give one or the other");
    }
    if (!(args.oversubscription >= 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--oversubscription ", args.oversubscription, " must be >= 1 (1 = the peak fits)"));
    }
    options.budget.oversubscription = args.oversubscription;
  } else {
    int64_t device_memory = trace.metadata().device_memory_bytes;
    if (!args.device_memory.empty()) {
      absl::StatusOr<int64_t> b = ParseBytes(args.device_memory);
      if (!b.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--device-memory: ", b.status().message()));
      }
      device_memory = options.budget.device_memory_bytes = *b;
    } else if (device_memory <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--device-memory is required: ",
                                                     trace.source(),
                                                     " does not record the device memory"));
    }
    if (!args.reserve.empty()) {
      absl::StatusOr<int64_t> b = ParseBytes(args.reserve);
      if (!b.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--reserve: ", b.status().message()));
      }
      options.budget.reserve_bytes = *b;
    }
    if (device_memory - options.budget.reserve_bytes <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--reserve ", FormatBytes(options.budget.reserve_bytes),
                       " leaves no budget out of ", FormatBytes(device_memory)));
    }
  }
  SWAPPLAN_RETURN_IF_ERROR(ApplySimFlags(args.sim, &options.simulator));
  if (args.optimum) {
    OptimumOptions oo;
    absl::StatusOr<int64_t> tl = ParseDurationNs(args.optimum_time_limit);
    if (!tl.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--optimum-time-limit: ", tl.status().message()));
    }
    oo.time_limit_ns = *tl;
    oo.recompute = !args.optimum_no_recompute;
    options.optimum = oo;
  }
  const bool h2d = options.simulator.device.h2d_bandwidth_bytes_per_s > 0 ||
                   trace.metadata().h2d_bandwidth_bytes_per_s > 0;
  const bool d2h = options.simulator.device.d2h_bandwidth_bytes_per_s > 0 ||
                   trace.metadata().d2h_bandwidth_bytes_per_s > 0;
  if (!h2d || !d2h) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no copy bandwidth: give --bandwidth (or --h2d-bandwidth and --d2h-bandwidth); ",
        trace.source(), " does not record one"));
  }
  if (!args.save_policies.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.save_policies, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--save-policies: cannot create ", args.save_policies, ": ", ec.message()));
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto progress = [&](const PlannerOutcome& row) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > 1.0) {
      std::cerr << "swapplan compare: " << row.planner << " planned in "
                << FormatDurationNs(row.plan_time_ns) << "\n";
    }
  };
  SWAPPLAN_ASSIGN_OR_RETURN(Comparison c, ComparePlanners(trace, options, nullptr, progress));
  std::vector<std::string> notes;
  for (const PlannerOutcome& row : c.rows) {
    notes.push_back(Note(trace, c.iteration, row));
    // Only policies that pass the checker are written.
    if (!args.save_policies.empty() && row.policy && row.valid) {
      SWAPPLAN_RETURN_IF_ERROR(
          WritePolicy(*row.policy, absl::StrCat(args.save_policies, "/", row.planner, ".json")));
    }
  }
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput(
      args.output, args.json ? RenderJson(trace, c, notes) : RenderText(trace, c, notes)));
  bool any_real = false;
  for (const PlannerOutcome& r : c.rows) any_real = any_real || !r.unlimited_memory;
  if (any_real && !c.AnyFeasible()) {
    return absl::ResourceExhaustedError(absl::StrCat("no planner reaches the budget of ",
                                                     BytesExact(c.budget.budget_bytes), " on ",
                                                     trace.source()));
  }
  return absl::OkStatus();
}

}  // namespace

void SetupCompare(CLI::App& root, Action* action) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* sub = root.add_subcommand(
      "compare",
      "Run every planner and baseline on one iteration with one budget and judge each policy "
      "with the evaluation simulator: feasible, peak, iteration time, overhead vs ideal, stall, "
      "bytes moved, planning time. Exit 3 when no planner reaches the budget.");
  sub->add_option("trace", args->trace, "Trace file")->required();
  sub->add_option("--device-memory", args->device_memory,
                  "Device memory, e.g. 64GiB (default: the trace's)");
  sub->add_option("--reserve", args->reserve,
                  "Memory kept back for fragmentation and workspace (default 0); budget = device "
                  "memory - reserve");
  sub->add_option("--oversubscription", args->oversubscription,
                  "Budget as a ratio r >= 1 instead of --device-memory: persistent bytes + "
                  "(unswapped peak - persistent bytes) / r");
  sub->add_option("--planners", args->planners,
                  absl::StrCat("Comma-separated planners, of ", PlannerNames(),
                               " (default: all but those too slow to run by default: advisor)"));
  sub->add_option("--iteration", args->iteration, "Iteration to plan")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddSimFlags(sub, &args->sim);
  sub->add_option("--planner-option", args->planner_options,
                  "PLANNER.NAME=VALUE, repeatable: a planner's own option, e.g. "
                  "chameleon.min-tensor-bytes=0, chameleon.release-wait=never, "
                  "advisor.time-limit=30s, advisor.generations=100, advisor.threads=2");
  sub->add_option("--save-policies", args->save_policies,
                  "Write each planner's policy to DIR/<planner>.json");
  sub->add_flag("--optimum", args->optimum,
                "Also solve the MILP bound (small traces; optimum/, docs/optimum.md) and show "
                "every planner's gap to it");
  sub->add_option("--optimum-time-limit", args->optimum_time_limit,
                  "Time limit of the MILP solve for --optimum")
      ->capture_default_str();
  sub->add_flag("--optimum-no-recompute", args->optimum_no_recompute,
                "--optimum bounds swap-only policies (the class of the swap planners); default: "
                "swap + recompute");
  sub->add_flag("--json", args->json, "Machine-readable JSON output");
  sub->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
  sub->callback([args, action] { *action = [args]() -> absl::Status { return Run(*args); }; });
}

}  // namespace swapplan::cli
