// ComputeOptimum: build the swap MILP, seed it, solve it, cross-check the
// incumbent in the simulator (optimum.h).
#include "swapplan/optimum/optimum.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/checker.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::Status OptimumOptions::Validate() const {
  auto bad = [](absl::string_view field, auto value, absl::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimum options: ", field, " is ", value, "; ", rule));
  };
  if (time_limit_ns < 0) return bad("time_limit_ns", time_limit_ns, "must be >= 0");
  if (max_ops < 1) return bad("max_ops", max_ops, "must be >= 1");
  if (max_binaries < 1) return bad("max_binaries", max_binaries, "must be >= 1");
  if (threads < 1) return bad("threads", threads, "must be >= 1");
  if (max_order_pairs < 0) return bad("max_order_pairs", max_order_pairs, "must be >= 0");
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::string>> OptimumOptions::Parameters() const {
  std::vector<std::pair<std::string, std::string>> p = {
      {"time_limit_ns", absl::StrCat(time_limit_ns)},
      {"recompute", recompute ? "true" : "false"},
      {"advisor_kinds", advisor_kinds ? "true" : "false"},
      {"threads", absl::StrCat(threads)},
      {"max_order_pairs", absl::StrCat(max_order_pairs)}};
  // Written when set (the default since the simulator counts transients).
  if (recompute_transient) p.push_back({"recompute_transient", "true"});
  return p;
}

namespace {

using Clock = std::chrono::steady_clock;

int64_t Since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

// Simulated time of `policy` (release waits marked for the checker), or -1
// when it runs out of memory.
absl::StatusOr<int64_t> Judge(const SwapModel& model, Policy* policy) {
  SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, model.simulator().Run(*policy));
  if (r.oom.occurred) return -1;
  policy->simulated_iteration_time_ns = r.iteration_time_ns;
  policy->expected_peak_bytes = r.peak_bytes;
  policy->expected_overhead_ns = r.iteration_time_ns - r.ideal_time_ns;
  return r.iteration_time_ns;
}

// Times agree within `tol_ns` (the model's numerical tolerance, below).
bool SameTime(int64_t a, int64_t b, int64_t tol_ns) { return std::llabs(a - b) <= tol_ns; }

}  // namespace

