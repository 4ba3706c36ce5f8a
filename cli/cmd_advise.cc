// swapplan advise TRACE [--device NAME | --device-memory X --h2d-bandwidth ...]
// swapplan advise --model NAME [--tp N --dp N --zero N ...] [--device NAME]
//                 [--search 10s] [--executor any|matched|runtime]
//                 [-o policy.pb] [--html FILE] [--json]
//
// One answer on one screen: the planners run (compare's default set: every
// planner that plans in milliseconds; the genetic search with --search D or
// when nothing else fits) and those skipped, with why; does the iteration
// fit without swapping; the best policy found (planner, peak, overhead,
// bytes moved) and the runner-up (eval/advise.h ranks compare's feasible
// rows), what limits each (compare's notes), why the others fail, and the
// exact next commands. The --model form synthesizes the trace first (the
// flags of `swapplan synth`). --executor runtime keeps only the policies
// the eager runtime shim can run (eval/advise.h).
// Exit 0 with advice, 3 when nothing fits (after printing), 2 bad input.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "common.h"
#include "budget_flags.h"
#include "device_flags.h"
#include "flags.h"
#include "html_output.h"
#include "progress.h"
#include "step_anatomy_text.h"
#include "synth_flags.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/step_anatomy.h"
#include "swapplan/eval/advise.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/synth/synth.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct AdviseArgs {
  FlagSet flags;
  CLI::App* sub = nullptr;
  std::string trace;
  SynthFlags synth;
  std::optional<int64_t> iteration;
  std::optional<std::string> output;
  std::optional<std::string> html;
  // --search D: the genetic search (the advisor) joins, limited to D.
  std::optional<int64_t> search_ns;
  // --executor: what has to run the policy (planners/chain.h).
  std::optional<std::string> executor;
  bool json = false;
  BudgetFlags budget;
};

// The flags that describe a model for the synthesizer (the --model form).
const std::vector<std::string>& SynthOnlyFlags() {
  static const std::vector<std::string> kFlags = {
      "--model", "--layers", "--hidden", "--ffn", "--heads", "--kv-heads", "--vocab",
      "--experts", "--top-k", "--dropout", "--seq", "--micro-batch", "--micro-batches", "--tp",
      "--dp", "--zero", "--pp", "--pp-stage", "--recompute", "--dtype", "--flash",
      "--fp32-grad-accumulation", "--seed", "--moe-imbalance", "--flops-efficiency",
      "--hbm-efficiency", "--peak-flops", "--memory-bandwidth", "--interconnect-bandwidth",
      "--inference", "--batch", "--prompt", "--generate"};
  return kFlags;
}
const std::vector<std::string>& DeviceFlagNames() {
  static const std::vector<std::string> kFlags = {
      "--device", "--device-memory", "--reserve", "--h2d-bandwidth", "--d2h-bandwidth",
      "--copy-latency", "--half-duplex", "--compute-scale"};
  return kFlags;
}

// `s` as one shell word: as is when it has only safe characters, else in
// single quotes.
std::string ShellWord(const std::string& s) {
  const bool safe = !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                                      "QRSTUVWXYZ0123456789_-+=./:,@%") ==
                                      std::string::npos;
  if (safe) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// " --tp 1 --dp 8" for the flags of `names` given on the command line, as
// given (flags without a value by the name of their value).
std::string Given(const CLI::App* sub, const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    const CLI::Option* o = sub->get_option_no_throw(name);
    if (o == nullptr || o->count() == 0) continue;
    if (o->get_expected_max() == 0) {  // a flag
      const std::string v = o->results().empty() ? "true" : o->results().back();
      const bool on = v != "false" && v != "0" && v != "-1";
      absl::StrAppend(&out, " ", on ? name : absl::StrCat("--no-", name.substr(2)));
      continue;
    }
    for (const std::string& v : o->results()) absl::StrAppend(&out, " ", name, " ", ShellWord(v));
  }
  return out;
}

std::string Percent(double x) { return absl::StrFormat("%+.2f%%", 100.0 * x); }

std::string PolicyLine(const PlannerOutcome& r) {
  const SimulationResult& s = *r.sim;
  return absl::StrCat(r.planner, ": peak ", FormatBytes(s.peak_bytes), ", iteration ",
                      FormatDurationNs(s.iteration_time_ns), " (", Percent(s.overhead_vs_ideal),
                      " over ideal), ", FormatBytes(BytesMoved(r)), " moved (",
                      FormatBytes(s.bytes_d2h), " out, ", FormatBytes(s.bytes_h2d), " in), ",
                      r.items, " items");
}

