// The replay row and totals JSON, BuildReplayReportData and
// RenderReplayReportHtml (report/replay_report.h).
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/page_script.h"
#include "swapplan/report/replay_report.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

using nlohmann::json;

absl::Status ReplayReportOptions::Validate() const { return absl::OkStatus(); }

json ReplayRowJson(const ReplayRow& r, const TensorLabeler& names, bool oracle) {
  json j;
  j["iteration"] = r.iteration;
  j["trace_iteration"] = r.trace_iteration;
  j["num_ops"] = r.ops;
  j["stage"] = std::string(StageName(r.stage));
  j["policy_id"] = r.policy >= 0 ? json(r.policy) : json(nullptr);
  j["num_items"] = r.items;
  j["num_matched"] = r.matched;
  j["num_missed"] = r.missed;
  j["num_mismatched"] = r.mismatched;
  j["num_uses_while_off_device"] = r.uses_while_off_device;
  j["first_off_device"] = r.uses_while_off_device > 0
                              ? json(names.Label(r.first_off_device_tensor))
                              : json(nullptr);
  j["num_ooms"] = r.ooms;
  j["num_passive_swaps"] = r.passive_swaps;
  j["num_unresolved_ooms"] = r.unresolved_ooms;
  j["iteration_time_ns"] = r.time_ns;
  j["stall_ns"] = r.stall_ns;
  j["peak_with_policy_bytes"] = r.peak_bytes;
  j["sequence_stable"] = r.sequence_stable;
  j["length_change_fraction"] = r.length_change;
  j["similarity"] = r.similarity;
  j["next_stage"] = std::string(StageName(r.next_stage));
  j["generated_policy_id"] = r.generated_policy >= 0 ? json(r.generated_policy) : json(nullptr);
  j["input_signature"] = absl::StrFormat("%016x", r.input.hash);
  j["input_bytes"] = r.input.bytes;
  j["policy_of_other_input"] = r.policy_of_other_input;
  j["num_resized_larger"] = r.resized_larger;
  j["num_resized_smaller"] = r.resized_smaller;
  j["num_policy_swaps"] = r.policy_swaps;
  j["num_policy_misses"] = r.policy_misses;
  j["stage_change"] = std::string(StageChangeName(r.change));
  j["num_planned_on_iterations"] = r.planned_on_iterations;
  j["oracle_iteration_time_ns"] = oracle ? json(r.oracle_time_ns) : json(nullptr);
  if (!r.plan_error.empty()) j["plan_error"] = r.plan_error;
  j["policy_planner"] = r.policy_planner.empty() ? json(nullptr) : json(r.policy_planner);
  j["generated_by"] = r.generated_by.empty() ? json(nullptr) : json(r.generated_by);
  return j;
}

json ReplayTotalsJson(const ReplaySummary& s, bool oracle) {
  auto first = [](int32_t it) { return it >= 0 ? json(it) : json(nullptr); };
  json t;
  t["num_iterations"] = s.iterations;
  t["num_runtime_iterations"] = s.runtime_iterations;
  t["num_warmup_iterations"] = s.iterations_by_stage[0];
  t["num_genpolicy_iterations"] = s.iterations_by_stage[1];
  t["num_stable_iterations"] = s.iterations_by_stage[2];
  t["num_policies_generated"] = s.policies_generated;
  t["num_plan_failures"] = s.plan_failures;
  t["num_items"] = s.items;
  t["num_matched"] = s.matched;
  t["num_missed"] = s.missed;
  t["num_mismatched"] = s.mismatched;
  t["num_uses_while_off_device"] = s.uses_while_off_device;
  t["first_off_device_iteration"] = first(s.first_off_device_iteration);
  t["num_ooms"] = s.ooms;
  t["num_ooms_after_warmup"] = s.ooms_after_warmup;
  t["first_oom_after_warmup_iteration"] = first(s.first_oom_after_warmup_iteration);
  t["num_passive_swaps"] = s.passive_swaps;
  t["num_unresolved_ooms"] = s.unresolved_ooms;
  t["first_unresolved_oom_iteration"] = first(s.first_unresolved_oom_iteration);
  t["total_time_ns"] = s.time_ns;
  t["num_input_signatures"] = s.input_signatures;
  t["num_policy_of_other_input"] = s.policy_of_other_input;
  t["num_policy_miss_returns"] = s.policy_miss_returns;
  t["num_known_sequence_returns"] = s.known_sequence_returns;
  t["num_resized_larger"] = s.resized_larger;
  t["num_resized_smaller"] = s.resized_smaller;
  const int stable = static_cast<int>(Stage::kStable);
  t["num_stable_policy_swaps"] = s.policy_swaps_by_stage[stable];
  t["num_stable_passive_swaps"] = s.passive_swaps_by_stage[stable];
  t["num_stable_ooms"] = s.ooms_by_stage[stable];
  t["stable_time_ns"] = s.time_ns_by_stage[stable];
  t["oracle_total_time_ns"] = oracle ? json(s.oracle_time_ns) : json(nullptr);
  t["oracle_stable_time_ns"] =
      oracle ? json(s.oracle_time_ns_by_stage[stable]) : json(nullptr);
  t["num_oracle_plan_failures"] = s.oracle_plan_failures;  // 0 without --oracle
  return t;
}


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
  d["totals"] = ReplayTotalsJson(summary, options.oracle);
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
    iterations.push_back(ReplayRowJson(r, names, options.oracle));
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
