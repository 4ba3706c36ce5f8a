// swapplan optimum TRACE [--device NAME] [--device-memory X [--reserve X] |
//   --oversubscription 2x] [--iteration N] [--time-limit 60s] [--no-recompute]
//   [--threads N] [--copy-latency T] [--h2d-bandwidth B] [-o policy] [--json]
//
// The exact bound of a small swap problem (optimum/optimum.h, derivation in
// docs/optimum.md): runs the default planners (their policies warm-start
// the MILP and get their gap to the bound), builds the swap MILP of the
// iteration, solves it with CBC within the time limit, and reports the
// lower bound, the incumbent's simulated time, the gap, and whether the
// incumbent is proven optimal. -o writes the incumbent's policy (it passes
// the checker). Exit 3 when no policy of the model's class fits the budget;
// 2 for a trace too large for the model or a simulator setting it does not
// represent.
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "common.h"
#include "device_flags.h"
#include "flags.h"
#include "planner_flags.h"
#include "swapplan/planners/registry.h"
#include "swapplan/eval/compare.h"
#include "swapplan/optimum/optimum.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct OptimumArgs {
  FlagSet flags;
  std::string trace;
  DeviceFlags device;
  std::optional<double> oversubscription;
  std::optional<int64_t> iteration;
  std::optional<int64_t> time_limit_ns;
  bool no_recompute = false;
  bool recompute_transient = false;
  std::optional<int64_t> threads;
  std::optional<int64_t> max_ops;
  // PLANNER.NAME=VALUE for the warm-start planners (as compare).
  std::vector<CompareOptions::PlannerOption> planner_options;
  std::optional<std::string> policy;
  bool json = false;
  bool quiet = false;
};

std::string Percent(double x) { return absl::StrFormat("%+.2f%%", 100.0 * x); }

std::string ModelText(const OptimumResult& r, bool recompute) {
  const SwapModelStats& m = r.model;
  std::string kinds;
  for (int k = 0; k < 5; ++k) {
    if (m.windows[k] == 0) continue;
    absl::StrAppend(&kinds, kinds.empty() ? "" : ", ", m.windows[k], " ",
                    WindowKindName(static_cast<WindowKind>(k)));
  }
  return absl::StrCat("recorded order, swap", recompute ? " + recompute" : " only", "; ",
                      m.over_budget_ops, " of ", m.ops, " ops over the budget; windows: ",
                      kinds.empty() ? "none" : kinds, "; ", m.columns, " columns (", m.binaries,
                      " binary), ", m.rows, " rows, ", m.nonzeros, " nonzeros; ",
                      m.order_pairs > 0 ? absl::StrCat(m.order_pairs, " copy pairs ordered (exact batches)")
                                        : std::string("batches relaxed"));
}

std::string GapText(const OptimumResult& r) {
  if (r.incumbent_ns < 0) return "- (no incumbent within the time limit)";
  std::string why;
  if (r.proven_optimal) {
    why = "the incumbent is optimal in the model's class";
  } else if (r.status != MilpStatus::kOptimal) {
    why = "the solve stopped at its time limit: the optimum lies between bound and incumbent";
  } else {
    why = "the MILP is solved, but its rows relax copies issued at one op (docs/optimum.md): "
          "the optimum lies between bound and incumbent";
  }
  return absl::StrCat(absl::StrFormat("%.2f%%", 100.0 * r.gap), " (", why, ")");
}

