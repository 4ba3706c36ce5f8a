// swapplan compare TRACE [--device NAME] [--device-memory X [--reserve X] |
//                  --oversubscription 2x] [--h2d-bandwidth ...] [--copy-latency ...]
//                  [--iteration N] [--planners a,b,...] [--planner-option P.NAME=V]
//                  [--optimum [--optimum-time-limit D] [--optimum-no-recompute]]
//                  [--save-policies DIR] [--json] [--html FILE] [-o FILE]
//                  [--server ADDR [--token-file F] [--tls-ca F] [--server-timeout T]]
//
// Runs every planner (registry.h) on one iteration with the same budget and
// judges each policy with the evaluation simulator (eval/compare.h): one row
// per planner, and below the table what limits each.
// A planner that cannot reach the budget is a row with feasible = false and
// its reason, not a failure of the command. Exit 3 when no planner other
// than ideal reaches the budget (the table is printed first). With --server
// each row's policy is planned on a planner service (cli/remote.h; cached
// there) and judged here: the output is the same but for the plan times
// (the advisor, which searches from the other rows' policies, is local
// only).
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
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli.h"
#include "common.h"
#include "budget_flags.h"
#include "device_flags.h"
#include "flags.h"
#include "html_output.h"
#include "planner_flags.h"
#include "progress.h"
#include "remote.h"
#include "swapplan/eval/advise.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/report/html_report.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct CompareArgs {
  FlagSet flags;
  std::string trace;
  DeviceFlags device;
  std::optional<double> oversubscription;
  std::optional<std::string> planners;
  std::optional<int64_t> iteration;
  // PLANNER.NAME=VALUE, applied with Planner::SetOption.
  std::vector<CompareOptions::PlannerOption> planner_options;
  std::optional<std::string> save_policies;
  std::optional<std::string> html;
  bool json = false;
  std::optional<std::string> output;
  // --optimum: the MILP bound (optimum/optimum.h) and every row's gap to it.
  bool optimum = false;
  std::optional<int64_t> optimum_time_limit_ns;
  bool optimum_no_recompute = false;
  RemoteFlags remote;
  BudgetFlags budget;
};

std::string Percent(double x) { return absl::StrFormat("%+.2f%%", 100.0 * x); }

std::string BudgetText(const Comparison& c) {
  if (c.oversubscription > 0) {
    return absl::StrCat(BytesExact(c.budget_bytes), " = persistent ",
                        FormatBytes(c.persistent_bytes), " + (unswapped peak - persistent) / ",
                        absl::StrFormat("%g", c.oversubscription), " (oversubscription)");
  }
  return absl::StrCat(BytesExact(c.budget_bytes), " = device memory ",
                      FormatBytes(c.simulator.device.capacity_bytes), " - reserve ",
                      FormatBytes(c.simulator.device.reserve_bytes));
}

std::string RenderText(const Trace& t, const Comparison& c, const ResolvedDevice& d,
                       const std::vector<std::string>& notes, const BudgetBasis& basis) {
  std::string out;
  absl::StrAppend(&out, "trace     ", t.source(), ", iteration ", c.iteration, " (", c.num_ops,
                  " ops, op durations ", DurationSourceName(c.durations), ")\n");
  absl::StrAppend(&out, "budget    ", BudgetText(c), "; unswapped peak ", BytesExact(c.peak.bytes),
                  " at ", OpText(t, c.iteration, c.peak.local_op), "\n");
  absl::StrAppend(&out, "budget on ", BudgetBasisText(basis), "\n");
  absl::StrAppend(&out, "link      ", LinkText(d.model), "\n");
  absl::StrAppend(&out, "compute   ", ComputeScaleText(d), "\n");
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

std::string RenderJson(const Trace& t, const Comparison& c, const ResolvedDevice& d,
                       const std::vector<std::string>& notes, const BudgetBasis& basis) {
  using nlohmann::json;
  json j;
  j["trace"] = t.source();
  j["iteration"] = c.iteration;
  j["num_ops"] = c.num_ops;
  j["op_durations"] = std::string(DurationSourceName(c.durations));
  j["device"] = DeviceJson(d);
  j["warnings"] = WarningsJson(d.warnings);
  j["oversubscription_ratio"] =
      c.oversubscription > 0 ? json(c.oversubscription) : json(nullptr);
  j["budget_bytes"] = c.budget_bytes;
  j["peak_unswapped_bytes"] = c.peak.bytes;
  j["peak_unswapped_op"] = c.peak.local_op;
  j["persistent_bytes"] = c.persistent_bytes;
  j["ideal_iteration_time_ns"] = c.ideal_time_ns;
  j.update(BudgetBasisJson(basis));
  json out_rows = json::array();
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const PlannerOutcome& r = c.rows[i];
    json row;
    SetCompareRowColumns(r, &row);
    // A policy that fails the checker: its first violation.
    if (r.planned && !r.valid) row["invalid"] = r.invalid_reason;
    row["plan_time_ns"] = r.plan_time_ns;
    row["reserved_peak_bytes"] = r.reserved_modelled ? json(r.reserved_peak_bytes) : json();
    row["fits_reserved"] = r.reserved_modelled ? json(r.reserved_fits) : json();
    if (c.optimum) {
      row["gap_to_bound_fraction"] = r.gap_to_bound ? json(*r.gap_to_bound) : json();
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
                    {"gap_fraction", o.gap},
                    {"solve_time_ns", o.solve_time_ns}};
  } else if (!c.optimum_status.ok()) {
    j["optimum"] = {{"error", std::string(c.optimum_status.message())}};
  }
  return j.dump(2) + "\n";
}

