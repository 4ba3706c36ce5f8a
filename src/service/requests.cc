#include "service/requests.h"

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/device/presets.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/advisor/advisor_planner.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/service/cache.h"
#include "swapplan/service/convert.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::service {
namespace {

bool StartsWithBrace(absl::string_view bytes) {
  for (char c : bytes) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

absl::Status CheckIteration(const Trace& trace, int32_t iteration) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("iteration ", iteration, " is out of range: ", trace.source(),
                              " has ", trace.num_iterations(), " iterations"));
  }
  return absl::OkStatus();
}

// Every explicitly set field of `spec` over `m`.
void ApplySpec(const v1::DeviceSpec& spec, DeviceModel* m) {
  if (spec.capacity_bytes() != 0) m->capacity_bytes = spec.capacity_bytes();
  if (spec.reserve_bytes() != 0) m->reserve_bytes = spec.reserve_bytes();
  if (spec.h2d_bandwidth_bytes_per_s() != 0) {
    m->h2d_bandwidth_bytes_per_s = spec.h2d_bandwidth_bytes_per_s();
  }
  if (spec.d2h_bandwidth_bytes_per_s() != 0) {
    m->d2h_bandwidth_bytes_per_s = spec.d2h_bandwidth_bytes_per_s();
  }
  if (spec.copy_latency_ns() != 0) m->copy_latency_ns = spec.copy_latency_ns();
  if (spec.half_duplex()) m->copy_engines = 1;
  if (spec.compute_time_scale() != 0) m->compute_time_scale = spec.compute_time_scale();
  if (spec.tiers_size() > 0) m->tiers = TiersFromSpec(spec);
}

absl::Status NeedBandwidths(const DeviceModel& m, const Trace& trace) {
  for (auto [dir, bw] : {std::pair<const char*, double>{"h2d", m.h2d_bandwidth_bytes_per_s},
                         {"d2h", m.d2h_bandwidth_bytes_per_s}}) {
    if (bw <= 0) {
      return Error(ErrorKind::kUsage,
                   absl::StrCat("no ", dir, " bandwidth: set device.", dir,
                                "_bandwidth_bytes_per_s or device.preset (", trace.source(),
                                " does not record it)"));
    }
  }
  return absl::OkStatus();
}

void FillReport(const Trace& trace, int32_t iteration, const Policy& p, const CheckReport& r,
                const SimulationResult& s, v1::PlanReport* out) {
  out->set_trace(trace.source());
  out->set_iteration(iteration);
  out->set_num_ops(trace.iteration(iteration).num_ops());
  out->set_planner(p.planner);
  DeviceModelToProto(p.device, out->mutable_device());
  out->set_budget_bytes(p.BudgetBytes());
  out->set_num_items(static_cast<int32_t>(p.items.size()));
  out->set_d2h_bytes(p.TotalItemBytes());
  out->set_h2d_bytes(p.TotalItemBytes());
  out->set_peak_unswapped_bytes(r.peak_unswapped_bytes);
  out->set_peak_with_policy_bytes(r.peak_bytes);
  out->set_peak_with_policy_op(r.peak_op);
  out->set_expected_overhead_ns(static_cast<double>(p.expected_overhead_ns));
  out->set_num_release_waits(r.release_waits);
  out->set_check("clean");
  out->set_feasible(!s.oom.occurred);
  out->set_iteration_time_ns(s.iteration_time_ns);
  out->set_ideal_iteration_time_ns(s.ideal_time_ns);
  out->set_overhead_vs_ideal_fraction(s.overhead_vs_ideal);
  out->set_stall_ns(s.stall_ns);
}

}  // namespace

absl::StatusOr<DeviceModel> ResolveDeviceSpec(const v1::DeviceSpec& spec, const Trace& trace,
                                              bool need_capacity) {
  DeviceModel m;
  const TraceMetadata& md = trace.metadata();
  m.capacity_bytes = md.device_memory_bytes;
  m.h2d_bandwidth_bytes_per_s = md.h2d_bandwidth_bytes_per_s;
  m.d2h_bandwidth_bytes_per_s = md.d2h_bandwidth_bytes_per_s;
  if (!spec.preset().empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(m, DevicePresetModel(spec.preset()));
  }
  ApplySpec(spec, &m);
  if (m.capacity_bytes <= 0) {
    if (need_capacity) {
      return Error(ErrorKind::kUsage,
                   absl::StrCat("no device memory: set device.capacity_bytes or device.preset (",
                                trace.source(), " does not record it)"));
    }
    m.capacity_bytes = kUnlimitedCapacityBytes;
  }
  SWAPPLAN_RETURN_IF_ERROR(NeedBandwidths(m, trace));
  if (absl::Status s = m.Validate(); !s.ok()) {
    return Error(ErrorKind::kUsage, absl::StrCat("device: ", s.message()));
  }
  return m;
}