absl::StatusOr<OptimumResult> ComputeOptimum(const PlanningProblem& problem,
                                             const OptimumOptions& options,
                                             const SimulatorOptions& sim_options,
                                             absl::Span<const Policy> warm_starts) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  const Trace& trace = *problem.trace;
  const int32_t ops = trace.iteration(problem.iteration).num_ops();
  if (ops > options.max_ops) {
    return Error(ErrorKind::kResourceLimit,
                 absl::StrCat("optimum: iteration ", problem.iteration, " of ", trace.source(),
                              " has ", ops, " ops; the MILP is for small traces (at most ",
                              options.max_ops, " ops; raise max_ops to try anyway)"));
  }
  const auto t0 = Clock::now();
  // The problem's device model is the one planned for (budget, link);
  // the simulator options add the host settings.
  SimulatorOptions so = sim_options;
  so.device = problem.device;
  SwapModelOptions mo;
  mo.recompute = options.recompute;
  mo.recompute_transient = options.recompute_transient;
  mo.advisor_kinds = options.advisor_kinds;
  mo.max_order_pairs = options.max_order_pairs;
  SWAPPLAN_ASSIGN_OR_RETURN(SwapModel model, SwapModel::Build(trace, problem.iteration, so, mo));
  OptimumResult res;
  res.iteration = problem.iteration;
  res.budget_bytes = problem.budget_bytes();
  res.ideal_ns = model.ideal_time_ns();
  res.model = model.stats();
  if (res.model.binaries > options.max_binaries) {
    return Error(ErrorKind::kResourceLimit,
                 absl::StrCat("optimum: the model of iteration ", problem.iteration, " of ",
                              trace.source(), " has ", res.model.binaries,
                              " binary columns (limit ", options.max_binaries, ")"));
  }
  Policy base;
  base.fingerprint = ComputeFingerprint(trace, problem.iteration);
  base.device = so.device;
  base.planner = "optimum";
  base.parameters = options.Parameters();

  MilpOptions milp;
  milp.time_limit_ns = options.time_limit_ns;
  milp.threads = options.threads;
  // The best warm start (by its simulated time once mapped into the model).
  int64_t best_start_ns = -1;
  std::optional<Policy> best_start;
  for (const Policy& w : warm_starts) {
    if (options.recompute_transient &&
        std::any_of(w.items.begin(), w.items.end(),
                    [](const PolicyItem& it) { return it.action == ItemAction::kRecompute; })) {
      continue;
    }
    int32_t skipped = 0;
    std::vector<std::pair<int32_t, double>> start = model.StartFrom(w, &skipped);
    res.warm_start_skipped += skipped;
    if (start.empty()) continue;
    std::vector<double> values(model.milp().num_columns(), 0.0);
    for (const auto& [c, v] : start) values[c] = v;
    Policy mapped = model.Extract(values, base);
    SWAPPLAN_ASSIGN_OR_RETURN(int64_t t, Judge(model, &mapped));
    if (t >= 0 && (best_start_ns < 0 || t < best_start_ns)) {
      best_start_ns = t;
      res.warm_start_items = static_cast<int32_t>(mapped.items.size());
      best_start = std::move(mapped);
      milp.start = std::move(start);
    }
  }
  res.build_time_ns = Since(t0);

  if (model.windows().empty()) {
    // Nothing over the budget: running without a policy is ideal.
    res.status = MilpStatus::kOptimal;
    res.lower_bound_ns = res.milp_bound_ns = res.milp_objective_ns = res.ideal_ns;
    Policy p = base;
    SWAPPLAN_ASSIGN_OR_RETURN(res.incumbent_ns, Judge(model, &p));
    res.policy = std::move(p);
    res.exact = res.proven_optimal = true;
    res.gap = 0;
    return res;
  }
  SWAPPLAN_ASSIGN_OR_RETURN(MilpSolution sol, SolveMilp(model.milp(), milp));
  // Numerical tolerance of the model's times: CBC's integrality tolerance
  // (1e-9) times the big M, both ways, plus rounding to whole ns.
  res.tolerance_ns = 2 + static_cast<int64_t>(std::ceil(2e-9 * model.big_m_us() * 1000.0));
  const int64_t tol_ns = res.tolerance_ns;
  res.status = sol.status;
  res.solve_time_ns = sol.solve_time_ns;
  res.nodes = sol.nodes;
  if (sol.status == MilpStatus::kInfeasible) {
    return Error(ErrorKind::kInfeasible,
                 absl::StrCat("optimum: no policy of the model's class fits the budget of ",
                              problem.budget_bytes(), " bytes in iteration ",
                              problem.iteration, " of ", trace.source()));
  }
  res.milp_bound_ns = std::isfinite(sol.best_bound)
                          ? static_cast<int64_t>(std::floor(sol.best_bound * 1000.0))
                          : 0;
  res.lower_bound_ns = std::max(res.ideal_ns, res.milp_bound_ns);
  if (!sol.values.empty()) {
    res.milp_objective_ns = SwapModel::ToNs(sol.objective);
    Policy p = model.Extract(sol.values, base);
    SWAPPLAN_ASSIGN_OR_RETURN(CheckReport check, CheckMarkingReleaseWaits(trace, &p));
    SWAPPLAN_ASSIGN_OR_RETURN(int64_t t, Judge(model, &p));
    if (t < 0 || !check.clean()) {
      return absl::InternalError(absl::StrCat(
          "optimum: the policy of the MILP's solution ",
          t < 0 ? "runs out of memory in the simulator"
                : absl::StrCat("fails the checker: ", check.violations.front().message)));
    }
    res.exact = SameTime(t, res.milp_objective_ns, tol_ns);
    res.incumbent_ns = t;
    res.policy = std::move(p);
  }
  if (best_start && (res.incumbent_ns < 0 || best_start_ns < res.incumbent_ns)) {
    // The relaxed rows can make the MILP's own choice simulate slower than
    // the best warm start: report the faster policy.
    SWAPPLAN_ASSIGN_OR_RETURN(CheckReport check, CheckMarkingReleaseWaits(trace, &*best_start));
    if (check.clean()) {
      res.incumbent_ns = best_start_ns;
      res.exact = false;
      res.policy = std::move(best_start);
    }
  }
  if (res.incumbent_ns >= 0) {
    const int64_t t = res.incumbent_ns;
    if (res.lower_bound_ns > t && !SameTime(res.lower_bound_ns, t, tol_ns)) {
      return absl::InternalError(absl::StrCat(
          "optimum: the MILP's bound ", res.lower_bound_ns, " ns exceeds the simulated time ", t,
          " ns of a policy of its class (a modelling error)"));
    }
    // The bound meets a simulated time: that policy is optimal in the class
    // (up to the tolerance; the simulated time is the figure reported).
    res.proven_optimal = SameTime(res.lower_bound_ns, t, tol_ns);
    if (res.proven_optimal) res.lower_bound_ns = t;
    res.gap = res.lower_bound_ns > 0
                  ? static_cast<double>(t - res.lower_bound_ns) / res.lower_bound_ns
                  : 0.0;
  }
  return res;
}

}  // namespace swapplan
