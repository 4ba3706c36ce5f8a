// swapplan regress --baseline quality.json [--tolerance 1%] [--update] [--json]
//
// Replans every trace the baseline names at its budget and compares each
// planner's feasibility and simulated iteration time with the recorded one
// (library: eval/regress.h). One row per (trace, planner). Exit 4 (a quality
// regression, SPEC §10) when a planner lost feasibility or got slower than
// the tolerance allows (or has no baseline, or its trace changed); --update
// rewrites the baseline from this run instead and exits 0.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "common.h"
#include "flags.h"
#include "progress.h"
#include "swapplan/eval/regress.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct RegressArgs {
  FlagSet flags;
  std::optional<std::string> baseline;
  std::optional<double> tolerance;
  bool update = false;
  bool json = false;
  std::optional<std::string> output;
};

std::string BudgetText(const QualityEntry& e, int64_t budget_bytes) {
  std::string spec =
      e.oversubscription > 0
          ? absl::StrFormat("r=%g", e.oversubscription)
          : absl::StrCat(e.device_memory, e.reserve.empty() ? "" : absl::StrCat("-", e.reserve));
  return absl::StrCat(spec, " (", FormatBytes(budget_bytes), ")");
}

// Times under a millisecond exactly (toy traces), else as usual.
std::string TimeText(int64_t ns) {
  return ns < 1'000'000 ? absl::StrCat(ns, " ns") : FormatDurationNs(ns);
}

std::string ResultText(const std::optional<QualityResult>& r) {
  if (!r) return "none";
  return r->feasible ? TimeText(r->iteration_time_ns) : std::string("infeasible");
}

std::string ChangeText(const RegressRow& row) {
  return row.change ? absl::StrFormat("%+.2f%%", 100 * *row.change) : std::string("-");
}

std::string RenderText(const QualityBaseline& b, const RegressReport& r, double tolerance,
                       bool update) {
  std::string out;
  absl::StrAppend(&out, "regress   ", b.path, ": ", b.entries.size(), " traces, ", r.rows.size(),
                  " rows, tolerance ", absl::StrFormat("%.2f%%", 100 * tolerance), "\n\n");
  TextTable table({"trace", "budget", "planner", "baseline", "current", "change", "verdict"});
  size_t last_entry = SIZE_MAX;
  for (const RegressRow& row : r.rows) {
    const QualityEntry& e = b.entries[row.entry];
    const bool first = row.entry != last_entry;
    last_entry = row.entry;
    table.AddRow({first ? e.trace : "",
                  first ? BudgetText(e, r.updated.entries[row.entry].budget_bytes) : "",
                  row.planner, ResultText(row.baseline), ResultText(row.current),
                  ChangeText(row), std::string(VerdictName(row.verdict))});
  }
  absl::StrAppend(&out, table.Render(/*left_columns=*/3), "\n");
  if (r.failures == 0) {
    absl::StrAppend(&out, "result    all ", r.rows.size(), " rows pass\n");
  } else {
    absl::StrAppend(&out, "result    ", r.failures, " of ", r.rows.size(), " rows fail",
                    update ? " (baseline rewritten: --update)" : "", ":\n");
    for (const RegressRow& row : r.rows) {
      if (!IsFailure(row.verdict)) continue;
      const QualityEntry& e = b.entries[row.entry];
      std::string why;
      switch (row.verdict) {
        case Verdict::kSlower:
          why = absl::StrFormat("%s -> %s (%+.2f%%, more than %.2f%%)",
                                ResultText(row.baseline), ResultText(row.current),
                                100 * *row.change, 100 * tolerance);
          break;
        case Verdict::kLostFeasibility:
          why = absl::StrCat("was feasible (", ResultText(row.baseline),
                             "), now does not reach the budget");
          break;
        case Verdict::kNoBaseline:
          why = "nothing recorded: run with --update";
          break;
        case Verdict::kTraceChanged:
          why = "the trace is not the one the baseline was recorded on: run with --update";
          break;
        case Verdict::kOrderBroken:
          why = absl::StrCat(ResultText(row.current), " against ", ResultText(row.baseline));
          break;
        case Verdict::kNotRun:
          why = absl::StrCat("recorded ", ResultText(row.baseline),
                             ", but the entry no longer runs it (compare's default set lost it)");
          break;
        case Verdict::kBudgetChanged:
          why = absl::StrCat("recorded at budget_bytes ", e.budget_bytes,
                             "; the entry's settings give another budget on this trace: run "
                             "with --update");
          break;
        default:
          break;
      }
      absl::StrAppend(&out, "  ", VerdictName(row.verdict), ": ", row.planner, " on ", e.trace,
                      " at ", BudgetText(e, r.updated.entries[row.entry].budget_bytes), ": ", why,
                      "\n");
    }
  }
  if (update) absl::StrAppend(&out, "updated   ", b.path, "\n");
  return out;
}

