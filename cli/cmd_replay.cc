// swapplan replay TRACE [--device NAME] [--device-memory X] [--reserve X]
//                [--matcher fuzzy|naive] [--planner NAME] [--json] [--rows all|changes|none]
//                [--html FILE] ...
//
// Runs a multi-iteration trace through the stage tracker, a planner, a
// matcher and the evaluation simulator with Algorithm 3 (varying/replay.h),
// one row per runtime iteration, then a summary. Long runs: `--rows changes`
// prints only rows that differ from the previous one (in anything but the
// iteration number), and progress goes to stderr every two seconds.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "common.h"
#include "device_flags.h"
#include "flags.h"
#include "html_output.h"
#include "planner_flags.h"
#include "progress.h"
#include "swapplan/planners/chain.h"
#include "swapplan/planners/registry.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/varying/segment.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"
#include "swapplan/eval/replay.h"
#include "swapplan/eval/replay_execute.h"
#include "swapplan/report/replay_report.h"

namespace swapplan::cli {
namespace {

struct ReplayArgs {
  FlagSet flags;
  std::string trace;
  DeviceFlags device;
  std::optional<std::string> matcher;     // fuzzy (default) or naive
  std::optional<std::string> planner;     // chain (default)
  std::optional<std::string> chain;       // the chain's planners, in order
  std::optional<int64_t> search_time_limit_ns;  // the chain's search
  std::optional<std::string> boundary;    // optimizer (default) or trace
  std::optional<std::string> similarity;  // histogram (default) or op-ids
  std::optional<std::string> rows;        // all (default), changes, none
  std::optional<int64_t> window;
  std::optional<double> max_length_change;
  std::optional<double> min_similarity;
  std::optional<int64_t> warmup_iterations;
  std::optional<int64_t> genpolicy_iterations;
  std::optional<int64_t> runtime_key_mask_bits;
  std::optional<int64_t> iterations;
  std::optional<int64_t> explain;
  // Chameleon's --layers and --min-tensor-bytes (its option table).
  ChameleonOptions chameleon;
  std::optional<std::string> oom_handling;  // all (default) or warmup
  std::optional<std::string> oom_persistent;  // move (default) or keep
  std::optional<std::string> policies;      // input (default) or single
  std::optional<std::string> plan_on;       // observed (default), envelope, iteration
  std::optional<double> spread_margin;
  std::optional<double> verify_margin;
  std::optional<int64_t> max_policy_misses;
  std::optional<int64_t> remember;
  bool oracle = false;
  bool compare_matchers = false;
  // --model-runtime (the replay of what the runtime does) and --execute
  // host (also run it through the runtime shim, eval/replay_execute.h).
  bool model_runtime = false;
  std::optional<std::string> execute;
  std::optional<std::string> work_dir;  // --execute: keep records and policies there
  bool json = false;
  std::optional<std::string> output;
  std::optional<std::string> html;  // the HTML report page (report/replay_report.h)

