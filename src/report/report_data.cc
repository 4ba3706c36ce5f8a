// BuildReportData and ExtractReportData (report/html_report.h).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "swapplan/alloc/budget_basis.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/reserved_curve.h"
#include "swapplan/eval/advise.h"
#include "swapplan/report/html_report.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

using nlohmann::json;

json FlatSpans(const std::vector<TimelineSpan>& spans, SpanKind kind) {
  json out = json::array();
  for (const TimelineSpan& s : spans) {
    if (s.kind != kind) continue;
    out.push_back(s.start_ns);
    out.push_back(s.end_ns);
    out.push_back(s.index);
  }
  return out;
}

json CompareRow(const Trace& trace, const Comparison& c, const PlannerOutcome& r) {
  json row;
  row["status"] = r.unlimited_memory ? "reference"
                  : !r.planned     ? "no plan"
                  : !r.valid       ? "invalid"
                  : r.feasible     ? "feasible"
                                   : "OOM";
  SetCompareRowColumns(r, &row);
  row["note"] = OutcomeNote(trace, c.iteration, r);
  return row;
}

// Swapped tensors of a policy with the stall each caused: the stall of
// every op whose last-finishing copy was the tensor's (all ops listed:
// top_stall_ops = ops).
json SwappedTable(const Policy& p, const SimulationResult& r, const TensorLabeler& names) {
  absl::flat_hash_map<uint64_t, int64_t> stall;
  for (const StallSite& s : r.top_stalls) stall[s.tensor_id] += s.stall_ns;
  json out = json::array();
  for (const PolicyItem& it : p.items) {
    json row;
    row["tensor_id"] = it.tensor_id;
    row["name"] = names.Label(it.tensor_id);  // trace/tensor_label.h, full form
    row["size_bytes"] = it.size_bytes;
    row["action"] = std::string(ItemActionName(it.action));
    row["swap_out_op"] = it.swap_out_op;
    row["swap_in_op"] = it.swap_in_op;
    auto st = stall.find(it.tensor_id);
    row["stall_ns"] = st == stall.end() ? 0 : st->second;
    out.push_back(row);
  }
  return out;
}

}  // namespace

void SetCompareRowColumns(const PlannerOutcome& r, json* row) {
  json& j = *row;
  j["planner"] = r.planner;
  j["feasible"] = r.feasible;
  const char* keys[] = {"peak_with_policy_bytes", "iteration_time_ns",
                        "overhead_vs_ideal_fraction", "stall_ns", "recompute_ns", "d2h_bytes",
                        "h2d_bytes"};
  if (r.sim) {
    const SimulationResult& s = *r.sim;
    j[keys[0]] = s.peak_bytes;
    j[keys[1]] = s.iteration_time_ns;
    j[keys[2]] = s.overhead_vs_ideal;
    j[keys[3]] = s.stall_ns;
    j[keys[4]] = s.recompute_ns;
    j[keys[5]] = s.bytes_d2h;
    j[keys[6]] = s.bytes_h2d;
  } else {
    for (const char* k : keys) j[k] = nullptr;
  }
  j["num_items"] = r.items;
}

