// The Chameleon planner on hand-computed examples. Every policy produced
// here also goes through the checker.
//
// The two-layer toy (tests/data/traces/chameleon_toy.json), 13 ops of
// 100 ns each (Eq. (1): 1300 ns / 13 ops):
//
//   op  name         phase  unswapped   tensors (bytes; uses)
//   0   embed        F      400         P 100 parameter; Gb 100 persistent
//   1   linear1      F      600         A 200 (id 10; uses 0, 1, 11)
//   2   linear2      F      700         B 200 (id 11; uses 1, 2, 10)
//   3   attn         F     1000         C 100 (id 12; uses 2, 3, 9)
//   4   mlp          F     1100         T 300 (id 13; uses 3, 4, 5) temporary
//   5   loss         F     1200         D 100 (id 14; uses 4, 5, 8)
//   6   loss_bwd     B      900         L 100 (id 15; uses 5, 6)
//   7   mlp_bwd      B      800
//   8   attn_bwd     B      800
//   9   linear2_bwd  B      700
//   10  linear1_bwd  B      600
//   11  embed_bwd    B      400
//   12  sgd          O      200
//
// L = 2 (metadata model_layers): layers 0 = ops 0..2 (FWD, 0..300 ns),
// 1 = ops 3..5 (FWD), 2 = ops 6..8 (BWD), 3 = ops 9..11 (BWD), 4 = op 12
// (OPT, 100 ns); 300 ns of transfer time per direction each.
//
// Links: d2h 2 B/ns, h2d 1 B/ns. Swap windows (last forward use -> first
// backward use; copy out on an idle stream from the end of the last forward
// use; coverage from the op after that):
//   A 1->11: out 100 ns, 200..300 -> earliest release op 2, coverage 3..10, in 200 ns
//   B 2->10: out 100 ns, 300..400 -> op 3, coverage 4..9, in 200 ns
//   C 3->9:  out  50 ns, 400..450 -> op 4, coverage 5..8, in 100 ns
//   D 5->8:  out  50 ns, 600..650 -> op 6, coverage 7..7, in 100 ns
// (T is used by forward ops only, L's gap 5->6 has no op in it, P and Gb are
// persistent.)
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/sim/checker.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

const Trace& Toy() {
  static const Trace t = testing::DataTrace("traces/chameleon_toy.json");
  return t;
}

PlanningProblem ToyProblem(int64_t budget, double h2d = 1e9, double d2h = 2e9) {
  return {.trace = &Toy(),
          .iteration = 0,
          .device = {.capacity_bytes = budget,
                     .h2d_bandwidth_bytes_per_s = h2d,
                     .d2h_bandwidth_bytes_per_s = d2h}};
}

ChameleonOptions ToyOptions() {
  ChameleonOptions o;
  o.min_tensor_bytes = 0;
  return o;
}

struct Ops {
  uint64_t id;
  int32_t out, release, in, use;
  bool operator==(const Ops& o) const {
    return id == o.id && out == o.out && release == o.release && in == o.in && use == o.use;
  }
};

std::vector<Ops> ItemOps(const Policy& p) {
  std::vector<Ops> v;
  for (const PolicyItem& it : p.items) {
    v.push_back({it.tensor_id, it.swap_out_op, it.release_op, it.swap_in_op, it.first_use_op});
  }
  return v;
}

void RequireClean(const Trace& t, const Policy& p, OpTimeModel model = OpTimeModel::kAuto) {
  absl::StatusOr<CheckReport> r = CheckPolicy(t, p, {.op_time_model = model});
  REQUIRE(r.ok());
  INFO(testing::ViolationMessages(*r));
  CHECK(r->clean());
  CHECK(r->peak_bytes == p.expected_peak_bytes);
}

std::string Runs(const std::vector<MrlRange>& runs) {
  std::string s;
  for (const MrlRange& r : runs) {
    s += std::to_string(r.first_op) + ".." + std::to_string(r.last_op) + ":" +
         std::to_string(r.max_need_bytes) + " ";
  }
  return s;
}

