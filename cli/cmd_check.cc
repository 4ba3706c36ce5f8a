// swapplan check TRACE POLICY [--json] [--op-times auto|eq1|recorded] [--iteration-time X]
//
// Without --op-times, the policy is checked on the op timeline its planner
// recorded (CheckOptionsFor: Chameleon's op_time_model and
// iteration_time_ns parameters), else auto.
//
// Replays a policy against the trace with the checker (policy/checker.h) and
// lists every violation. Exit status: 0 when the policy is clean; 2 when it
// has violations — a policy that does not fit its trace is bad input in the
// sense of SPEC §10, like a malformed trace (the report still goes to
// stdout, the count to stderr); 2 also for unreadable files.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cli.h"
#include "trace_input.h"
#include "swapplan/sim/checker.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct CheckArgs {
  std::string trace;
  std::string policy;
  bool json = false;
  // "" = the op-time model the policy's planner recorded (CheckOptionsFor).
  std::string op_times;
  std::string iteration_time;
};

std::string Bytes(int64_t b) {
  return b < 1024 ? FormatBytes(b) : absl::StrCat(FormatBytes(b), " (", b, " B)");
}

std::string RenderText(const Trace& t, const Policy& p, const CheckReport& r,
                       const CheckArgs& a) {
  std::string out;
  TextTable head({"check", a.policy});
  head.AddRow({"trace", absl::StrCat(t.source(), ", iteration ", r.iteration)});
  head.AddRow({"policy", absl::StrCat(p.planner.empty() ? "(no planner)" : p.planner, ", ",
                                      r.items, " items")});
  head.AddRow({"budget", Bytes(r.budget_bytes)});
  const bool fingerprint_ok =
      r.violations.empty() || r.violations.front().kind != ViolationKind::kFingerprintMismatch;
  if (fingerprint_ok) {
    const OpIndex b = t.iteration(r.iteration).op_begin;
    head.AddRow({"peak", r.peak_op >= 0
                             ? absl::StrCat(Bytes(r.peak_bytes), " at op ", r.peak_op, " (",
                                            t.op_name_at(b + r.peak_op), "), unswapped ",
                                            Bytes(r.peak_unswapped_bytes))
                             : Bytes(r.peak_bytes)});
    head.AddRow({"copied out", Bytes(r.bytes_out)});
    head.AddRow({"late swap-ins", absl::StrCat(r.late_swap_ins, " (",
                                               FormatDurationNs(static_cast<int64_t>(
                                                   r.swap_in_wait_ns)),
                                               " of waits on the stall-free timeline)")});
    if (r.release_waits > 0) {
      head.AddRow({"release waits",
                   absl::StrCat(r.release_waits, " planned (",
                                FormatDurationNs(static_cast<int64_t>(r.release_wait_ns)),
                                " of waits, each delaying the ops after it)")});
    }
    if (!p.schedule.empty() || !p.pool.empty()) {
      head.AddRow({"advisor", absl::StrCat(p.schedule.empty() ? "recorded order" : "own schedule",
                                           ", ", p.pool.classes.size(), " pool classes (",
                                           Bytes(p.pool.TotalBytes()), ")")});
    }
  }
  head.AddRow({"result", r.clean() ? std::string("clean")
                                   : absl::StrCat(r.violations.size(), " violations")});
  absl::StrAppend(&out, head.Render(2));
  for (const Violation& v : r.violations) absl::StrAppend(&out, "  ", v.message, "\n");
  return out;
}

std::string RenderJson(const Trace& t, const CheckReport& r, const CheckArgs& a) {
  using nlohmann::json;
  json violations = json::array();
  for (const Violation& v : r.violations) {
    violations.push_back({{"kind", std::string(ViolationTag(v.kind))},
                          {"item", v.item},
                          {"op", v.op},
                          {"bytes", v.bytes},
                          {"message", v.message}});
  }
  json j = {{"trace", t.source()},
            {"policy", a.policy},
            {"iteration", r.iteration},
            {"items", r.items},
            {"budget_bytes", r.budget_bytes},
            {"peak_bytes", r.peak_bytes},
            {"peak_op", r.peak_op},
            {"peak_unswapped_bytes", r.peak_unswapped_bytes},
            {"bytes_out", r.bytes_out},
            {"late_swap_ins", r.late_swap_ins},
            {"swap_in_wait_ns", r.swap_in_wait_ns},
            {"release_waits", r.release_waits},
            {"release_wait_ns", r.release_wait_ns},
            {"clean", r.clean()},
            {"violations", std::move(violations)}};
  return j.dump(1) + "\n";
}

absl::Status RunCheck(const CheckArgs& a) {
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(a.trace));
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, ReadPolicyForCheck(a.policy));
  // By default the timeline the policy was planned on; the flags override.
  CheckOptions options = CheckOptionsFor(policy);
  if (!a.op_times.empty()) {
    ParseOpTimeModel(a.op_times, &options.op_time_model);  // checked by CLI11
    options.iteration_time_ns = 0;
  }
  if (!a.iteration_time.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(options.iteration_time_ns, ParseDurationNs(a.iteration_time));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport report, CheckPolicy(trace, policy, options));
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput(
      "", a.json ? RenderJson(trace, report, a) : RenderText(trace, policy, report, a)));
  if (!report.clean()) {
    return absl::InvalidArgumentError(absl::StrCat(a.policy, ": ", report.violations.size(),
                                                   " violations against ", trace.source()));
  }
  return absl::OkStatus();
}

}  // namespace

void SetupCheck(CLI::App& root, Action* action) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* sub = root.add_subcommand(
      "check", "Replay a policy against a trace with exact byte accounting and list every "
               "violation (exit 0 clean, 2 violations).");
  sub->add_option("trace", a->trace, "Trace file")->required();
  sub->add_option("policy", a->policy, "Policy file (binary or JSON)")->required();
  sub->add_flag("--json", a->json, "Machine-readable JSON report");
  sub->add_option("--op-times", a->op_times,
                  "Op times for release checks: auto, eq1 or recorded (default: the model the "
                  "policy's planner recorded, else auto)")
      ->check(CLI::IsMember({"auto", "eq1", "recorded"}));
  sub->add_option("--iteration-time", a->iteration_time,
                  "T_iter for Eq. (1) (default: recorded wall time)");
  sub->callback([a, action] { *action = [a]() { return RunCheck(*a); }; });
}

}  // namespace swapplan::cli
