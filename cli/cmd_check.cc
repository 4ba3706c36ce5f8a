// swapplan check TRACE POLICY [--json] [-o FILE] [--op-time-model auto|eq1|recorded]
//                [--iteration-time-ns X]
//                [--server ADDR [--token-file F] [--tls-ca F] [--server-timeout T]]
//
// With --server the checker runs on a planner service (cli/remote.h; not
// with --op-time-model / --iteration-time-ns); the output is the same,
// except that a policy made for another op sequence is an error there (exit
// 2, FAILED_PRECONDITION) rather than a report with that one violation.
//
// Without --op-time-model, the policy is checked on the op timeline its
// planner recorded (CheckOptionsFor: Chameleon's op_time_model and
// iteration_time_ns parameters), else auto.
//
// Replays a policy against the trace with the checker (policy/checker.h) and
// lists every violation. Exit status: 0 when the policy is clean; 2 when it
// has violations — a policy that does not fit its trace is bad input in the
// sense of SPEC §10, like a malformed trace (the report still goes to
// stdout, the count to stderr); 2 also for unreadable files.
#include <memory>
#include <optional>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cli.h"
#include "common.h"
#include "budget_flags.h"
#include "device_flags.h"
#include "flags.h"
#include "planner_flags.h"
#include "remote.h"
#include "swapplan/planners/chameleon/options.h"
#include "swapplan/sim/checker.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct CheckArgs {
  FlagSet flags;
  std::string trace;
  std::string policy;
  bool json = false;
  std::optional<std::string> output;
  // Set by the flags; each overrides what CheckOptionsFor reads from the
  // policy only when given.
  CheckOptions options;
  RemoteFlags remote;
  BudgetFlags budget;
  bool op_time_model_given = false;
  bool iteration_time_given = false;
};

std::string Bytes(int64_t b) {
  return b < 1024 ? FormatBytes(b) : absl::StrCat(FormatBytes(b), " (", b, " B)");
}

// The reserved peak under the allocator model and, when the budget is on
// allocated bytes, whether it fits as reserved bytes too.
std::string ReservedText(const Trace& t, const CheckReport& r, const BudgetBasis& basis) {
  const OpIndex b = t.iteration(r.iteration).op_begin;
  std::string s = absl::StrCat(Bytes(r.reserved_peak_bytes), " peak");
  if (r.reserved_peak_op >= 0) {
    absl::StrAppend(&s, " at op ", r.reserved_peak_op, " (", t.op_name_at(b + r.reserved_peak_op),
                    ")");
  }
  absl::StrAppend(&s, ", ", Bytes(r.reserved_fragmentation_bytes), " cached there beyond the ",
                  "allocated blocks, ", AllocatorKindName(basis.allocator.kind), " model");
  if (r.reserved_ooms > 0) {
    absl::StrAppend(&s, "; ", r.reserved_ooms, " allocations do not fit the budget (first at op ",
                    r.reserved_first_oom_op, ")",
                    basis.on == BudgetOn::kAllocated ? ": fits by allocated bytes only" : "");
  } else {
    absl::StrAppend(&s, "; fits as reserved bytes");
  }
  return s;
}