TEST_CASE("chameleon: worked two-layer example", "[chameleon]") {
  // Budget 900: MRL = {op 3: 100, op 4: 200, op 5: 300}.
  //
  // CL (round 0, pass 0), N_MRE over coverage, max-normalised (max N 3,
  // max S 200), C = 1:
  //   A  N 3  score 3/3 + 200/200 = 2.000
  //   B  N 2  score 2/3 + 1       = 1.667
  //   C  N 1  score 1/3 + 0.5     = 0.833
  //   (D covers op 7 only: no MRE, not a candidate)
  // 1. A: last MRE in its coverage is op 5 (layer 1); search backward from
  //    layer 2 (the one before op 11's layer 3) down to layer 2: 300 ns of
  //    h2d left >= 200 -> swap-in at op 6; layer 2 keeps 100 ns. MREs of
  //    ops 3..5 (earliest release + 1 .. swap-in - 1) lose 200:
  //    MRL = {op 5: 100}.
  // 2. B: last MRE op 5, only layer 2 qualifies, 100 ns < 200: no fit.
  // 3. C: last MRE op 5, layer 2 has 100 ns >= 100 -> swap-in at op 6;
  //    layer 2 keeps 0. Op 5 loses 100: MRL empty.
  // Release points (d2h FIFO): A copy 200..300 ns -> op 2; C 400..450 ns
  // -> op 4. Replay: A off 3..5, C off 5: ops 3..5 hold 800, 900, 900.
  ChameleonPlanner planner(ToyOptions());
  ChameleonExplanation x;
  absl::StatusOr<Policy> p = planner.PlanExplained(ToyProblem(900), &x);
  REQUIRE(p.ok());
  CHECK(ItemOps(*p) == std::vector<Ops>{{10, 1, 2, 6, 11}, {12, 3, 4, 6, 9}});
  CHECK(p->expected_peak_bytes == 900);
  CHECK(p->expected_overhead_ns == 0);
  CHECK(p->planner == "chameleon");
  CHECK(p->BudgetBytes() == 900);
  RequireClean(Toy(), *p);

  // Layers.
  REQUIRE(x.layers.size() == 5);
  CHECK(x.layers_per_segment == 2);
  CHECK(x.layers_source == LayerCountSource::kMetadata);
  CHECK(x.durations == DurationSource::kEstimated);
  CHECK(x.layers[1].begin_op == 3);
  CHECK(x.layers[1].end_op == 6);
  CHECK(x.layers[2].type == LayerType::kBackward);
  CHECK(x.layers[2].time_ns == 300.0);
  CHECK(x.layers[4].type == LayerType::kOptimizer);
  CHECK(x.layers[4].time_ns == 100.0);
  // Charges: h2d 200 + 100 in layer 2; d2h A 200..300 in layer 0, C
  // 400..450 in layer 1.
  CHECK(x.h2d_used_ns == std::vector<double>{0, 0, 300, 0, 0});
  CHECK(x.d2h_used_ns == std::vector<double>{100, 50, 0, 0, 0});

  // MRL.
  CHECK(x.initial_mrl_entries == 3);
  CHECK(Runs(x.initial_mrl) == "3..5:300 ");

  // Candidate list.
  REQUIRE(x.passes.size() == 1);
  const std::vector<ScoredCandidate>& cl = x.passes[0].candidates;
  REQUIRE(cl.size() == 3);
  auto id_of = [&](const ScoredCandidate& c) {
    return Toy().tensor(x.windows[c.window].tensor).trace_id;
  };
  CHECK(id_of(cl[0]) == 10);
  CHECK(cl[0].n_mre == 3);
  CHECK(cl[0].score == Approx(2.0));
  CHECK(id_of(cl[1]) == 11);
  CHECK(cl[1].n_mre == 2);
  CHECK(cl[1].score == Approx(5.0 / 3));
  CHECK(id_of(cl[2]) == 12);
  CHECK(cl[2].score == Approx(5.0 / 6));
  // The windows of the worked comment.
  REQUIRE(x.windows.size() == 4);
  CHECK(x.windows[0].earliest_release_op == 2);
  CHECK(x.windows[0].cover_begin == 3);
  CHECK(x.windows[3].last_fwd_op == 5);
  CHECK(x.windows[3].cover_begin == 7);

  // Decisions, with the MRL after each step.
  REQUIRE(x.decisions.size() == 5);
  CHECK(x.decisions[0].kind == ChameleonDecisionKind::kScheduled);
  CHECK(x.decisions[0].swap_in_op == 6);
  CHECK(x.decisions[0].layer == 2);
  CHECK(Runs(x.decisions[0].mrl_after) == "5..5:100 ");
  CHECK(x.decisions[1].kind == ChameleonDecisionKind::kNoLayerFits);
  CHECK(x.decisions[1].reason ==
        "tensor 11 'B' (200 bytes, ops 2->10): no layer among 2..2 "
        "has 200.0 ns of h2d time left");
  CHECK(x.decisions[2].kind == ChameleonDecisionKind::kScheduled);
  CHECK(x.decisions[2].mrl_entries_after == 0);
  CHECK(x.decisions[3].kind == ChameleonDecisionKind::kReleased);
  CHECK(x.decisions[3].release_op == 2);
  CHECK(x.decisions[4].release_op == 4);
  CHECK(x.rounds == 1);

  // Runtime keys at the swap-out. Op names all occur once, so they rank by
  // name: attn 0, attn_bwd 1, embed 2, embed_bwd 3, linear1 4, linear1_bwd
  // 5, linear2 6, linear2_bwd 7, loss 8, loss_bwd 9, mlp 10, mlp_bwd 11,
  // sgd 12. A after op 1: embed, linear1. C after op 3: linear2, attn.
  const RuntimeKey& ka = p->items[0].runtime_key;
  CHECK(ka.op_count == 2);
  CHECK(ka.op_mask == 0x14);
  CHECK(ka.op_history == 0x0204);
  CHECK(ka.dtype == DType::kFloat32);
  CHECK(ka.shape == std::vector<int64_t>{50});
  const RuntimeKey& kc = p->items[1].runtime_key;
  CHECK(kc.op_mask == 0x41);
  CHECK(kc.op_history == 0x0600);

  // Parameters: the options as configured (ChameleonOptionTable), so that
  // planning again with them gives this policy.
  CHECK(p->parameters == ToyOptions().ToParameters());
}