nlohmann::json PolicyJson(const Trace& t, const Comparison& c, int32_t row) {
  if (row < 0) return nullptr;
  const PlannerOutcome& r = c.rows[row];
  const SimulationResult& s = *r.sim;
  return {{"planner", r.planner},
          {"peak_with_policy_bytes", s.peak_bytes},
          {"iteration_time_ns", s.iteration_time_ns},
          {"overhead_vs_ideal_fraction", s.overhead_vs_ideal},
          {"stall_ns", s.stall_ns},
          {"recompute_ns", s.recompute_ns},
          {"d2h_bytes", s.bytes_d2h},
          {"h2d_bytes", s.bytes_h2d},
          {"num_items", r.items},
          {"note", OutcomeNote(t, c.iteration, r)}};
}

struct Rendered {
  std::string verdict;
  std::vector<std::string> next_steps;
};

absl::Status Run(AdviseArgs& a) {
  a.flags.Parse();
  const bool model_form = a.trace.empty();
  if (model_form && a.sub->count("--model") == 0) {
    a.flags.Add("advise: give a TRACE, or a model to synthesize with --model NAME");
  }
  if (!model_form) {
    for (const std::string& f : SynthOnlyFlags()) {
      if (a.sub->count(f) > 0) {
        a.flags.Add(absl::StrCat(f, " describes a model to synthesize: give TRACE or --model, "
                                    "not both"));
      }
    }
  } else if (a.sub->count("--compute-scale") > 0) {
    a.flags.Add("--compute-scale: a synthesized trace has the device's own op durations");
  }
  Trace trace;
  ResolvedDevice device;
  std::string trace_arg;  // TRACE in the next-step commands
  std::string synth_step;
  if (model_form) {
    SWAPPLAN_ASSIGN_OR_RETURN(SynthOptions o, BuildSynthOptions(a.synth, &a.flags, &device));
    SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
    trace_arg = absl::StrCat(a.synth.model, ".trace");
    // synth takes no --reserve (the budget is advise's business).
    synth_step = absl::StrCat(
        "swapplan synth", Given(a.sub, SynthOnlyFlags()),
        Given(a.sub, {"--device", "--device-memory", "--h2d-bandwidth", "--d2h-bandwidth",
                      "--copy-latency", "--half-duplex"}),
        " -o ", trace_arg);
    ProgressBar synth_bar("synth");
    SWAPPLAN_ASSIGN_OR_RETURN(
        trace, SynthesizeTrace(o, trace_arg, [&synth_bar](int32_t done, int32_t iterations) {
          synth_bar.Update(done, iterations);
        }));
  } else {
    SWAPPLAN_ASSIGN_OR_RETURN(trace, ReadTraceArg(a.trace, &a.flags));
    device = ResolveDevice(a.synth.device, TraceDeviceDefaults(trace), {}, &a.flags);
    trace_arg = ShellWord(a.trace);
  }
  CompareOptions options;
  options.keep_policies = true;
  options.iteration = ResolveIteration(a.iteration, trace, &a.flags);
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  PrintWarnings(device.warnings);
  options.simulator.device = device.model;
  // The default set (every planner that plans in milliseconds), and the
  // search when asked.
  ChainExecutor executor = ChainExecutor::kAny;
  if (a.executor) ParseChainExecutor(*a.executor, &executor);  // a Choice: always parses
  PlannerSelection selection = AdvisePlanners(a.search_ns.value_or(0), executor);
  options.planners = selection.run;
  options.planner_options = selection.options;
  const BudgetBasis basis = ResolveBudgetBasis(a.budget, device.model, &a.flags);
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  options.budget_on = basis.on;
  options.allocator = basis.allocator;
  options.reserved_method = ResolveReservedMethod(a.budget);
  options.model_reserved = true;
  ProgressBar bar("advise");
  SWAPPLAN_ASSIGN_OR_RETURN(Comparison c,
                            ComparePlanners(trace, options, nullptr, CompareBar(&bar, options)));
  bar.Finish();
  if (!c.AnyFeasible() && !a.search_ns && executor == ChainExecutor::kAny) {
    // Nothing of the default set fits: the search joins.
    CompareOptions search = options;
    search.planners = {"advisor"};
    search.planner_options = {{"advisor", "time-limit-ns", absl::StrCat(kFallbackSearchNs)}};
    ProgressBar search_bar("advise: search");
    SWAPPLAN_ASSIGN_OR_RETURN(Comparison s, ComparePlanners(trace, search, nullptr,
                                                            CompareBar(&search_bar, search)));
    search_bar.Finish();
    for (PlannerOutcome& row : s.rows) c.rows.push_back(std::move(row));
    selection.run.push_back("advisor");
    std::erase_if(selection.skipped, [](const PlannerSelection::Skipped& k) {
      return k.planner == "advisor";
    });
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Advice advice, ChooseAdvice(c, executor));
  std::vector<std::string> refused(c.rows.size());  // why the executor cannot run a row
  for (const Advice::NotExecutable& n : advice.not_executable) refused[n.row] = n.reason;
  const std::string out_path = a.output.value_or("");
  if (advice.best >= 0 && !out_path.empty()) {
    SWAPPLAN_RETURN_IF_ERROR(WritePolicy(*c.rows[advice.best].policy, out_path));
  }
  if (a.html) SWAPPLAN_RETURN_IF_ERROR(WriteHtmlReport(*a.html, trace, c, device, {}));

  // Where the peak is and, for a first step, the steady-state estimate.
  SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
  SWAPPLAN_ASSIGN_OR_RETURN(StepAnatomy anatomy, AnalyzeStep(trace, curve, c.iteration));
  const std::vector<std::pair<std::string, std::string>> anatomy_rows =
      AnatomyLines(trace, curve, anatomy, c.budget_bytes);

  // The verdict.
  const std::string peak_at = OpText(trace, c.iteration, c.peak.local_op);
  std::string verdict =
      advice.fits_without_swapping
          ? absl::StrCat("fits without swapping: unswapped peak ", FormatBytes(c.peak.bytes),
                         " at ", peak_at, ", ", FormatBytes(advice.headroom_bytes),
                         " under the budget")
          : absl::StrCat("does not fit without swapping: unswapped peak ",
                         FormatBytes(c.peak.bytes), " at ", peak_at, " is ",
                         FormatBytes(-advice.headroom_bytes), " over the budget",
                         advice.best >= 0 ? "" : "; no planner reaches it");
  // The next steps.
  const std::string dev = Given(a.sub, DeviceFlagNames());
  // plan and advise take the budget flags too (report does not).
  const std::string planning =
      dev + Given(a.sub, {"--budget-on", "--allocator", "--alloc-conf", "--reserved-method"});
  std::vector<std::string> next;
  if (!synth_step.empty()) next.push_back(synth_step);
  if (advice.best >= 0) {
    const std::string planner = c.rows[advice.best].planner;
    std::string policy = out_path;
    if (c.rows[advice.best].items == 0) {
      policy.clear();  // nothing to swap: no policy to write or show
    } else if (policy.empty()) {
      policy = "policy.pb";
      if (planner == "chameleon") {
        // (--explain plans on allocated bytes only.)
        next.push_back(absl::StrCat("swapplan plan ", trace_arg, planning,
                                    basis.on == BudgetOn::kReserved ? "" : " --explain", " -o ",
                                    policy));
      } else {
        const std::string input =
            model_form ? Given(a.sub, SynthOnlyFlags()) : absl::StrCat(" ", trace_arg);
        next.push_back(absl::StrCat("swapplan advise", input, planning,
                                    Given(a.sub, {"--executor"}), " -o ", policy));
      }
    }
    next.push_back(absl::StrCat("swapplan report ", trace_arg, dev,
                                policy.empty() ? "" : absl::StrCat(" --policy ", policy),
                                " -o report.html"));
  } else {
    next.push_back(absl::StrCat("swapplan report ", trace_arg, dev, " -o report.html"));
    next.push_back("then reduce the memory: a smaller micro-batch or sequence (`swapplan whatif` "
                   "finds the largest that fits), or shard the state (--tp, --pp, --zero with --dp)");
  }

  std::string text;
  if (a.json) {
    nlohmann::json j;
    j["trace"] = trace.source();
    j["model"] = model_form ? nlohmann::json(a.synth.model) : nlohmann::json(nullptr);
    j["iteration"] = c.iteration;
    j["num_ops"] = c.num_ops;
    j["device"] = DeviceJson(device);
    j["warnings"] = WarningsJson(device.warnings);
    j["budget_bytes"] = c.budget_bytes;
    j["peak_unswapped_bytes"] = c.peak.bytes;
    j["peak_unswapped_op"] = c.peak.local_op;
    j["ideal_iteration_time_ns"] = c.ideal_time_ns;
    j["fits_without_swapping"] = advice.fits_without_swapping;
    j["headroom_bytes"] = advice.headroom_bytes;
    j.update(BudgetBasisJson(basis));
    j["verdict"] = verdict;
    nlohmann::json anatomy_json = AnatomyJson(trace, anatomy);
    j["peak_bytes_by_kind"] = anatomy_json["peak_bytes_by_kind"];
    j["first_step"] = anatomy_json["first_step"];
    j["best"] = PolicyJson(trace, c, advice.best);
    j["runner_up"] = PolicyJson(trace, c, advice.runner_up);
    nlohmann::json rows = nlohmann::json::array();
    for (const PlannerOutcome& r : c.rows) {
      rows.push_back({{"planner", r.planner},
                      {"feasible", r.feasible},
                      {"reserved_peak_bytes", r.reserved_modelled
                                                  ? nlohmann::json(r.reserved_peak_bytes)
                                                  : nlohmann::json()},
                      {"fits_reserved", r.reserved_modelled ? nlohmann::json(r.reserved_fits)
                                                            : nlohmann::json()},
                      {"note", OutcomeNote(trace, c.iteration, r)},
                      {"not_executable_reason",
                       refused[rows.size()].empty() ? nlohmann::json()
                                                    : nlohmann::json(refused[rows.size()])}});
    }
    j["rows"] = rows;
    j["executor"] = std::string(ChainExecutorName(executor));
    j["planners_run"] = selection.run;
    nlohmann::json skipped = nlohmann::json::array();
    for (const PlannerSelection::Skipped& k : selection.skipped) {
      skipped.push_back({{"planner", k.planner}, {"reason", k.reason}});
    }
    j["planners_skipped"] = skipped;
    j["next_steps"] = next;
    j["policy_file"] = advice.best >= 0 && !out_path.empty() ? nlohmann::json(out_path)
                                                             : nlohmann::json(nullptr);
    text = j.dump(2) + "\n";
  } else {
    absl::StrAppend(&text, "trace      ", trace.source(), ", iteration ", c.iteration, " (",
                    c.num_ops, " ops)\n");
    absl::StrAppend(&text, "device     ", DeviceText(device.model), "; budget ",
                    FormatBytes(c.budget_bytes), "; ", LinkText(device.model), "\n");
    absl::StrAppend(&text, "compute    ",
                    model_form ? absl::StrCat("op durations from the synthesizer's roofline for ",
                                              device.model.name)
                               : ComputeScaleText(device),
                    "\n");
    absl::StrAppend(&text, "planners   ran ", selection.run.size(), ": ",
                    absl::StrJoin(selection.run, ", "), "\n");
    for (const PlannerSelection::Skipped& k : selection.skipped) {
      absl::StrAppend(&text, "skipped    ", k.planner, ": ", k.reason, "\n");
    }
    absl::StrAppend(&text, "budget on  ", BudgetBasisText(basis), "\n");
    if (executor != ChainExecutor::kAny) {
      absl::StrAppend(&text, "executor   ", ChainExecutorName(executor),
                      ": only the policies it can run are candidates\n");
    }
    absl::StrAppend(&text, "verdict    ", verdict, "\n");
    for (const auto& [label, row] : anatomy_rows) {
      absl::StrAppend(&text, absl::StrFormat("%-11s", label),
                      row, "\n");
    }
    for (int32_t row : {advice.best, advice.runner_up}) {
      if (row < 0) continue;
      absl::StrAppend(&text, row == advice.best ? "best       " : "runner-up  ",
                      PolicyLine(c.rows[row]), "\n");
      absl::StrAppend(&text, "           limits: ", OutcomeNote(trace, c.iteration, c.rows[row]),
                      "\n");
    }
    std::string others;
    for (size_t i = 0; i < c.rows.size(); ++i) {
      const PlannerOutcome& r = c.rows[i];
      const int32_t row = static_cast<int32_t>(i);
      if (!r.feasible || r.unlimited_memory || row == advice.best || row == advice.runner_up ||
          !refused[i].empty()) {
        continue;
      }
      absl::StrAppend(&others, others.empty() ? "" : ", ", r.planner, " ",
                      Percent(r.sim->overhead_vs_ideal));
    }
    if (!others.empty()) absl::StrAppend(&text, "also fits  ", others, "\n");
    // With the budget on allocated bytes: the policies that fit by them but
    // that the allocator model cannot place within the budget.
    std::string allocated_only;
    for (const PlannerOutcome& r : c.rows) {
      if (basis.on != BudgetOn::kAllocated || !r.feasible || r.unlimited_memory ||
          !r.reserved_modelled || r.reserved_fits) {
        continue;
      }
      absl::StrAppend(&allocated_only, allocated_only.empty() ? "" : ", ", r.planner);
    }
    if (!allocated_only.empty()) {
      absl::StrAppend(&text, "reserved   ", allocated_only,
                      " fit by allocated bytes but not by reserved ones under the ",
                      AllocatorKindName(basis.allocator.kind),
                      " model (--budget-on reserved plans for them)\n");
    }
    for (size_t i = 0; i < c.rows.size(); ++i) {
      const PlannerOutcome& r = c.rows[i];
      if (r.feasible || r.unlimited_memory) continue;
      absl::StrAppend(&text, "not        ", r.planner, ": ", OutcomeNote(trace, c.iteration, r),
                      "\n");
    }
    for (const Advice::NotExecutable& n : advice.not_executable) {
      absl::StrAppend(&text, "refused    ", c.rows[n.row].planner, " ",
                      Percent(c.rows[n.row].sim->overhead_vs_ideal), " (the ",
                      ChainExecutorName(executor), " executor cannot run it): ", n.reason, "\n");
    }
    if (advice.best >= 0 && !out_path.empty()) {
      absl::StrAppend(&text, "wrote      ", out_path, " (", c.rows[advice.best].planner, ")\n");
    }
    for (size_t i = 0; i < next.size(); ++i) {
      absl::StrAppend(&text, i == 0 ? "next       " : "           ", next[i], "\n");
    }
  }
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput("", text));
  if (advice.best < 0) {
    return Error(ErrorKind::kInfeasible,
                 absl::StrCat("no planner reaches the budget of ",
                              BytesExact(c.budget_bytes), " on ", trace.source()));
  }
  return absl::OkStatus();
}

}  // namespace