std::string RenderText(const Trace& t, const Policy& p, const CheckReport& r,
                       const CheckArgs& a, const ResolvedDevice& d, const BudgetBasis& basis) {
  std::string out;
  TextTable head({"check", a.policy});
  head.AddRow({"trace", absl::StrCat(t.source(), ", iteration ", r.iteration)});
  head.AddRow({"policy", absl::StrCat(p.planner.empty() ? "(no planner)" : p.planner, ", ",
                                      r.items, " items")});
  head.AddRow({"budget", Bytes(r.budget_bytes)});
  head.AddRow({"budget on", BudgetBasisText(basis)});
  head.AddRow({"compute", ComputeScaleText(d)});
  const bool fingerprint_ok =
      r.violations.empty() || r.violations.front().kind != ViolationKind::kFingerprintMismatch;
  if (fingerprint_ok) {
    const OpIndex b = t.iteration(r.iteration).op_begin;
    head.AddRow({"peak", r.peak_op >= 0
                             ? absl::StrCat(Bytes(r.peak_bytes), " at op ", r.peak_op, " (",
                                            t.op_name_at(b + r.peak_op), "), unswapped ",
                                            Bytes(r.peak_unswapped_bytes))
                             : Bytes(r.peak_bytes)});
    if (r.reserved_modelled) head.AddRow({"reserved", ReservedText(t, r, basis)});
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

std::string RenderJson(const Trace& t, const Policy& p, const CheckReport& r, const CheckArgs& a,
                       const std::vector<std::string>& warnings, const BudgetBasis& basis) {
  using nlohmann::json;
  json violations = json::array();
  const TensorLabeler names(t);
  for (const Violation& v : r.violations) {
    json j = {{"kind", std::string(ViolationTag(v.kind))},
              {"item", v.item},
              {"op", v.op},
              {"bytes", v.bytes},
              {"message", v.message}};
    // A violation of one item: its tensor and label (trace/tensor_label.h).
    if (v.item >= 0 && static_cast<size_t>(v.item) < p.items.size()) {
      j["tensor_id"] = p.items[v.item].tensor_id;
      j["label"] = names.Label(p.items[v.item].tensor_id);
    }
    violations.push_back(std::move(j));
  }
  json j = {{"trace", t.source()},
            {"policy_file", a.policy},
            {"iteration", r.iteration},
            {"num_items", r.items},
            {"budget_bytes", r.budget_bytes},
            {"warnings", WarningsJson(warnings)},
            {"peak_with_policy_bytes", r.peak_bytes},
            {"peak_with_policy_op", OpJson(r.peak_op)},
            {"peak_unswapped_bytes", r.peak_unswapped_bytes},
            {"d2h_bytes", r.bytes_out},
            {"num_late_swap_ins", r.late_swap_ins},
            {"swap_in_wait_ns", r.swap_in_wait_ns},
            {"num_release_waits", r.release_waits},
            {"release_wait_ns", r.release_wait_ns},
            {"clean", r.clean()},
            {"violations", std::move(violations)}};
  j.update(BudgetBasisJson(basis));
  if (r.reserved_modelled) {
    j["reserved"] = {{"reserved_peak_bytes", r.reserved_peak_bytes},
                     {"reserved_peak_op", OpJson(r.reserved_peak_op)},
                     {"fragmentation_bytes", r.reserved_fragmentation_bytes},
                     {"num_ooms", r.reserved_ooms},
                     {"first_oom_op", OpJson(r.reserved_first_oom_op)}};
  }
  return j.dump(1) + "\n";
}

absl::Status RunCheck(CheckArgs& a) {
  a.flags.Parse();
  SWAPPLAN_RETURN_IF_ERROR(a.options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(Trace recorded, ReadTraceArg(a.trace, &a.flags));
  // A missing POLICY argument is a problem of the flags already.
  if (a.policy.empty()) return a.flags.Status();
  absl::StatusOr<Policy> read_policy = ReadPolicyForCheck(a.policy);
  if (!read_policy.ok()) {
    if (a.flags.ok()) return read_policy.status();
    a.flags.Add(std::string(read_policy.status().message()));
  }
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  const Policy& policy = *read_policy;
  // The policy's own device model (its compute scale, applied by the
  // checker) when it records one; here only for the report and warnings.
  DeviceDefaults defaults = TraceDeviceDefaults(recorded);
  if (policy.device.capacity_bytes > 0) defaults.compute_time_scale = policy.device.compute_time_scale;
  FlagSet none;
  ResolvedDevice device =
      ResolveDevice({}, defaults, {.capacity = false, .bandwidths = false}, &none);
  PrintWarnings(device.warnings);
  const Trace& trace = recorded;
  // By default the op timeline the policy was planned on (CheckOptionsFor);
  // the flags override it.
  CheckOptions options = CheckOptionsFor(policy);
  if (a.op_time_model_given) {
    options.op_time_model = a.options.op_time_model;
    options.iteration_time_ns = 0;
  }
  if (a.iteration_time_given) options.iteration_time_ns = a.options.iteration_time_ns;
  if (a.remote.server && (a.op_time_model_given || a.iteration_time_given)) {
    return Error(ErrorKind::kUsage,
                 "--op-time-model and --iteration-time-ns are local only: drop --server");
  }
  // The budget basis: the flags, else what the policy was planned on, else
  // the default of its device model. The model runs whenever it is known,
  // so that a policy fitting by allocated bytes only is named.
  std::optional<BudgetBasis> planned_on;
  if (options.budget_on == BudgetOn::kReserved) {
    planned_on = BudgetBasis{BudgetOn::kReserved, options.allocator,
                           "the policy was planned with --budget-on reserved"};
  }
  const BudgetBasis basis = ResolveBudgetBasis(a.budget, policy.device, &a.flags, planned_on);
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  options.budget_on = basis.on;
  options.allocator = basis.allocator;
  options.report_reserved = true;
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport report, a.remote.server
                                                    ? RemoteCheck(a.remote, trace, policy)
                                                    : CheckPolicy(trace, policy, options));
  if (a.remote.server && report.iteration == policy.fingerprint.iteration &&
      (report.violations.empty() ||
       report.violations.front().kind != ViolationKind::kFingerprintMismatch)) {
    // The service checks allocated bytes; the allocator model runs here on
    // the same trace and policy, so the output is the local one.
    SWAPPLAN_ASSIGN_OR_RETURN(CheckReport local, CheckPolicy(trace, policy, options));
    report.budget_on = local.budget_on;
    report.reserved_modelled = local.reserved_modelled;
    report.reserved_peak_bytes = local.reserved_peak_bytes;
    report.reserved_peak_op = local.reserved_peak_op;
    report.reserved_fragmentation_bytes = local.reserved_fragmentation_bytes;
    report.reserved_ooms = local.reserved_ooms;
    report.reserved_first_oom_op = local.reserved_first_oom_op;
    for (const Violation& v : local.violations) {
      if (v.kind == ViolationKind::kReservedOverBudget) report.violations.push_back(v);
    }
  }
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput(
      a.output.value_or(""), a.json ? RenderJson(trace, policy, report, a, device.warnings, basis)
                                    : RenderText(trace, policy, report, a, device, basis)));
  if (!report.clean()) {
    return Error(ErrorKind::kMalformedInput,
                 absl::StrCat(a.policy, ": ", report.violations.size(), " violations against ",
                              trace.source()));
  }
  return absl::OkStatus();
}

}  // namespace