TEST_CASE("chameleon: nothing to do under the budget", "[chameleon]") {
  ChameleonPlanner planner(ToyOptions());
  absl::StatusOr<Policy> p = planner.Plan(ToyProblem(1200));
  REQUIRE(p.ok());
  CHECK(p->items.empty());
  CHECK(p->expected_peak_bytes == 1200);
  RequireClean(Toy(), *p);
}

TEST_CASE("chameleon: stall fallback", "[chameleon]") {
  // L = 1: layers FWD ops 0..5 (600 ns), BWD ops 6..11 (600 ns), OPT op 12.
  // h2d 0.25 B/ns: A and B take 800 ns in, C 400.
  // Pass 0: CL A, B, C as in the worked example. Every MRE is in the FWD
  // layer and every first use in the BWD layer: no whole layer lies between
  // -> nothing fits. Fallback on A: the layer before its use's is the FWD
  // layer (starts op 0), but not before op 6 (after its last MRE, op 5) ->
  // swap-in at op 6 in the BWD layer: 600 ns left, 500 ns until op 11
  // starts -> 500 ns hidden, 300 ns stall; the layer keeps 100 ns.
  // MRL: ops 3..5 lose 200 -> {op 5: 100}.
  // Then the rest of that CL in order (default, batched): B still covers op
  // 5, no layer fits -> stall fallback at op 6: 100 ns left (400 ns until
  // op 10) -> 100 hidden, 700 ns stall. MRL empty; C is not needed.
  // (The papers' one-per-pass variant rebuilds the CL first: pass 1 = B
  // (N 1, score 1 + 1), C (N 1, 1 + 0.5), neither fits, fallback on B: the
  // same placement, one more pass.)
  // Releases: A 200..300 -> op 2; B 300..400 -> op 3. Replay: ops 3..5 hold
  // 800, 700, 800. Expected overhead 300 + 700 = 1000 ns.
  using K = ChameleonDecisionKind;
  for (StallFallback mode : {StallFallback::kBatched, StallFallback::kOnePerPass}) {
    INFO("stall fallback " << StallFallbackName(mode));
    ChameleonOptions o = ToyOptions();
    o.layers = 1;
    o.stall_fallback = mode;
    ChameleonPlanner planner(o);
    ChameleonExplanation x;
    absl::StatusOr<Policy> p = planner.PlanExplained(ToyProblem(900, 2.5e8), &x);
    REQUIRE(p.ok());
    CHECK(ItemOps(*p) == std::vector<Ops>{{10, 1, 2, 6, 11}, {11, 2, 3, 6, 10}});
    CHECK(p->expected_overhead_ns == 1000);
    CHECK(p->expected_peak_bytes == 900);  // op 6
    RequireClean(Toy(), *p);
    std::vector<K> kinds;
    std::vector<double> stalls;
    for (const ChameleonDecision& d : x.decisions) {
      kinds.push_back(d.kind);
      if (d.kind == K::kStallFallback) stalls.push_back(d.stall_ns);
    }
    CHECK(stalls == std::vector<double>{300.0, 700.0});
    if (mode == StallFallback::kBatched) {
      CHECK(x.passes.size() == 1);
      CHECK(kinds == std::vector<K>{K::kNoLayerFits, K::kNoLayerFits, K::kNoLayerFits,
                                    K::kStallFallback, K::kStallFallback, K::kReleased,
                                    K::kReleased});
    } else {
      CHECK(x.passes.size() == 2);
      CHECK(kinds == std::vector<K>{K::kNoLayerFits, K::kNoLayerFits, K::kNoLayerFits,
                                    K::kStallFallback, K::kNoLayerFits, K::kNoLayerFits,
                                    K::kStallFallback, K::kReleased, K::kReleased});
    }
  }
  ChameleonOptions o = ToyOptions();
  o.layers = 1;
  ChameleonExplanation x;
  REQUIRE(ChameleonPlanner(o).PlanExplained(ToyProblem(900, 2.5e8), &x).ok());
  CHECK(x.decisions[0].reason ==
        "tensor 10 'A' (200 bytes, ops 1->11): no whole layer lies "
        "between op 5 (its last MRE) and "
        "its first use at op 11 (embed_bwd, BACKWARD)");
  CHECK(x.decisions[3].reason ==
        "tensor 10 'A' (200 bytes, ops 1->11): no candidate fits "
        "any layer; the best one: swap-in "
        "triggered at op 6 (loss_bwd, BACKWARD), first op of layer 1 (BWD 0); 300.0 ns of its "
        "800.0 ns copy cannot be hidden (expected stall); off the device during ops 3..5 "
        "(estimated)");
}