std::string RenderJson(const QualityBaseline& b, const RegressReport& r, double tolerance) {
  using nlohmann::json;
  auto result = [](const std::optional<QualityResult>& q) {
    if (!q) return json(nullptr);
    json j = {{"feasible", q->feasible}};
    j["iteration_time_ns"] = q->feasible ? json(q->iteration_time_ns) : json(nullptr);
    return j;
  };
  json rows = json::array();
  for (const RegressRow& row : r.rows) {
    rows.push_back({{"trace", b.entries[row.entry].trace},
                    {"budget_bytes", r.updated.entries[row.entry].budget_bytes},
                    {"planner", row.planner},
                    {"baseline", result(row.baseline)},
                    {"current", result(row.current)},
                    {"change_fraction", row.change ? json(*row.change) : json(nullptr)},
                    {"verdict", std::string(VerdictName(row.verdict))},
                    {"failure", IsFailure(row.verdict)}});
  }
  json j = {{"baseline_file", b.path},
            {"tolerance_fraction", tolerance},
            {"num_failures", r.failures},
            {"rows", std::move(rows)}};
  return j.dump(2) + "\n";
}

absl::Status Run(RegressArgs& a) {
  a.flags.Parse();
  if (!a.baseline) a.flags.Add("--baseline FILE is required");
  RegressOptions options;
  options.tolerance = a.tolerance.value_or(0.01);
  if (absl::Status s = options.Validate(); !s.ok()) a.flags.Add(std::string(s.message()));
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  SWAPPLAN_ASSIGN_OR_RETURN(QualityBaseline baseline, ReadQualityBaseline(*a.baseline));
  ProgressBar bar("regress");
  auto progress = [&](size_t entry, double) {
    bar.Update(static_cast<int64_t>(entry) + 1, static_cast<int64_t>(baseline.entries.size()));
  };
  SWAPPLAN_ASSIGN_OR_RETURN(RegressReport report, RunRegression(baseline, options, progress));
  bar.Finish();
  if (a.update) {
    SWAPPLAN_RETURN_IF_ERROR(WriteOutput(*a.baseline, QualityBaselineToJson(report.updated)));
  }
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput(
      a.output.value_or(""), a.json ? RenderJson(baseline, report, options.tolerance)
                                    : RenderText(baseline, report, options.tolerance, a.update)));
  if (report.failures > 0 && !a.update) {
    return Error(ErrorKind::kQualityRegression,
                 absl::StrCat("regress: ", report.failures, " of ", report.rows.size(),
                              " rows fail against ", *a.baseline));
  }
  return absl::OkStatus();
}

}  // namespace

void SetupRegress(CLI::App& root, Action* action) {
  auto a = std::make_shared<RegressArgs>();
  CLI::App* sub = root.add_subcommand(
      "regress",
      "Replan the traces a quality baseline names and fail (exit 4) when a planner lost "
      "feasibility or got slower (simulated iteration time) than the tolerance allows.");
  a->flags.Text(sub, "--baseline", &a->baseline,
                "Quality baseline (JSON), e.g. quality.json (required)");
  a->flags.Fraction(sub, "--tolerance", &a->tolerance,
                    "Allowed slowdown relative to the baseline, e.g. 1% or 0.01 (default 1%)");
  sub->add_flag("--update", a->update,
                "Rewrite the baseline's recorded results from this run (exit 0)");
  sub->add_flag("--json", a->json, "Machine-readable JSON report (docs/json/regress.schema.json)");
  a->flags.Text(sub, "-o,--output", &a->output, "Write the report to FILE instead of stdout");
  sub->callback([a, action] { *action = [a]() { return Run(*a); }; });
}

}  // namespace swapplan::cli
