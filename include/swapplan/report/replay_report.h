// The HTML report of a multi-iteration replay (eval/replay.h): the same
// self-contained page style as html_report.h (inline CSS and script, no
// network access), showing per runtime iteration the stage it ran in, the
// policy it used, its simulated peak against the device capacity and the
// planning budget, its OOMs (resolved by passive swaps or not), policy misses
// and uses while off device, and the policies the run generated. The engine
// of `swapplan replay --html FILE`.
//
//   std::vector<ReplayRow> rows;
//   SWAPPLAN_ASSIGN_OR_RETURN(ReplaySummary s,
//       RunReplay(trace, o, [&](const ReplayRow& r) { rows.push_back(r); }));
//   ReplayReportOptions ro;  ro.device_text = "a100-80gb: 80.00 GiB";
//   SWAPPLAN_ASSIGN_OR_RETURN(nlohmann::json data,
//                             BuildReplayReportData(trace, o, rows, s, ro));
//   std::string html = RenderReplayReportHtml(data);
//
// The page embeds its data as one JSON document (schema
// "swapplan-replay-report/1", docs/json/replay_report.schema.json) in
// <script type="application/json" id="swapplan-data">, like html_report.h;
// when drawn the script sets data-report-status="ok" on <body> ("error: ..."
// when drawing failed).
//
//   data = {
//     schema, title, trace, device, link, compute, warnings[],
//     capacity_bytes, budget_bytes (capacity − reserve: what planners plan
//     for), planner, matcher, policies_keyed_by, plan_on,
//     totals: ReplayTotalsJson (below),
//     iterations[]: ReplayRowJson (below), one per row,
//     policies[]: {id, generated_after_iteration, planned_on_iterations,
//                  used_in_iterations, planner, input_signature},
//     inputs[]: {input_signature, input_bytes, policies,
//                policies_by_planner {name: count}, planner (the last
//                policy's, or null), plan_failures, no_fit (the first
//                failure's message, or null)}
//   }
//
// Complexity: O(rows) for the data, O(rows) for the page.
#ifndef SWAPPLAN_REPORT_REPLAY_REPORT_H_
#define SWAPPLAN_REPORT_REPLAY_REPORT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/eval/replay.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// One replay row as JSON: the rows of `swapplan replay --json` (the CLI
// adds "items_report" to the --explain iteration's) and of the page's
// data, keys as docs/json/replay.schema.json#/$defs/row lists them
// (num_items, num_matched, policy_id, iteration_time_ns, ...; tensors by
// their labels from `names`; "plan_error" only when planning failed).
// `oracle`: the oracle's figures are numbers (else null). O(1).
nlohmann::json ReplayRowJson(const ReplayRow& r, const TensorLabeler& names, bool oracle);
// The summary as JSON (replay.schema.json#/$defs/totals); `oracle` as
// above. O(stages + matchers).
nlohmann::json ReplayTotalsJson(const ReplaySummary& s, bool oracle);

struct ReplayReportOptions {
  // Page title; "" = "swapplan replay: <trace source>".
  std::string title;
  // One-line descriptions shown in the header (the CLI's device, link and
  // compute-scale lines); may be empty.
  std::string device_text;
  std::string link_text;
  std::string compute_text;
  // Shown in the header, one line each.
  std::vector<std::string> warnings;

  // Always OK: every field is free text (kept for the one-options-struct
  // rule; a future numeric field is checked here).
  absl::Status Validate() const;
};

// Returns the data the page shows (layout above) for the replay of `trace`
// with `options` whose rows (in order, one per runtime iteration, as
// RunReplay passed them) and summary are given. InvalidArgument when a row
// names an iteration out of order or the options' device has no capacity.
absl::StatusOr<nlohmann::json> BuildReplayReportData(const Trace& trace,
                                                     const ReplayOptions& options,
                                                     absl::Span<const ReplayRow> rows,
                                                     const ReplaySummary& summary,
                                                     const ReplayReportOptions& report);

// The page: HTML with `data` embedded (escaped as RenderReportHtml does) and
// the inline stylesheet and replay script.
std::string RenderReplayReportHtml(const nlohmann::json& data);

}  // namespace swapplan

#endif  // SWAPPLAN_REPORT_REPLAY_REPORT_H_