TEST_CASE("chameleon: infeasible budget names the bytes and the op", "[chameleon]") {
  // The papers' rule (no release before the copy out completes).
  // Budget 700: MRL ops 3..8. Only A can leave the device at op 3 (the
  // others complete their copy out later), so op 3 keeps 1000 - 200 = 800.
  // Maximal fallback: A, B, C, D (every window covering an MRE) off from
  // their queue releases (2, 3, 4, 6) to their first uses: op 3 still holds
  // 800 -> 100 bytes missing there.
  ChameleonOptions o = ToyOptions();
  o.release_wait = ReleaseWait::kNever;
  ChameleonPlanner planner(o);
  ChameleonExplanation x;
  absl::StatusOr<Policy> p = planner.PlanExplained(ToyProblem(700), &x);
  CHECK(p.status().code() == absl::StatusCode::kResourceExhausted);
  const std::string msg = absl::StrCat(
      Toy().source(),
      ": iteration 0: 100 bytes (100 B) still missing at op 3 (attn, FORWARD) to fit the budget "
      "of 700 bytes, even with every one of the 4 candidate tensors off the device from its "
      "release to its first backward use (candidates: non-persistent tensors of at least 0 B "
      "whose idle window covers an over-budget op)");
  CHECK(p.status().message() == msg);
  CHECK(x.infeasible == msg);
  CHECK(x.maximal_fallback_used);
  CHECK(x.decisions.back().kind == ChameleonDecisionKind::kInfeasible);
  // Way below the persistent bytes: nothing can be swapped at op 12.
  absl::StatusOr<Policy> q = planner.Plan(ToyProblem(100));
  CHECK(q.status().code() == absl::StatusCode::kResourceExhausted);
}