absl::Status Run(OptimumArgs& a) {
  a.flags.Parse();
  CompareOptions co;
  co.keep_policies = true;
  co.planner_options = a.planner_options;
  co.oversubscription = CheckOversubscription(a.oversubscription, a.device, &a.flags);
  OptimumOptions oo;
  if (a.time_limit_ns) oo.time_limit_ns = *a.time_limit_ns;
  oo.recompute = !a.no_recompute;
  // The transient rows are the default (the simulator counts the recipe's
  // transient); the flag states it explicitly.
  if (a.recompute_transient) oo.recompute_transient = true;
  if (a.recompute_transient && a.no_recompute) {
    a.flags.Add("--recompute-transient: needs recompute windows; drop --no-recompute");
  }
  if (a.threads) oo.threads = static_cast<int32_t>(*a.threads);
  if (a.max_ops) oo.max_ops = static_cast<int32_t>(*a.max_ops);
  if (absl::Status st = oo.Validate(); !st.ok()) a.flags.Add(std::string(st.message()));
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadTraceArg(a.trace, &a.flags));
  co.iteration = ResolveIteration(a.iteration, trace, &a.flags);
  const ResolvedDevice device =
      ResolveDevice(a.device, TraceDeviceDefaults(trace),
                    {.capacity = !a.oversubscription.has_value()}, &a.flags);
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  PrintWarnings(device.warnings);
  co.simulator.device = device.model;
  co.optimum = oo;
  if (!a.quiet) {
    std::cerr << "swapplan optimum: planning with the default planners, then the MILP (time limit "
              << FormatDurationNs(oo.time_limit_ns) << ")\n";
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Comparison c, ComparePlanners(trace, co));
  if (!c.optimum) {
    // The model refused the problem. Too large or unsupported is a usage
    // error (exit 2), no policy of the class fitting is infeasible (3).
    const absl::Status& st = c.optimum_status;
    if (KindOf(st) == ErrorKind::kResourceLimit) return Error(ErrorKind::kUsage, st.message());
    return st;
  }
  const OptimumResult& r = *c.optimum;
  const std::string policy_file = a.policy.value_or("");
  if (!policy_file.empty() && r.policy) SWAPPLAN_RETURN_IF_ERROR(WritePolicy(*r.policy, policy_file));
  std::string out;
  if (a.json) {
    nlohmann::json j;
    j["trace"] = trace.source();
    j["iteration"] = c.iteration;
    j["ops"] = c.num_ops;
    j["device"] = DeviceJson(device);
    j["warnings"] = WarningsJson(device.warnings);
    j["budget_bytes"] = c.budget_bytes;
    j["ideal_ns"] = r.ideal_ns;
    j["status"] = std::string(MilpStatusName(r.status));
    j["lower_bound_ns"] = r.lower_bound_ns;
    j["milp_bound_ns"] = r.milp_bound_ns;
    j["milp_objective_ns"] = r.milp_objective_ns;
    j["incumbent_ns"] = r.incumbent_ns;
    j["gap"] = r.gap;
    j["exact"] = r.exact;
    j["proven_optimal"] = r.proven_optimal;
    j["tolerance_ns"] = r.tolerance_ns;
    j["recompute"] = oo.recompute;
    j["time_limit_ns"] = oo.time_limit_ns;
    j["solve_time_ns"] = r.solve_time_ns;
    j["build_time_ns"] = r.build_time_ns;
    j["nodes"] = r.nodes;
    j["warm_start_items"] = r.warm_start_items;
    j["model"] = {{"ops", r.model.ops},
                  {"order_pairs", r.model.order_pairs},
                  {"over_budget_ops", r.model.over_budget_ops},
                  {"columns", r.model.columns},
                  {"binaries", r.model.binaries},
                  {"rows", r.model.rows},
                  {"nonzeros", r.model.nonzeros}};
    nlohmann::json windows;
    for (int k = 0; k < 5; ++k) windows[std::string(WindowKindName(static_cast<WindowKind>(k)))] = r.model.windows[k];
    j["model"]["windows"] = windows;
    nlohmann::json rows = nlohmann::json::array();
    for (const PlannerOutcome& row : c.rows) {
      nlohmann::json jr = {{"planner", row.planner}, {"feasible", row.feasible}};
      jr["iteration_time_ns"] = row.sim ? nlohmann::json(row.sim->iteration_time_ns) : nlohmann::json();
      jr["gap_to_bound"] = row.gap_to_bound ? nlohmann::json(*row.gap_to_bound) : nlohmann::json();
      rows.push_back(jr);
    }
    j["planners"] = rows;
    out = j.dump(2) + "\n";
  } else {
    TextTable t({"optimum", trace.source()});
    t.AddRow({"iteration", absl::StrCat(c.iteration, " (", c.num_ops, " ops, op durations ",
                                        DurationSourceName(c.durations), ")")});
    t.AddRow({"budget", BytesExact(c.budget_bytes)});
    t.AddRow({"link", LinkText(c.simulator.device)});
    t.AddRow({"compute", ComputeScaleText(device)});
    t.AddRow({"model", ModelText(r, oo.recompute)});
    t.AddRow({"solve", absl::StrCat(MilpStatusName(r.status), " after ",
                                    FormatDurationNs(r.solve_time_ns), " (time limit ",
                                    FormatDurationNs(oo.time_limit_ns), "), ", r.nodes,
                                    " nodes; warm start: ", r.warm_start_items,
                                    " items of the best planner policy")});
    t.AddRow({"lower bound", absl::StrCat(FormatDurationNs(r.lower_bound_ns),
                                          " (no policy of the class simulates faster; ideal ",
                                          FormatDurationNs(r.ideal_ns), ")")});
    if (r.incumbent_ns >= 0) {
      t.AddRow({"incumbent", absl::StrCat(FormatDurationNs(r.incumbent_ns), " simulated",
                                          r.exact ? " (= its MILP objective)" : "")});
    } else {
      t.AddRow({"incumbent", "-"});
    }
    t.AddRow({"gap", GapText(r)});
    for (const PlannerOutcome& row : c.rows) {
      if (row.unlimited_memory) continue;
      std::string v = "does not fit";
      if (row.feasible && row.sim) {
        v = absl::StrCat(FormatDurationNs(row.sim->iteration_time_ns), ", ",
                         row.gap_to_bound ? Percent(*row.gap_to_bound) : std::string("-"),
                         " to the bound");
        if (row.gap_to_bound && *row.gap_to_bound < 0) {
          absl::StrAppend(&v, " (outside the model's class)");
        }
      }
      t.AddRow({row.planner, v});
    }
    if (!policy_file.empty() && r.policy) t.AddRow({"policy", policy_file});
    out = t.Render(2);
  }
  return WriteOutput("", out);
}

}  // namespace

