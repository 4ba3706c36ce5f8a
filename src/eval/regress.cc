#include "swapplan/eval/regress.h"

#include <chrono>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/eval/compare.h"
#include "swapplan/import/import.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan {

absl::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kFaster:
      return "faster";
    case Verdict::kNewlyFeasible:
      return "newly-feasible";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kLostFeasibility:
      return "lost-feasibility";
    case Verdict::kNoBaseline:
      return "no-baseline";
    case Verdict::kTraceChanged:
      return "trace-changed";
    case Verdict::kOrderBroken:
      return "order-broken";
    case Verdict::kBudgetChanged:
      return "budget-changed";
    case Verdict::kNotRun:
      return "not-run";
  }
  return "unknown";
}

bool IsFailure(Verdict v) {
  return v == Verdict::kSlower || v == Verdict::kLostFeasibility || v == Verdict::kNoBaseline ||
         v == Verdict::kTraceChanged || v == Verdict::kOrderBroken ||
         v == Verdict::kBudgetChanged || v == Verdict::kNotRun;
}

absl::Status RegressOptions::Validate() const {
  if (!(tolerance >= 0 && tolerance < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("regress: tolerance ", tolerance, " must be in [0, 1)"));
  }
  return absl::OkStatus();
}

std::vector<std::string> QualityEntryPlanners(const QualityEntry& e) {
  if (!e.planners.empty()) return e.planners;
  const bool defaults = e.default_set || e.results.empty();
  std::vector<std::string> out;
  for (const PlannerInfo& p : RegisteredPlanners()) {
    if (p.unlimited_memory) continue;
    if (defaults ? p.in_default_set : e.results.count(p.name) > 0) out.push_back(p.name);
  }
  return out;
}

namespace {

absl::StatusOr<CompareOptions> EntryOptions(const QualityEntry& e) {
  CompareOptions o;
  o.iteration = e.iteration;
  o.planners = QualityEntryPlanners(e);
  for (const std::string& text : e.planner_options) {
    SWAPPLAN_ASSIGN_OR_RETURN(CompareOptions::PlannerOption po, ParsePlannerOption(text));
    o.planner_options.push_back(std::move(po));
  }
  if (e.oversubscription > 0) {
    o.oversubscription = e.oversubscription;
  } else {
    SWAPPLAN_ASSIGN_OR_RETURN(o.simulator.device.capacity_bytes, ParseBytes(e.device_memory));
    if (!e.reserve.empty()) {
      SWAPPLAN_ASSIGN_OR_RETURN(o.simulator.device.reserve_bytes, ParseBytes(e.reserve));
    }
  }
  if (!e.bandwidth.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(double bw, ParseBandwidth(e.bandwidth));
    o.simulator.device.h2d_bandwidth_bytes_per_s = o.simulator.device.d2h_bandwidth_bytes_per_s = bw;
  }
  if (!e.h2d_bandwidth.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(o.simulator.device.h2d_bandwidth_bytes_per_s,
                              ParseBandwidth(e.h2d_bandwidth));
  }
  if (!e.d2h_bandwidth.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(o.simulator.device.d2h_bandwidth_bytes_per_s,
                              ParseBandwidth(e.d2h_bandwidth));
  }
  if (!e.latency.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(o.simulator.device.copy_latency_ns, ParseDurationNs(e.latency));
  }
  o.simulator.device.copy_engines = e.half_duplex ? 1 : 2;
  return o;
}

Verdict Judge(const std::optional<QualityResult>& base, const QualityResult& now,
              double tolerance, std::optional<double>* change) {
  if (!base) return Verdict::kNoBaseline;
  if (base->feasible && !now.feasible) return Verdict::kLostFeasibility;
  if (!base->feasible) return now.feasible ? Verdict::kNewlyFeasible : Verdict::kOk;
  const double ratio = static_cast<double>(now.iteration_time_ns) /
                       static_cast<double>(base->iteration_time_ns);
  *change = ratio - 1;
  if (ratio > 1 + tolerance) return Verdict::kSlower;
  if (ratio < 1 - tolerance) return Verdict::kFaster;
  return Verdict::kOk;
}

}  // namespace

