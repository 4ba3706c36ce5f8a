#include "swapplan/eval/compare.h"

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/curve/oversubscription.h"
#include "swapplan/planners/registry.h"
#include "swapplan/sim/checker.h"
#include "swapplan/util/utf8.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::Status CompareOptions::Validate() const {
  if (iteration < 0) {
    return absl::InvalidArgumentError(absl::StrCat("iteration ", iteration, " is negative"));
  }
  if (oversubscription != 0) {
    if (!(oversubscription >= 1.0) || !std::isfinite(oversubscription)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "budget: oversubscription ", oversubscription, " is not a finite ratio >= 1"));
    }
  } else if (simulator.device.capacity_bytes <= 0 ||
             simulator.device.capacity_bytes == kUnlimitedCapacityBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "budget: simulator.device.capacity_bytes is ",
        simulator.device.capacity_bytes == kUnlimitedCapacityBytes
            ? std::string("unlimited")
            : absl::StrCat(simulator.device.capacity_bytes),
        "; give the device's capacity or an oversubscription"));
  }
  if (optimum) SWAPPLAN_RETURN_IF_ERROR(optimum->Validate());
  SWAPPLAN_RETURN_IF_ERROR(allocator.Validate());
  for (const std::string& name : planners) {
    if (FindPlanner(name) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown planner '", name, "' (known: ", PlannerNames(), ")"));
    }
  }
  return simulator.Validate();
}

bool Comparison::AnyFeasible() const {
  for (const PlannerOutcome& r : rows) {
    if (!r.unlimited_memory && r.feasible) return true;
  }
  return false;
}

absl::Status JudgePolicy(const Trace& trace, const Simulator& sim, int64_t budget_bytes,
                         const CompareOptions& options, Policy policy, PlannerOutcome* row) {
  row->planned = true;
  row->items = policy.items.size();
  CheckOptions co = CheckOptionsFor(policy);
  const bool reserved = options.budget_on == BudgetOn::kReserved;
  if (reserved || options.model_reserved) {
    co.report_reserved = true;
    if (co.budget_on != BudgetOn::kReserved) co.allocator = options.allocator;
    co.budget_on = reserved && !row->unlimited_memory ? BudgetOn::kReserved : BudgetOn::kAllocated;
  }
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport check, CheckPolicy(trace, policy, co));
  // Not fitting the budget as reserved bytes makes a row infeasible, not
  // invalid.
  std::erase_if(check.violations, [](const Violation& v) {
    return v.kind == ViolationKind::kReservedOverBudget;
  });
  row->reserved_modelled = check.reserved_modelled;
  row->reserved_peak_bytes = check.reserved_peak_bytes;
  row->reserved_fits = check.reserved_modelled && check.reserved_ooms == 0;
  row->valid = check.clean();
  if (!row->valid) {
    row->invalid_reason = check.violations.front().message;
  } else {
    SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, sim.Run(policy));
    row->feasible = row->unlimited_memory ? r.peak_bytes <= budget_bytes : !r.oom.occurred;
    if (reserved && !row->unlimited_memory && !row->reserved_fits) row->feasible = false;
    policy.simulated_iteration_time_ns = r.iteration_time_ns;
    row->sim = std::move(r);
  }
  if (options.keep_policies) row->policy = std::move(policy);
  return absl::OkStatus();
}

