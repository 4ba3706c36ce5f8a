// swapplan plan TRACE [--device NAME] [--device-memory 64GiB] [--reserve 2GiB]
//   [--h2d-bandwidth 25GB/s] [--d2h-bandwidth ...] [--copy-latency 10us] [--half-duplex]
//   [--compute-scale 0.5x] [--iteration N] [every Chameleon option: --layers N,
//   --min-tensor-bytes 1MiB, ...] [-o policy.pb|policy.json] [--json] [--explain]
//   [--server ADDR [--token-file F] [--tls-ca F] [--server-timeout T]]
//
// Runs the Chameleon planner on one iteration, verifies its policy with the
// checker (a policy the checker rejects is an internal error: exit 1), and
// prints a summary; --explain adds the planner's reasoning. Infeasible
// budgets exit 3 with the planner's message (and the explanation first when
// --explain is given). The planner's flags are its option table
// (ChameleonOptionTable): the names its policies record. With --server the
// planner runs on a planner service (cli/remote.h); the check, simulation
// and output stay here, so the output is the same.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "common.h"
#include "budget_flags.h"
#include "device_flags.h"
#include "flags.h"
#include "planner_flags.h"
#include "remote.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/sim/checker.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct PlanArgs {
  FlagSet flags;
  std::string trace;
  DeviceFlags device;
  std::optional<int64_t> iteration;
  ChameleonOptions options;
  std::optional<std::string> output;
  bool json = false;
  bool explain = false;
  // --server: plan on a planner service with the options as given.
  RemoteFlags remote;
  BudgetFlags budget;
  std::map<std::string, std::string> option_values;
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
  const ResolvedDevice& device;
  PlanningProblem problem;
  BudgetBasis basis = {};
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
    const TensorLabeler names(c.trace);
    TextTable cl({"rank", "tensor", "bytes", "window", "coverage", "N_MRE", "N^", "S^", "score"});
    for (size_t i = 0; i < p.candidates.size(); ++i) {
      const ScoredCandidate& s = p.candidates[i];
      const SwapWindow& w = x.windows[s.window];
      cl.AddRow({absl::StrCat(i), names.LabelOf(w.tensor, LabelForm::kCell),
                 absl::StrCat(w.size_bytes), absl::StrCat(w.last_fwd_op, "->", w.first_bwd_op),
                 absl::StrCat(p.release_wait ? w.last_fwd_op + 1 : w.cover_begin, "..",
                              w.cover_end()),
                 absl::StrCat(s.n_mre),
                 absl::StrFormat("%.3f", s.n_hat), absl::StrFormat("%.3f", s.s_hat),
                 absl::StrFormat("%.3f", s.score)});
    }
    absl::StrAppend(&out, cl.Render(/*left_columns=*/2));  // rank, tensor (a name)
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
  const TensorLabeler names(c.trace);
  for (const ChameleonPass& p : x.passes) {
    json cands = json::array();
    for (const ScoredCandidate& s : p.candidates) {
      const SwapWindow& w = x.windows[s.window];
      cands.push_back({{"tensor_id", c.trace.tensor(w.tensor).trace_id},
                       {"label", names.LabelOf(w.tensor)},
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
                      {"num_mre_entries", p.mrl_entries},
                      {"release_wait", p.release_wait},
                      {"candidates", std::move(cands)}});
  }
  json decisions = json::array();
  for (const ChameleonDecision& d : x.decisions) {
    json j = {{"kind", std::string(ChameleonDecisionKindName(d.kind))},
              {"round", d.round},
              {"pass", d.pass},
              {"reason", d.reason},
              {"num_mre_entries_after", d.mrl_entries_after}};
    if (d.window >= 0) {
      j["tensor_id"] = c.trace.tensor(x.windows[d.window].tensor).trace_id;
      j["label"] = names.LabelOf(x.windows[d.window].tensor);
    }
    if (d.layer >= 0) j["layer"] = d.layer;
    if (d.swap_in_op >= 0) j["swap_in_op"] = d.swap_in_op;
    if (d.release_op >= 0) j["release_op"] = d.release_op;
    if (d.stall_ns > 0) j["stall_ns"] = d.stall_ns;
    if (!d.mrl_after.empty()) j["mrl_after"] = runs(d.mrl_after);
    decisions.push_back(std::move(j));
  }
  return {{"num_layers_per_segment", x.layers_per_segment},
          {"layers_source", std::string(LayerCountSourceName(x.layers_source))},
          {"op_durations", std::string(DurationSourceName(x.durations))},
          {"iteration_time_ns", x.iteration_time_ns},
          {"layers", std::move(layers)},
          {"num_initial_mrl_entries", x.initial_mrl_entries},
          {"initial_mrl", runs(x.initial_mrl)},
          {"passes", std::move(passes)},
          {"decisions", std::move(decisions)},
          {"num_rounds", x.rounds},
          {"maximal_fallback_used", x.maximal_fallback_used}};
}