std::string PlanCacheKey(const std::string& kind, const std::string& trace_id, int32_t iteration,
                         const DeviceModel& d, const std::string& planner,
                         const std::map<std::string, std::string>& options) {
  std::string text = absl::StrCat("swapplan.v1 ", kind, "\ntrace ", trace_id, "\niteration ",
                                  iteration, "\nplanner ", planner, "\n");
  absl::StrAppend(&text, "device ", d.name, " ", d.capacity_bytes, " ", d.reserve_bytes, " ",
                  absl::StrFormat("%a %a", d.h2d_bandwidth_bytes_per_s,
                                  d.d2h_bandwidth_bytes_per_s),
                  " ", d.copy_latency_ns, " ", d.copy_engines, " ",
                  absl::StrFormat("%a %a %a %a", d.compute_time_scale, d.peak_flops_per_s,
                                  d.memory_bandwidth_bytes_per_s,
                                  d.interconnect_bandwidth_bytes_per_s),
                  " tiers ", d.tiers.size(), "\n");
  for (const MemoryTier& t : d.tiers) {
    absl::StrAppend(&text, "tier ", t.name, " ", t.capacity_bytes, " ",
                    absl::StrFormat("%a %a", t.store_bandwidth_bytes_per_s,
                                    t.load_bandwidth_bytes_per_s),
                    " ", t.latency_ns, " ", t.shared_by_ranks, "\n");
  }
  for (const auto& [name, value] : options) {
    // Lengths first: no two option lists give one text.
    absl::StrAppend(&text, "option ", name.size(), ":", name, "=", value.size(), ":", value, "\n");
  }
  return Sha256Hex(text);
}

absl::StatusOr<PlanOutcome> RunPlan(const Trace& trace, int32_t iteration,
                                    const DeviceModel& device, const std::string& planner_name,
                                    const std::map<std::string, std::string>& options,
                                    const PlanHooks& hooks) {
  SWAPPLAN_RETURN_IF_ERROR(CheckIteration(trace, iteration));
  const std::string name = planner_name.empty() ? "chameleon" : planner_name;
  absl::StatusOr<std::unique_ptr<Planner>> created = CreatePlanner(name);
  if (!created.ok()) return Error(ErrorKind::kNotFound, created.status().message());
  std::unique_ptr<Planner> planner = *std::move(created);
  for (const auto& [option, value] : options) {
    if (absl::Status s = planner->SetOption(option, value); !s.ok()) {
      return Error(ErrorKind::kUsage, absl::StrCat("planner ", name, ": ", s.message()));
    }
  }
  auto* advisor = dynamic_cast<AdvisorPlanner*>(planner.get());
  if (advisor != nullptr) {
    advisor->set_stop(hooks.stop);
    advisor->set_progress(hooks.progress);
  }
  SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
  PlanningProblem problem{.trace = &trace, .iteration = iteration, .curve = &curve};
  problem.device = device;
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  const auto start = std::chrono::steady_clock::now();
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, planner->Plan(problem));
  const int64_t plan_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport report,
                            CheckPolicy(trace, policy, CheckOptionsFor(policy)));
  if (!report.clean()) {
    return Error(ErrorKind::kInternal, absl::StrCat("planner ", name,
                                                    ": its policy fails the checker: ",
                                                    report.violations.front().message));
  }
  SimulatorOptions sim;
  sim.device = policy.device;
  SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult s, Simulate(trace, policy, sim));
  policy.simulated_iteration_time_ns = s.iteration_time_ns;
  PlanOutcome out;
  FillReport(trace, iteration, policy, report, s, out.response.mutable_report());
  out.response.set_policy(PolicyToBinary(policy));
  out.response.set_plan_time_ns(plan_ns);
  if (advisor != nullptr && advisor->last_result().has_value()) {
    out.search = *advisor->last_result();
  }
  return out;
}

absl::StatusOr<Policy> ParsePolicyBytes(absl::string_view bytes, const std::string& name) {
  if (bytes.empty()) return Error(ErrorKind::kMalformedInput, absl::StrCat(name, ": empty policy"));
  absl::StatusOr<Policy> p =
      StartsWithBrace(bytes) ? ParsePolicyJson(bytes, name) : ParsePolicyBinary(bytes, name);
  if (!p.ok() && KindOf(p.status()) == ErrorKind::kInternal) {
    return Error(ErrorKind::kMalformedInput, p.status().message());
  }
  return p;
}

absl::StatusOr<v1::CheckResponse> RunCheck(const Trace& trace, absl::string_view policy_bytes) {
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, ParsePolicyBytes(policy_bytes, "policy"));
  SWAPPLAN_RETURN_IF_ERROR(CheckFingerprint(policy, trace));
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport r, CheckPolicy(trace, policy, CheckOptionsFor(policy)));
  v1::CheckResponse out;
  CheckToProto(r, &out);
  return out;
}