  std::string rows_mode() const { return rows.value_or("all"); }
  int32_t explain_iteration() const { return static_cast<int32_t>(explain.value_or(-1)); }
};

std::string Note(const ReplayRow& r, const TensorLabeler& names) {
  std::string note;
  if (r.uses_while_off_device > 0) {
    absl::StrAppend(&note, "CRASH: ", names.Label(r.first_off_device_tensor), " used at op ",
                    r.first_off_device_op, " while off device; ");
  }
  if (r.unresolved_ooms > 0) {
    absl::StrAppend(&note, "CRASH: OOM at op ", r.first_oom_op, " (", FormatBytes(r.first_oom_missing_bytes),
                    " missing); ");
  }
  if (!r.sequence_stable) {
    absl::StrAppend(&note, absl::StrFormat("sequence changed (length %+.1f%%, similarity %.3f); ",
                                           100.0 * r.length_change, r.similarity));
  }
  if (r.policy_of_other_input) absl::StrAppend(&note, "another input's policy; ");
  if (r.change == StageChange::kPolicyMisses) {
    absl::StrAppend(&note, "policy missed ", r.policy_misses, " times in Stable; ");
  } else if (r.change == StageChange::kKnownSequence) {
    absl::StrAppend(&note, "known sequence; ");
  }
  if (r.next_stage != r.stage) {
    absl::StrAppend(&note, "next ", StageName(r.next_stage), "; ");
  }
  if (r.generated_policy >= 0) {
    absl::StrAppend(&note, "policy ", r.generated_policy, " made",
                    r.generated_by.empty() ? "" : absl::StrCat(" by ", r.generated_by), "; ");
  }
  if (!r.plan_error.empty() && r.plan_error_repeated) {
    absl::StrAppend(&note, "no policy (as said for this input); ");
  } else if (!r.plan_error.empty()) {
    // "<trace> (runtime iteration N): iteration 0: X bytes (...) still
    // missing at op ..." -> "X bytes (...) still missing at op ...".
    absl::string_view e = r.plan_error;
    if (size_t at = e.find(": iteration 0: "); at != absl::string_view::npos) {
      e.remove_prefix(at + 15);
    }
    if (size_t at = e.find(" to fit the budget"); at != absl::string_view::npos) e = e.substr(0, at);
    absl::StrAppend(&note, "no policy: ", e, "; ");
  }
  if (note.size() >= 2) note.resize(note.size() - 2);
  return note;
}

// Columns compared by --rows changes (all but the iteration numbers and the
// tracker's figures).
std::string Signature(const ReplayRow& r) {
  return absl::StrCat(r.ops, "|", StageName(r.stage), "|", r.policy, "|", r.items, "|", r.matched,
                      "|", r.missed, "|", r.mismatched, "|", r.uses_while_off_device, "|", r.ooms,
                      "|", r.passive_swaps, "|", r.unresolved_ooms, "|", r.time_ns, "|",
                      StageName(r.next_stage), "|", r.generated_policy >= 0);
}

std::vector<std::string> Cells(const ReplayRow& r, const TensorLabeler& names) {
  return {absl::StrCat(r.iteration),
          absl::StrCat(r.trace_iteration),
          absl::StrCat(r.ops),
          std::string(StageName(r.stage)),
          r.policy >= 0 ? absl::StrCat(r.policy) : "-",
          absl::StrCat(r.items),
          absl::StrCat(r.matched),
          absl::StrCat(r.missed),
          absl::StrCat(r.mismatched),
          absl::StrCat(r.uses_while_off_device),
          absl::StrCat(r.ooms),
          absl::StrCat(r.passive_swaps),
          FormatDurationNs(r.time_ns),
          Note(r, names)};
}

const std::vector<std::string> kHeader = {"iter", "trace it", "ops",      "stage", "policy",
                                          "items", "matched", "missed", "wrong", "off-dev",
                                          "ooms", "passive", "time",    "note"};

std::string Summary(const ReplaySummary& s, const ReplayArgs& a, const ResolvedDevice& d) {
  std::string out;
  absl::StrAppend(&out, "\nsummary     ", s.iterations, " of ", s.runtime_iterations,
                  " runtime iterations: WarmUp ", s.iterations_by_stage[0], ", GenPolicy ",
                  s.iterations_by_stage[1], ", Stable ", s.iterations_by_stage[2], "\n");
  std::string by;
  for (const auto& [planner, n] : s.policies_by_planner) {
    absl::StrAppend(&by, by.empty() ? "" : ", ", planner, " ", n);
  }
  absl::StrAppend(&out, "policies    ", s.policies_generated, " generated by ",
                  a.planner.value_or("chain"), by.empty() ? "" : absl::StrCat(" (", by, ")"),
                  ", ", s.plan_failures, " planning failures, matcher ",
                  a.matcher.value_or("fuzzy"), "\n");
  for (const InputPlanning& in : s.inputs) {
    if (in.policies == 0 && in.no_fit.empty()) continue;
    std::string made;
    for (const auto& [planner, n] : in.by_planner) {
      absl::StrAppend(&made, made.empty() ? "" : ", ", planner, " ", n);
    }
    absl::StrAppend(&out, "input       ", absl::StrFormat("%016x", in.input.hash), " (",
                    FormatBytes(in.input.bytes), "): ",
                    in.policies > 0 ? absl::StrCat(in.policies, " policies (", made, ")")
                                    : std::string("no policy"),
                    in.no_fit.empty()
                        ? std::string()
                        : absl::StrCat("; ", in.plan_failures, " planning failures, first in "
                                       "iteration ", in.no_fit_iteration, ": ", in.no_fit,
                                       "; Algorithm 3 handles what does not fit"),
                    "\n");
  }
  absl::StrAppend(&out, "items       ", s.items, " applied: ", s.matched, " matched, ", s.missed,
                  " missed, ", s.mismatched, " mismatched (swapped the wrong tensor)\n");
  absl::StrAppend(&out, "crashes     ", s.uses_while_off_device, " uses while off device",
                  s.first_off_device_iteration >= 0
                      ? absl::StrCat(" (first in iteration ", s.first_off_device_iteration, ")")
                      : std::string(),
                  ", ", s.unresolved_ooms, " unresolved OOMs",
                  s.first_unresolved_oom_iteration >= 0
                      ? absl::StrCat(" (first in iteration ", s.first_unresolved_oom_iteration, ")")
                      : std::string(),
                  "\n");
  absl::StrAppend(&out, "ooms        ", s.ooms, " allocation failures handled by Algorithm 3 (",
                  s.ooms_after_warmup, " after warm-up",
                  s.first_oom_after_warmup_iteration >= 0
                      ? absl::StrCat(", first in iteration ", s.first_oom_after_warmup_iteration)
                      : std::string(),
                  "), ", s.passive_swaps, " passive swap-outs\n");
  absl::StrAppend(&out, "stable      ", s.policy_swaps_by_stage[2], " policy swaps, ",
                  s.passive_swaps_by_stage[2], " passive swaps, ", s.ooms_by_stage[2],
                  " allocation failures; resized ", s.resized_larger, " larger ",
                  s.resized_smaller, " smaller; ", s.input_signatures, " inputs, ",
                  s.policy_of_other_input, " ran another input's policy; ", s.policy_miss_returns,
                  " returns to GenPolicy, ", s.known_sequence_returns, " to Stable on a known sequence\n");
  if (s.oracle_time_ns > 0) {
    absl::StrAppend(&out, "oracle      ", FormatDurationNs(s.oracle_time_ns), " (",
                    s.oracle_plan_failures, " failures), replay/oracle ",
                    static_cast<double>(s.time_ns) / s.oracle_time_ns, "; stable ",
                    static_cast<double>(s.time_ns_by_stage[2]) /
                        std::max<int64_t>(1, s.oracle_time_ns_by_stage[2]),
                    "\n");
  }
  absl::StrAppend(&out, "time        ", FormatDurationNs(s.time_ns),
                  a.execute ? " on the op clock (executed: the trace's op times, no stalls)"
                            : " simulated",
                  s.iterations > 0
                      ? absl::StrCat(", ", FormatDurationNs(s.time_ns / s.iterations),
                                     " per iteration")
                      : std::string(),
                  "\n");
  absl::StrAppend(&out, "device      ", DeviceText(d.model), "; ", LinkText(d.model), "\n");
  absl::StrAppend(&out, "compute     ", ComputeScaleText(d), "\n");
  return out;
}

std::string ExplainText(const ReplayRow& r, const TensorLabeler& names) {
  std::string out = absl::StrCat("\nitems of runtime iteration ", r.iteration, " (policy ",
                                 r.policy >= 0 ? absl::StrCat(r.policy) : "-", ", stage ",
                                 StageName(r.stage), "; local ops):\n");
  if (r.reports.empty()) return out + "  (no policy applied)\n";
  std::vector<std::string> header = {"item", "outcome", "tensor", "expected", "swap-out",
                                     "next use", "swap-in", "off device"};
  TextTable t(header);
  for (size_t k = 0; k < r.reports.size(); ++k) {
    const ItemReport& x = r.reports[k];
    const bool found = x.outcome != ItemOutcome::kMissed;
    t.AddRow({absl::StrCat(k), std::string(ItemOutcomeName(x.outcome)),
              found ? names.Label(x.tensor_id, LabelForm::kCell) : "-",
              x.expected_tensor_id != 0 ? names.Label(x.expected_tensor_id, LabelForm::kCell) : "-",
              found ? absl::StrCat(x.decision_op) : "-",
              x.next_use_op >= 0 ? absl::StrCat(x.next_use_op) : "-",
              found ? absl::StrCat(x.swap_in_op) : "-", x.used_while_off_device ? "YES" : "no"});
  }
  return out + t.Render(2);
}

// Per item: ids with their labels (trace/tensor_label.h), null when none.
nlohmann::json ReportsJson(const ReplayRow& r, const TensorLabeler& names) {
  using nlohmann::json;
  json a = json::array();
  for (const ItemReport& x : r.reports) {
    json j;
    const bool found = x.outcome != ItemOutcome::kMissed;
    const bool expected = x.expected_tensor_id != 0;
    j["outcome"] = std::string(ItemOutcomeName(x.outcome));
    j["tensor_id"] = found ? json(x.tensor_id) : json(nullptr);
    j["label"] = found ? json(names.Label(x.tensor_id)) : json(nullptr);
    j["expected_tensor_id"] = expected ? json(x.expected_tensor_id) : json(nullptr);
    j["expected_label"] = expected ? json(names.Label(x.expected_tensor_id)) : json(nullptr);
    j["swap_out_op"] = x.decision_op;
    j["next_use_op"] = x.next_use_op;
    j["swap_in_op"] = x.swap_in_op;
    j["used_while_off_device"] = x.used_while_off_device;
    a.push_back(j);
  }
  return a;
}

// A row of --json: the library's row (report/replay_report.h), with the
// items of the --explain iteration.
nlohmann::json RowJson(const ReplayRow& r, int explain, bool oracle, const TensorLabeler& names) {
  nlohmann::json j = ReplayRowJson(r, names, oracle);
  if (r.iteration == explain) j["items_report"] = ReportsJson(r, names);
  return j;
}

// Totals of the two matchers in columns (--compare-matchers).
std::string SideBySide(const ReplaySummary& a, MatcherKind ka, const ReplaySummary& b,
                       MatcherKind kb) {
  std::string out = absl::StrFormat("\n%-40s %14s %14s\n", "matchers side by side",
                                    MatcherKindName(ka), MatcherKindName(kb));
  auto line = [&](const char* what, int64_t x, int64_t y) {
    absl::StrAppend(&out, absl::StrFormat("%-40s %14d %14d\n", what, x, y));
  };
  const int st = static_cast<int>(Stage::kStable);
  line("items matched", a.matched, b.matched);
  line("items mismatched (wrong tensor)", a.mismatched, b.mismatched);
  line("items missed", a.missed, b.missed);
  line("uses while off device (crashes)", a.uses_while_off_device, b.uses_while_off_device);
  line("unresolved OOMs (crashes)", a.unresolved_ooms, b.unresolved_ooms);
  line("allocation failures", a.ooms, b.ooms);
  line("allocation failures after warm-up", a.ooms_after_warmup, b.ooms_after_warmup);
  line("passive swap-outs", a.passive_swaps, b.passive_swaps);
  line("Stable: policy swaps", a.policy_swaps_by_stage[st], b.policy_swaps_by_stage[st]);
  line("Stable: passive swaps", a.passive_swaps_by_stage[st], b.passive_swaps_by_stage[st]);
  line("policies generated", a.policies_generated, b.policies_generated);
  line("returns to GenPolicy (policy misses)", a.policy_miss_returns, b.policy_miss_returns);
  absl::StrAppend(&out, absl::StrFormat("%-40s %14s %14s\n", "simulated time",
                                        FormatDurationNs(a.time_ns), FormatDurationNs(b.time_ns)));
  return out;
}

// Totals of the simulated replay and of the executed run in columns, then
// the iterations whose compared figures differ (--execute).
std::string SimulatedVsExecuted(const ReplaySummary& a, const ReplaySummary& b,
                                const std::vector<RowDifference>& diffs,
                                int32_t iterations_differing) {
  std::string out = absl::StrFormat("\n%-40s %14s %14s\n", "simulated vs executed (host)",
                                    "simulated", "executed");
  auto line = [&](const char* what, int64_t x, int64_t y) {
    absl::StrAppend(&out, absl::StrFormat("%-40s %14d %14d%s\n", what, x, y, x == y ? "" : "  *"));
  };
  const int st = static_cast<int>(Stage::kStable);
  line("WarmUp iterations", a.iterations_by_stage[0], b.iterations_by_stage[0]);
  line("GenPolicy iterations", a.iterations_by_stage[1], b.iterations_by_stage[1]);
  line("Stable iterations", a.iterations_by_stage[2], b.iterations_by_stage[2]);
  line("policies generated", a.policies_generated, b.policies_generated);
  line("planning failures", a.plan_failures, b.plan_failures);
  line("items applied", a.items, b.items);
  line("items found (matched + mismatched)", a.matched + a.mismatched, b.matched + b.mismatched);
  line("items missed", a.missed, b.missed);
  line("uses while off device", a.uses_while_off_device, b.uses_while_off_device);
  line("allocation failures", a.ooms, b.ooms);
  line("allocation failures after warm-up", a.ooms_after_warmup, b.ooms_after_warmup);
  line("unresolved OOMs", a.unresolved_ooms, b.unresolved_ooms);
  line("passive swap-outs", a.passive_swaps, b.passive_swaps);
  line("Stable: passive swaps", a.passive_swaps_by_stage[st], b.passive_swaps_by_stage[st]);
  line("Stable: policy swaps", a.policy_swaps_by_stage[st], b.policy_swaps_by_stage[st]);
  line("policy swaps (all stages)",
       a.policy_swaps_by_stage[0] + a.policy_swaps_by_stage[1] + a.policy_swaps_by_stage[2],
       b.policy_swaps_by_stage[0] + b.policy_swaps_by_stage[1] + b.policy_swaps_by_stage[2]);
  line("returns to GenPolicy (policy misses)", a.policy_miss_returns, b.policy_miss_returns);
  absl::StrAppend(&out, "iterations differing   ", iterations_differing, " of ", a.iterations,
                  " (compared per iteration: stage, policy, items, found, missed, "
                  "uses while off device, allocation failures, passive swaps, unresolved OOMs, "
                  "policy swaps, next stage, policy made; time is not compared)\n");
  const size_t shown = std::min<size_t>(diffs.size(), 20);
  for (size_t k = 0; k < shown; ++k) {
    absl::StrAppend(&out, "  iteration ", diffs[k].iteration, ": ", diffs[k].field,
                    " simulated ", diffs[k].simulated, ", executed ", diffs[k].executed, "\n");
  }
  if (diffs.size() > shown) {
    absl::StrAppend(&out, "  ... ", diffs.size() - shown, " more (--json lists all)\n");
  }
  return out;
}

absl::Status Run(ReplayArgs& args) {
  args.flags.Parse();
  ReplayOptions o;
  if (args.matcher && !ParseMatcherKind(*args.matcher, &o.matcher)) {
    args.flags.Add(absl::StrCat("--matcher: unknown matcher '", *args.matcher, "' (fuzzy, naive)"));
  }
  o.planner = args.planner.value_or("chain");
  if (args.chain) {
    if (absl::Status st = PlannerChainOptionTable().SetValue(&o.chain, "planners", *args.chain);
        !st.ok()) {
      args.flags.Add(absl::StrCat("--chain: ", st.message()));
    } else if (absl::Status v = o.chain.Validate(); !v.ok()) {
      args.flags.Add(absl::StrCat("--chain: ", v.message()));
    }
  }
  if (args.search_time_limit_ns) o.chain.search_time_limit_ns = *args.search_time_limit_ns;
  if ((args.chain || args.search_time_limit_ns) && o.planner != "chain") {
    args.flags.Add("--chain and --search-time-limit configure --planner chain (the default)");
  }
  if (FindPlanner(o.planner) == nullptr) {
    args.flags.Add(absl::StrCat("--planner: unknown planner '", o.planner, "' (known: ",
                                PlannerNames(), ")"));
  }
  o.chameleon = args.chameleon;
  o.runtime_key_bits = static_cast<int32_t>(args.runtime_key_mask_bits.value_or(32));
  o.chameleon.runtime_key_mask_bits = o.runtime_key_bits;
  if (args.boundary && !ParseIterationBoundary(*args.boundary, &o.boundary)) {
    args.flags.Add(
        absl::StrCat("--boundary: unknown boundary '", *args.boundary, "' (optimizer, trace)"));
  }
  if (args.similarity && !ParseSequenceSimilarity(*args.similarity, &o.tracker.similarity)) {
    args.flags.Add(absl::StrCat("--similarity: unknown measure '", *args.similarity,
                                "' (histogram, op-ids)"));
  }
  o.matcher_options.window_ops = static_cast<int32_t>(args.window.value_or(0));
  o.tracker.max_length_change = args.max_length_change.value_or(0.05);
  o.tracker.min_similarity = args.min_similarity.value_or(0.95);
  o.tracker.warmup_iterations = static_cast<int32_t>(args.warmup_iterations.value_or(2));
  o.tracker.genpolicy_iterations = static_cast<int32_t>(args.genpolicy_iterations.value_or(5));
  o.max_iterations = static_cast<int32_t>(args.iterations.value_or(0));
  o.explain_iteration = args.explain_iteration();
  o.oom_handling_in_all_stages = args.oom_handling.value_or("all") == "all";
  o.simulator.oom_persistent_victims = args.oom_persistent.value_or("move") == "move";
  if (args.policies) ParsePolicyKeying(*args.policies, &o.keying);  // a Choice: valid
  if (args.plan_on) ParsePlanningInput(*args.plan_on, &o.plan_on);  // a Choice: valid
  if (args.spread_margin) o.envelope.spread_margin = *args.spread_margin;
  if (args.verify_margin) o.verify_margin = *args.verify_margin;
  if (args.max_policy_misses) {
    o.tracker.max_policy_misses = static_cast<int32_t>(*args.max_policy_misses);
  }
  if (args.remember) o.remembered_sequences = static_cast<int32_t>(*args.remember);
  o.oracle = args.oracle;
  if (args.model_runtime || args.execute) {
    // What the runtime does (ReplayOptions::model_runtime): keyed policies,
    // observed planning and remembered sequences as the replay's options
    // say; its provider gets records, not an envelope (a usage error).
    o.model_runtime = true;
    const char* why = args.execute ? "--execute" : "--model-runtime";
    if (o.plan_on == PlanningInput::kEnvelope) {
      args.flags.Add(absl::StrCat(why, " needs --plan-on observed or iteration (the runtime's "
                                  "provider gets a key's last records, not an envelope)"));
    }
  }
  if (args.execute) {
    if (args.oracle) args.flags.Add("--execute: --oracle is not available (run it without)");
    if (args.compare_matchers) {
      args.flags.Add("--execute: --compare-matchers is not available (run it without)");
    }
    if (args.explain) args.flags.Add("--execute: --explain is not available (run it without)");
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Trace recorded, ReadTraceArg(args.trace, &args.flags));
  const ResolvedDevice device =
      ResolveDevice(args.device, TraceDeviceDefaults(recorded), {}, &args.flags);
  SWAPPLAN_RETURN_IF_ERROR(args.flags.Status());
  PrintWarnings(device.warnings);
  // The simulator scales op durations by device.compute_time_scale.
  const Trace& trace = recorded;
  const TensorLabeler names(trace);
  o.simulator.device = device.model;

  const std::string output = args.output.value_or("");
  const std::string rows_mode = args.rows_mode();
  const int32_t explain = args.explain_iteration();
  const bool to_stdout = output.empty() || output == "-";
  const bool stream = to_stdout && !args.json;
  std::string text;
  nlohmann::json rows = nlohmann::json::array();
  std::string last_signature;
  ReplayRow previous;
  bool previous_printed = true, have_previous = false;
  // Text rows are rendered one at a time with fixed widths (a long replay
  // streams); the widths fit 7-digit counts.
  auto render = [](const std::vector<std::string>& cells) {
    static const int kWidth[] = {6, 8, 6, 9, 6, 6, 7, 6, 5, 7, 5, 7, 10};
    std::string line = absl::StrFormat("%-*s", kWidth[0], cells[0]);
    for (size_t i = 1; i + 1 < cells.size(); ++i) {
      absl::StrAppend(&line, " ",
                      i == 3 ? absl::StrFormat("%-*s", kWidth[i], cells[i])
                             : absl::StrFormat("%*s", kWidth[i], cells[i]));
    }
    absl::StrAppend(&line, "  ", cells.back());
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  auto emit = [&](const std::string& s) {
    if (stream) {
      std::cout << s << std::flush;
    } else {
      text += s;
    }
  };
  bool header_done = args.json || rows_mode == "none";
  const int32_t segments =
      static_cast<int32_t>(RuntimeIterations(trace, o.boundary).size());
  const int64_t replay_total = o.max_iterations > 0 ? std::min(o.max_iterations, segments)
                                                    : segments;
  ProgressBar bar("replay", ProgressEnabled() && !stream);  // streamed rows show progress
  std::string explained;
  std::vector<ReplayRow> html_rows;  // every row, for --html
  auto on_row = [&](const ReplayRow& r) {
    if (args.html) html_rows.push_back(r);
    if (r.iteration == explain && !args.json) explained = ExplainText(r, names);
    if (!header_done) {
      emit(render(kHeader));
      header_done = true;
    }
    const std::string sig = Signature(r);
    const bool show = rows_mode == "all" || (rows_mode == "changes" && sig != last_signature);
    if (show && rows_mode == "changes" && have_previous && !previous_printed) {
      // The row before a change, so both sides of it are visible.
      if (args.json) {
        rows.push_back(RowJson(previous, explain, o.oracle, names));
      } else {
        emit(render(Cells(previous, names)));
      }
    }
    if (show) {
      if (args.json) {
        rows.push_back(RowJson(r, explain, o.oracle, names));
      } else {
        emit(render(Cells(r, names)));
      }
    }
    previous = r;
    previous_printed = show;
    have_previous = true;
    last_signature = sig;
    bar.Update(r.iteration + 1, replay_total);
  };
  // --execute: the simulated replay first (rows kept for the comparison),
  // then the executed run, whose rows are the report's.
  std::optional<ReplaySummary> simulated;
  std::vector<ReplayRow> simulated_rows;
  std::vector<RowDifference> diffs;
  int32_t iterations_differing = 0;
  ExecuteOptions eo;
  eo.replay = o;
  eo.replay.explain_iteration = -1;
  eo.work_dir = args.work_dir.value_or("");
  if (args.execute) {
    SWAPPLAN_ASSIGN_OR_RETURN(simulated, RunReplay(trace, eo.replay, [&](const ReplayRow& r) {
                                simulated_rows.push_back(r);
                              }));
  }
  auto on_executed = [&](const ReplayRow& r) {
    if (r.iteration < static_cast<int32_t>(simulated_rows.size())) {
      const size_t before = diffs.size();
      CompareReplayRows(simulated_rows[r.iteration], r, &diffs);
      if (diffs.size() > before) ++iterations_differing;
    }
    on_row(r);
  };
  SWAPPLAN_ASSIGN_OR_RETURN(ReplaySummary s, args.execute
                                                 ? RunExecutedReplay(trace, eo, on_executed)
                                                 : RunReplay(trace, o, on_row));
  bar.Finish();
  if (args.html) {
    SWAPPLAN_RETURN_IF_ERROR(WriteReplayHtmlReport(*args.html, trace, o, html_rows, s, device));
  }
  // --compare-matchers: the same replay with the other matcher, rows not
  // printed.
  std::optional<ReplaySummary> other;
  const MatcherKind other_matcher =
      o.matcher == MatcherKind::kFuzzy ? MatcherKind::kNaive : MatcherKind::kFuzzy;
  if (args.compare_matchers) {
    ReplayOptions oo = o;
    oo.matcher = other_matcher;
    oo.explain_iteration = -1;
    SWAPPLAN_ASSIGN_OR_RETURN(other, RunReplay(trace, oo, [](const ReplayRow&) {}));
  }
  if (rows_mode == "changes" && have_previous && !previous_printed) {
    if (args.json) {
      rows.push_back(RowJson(previous, explain, o.oracle, names));
    } else {
      emit(render(Cells(previous, names)));
    }
  }
  if (args.json) {
    using nlohmann::json;
    json j;
    j["trace"] = trace.source();
    j["device"] = DeviceJson(device);
    j["budget_bytes"] = o.simulator.memory_limit_bytes();
    j["warnings"] = WarningsJson(device.warnings);
    j["planner"] = o.planner;
    j["chain"] = o.planner == "chain" ? json(o.chain.planners) : json(nullptr);
    json by = json::object();
    for (const auto& [planner, n] : s.policies_by_planner) by[planner] = n;
    j["policies_by_planner"] = by;
    json inputs = json::array();
    for (const InputPlanning& in : s.inputs) {
      json bp = json::object();
      for (const auto& [planner, n] : in.by_planner) bp[planner] = n;
      inputs.push_back({{"input_signature", absl::StrFormat("%016x", in.input.hash)},
                        {"input_bytes", in.input.bytes},
                        {"num_policies", in.policies},
                        {"policies_by_planner", bp},
                        {"planner", in.planner.empty() ? json(nullptr) : json(in.planner)},
                        {"num_plan_failures", in.plan_failures},
                        {"no_fit", in.no_fit.empty() ? json(nullptr) : json(in.no_fit)},
                        {"no_fit_iteration", in.no_fit_iteration >= 0
                                                 ? json(in.no_fit_iteration)
                                                 : json(nullptr)}});
    }
    j["inputs"] = inputs;
    j["matcher"] = std::string(MatcherKindName(o.matcher));
    j["boundary"] = std::string(IterationBoundaryName(o.boundary));
    j["similarity_measure"] = std::string(SequenceSimilarityName(o.tracker.similarity));
    j["policies"] = std::string(PolicyKeyingName(o.keying));
    j["plan_on"] = std::string(PlanningInputName(o.plan_on));
    j["oom_handling"] = o.oom_handling_in_all_stages ? "all" : "warmup";
    j["iterations"] = rows;
    j["totals"] = ReplayTotalsJson(s, o.oracle);
    j["model_runtime"] = o.model_runtime;
    if (simulated) {
      json d = json::array();
      for (const RowDifference& x : diffs) {
        d.push_back({{"iteration", x.iteration}, {"field", x.field},
                     {"simulated", x.simulated}, {"executed", x.executed}});
      }
      j["execution"] = {{"backend", *args.execute},
                        {"simulated_totals", ReplayTotalsJson(*simulated, false)},
                        {"num_iterations_differing", iterations_differing},
                        {"differences", d}};
    }
    if (other) {
      j["totals_by_matcher"] = {{std::string(MatcherKindName(o.matcher)), j["totals"]},
                                {std::string(MatcherKindName(other_matcher)),
                                 ReplayTotalsJson(*other, o.oracle)}};
    }
    return WriteOutput(output, j.dump(2) + "\n");
  }
  emit(explained);
  emit(Summary(s, args, device));
  if (other) emit(SideBySide(s, o.matcher, *other, other_matcher));
  if (simulated) emit(SimulatedVsExecuted(*simulated, s, diffs, iterations_differing));
  if (!stream) return WriteOutput(output, text);
  return absl::OkStatus();
}

}  // namespace

void SetupReplay(CLI::App& root, Action* action) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* sub = root.add_subcommand(
      "replay",
      "Replay a multi-iteration trace through the stage tracker, a planner, a tensor matcher and "
      "the simulator with warm-up OOM handling; one row per runtime iteration");
  FlagSet& f = args->flags;
  f.Positional(sub, "trace", &args->trace, "Trace file", /*required=*/true);
  AddDeviceFlags(sub, &f, &args->device, {});
  f.Choice(sub, "--matcher", &args->matcher, {"fuzzy", "naive"},
           "fuzzy (runtime keys, default) or naive (op ordinal, i-th tensor)");
  f.Text(sub, "--planner", &args->planner,
         "Planner run in GenPolicy (default chain: the first of --chain whose policy passes "
         "the checker at the budget, per input)");
  f.Text(sub, "--chain", &args->chain,
         absl::StrCat("--planner chain: planners tried in order [default ",
                      absl::StrJoin(PlannerChainOptions().planners, ","), "]"));
  f.Duration(sub, "--search-time-limit", &args->search_time_limit_ns,
             absl::StrCat("--planner chain: time limit of its search (the advisor) [default ",
                          FormatDurationNs(PlannerChainOptions().search_time_limit_ns), "]"));
  std::vector<OptionInfo> chameleon;
  for (OptionInfo o : ChameleonOptionTable().Describe(ChameleonOptions())) {
    if (o.name != "layers" && o.name != "min_tensor_bytes") continue;
    o.help = absl::StrCat("Chameleon: ", o.help);
    chameleon.push_back(o);
  }
  // A plain pointer: the setter lives in args->flags, inside *args (a
  // shared_ptr here would be a reference cycle).
  ChameleonOptions* chameleon_options = &args->chameleon;
  AddPlannerOptionFlags(sub, &f, chameleon, [chameleon_options](const std::string& name,
                                                                const std::string& v) {
    return ChameleonOptionTable().SetValue(chameleon_options, name, v);
  });
  f.Choice(sub, "--boundary", &args->boundary, {"optimizer", "trace"},
           "Where runtime iterations end: optimizer (after the optimizer step, default) or trace");
  f.Int(sub, "--window", &args->window,
        "Fuzzy matcher: position tolerance in ops of the same phase (default 0)", 0, INT32_MAX);
  f.Choice(sub, "--similarity", &args->similarity, {"histogram", "op-ids"},
           "Stage tracker similarity: histogram (default) or op-ids (the paper's)");
  f.Fraction(sub, "--max-length-change", &args->max_length_change,
             "Stage tracker: largest stable relative length change, e.g. 5% (default 0.05)");
  f.Number(sub, "--min-similarity", &args->min_similarity,
           "Stage tracker: smallest stable similarity in [0, 1] (default 0.95)", 0, 1);
  f.Int(sub, "--warmup-iterations", &args->warmup_iterations,
        "m: stable iterations before GenPolicy (default 2)", 0, INT32_MAX);
  f.Int(sub, "--genpolicy-iterations", &args->genpolicy_iterations,
        "n: stable iterations before Stable (default 5)", 0, INT32_MAX);
  f.Int(sub, "--runtime-key-mask-bits", &args->runtime_key_mask_bits,
        "Runtime key mask: 32 or 64 (default 32)", 32, 64);
  f.Int(sub, "--iterations", &args->iterations, "Replay only the first N (default all)", 0,
        INT32_MAX);
  f.Int(sub, "--explain", &args->explain,
        "Also list what became of every policy item in runtime iteration N", 0, INT32_MAX);
  f.Choice(sub, "--oom-handling", &args->oom_handling, {"all", "warmup"},
           "Algorithm 3 in all stages (default: a miss is counted, never a crash) or in warmup "
           "only (the paper: after warm-up an OOM is a crash)");
  f.Choice(sub, "--oom-persistent", &args->oom_persistent, {"move", "keep"},
           "Algorithm 3's last resort: move persistent tensors used again later in the "
           "iteration (default) or keep them (the seed's rule)");
  f.Choice(sub, "--rows", &args->rows, {"all", "changes", "none"},
           "Rows printed: all (default), changes (only where something changes), none");
  f.Choice(sub, "--policies", &args->policies, {"input", "single"},
           "input (one policy per input signature, default) or single (one at a time, the "
           "paper)");
  f.Choice(sub, "--plan-on", &args->plan_on, {"observed", "envelope", "iteration"},
           "observed (the last iteration, budget lowered until every observed iteration fits, "
           "default), envelope (all observed with its key) or iteration (the paper)");
  f.Number(sub, "--spread-margin", &args->spread_margin,
           "Envelope: extrapolate by this multiple of the observed spread (default 1)", 0, 100);
  f.Number(sub, "--verify-margin", &args->verify_margin,
           "Observed: peaks must stay under the budget by this multiple of their spread "
           "(default 0)",
           0, 100);
  f.Int(sub, "--max-policy-misses", &args->max_policy_misses,
        "Stable iterations whose policy missed before GenPolicy again (0: never; default 2)", 0,
        INT32_MAX);
  f.Int(sub, "--remember", &args->remember,
        "Policy sets of left sequences kept for their return (0: none, the paper; default 4)", 0,
        INT32_MAX);
  sub->add_flag("--oracle", args->oracle, "Also plan every iteration on itself (the oracle)");
  sub->add_flag("--compare-matchers", args->compare_matchers,
                "Also replay with the other matcher; its totals side by side with this one's");
  sub->add_flag("--model-runtime", args->model_runtime,
                "Replay what the runtime shim does (the policy chosen at the first FORWARD op; "
                "with --plan-on iteration its Stable choice and no policy after a failed plan; "
                "copies out as it starts them); not with --plan-on envelope");
  f.Choice(sub, "--execute", &args->execute, {"host"},
           "Also execute the trace through the runtime shim on this backend (host); rows and "
           "totals are the executed run's, then simulated vs executed (implies "
           "--model-runtime)");
  f.Text(sub, "--work-dir", &args->work_dir,
         "--execute: keep the runtime's records and the provider's policies in DIR (default: a "
         "temporary directory, removed)");
  sub->add_flag("--json", args->json,
                "JSON: per-iteration rows and totals (docs/json/replay.schema.json)");
  f.Text(sub, "-o,--output", &args->output, "Write the report to FILE instead of stdout");
  f.Text(sub, "--html", &args->html,
         "Also write the HTML report page of the replay: peak per iteration against the capacity "
         "and budget, stages, policies used, OOMs and misses (docs/report.md)");
  sub->callback([args, action] { *action = [args]() -> absl::Status { return Run(*args); }; });
}

}  // namespace swapplan::cli
