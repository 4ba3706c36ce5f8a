// The HTML report: one self-contained page (inline CSS, SVG drawn by an
// inline script, no network access) that shows a planner comparison of one
// iteration — the unswapped memory curve, each policy's simulated curve and
// the budget line, the compute / d2h / h2d stream timeline of the featured
// policies with zoom, their swapped tensors (name, size, out/in ops, stall
// caused), the compare table and what limits each policy. The engine of
// `swapplan report` and of `compare --html`, `advise --html`.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(Comparison c, ComparePlanners(trace, o));  // keep_policies
//   ReportOptions ro;  ro.title = "llama2-7b on h100-80gb";
//   SWAPPLAN_ASSIGN_OR_RETURN(nlohmann::json data, BuildReportData(trace, c, ro));
//   std::string html = RenderReportHtml(data);
//
// The page embeds everything it shows as one JSON document (BuildReportData,
// schema "swapplan-report/1", below) in <script type="application/json"
// id="swapplan-data">, and its script draws it when the page loads; when it
// is done the script sets data-report-status="ok" on <body> (or "error: ..."
// when drawing failed), which tests read from the DOM.
//
//   data = {
//     schema, title, trace, iteration, num_ops, op_durations, device, link,
//     compute, warnings[], budget_bytes, peak_unswapped_bytes,
//     peak_unswapped_op, persistent_bytes, ideal_iteration_time_ns,
//     advice: {fits_without_swapping, headroom_bytes, best, runner_up},
//     op_names[]  (distinct names), ops: {name[] (index into op_names), phase[]},
//     unswapped_bytes[]        one value per local op
//     reserved: {allocator, alloc_conf, unswapped_bytes[] (per local op),
//                peak_unswapped_bytes}: the allocator model's reserved
//                bytes (curve/reserved_curve.h, unlimited capacity), drawn
//                dashed over each allocated-bytes curve
//     compare[]: {planner, feasible, status, peak_with_policy_bytes,
//                 iteration_time_ns, overhead_vs_ideal_fraction, stall_ns,
//                 recompute_ns, d2h_bytes, h2d_bytes, num_items, note}
//     policies[]: {name, row, featured, bytes_in_use[] (per local op),
//                  peak_bytes, iteration_time_ns, reserved_peak_bytes,
//                  reserved_bytes[] (per local op; absent for a policy
//                      with a schedule: its positions are not ops),
//                  timeline (featured only): {op, recompute, stall, d2h, h2d}:
//                      flat [start_ns, end_ns, index, ...] per lane,
//                  swapped[] (featured only): {tensor_id, name, size_bytes,
//                      action, swap_out_op, swap_in_op, stall_ns}}
//   }
//
// Timeline conventions (the simulator's, sim/simulator.h): times from the
// start of the iteration, one lane per stream; "stall" spans are the compute
// stream idle waiting for a copy; a copy's index is its policy item.
//
//   compute |op 0|op 1|stall|op 2 ...
//   d2h          |== out item 0 ==|
//   h2d                      |= in item 0 =|
//
// Complexity: BuildReportData O(ops + tensors + events) for the curve, then
// per policy one simulation with the timeline, O(ops + items), and one
// allocator replay, O(steps log blocks); the page is
// O(ops x policies) in size. RenderReportHtml is O(size of data).
#ifndef SWAPPLAN_REPORT_HTML_REPORT_H_
#define SWAPPLAN_REPORT_HTML_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/alloc/allocator_model.h"
#include "swapplan/eval/compare.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct ReportOptions {
  // Page title; "" = "swapplan report: <trace source>".
  std::string title;
  // One-line descriptions shown in the header (the CLI's device, link and
  // compute-scale lines); may be empty.
  std::string device_text;
  std::string link_text;
  std::string compute_text;
  // Shown in the header, one line each.
  std::vector<std::string> warnings;
  // Rows of the comparison (indices) whose timelines and swapped-tensor
  // tables the page carries; empty = the advised best and runner-up
  // (eval/advise.h). Curves are drawn for every row with a valid policy.
  std::vector<int32_t> featured_rows;
  // The allocator model of the reserved curves (capacity ignored: a curve
  // has no budget); PyTorch's caching allocator with its defaults unless
  // set.
  AllocatorOptions allocator;

  // InvalidArgument for a negative featured row.
  absl::Status Validate() const;
};

// Returns the data the page shows (layout above). `c` must come from
// ComparePlanners with keep_policies (rows without a policy get no curve).
// InvalidArgument for bad options or a featured row out of range; the
// simulator's errors for a policy that cannot be simulated again.
absl::StatusOr<nlohmann::json> BuildReportData(const Trace& trace, const Comparison& c,
                                               const ReportOptions& options);

// The columns one compare row shares between `compare --json` and the
// page's table: planner, feasible, num_items and the simulated
// peak_with_policy_bytes, iteration_time_ns, overhead_vs_ideal_fraction,
// stall_ns, recompute_ns, d2h_bytes, h2d_bytes (null without a simulation).
// Written into `row`, an object. O(1).
void SetCompareRowColumns(const PlannerOutcome& r, nlohmann::json* row);

// The page: HTML with `data` embedded (every "</" escaped so that no string
// closes the script element) and the inline stylesheet and script.
std::string RenderReportHtml(const nlohmann::json& data);

// The embedded data of a page written by RenderReportHtml, parsed back
// (tests, tools). InvalidArgument when the page has no data element.
absl::StatusOr<nlohmann::json> ExtractReportData(const std::string& html);

}  // namespace swapplan

#endif  // SWAPPLAN_REPORT_HTML_REPORT_H_