absl::Status ReportOptions::Validate() const {
  for (int32_t r : featured_rows) {
    if (r < 0) {
      return absl::InvalidArgumentError(absl::StrCat("featured_rows: row ", r, " is negative"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<json> BuildReportData(const Trace& trace, const Comparison& c,
                                     const ReportOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  if (c.iteration < 0 || c.iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(
        absl::StrCat("report: iteration ", c.iteration, " is not in ", trace.source()));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Advice advice, ChooseAdvice(c));
  std::vector<int32_t> featured = options.featured_rows;
  if (featured.empty()) {
    if (advice.best >= 0) featured.push_back(advice.best);
    if (advice.runner_up >= 0) featured.push_back(advice.runner_up);
  }
  for (int32_t r : featured) {
    if (r >= static_cast<int32_t>(c.rows.size())) {
      return absl::InvalidArgumentError(absl::StrCat("featured_rows: row ", r, " of ",
                                                     c.rows.size(), " rows"));
    }
  }
  const IterationInfo& it = trace.iteration(c.iteration);
  json d;
  d["schema"] = "swapplan-report/1";
  d["title"] = options.title.empty() ? absl::StrCat("swapplan report: ", trace.source())
                                     : options.title;
  d["trace"] = trace.source();
  d["iteration"] = c.iteration;
  d["num_ops"] = c.num_ops;
  d["op_durations"] = std::string(DurationSourceName(c.durations));
  d["device"] = options.device_text;
  d["link"] = options.link_text;
  d["compute"] = options.compute_text;
  d["warnings"] = options.warnings;
  d["budget_bytes"] = c.budget_bytes;
  d["peak_unswapped_bytes"] = c.peak.bytes;
  d["peak_unswapped_op"] = c.peak.local_op;
  d["persistent_bytes"] = c.persistent_bytes;
  d["ideal_iteration_time_ns"] = c.ideal_time_ns;
  d["advice"] = {{"fits_without_swapping", advice.fits_without_swapping},
                 {"headroom_bytes", advice.headroom_bytes},
                 {"best", advice.best >= 0 ? json(c.rows[advice.best].planner) : json(nullptr)},
                 {"runner_up", advice.runner_up >= 0 ? json(c.rows[advice.runner_up].planner)
                                                     : json(nullptr)}};
  // Op names, each distinct name once.
  absl::flat_hash_map<NameId, int32_t> name_index;
  json names = json::array(), op_name = json::array(), op_phase = json::array();
  for (OpIndex op = it.op_begin; op < it.op_end; ++op) {
    const NameId n = trace.op(op).name;
    auto [pos, inserted] = name_index.try_emplace(n, static_cast<int32_t>(names.size()));
    if (inserted) names.push_back(trace.op_name(n));
    op_name.push_back(pos->second);
    op_phase.push_back(static_cast<int>(trace.op(op).phase));
  }
  d["op_names"] = names;
  d["phases"] = json::array();
  for (int p = 0; p < kNumPhases; ++p) d["phases"].push_back(PhaseName(static_cast<Phase>(p)));
  d["ops"] = {{"name", op_name}, {"phase", op_phase}};
  SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
  d["unswapped_bytes"] = std::vector<int64_t>(curve.unswapped_bytes().begin() + it.op_begin,
                                              curve.unswapped_bytes().begin() + it.op_end);
  AllocatorOptions model = options.allocator;
  model.capacity_bytes = std::numeric_limits<int64_t>::max();
  SWAPPLAN_ASSIGN_OR_RETURN(AllocationSequence unswapped, SequenceOfIteration(trace, c.iteration));
  SWAPPLAN_ASSIGN_OR_RETURN(ReservedCurve reserved,
                            ReplayAllocations(unswapped, model, {.pinned_segments = 0}));
  d["reserved"] = {{"allocator", std::string(AllocatorKindName(model.kind))},
                   {"alloc_conf", AllocConfText(model)},
                   {"unswapped_bytes", reserved.reserved_bytes},
                   {"peak_unswapped_bytes", reserved.peak_reserved_bytes}};
  json compare = json::array();
  for (const PlannerOutcome& r : c.rows) compare.push_back(CompareRow(trace, c, r));
  d["compare"] = compare;

  // Every valid policy again, with the timeline and every stall site.
  SimulatorOptions so = c.simulator;
  so.record_timeline = true;
  so.top_stall_ops = std::max<int32_t>(1, c.num_ops);
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(trace, c.iteration, so));
  const TensorLabeler labels(trace);
  json policies = json::array();
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const PlannerOutcome& r = c.rows[i];
    if (!r.policy || !r.valid || r.unlimited_memory) continue;
    SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult s, sim.Run(*r.policy));
    const bool is_featured =
        std::find(featured.begin(), featured.end(), static_cast<int32_t>(i)) != featured.end();
    json p;
    p["name"] = r.planner;
    p["row"] = i;
    p["featured"] = is_featured;
    p["bytes_in_use"] = s.bytes_in_use;
    p["peak_bytes"] = s.peak_bytes;
    p["iteration_time_ns"] = s.iteration_time_ns;
    // A policy the resolver refuses on this device has no reserved curve
    // (the checker passed it, so this is not expected; the page goes on).
    absl::StatusOr<ReservedCurve> rc =
        PolicyReservedCurve(trace, *r.policy, c.simulator.device, model, {.pinned_segments = 0});
    if (rc.ok()) {
      p["reserved_peak_bytes"] = rc->peak_reserved_bytes;
      if (rc->reserved_bytes.size() == s.bytes_in_use.size() && r.policy->schedule.empty()) {
        p["reserved_bytes"] = rc->reserved_bytes;
      }
    }
    if (is_featured) {
      p["timeline"] = {{"op", FlatSpans(s.timeline, SpanKind::kOp)},
                       {"recompute", FlatSpans(s.timeline, SpanKind::kRecompute)},
                       {"stall", FlatSpans(s.timeline, SpanKind::kStall)},
                       {"d2h", FlatSpans(s.timeline, SpanKind::kD2H)},
                       {"h2d", FlatSpans(s.timeline, SpanKind::kH2D)}};
      p["swapped"] = SwappedTable(*r.policy, s, labels);
    }
    policies.push_back(p);
  }
  d["policies"] = policies;
  return d;
}

absl::StatusOr<json> ExtractReportData(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"swapplan-data\">";
  const size_t a = html.find(open);
  const size_t b = a == std::string::npos ? a : html.find("</script>", a);
  if (b == std::string::npos) {
    return absl::InvalidArgumentError("report: the page has no swapplan-data script element");
  }
  json d = json::parse(html.substr(a + open.size(), b - a - open.size()), nullptr, false);
  if (d.is_discarded()) {
    return absl::InvalidArgumentError("report: the swapplan-data element is not JSON");
  }
  return d;
}

}  // namespace swapplan
