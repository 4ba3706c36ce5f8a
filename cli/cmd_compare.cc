// swapplan compare TRACE --device-memory X [--reserve X] [--planners a,b,...] [--json]
//
// Runs every planner (registry.h) on one iteration with the same budget and
// judges each policy with the evaluation simulator: one row per planner.
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
#include "sim_flags.h"
#include "swapplan/curve/memory_curve.h"
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
  std::string planners;
  int iteration = 0;
  SimFlags sim;
  std::string save_policies;
  // PLANNER.NAME=VALUE, applied with Planner::SetOption.
  std::vector<std::string> planner_options;
  bool json = false;
  std::string output;
};

struct Row {
  std::string planner;
  bool planned = false;  // the planner returned a policy
  bool feasible = false;
  std::optional<SimulationResult> sim;
  int64_t plan_time_ns = 0;
  size_t items = 0;
  std::string note;
};

struct Context {
  int64_t device_memory = 0, reserve = 0, budget = 0;
  PeakInfo peak;
  int64_t ideal_ns = 0;
  DurationSource durations = DurationSource::kRecorded;
  std::string link;
};

std::string Percent(double x) { return absl::StrFormat("%+.2f%%", 100.0 * x); }

// What limits a feasible policy, in one line.
std::string Limit(const Trace& t, int32_t it, const PlannerInfo& info, const Policy& p,
                  const SimulationResult& r) {
  if (info.unlimited_memory) return "unlimited memory (the reference for overhead)";
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

std::string RenderText(const Trace& t, const CompareArgs& args, const Context& c,
                       const std::vector<Row>& rows) {
  std::string out;
  absl::StrAppend(&out, "trace     ", t.source(), ", iteration ", args.iteration, " (",
                  t.iteration(args.iteration).num_ops(), " ops, op durations ",
                  DurationSourceName(c.durations), ")\n");
  absl::StrAppend(&out, "budget    ", BytesExact(c.budget), " = device memory ",
                  FormatBytes(c.device_memory), " - reserve ", FormatBytes(c.reserve),
                  "; unswapped peak ", BytesExact(c.peak.bytes), " at ",
                  OpText(t, args.iteration, c.peak.local_op), "\n");
  absl::StrAppend(&out, "link      ", c.link, "\n");
  absl::StrAppend(&out, "ideal     ", FormatDurationNs(c.ideal_ns), " per iteration\n\n");
  TextTable table(
      {"planner", "feasible", "peak", "iteration", "overhead", "stall", "d2h", "h2d", "plan time"});
  for (const Row& r : rows) {
    if (!r.sim) {
      table.AddRow(
          {r.planner, "no", "-", "-", "-", "-", "-", "-", FormatDurationNs(r.plan_time_ns)});
      continue;
    }
    const SimulationResult& s = *r.sim;
    table.AddRow({r.planner, r.feasible ? "yes" : "no", FormatBytes(s.peak_bytes),
                  FormatDurationNs(s.iteration_time_ns), Percent(s.overhead_vs_ideal),
                  FormatDurationNs(s.stall_ns), FormatBytes(s.bytes_d2h), FormatBytes(s.bytes_h2d),
                  FormatDurationNs(r.plan_time_ns)});
  }
  absl::StrAppend(&out, table.Render(/*left_columns=*/2), "\n");
  for (const Row& r : rows) absl::StrAppend(&out, r.planner, ": ", r.note, "\n");
  return out;
}

std::string RenderJson(const Trace& t, const CompareArgs& args, const Context& c,
                       const std::vector<Row>& rows) {
  using nlohmann::json;
  json j;
  j["trace"] = t.source();
  j["iteration"] = args.iteration;
  j["ops"] = t.iteration(args.iteration).num_ops();
  j["durations"] = std::string(DurationSourceName(c.durations));
  j["device_memory_bytes"] = c.device_memory;
  j["reserve_bytes"] = c.reserve;
  j["budget_bytes"] = c.budget;
  j["unswapped_peak_bytes"] = c.peak.bytes;
  j["ideal_iteration_time_ns"] = c.ideal_ns;
  json out_rows = json::array();
  for (const Row& r : rows) {
    json row;
    row["planner"] = r.planner;
    row["feasible"] = r.feasible;
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
    row["note"] = r.note;
    out_rows.push_back(row);
  }
  j["rows"] = out_rows;
  return j.dump(2) + "\n";
}

absl::Status Run(const CompareArgs& args) {
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadTrace(args.trace));
  if (args.iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("--iteration ", args.iteration,
                                                   " is out of range: ", trace.source(), " has ",
                                                   trace.num_iterations(), " iterations"));
  }
  // Planners, validated before any work.
  std::vector<const PlannerInfo*> planners;
  if (args.planners.empty()) {
    for (const PlannerInfo& p : RegisteredPlanners()) {
      if (p.in_default_set) planners.push_back(&p);
    }
  } else {
    for (absl::string_view name : absl::StrSplit(args.planners, ',', absl::SkipEmpty())) {
      const PlannerInfo* p = FindPlanner(name);
      if (p == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("--planners: unknown planner '", name, "' (known: ", PlannerNames(), ")"));
      }
      planners.push_back(p);
    }
  }
  Context c;
  if (!args.device_memory.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(args.device_memory);
    if (!b.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--device-memory: ", b.status().message()));
    }
    c.device_memory = *b;
  } else if (trace.metadata().device_memory_bytes > 0) {
    c.device_memory = trace.metadata().device_memory_bytes;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--device-memory is required: ", trace.source(),
                                                   " does not record the device memory"));
  }
  if (!args.reserve.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(args.reserve);
    if (!b.ok())
      return absl::InvalidArgumentError(absl::StrCat("--reserve: ", b.status().message()));
    c.reserve = *b;
  }
  c.budget = c.device_memory - c.reserve;
  if (c.budget <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--reserve ", FormatBytes(c.reserve),
                                                   " leaves no budget out of ",
                                                   FormatBytes(c.device_memory)));
  }
  SimulatorOptions o;
  SWAPPLAN_RETURN_IF_ERROR(ApplySimFlags(args.sim, &o));
  if (o.h2d_bandwidth_bytes_per_s == 0)
    o.h2d_bandwidth_bytes_per_s = trace.metadata().h2d_bandwidth_bytes_per_s;
  if (o.d2h_bandwidth_bytes_per_s == 0)
    o.d2h_bandwidth_bytes_per_s = trace.metadata().d2h_bandwidth_bytes_per_s;
  if (!(o.h2d_bandwidth_bytes_per_s > 0) || !(o.d2h_bandwidth_bytes_per_s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no copy bandwidth: give --bandwidth (or --h2d-bandwidth and --d2h-bandwidth); ",
        trace.source(), " does not record one"));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
  c.peak = curve.iterations()[args.iteration].peak_unswapped;
  SimulatorOptions unlimited = o;
  o.device_capacity_bytes = c.budget;
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(trace, args.iteration, o));
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator ideal_sim,
                            Simulator::Create(trace, args.iteration, unlimited));
  c.ideal_ns = sim.ideal_time_ns();
  c.durations = sim.durations().source;
  PlanningProblem problem{.trace = &trace,
                          .iteration = args.iteration,
                          .device_budget_bytes = c.budget,
                          .h2d_bandwidth_bytes_per_s = o.h2d_bandwidth_bytes_per_s,
                          .d2h_bandwidth_bytes_per_s = o.d2h_bandwidth_bytes_per_s,
                          .curve = &curve};
  if (!args.save_policies.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.save_policies, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--save-policies: cannot create ", args.save_policies, ": ", ec.message()));
    }
  }

  const auto start = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  bool any_feasible = false;
  for (const PlannerInfo* info : planners) {
    Row row;
    row.planner = info->name;
    std::unique_ptr<Planner> planner = info->create();
    for (const std::string& opt : args.planner_options) {
      const size_t dot = opt.find('.'), eq = opt.find('=');
      if (dot == std::string::npos || eq == std::string::npos || eq < dot) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--planner-option '", opt, "': expected PLANNER.NAME=VALUE, e.g. advisor.time-limit=30s"));
      }
      if (opt.substr(0, dot) != info->name) continue;
      if (absl::Status st = planner->SetOption(opt.substr(dot + 1, eq - dot - 1), opt.substr(eq + 1));
          !st.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--planner-option '", opt, "': ", st.message()));
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<Policy> policy = planner->Plan(problem);
    row.plan_time_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    if (!policy.ok()) {
      if (policy.status().code() != absl::StatusCode::kResourceExhausted) {
        return absl::Status(policy.status().code(),
                            absl::StrCat(info->name, ": ", policy.status().message()));
      }
      row.note = std::string(policy.status().message());
      if (row.note.rfind(absl::StrCat(info->name, ": "), 0) == 0) {
        row.note = row.note.substr(std::string(info->name).size() + 2);
      }
      rows.push_back(std::move(row));
      continue;
    }
    row.planned = true;
    row.items = policy->items.size();
    SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r,
                              (info->unlimited_memory ? ideal_sim : sim).Run(*policy));
    if (info->unlimited_memory) {
      row.feasible = r.peak_bytes <= c.budget;
    } else {
      row.feasible = !r.oom.occurred;
      any_feasible = any_feasible || row.feasible;
    }
    if (!info->unlimited_memory && r.oom.occurred && r.oom.pool_class >= 0) {
      row.note = absl::StrCat("simulated OOM at ", OpText(trace, args.iteration, r.oom.op),
                              ": pool class ", r.oom.pool_class, " needed ",
                              r.oom.requested_bytes, " objects with ", r.oom.free_bytes, " free");
    } else if (!info->unlimited_memory && r.oom.occurred) {
      row.note = absl::StrCat("simulated OOM at ", OpText(trace, args.iteration, r.oom.op),
                              ": requested ", BytesExact(r.oom.requested_bytes), " with ",
                              BytesExact(r.oom.free_bytes), " free");
    } else {
      row.note = Limit(trace, args.iteration, *info, *policy, r);
    }
    if (!args.save_policies.empty()) {
      policy->simulated_iteration_time_ns = r.iteration_time_ns;
      SWAPPLAN_RETURN_IF_ERROR(
          WritePolicy(*policy, absl::StrCat(args.save_policies, "/", info->name, ".json")));
    }
    row.sim = std::move(r);
    rows.push_back(std::move(row));
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > 1.0) {
      std::cerr << "swapplan compare: " << info->name << " planned in "
                << FormatDurationNs(rows.back().plan_time_ns) << "\n";
    }
  }
  if (!rows.empty() && rows.front().sim) c.link = LinkText(*rows.front().sim);
  if (c.link.empty()) {
    SimulationResult shape;
    shape.h2d_bandwidth_bytes_per_s = o.h2d_bandwidth_bytes_per_s;
    shape.d2h_bandwidth_bytes_per_s = o.d2h_bandwidth_bytes_per_s;
    shape.transfer_latency_ns = o.transfer_latency_ns;
    shape.half_duplex = o.half_duplex;
    c.link = LinkText(shape);
  }
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput(args.output, args.json ? RenderJson(trace, args, c, rows)
                                                              : RenderText(trace, args, c, rows)));
  bool any_real = false;
  for (const PlannerInfo* p : planners) any_real = any_real || !p->unlimited_memory;
  if (any_real && !any_feasible) {
    return absl::ResourceExhaustedError(absl::StrCat("no planner reaches the budget of ",
                                                     BytesExact(c.budget), " on ", trace.source()));
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
  sub->add_option("--planners", args->planners,
                  absl::StrCat("Comma-separated planners, of ", PlannerNames(),
                               " (default: all but those too slow to run by default: advisor)"));
  sub->add_option("--iteration", args->iteration, "Iteration to plan")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddSimFlags(sub, &args->sim);
  sub->add_option("--save-policies", args->save_policies,
                  "Write each planner's policy to DIR/<planner>.json");
  sub->add_option("--planner-option", args->planner_options,
                  "PLANNER.NAME=VALUE, repeatable: a planner's own option, e.g. "
                  "advisor.time-limit=30s, advisor.generations=100, advisor.threads=2");
  sub->add_flag("--json", args->json, "Machine-readable JSON output");
  sub->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
  sub->callback([args, action] { *action = [args]() -> absl::Status { return Run(*args); }; });
}

}  // namespace swapplan::cli
