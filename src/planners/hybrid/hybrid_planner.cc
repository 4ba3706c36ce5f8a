// The hybrid planner (hybrid_planner.h).
#include "swapplan/planners/hybrid/hybrid_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "planners/hybrid/swaps.h"
#include "planners/baselines/common.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/recompute.h"
#include "swapplan/util/error.h"
#include "swapplan/util/shortfall.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::Status HybridOptions::Validate() const {
  if (!(min_ratio > 0) || !(max_ratio >= min_ratio) || !std::isfinite(max_ratio)) {
    return absl::InvalidArgumentError(absl::StrCat("hybrid options: min_ratio ", min_ratio,
                                                   " and max_ratio ", max_ratio,
                                                   " must satisfy 0 < min_ratio <= max_ratio"));
  }
  if (variants < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("hybrid options: variants is ", variants, "; must be >= 1"));
  }
  if (min_tensor_bytes < 0 || swap_min_tensor_bytes < 0 || logical_layers < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hybrid options: min_tensor_bytes ", min_tensor_bytes, ", swap_min_tensor_bytes ",
        swap_min_tensor_bytes, " and logical_layers ", logical_layers, " must be >= 0"));
  }
  if (!(swap_only_skip_overhead_fraction >= 0) || !std::isfinite(swap_only_skip_overhead_fraction)) {
    return absl::InvalidArgumentError(
        absl::StrCat("hybrid options: swap_only_skip_overhead is ",
                     swap_only_skip_overhead_fraction, "; must be a finite fraction >= 0"));
  }
  return absl::OkStatus();
}

const OptionTable<HybridOptions>& HybridOptionTable() {
  using O = HybridOptions;
  static const OptionTable<O> table({
      {"min_ratio", OptionType::kDecimal,
       "Smallest cut-off on recompute time / h2d copy time for recomputing a tensor", "",
       [](const O& o) { return absl::StrCat(o.min_ratio); },
       [](O& o, absl::string_view v) { return ParseOptionDecimal(v, &o.min_ratio); }},
      {"max_ratio", OptionType::kDecimal, "Largest finite cut-off on that ratio", "",
       [](const O& o) { return absl::StrCat(o.max_ratio); },
       [](O& o, absl::string_view v) { return ParseOptionDecimal(v, &o.max_ratio); }},
      {"variants", OptionType::kInt,
       "Finite cut-offs tried (geometric), besides swap-only and recompute-all", "",
       [](const O& o) { return absl::StrCat(o.variants); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.variants); }},
      {"min_tensor_bytes", OptionType::kBytes, "Smaller activations are not recomputed", "",
       [](const O& o) { return absl::StrCat(o.min_tensor_bytes); },
       [](O& o, absl::string_view v) { return ParseOptionBytes(v, &o.min_tensor_bytes); }},
      {"swap_min_tensor_bytes", OptionType::kBytes,
       "Smaller activations are not swapped (Chameleon's min_tensor_bytes)", "",
       [](const O& o) { return absl::StrCat(o.swap_min_tensor_bytes); },
       [](O& o, absl::string_view v) { return ParseOptionBytes(v, &o.swap_min_tensor_bytes); }},
      {"logical_layers", OptionType::kInt,
       "Logical layers of the swap planning (0: model_layers, else Chameleon's default)", "",
       [](const O& o) { return absl::StrCat(o.logical_layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.logical_layers); }},
      {"prune_variants", OptionType::kBool,
       "Skip the cut-offs whose re-run producers alone exceed the fastest checked variant", "",
       [](const O& o) { return std::string(o.prune_variants ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.prune_variants); }},
      {"swap_only_last", OptionType::kBool,
       "Heuristic order: recompute cut-offs first, stop at the first slower one, swap-only last",
       "", [](const O& o) { return std::string(o.swap_only_last ? "true" : "false"); },
       [](O& o, absl::string_view v) { return ParseOptionBool(v, &o.swap_only_last); }},
      {"swap_only_skip_overhead", OptionType::kDecimal,
       "With swap_only_last: the swap-only plan is skipped only when the best variant's overhead "
       "over the ideal time is at most this fraction (what skipping it can cost at most)",
       "", [](const O& o) { return absl::StrCat(o.swap_only_skip_overhead_fraction); },
       [](O& o, absl::string_view v) {
         return ParseOptionDecimal(v, &o.swap_only_skip_overhead_fraction);
       }},
  });
  return table;
}

