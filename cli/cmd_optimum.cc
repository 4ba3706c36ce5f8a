// swapplan optimum TRACE [--device-memory X [--reserve X] | --oversubscription R]
//   [--iteration N] [--time-limit 60s] [--no-recompute] [--threads N]
//   [--latency T] [--bandwidth B] [-o policy] [--json]
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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "sim_flags.h"
#include "trace_input.h"
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
  std::string trace;
  std::string device_memory;
  std::string reserve;
  double oversubscription = 0;
  int iteration = 0;
  std::string time_limit = "60s";
  bool no_recompute = false;
  int threads = 1;
  int max_ops = OptimumOptions().max_ops;
  SimFlags sim;
  // PLANNER.NAME=VALUE for the warm-start planners (as compare).
  std::vector<std::string> planner_options;
  std::string policy;
  bool json = false;
  bool quiet = false;
};

std::string Percent(double x) { return absl::StrFormat("%+.2f%%", 100.0 * x); }

// The budget flags (as compare reads them).
absl::Status ReadBudget(const OptimumArgs& a, const Trace& trace, BudgetSpec* spec) {
  if (a.oversubscription != 0) {
    if (!a.device_memory.empty() || !a.reserve.empty()) {
      return absl::InvalidArgumentError(
          "--oversubscription replaces --device-memory and --reserve: give one or the other");
    }
    if (!(a.oversubscription >= 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--oversubscription ", a.oversubscription, " must be >= 1 (1 = the peak fits)"));
    }
    spec->oversubscription = a.oversubscription;
    return absl::OkStatus();
  }
  if (!a.device_memory.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(a.device_memory);
    if (!b.ok()) return absl::InvalidArgumentError(absl::StrCat("--device-memory: ", b.status().message()));
    spec->device_memory_bytes = *b;
  } else if (trace.metadata().device_memory_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--device-memory is required: ", trace.source(), " does not record the device memory"));
  }
  if (!a.reserve.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(a.reserve);
    if (!b.ok()) return absl::InvalidArgumentError(absl::StrCat("--reserve: ", b.status().message()));
    spec->reserve_bytes = *b;
  }
  return absl::OkStatus();
}

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

absl::Status Run(const OptimumArgs& a) {
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(a.trace));
  if (a.iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("--iteration ", a.iteration,
                                                   " is out of range: ", trace.source(), " has ",
                                                   trace.num_iterations(), " iterations"));
  }
  CompareOptions co;
  co.iteration = a.iteration;
  co.keep_policies = true;
  SWAPPLAN_RETURN_IF_ERROR(ReadBudget(a, trace, &co.budget));
  SWAPPLAN_RETURN_IF_ERROR(ApplySimFlags(a.sim, &co.simulator));
  for (const std::string& opt : a.planner_options) {
    absl::StatusOr<CompareOptions::PlannerOption> o = ParsePlannerOption(opt);
    if (!o.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--planner-option ", o.status().message()));
    }
    co.planner_options.push_back(*std::move(o));
  }
  OptimumOptions oo;
  {
    absl::StatusOr<int64_t> tl = ParseDurationNs(a.time_limit);
    if (!tl.ok()) return absl::InvalidArgumentError(absl::StrCat("--time-limit: ", tl.status().message()));
    oo.time_limit_ns = *tl;
  }
  oo.recompute = !a.no_recompute;
  oo.threads = a.threads;
  oo.max_ops = a.max_ops;
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
  if (!a.policy.empty() && r.policy) SWAPPLAN_RETURN_IF_ERROR(WritePolicy(*r.policy, a.policy));
  std::string out;
  if (a.json) {
    nlohmann::json j;
    j["trace"] = trace.source();
    j["iteration"] = c.iteration;
    j["ops"] = c.num_ops;
    j["budget_bytes"] = c.budget.budget_bytes;
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
    t.AddRow({"budget", BytesExact(c.budget.budget_bytes)});
    t.AddRow({"link", LinkText(c.simulator.device)});
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
    if (!a.policy.empty() && r.policy) t.AddRow({"policy", a.policy});
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
  sub->add_option("trace", a->trace, "Trace file")->required();
  sub->add_option("--device-memory", a->device_memory,
                  "Device memory, e.g. 64GiB (default: the trace's)");
  sub->add_option("--reserve", a->reserve, "Memory kept back; budget = device memory - reserve");
  sub->add_option("--oversubscription", a->oversubscription,
                  "Budget as a ratio r >= 1 instead of --device-memory (as compare)");
  sub->add_option("--iteration", a->iteration, "Iteration to bound")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--time-limit", a->time_limit,
                  "Branch-and-bound wall-clock limit (0 = prove optimality); a stopped solve "
                  "reports its bound and incumbent")
      ->capture_default_str();
  sub->add_flag("--no-recompute", a->no_recompute,
                "Swap only (the bound of the swap-only planners); default: swap + recompute");
  sub->add_option("--threads", a->threads, "CBC threads (1: the same result on every run)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-ops", a->max_ops, "Refuse iterations with more ops than this")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  AddSimFlags(sub, &a->sim);
  sub->add_option("--planner-option", a->planner_options,
                  "PLANNER.NAME=VALUE, repeatable, for the planners that warm-start the MILP "
                  "(as compare --planner-option)");
  sub->add_option("-o,--output", a->policy, "Write the incumbent's policy (.json: JSON)");
  sub->add_flag("--json", a->json, "Machine-readable summary on stdout");
  sub->add_flag("--quiet", a->quiet, "No progress on stderr");
  sub->callback([a, action] { *action = [a]() -> absl::Status { return Run(*a); }; });
}

}  // namespace swapplan::cli