absl::StatusOr<v1::SimulateResponse> RunSimulate(const Trace& trace,
                                                 const v1::SimulateRequest& req) {
  const std::string& policy_bytes = req.policy();
  const v1::DeviceSpec& spec = req.device();
  const int32_t iteration = req.iteration();
  Policy policy;
  DeviceModel m;
  const TraceMetadata& md = trace.metadata();
  if (!policy_bytes.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(policy, ParsePolicyBytes(policy_bytes, "policy"));
    if (absl::Status s = policy.Validate(); !s.ok()) {
      return Error(ErrorKind::kMalformedInput, absl::StrCat("policy: ", s.message()));
    }
    SWAPPLAN_RETURN_IF_ERROR(CheckFingerprint(policy, trace));
    m = policy.device;
    // The run may use the policy's budget.
    const int64_t budget = policy.BudgetBytes();
    m.capacity_bytes = budget > 0 ? budget : 0;
    m.reserve_bytes = 0;
  } else {
    SWAPPLAN_RETURN_IF_ERROR(CheckIteration(trace, iteration));
    policy.fingerprint = ComputeFingerprint(trace, iteration);
    m.capacity_bytes = md.device_memory_bytes;
  }
  if (m.h2d_bandwidth_bytes_per_s <= 0) m.h2d_bandwidth_bytes_per_s = md.h2d_bandwidth_bytes_per_s;
  if (m.d2h_bandwidth_bytes_per_s <= 0) m.d2h_bandwidth_bytes_per_s = md.d2h_bandwidth_bytes_per_s;
  if (!spec.preset().empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(m, DevicePresetModel(spec.preset()));
  }
  ApplySpec(spec, &m);
  if (m.capacity_bytes <= 0) m.capacity_bytes = kUnlimitedCapacityBytes;
  // The client's own resolution of its device flags, taken as it is.
  if (req.has_device_model()) m = DeviceModelFromProto(req.device_model());
  if (!policy.items.empty()) SWAPPLAN_RETURN_IF_ERROR(NeedBandwidths(m, trace));
  SimulatorOptions o;
  o.device = m;
  if (req.has_settings()) ApplySimulatorSettings(req.settings(), &o);
  if (absl::Status s = o.Validate(); !s.ok()) {
    return Error(ErrorKind::kUsage, absl::StrCat("device: ", s.message()));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, Simulate(trace, policy, o));
  v1::SimulateResponse out;
  SimulationToProto(r, &out);
  return out;
}

absl::StatusOr<v1::CompareResponse> RunCompare(const Trace& trace, const v1::CompareRequest& req) {
  SWAPPLAN_RETURN_IF_ERROR(CheckIteration(trace, req.iteration()));
  const bool ratio = req.oversubscription() > 0;
  SWAPPLAN_ASSIGN_OR_RETURN(DeviceModel device,
                            ResolveDeviceSpec(req.device(), trace, /*need_capacity=*/!ratio));
  CompareOptions o;
  o.iteration = req.iteration();
  if (ratio) o.oversubscription = req.oversubscription();
  o.simulator.device = device;
  o.planners.assign(req.planners().begin(), req.planners().end());
  for (const v1::PlannerOption& p : req.planner_options()) {
    o.planner_options.push_back({p.planner(), p.name(), p.value()});
  }
  if (absl::Status s = o.Validate(); !s.ok()) return Error(ErrorKind::kUsage, s.message());
  SWAPPLAN_ASSIGN_OR_RETURN(Comparison c, ComparePlanners(trace, o));
  v1::CompareResponse out;
  out.set_iteration(c.iteration);
  out.set_num_ops(c.num_ops);
  out.set_budget_bytes(c.budget_bytes);
  out.set_peak_unswapped_bytes(c.peak.bytes);
  out.set_ideal_time_ns(c.ideal_time_ns);
  for (const PlannerOutcome& r : c.rows) {
    v1::CompareRow* row = out.add_rows();
    row->set_planner(r.planner);
    row->set_unlimited_memory(r.unlimited_memory);
    row->set_planned(r.planned);
    row->set_valid(r.valid);
    row->set_invalid_reason(r.invalid_reason);
    row->set_feasible(r.feasible);
    row->set_infeasible_reason(r.infeasible_reason);
    if (r.sim.has_value()) {
      row->set_iteration_time_ns(r.sim->iteration_time_ns);
      row->set_overhead_vs_ideal_fraction(r.sim->overhead_vs_ideal);
      row->set_stall_ns(r.sim->stall_ns);
      row->set_peak_bytes(r.sim->peak_bytes);
    }
    row->set_items(static_cast<int64_t>(r.items));
    row->set_plan_time_ns(r.plan_time_ns);
  }
  return out;
}

absl::Status FillPolicyJson(v1::PlanResponse* response) {
  SWAPPLAN_ASSIGN_OR_RETURN(Policy p, ParsePolicyBinary(response->policy(), "policy"));
  response->set_policy_json(PolicyToJson(p));
  return absl::OkStatus();
}

}  // namespace swapplan::service