absl::Status HybridPlanner::SetOption(absl::string_view name, absl::string_view value) {
  HybridOptions next = options_;
  SWAPPLAN_RETURN_IF_ERROR(HybridOptionTable().Set("hybrid", &next, name, value));
  SWAPPLAN_RETURN_IF_ERROR(next.Validate());
  options_ = next;
  return absl::OkStatus();
}

namespace {

struct Candidate {
  ActivationWindow window;
  double rho = 0;  // recompute time / h2d copy time
};

// One variant: the RECOMPUTE items of `chosen`, made exact, the swaps
// planned around them, merged and made exact again. With `hoist`, a chosen
// tensor that another recipe produces on the way is re-run there once (see
// below; *hoisted says whether any was); without, every item stays at its
// first backward use and a recipe that needs another dropped tensor
// re-makes it as a transient intermediate (its op runs twice, the tensor is
// not held from the earlier recipe to its own use). ResourceExhausted from
// Chameleon when the swaps cannot close the gap. `base`: the policy the
// variant starts from (BaselinePolicy: fingerprint, device, parameters).
// *resolved: the returned policy's resolution on problem.device (all
// issues), for Simulator::RunResolved.
absl::StatusOr<Policy> PlanVariant(const PlanningProblem& problem,
                                   const std::vector<const Candidate*>& chosen,
                                   const PolicyResolver& resolver,
                                   const ResolveOptions& resolve, int32_t logical_layers,
                                   int64_t min_tensor_bytes, const Policy& base, bool hoist,
                                   bool* hoisted, ResolvedPolicy* resolved) {
  *hoisted = false;
  const Trace& trace = *problem.trace;
  const int32_t it = problem.iteration;
  Policy recompute = base;
  for (const Candidate* c : chosen) {
    const ActivationWindow& w = c->window;
    PolicyItem item = MakePolicyItem(trace, it, w.tensor, w.last_forward_use, w.last_forward_use,
                                     w.first_backward_use, w.first_backward_use);
    item.action = ItemAction::kRecompute;
    recompute.items.push_back(std::move(item));
  }
  // A chosen tensor that another recipe produces on the way (a chain) is
  // re-run there once, as a target, instead of twice: its swap_in_op moves
  // to that recipe's op. Repeated until no recipe chains through a chosen
  // tensor (each round moves swap-ins strictly earlier).
  // The last round's resolution (no move) is the resolution of `recompute`
  // as it stands: the exactness step starts from it instead of resolving
  // the same policy again.
  std::optional<ResolvedPolicy> settled;
  for (int32_t round = 0; round < 16; ++round) {
    SWAPPLAN_ASSIGN_OR_RETURN(ResolvedPolicy rp, resolver.Resolve(recompute, problem.device, resolve));
    if (!hoist) {
      settled = std::move(rp);
      break;
    }
    absl::flat_hash_map<TensorId, int32_t> item_of;
    for (const ResolvedItem& ri : rp.items) item_of[ri.tensor] = ri.item;
    bool moved = false;
    for (const ResolvedRecompute& g : rp.recomputes) {
      const int32_t op = rp.OpAt(g.position);
      for (TensorId x : g.intermediates) {
        auto f = item_of.find(x);
        if (f == item_of.end()) continue;
        PolicyItem& item = recompute.items[f->second];
        if (item.swap_in_op > op && item.release_op < op) {
          item.swap_in_op = op;
          moved = true;
        }
      }
    }
    if (!moved) {
      settled = std::move(rp);
      break;
    }
    *hoisted = true;
  }
  // MakeRecomputeExact (baselines/common.h) from the settled resolution
  // (its first round): drops refused recipes, raises understated costs and
  // hands back the final policy's resolution.
  ResolvedPolicy rp;
  SWAPPLAN_RETURN_IF_ERROR(MakeRecomputeExact(problem, resolver, resolve, &recompute, &rp,
                                              settled.has_value() ? &*settled : nullptr));
  const int32_t n = rp.num_ops;
  hybrid_internal::SwapInputs overlay;
  overlay.fingerprint = resolver.fingerprint();
  if (!rp.items.empty()) {
    overlay.bytes_delta.assign(n, 0);
    overlay.extra_compute_ns.assign(n, 0);
    for (const ResolvedItem& ri : rp.items) {
      for (int32_t op = ri.release + 1; op < ri.in; ++op) overlay.bytes_delta[op] -= ri.size_bytes;
      overlay.excluded.push_back(ri.tensor);
    }
    for (const ResolvedRecompute& g : rp.recomputes) {
      overlay.extra_compute_ns[g.position] += g.cost_ns;
      overlay.bytes_delta[g.position] +=
          std::max<int64_t>(0, g.transient_bytes - rp.alloc_at[g.position]);
      for (TensorId leaf : g.leaves) overlay.pinned.push_back({leaf, g.position});
    }
  }
  SWAPPLAN_ASSIGN_OR_RETURN(
      Policy swaps,
      hybrid_internal::PlanSwaps(problem, logical_layers, min_tensor_bytes, std::move(overlay)));
  Policy merged = std::move(recompute);
  for (PolicyItem& item : swaps.items) merged.items.push_back(std::move(item));
  SWAPPLAN_RETURN_IF_ERROR(MakeRecomputeExact(problem, resolver, resolve, &merged, resolved));
  merged.device = problem.device;
  return merged;
}

}  // namespace