absl::Status Run(CompareArgs& args) {
  args.flags.Parse();
  CompareOptions options;
  options.keep_policies = true;  // the notes and --save-policies read them
  for (absl::string_view name : absl::StrSplit(args.planners.value_or(""), ',', absl::SkipEmpty())) {
    if (FindPlanner(name) == nullptr) {
      args.flags.Add(
          absl::StrCat("--planners: unknown planner '", name, "' (known: ", PlannerNames(), ")"));
      continue;
    }
    options.planners.emplace_back(name);
  }
  options.planner_options = args.planner_options;
  options.oversubscription = CheckOversubscription(args.oversubscription, args.device, &args.flags);
  if (args.optimum) {
    OptimumOptions oo;
    if (args.optimum_time_limit_ns) oo.time_limit_ns = *args.optimum_time_limit_ns;
    oo.recompute = !args.optimum_no_recompute;
    if (absl::Status st = oo.Validate(); !st.ok()) args.flags.Add(std::string(st.message()));
    options.optimum = oo;
  } else if (args.optimum_time_limit_ns || args.optimum_no_recompute) {
    args.flags.Add("--optimum-time-limit and --optimum-no-recompute need --optimum");
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Trace recorded, ReadTraceArg(args.trace, &args.flags));
  options.iteration = ResolveIteration(args.iteration, recorded, &args.flags);
  const ResolvedDevice device =
      ResolveDevice(args.device, TraceDeviceDefaults(recorded),
                    {.capacity = !args.oversubscription.has_value()}, &args.flags);
  SWAPPLAN_RETURN_IF_ERROR(args.flags.Status());
  PrintWarnings(device.warnings);
  // The simulator and the planners scale op durations by
  // device.compute_time_scale themselves.
  options.simulator.device = device.model;
  BudgetBasis basis = ResolveBudgetBasis(args.budget, device.model, &args.flags);
  SWAPPLAN_RETURN_IF_ERROR(args.flags.Status());
  if (args.remote.server && basis.on == BudgetOn::kReserved) {
    if (args.budget.budget_on) {
      return Error(ErrorKind::kUsage, "--budget-on reserved plans locally: drop --server");
    }
    basis.on = BudgetOn::kAllocated;
    basis.reason = "--server plans for allocated bytes";
  }
  options.budget_on = basis.on;
  options.allocator = basis.allocator;
  options.reserved_method = ResolveReservedMethod(args.budget);
  options.model_reserved = true;  // the rows are judged here, also with --server
  const Trace& trace = recorded;
  const std::string save = args.save_policies.value_or("");
  if (!save.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(save, ec);
    if (ec) {
      return Error(ErrorKind::kUsage,
                   absl::StrCat("--save-policies: cannot create ", save, ": ", ec.message()));
    }
  }
  std::optional<RemoteSession> session;
  if (args.remote.server) {
    for (const std::string& name : options.planners) {
      if (FindPlanner(name)->create()->UsesSeedPolicies()) {
        return Error(ErrorKind::kUsage,
                     absl::StrCat("--planners ", name, ": it searches from the other rows' "
                                  "policies, which the service does not take: drop --server "
                                  "(or use `search --server`)"));
      }
    }
    SWAPPLAN_ASSIGN_OR_RETURN(RemoteSession opened, RemoteSession::Open(args.remote, trace));
    session.emplace(std::move(opened));
    options.plan = RemoteComparePlanner(&*session);
  }
  ProgressBar bar("compare");
  SWAPPLAN_ASSIGN_OR_RETURN(Comparison c,
                            ComparePlanners(trace, options, nullptr, CompareBar(&bar, options)));
  bar.Finish();
  std::vector<std::string> notes;
  for (const PlannerOutcome& row : c.rows) {
    notes.push_back(OutcomeNote(trace, c.iteration, row));
    // Only policies that pass the checker are written.
    if (!save.empty() && row.policy && row.valid) {
      SWAPPLAN_RETURN_IF_ERROR(
          WritePolicy(*row.policy, absl::StrCat(save, "/", row.planner, ".json")));
    }
  }
  if (args.html) SWAPPLAN_RETURN_IF_ERROR(WriteHtmlReport(*args.html, trace, c, device, {}));
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput(args.output.value_or(""),
                                       args.json ? RenderJson(trace, c, device, notes, basis)
                                                 : RenderText(trace, c, device, notes, basis)));
  bool any_real = false;
  for (const PlannerOutcome& r : c.rows) any_real = any_real || !r.unlimited_memory;
  if (any_real && !c.AnyFeasible()) {
    return Error(ErrorKind::kInfeasible, absl::StrCat("no planner reaches the budget of ",
                                                      BytesExact(c.budget_bytes), " on ",
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
  args->flags.Positional(sub, "trace", &args->trace, "Trace file", /*required=*/true);
  AddDeviceFlags(sub, &args->flags, &args->device, {.remote_tier = true});
  AddBudgetFlags(sub, &args->flags, &args->budget, {.planning = true});
  AddOversubscriptionFlag(sub, &args->flags, &args->oversubscription);
  args->flags.Text(sub, "--planners", &args->planners,
                   absl::StrCat("Comma-separated planners, of ", PlannerNames(),
                                " (default: all but ", PlannerNamesOutsideDefaultSet(),
                                ", which run on request only)"));
  AddIterationFlag(sub, &args->flags, &args->iteration);
  AddPlannerOptionFlag(sub, &args->flags, &args->planner_options,
      "PLANNER.NAME=VALUE, repeatable: a planner's own option by the name its policies record "
      "(`swapplan help --markdown` lists them), e.g. chameleon.min-tensor-bytes=0, "
      "chameleon.release-wait=never, advisor.time-limit-ns=30s, advisor.max-generations=100");
  args->flags.Text(sub, "--save-policies", &args->save_policies,
                   "Write each planner's policy to DIR/<planner>.json");
  sub->add_flag("--optimum", args->optimum,
                "Also solve the MILP bound (small traces; optimum/, docs/optimum.md) and show "
                "every planner's gap to it");
  args->flags.Duration(sub, "--optimum-time-limit", &args->optimum_time_limit_ns,
                       absl::StrCat("Time limit of the MILP solve for --optimum [default ",
                                    FormatDurationNs(OptimumOptions().time_limit_ns), "]"));
  sub->add_flag("--optimum-no-recompute", args->optimum_no_recompute,
                "--optimum bounds swap-only policies (the class of the swap planners); default: "
                "swap + recompute");
  sub->add_flag("--json", args->json, "Machine-readable JSON report (docs/json/compare.schema.json)");
  args->flags.Text(sub, "--html", &args->html,
                   "Also write the HTML report page of the comparison (docs/report.md)");
  // Every planner's options, as --planner-option takes them.
  std::string footer = "Planner options (--planner-option PLANNER.NAME=VALUE; the names policies record):";
  for (const PlannerInfo& info : RegisteredPlanners()) {
    std::vector<OptionInfo> opts = info.create()->DescribeOptions();
    absl::StrAppend(&footer, "\n  ", info.name, ":", opts.empty() ? " none" : "");
    for (const OptionInfo& o : opts) {
      absl::StrAppend(&footer, "\n    ", absl::StrReplaceAll(o.name, {{"_", "-"}}), "  ",
                      OptionHelp(o));
    }
  }
  sub->footer(footer);
  args->flags.Text(sub, "-o,--output", &args->output, "Write the report to FILE instead of stdout");
  AddRemoteFlags(sub, &args->flags, &args->remote);
  sub->callback([args, action] { *action = [args]() -> absl::Status { return Run(*args); }; });
}

}  // namespace swapplan::cli