void SetupAdvise(CLI::App& root, Action* action) {
  auto a = std::make_shared<AdviseArgs>();
  CLI::App* sub = root.add_subcommand(
      "advise",
      "One-screen answer for a trace (or a model, synthesized first with synth's flags) on a "
      "device: fits without swapping or not, the best policy and the runner-up (peak, overhead, "
      "bytes moved), what limits them, and the next command to run. Exit 3 when nothing fits.");
  a->sub = sub;
  a->flags.Positional(sub, "trace", &a->trace,
                      "Trace file (or describe a model with --model and synth's flags)",
                      /*required=*/false);
  AddSynthConfigFlags(sub, &a->flags, &a->synth,
                      {.reserve = true, .compute_scale = true, .roofline = true,
                       .remote_tier = true, .default_device = ""});
  AddIterationFlag(sub, &a->flags, &a->iteration);
  AddBudgetFlags(sub, &a->flags, &a->budget, {.planning = true});
  a->flags.Text(sub, "-o,--output", &a->output, "Write the best policy (.json: JSON, else binary)");
  a->flags.Text(sub, "--html", &a->html, "Also write the HTML report page (docs/report.md)");
  a->flags.Duration(sub, "--search", &a->search_ns,
                    absl::StrCat("Also run the genetic search (the advisor) for at most this "
                                 "long, e.g. 10s; without it, the search runs (",
                                 FormatDurationNs(kFallbackSearchNs),
                                 ") only when no planner of the default set fits"));
  a->flags.Choice(sub, "--executor", &a->executor, {"any", "matched", "runtime"},
                  "What has to run the policy: any (the simulator), matched (a matcher on later "
                  "iterations: no reordering, no pool), runtime (the eager runtime shim: also "
                  "no window across the iteration boundary, host tier only); only policies it "
                  "can run are candidates (default any)");
  sub->add_flag("--json", a->json, "Machine-readable JSON report (docs/json/advise.schema.json)");
  sub->callback([a, action] { *action = [a]() -> absl::Status { return Run(*a); }; });
}

}  // namespace swapplan::cli
