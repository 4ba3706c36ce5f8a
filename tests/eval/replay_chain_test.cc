// The planner chain in GenPolicy (issue 33): a Llama-style run whose
// sequence length varies per iteration, at a budget where Chameleon and the
// hybrid cannot fit the longest sequence (its transient logits dominate)
// but HyperOffload can (it moves parameters and optimizer states). Chameleon
// alone leaves the longest input without a policy and crashes; the default
// chain serves it with HyperOffload and nothing crashes after warm-up. A
// policy that passed the checker for an input matches every item when that
// input returns. When no planner fits an input, that is said once and the
// run goes on.
// The same run through the CLI (200 iterations there):
//   swapplan synth --model llama2-7b --layers 2 --hidden 1024 --ffn 2816 --heads 8
//       --kv-heads 8 --seq-lengths 512,1024,2048,4096 --iterations 200 --seed 1 -o llama.trace
//   swapplan replay llama.trace --device-memory 2128MiB --rows none [--planner chameleon]
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/synth_fixtures.h"
#include "swapplan/eval/replay.h"
#include "swapplan/sim/checker.h"
#include "swapplan/synth/synth.h"
#include "swapplan/varying/policy_set.h"
#include "swapplan/varying/tensor_roles.h"
#include "swapplan/varying/segment.h"