// The op of the unswapped peak of the planned iteration.
int32_t UnswappedPeakOp(const Context& c) {
  int32_t peak = 0;
  for (int32_t i = 0, n = c.trace.iteration(c.iteration).num_ops(); i < n; ++i) {
    if (c.problem.curve->unswapped_bytes()[c.begin + i] >
        c.problem.curve->unswapped_bytes()[c.begin + peak]) {
      peak = i;
    }
  }
  return peak;
}

std::string RenderSummary(const Context& c, const Policy& p, const CheckReport& r,
                          const std::string& output) {
  const PlanningProblem& pr = c.problem;
  const DeviceModel& m = c.device.model;
  int64_t bytes = p.TotalItemBytes();
  auto peak_at = [&](int64_t b, int32_t op) {
    return absl::StrCat(Bytes(b), op >= 0 ? absl::StrCat(" at ", OpText(c, op)) : "");
  };
  std::string out;
  TextTable t({"plan", "chameleon"});
  t.AddRow({"trace", absl::StrCat(c.trace.source(), ", iteration ", c.iteration, " (",
                                  c.trace.iteration(c.iteration).num_ops(), " ops)")});
  t.AddRow({"budget", absl::StrCat(Bytes(pr.budget_bytes()), " = device memory ",
                                   Bytes(m.capacity_bytes), " (", m.name, ") - reserve ",
                                   Bytes(m.reserve_bytes))});
  t.AddRow({"budget on", BudgetBasisText(c.basis)});
  t.AddRow({"link", LinkText(m)});
  t.AddRow({"compute", ComputeScaleText(c.device)});
  t.AddRow({"tensors swapped", absl::StrCat(p.items.size())});
  t.AddRow({"bytes out / in", absl::StrCat(Bytes(bytes), " / ", Bytes(bytes))});
  t.AddRow({"peak unswapped", peak_at(r.peak_unswapped_bytes, UnswappedPeakOp(c))});
  t.AddRow({"peak with policy", peak_at(r.peak_bytes, r.peak_op)});
  if (r.reserved_modelled) {
    t.AddRow({"reserved peak", absl::StrCat(peak_at(r.reserved_peak_bytes, r.reserved_peak_op),
                                            r.reserved_ooms == 0 ? ", fits the budget"
                                                                 : ", does not fit the budget")});
  }
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

std::string RenderItems(const Policy& p, const TensorLabeler& names) {
  // A release that waits for its copy out is marked "<release>*" (legend below).
  bool waits = false;
  for (const PolicyItem& it : p.items) waits = waits || it.release_waits_for_copy;
  TextTable items({"tensor", "bytes", "swap-out", "release", "swap-in", "first use"});
  for (const PolicyItem& it : p.items) {
    items.AddRow({names.Label(it.tensor_id, LabelForm::kCell), absl::StrCat(it.size_bytes),
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
  const TensorLabeler names(c.trace);
  for (const PolicyItem& it : p.items) {
    items.push_back({{"tensor_id", it.tensor_id},
                     {"label", names.Label(it.tensor_id)},
                     {"size_bytes", it.size_bytes},
                     {"swap_out_op", it.swap_out_op},
                     {"release_op", it.release_op},
                     {"swap_in_op", it.swap_in_op},
                     {"first_use_op", it.first_use_op},
                     {"release_waits_for_copy", it.release_waits_for_copy}});
  }
  const SimulationResult& s = c.simulation;
  return {{"trace", c.trace.source()},
          {"iteration", c.iteration},
          {"num_ops", c.trace.iteration(c.iteration).num_ops()},
          {"planner", p.planner},
          {"device", DeviceJson(c.device)},
          {"budget_bytes", p.BudgetBytes()},
          {"warnings", WarningsJson(c.device.warnings)},
          {"num_items", p.items.size()},
          {"d2h_bytes", p.TotalItemBytes()},
          {"h2d_bytes", p.TotalItemBytes()},
          {"peak_unswapped_bytes", r.peak_unswapped_bytes},
          {"peak_unswapped_op", UnswappedPeakOp(c)},
          {"peak_with_policy_bytes", r.peak_bytes},
          {"peak_with_policy_op", OpJson(r.peak_op)},
          {"expected_overhead_ns", p.expected_overhead_ns},
          {"num_release_waits", r.release_waits},
          {"check", "clean"},
          {"feasible", !s.oom.occurred},
          {"iteration_time_ns", s.iteration_time_ns},
          {"ideal_iteration_time_ns", s.ideal_time_ns},
          {"overhead_vs_ideal_fraction", s.overhead_vs_ideal},
          {"stall_ns", s.stall_ns},
          {"reserved_peak_bytes", r.reserved_modelled ? nlohmann::json(r.reserved_peak_bytes)
                                                      : nlohmann::json()},
          {"budget_on", std::string(BudgetOnName(c.basis.on))},
          {"budget_basis", BudgetBasisText(c.basis)},
          {"items", std::move(items)}};
}

absl::Status RunPlan(PlanArgs& a) {
  a.flags.Parse();
  if (absl::Status s = a.options.Validate(); !s.ok()) a.flags.Add(std::string(s.message()));
  SWAPPLAN_ASSIGN_OR_RETURN(Trace recorded, ReadTraceArg(a.trace, &a.flags));
  const int32_t iteration = ResolveIteration(a.iteration, recorded, &a.flags);
  const ResolvedDevice device =
      ResolveDevice(a.device, TraceDeviceDefaults(recorded), {}, &a.flags);
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  PrintWarnings(device.warnings);
  // The planner, checker and simulator scale recorded durations by the
  // device model's compute_time_scale themselves.
  const Trace& trace = recorded;
  SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
  Context c{trace, iteration, trace.iteration(iteration).op_begin, device, {}, {}};
  c.problem = {.trace = &trace, .iteration = iteration, .curve = &curve};
  c.problem.device = device.model;
  c.basis = ResolveBudgetBasis(a.budget, device.model, &a.flags);
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  const bool reserved = c.basis.on == BudgetOn::kReserved;
  if (reserved && (a.remote.server || a.explain)) {
    return Error(ErrorKind::kUsage,
                 "--budget-on reserved plans in this process without --explain: drop --server / "
                 "--explain, or give --budget-on allocated");
  }
  c.problem.budget_on = c.basis.on;
  c.problem.allocator = c.basis.allocator;
  c.problem.reserved_method = ResolveReservedMethod(a.budget);
  ChameleonPlanner planner(a.options);
  ChameleonExplanation why;
  if (a.remote.server && a.explain) {
    return Error(ErrorKind::kUsage, "--explain needs the planner in this process: drop --server");
  }
  absl::StatusOr<Policy> policy =
      a.remote.server
          ? RemotePlan(a.remote, trace, iteration, device.model, "chameleon", a.option_values)
          : reserved ? planner.Plan(c.problem)
                     : planner.PlanExplained(c.problem, a.explain ? &why : nullptr);
  if (!policy.ok()) {
    if (a.explain && KindOf(policy.status()) == ErrorKind::kInfeasible) {
      std::string out;
      if (a.json) {
        nlohmann::json j = {{"trace", trace.source()},
                            {"iteration", iteration},
                            {"num_ops", trace.iteration(iteration).num_ops()},
                            {"planner", "chameleon"},
                            {"device", DeviceJson(device)},
                            {"budget_bytes", c.problem.budget_bytes()},
                            {"warnings", WarningsJson(device.warnings)},
                            {"feasible", false},
                            {"infeasible_reason", std::string(policy.status().message())},
                            {"explanation", ExplanationJson(c, why)}};
        out = j.dump(1) + "\n";
      } else {
        out = RenderExplanation(c, why);
      }
      SWAPPLAN_RETURN_IF_ERROR(WriteOutput("", out));
    }
    return policy.status();
  }
  // A local plan's FinishPolicy recorded device.model; the service records
  // the model it resolved from the DeviceSpec, which may differ (a field
  // given as 0 is not sent): the policy keeps the one judged here.
  if (a.remote.server) policy->device = device.model;
  SWAPPLAN_ASSIGN_OR_RETURN(
      CheckReport report,
      CheckPolicy(trace, *policy,
                  {.op_time_model = a.options.op_time_model,
                   .iteration_time_ns = a.options.iteration_time_ns,
                   .budget_on = c.basis.on,
                   .allocator = c.basis.allocator,
                   .report_reserved = reserved || AllocatorGiven(a.budget)}));
  if (!report.clean()) {
    return absl::InternalError(absl::StrCat("the planner's policy fails the checker: ",
                                            report.violations.front().message));
  }
  // The common yardstick: the evaluation simulator on the budget.
  SimulatorOptions sim_options;
  sim_options.device = device.model;
  SWAPPLAN_ASSIGN_OR_RETURN(c.simulation, Simulate(trace, *policy, sim_options));
  policy->simulated_iteration_time_ns = c.simulation.iteration_time_ns;
  // A trace whose iteration takes longer than a policy may state (1e17 ns:
  // Policy::ValidateHeader, `bad-estimate`) is refused naming the trace,
  // before WritePolicy would refuse the policy naming no file.
  if (absl::Status st = policy->ValidateHeader(); !st.ok()) {
    absl::Status named(st.code(), absl::StrCat(trace.source(), ": ", st.message()));
    st.ForEachPayload(
        [&](absl::string_view url, const absl::Cord& p) { named.SetPayload(url, p); });
    return named;
  }
  const std::string output = a.output.value_or("");
  if (!output.empty()) SWAPPLAN_RETURN_IF_ERROR(WritePolicy(*policy, output));
  std::string out;
  if (a.json) {
    nlohmann::json j = SummaryJson(c, *policy, report);
    if (!output.empty()) j["policy_file"] = output;
    if (a.explain) j["explanation"] = ExplanationJson(c, why);
    out = j.dump(1) + "\n";
  } else {
    out = RenderSummary(c, *policy, report, output);
    if (a.explain) {
      absl::StrAppend(&out, "\n", RenderItems(*policy, TensorLabeler(c.trace)), "\n", RenderExplanation(c, why));
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
  a->flags.Positional(sub, "trace", &a->trace, "Trace file", /*required=*/true);
  AddDeviceFlags(sub, &a->flags, &a->device, {.remote_tier = true});
  AddBudgetFlags(sub, &a->flags, &a->budget, {.planning = true});
  AddIterationFlag(sub, &a->flags, &a->iteration);
  // A plain pointer: the setter lives in a->flags, inside *a (a shared_ptr
  // here would be a reference cycle).
  ChameleonOptions* options = &a->options;
  AddPlannerOptionFlags(sub, &a->flags, ChameleonOptionTable().Describe(ChameleonOptions()),
                        [options, values = &a->option_values](const std::string& name,
                                                               const std::string& value) {
                          (*values)[name] = value;
                          return ChameleonOptionTable().SetValue(options, name, value);
                        });
  a->flags.Text(sub, "-o,--output", &a->output, "Write the policy (.json: JSON, else binary)");
  sub->add_flag("--json", a->json, "Machine-readable JSON report (docs/json/plan.schema.json)");
  sub->add_flag("--explain", a->explain,
                "Print the layer table, MRL, candidate lists and every decision");
  AddRemoteFlags(sub, &a->flags, &a->remote);
  sub->callback([a, action] { *action = [a]() { return RunPlan(*a); }; });
}

}  // namespace swapplan::cli