absl::StatusOr<RegressReport> RunRegression(const QualityBaseline& baseline,
                                            const RegressOptions& options,
                                            const RegressProgress& progress) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  const auto t0 = std::chrono::steady_clock::now();
  const std::filesystem::path dir = std::filesystem::path(baseline.path).parent_path();
  RegressReport report;
  report.updated = baseline;
  for (size_t i = 0; i < baseline.entries.size(); ++i) {
    const QualityEntry& e = baseline.entries[i];
    QualityEntry& updated = report.updated.entries[i];
    const std::string path = (dir / e.trace).string();
    SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadAnyTrace(path));  // any supported format
    SWAPPLAN_ASSIGN_OR_RETURN(CompareOptions co, EntryOptions(e));
    if (e.iteration >= trace.num_iterations()) {
      return absl::InvalidArgumentError(absl::StrCat(baseline.path, ": ", e.trace, ": iteration ",
                                                     e.iteration, " is out of range (",
                                                     trace.num_iterations(), " iterations)"));
    }
    SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
    absl::StatusOr<Comparison> c = ComparePlanners(trace, co, &curve);
    if (!c.ok()) {
      return absl::Status(c.status().code(), absl::StrCat(e.trace, ": ", c.status().message()));
    }
    const PolicyFingerprint fp = ComputeFingerprint(trace, e.iteration);
    const TraceIdentity identity{fp.op_sequence_hash, fp.iteration_ops, c->peak.bytes,
                                 c->persistent_bytes};
    const bool changed = e.identity.has_value() && !(*e.identity == identity);
    // A recorded budget (written only when positive) that the entry's
    // settings no longer give on the same trace: the results were measured
    // at another budget (issue 19: an edited budget_bytes was ignored).
    const bool budget_changed =
        !changed && e.budget_bytes > 0 && e.budget_bytes != c->budget_bytes;
    updated.identity = identity;
    updated.budget_bytes = c->budget_bytes;
    updated.results.clear();
    for (const PlannerOutcome& out : c->rows) {
      RegressRow row;
      row.entry = i;
      row.planner = out.planner;
      row.current.feasible = out.feasible;
      if (out.feasible) row.current.iteration_time_ns = out.sim->iteration_time_ns;
      auto base = e.results.find(out.planner);
      if (base != e.results.end()) row.baseline = base->second;
      row.verdict = changed          ? Verdict::kTraceChanged
                    : budget_changed ? Verdict::kBudgetChanged
                                     : Judge(row.baseline, row.current, options.tolerance,
                                             &row.change);
      if (changed && row.baseline && row.baseline->feasible && row.current.feasible) {
        row.change = static_cast<double>(row.current.iteration_time_ns) /
                         static_cast<double>(row.baseline->iteration_time_ns) -
                     1;
      }
      report.failures += IsFailure(row.verdict);
      updated.results[out.planner] = row.current;
      report.rows.push_back(std::move(row));
    }
    // Recorded planners the entry no longer runs (its default set lost them).
    for (const auto& [name, result] : e.results) {
      if (updated.results.count(name) > 0) continue;
      RegressRow row;
      row.entry = i;
      row.planner = name;
      row.baseline = result;
      row.verdict = changed ? Verdict::kTraceChanged : Verdict::kNotRun;
      report.failures += IsFailure(row.verdict);
      report.rows.push_back(std::move(row));
    }
    // Relations between planners of this run.
    for (const std::string& rel : e.at_most) {
      const size_t le = rel.find("<=");
      const std::string a = rel.substr(0, le), b = rel.substr(le + 2);
      RegressRow row;
      row.entry = i;
      row.planner = rel;
      row.current = updated.results[a];
      row.baseline = updated.results[b];
      const bool broken = row.baseline->feasible &&
                          (!row.current.feasible ||
                           row.current.iteration_time_ns > row.baseline->iteration_time_ns);
      if (row.baseline->feasible && row.current.feasible) {
        row.change = static_cast<double>(row.current.iteration_time_ns) /
                         static_cast<double>(row.baseline->iteration_time_ns) -
                     1;
      }
      row.verdict = broken ? Verdict::kOrderBroken : Verdict::kOk;
      report.failures += IsFailure(row.verdict);
      report.rows.push_back(std::move(row));
    }
    if (progress) {
      progress(i, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  return report;
}

}  // namespace swapplan