absl::StatusOr<Policy> HybridPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const Trace& trace = *problem.trace;
  const int32_t it = problem.iteration;
  SWAPPLAN_ASSIGN_OR_RETURN(RecomputeAnalysis analysis,
                            RecomputeAnalysis::Build(trace, it, problem.device));
  SWAPPLAN_ASSIGN_OR_RETURN(PolicyResolver resolver, PolicyResolver::Create(trace, it));
  const double h2d = problem.device.h2d_bandwidth_bytes_per_s;
  std::vector<Candidate> candidates;
  for (const ActivationWindow& w : ActivationWindows(trace, it)) {
    if (w.size_bytes < options_.min_tensor_bytes) continue;
    if (analysis.blocker(w.tensor) != RecomputeBlocker::kNone) continue;
    const int32_t p = analysis.producer(w.tensor);
    if (p < 0 || p > w.last_forward_use) continue;
    // Its own recipe with everything else where the trace has it: the
    // producer plus whatever the trace freed before the backward use.
    const int32_t at = w.first_backward_use;
    const OpIndex begin = trace.iteration(it).op_begin;
    const RecomputeRecipe r = analysis.Plan({w.tensor}, at, [&](TensorId x) {
      const TensorLifetime& lt = trace.lifetime(x);
      return lt.occupies_device() && lt.alloc_op < begin + at && lt.free_op >= begin + at;
    });
    if (!r.ok()) continue;
    const double copy_ns = TransferNs(w.size_bytes, h2d);
    candidates.push_back({w, copy_ns > 0 ? static_cast<double>(r.cost_ns) / copy_ns : 0.0});
  }
  std::vector<double> cutoffs = {-1.0};  // swap only
  for (int32_t k = 0; k < options_.variants; ++k) {
    const double f = options_.variants == 1 ? 0.0 : static_cast<double>(k) / (options_.variants - 1);
    cutoffs.push_back(options_.min_ratio * std::pow(options_.max_ratio / options_.min_ratio, f));
  }
  cutoffs.push_back(std::numeric_limits<double>::infinity());

  SimulatorOptions sim_options;
  sim_options.device = problem.device;
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(trace, it, sim_options));
  // The policy every variant starts from (fingerprint, device, options).
  const Policy base =
      BaselinePolicy(problem, "hybrid", HybridOptionTable().ToParameters(options_));
  // Every resolution of every variant shares the analysis and the recipes
  // walked so far (resolver.h RecipeMemo: identical results, each recipe
  // walked once per distinct availability).
  RecipeMemo memo;
  const ResolveOptions resolve{
      .all_issues = true, .recompute_analysis = &analysis, .recipe_memo = &memo};

  // Every variant that plans and runs without OOM, then the fastest that
  // passes the checker (checked in time order: one check in the usual case).
  struct Timed {
    Policy policy;
    int64_t time_ns = 0;
    int64_t ideal_ns = 0;
    size_t recomputes = 0;
    size_t set = 0;  // index in `sets` (ascending cut-offs)
    bool checked = false;
    std::string violation;  // the checker's first violation; empty: passes
    int64_t peak_bytes = 0;
  };
  std::vector<Timed> timed;
  CheckOptions check;
  check.device = problem.device;
  auto run_check = [&](Timed& t) -> absl::Status {
    if (t.checked) return absl::OkStatus();
    // The checker's resolution shares the resolver, analysis and recipes
    // (CheckPolicyShared: the same report as CheckPolicy).
    SWAPPLAN_ASSIGN_OR_RETURN(CheckReport report,
                              CheckPolicyShared(resolver, t.policy, check, resolve));
    t.checked = true;
    t.peak_bytes = report.peak_bytes;
    if (!report.violations.empty()) t.violation = report.violations.front().message;
    return absl::OkStatus();
  };
  auto faster = [](const Timed& a, const Timed& b) {
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    return a.recomputes != b.recomputes ? a.recomputes < b.recomputes : a.set < b.set;
  };
  // Pruning (prune_variants): whether a variant whose simulated time is at
  // least `bound_ns` can be skipped — some variant that is faster than the
  // bound passes the checker (checked here if it has not been).
  auto beaten = [&](int64_t bound_ns) -> absl::StatusOr<bool> {
    while (true) {
      Timed* best = nullptr;
      for (Timed& t : timed) {
        if (t.checked && !t.violation.empty()) continue;
        if (best == nullptr || faster(t, *best)) best = &t;
      }
      if (best == nullptr || best->time_ns >= bound_ns) return false;
      SWAPPLAN_RETURN_IF_ERROR(run_check(*best));
      if (best->violation.empty()) return true;
    }
  };
  // The bound holds for the evaluation simulator with no host dispatch time
  // (each op's compute then starts when the previous one ends, so the
  // iteration is at least the ideal plus every stated recomputation).
  const bool prune = options_.prune_variants && sim_options.host_dispatch_ns == 0;
  // The error of the smallest set that failed to plan (the first one in
  // ascending order, whatever order the sets are planned in).
  absl::Status first_error = absl::OkStatus();
  size_t first_error_set = 0;
  // The distinct chosen sets, ascending (a cut-off that chooses the same
  // set as the previous one is not planned again).
  std::vector<std::vector<const Candidate*>> sets;
  for (double cutoff : cutoffs) {
    std::vector<const Candidate*> chosen;
    for (const Candidate& c : candidates) {
      if (c.rho <= cutoff) chosen.push_back(&c);
    }
    if (!sets.empty() && chosen.size() == sets.back().size()) continue;
    sets.push_back(std::move(chosen));
  }
  // Whether the pruning skips set `i` (and, the sets ascending, every
  // larger one: its bound is at least as large).
  std::vector<char> counted(analysis.num_ops(), 0);
  auto pruned = [&](size_t i) -> absl::StatusOr<bool> {
    if (!prune) return false;
    // Every chosen tensor's producer re-runs at least once (distinct ops
    // counted once): a lower bound on the variant's stated recomputation.
    int64_t rerun_ns = 0;
    std::fill(counted.begin(), counted.end(), 0);
    for (const Candidate* c : sets[i]) {
      const int32_t p = analysis.producer(c->window.tensor);
      if (counted[p]) continue;
      counted[p] = 1;
      rerun_ns += analysis.op_ns(p);
    }
    return beaten(sim.ideal_time_ns() + rerun_ns);
  };
  // Plans and simulates set `i`; true when a variant was added to `timed`.
  // The variant as planned (hoisting chains), then — when that does not
  // fit (Chameleon gives up or the simulator runs out of memory) and
  // hoisting moved something — the same set without hoisting: holding a
  // hoisted tensor from the earlier recipe to its own use can be what
  // breaks the budget, re-making it as a transient may fit
  // (docs/hybrid.md, "Exhaustive cross-check").
  auto plan = [&](size_t i) -> absl::StatusOr<bool> {
    for (const bool hoist : {true, false}) {
      bool hoisted = false;
      ResolvedPolicy resolved;
      absl::StatusOr<Policy> p =
          PlanVariant(problem, sets[i], resolver, resolve, options_.logical_layers,
                      options_.swap_min_tensor_bytes, base, hoist, &hoisted, &resolved);
      if (!p.ok()) {
        if (!absl::IsResourceExhausted(p.status())) return p.status();
        if (first_error.ok() || i < first_error_set) {
          first_error = p.status();
          first_error_set = i;
        }
        if (hoisted) continue;
        return false;
      }
      // The simulator takes the exactness step's resolution of the policy
      // (Simulator::RunResolved: the same result as resolving it again).
      SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r,
                                sim.RunResolved(*p, std::move(resolved), problem.device, resolve));
      if (r.oom.occurred) {
        if (hoisted) continue;
        return false;
      }
      size_t recomputes = 0;
      for (const PolicyItem& item : p->items) recomputes += item.action == ItemAction::kRecompute;
      timed.push_back({*std::move(p), r.iteration_time_ns, r.ideal_time_ns, recomputes, i});
      return true;
    }
    return false;
  };
  if (!options_.swap_only_last || sets.size() < 2) {
    // Every set in ascending order, until the pruning stops.
    for (size_t i = 0; i < sets.size(); ++i) {
      SWAPPLAN_ASSIGN_OR_RETURN(bool skip, pruned(i));
      if (skip) break;
      SWAPPLAN_RETURN_IF_ERROR(plan(i).status());
    }
  } else {
    // swap_only_last (a heuristic, not a bound): the recompute sets
    // ascending until one is slower than the fastest so far (or pruned),
    // then the swap-only set only when no larger set's variant beat the
    // smallest recompute set's, passed the checker and is within
    // swap_only_skip_overhead of the ideal time.
    std::optional<size_t> best;  // index in `timed` of the fastest so far
    for (size_t i = 1; i < sets.size(); ++i) {
      SWAPPLAN_ASSIGN_OR_RETURN(bool skip, pruned(i));
      if (skip) break;
      SWAPPLAN_ASSIGN_OR_RETURN(bool added, plan(i));
      if (!added) continue;
      const size_t k = timed.size() - 1;
      if (best.has_value() && !faster(timed[k], timed[*best])) break;
      best = k;
    }
    bool need_swap_only = true;
    for (Timed& t : timed) {
      if (t.set <= 1) continue;
      bool beats_smallest = true;
      for (const Timed& u : timed) {
        if (u.set == 1 && !faster(t, u)) beats_smallest = false;
      }
      if (!beats_smallest) continue;
      // Bounded regret: the swap-only variant takes at least the ideal
      // time, so skipping it costs at most t's overhead; over the bound it
      // is planned.
      const double overhead_ns = static_cast<double>(t.time_ns - t.ideal_ns);
      if (overhead_ns > options_.swap_only_skip_overhead_fraction * t.ideal_ns) continue;
      SWAPPLAN_RETURN_IF_ERROR(run_check(t));
      if (t.violation.empty()) need_swap_only = false;
    }
    if (need_swap_only) SWAPPLAN_RETURN_IF_ERROR(plan(0).status());
  }
  std::stable_sort(timed.begin(), timed.end(), faster);
  for (Timed& t : timed) {
    SWAPPLAN_RETURN_IF_ERROR(run_check(t));
    if (!t.violation.empty()) {
      if (first_error.ok()) {
        first_error = WithShortfall(
            absl::ResourceExhaustedError(
                absl::StrCat("hybrid: ", t.recomputes, " recomputations: ", t.violation)),
            std::max<int64_t>(t.peak_bytes - problem.budget_bytes(), 0));
      }
      continue;
    }
    t.policy.expected_peak_bytes = t.peak_bytes;
    t.policy.expected_overhead_ns = t.time_ns - t.ideal_ns;
    return std::move(t.policy);
  }
  if (!first_error.ok()) return first_error;
  return absl::ResourceExhaustedError(
      absl::StrCat("hybrid: no variant fits the budget of ", problem.budget_bytes(), " bytes"));
}

}  // namespace swapplan
