// swapplan replay TRACE --device-memory X [--reserve X] [--matcher fuzzy|naive]
//                [--planner NAME] [--json] [--rows all|changes|none] ...
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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "trace_input.h"
#include "sim_flags.h"
#include "swapplan/planners/registry.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"
#include "swapplan/eval/replay.h"

namespace swapplan::cli {
namespace {

struct ReplayArgs {
  std::string trace;
  std::string device_memory;
  std::string reserve;
  std::string matcher = "fuzzy";
  std::string planner = "chameleon";
  std::string boundary = "optimizer";
  std::string similarity = "histogram";
  std::string rows = "all";
  int window = 0;
  double max_length_change = 0.05;
  double min_similarity = 0.95;
  int warmup_iterations = 2;
  int genpolicy_iterations = 5;
  int runtime_key_bits = 32;
  int iterations = 0;
  int explain = -1;
  std::string min_tensor_bytes;
  int layers = 0;
  std::string oom_handling = "all";
  std::string policies = "input";
  std::string plan_on = "observed";
  double spread_margin = 1.0;
  double verify_margin = 0.0;
  int max_policy_misses = 2;
  int remember = 4;
  bool oracle = false;
  SimFlags sim;
  bool json = false;
  bool quiet = false;
  std::string output;
};

std::string Note(const ReplayRow& r) {
  std::string note;
  if (r.uses_while_off_device > 0) {
    absl::StrAppend(&note, "CRASH: tensor ", r.first_off_device_tensor, " used at op ",
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
  if (r.next_stage != r.stage) {
    absl::StrAppend(&note, "next ", StageName(r.next_stage), "; ");
  }
  if (r.generated_policy >= 0) absl::StrAppend(&note, "policy ", r.generated_policy, " made; ");
  if (!r.plan_error.empty()) {
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

std::vector<std::string> Cells(const ReplayRow& r) {
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
          Note(r)};
}

const std::vector<std::string> kHeader = {"iter", "trace it", "ops",      "stage", "policy",
                                          "items", "matched", "missed", "wrong", "off-dev",
                                          "ooms", "passive", "time",    "note"};

std::string Summary(const ReplaySummary& s, const ReplayArgs& a) {
  std::string out;
  absl::StrAppend(&out, "\nsummary     ", s.iterations, " of ", s.runtime_iterations,
                  " runtime iterations: WarmUp ", s.iterations_by_stage[0], ", GenPolicy ",
                  s.iterations_by_stage[1], ", Stable ", s.iterations_by_stage[2], "\n");
  absl::StrAppend(&out, "policies    ", s.policies_generated, " generated by ", a.planner, " (",
                  s.plan_failures, " planning failures), matcher ", a.matcher, "\n");
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
  absl::StrAppend(&out, "time        ", FormatDurationNs(s.time_ns), " simulated",
                  s.iterations > 0
                      ? absl::StrCat(", ", FormatDurationNs(s.time_ns / s.iterations),
                                     " per iteration")
                      : std::string(),
                  "\n");
  return out;
}

std::string ExplainText(const ReplayRow& r) {
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
              found ? absl::StrCat(x.tensor_id) : "-",
              x.expected_tensor_id != 0 ? absl::StrCat(x.expected_tensor_id) : "-",
              found ? absl::StrCat(x.decision_op) : "-",
              x.next_use_op >= 0 ? absl::StrCat(x.next_use_op) : "-",
              found ? absl::StrCat(x.swap_in_op) : "-", x.used_while_off_device ? "YES" : "no"});
  }
  return out + t.Render(2);
}

nlohmann::json ReportsJson(const ReplayRow& r) {
  nlohmann::json a = nlohmann::json::array();
  for (const ItemReport& x : r.reports) {
    nlohmann::json j;
    j["outcome"] = std::string(ItemOutcomeName(x.outcome));
    j["tensor_id"] = x.outcome != ItemOutcome::kMissed ? nlohmann::json(x.tensor_id) : nlohmann::json(nullptr);
    j["expected_tensor_id"] =
        x.expected_tensor_id != 0 ? nlohmann::json(x.expected_tensor_id) : nlohmann::json(nullptr);
    j["swap_out_op"] = x.decision_op;
    j["next_use_op"] = x.next_use_op;
    j["swap_in_op"] = x.swap_in_op;
    j["used_while_off_device"] = x.used_while_off_device;
    a.push_back(j);
  }
  return a;
}

nlohmann::json RowJson(const ReplayRow& r, int explain) {
  nlohmann::json j;
  j["iteration"] = r.iteration;
  j["trace_iteration"] = r.trace_iteration;
  j["ops"] = r.ops;
  j["stage"] = std::string(StageName(r.stage));
  j["policy"] = r.policy >= 0 ? nlohmann::json(r.policy) : nlohmann::json(nullptr);
  j["items"] = r.items;
  j["matched"] = r.matched;
  j["missed"] = r.missed;
  j["mismatched"] = r.mismatched;
  j["uses_while_off_device"] = r.uses_while_off_device;
  j["ooms"] = r.ooms;
  j["passive_swaps"] = r.passive_swaps;
  j["unresolved_ooms"] = r.unresolved_ooms;
  j["time_ns"] = r.time_ns;
  j["stall_ns"] = r.stall_ns;
  j["peak_bytes"] = r.peak_bytes;
  j["sequence_stable"] = r.sequence_stable;
  j["length_change"] = r.length_change;
  j["similarity"] = r.similarity;
  j["next_stage"] = std::string(StageName(r.next_stage));
  j["generated_policy"] =
      r.generated_policy >= 0 ? nlohmann::json(r.generated_policy) : nlohmann::json(nullptr);
  if (!r.plan_error.empty()) j["plan_error"] = r.plan_error;
  if (r.iteration == explain) j["items_report"] = ReportsJson(r);
  return j;
}

absl::Status Run(const ReplayArgs& args) {
  ReplayOptions o;
  if (!ParseMatcherKind(args.matcher, &o.matcher)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--matcher: unknown matcher '", args.matcher, "' (fuzzy, naive)"));
  }
  if (FindPlanner(args.planner) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--planner: unknown planner '", args.planner,
                                                   "' (known: ", PlannerNames(), ")"));
  }
  o.planner = args.planner;
  if (!args.min_tensor_bytes.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(args.min_tensor_bytes);
    if (!b.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--min-tensor-bytes: ", b.status().message()));
    }
    o.chameleon.min_tensor_bytes = *b;
  }
  o.chameleon.layers = args.layers;
  o.chameleon.runtime_key_mask_bits = args.runtime_key_bits;
  if (!ParseIterationBoundary(args.boundary, &o.boundary)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--boundary: unknown boundary '", args.boundary, "' (optimizer, trace)"));
  }
  if (!ParseSequenceSimilarity(args.similarity, &o.tracker.similarity)) {
    return absl::InvalidArgumentError(absl::StrCat("--similarity: unknown measure '",
                                                   args.similarity, "' (histogram, op-ids)"));
  }
  if (args.rows != "all" && args.rows != "changes" && args.rows != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("--rows: '", args.rows, "' is not one of all, changes, none"));
  }
  o.matcher_options.window_ops = args.window;
  o.tracker.max_length_change = args.max_length_change;
  o.tracker.min_similarity = args.min_similarity;
  o.tracker.warmup_iterations = args.warmup_iterations;
  o.tracker.genpolicy_iterations = args.genpolicy_iterations;
  o.runtime_key_bits = args.runtime_key_bits;
  o.max_iterations = args.iterations;
  o.explain_iteration = args.explain;
  if (args.oom_handling != "warmup" && args.oom_handling != "all") {
    return absl::InvalidArgumentError(
        absl::StrCat("--oom-handling: '", args.oom_handling, "' is not one of warmup, all"));
  }
  o.oom_handling_in_all_stages = args.oom_handling == "all";
  if (!ParsePolicyKeying(args.policies, &o.keying)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--policies: '", args.policies, "' is not one of single, input"));
  }
  if (!ParsePlanningInput(args.plan_on, &o.plan_on)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--plan-on: '", args.plan_on, "' is not one of iteration, envelope, observed"));
  }
  o.envelope.spread_margin = args.spread_margin;
  o.verify_margin = args.verify_margin;
  o.tracker.max_policy_misses = args.max_policy_misses;
  o.oracle = args.oracle;
  o.remembered_sequences = args.remember;
  SWAPPLAN_RETURN_IF_ERROR(ApplySimFlags(args.sim, &o.simulator));

  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(args.trace));
  if (!args.device_memory.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(args.device_memory);
    if (!b.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--device-memory: ", b.status().message()));
    }
    o.simulator.device.capacity_bytes = *b;
  } else if (trace.metadata().device_memory_bytes > 0) {
    o.simulator.device.capacity_bytes = trace.metadata().device_memory_bytes;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--device-memory is required: ", trace.source(),
                                                   " does not record the device memory"));
  }
  if (!args.reserve.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(args.reserve);
    if (!b.ok()) return absl::InvalidArgumentError(absl::StrCat("--reserve: ", b.status().message()));
    o.simulator.device.reserve_bytes = *b;
  }
  if (o.simulator.device.reserve_bytes >= o.simulator.device.capacity_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reserve ", FormatBytes(o.simulator.device.reserve_bytes),
                     " leaves no budget out of ", FormatBytes(o.simulator.device.capacity_bytes)));
  }

  const bool to_stdout = args.output.empty() || args.output == "-";
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
  bool header_done = args.json || args.rows == "none";
  const auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  std::string explained;
  auto on_row = [&](const ReplayRow& r) {
    if (r.iteration == args.explain && !args.json) explained = ExplainText(r);
    if (!header_done) {
      emit(render(kHeader));
      header_done = true;
    }
    const std::string sig = Signature(r);
    const bool show = args.rows == "all" || (args.rows == "changes" && sig != last_signature);
    if (show && args.rows == "changes" && have_previous && !previous_printed) {
      // The row before a change, so both sides of it are visible.
      if (args.json) {
        rows.push_back(RowJson(previous, args.explain));
      } else {
        emit(render(Cells(previous)));
      }
    }
    if (show) {
      if (args.json) {
        rows.push_back(RowJson(r, args.explain));
      } else {
        emit(render(Cells(r)));
      }
    }
    previous = r;
    previous_printed = show;
    have_previous = true;
    last_signature = sig;
    const auto now = std::chrono::steady_clock::now();
    if (!args.quiet && now - last_progress > std::chrono::seconds(2)) {
      last_progress = now;
      const double secs = std::chrono::duration<double>(now - start).count();
      std::cerr << absl::StrFormat("swapplan replay: iteration %d, %.0f iterations/s\n",
                                   r.iteration + 1, (r.iteration + 1) / secs);
    }
  };
  SWAPPLAN_ASSIGN_OR_RETURN(ReplaySummary s, RunReplay(trace, o, on_row));
  if (args.rows == "changes" && have_previous && !previous_printed) {
    if (args.json) {
      rows.push_back(RowJson(previous, args.explain));
    } else {
      emit(render(Cells(previous)));
    }
  }
  if (args.json) {
    nlohmann::json j;
    j["trace"] = trace.source();
    j["device_memory_bytes"] = o.simulator.device.capacity_bytes;
    j["reserve_bytes"] = o.simulator.device.reserve_bytes;
    j["planner"] = o.planner;
    j["matcher"] = std::string(MatcherKindName(o.matcher));
    j["boundary"] = std::string(IterationBoundaryName(o.boundary));
    j["similarity"] = std::string(SequenceSimilarityName(o.tracker.similarity));
    j["iterations"] = rows;
    nlohmann::json t;
    t["iterations"] = s.iterations;
    t["runtime_iterations"] = s.runtime_iterations;
    t["warmup_iterations"] = s.iterations_by_stage[0];
    t["genpolicy_iterations"] = s.iterations_by_stage[1];
    t["stable_iterations"] = s.iterations_by_stage[2];
    t["policies_generated"] = s.policies_generated;
    t["plan_failures"] = s.plan_failures;
    t["items"] = s.items;
    t["matched"] = s.matched;
    t["missed"] = s.missed;
    t["mismatched"] = s.mismatched;
    t["uses_while_off_device"] = s.uses_while_off_device;
    t["first_off_device_iteration"] = s.first_off_device_iteration >= 0
                                          ? nlohmann::json(s.first_off_device_iteration)
                                          : nlohmann::json(nullptr);
    t["ooms"] = s.ooms;
    t["ooms_after_warmup"] = s.ooms_after_warmup;
    t["first_oom_after_warmup_iteration"] = s.first_oom_after_warmup_iteration >= 0
                                                ? nlohmann::json(s.first_oom_after_warmup_iteration)
                                                : nlohmann::json(nullptr);
    t["passive_swaps"] = s.passive_swaps;
    t["unresolved_ooms"] = s.unresolved_ooms;
    t["first_unresolved_oom_iteration"] = s.first_unresolved_oom_iteration >= 0
                                              ? nlohmann::json(s.first_unresolved_oom_iteration)
                                              : nlohmann::json(nullptr);
    t["time_ns"] = s.time_ns;
    j["totals"] = t;
    return WriteOutput(args.output, j.dump(2) + "\n");
  }
  emit(explained);
  emit(Summary(s, args));
  if (!stream) return WriteOutput(args.output, text);
  return absl::OkStatus();
}

}  // namespace

