// swapplan plan TRACE --device-memory 64GiB [--reserve 2GiB] [--h2d-bandwidth 25GB/s]
//   [--d2h-bandwidth ...] [--iteration N] [--layers N] [--score-c X] [--min-tensor-bytes X]
//   [--single-link-budget] [-o policy.pb|policy.json] [--json] [--explain] [more options]
//
// Runs the Chameleon planner on one iteration, verifies its policy with the
// checker (a policy the checker rejects is an internal error: exit 1), and
// prints a summary; --explain adds the planner's reasoning. Infeasible
// budgets exit 3 with the planner's message (and the explanation first when
// --explain is given).
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "trace_input.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/sim/checker.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct PlanArgs {
  std::string trace;
  std::string device_memory;
  std::string reserve = "0";
  std::string h2d;
  std::string d2h;
  int iteration = -1;
  int layers = 0;
  int optimizer_layers = 1;
  double score_c = 1.0;
  std::string min_tensor_bytes = "1MiB";
  bool single_link_budget = false;
  std::string normalization = "max";
  std::string swap_out_completion = "d2h-queue";
  std::string idle_window_start = "earliest-release";
  std::string candidate_rebuild = "per-pass";
  std::string stall_fallback = "batched";
  std::string release_wait = "when-needed";
  std::string op_times = "auto";
  std::string iteration_time;
  int runtime_key_bits = 32;
  int max_rounds = 8;
  bool no_maximal_fallback = false;
  std::string output;
  bool json = false;
  bool explain = false;
};

// "1.86 KiB (1900 B)"; just "100 B" below 1 KiB.
std::string Bytes(int64_t b) {
  return b < 1024 ? FormatBytes(b) : absl::StrCat(FormatBytes(b), " (", b, " B)");
}

std::string Ns(double ns) { return absl::StrFormat("%.1f", ns); }

struct Context {
  const Trace& trace;
  int32_t iteration;
  OpIndex begin;
  int64_t device_bytes;
  int64_t reserve_bytes;
  PlanningProblem problem;
  // The evaluation simulator's verdict on the final policy.
  SimulationResult simulation = {};
};

std::string OpText(const Context& c, int32_t local) {
  const OpInfo& op = c.trace.op(c.begin + local);
  return absl::StrCat("op ", local, " (", c.trace.op_name(op.name), ", ", PhaseName(op.phase), ")");
}

std::string MrlText(const Context& c, const std::vector<MrlRange>& runs) {
  if (runs.empty()) return "empty";
  std::vector<std::string> parts;
  for (const MrlRange& r : runs) {
    parts.push_back(r.first_op == r.last_op
                        ? absl::StrCat("op ", r.first_op, ": ", r.max_need_bytes)
                        : absl::StrCat("ops ", r.first_op, "..", r.last_op, ": max ",
                                       r.max_need_bytes, " at op ", r.max_op));
  }
  return absl::StrJoin(parts, "; ");
}