namespace swapplan {
namespace {

Trace VaryingLlama(int32_t iterations) {
  SynthOptions o = testing::TwoLayerOptions("llama2-7b", 2816);  // synth's default device
  o.seq_lengths = *ParseSeqLengths("512,1024,2048,4096");
  o.iterations = iterations;
  o.seed = 1;
  absl::StatusOr<Trace> t = SynthesizeTrace(o);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return *std::move(t);
}

ReplaySummary Replay(const Trace& t, const ReplayOptions& o, std::vector<ReplayRow>* rows) {
  absl::StatusOr<ReplaySummary> s =
      RunReplay(t, o, [&](const ReplayRow& r) { rows->push_back(r); });
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return *s;
}

int64_t UnresolvedAfterWarmUp(const std::vector<ReplayRow>& rows) {
  int64_t n = 0;
  for (const ReplayRow& r : rows) n += r.stage == Stage::kWarmUp ? 0 : r.unresolved_ooms;
  return n;
}

// Unresolved OOMs after warm-up outside an input's first iterations, those
// before any policy was made for it (they run the nearest input's policy:
// policy_of_other_input, or none).
int64_t UnresolvedWithOwnPolicy(const std::vector<ReplayRow>& rows) {
  int64_t n = 0;
  for (const ReplayRow& r : rows) {
    if (r.stage == Stage::kWarmUp || r.policy_of_other_input || r.policy < 0) continue;
    n += r.unresolved_ooms;
  }
  return n;
}

TEST_CASE("replay chain: only a parameter-moving planner fits the longest input",
          "[varying][replay][chain]") {
  const Trace t = VaryingLlama(40);
  ReplayOptions o;
  o.simulator.device.capacity_bytes = 2128LL << 20;
  // Chameleon alone: the 4096-token input gets no policy. With Algorithm 3
  // as the seed has it (no persistent tensor moves passively) that run
  // crashes after warm-up; with its last resort (parameters and optimizer
  // states used later in the iteration, the default) it survives, paying
  // with allocation failures in every Stable 4096-token iteration.
  ReplayOptions alone = o;
  alone.planner = "chameleon";
  alone.simulator.oom_persistent_victims = false;
  std::vector<ReplayRow> alone_rows;
  const ReplaySummary a = Replay(t, alone, &alone_rows);
  CHECK(a.plan_failures > 0);
  CHECK(UnresolvedAfterWarmUp(alone_rows) > 0);
  CHECK(a.ooms_by_stage[static_cast<int>(Stage::kStable)] > 0);
  alone.simulator.oom_persistent_victims = true;
  alone_rows.clear();
  const ReplaySummary a3 = Replay(t, alone, &alone_rows);
  CHECK(a3.plan_failures > 0);
  CHECK(UnresolvedAfterWarmUp(alone_rows) == 0);
  CHECK(a3.ooms_by_stage[static_cast<int>(Stage::kStable)] > 0);

  // The default chain: every input gets a policy; HyperOffload serves the
  // longest one, and nothing crashes after warm-up.
  CHECK(o.planner == "chain");
  std::vector<ReplayRow> rows;
  const ReplaySummary s = Replay(t, o, &rows);
  CHECK(s.plan_failures == 0);
  // After warm-up nothing crashes: not even an input's first iteration,
  // before any policy for it exists (the 4096-token input's first GenPolicy
  // iteration runs the nearest input's policy; Algorithm 3 moves optimizer
  // states there); Stable has no allocation failure at all.
  CHECK(UnresolvedWithOwnPolicy(rows) == 0);
  CHECK(UnresolvedAfterWarmUp(rows) == 0);
  CHECK(s.ooms_by_stage[static_cast<int>(Stage::kStable)] == 0);
  CHECK(s.uses_while_off_device == 0);
  CHECK(s.missed == 0);
  CHECK(s.policies_by_planner.count("hyperoffload") == 1);
  CHECK(s.input_signatures == 4);
  int64_t largest = 0;
  std::string largest_planner;
  for (const InputPlanning& in : s.inputs) {
    INFO("input " << in.input.hash << " (" << in.input.bytes << " bytes)");
    CHECK(in.policies > 0);
    CHECK(in.no_fit.empty());
    if (in.input.bytes > largest) {
      largest = in.input.bytes;
      largest_planner = in.planner;
    }
  }
  CHECK(largest_planner == "hyperoffload");
  // Rows say which planner made the policy they ran.
  for (const ReplayRow& r : rows) {
    if (r.policy >= 0) CHECK_FALSE(r.policy_planner.empty());
    if (r.generated_policy >= 0) CHECK_FALSE(r.generated_by.empty());
  }
}

TEST_CASE("replay chain: a checked policy matches every item when its input returns",
          "[varying][replay][chain][matcher]") {
  // Plan each input's first iteration with the chain, check the policy at
  // the budget, and apply it to every later iteration with the same input:
  // every item is matched (the right tensor), or the item is named.
  // At 1800 MiB HyperOffload gives 5 tensors of the 4096-token input
  // several windows (parameters: one across the iteration boundary, clean
  // ones between uses), the case the matcher used to miss (a tensor took
  // one item per iteration) and the replay to drop (a window across the
  // boundary counted as "unused after its swap-out").
  const Trace t = VaryingLlama(24);
  ReplayOptions o;
  o.simulator.device.capacity_bytes = 1800LL << 20;
  absl::StatusOr<std::unique_ptr<Planner>> planner = CreateReplayPlanner(o);
  REQUIRE(planner.ok());
  absl::StatusOr<DeviceModel> device = ReplayDevice(t, o);
  REQUIRE(device.ok());
  SegmentExtractor segments(t, RuntimeIterations(t, o.boundary));
  struct Planned {
    Trace seg;
    MatchablePolicy policy;
    std::vector<uint64_t> roles;
  };
  std::map<uint64_t, Planned> by_input;
  std::map<std::string, int> planners, applied_by;
  int applied = 0;
  RuntimeTensorTable table;
  for (int32_t k = 0; k < segments.num_segments(); ++k) {
    absl::StatusOr<Trace> seg = segments.Extract(k);
    REQUIRE(seg.ok());
    const InputSignature sig = ComputeInputSignature(*seg, 0);
    auto f = by_input.find(sig.hash);
    if (f == by_input.end()) {
      PlanningProblem problem{.trace = &*seg, .iteration = 0, .device = *device};
      absl::StatusOr<Policy> p = (*planner)->Plan(problem);
      INFO("iteration " << k << ": " << p.status().ToString());
      REQUIRE(p.ok());
      absl::StatusOr<CheckReport> check = CheckPolicy(*seg, *p, CheckOptionsFor(*p));
      REQUIRE(check.ok());
      REQUIRE(check->clean());
      ++planners[p->planner];
      Planned pl;
      absl::StatusOr<MatchablePolicy> mp = MakeMatchablePolicy(*seg, 0, *p, o.runtime_key_bits);
      REQUIRE(mp.ok());
      pl.policy = *std::move(mp);
      const std::vector<uint64_t> roles = TensorRoles(*seg, 0);
      for (const MatchableItem& mi : pl.policy.items) {
        const PolicyItem& pi = pl.policy.policy.items[mi.item];
        uint64_t role = 0;
        for (TensorId u : seg->uses(seg->iteration(0).op_begin + mi.decision.ordinal)) {
          if (seg->tensor(u).trace_id == pi.tensor_id) role = roles[u];
        }
        pl.roles.push_back(role);
      }
      pl.seg = *std::move(seg);
      by_input.emplace(sig.hash, std::move(pl));
      continue;
    }
    Planned& pl = f->second;
    absl::StatusOr<std::unique_ptr<TensorMatcher>> matcher =
        CreateMatcher(o.matcher, pl.policy, o.matcher_options);
    REQUIRE(matcher.ok());
    const AppliedPolicy a = ApplyPolicy(*seg, 0, pl.policy, pl.roles, **matcher, table);
    ++applied;
    ++applied_by[pl.policy.policy.planner];
    for (size_t i = 0; i < a.reports.size(); ++i) {
      const PolicyItem& pi = pl.policy.policy.items[pl.policy.items[i].item];
      INFO("iteration " << k << ", input " << sig.hash << ", planner " << pl.policy.policy.planner
                        << ": item " << i << " (tensor " << pi.tensor_id << ", ops "
                        << pi.swap_out_op << ".." << pi.first_use_op
                        << (pi.wraps ? ", wraps" : "") << (pi.clean ? ", clean" : "") << ") "
                        << ItemOutcomeName(a.reports[i].outcome));
      CHECK(a.reports[i].outcome == ItemOutcome::kMatched);
    }
    CHECK(a.missed == 0);
    CHECK(a.uses_while_off_device == 0);
    // Executed as planned: every window across the iteration boundary is in
    // the applied policy as one (not dropped as "unused after its swap-out").
    int32_t planned_wraps = 0, applied_wraps = 0;
    for (const MatchableItem& mi : pl.policy.items) planned_wraps += pl.policy.policy.items[mi.item].wraps;
    for (const PolicyItem& it : a.policy.items) applied_wraps += it.wraps;
    CHECK(applied_wraps == planned_wraps);
    CHECK(static_cast<int32_t>(a.policy.items.size()) + a.unused_after_swap_out == a.items);
  }
  CHECK(applied > 0);
  CHECK(planners["hyperoffload"] >= 1);
  // The multi-window policy (parameters and optimizer states) came back.
  CHECK(applied_by["hyperoffload"] >= 1);
}

TEST_CASE("replay chain: no planner fits one input: said once, the run goes on",
          "[varying][replay][chain]") {
  // A chain without HyperOffload at 2128 MiB: Chameleon and the hybrid fit
  // every input but the 4096-token one (16.47 MiB short at its logits).
  const Trace t = VaryingLlama(40);
  ReplayOptions o;
  o.simulator.device.capacity_bytes = 2128LL << 20;
  o.chain.planners = {"chameleon", "hybrid"};
  std::vector<ReplayRow> rows;
  const ReplaySummary s = Replay(t, o, &rows);
  int said = 0, repeated = 0;
  for (const InputPlanning& in : s.inputs) {
    if (in.no_fit.empty()) continue;
    ++said;
    INFO(in.no_fit);
    CHECK_THAT(in.no_fit, Catch::Contains("no planner of the chain reaches the budget"));
    CHECK_THAT(in.no_fit, Catch::Contains("unswapped peak"));
    CHECK_THAT(in.no_fit, Catch::Contains("closest"));
  }
  // Said for that one input; the other three have policies.
  CHECK(said == 1);
  for (const InputPlanning& in : s.inputs) {
    if (in.no_fit.empty()) {
      CHECK(in.policies > 0);
    } else {
      CHECK(in.policies == 0);
      CHECK_THAT(in.no_fit, Catch::Contains("closest chameleon, 16.47 MiB over"));
    }
  }
  for (const ReplayRow& r : rows) repeated += r.plan_error_repeated;
  // Every failure after the first for an input is marked repeated.
  CHECK(repeated == s.plan_failures - said);
  CHECK(s.iterations == 40);
}

}  // namespace
}  // namespace swapplan