absl::StatusOr<Comparison> ComparePlanners(const Trace& trace, const CompareOptions& options,
                                           const MemoryCurve* curve,
                                           const CompareProgress& progress) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  if (options.iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("iteration ", options.iteration,
                                                   " is out of range: ", trace.source(), " has ",
                                                   trace.num_iterations(), " iterations"));
  }
  std::vector<const PlannerInfo*> planners;
  if (options.planners.empty()) {
    for (const PlannerInfo& p : RegisteredPlanners()) {
      if (p.in_default_set) planners.push_back(&p);
    }
  } else {
    for (const std::string& name : options.planners) planners.push_back(FindPlanner(name));
  }
  std::optional<MemoryCurve> own;
  if (curve == nullptr) {
    SWAPPLAN_ASSIGN_OR_RETURN(own, ComputeMemoryCurve(trace));
    curve = &*own;
  }
  const IterationCurve& ic = curve->iterations()[options.iteration];
  Comparison c;
  c.iteration = options.iteration;
  c.num_ops = trace.iteration(options.iteration).num_ops();
  c.peak = ic.peak_unswapped;
  c.persistent_bytes = ic.persistent_bytes;

  // The device: the simulator options' model (bandwidths 0 = the trace
  // metadata's), at the oversubscription's budget when one is given.
  SimulatorOptions o = options.simulator;
  DeviceModel& d = o.device;
  if (options.oversubscription > 0) {
    SWAPPLAN_ASSIGN_OR_RETURN(d, OversubscribedDevice(d, ic, options.oversubscription));
  }
  c.oversubscription = options.oversubscription;
  c.budget_bytes = d.BudgetBytes();
  if (d.h2d_bandwidth_bytes_per_s == 0) {
    d.h2d_bandwidth_bytes_per_s = trace.metadata().h2d_bandwidth_bytes_per_s;
  }
  if (d.d2h_bandwidth_bytes_per_s == 0) {
    d.d2h_bandwidth_bytes_per_s = trace.metadata().d2h_bandwidth_bytes_per_s;
  }
  if (!(d.h2d_bandwidth_bytes_per_s > 0) || !(d.d2h_bandwidth_bytes_per_s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no copy bandwidth: ", trace.source(), " does not record one and none was given"));
  }
  SimulatorOptions unlimited = o;
  unlimited.device.capacity_bytes = kUnlimitedCapacityBytes;
  unlimited.device.reserve_bytes = 0;
  c.simulator = o;
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(trace, options.iteration, o));
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator ideal_sim,
                            Simulator::Create(trace, options.iteration, unlimited));
  c.ideal_time_ns = sim.ideal_time_ns();
  c.durations = sim.durations().source;
  PlanningProblem problem{.trace = &trace, .iteration = options.iteration, .device = d,
                          .curve = curve, .budget_on = options.budget_on,
                          .allocator = options.allocator,
                          .reserved_method = options.reserved_method};
  // Planners that search from the others' policies (the Advisor) run last
  // and get every policy that fit; rows keep the requested order.
  std::vector<std::unique_ptr<Planner>> instances;
  std::vector<size_t> order, later;
  for (size_t i = 0; i < planners.size(); ++i) {
    instances.push_back(planners[i]->create());
    (instances.back()->UsesSeedPolicies() ? later : order).push_back(i);
  }
  order.insert(order.end(), later.begin(), later.end());
  std::vector<std::optional<PlannerOutcome>> rows(planners.size());
  std::vector<Policy> fitting;
  for (size_t index : order) {
    const PlannerInfo* info = planners[index];
    Planner* planner = instances[index].get();
    PlannerOutcome row;
    row.planner = info->name;
    row.unlimited_memory = info->unlimited_memory;
    for (const CompareOptions::PlannerOption& opt : options.planner_options) {
      if (opt.planner != info->name) continue;
      if (absl::Status st = planner->SetOption(opt.name, opt.value); !st.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("planner option ", opt.planner, ".",
                                                       opt.name, "=", opt.value, ": ",
                                                       st.message()));
      }
    }
    if (planner->UsesSeedPolicies()) planner->SetSeedPolicies(fitting, o);
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<Policy> policy = absl::UnknownError("not planned");
    if (options.plan) {
      std::map<std::string, std::string> given;
      for (const CompareOptions::PlannerOption& opt : options.planner_options) {
        if (opt.planner == info->name) given[opt.name] = opt.value;
      }
      policy = options.plan(info->name, problem, given);
    } else {
      policy = planner->Plan(problem);
    }
    row.plan_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - t0)
                           .count();
    if (!policy.ok()) {
      if (KindOf(policy.status()) != ErrorKind::kInfeasible) {
        return absl::Status(policy.status().code(),
                            absl::StrCat(info->name, ": ", policy.status().message()));
      }
      row.infeasible_reason = std::string(policy.status().message());
      const std::string prefix = absl::StrCat(info->name, ": ");
      if (row.infeasible_reason.rfind(prefix, 0) == 0) {
        row.infeasible_reason = row.infeasible_reason.substr(prefix.size());
      }
    } else {
      // A copy for the planners that search from the others' (and the
      // bound's warm start), kept when it fits.
      const bool want = !info->unlimited_memory && (!later.empty() || options.optimum);
      Policy copy;
      if (want) copy = *policy;
      SWAPPLAN_RETURN_IF_ERROR(JudgePolicy(trace, info->unlimited_memory ? ideal_sim : sim,
                                           c.budget_bytes, options, *std::move(policy),
                                           &row));
      if (want && row.feasible) {
        copy.planner = info->name;
        fitting.push_back(std::move(copy));
      }
    }
    if (progress) progress(row);
    rows[index] = std::move(row);
  }
  for (std::optional<PlannerOutcome>& row : rows) c.rows.push_back(*std::move(row));
  if (options.optimum) {
    c.optimum_recompute = options.optimum->recompute;
    absl::StatusOr<OptimumResult> bound = ComputeOptimum(problem, *options.optimum, o, fitting);
    if (!bound.ok()) {
      c.optimum_status = bound.status();
    } else {
      for (PlannerOutcome& row : c.rows) {
        if (!row.feasible || row.unlimited_memory || !row.sim || bound->lower_bound_ns <= 0) continue;
        row.gap_to_bound = static_cast<double>(row.sim->iteration_time_ns - bound->lower_bound_ns) /
                           static_cast<double>(bound->lower_bound_ns);
      }
      c.optimum = *std::move(bound);
    }
  }
  return c;
}

absl::StatusOr<CompareOptions::PlannerOption> ParsePlannerOption(absl::string_view text) {
  const size_t dot = text.find('.'), eq = text.find('=');
  if (dot == absl::string_view::npos || eq == absl::string_view::npos || eq < dot || dot == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", EscapeForMessage(text), "': expected PLANNER.NAME=VALUE, e.g. advisor.time-limit-ns=30s"));
  }
  CompareOptions::PlannerOption o{std::string(text.substr(0, dot)),
                                  std::string(text.substr(dot + 1, eq - dot - 1)),
                                  std::string(text.substr(eq + 1))};
  if (FindPlanner(o.planner) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", EscapeForMessage(text), "': unknown planner (known: ", PlannerNames(),
                     ")"));
  }
  return o;
}

}  // namespace swapplan
