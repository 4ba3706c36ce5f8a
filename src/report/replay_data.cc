// BuildReplayReportData and RenderReplayReportHtml (report/replay_report.h).
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/page_script.h"
#include "swapplan/report/replay_report.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

using nlohmann::json;

json RowData(const ReplayRow& r, const TensorLabeler& names) {
  json j;
  j["iteration"] = r.iteration;
  j["trace_iteration"] = r.trace_iteration;
  j["num_ops"] = r.ops;
  j["stage"] = std::string(StageName(r.stage));
  j["policy"] = r.policy >= 0 ? json(r.policy) : json(nullptr);
  j["policy_of_other_input"] = r.policy_of_other_input;
  j["items"] = r.items;
  j["matched"] = r.matched;
  j["missed"] = r.missed;
  j["mismatched"] = r.mismatched;
  j["ooms"] = r.ooms;
  j["unresolved_ooms"] = r.unresolved_ooms;
  j["passive_swaps"] = r.passive_swaps;
  j["uses_while_off_device"] = r.uses_while_off_device;
  j["first_off_device"] = r.uses_while_off_device > 0
                              ? json(names.Label(r.first_off_device_tensor))
                              : json(nullptr);
  j["time_ns"] = r.time_ns;
  j["stall_ns"] = r.stall_ns;
  j["peak_bytes"] = r.peak_bytes;
  j["generated_policy"] = r.generated_policy >= 0 ? json(r.generated_policy) : json(nullptr);
  j["plan_error"] = r.plan_error.empty() ? json(nullptr) : json(r.plan_error);
  j["input_signature"] = absl::StrFormat("%016x", r.input.hash);
  j["policy_planner"] = r.policy_planner.empty() ? json(nullptr) : json(r.policy_planner);
  j["generated_by"] = r.generated_by.empty() ? json(nullptr) : json(r.generated_by);
  return j;
}

}  // namespace

absl::Status ReplayReportOptions::Validate() const { return absl::OkStatus(); }

absl::StatusOr<json> BuildReplayReportData(const Trace& trace, const ReplayOptions& options,
                                           absl::Span<const ReplayRow> rows,
                                           const ReplaySummary& summary,
                                           const ReplayReportOptions& report) {
  SWAPPLAN_RETURN_IF_ERROR(report.Validate());
  const DeviceModel& device = options.simulator.device;
  if (device.capacity_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("replay report: the device has no capacity (", device.capacity_bytes, ")"));
  }
  SWAPPLAN_RETURN_IF_ERROR(device.ValidateBudget());
  const int64_t budget = device.BudgetBytes();
  json d;
  d["schema"] = "swapplan-replay-report/1";
  d["title"] = report.title.empty() ? absl::StrCat("swapplan replay: ", trace.source())
                                    : report.title;
  d["trace"] = trace.source();
  d["device"] = report.device_text;
  d["link"] = report.link_text;
  d["compute"] = report.compute_text;
  d["warnings"] = report.warnings;
  d["capacity_bytes"] = device.capacity_bytes;
  d["budget_bytes"] = budget;
  d["planner"] = options.planner;
  d["matcher"] = std::string(MatcherKindName(options.matcher));
  d["policies_keyed_by"] = std::string(PolicyKeyingName(options.keying));
  d["plan_on"] = std::string(PlanningInputName(options.plan_on));
  d["totals"] = {{"iterations", summary.iterations},
                 {"warmup_iterations", summary.iterations_by_stage[0]},
                 {"genpolicy_iterations", summary.iterations_by_stage[1]},
                 {"stable_iterations", summary.iterations_by_stage[2]},
                 {"policies_generated", summary.policies_generated},
                 {"plan_failures", summary.plan_failures},
                 {"items", summary.items},
                 {"matched", summary.matched},
                 {"missed", summary.missed},
                 {"mismatched", summary.mismatched},
                 {"ooms", summary.ooms},
                 {"unresolved_ooms", summary.unresolved_ooms},
                 {"passive_swaps", summary.passive_swaps},
                 {"uses_while_off_device", summary.uses_while_off_device},
                 {"time_ns", summary.time_ns}};
  const TensorLabeler names(trace);
  json iterations = json::array();
  // Per generated policy: (iteration it was generated after, iterations
  // planned on, iterations that ran it).
  struct PolicyUse {
    std::string planner;
    std::string input;
    int32_t generated_after = -1;
    int32_t planned_on = 0;
    int32_t used = 0;
  };
  std::map<int32_t, PolicyUse> policies;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ReplayRow& r = rows[i];
    if (i > 0 && r.iteration <= rows[i - 1].iteration) {
      return absl::InvalidArgumentError(absl::StrCat("replay report: row ", i, " is iteration ",
                                                     r.iteration, ", after iteration ",
                                                     rows[i - 1].iteration));
    }
    iterations.push_back(RowData(r, names));
    if (r.generated_policy >= 0) {
      PolicyUse& p = policies[r.generated_policy];
      p.generated_after = r.iteration;
      p.planned_on = r.planned_on_iterations;
      p.planner = r.generated_by;
      p.input = absl::StrFormat("%016x", r.input.hash);
    }
    if (r.policy >= 0) ++policies[r.policy].used;
  }
  d["iterations"] = iterations;
  json ps = json::array();
  for (const auto& [id, p] : policies) {
    ps.push_back({{"id", id},
                  {"generated_after_iteration",
                   p.generated_after >= 0 ? json(p.generated_after) : json(nullptr)},
                  {"planned_on_iterations", p.planned_on},
                  {"used_in_iterations", p.used},
                  {"planner", p.planner.empty() ? json(nullptr) : json(p.planner)},
                  {"input_signature", p.input.empty() ? json(nullptr) : json(p.input)}});
  }
  d["policies"] = ps;
  // Which planner served which input (ReplaySummary::inputs).
  json inputs = json::array();
  for (const InputPlanning& in : summary.inputs) {
    json by = json::object();
    for (const auto& [planner, n] : in.by_planner) by[planner] = n;
    inputs.push_back({{"input_signature", absl::StrFormat("%016x", in.input.hash)},
                      {"input_bytes", in.input.bytes},
                      {"policies", in.policies},
                      {"policies_by_planner", by},
                      {"planner", in.planner.empty() ? json(nullptr) : json(in.planner)},
                      {"plan_failures", in.plan_failures},
                      {"no_fit", in.no_fit.empty() ? json(nullptr) : json(in.no_fit)}});
  }
  d["inputs"] = inputs;
  return d;
}

std::string RenderReplayReportHtml(const json& data) {
  return internal_report::RenderPage(
      data, internal_report::kReplayPageBody, internal_report::kReplayScript,
      "swapplan replay report, data schema swapplan-replay-report/1 (docs/report.md)");
}

}  // namespace swapplan
