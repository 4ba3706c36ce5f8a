// Simulator::RunShared, Simulator::RunResolved and CheckPolicyShared
// against Simulator::Run and CheckPolicy, and the resolution
// MakeRecomputeExact hands back against a fresh one: on random keep / swap /
// recompute policies of tiny training traces (seeds logged), the entry
// points that reuse a RecomputeAnalysis, a RecipeMemo, a PolicyResolver or
// a resolution across many policies give the same results as the ones that
// prepare everything per call.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "support/test_traces.h"
#include "planners/baselines/common.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/recompute.h"

namespace swapplan {
namespace {

// A random assignment of the trace's activation windows: keep, swap (with a
// random swap-in trigger between the release and the first backward use) or
// recompute (stated cost 0, 50 ns or exact), in the order planners write
// them.
Policy RandomPolicy(const PlanningProblem& problem, const PolicyResolver& resolver,
                    std::mt19937_64& rng) {
  const Trace& trace = *problem.trace;
  Policy p = BaselinePolicy(problem, "random", {});
  for (const ActivationWindow& w : ActivationWindows(trace, 0)) {
    const int choice = static_cast<int>(rng() % 3);
    if (choice == 0) continue;
    int32_t in = w.first_backward_use;
    if (choice == 1) {
      const int32_t span = std::max(1, w.first_backward_use - w.last_forward_use);
      in = w.last_forward_use + 1 + static_cast<int32_t>(rng() % span);
    }
    PolicyItem item = MakePolicyItem(trace, 0, w.tensor, w.last_forward_use, w.last_forward_use,
                                     in, w.first_backward_use);
    if (choice == 2) {
      item.action = ItemAction::kRecompute;
      item.recompute_ns = (rng() % 2) * 50;
    }
    p.items.push_back(std::move(item));
  }
  std::sort(p.items.begin(), p.items.end(), [](const PolicyItem& a, const PolicyItem& b) {
    return std::tie(a.swap_in_op, a.first_use_op, a.tensor_id) <
           std::tie(b.swap_in_op, b.first_use_op, b.tensor_id);
  });
  // Half the policies with exact recipe costs (understated otherwise: a
  // checker violation both paths must report).
  if (rng() % 2 == 0) {
    absl::Status st = MakeRecomputeExact(problem, resolver, {}, &p);
    REQUIRE(st.ok());
  }
  return p;
}

// One tiny training trace (seed logged by the caller) at 1e9 bytes/s each
// way, with everything the shared entry points reuse across its policies:
// the simulator, the resolver, the recompute analysis and the recipe memo.
struct SharedSetup {
  SharedSetup(uint64_t seed, bool mirror_backward)
      : trace(testing::TinyTrainingTrace(
            seed, {.mirror_backward = mirror_backward, .vary_optimizer_and_bandwidth = true})) {
    problem.trace = &trace;
    problem.device = {.capacity_bytes = 1 << 20,
                      .h2d_bandwidth_bytes_per_s = 1e9,
                      .d2h_bandwidth_bytes_per_s = 1e9};
    SimulatorOptions so;
    so.device = problem.device;
    absl::StatusOr<Simulator> s = Simulator::Create(trace, 0, so);
    REQUIRE(s.ok());
    sim.emplace(*std::move(s));
    absl::StatusOr<PolicyResolver> r = PolicyResolver::Create(trace, 0);
    REQUIRE(r.ok());
    resolver.emplace(*std::move(r));
    absl::StatusOr<RecomputeAnalysis> a = RecomputeAnalysis::Build(trace, 0, problem.device);
    REQUIRE(a.ok());
    analysis.emplace(*std::move(a));
    shared = {.recompute_analysis = &*analysis, .recipe_memo = &memo};
  }
  SharedSetup(const SharedSetup&) = delete;
  SharedSetup& operator=(const SharedSetup&) = delete;

