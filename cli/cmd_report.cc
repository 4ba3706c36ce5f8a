// swapplan report TRACE [--policy P ...] [--device NAME] [--device-memory X
//                 [--reserve X] | --oversubscription 2x] [--h2d-bandwidth ...] [--iteration N]
//                 [--planners a,b] -o report.html
//
// Writes one self-contained HTML page (report/html_report.h): every planner
// of `compare` on one iteration, plus each --policy (judged the same way, a
// row named by its file), the memory curves against the budget, the stream
// timeline and swapped tensors of the given policies (without --policy: the
// advised best and runner-up), the compare table and what limits each.
// Without a device capacity, the first policy's budget is the budget. Exit
// 0 when the page is written, even when nothing fits (the page says so).
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli.h"
#include "common.h"
#include "device_flags.h"
#include "flags.h"
#include "html_output.h"
#include "progress.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::cli {
namespace {

struct ReportArgs {
  FlagSet flags;
  std::string trace;
  DeviceFlags device;
  std::optional<double> oversubscription;
  std::vector<std::string> policies;
  std::optional<std::string> planners;
  std::optional<int64_t> iteration;
  std::optional<std::string> output;
};

absl::Status Run(ReportArgs& args) {
  args.flags.Parse();
  const std::string output = args.output.value_or("");
  if (output.empty()) args.flags.Add("report: -o FILE is required (the HTML page to write)");
  CompareOptions options;
  options.keep_policies = true;
  for (absl::string_view name : absl::StrSplit(args.planners.value_or(""), ',', absl::SkipEmpty())) {
    if (FindPlanner(name) == nullptr) {
      args.flags.Add(
          absl::StrCat("--planners: unknown planner '", name, "' (known: ", PlannerNames(), ")"));
      continue;
    }
    options.planners.emplace_back(name);
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadTraceArg(args.trace, &args.flags));
  std::vector<Policy> policies;
  for (const std::string& path : args.policies) {
    absl::StatusOr<Policy> p = ReadPolicy(path);
    if (!p.ok()) {
      args.flags.Add(absl::StrCat("--policy ", path, ": ", p.status().message()));
      continue;
    }
    policies.push_back(*std::move(p));
  }
  DeviceDefaults defaults = TraceDeviceDefaults(trace);
  std::optional<int64_t> iteration = args.iteration;
  if (!policies.empty()) {
    const Policy& first = policies.front();
    if (first.BudgetBytes() > 0 && first.BudgetBytes() != kUnlimitedCapacityBytes) {
      defaults.capacity_bytes = first.BudgetBytes();
    }
    if (defaults.h2d_bandwidth_bytes_per_s <= 0) {
      defaults.h2d_bandwidth_bytes_per_s = first.device.h2d_bandwidth_bytes_per_s;
    }
    if (defaults.d2h_bandwidth_bytes_per_s <= 0) {
      defaults.d2h_bandwidth_bytes_per_s = first.device.d2h_bandwidth_bytes_per_s;
    }
    if (first.device.compute_time_scale > 0) {
      defaults.compute_time_scale = first.device.compute_time_scale;
    }
    // The iteration the policy was planned for, unless --iteration says.
    if (!iteration) iteration = first.fingerprint.iteration;
  }
  options.iteration = ResolveIteration(iteration, trace, &args.flags);
  options.oversubscription = CheckOversubscription(args.oversubscription, args.device, &args.flags);
  const ResolvedDevice device =
      ResolveDevice(args.device, defaults, {.capacity = !args.oversubscription.has_value()},
                    &args.flags);
  SWAPPLAN_RETURN_IF_ERROR(args.flags.Status());
  PrintWarnings(device.warnings);
  options.simulator.device = device.model;
  ProgressBar bar("report");
  SWAPPLAN_ASSIGN_OR_RETURN(Comparison c,
                            ComparePlanners(trace, options, nullptr, CompareBar(&bar, options)));
  bar.Finish();
  // The given policies, judged like the planners' (JudgePolicy).
  std::vector<int32_t> featured;
  if (!policies.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim,
                              Simulator::Create(trace, c.iteration, c.simulator));
    for (size_t i = 0; i < policies.size(); ++i) {
      PlannerOutcome row;
      row.planner = std::filesystem::path(args.policies[i]).filename().string();
      CompareOptions judge = options;
      judge.keep_policies = true;
      absl::Status judged = JudgePolicy(trace, sim, c.budget_bytes, judge,
                                        std::move(policies[i]), &row);
      if (!judged.ok()) {
        return absl::Status(judged.code(),
                            absl::StrCat("--policy ", args.policies[i], ": ", judged.message()));
      }
      featured.push_back(static_cast<int32_t>(c.rows.size()));
      c.rows.push_back(std::move(row));
    }
  }
  return WriteHtmlReport(output, trace, c, device, featured);
}

}  // namespace

void SetupReport(CLI::App& root, Action* action) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* sub = root.add_subcommand(
      "report",
      "Write one self-contained HTML page (no network needed): memory curves of the trace and "
      "of each policy against the budget, the compute/d2h/h2d stream timeline with zoom, the "
      "swapped tensors, the compare table and what limits each policy (docs/report.md).");
  args->flags.Positional(sub, "trace", &args->trace, "Trace file", /*required=*/true);
  AddDeviceFlags(sub, &args->flags, &args->device, {.remote_tier = true});
  AddOversubscriptionFlag(sub, &args->flags, &args->oversubscription);
  // A plain pointer: the parser lives in args->flags, inside *args (a
  // shared_ptr here would be a reference cycle).
  std::vector<std::string>* policies = &args->policies;
  args->flags.Repeated(
      sub, "--policy",
      [policies](const std::string& path) -> std::string {
        policies->push_back(path);
        return "";
      },
      "A policy to show (repeatable): its curve, timeline and swapped tensors, next to every "
      "planner's; without one, the best and runner-up planners' are shown",
      "FILE");
  args->flags.Text(sub, "--planners", &args->planners,
                   absl::StrCat("Comma-separated planners for the compare table, of ",
                                PlannerNames(), " (default: compare's default set)"));
  AddIterationFlag(sub, &args->flags, &args->iteration);
  args->flags.Text(sub, "-o,--output", &args->output, "The HTML page to write (required)");
  sub->callback([args, action] { *action = [args]() -> absl::Status { return Run(*args); }; });
}

}  // namespace swapplan::cli