void SetupReplay(CLI::App& root, Action* action) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* sub = root.add_subcommand(
      "replay",
      "Replay a multi-iteration trace through the stage tracker, a planner, a tensor matcher and "
      "the simulator with warm-up OOM handling; one row per runtime iteration");
  sub->add_option("trace", args->trace, "Trace file")->required();
  sub->add_option("--device-memory", args->device_memory,
                  "Device capacity, e.g. 64GiB (default: the trace's)");
  sub->add_option("--reserve", args->reserve,
                  "Kept free when planning: budget = device memory - reserve (default 0)");
  sub->add_option("--matcher", args->matcher, "fuzzy (runtime keys, default) or naive (op ordinal, i-th tensor)");
  sub->add_option("--planner", args->planner, "Planner run in GenPolicy (default chameleon)");
  sub->add_option("--min-tensor-bytes", args->min_tensor_bytes,
                  "Chameleon: smallest tensor considered (default 1MiB)");
  sub->add_option("--layers", args->layers, "Chameleon: logical layers (default: from the trace)");
  sub->add_option("--boundary", args->boundary,
                  "Where runtime iterations end: optimizer (after the optimizer step, default) "
                  "or trace");
  sub->add_option("--window", args->window,
                  "Fuzzy matcher: position tolerance in ops of the same phase (default 0)");
  sub->add_option("--similarity", args->similarity,
                  "Stage tracker similarity: histogram (default) or op-ids (the paper's)");
  sub->add_option("--max-length-change", args->max_length_change,
                  "Stage tracker: largest stable relative length change (default 0.05)");
  sub->add_option("--min-similarity", args->min_similarity,
                  "Stage tracker: smallest stable similarity (default 0.95)");
  sub->add_option("--warmup-iterations", args->warmup_iterations,
                  "m: stable iterations before GenPolicy (default 2)");
  sub->add_option("--genpolicy-iterations", args->genpolicy_iterations,
                  "n: stable iterations before Stable (default 5)");
  sub->add_option("--runtime-key-bits", args->runtime_key_bits, "Runtime key mask: 32 or 64");
  sub->add_option("--iterations", args->iterations, "Replay only the first N (default all)");
  sub->add_option("--explain", args->explain,
                  "Also list what became of every policy item in runtime iteration N");
  sub->add_option("--oom-handling", args->oom_handling,
                  "Algorithm 3 in warmup only (default: after warm-up an OOM is a crash) or in "
                  "all stages");
  sub->add_option("--rows", args->rows,
                  "Rows printed: all (default), changes (only where something changes), none");
  AddSimFlags(sub, &args->sim);
  sub->add_option("--policies", args->policies,
                  "single (one policy at a time) or input (one per input signature)");
  sub->add_option("--plan-on", args->plan_on,
                  "iteration (the one just observed) or envelope (all observed with its key)");
  sub->add_option("--spread-margin", args->spread_margin,
                  "Envelope: extrapolate by this multiple of the observed spread");
  sub->add_option("--verify-margin", args->verify_margin,
                  "Observed: peaks must stay under the budget by this multiple of their spread");
  sub->add_option("--max-policy-misses", args->max_policy_misses,
                  "Stable iterations whose policy missed before GenPolicy again (0: never)");
  sub->add_option("--remember", args->remember,
                  "Policy sets of left sequences kept for their return (0: none, the paper)");
  sub->add_flag("--oracle", args->oracle, "Also plan every iteration on itself (the oracle)");
  sub->add_flag("--json", args->json, "JSON: per-iteration rows and totals");
  sub->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  sub->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
  sub->callback([args, action] { *action = [args]() -> absl::Status { return Run(*args); }; });
}

}  // namespace swapplan::cli