void SetupCheck(CLI::App& root, Action* action) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* sub = root.add_subcommand(
      "check", "Replay a policy against a trace with exact byte accounting and list every "
               "violation (exit 0 clean, 2 violations).");
  a->flags.Positional(sub, "trace", &a->trace, "Trace file", /*required=*/true);
  a->flags.Positional(sub, "policy", &a->policy, "Policy file (binary or JSON)",
                      /*required=*/true);
  // The planner's own spellings (ChameleonOptionTable): the op times the
  // release checks use are the ones Chameleon planned with.
  std::vector<OptionInfo> timing;
  for (const OptionInfo& o : ChameleonOptionTable().Describe(ChameleonOptions())) {
    if (o.name == "op_time_model" || o.name == "iteration_time_ns") timing.push_back(o);
  }
  // The setter lives in a->flags, so a plain pointer to *a stays valid for
  // as long as it can be called; capturing the shared_ptr would make *a own
  // itself (a reference cycle LeakSanitizer reports).
  CheckArgs* self = a.get();
  AddPlannerOptionFlags(sub, &a->flags, timing,
                        [self](const std::string& name, const std::string& value) -> absl::Status {
                          ChameleonOptions o;
                          SWAPPLAN_RETURN_IF_ERROR(
                              ChameleonOptionTable().SetValue(&o, name, value));
                          if (name == "op_time_model") {
                            self->options.op_time_model = o.op_time_model;
                            self->op_time_model_given = true;
                          }
                          if (name == "iteration_time_ns") {
                            self->options.iteration_time_ns = o.iteration_time_ns;
                            self->iteration_time_given = true;
                          }
                          return absl::OkStatus();
                        });
  sub->add_flag("--json", a->json, "Machine-readable JSON report (docs/json/check.schema.json)");
  a->flags.Text(sub, "-o,--output", &a->output, "Write the report to FILE instead of stdout");
  AddBudgetFlags(sub, &a->flags, &a->budget, {});
  AddRemoteFlags(sub, &a->flags, &a->remote);
  sub->callback([a, action] { *action = [a]() { return RunCheck(*a); }; });
}

}  // namespace swapplan::cli