std::string RenderExplanation(const Context& c, const ChameleonExplanation& x) {
  std::string out;
  absl::StrAppend(&out, "logical layers: L = ", x.layers_per_segment, " per segment (from ",
                  LayerCountSourceName(x.layers_source), "), ", x.layers.size(),
                  " layers; op times ", DurationSourceName(x.durations), ", T_iter ",
                  x.iteration_time_ns, " ns; ",
                  x.link_budget == LinkBudget::kShared ? "one budget for both directions"
                                                       : "one budget per direction",
                  "\n");
  TextTable layers({"layer", "type", "mb", "ops", "start ns", "time ns", "h2d used", "d2h used",
                    "h2d left", "d2h left"});
  for (size_t l = 0; l < x.layers.size(); ++l) {
    const LogicalLayer& ll = x.layers[l];
    const double h2d = l < x.h2d_used_ns.size() ? x.h2d_used_ns[l] : 0;
    const double d2h = l < x.d2h_used_ns.size() ? x.d2h_used_ns[l] : 0;
    const bool shared = x.link_budget == LinkBudget::kShared;
    const double h2d_left = ll.time_ns - h2d - (shared ? d2h : 0);
    const double d2h_left = ll.time_ns - d2h - (shared ? h2d : 0);
    layers.AddRow({absl::StrCat(l), absl::StrCat(LayerTypeName(ll.type), " ", ll.index_in_segment),
                   ll.micro_batch >= 0 ? absl::StrCat(ll.micro_batch) : "-",
                   absl::StrCat(ll.begin_op, "..", ll.end_op - 1), Ns(ll.start_ns),
                   Ns(ll.time_ns), Ns(h2d), Ns(d2h), Ns(h2d_left), Ns(d2h_left)});
  }
  absl::StrAppend(&out, layers.Render(3), "\n");
  absl::StrAppend(&out, "budget ", x.budget_bytes, " bytes; unswapped peak ",
                  x.peak_unswapped_bytes, " bytes at ", OpText(c, x.peak_unswapped_op), "\n");
  absl::StrAppend(&out, "memory reduction list: ", x.initial_mrl_entries, " entries: ",
                  MrlText(c, x.initial_mrl), "\n\n");
  for (const ChameleonPass& p : x.passes) {
    absl::StrAppend(&out, "candidate list, round ", p.round, " pass ", p.pass,
                    p.release_wait ? " of the release-wait fallback" : "", " (", p.mrl_entries,
                    " MREs, ", p.candidates.size(), " candidates):\n");
    if (p.candidates.empty()) continue;
    TextTable cl({"rank", "tensor", "bytes", "window", "coverage", "N_MRE", "N^", "S^", "score"});
    for (size_t i = 0; i < p.candidates.size(); ++i) {
      const ScoredCandidate& s = p.candidates[i];
      const SwapWindow& w = x.windows[s.window];
      cl.AddRow({absl::StrCat(i), absl::StrCat(c.trace.tensor(w.tensor).trace_id),
                 absl::StrCat(w.size_bytes), absl::StrCat(w.last_fwd_op, "->", w.first_bwd_op),
                 absl::StrCat(p.release_wait ? w.last_fwd_op + 1 : w.cover_begin, "..",
                              w.cover_end()),
                 absl::StrCat(s.n_mre),
                 absl::StrFormat("%.3f", s.n_hat), absl::StrFormat("%.3f", s.s_hat),
                 absl::StrFormat("%.3f", s.score)});
    }
    absl::StrAppend(&out, cl.Render());
  }
  absl::StrAppend(&out, "\ndecisions:\n");
  for (const ChameleonDecision& d : x.decisions) {
    const bool in_pass = d.kind == ChameleonDecisionKind::kScheduled ||
                         d.kind == ChameleonDecisionKind::kNoLayerFits ||
                         d.kind == ChameleonDecisionKind::kNoLongerNeeded ||
                         d.kind == ChameleonDecisionKind::kStallFallback;
    absl::StrAppend(&out, "  [round ", d.round, in_pass ? absl::StrCat(" pass ", d.pass) : "",
                    "] ", ChameleonDecisionKindName(d.kind), ": ", d.reason);
    if (x.mrl_snapshots && (d.kind == ChameleonDecisionKind::kScheduled ||
                            d.kind == ChameleonDecisionKind::kStallFallback ||
                            d.kind == ChameleonDecisionKind::kRepairRound)) {
      absl::StrAppend(&out, "; MRL now ", MrlText(c, d.mrl_after));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

nlohmann::json ExplanationJson(const Context& c, const ChameleonExplanation& x) {
  using nlohmann::json;
  json layers = json::array();
  for (size_t l = 0; l < x.layers.size(); ++l) {
    const LogicalLayer& ll = x.layers[l];
    layers.push_back({{"layer", l},
                      {"type", std::string(LayerTypeName(ll.type))},
                      {"index_in_segment", ll.index_in_segment},
                      {"micro_batch", ll.micro_batch},
                      {"begin_op", ll.begin_op},
                      {"end_op", ll.end_op},
                      {"start_ns", ll.start_ns},
                      {"time_ns", ll.time_ns},
                      {"h2d_used_ns", l < x.h2d_used_ns.size() ? x.h2d_used_ns[l] : 0.0},
                      {"d2h_used_ns", l < x.d2h_used_ns.size() ? x.d2h_used_ns[l] : 0.0}});
  }
  auto runs = [](const std::vector<MrlRange>& r) {
    json a = json::array();
    for (const MrlRange& m : r) {
      a.push_back({{"first_op", m.first_op},
                   {"last_op", m.last_op},
                   {"max_need_bytes", m.max_need_bytes},
                   {"max_op", m.max_op}});
    }
    return a;
  };
  json passes = json::array();
  for (const ChameleonPass& p : x.passes) {
    json cands = json::array();
    for (const ScoredCandidate& s : p.candidates) {
      const SwapWindow& w = x.windows[s.window];
      cands.push_back({{"tensor_id", c.trace.tensor(w.tensor).trace_id},
                       {"size_bytes", w.size_bytes},
                       {"last_forward_use_op", w.last_fwd_op},
                       {"first_backward_use_op", w.first_bwd_op},
                       {"cover_begin_op", p.release_wait ? w.last_fwd_op + 1 : w.cover_begin},
                       {"n_mre", s.n_mre},
                       {"n_hat", s.n_hat},
                       {"s_hat", s.s_hat},
                       {"score", s.score}});
    }
    passes.push_back({{"round", p.round},
                      {"pass", p.pass},
                      {"mre_entries", p.mrl_entries},
                      {"release_wait", p.release_wait},
                      {"candidates", std::move(cands)}});
  }
  json decisions = json::array();
  for (const ChameleonDecision& d : x.decisions) {
    json j = {{"kind", std::string(ChameleonDecisionKindName(d.kind))},
              {"round", d.round},
              {"pass", d.pass},
              {"reason", d.reason},
              {"mre_entries_after", d.mrl_entries_after}};
    if (d.window >= 0) j["tensor_id"] = c.trace.tensor(x.windows[d.window].tensor).trace_id;
    if (d.layer >= 0) j["layer"] = d.layer;
    if (d.swap_in_op >= 0) j["swap_in_op"] = d.swap_in_op;
    if (d.release_op >= 0) j["release_op"] = d.release_op;
    if (d.stall_ns > 0) j["stall_ns"] = d.stall_ns;
    if (!d.mrl_after.empty()) j["mrl_after"] = runs(d.mrl_after);
    decisions.push_back(std::move(j));
  }
  return {{"layers_per_segment", x.layers_per_segment},
          {"layers_source", std::string(LayerCountSourceName(x.layers_source))},
          {"op_durations", std::string(DurationSourceName(x.durations))},
          {"iteration_time_ns", x.iteration_time_ns},
          {"layers", std::move(layers)},
          {"initial_mrl_entries", x.initial_mrl_entries},
          {"initial_mrl", runs(x.initial_mrl)},
          {"passes", std::move(passes)},
          {"decisions", std::move(decisions)},
          {"rounds", x.rounds},
          {"maximal_fallback_used", x.maximal_fallback_used}};
}

std::string RenderSummary(const Context& c, const Policy& p, const CheckReport& r,
                          const std::string& output) {
  const PlanningProblem& pr = c.problem;
  int64_t bytes = p.TotalItemBytes();
  auto peak_at = [&](int64_t b, int32_t op) {
    return absl::StrCat(Bytes(b), op >= 0 ? absl::StrCat(" at ", OpText(c, op)) : "");
  };
  int32_t peak_before_op = 0;
  for (int32_t i = 0, n = c.trace.iteration(c.iteration).num_ops(); i < n; ++i) {
    if (pr.curve->unswapped_bytes()[c.begin + i] >
        pr.curve->unswapped_bytes()[c.begin + peak_before_op]) {
      peak_before_op = i;
    }
  }
  std::string out;
  TextTable t({"plan", "chameleon"});
  t.AddRow({"trace", absl::StrCat(c.trace.source(), ", iteration ", c.iteration, " (",
                                  c.trace.iteration(c.iteration).num_ops(), " ops)")});
  t.AddRow({"budget", absl::StrCat(Bytes(pr.budget_bytes()), " = device ",
                                   Bytes(c.device_bytes), " - reserve ", Bytes(c.reserve_bytes))});
  t.AddRow({"bandwidth",
            absl::StrCat("h2d ", FormatBandwidth(pr.device.h2d_bandwidth_bytes_per_s), ", d2h ",
                         FormatBandwidth(pr.device.d2h_bandwidth_bytes_per_s))});
  t.AddRow({"tensors swapped", absl::StrCat(p.items.size())});
  t.AddRow({"bytes out / in", absl::StrCat(Bytes(bytes), " / ", Bytes(bytes))});
  t.AddRow({"peak before", peak_at(r.peak_unswapped_bytes, peak_before_op)});
  t.AddRow({"peak after", peak_at(r.peak_bytes, r.peak_op)});
  t.AddRow({"expected overhead", absl::StrCat(FormatDurationNs(p.expected_overhead_ns),
                                              " (stalls the layer simulator accepted)")});
  t.AddRow({"check", "clean"});
  const SimulationResult& s = c.simulation;
  t.AddRow({"simulated", absl::StrCat(FormatDurationNs(s.iteration_time_ns), " per iteration vs ",
                                      FormatDurationNs(s.ideal_time_ns), " ideal (",
                                      absl::StrFormat("%+.2f%%", 100.0 * s.overhead_vs_ideal),
                                      "), stall ", FormatDurationNs(s.stall_ns),
                                      s.oom.occurred ? ", OOM" : "")});
  if (!output.empty()) t.AddRow({"policy", output});
  absl::StrAppend(&out, t.Render(2));
  return out;
}

std::string RenderItems(const Policy& p) {
  // A release that waits for its copy out is marked "<release>*" (legend below).
  bool waits = false;
  for (const PolicyItem& it : p.items) waits = waits || it.release_waits_for_copy;
  TextTable items({"tensor", "bytes", "swap-out", "release", "swap-in", "first use"});
  for (const PolicyItem& it : p.items) {
    items.AddRow({absl::StrCat(it.tensor_id), absl::StrCat(it.size_bytes),
                  absl::StrCat(it.swap_out_op),
                  absl::StrCat(it.release_op, it.release_waits_for_copy ? "*" : ""),
                  absl::StrCat(it.swap_in_op), absl::StrCat(it.first_use_op)});
  }
  std::string out = items.Render();
  if (waits) {
    absl::StrAppend(&out, "* released before its copy out completes: the next op waits for it\n");
  }
  return out;
}

nlohmann::json SummaryJson(const Context& c, const Policy& p, const CheckReport& r) {
  using nlohmann::json;
  json items = json::array();
  for (const PolicyItem& it : p.items) {
    items.push_back({{"tensor_id", it.tensor_id},
                     {"size_bytes", it.size_bytes},
                     {"swap_out_op", it.swap_out_op},
                     {"release_op", it.release_op},
                     {"swap_in_op", it.swap_in_op},
                     {"first_use_op", it.first_use_op},
                     {"release_waits_for_copy", it.release_waits_for_copy}});
  }
  return {{"trace", c.trace.source()},
          {"iteration", c.iteration},
          {"ops", c.trace.iteration(c.iteration).num_ops()},
          {"planner", p.planner},
          {"device_memory_bytes", c.device_bytes},
          {"reserve_bytes", c.reserve_bytes},
          {"budget_bytes", p.BudgetBytes()},
          {"h2d_bandwidth_bytes_per_s", p.device.h2d_bandwidth_bytes_per_s},
          {"d2h_bandwidth_bytes_per_s", p.device.d2h_bandwidth_bytes_per_s},
          {"tensors_swapped", p.items.size()},
          {"bytes_out", p.TotalItemBytes()},
          {"bytes_in", p.TotalItemBytes()},
          {"peak_before_bytes", r.peak_unswapped_bytes},
          {"peak_after_bytes", r.peak_bytes},
          {"peak_after_op", r.peak_op},
          {"expected_overhead_ns", p.expected_overhead_ns},
          {"release_waits", r.release_waits},
          {"check", "clean"},
          {"simulated_iteration_time_ns", c.simulation.iteration_time_ns},
          {"simulated_ideal_time_ns", c.simulation.ideal_time_ns},
          {"simulated_overhead_vs_ideal", c.simulation.overhead_vs_ideal},
          {"simulated_stall_ns", c.simulation.stall_ns},
          {"simulated_oom", c.simulation.oom.occurred},
          {"items", std::move(items)}};
}

absl::StatusOr<ChameleonOptions> MakeOptions(const PlanArgs& a) {
  ChameleonOptions o;
  o.layers = a.layers;
  o.optimizer_layers = a.optimizer_layers;
  o.score_c = a.score_c;
  SWAPPLAN_ASSIGN_OR_RETURN(o.min_tensor_bytes, ParseBytes(a.min_tensor_bytes));
  o.link_budget = a.single_link_budget ? LinkBudget::kShared : LinkBudget::kPerDirection;
  // The values were checked by CLI11 (IsMember); the parses cannot fail.
  ParseScoreNormalization(a.normalization, &o.normalization);
  ParseSwapOutCompletion(a.swap_out_completion, &o.swap_out_completion);
  ParseIdleWindowStart(a.idle_window_start, &o.idle_window_start);
  ParseCandidateRebuild(a.candidate_rebuild, &o.candidate_rebuild);
  ParseStallFallback(a.stall_fallback, &o.stall_fallback);
  ParseReleaseWait(a.release_wait, &o.release_wait);
  ParseOpTimeModel(a.op_times, &o.op_time_model);
  if (!a.iteration_time.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(o.iteration_time_ns, ParseDurationNs(a.iteration_time));
  }
  o.runtime_key_mask_bits = a.runtime_key_bits;
  o.max_rounds = a.max_rounds;
  o.maximal_fallback = !a.no_maximal_fallback;
  SWAPPLAN_RETURN_IF_ERROR(o.Validate());
  return o;
}

absl::Status RunPlan(const PlanArgs& a) {
  SWAPPLAN_ASSIGN_OR_RETURN(ChameleonOptions options, MakeOptions(a));
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(a.trace));
  int32_t iteration = trace.num_iterations() - 1;
  if (a.iteration >= 0) {
    if (a.iteration >= trace.num_iterations()) {
      return absl::InvalidArgumentError(absl::StrCat("--iteration ", a.iteration,
                                                     " is out of range: ", trace.source(),
                                                     " has ", trace.num_iterations(),
                                                     " iterations"));
    }
    iteration = a.iteration;
  }
  const TraceMetadata& m = trace.metadata();
  int64_t device = m.device_memory_bytes;
  if (!a.device_memory.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(device, ParseBytes(a.device_memory));
  }
  if (device <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no device memory: give --device-memory (", trace.source(), " does not record it)"));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(int64_t reserve, ParseBytes(a.reserve));
  if (reserve > device) {
    return absl::InvalidArgumentError(absl::StrCat("--reserve ", reserve,
                                                   " bytes is more than the device memory (",
                                                   device, " bytes)"));
  }
  double h2d = m.h2d_bandwidth_bytes_per_s, d2h = m.d2h_bandwidth_bytes_per_s;
  if (!a.h2d.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(h2d, ParseBandwidth(a.h2d));
  }
  if (!a.d2h.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(d2h, ParseBandwidth(a.d2h));
  }
  for (auto [dir, bw] : {std::pair<const char*, double>{"h2d", h2d}, {"d2h", d2h}}) {
    if (!(bw > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("no ", dir, " bandwidth: give --", dir,
                                                     "-bandwidth (", trace.source(),
                                                     " does not record it)"));
    }
  }
  SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
  Context c{trace, iteration, trace.iteration(iteration).op_begin, device, reserve, {}, {}};
  c.problem = {.trace = &trace, .iteration = iteration, .curve = &curve};
  c.problem.device.capacity_bytes = device;
  c.problem.device.reserve_bytes = reserve;
  c.problem.device.h2d_bandwidth_bytes_per_s = h2d;
  c.problem.device.d2h_bandwidth_bytes_per_s = d2h;
  ChameleonPlanner planner(options);
  ChameleonExplanation why;
  absl::StatusOr<Policy> policy = planner.PlanExplained(c.problem, a.explain ? &why : nullptr);
  if (!policy.ok()) {
    if (a.explain && policy.status().code() == absl::StatusCode::kResourceExhausted) {
      SWAPPLAN_RETURN_IF_ERROR(WriteOutput(
          "", a.json ? nlohmann::json({{"explanation", ExplanationJson(c, why)}}).dump(1) + "\n"
                     : RenderExplanation(c, why)));
    }
    return policy.status();
  }
  SWAPPLAN_ASSIGN_OR_RETURN(
      CheckReport report,
      CheckPolicy(trace, *policy,
                  {.op_time_model = options.op_time_model,
                   .iteration_time_ns = options.iteration_time_ns}));
  if (!report.clean()) {
    return absl::InternalError(absl::StrCat("the planner's policy fails the checker: ",
                                            report.violations.front().message));
  }
  // The common yardstick: the evaluation simulator on the budget.
  SimulatorOptions sim_options;
  sim_options.device = c.problem.device;
  SWAPPLAN_ASSIGN_OR_RETURN(c.simulation, Simulate(trace, *policy, sim_options));
  policy->simulated_iteration_time_ns = c.simulation.iteration_time_ns;
  if (!a.output.empty()) {
    SWAPPLAN_RETURN_IF_ERROR(WritePolicy(*policy, a.output));
  }
  std::string out;
  if (a.json) {
    nlohmann::json j = SummaryJson(c, *policy, report);
    if (!a.output.empty()) j["policy"] = a.output;
    if (a.explain) j["explanation"] = ExplanationJson(c, why);
    out = j.dump(1) + "\n";
  } else {
    out = RenderSummary(c, *policy, report, a.output);
    if (a.explain) {
      absl::StrAppend(&out, "\n", RenderItems(*policy), "\n", RenderExplanation(c, why));
    }
  }
  return WriteOutput("", out);
}

}  // namespace

void SetupPlan(CLI::App& root, Action* action) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* sub = root.add_subcommand(
      "plan", "Chameleon swap policy for one iteration: logical layers, memory reduction list, "
              "scored candidates, logical-layer simulator (seeds 000/001).");
  sub->add_option("trace", a->trace, "Trace file")->required();
  sub->add_option("--device-memory", a->device_memory,
                  "Device memory, e.g. 64GiB (default: the trace metadata's)");
  sub->add_option("--reserve", a->reserve,
                  "Kept free for fragmentation and workspace; budget = device - reserve")
      ->capture_default_str();
  sub->add_option("--h2d-bandwidth", a->h2d, "Host->device bandwidth, e.g. 25GB/s "
                                             "(default: the trace metadata's)");
  sub->add_option("--d2h-bandwidth", a->d2h, "Device->host bandwidth (default: metadata)");
  sub->add_option("--iteration", a->iteration, "Iteration to plan (default: the last)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--layers", a->layers,
                  "Logical layers per forward/backward segment (default: layer hints, "
                  "metadata model_layers, else 12)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--optimizer-layers", a->optimizer_layers, "Logical layers per optimizer run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--score-c", a->score_c, "C of Eq. (2): weight of size against MRE count")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--min-tensor-bytes", a->min_tensor_bytes, "Smallest tensor to swap")
      ->capture_default_str();
  sub->add_flag("--single-link-budget", a->single_link_budget,
                "One transfer budget per layer for both directions (the papers'); default: "
                "one per direction");
  sub->add_option("--normalization", a->normalization, "Eq. (2) normalisation: max or minmax")
      ->capture_default_str()
      ->check(CLI::IsMember({"max", "minmax"}));
  sub->add_option("--swap-out-completion", a->swap_out_completion,
                  "d2h-queue (exact FIFO) or layer-search (the papers' per-layer search)")
      ->capture_default_str()
      ->check(CLI::IsMember({"d2h-queue", "layer-search"}));
  sub->add_option("--idle-window-start", a->idle_window_start,
                  "Where coverage starts: earliest-release or last-forward-use (the papers')")
      ->capture_default_str()
      ->check(CLI::IsMember({"earliest-release", "last-forward-use"}));
  sub->add_option("--candidate-rebuild", a->candidate_rebuild,
                  "per-pass (Algorithm 2) or per-selection")
      ->capture_default_str()
      ->check(CLI::IsMember({"per-pass", "per-selection"}));
  sub->add_option("--stall-fallback", a->stall_fallback,
                  "batched (rest of the pass too) or one-per-pass (the papers')")
      ->capture_default_str()
      ->check(CLI::IsMember({"batched", "one-per-pass"}));
  sub->add_option("--release-wait", a->release_wait,
                  "when-needed (releases may precede the copy out, the next op waiting for it, "
                  "when nothing else fits) or never (the papers')")
      ->capture_default_str()
      ->check(CLI::IsMember({"when-needed", "never"}));
  sub->add_option("--op-times", a->op_times, "auto, eq1 or recorded")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "eq1", "recorded"}));
  sub->add_option("--iteration-time", a->iteration_time,
                  "T_iter for Eq. (1), e.g. 850ms (default: recorded wall time)");
  sub->add_option("--runtime-key-bits", a->runtime_key_bits, "Runtime-key op mask width")
      ->capture_default_str()
      ->check(CLI::IsMember({32, 64}));
  sub->add_option("--max-rounds", a->max_rounds,
                  "Rounds of Algorithm 2 (first + release-point repairs) before the fallback")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--no-maximal-fallback", a->no_maximal_fallback,
                "Report infeasible when Algorithm 2 runs out of candidates");
  sub->add_option("-o,--output", a->output, "Write the policy (.json: JSON, else binary)");
  sub->add_flag("--json", a->json, "Machine-readable JSON summary");
  sub->add_flag("--explain", a->explain,
                "Print the layer table, MRL, candidate lists and every decision");
  sub->callback([a, action] { *action = [a]() { return RunPlan(*a); }; });
}

}  // namespace swapplan::cli
