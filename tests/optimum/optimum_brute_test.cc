// The swap MILP against brute force: on random traces of at most 8
// tensors, every policy of the model's class (swap_model.h) — every subset
// of windows, each with every release and trigger its gap allows (not only
// the reduced domains of the model), SWAP / CLEAN / RECOMPUTE / WRAP — is
// run through the simulator; the best time must lie between the MILP's
// lower bound and its incumbent, and equal both when the MILP proves its
// incumbent optimal.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <tuple>
#include <vector>


#include "support/test_traces.h"
#include "swapplan/optimum/optimum.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/random.h"

namespace swapplan {
namespace {

struct Option {
  PolicyItem item;  // empty tensor_id sentinel: "none"
  bool none = true;
};

// Every policy of the class, by brute force: the best simulated time that
// fits (-1 when none does) and how many policies were run.
struct Brute {
  int64_t best_ns = -1;
  int64_t policies = 0;
};

Brute BruteForce(const Trace& trace, int64_t budget, int64_t limit) {
  const IterationInfo& iter = trace.iteration(0);
  const int32_t n = iter.num_ops();
  SimulatorOptions so;
  so.device.capacity_bytes = budget;
  so.record_timeline = true;
  absl::StatusOr<Simulator> sim = Simulator::Create(trace, 0, so);
  REQUIRE(sim.ok());
  // Ops over the budget without a policy. A window whose tensor is off
  // during none of them only adds copies (each stream is FIFO: one copy
  // less never delays another) and is left out — the one reduction the
  // enumeration shares with the model; releases and triggers are not
  // reduced.
  Policy none;
  none.fingerprint = ComputeFingerprint(trace, 0);
  absl::StatusOr<SimulationResult> unswapped = sim->Run(none);
  REQUIRE(unswapped.ok());
  std::vector<bool> over(n);
  for (int32_t k = 0; k < n; ++k) over[k] = unswapped->bytes_in_use[k] > budget;
  auto covers = [&](const PolicyItem& it) {
    for (int32_t k = 0; k < n; ++k) {
      const bool off = it.wraps ? (k < it.swap_in_op || k > it.release_op)
                                : (k > it.release_op && k < it.swap_in_op);
      if (off && over[k]) return true;
    }
    return false;
  };
  absl::StatusOr<OpDurations> dur = ComputeOpDurations(trace, 0);
  REQUIRE(dur.ok());
  auto writes = [&](int32_t op, TensorId t) {
    absl::Span<const TensorId> outs = trace.outputs(iter.op_begin + op);
    return std::find(outs.begin(), outs.end(), t) != outs.end();
  };
  // Per group (a tensor's gap, or its wrap), the options; each option knows
  // its kind through the item's flags.
  std::vector<std::vector<Option>> groups;
  std::vector<std::vector<int32_t>> group_uses;  // uses of the group's tensor
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    std::vector<int32_t> uses;
    for (OpIndex g : trace.tensor_uses(t)) uses.push_back(g - iter.op_begin);
    if (uses.empty()) continue;
    const TensorLifetime& lt = trace.lifetime(t);
    const bool persistent = lt.alloc_op < iter.op_begin && lt.free_op >= iter.op_end;
    const int64_t size = trace.tensor(t).size_bytes;
    auto item = [&](int32_t out, int32_t release, int32_t in, int32_t use) {
      PolicyItem it;
      it.tensor_id = trace.tensor(t).trace_id;
      it.size_bytes = size;
      it.swap_out_op = out;
      it.release_op = release;
      it.swap_in_op = in;
      it.first_use_op = use;
      return it;
    };
    if (persistent) {
      bool written = false;
      for (int32_t u : uses) written = written || writes(u, t);
      std::vector<Option> opts(1);
      for (int32_t s = 0; s <= uses.front(); ++s) {
        for (int32_t r = uses.back(); r < n; ++r) {
          for (bool clean : {false, true}) {
            if (clean && written) continue;
            PolicyItem it = item(uses.back(), r, s, uses.front());
            it.wraps = true;
            it.clean = clean;
            if (covers(it)) opts.push_back({it, false});
          }
        }
      }
      if (opts.size() > 1) {
        groups.push_back(std::move(opts));
        group_uses.push_back(uses);
      }
    }
    // Producer for RECOMPUTE: the one op writing t, not reading it.
    int32_t producer = -1, writers = 0;
    for (int32_t u : uses) {
      if (writes(u, t)) {
        producer = u;
        ++writers;
      }
    }
    const bool recomputable = !persistent && writers == 1 &&
                              trace.tensor(t).kind == TensorKind::kActivation &&
                              lt.alloc_op >= iter.op_begin;
    for (size_t j = 0; j + 1 < uses.size(); ++j) {
      const int32_t a = uses[j], b = uses[j + 1];
      std::vector<Option> opts(1);
      for (int32_t r = a; r < b; ++r) {
        for (int32_t s = r + 1; s <= b; ++s) {
          if (!covers(item(a, r, s, b))) continue;
          opts.push_back({item(a, r, s, b), false});
          if (!writes(a, t)) {
            PolicyItem c = item(a, r, s, b);
            c.clean = true;
            opts.push_back({c, false});
          }
          if (recomputable && producer <= a) {
            PolicyItem rc = item(a, r, s, b);
            rc.action = ItemAction::kRecompute;
            rc.recompute_ns = dur->duration_ns[producer];
            opts.push_back({rc, false});
          }
        }
      }
      if (opts.size() > 1) {
        groups.push_back(std::move(opts));
        group_uses.push_back(uses);
      }
    }
  }
  int64_t combos = 1;
  for (const auto& g : groups) {
    combos *= static_cast<int64_t>(g.size());
    if (combos > limit) return {-2, combos};
  }
  Brute out;
  std::vector<PolicyItem> chosen;
  Policy policy;
  policy.fingerprint = ComputeFingerprint(trace, 0);
  // Off the device just before op k, when a recomputation there runs: a
  // copy in triggered at k is still on the link (the resolver's view); a
  // tensor RECOMPUTEd at k too is re-made first.
  auto off_before = [&](uint64_t tensor_id, int32_t k) {
    for (const PolicyItem& it : chosen) {
      if (it.tensor_id != tensor_id) continue;
      const int32_t last_off = it.action == ItemAction::kRecompute ? it.swap_in_op - 1
                                                                   : it.swap_in_op;
      if (it.wraps ? (k <= last_off || k > it.release_op)
                   : (k > it.release_op && k <= last_off)) {
        return true;
      }
    }
    return false;
  };
  std::function<void(size_t)> walk = [&](size_t g) {
    if (g == groups.size()) {
      // CLEAN: came back from the host at its swap_out_op (an item of the
      // same tensor whose first use is that op). RECOMPUTE: the producer's
      // other inputs occupy the device just before the trigger.
      for (const PolicyItem& it : chosen) {
        if (it.clean && !it.wraps) {
          bool from_host = false;
          for (const PolicyItem& o : chosen) {
            from_host = from_host || (o.tensor_id == it.tensor_id && o.first_use_op == it.swap_out_op &&
                                      o.action == ItemAction::kSwap);
          }
          if (!from_host) return;
        }
        if (it.action == ItemAction::kRecompute) {
          int32_t producer = -1;
          for (OpIndex u : trace.tensor_uses(static_cast<TensorId>(it.tensor_id))) {
            if (writes(u - iter.op_begin, static_cast<TensorId>(it.tensor_id))) producer = u;
          }
          for (TensorId in : trace.inputs(producer)) {
            const TensorLifetime& l = trace.lifetime(in);
            const int32_t s = it.swap_in_op + iter.op_begin;
            if (!(l.alloc_op <= s && s <= l.free_op) ||
                off_before(trace.tensor(in).trace_id, it.swap_in_op)) {
              return;
            }
          }
        }
      }
      policy.items = chosen;
      std::stable_sort(policy.items.begin(), policy.items.end(),
                       [](const PolicyItem& a, const PolicyItem& b) {
                         return std::tie(a.swap_in_op, a.first_use_op, a.tensor_id) <
                                std::tie(b.swap_in_op, b.first_use_op, b.tensor_id);
                       });
      ++out.policies;
      absl::StatusOr<SimulationResult> r = sim->Run(policy);
      if (!r.ok() || r->oom.occurred) return;
      if (out.best_ns < 0 || r->iteration_time_ns < out.best_ns) out.best_ns = r->iteration_time_ns;
      return;
    }
    for (const Option& o : groups[g]) {
      if (!o.none) chosen.push_back(o.item);
      walk(g + 1);
      if (!o.none) chosen.pop_back();
    }
  };
  walk(0);
  return out;
}

TEST_CASE("the MILP agrees with brute force on random small traces", "[optimum][brute]") {
  int32_t compared = 0, proven = 0, infeasible = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {  // seeds logged by INFO on failure
    INFO("seed " << seed);
    Trace t = testing::TinyTrainingTrace(
        seed, {.mirror_backward = false, .vary_optimizer_and_bandwidth = true});
    SimulatorOptions unlimited;
    absl::StatusOr<Simulator> sim = Simulator::Create(t, 0, unlimited);
    REQUIRE(sim.ok());
    Policy empty;
    empty.fingerprint = ComputeFingerprint(t, 0);
    absl::StatusOr<SimulationResult> base = sim->Run(empty);
    REQUIRE(base.ok());
    // A budget under the unswapped peak (in steps of 50 bytes) that some
    // policy of the class can reach.
    std::vector<int64_t> budgets;
    for (int64_t b = base->peak_bytes - 50; b > 0; b -= 50) {
      SimulatorOptions so;
      so.device.capacity_bytes = b;
      if (!SwapModel::Build(t, 0, so, {}).ok()) break;
      budgets.push_back(b);
    }
    if (budgets.empty()) continue;
    Rng rng(seed * 7919);
    const int64_t budget = budgets[rng.Uniform(budgets.size())];
    const Brute brute = BruteForce(t, budget, 1'000'000);
    INFO("budgets " << budgets.size() << ", policies enumerated " << brute.policies);
    if (brute.best_ns == -2) continue;  // too many policies to enumerate
    const PlanningProblem problem{.trace = &t,
                                  .iteration = 0,
                                  .device = {.capacity_bytes = budget,
                                             .h2d_bandwidth_bytes_per_s =
                                                 t.metadata().h2d_bandwidth_bytes_per_s,
                                             .d2h_bandwidth_bytes_per_s =
                                                 t.metadata().d2h_bandwidth_bytes_per_s}};
    absl::StatusOr<OptimumResult> r = ComputeOptimum(problem, OptimumOptions());
    INFO("budget " << budget << ", brute force best " << brute.best_ns << " over "
                   << brute.policies << " policies");
    if (brute.best_ns < 0) {
      CHECK(r.status().code() == absl::StatusCode::kResourceExhausted);
      ++infeasible;
      continue;
    }
    REQUIRE(r.ok());
    INFO("lower bound " << r->lower_bound_ns << ", incumbent " << r->incumbent_ns
                        << ", MILP objective " << r->milp_objective_ns);
    ++compared;
    CHECK(r->status == MilpStatus::kOptimal);
    CHECK(r->lower_bound_ns <= brute.best_ns);
    CHECK(r->incumbent_ns >= brute.best_ns);
    if (r->proven_optimal) {
      ++proven;
      CHECK(r->incumbent_ns == brute.best_ns);
    }
    // The batch relaxation alone (no pairwise orders) is still a bound.
    OptimumOptions relaxed;
    relaxed.max_order_pairs = 0;
    absl::StatusOr<OptimumResult> rr = ComputeOptimum(problem, relaxed);
    INFO("relaxed: " << rr.status().ToString());
    REQUIRE(rr.ok());
    CHECK(rr->model.order_pairs == 0);
    CHECK(rr->lower_bound_ns <= brute.best_ns);
    CHECK(rr->incumbent_ns >= brute.best_ns);
    CHECK(rr->lower_bound_ns <= r->lower_bound_ns);
  }
  INFO("compared " << compared << ", proven optimal " << proven << ", infeasible " << infeasible);
  CHECK(compared >= 100);
  // With the pairwise order of copies that may share an op (swap_model.h,
  // "Exact batches") every instance closes: bound = incumbent = brute force.
  CHECK(proven == compared);
}

}  // namespace
}  // namespace swapplan