  const Trace trace;
  PlanningProblem problem;
  std::optional<Simulator> sim;
  std::optional<PolicyResolver> resolver;
  std::optional<RecomputeAnalysis> analysis;
  RecipeMemo memo;
  ResolveOptions shared;
};

TEST_CASE("shared resolution: RunShared and CheckPolicyShared equal Run and CheckPolicy",
          "[sim][checker][recompute]") {
  int32_t policies = 0, with_recompute = 0, with_violations = 0;
  int64_t memo_hits = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);  // the trace's and the policies' seed
    SharedSetup setup(seed, /*mirror_backward=*/seed % 2 == 0);
    const Trace& t = setup.trace;
    const PlanningProblem& problem = setup.problem;
    std::optional<Simulator>& sim = setup.sim;
    std::optional<PolicyResolver>& resolver = setup.resolver;
    const ResolveOptions& shared = setup.shared;
    CheckOptions co;
    co.device = problem.device;
    std::mt19937_64 rng(seed);
    for (int k = 0; k < 12; ++k) {
      INFO("policy " << k);
      const Policy p = RandomPolicy(problem, *resolver, rng);
      ++policies;
      with_recompute += std::any_of(p.items.begin(), p.items.end(), [](const PolicyItem& i) {
        return i.action == ItemAction::kRecompute;
      });
      absl::StatusOr<SimulationResult> plain = sim->Run(p);
      absl::StatusOr<SimulationResult> reused = sim->RunShared(p, shared);
      REQUIRE(plain.ok() == reused.ok());
      if (plain.ok()) {
        CHECK(reused->iteration_time_ns == plain->iteration_time_ns);
        CHECK(reused->ideal_time_ns == plain->ideal_time_ns);
        CHECK(reused->peak_bytes == plain->peak_bytes);
        CHECK(reused->oom.occurred == plain->oom.occurred);
        CHECK(reused->events == plain->events);
      } else {
        CHECK(reused.status() == plain.status());
      }
      absl::StatusOr<CheckReport> a = CheckPolicy(t, p, co);
      absl::StatusOr<CheckReport> b = CheckPolicyShared(*resolver, p, co, shared);
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      CHECK(b->peak_bytes == a->peak_bytes);
      CHECK(b->peak_op == a->peak_op);
      CHECK(b->bytes_out == a->bytes_out);
      REQUIRE(b->violations.size() == a->violations.size());
      for (size_t v = 0; v < a->violations.size(); ++v) {
        CHECK(b->violations[v].kind == a->violations[v].kind);
        CHECK(b->violations[v].message == a->violations[v].message);
      }
      with_violations += !a->violations.empty();
    }
    memo_hits += setup.memo.hits;
  }
  WARN("shared resolution: " << policies << " policies, " << with_recompute
                             << " with RECOMPUTE items, " << with_violations
                             << " with violations, " << memo_hits << " memo hits");
  // The comparison covers recomputation, violations and reused walks.
  CHECK(with_recompute > policies / 3);
  CHECK(with_violations > 0);
  CHECK(memo_hits > 0);
}

// Field by field: the resolution MakeRecomputeExact returns and a fresh
// resolution of the policy it made exact.
void SameResolution(const ResolvedPolicy& a, const ResolvedPolicy& b) {
  CHECK(a.iteration == b.iteration);
  CHECK(a.num_ops == b.num_ops);
  CHECK(a.initial_bytes == b.initial_bytes);
  CHECK(a.accounted == b.accounted);
  REQUIRE(a.items.size() == b.items.size());
  for (size_t k = 0; k < a.items.size(); ++k) {
    INFO("resolved item " << k);
    const ResolvedItem& x = a.items[k];
    const ResolvedItem& y = b.items[k];
    CHECK(std::tie(x.item, x.slot, x.tensor, x.size_bytes, x.action, x.recompute_ns, x.wraps,
                   x.clean, x.release_waits_for_copy, x.tier, x.out, x.release, x.in, x.use,
                   x.out_ns, x.in_ns) ==
          std::tie(y.item, y.slot, y.tensor, y.size_bytes, y.action, y.recompute_ns, y.wraps,
                   y.clean, y.release_waits_for_copy, y.tier, y.out, y.release, y.in, y.use,
                   y.out_ns, y.in_ns));
  }
  REQUIRE(a.recomputes.size() == b.recomputes.size());
  for (size_t k = 0; k < a.recomputes.size(); ++k) {
    INFO("recipe " << k);
    const ResolvedRecompute& x = a.recomputes[k];
    const ResolvedRecompute& y = b.recomputes[k];
    CHECK(std::tie(x.position, x.items, x.stated_ns, x.cost_ns, x.transient_bytes, x.leaves,
                   x.intermediates, x.blocker) ==
          std::tie(y.position, y.items, y.stated_ns, y.cost_ns, y.transient_bytes, y.leaves,
                   y.intermediates, y.blocker));
  }
  REQUIRE(a.issues.size() == b.issues.size());
  for (size_t k = 0; k < a.issues.size(); ++k) {
    CHECK(a.issues[k].rule == b.issues[k].rule);
    CHECK(a.issues[k].item == b.issues[k].item);
    CHECK(a.issues[k].message == b.issues[k].message);
  }
}