TEST_CASE("chameleon: release waits reach what the link cannot copy in time", "[chameleon]") {
  // Budget 700 (infeasible under the papers' rule, above). Algorithm 2
  // selects A (stall fallback, swap-in 9), B and C (swap-in 6); queue
  // releases A 200..300 ns -> op 2, B 300..400 -> op 3, C 400..450 -> op 4,
  // which leaves op 3 at 1000 - 200 = 800. The maximal fallback fails the
  // same way. Release-wait fallback: with A, B, C off from the op after
  // their last forward use, op 3 holds 1000 - 400 = 600, so nothing more is
  // selected. Sweep: op 3 is 100 over; pending copies (last forward use
  // before op 3): A (already released after op 2, skipped), B -> released
  // after op 2 with release_waits_for_copy. Op 3 starts at 300 ns and waits
  // for B's copy, which ends at 400 ns: a 100 ns stall, 1.4 us in all.
  ChameleonPlanner planner(ToyOptions());
  ChameleonExplanation x;
  absl::StatusOr<Policy> p = planner.PlanExplained(ToyProblem(700), &x);
  REQUIRE(p.ok());
  CHECK(ItemOps(*p) == std::vector<Ops>{{10, 1, 2, 9, 11}, {11, 2, 2, 6, 10}, {12, 3, 4, 6, 9}});
  CHECK_FALSE(p->items[0].release_waits_for_copy);
  CHECK(p->items[1].release_waits_for_copy);
  CHECK_FALSE(p->items[2].release_waits_for_copy);
  CHECK(p->expected_peak_bytes == 700);
  CHECK(p->expected_overhead_ns == 100);
  CHECK(x.maximal_fallback_used);
  CHECK(x.release_wait_used);
  RequireClean(Toy(), *p);
  absl::StatusOr<CheckReport> r = CheckPolicy(Toy(), *p);
  REQUIRE(r.ok());
  CHECK(r->release_waits == 1);
  CHECK(r->release_wait_ns == 100.0);
  // Without the flag the same release is a violation.
  Policy unflagged = *p;
  unflagged.items[1].release_waits_for_copy = false;
  absl::StatusOr<CheckReport> u = CheckPolicy(Toy(), unflagged);
  REQUIRE(u.ok());
  REQUIRE(u->violations.size() == 1);
  CHECK(u->violations[0].kind == ViolationKind::kReleaseBeforeCopyDone);
  CHECK(u->release_waits == 0);
  int32_t waits = 0;
  for (const ChameleonDecision& d : x.decisions) {
    if (d.kind != ChameleonDecisionKind::kReleaseWait || d.window < 0) continue;
    ++waits;
    CHECK(d.reason ==
          "tensor 11 'B' (200 bytes, ops 2->10): released after "
          "op 2 (linear2, FORWARD) before its "
          "copy out completes (400.0 ns on the stall-free timeline) so that op 3 (attn, FORWARD) "
          "fits the budget; that op waits for the copy (expected 100.0 ns after the earlier "
          "waits)");
  }
  CHECK(waits == 1);

  // Budget 650: at op 5 (1200) A, B and C off from their last forward use
  // leave 700 (D's window starts at op 6): 50 bytes missing even so.
  absl::StatusOr<Policy> q = planner.Plan(ToyProblem(650));
  CHECK(q.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(q.status().message() ==
        absl::StrCat(Toy().source(),
                     ": iteration 0: 50 bytes (50 B) still missing at op 5 (loss, FORWARD) to fit "
                     "the budget of 650 bytes, even with every one of the 4 candidate tensors "
                     "off the device from the op after its last forward use (the compute stream "
                     "waiting for the copies out) to its swap-in (candidates: non-persistent "
                     "tensors of at least 0 B whose idle window covers an over-budget op)"));
}

TEST_CASE("chameleon: the maximal fallback rescues what Algorithm 2 cannot", "[chameleon]") {
  // Budget 800, min-max normalisation. Whatever Algorithm 2 picks, the
  // result must pass the checker; this budget needs A, B and C together
  // (op 4: 1100 - 300 = 800 needs A and C or B...); the policy must be clean.
  ChameleonOptions o = ToyOptions();
  o.normalization = ScoreNormalization::kMinMax;
  ChameleonPlanner planner(o);
  absl::StatusOr<Policy> p = planner.Plan(ToyProblem(800));
  REQUIRE(p.ok());
  RequireClean(Toy(), *p);
  CHECK(p->expected_peak_bytes <= 800);
}

TEST_CASE("chameleon: the papers' per-layer swap-out completion", "[chameleon]") {
  // Round 0 selects A and C as in the worked example. Releases, searching
  // forward from the layer of the last forward use for d2h time:
  //   A: layer 0 (300 ns left >= 100) -> after its last op, op 2 (the queue
  //      says op 2 as well).
  //   C: layer 1 -> after op 5; its swap-in is at op 6, so nothing would be
  //      off the device: dropped (h2d refunded: layer 2 keeps 100 ns).
  // Replay: op 5 holds 1000 > 900 -> repair round 1: MRL {op 5: 100}; CL
  // = B (D covers no MRE; C was dropped). Layer 2 has 100 ns < 200 -> stall
  // fallback at op 6: 100 ns hidden, 100 ns stall.
  // Releases: A op 2; B queued 300..400 (op 3), layer 0 still has 200 ns ->
  // its last op 2 < 3 -> op 3. Replay: 800, 700, 800.
  ChameleonOptions o = ToyOptions();
  o.swap_out_completion = SwapOutCompletion::kLayerSearch;
  ChameleonPlanner planner(o);
  ChameleonExplanation x;
  absl::StatusOr<Policy> p = planner.PlanExplained(ToyProblem(900), &x);
  REQUIRE(p.ok());
  CHECK(ItemOps(*p) == std::vector<Ops>{{10, 1, 2, 6, 11}, {11, 2, 3, 6, 10}});
  CHECK(p->expected_overhead_ns == 100);
  CHECK(x.rounds == 2);
  RequireClean(Toy(), *p);
  bool dropped_c = false, repaired = false;
  for (const ChameleonDecision& d : x.decisions) {
    if (d.kind == ChameleonDecisionKind::kDropped) {
      dropped_c = Toy().tensor(x.windows[d.window].tensor).trace_id == 12;
    }
    repaired |= d.kind == ChameleonDecisionKind::kRepairRound;
  }
  CHECK(dropped_c);
  CHECK(repaired);
}

TEST_CASE("chameleon: one shared transfer budget per layer", "[chameleon]") {
  // Shared budget: the same selection as the worked example (swap-outs are
  // charged after selection). Layer 0's single budget then holds A's 100 ns
  // copy out; layer 2 the 300 ns of swap-ins.
  ChameleonOptions o = ToyOptions();
  o.link_budget = LinkBudget::kShared;
  ChameleonPlanner planner(o);
  ChameleonExplanation x;
  absl::StatusOr<Policy> p = planner.PlanExplained(ToyProblem(900), &x);
  REQUIRE(p.ok());
  CHECK(ItemOps(*p) == std::vector<Ops>{{10, 1, 2, 6, 11}, {12, 3, 4, 6, 9}});
  CHECK(x.link_budget == LinkBudget::kShared);
  RequireClean(Toy(), *p);
}

TEST_CASE("chameleon: per-selection rebuild and the papers' idle window", "[chameleon]") {
  // Per selection: after A, the CL is rebuilt: B (N 1) and C (N 1) -> B
  // first (larger), no fit; C fits. Same policy, two passes.
  ChameleonOptions o = ToyOptions();
  o.candidate_rebuild = CandidateRebuild::kPerSelection;
  ChameleonPlanner planner(o);
  ChameleonExplanation x;
  absl::StatusOr<Policy> p = planner.PlanExplained(ToyProblem(900), &x);
  REQUIRE(p.ok());
  CHECK(ItemOps(*p) == std::vector<Ops>{{10, 1, 2, 6, 11}, {12, 3, 4, 6, 9}});
  CHECK(x.passes.size() == 2);
  RequireClean(Toy(), *p);
  // Coverage from the last forward use: A covers ops 2..10 (still 3 MREs),
  // B 3..9 (3), C 4..8 (2): scores A 2, B 2, C 1.17; ties go to the larger
  // tensor, then window order: A first, same outcome.
  ChameleonOptions q = ToyOptions();
  q.idle_window_start = IdleWindowStart::kLastForwardUse;
  ChameleonExplanation y;
  absl::StatusOr<Policy> p2 = ChameleonPlanner(q).PlanExplained(ToyProblem(900), &y);
  REQUIRE(p2.ok());
  RequireClean(Toy(), *p2);
  CHECK(y.passes[0].candidates[1].n_mre == 3);
}

TEST_CASE("chameleon: options are validated", "[chameleon]") {
  ChameleonOptions o;
  o.layers = -1;
  CHECK(o.Validate().message() == "chameleon options: layers is -1; must be >= 0 (0 = from the trace)");
  o = {};
  o.score_c = -1;
  CHECK(o.Validate().message() == "chameleon options: score_c is -1; must be a finite value >= 0");
  o = {};
  o.runtime_key_mask_bits = 16;
  CHECK(o.Validate().message() == "chameleon options: runtime_key_mask_bits is 16; must be 32 or 64");
  o = {};
  o.optimizer_layers = 0;
  CHECK(ChameleonPlanner(o).Plan(ToyProblem(900)).status().message() ==
        "chameleon options: optimizer_layers is 0; must be >= 1");
  PlanningProblem bad = ToyProblem(900);
  bad.device.h2d_bandwidth_bytes_per_s = 0;
  CHECK(ChameleonPlanner().Plan(bad).status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace swapplan