void SetupOptimum(CLI::App& root, Action* action) {
  auto a = std::make_shared<OptimumArgs>();
  CLI::App* sub = root.add_subcommand(
      "optimum",
      "Exact bound for small traces: the swap (+ recompute) MILP of one iteration solved with "
      "CBC; reports a lower bound on every policy of the model's class, the incumbent's "
      "simulated time, the gap, and each default planner's gap to the bound (docs/optimum.md).");
  a->flags.Positional(sub, "trace", &a->trace, "Trace file", /*required=*/true);
  AddDeviceFlags(sub, &a->flags, &a->device, {});
  AddOversubscriptionFlag(sub, &a->flags, &a->oversubscription);
  AddIterationFlag(sub, &a->flags, &a->iteration);
  a->flags.Duration(sub, "--time-limit", &a->time_limit_ns,
                    absl::StrCat("Branch-and-bound wall-clock limit, e.g. 60s (0s = prove "
                                 "optimality); a stopped solve reports its bound and incumbent "
                                 "[default ",
                                 FormatDurationNs(OptimumOptions().time_limit_ns), "]"));
  sub->add_flag("--no-recompute", a->no_recompute,
                "Swap only (the bound of the swap-only planners); default: swap + recompute");
  sub->add_flag("--recompute-transient", a->recompute_transient,
                "Count each recomputation's transient memory (its producer's other outputs) at "
                "its trigger op; the bound is then on the policies whose transients fit "
                "(docs/optimum.md); the default, as the simulator counts them");
  a->flags.Int(sub, "--threads", &a->threads,
               "CBC threads (1: the same result on every run) [default 1]", 1, 256);
  a->flags.Int(sub, "--max-ops", &a->max_ops,
               absl::StrCat("Refuse iterations with more ops than this [default ",
                            OptimumOptions().max_ops, "]"),
               1, int64_t{1} << 30);
  AddPlannerOptionFlag(sub, &a->flags, &a->planner_options,
      "PLANNER.NAME=VALUE, repeatable, for the planners that warm-start the MILP (as compare "
      "--planner-option)");
  a->flags.Text(sub, "-o,--output", &a->policy, "Write the incumbent's policy (.json: JSON)");
  sub->add_flag("--json", a->json, "Machine-readable summary on stdout");
  sub->add_flag("-q,--quiet", a->quiet, "No progress on stderr");
  sub->callback([a, action] { *action = [a]() -> absl::Status { return Run(*a); }; });
}

}  // namespace swapplan::cli