TEST_CASE("shared resolution: MakeRecomputeExact's resolution and RunResolved",
          "[sim][recompute]") {
  int32_t policies = 0, raised = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);  // the trace's and the policies' seed
    SharedSetup setup(seed, /*mirror_backward=*/seed % 2 == 1);
    const PlanningProblem& problem = setup.problem;
    std::optional<Simulator>& sim = setup.sim;
    std::optional<PolicyResolver>& resolver = setup.resolver;
    const ResolveOptions& shared = setup.shared;
    std::mt19937_64 rng(seed * 7919);
    for (int k = 0; k < 12; ++k) {
      INFO("policy " << k);
      Policy p = RandomPolicy(problem, *resolver, rng);
      const Policy before = p;
      ResolvedPolicy handed;
      REQUIRE(MakeRecomputeExact(problem, *resolver, shared, &p, &handed).ok());
      ++policies;
      for (size_t i = 0; i < p.items.size() && p.items.size() == before.items.size(); ++i) {
        if (p.items[i].recompute_ns != before.items[i].recompute_ns) {
          ++raised;
          break;
        }
      }
      absl::StatusOr<ResolvedPolicy> fresh =
          resolver->Resolve(p, problem.device, {.all_issues = true});
      REQUIRE(fresh.ok());
      SameResolution(handed, *fresh);
      absl::StatusOr<SimulationResult> plain = sim->Run(p);
      absl::StatusOr<SimulationResult> given =
          sim->RunResolved(p, std::move(handed), problem.device, shared);
      REQUIRE(plain.ok() == given.ok());
      if (!plain.ok()) {
        CHECK(given.status() == plain.status());
        continue;
      }
      CHECK(given->iteration_time_ns == plain->iteration_time_ns);
      CHECK(given->peak_bytes == plain->peak_bytes);
      CHECK(given->oom.occurred == plain->oom.occurred);
      CHECK(given->events == plain->events);
    }
  }
  WARN("MakeRecomputeExact's resolution: " << policies << " policies, " << raised
                                          << " with raised costs");
  CHECK(raised > 0);  // the patched fields are exercised
}

// A policy whose fingerprint is not the resolver's is checked by
// CheckPolicy itself (the fingerprint violation, the same report);
// RunShared refuses an analysis of another op count.
TEST_CASE("shared resolution: mismatches", "[sim][checker]") {
  const Trace t = testing::TinyTrainingTrace(3);
  const Trace other = testing::TinyTrainingTrace(4, {.mirror_backward = false});
  REQUIRE(t.iteration(0).num_ops() != other.iteration(0).num_ops());
  PlanningProblem problem;
  problem.trace = &t;
  problem.device = {.capacity_bytes = 1 << 20,
                    .h2d_bandwidth_bytes_per_s = 1e9,
                    .d2h_bandwidth_bytes_per_s = 1e9};
  absl::StatusOr<PolicyResolver> resolver = PolicyResolver::Create(t, 0);
  REQUIRE(resolver.ok());
  Policy p = BaselinePolicy(problem, "empty", {});
  p.fingerprint.op_sequence_hash ^= 1;
  CheckOptions co;
  co.device = problem.device;
  absl::StatusOr<CheckReport> a = CheckPolicy(t, p, co);
  absl::StatusOr<CheckReport> b = CheckPolicyShared(*resolver, p, co, {});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->violations.size() == 1);
  REQUIRE(b->violations.size() == 1);
  CHECK(b->violations[0].kind == ViolationKind::kFingerprintMismatch);
  CHECK(b->violations[0].message == a->violations[0].message);

  SimulatorOptions so;
  so.device = problem.device;
  absl::StatusOr<Simulator> sim = Simulator::Create(t, 0, so);
  REQUIRE(sim.ok());
  absl::StatusOr<RecomputeAnalysis> wrong = RecomputeAnalysis::Build(other, 0, problem.device);
  REQUIRE(wrong.ok());
  absl::StatusOr<SimulationResult> r =
      sim->RunShared(BaselinePolicy(problem, "empty", {}), {.recompute_analysis = &*wrong});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("shared recompute analysis has") != std::string::npos);

  // A resolution on another device than the simulator's is not used: the
  // policy is resolved again (a swap of the first activation: its copy
  // times at 1 byte/s in the handed resolution, at 1 byte/ns in Run's).
  Policy swap = BaselinePolicy(problem, "swap", {});
  const ActivationWindow w = ActivationWindows(t, 0).front();
  swap.items.push_back(MakePolicyItem(t, 0, w.tensor, w.last_forward_use, w.last_forward_use,
                                      w.first_backward_use, w.first_backward_use));
  DeviceModel slow = problem.device;
  slow.h2d_bandwidth_bytes_per_s = slow.d2h_bandwidth_bytes_per_s = 1;
  absl::StatusOr<ResolvedPolicy> on_slow = resolver->Resolve(swap, slow, {.all_issues = true});
  REQUIRE(on_slow.ok());
  absl::StatusOr<SimulationResult> plain = sim->Run(swap);
  absl::StatusOr<SimulationResult> given = sim->RunResolved(swap, *std::move(on_slow), slow, {});
  REQUIRE(plain.ok());
  REQUIRE(given.ok());
  CHECK(given->iteration_time_ns == plain->iteration_time_ns);
}

}  // namespace
}  // namespace swapplan
