// Execution-order refinement (planners/hyperoffload/refine.h): seed 003
// Fig. 4 and a brute-force cross-check of a single Prefetch's position.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "planners/hyperoffload/load_queue.h"
#include "planners/hyperoffload/refine.h"

namespace swapplan {
namespace {

// Fig. 4 in five ops (durations in ns; X = the prefetched tensor, 100
// bytes, copy 200 ns; the ops' own bytes in use during them):
//
//   op  name  ns   needs     bytes
//   0   A     100  -          100
//   1   G     300  A          500   (a large temporary)
//   2   C     100  G, X       200   (X's consumer)
//   3   D     200  G          200   (independent of C)
//   4   F     100  C, D       100
//
// X's tier copy is valid after A (its Detach), so the Prefetch may be
// issued from G on.
RefineProblem Fig4() {
  RefineProblem p;
  p.duration_ns = {100, 300, 100, 200, 100};
  p.SetPredecessors({{}, {0}, {1}, {1}, {2, 3}});
  p.order = {0, 1, 2, 3, 4};
  p.prefetches = {{.consumer = 2, .earliest_op = 1, .copy_ns = 200, .tier = 1}};
  return p;
}
const int64_t kOpBytes[] = {100, 500, 200, 200, 100};

// Peak bytes when X (100 bytes) is on the device from its issue op
// through its consumer, in `order`.
int64_t Peak(const std::vector<int32_t>& order, int32_t issue_op) {
  int64_t peak = 0;
  bool resident = false;
  for (int32_t op : order) {
    if (op == issue_op) resident = true;
    peak = std::max(peak, kOpBytes[op] + (resident ? 100 : 0));
    if (op == 2) resident = false;
  }
  return peak;
}

TEST_CASE("Fig. 4: too late stalls, too early raises the peak, refined has neither",
          "[hyperoffload]") {
  const RefineProblem p = Fig4();
  const RefineOptions o;  // residency_weight 0.001
  // (a) Too late: the recorded order, X fetched when C is dispatched.
  // C starts at 400 ns; the copy runs 400..600: C stalls 200 ns; X is
  // resident only during the copy and C (residency 200 ns); peak 500 (G).
  PrefetchPlacement late = EvaluatePlacement(p, p.order, p.prefetches[0], 2, o);
  CHECK(late.exposed_ns == 200);
  CHECK(late.residency_ns == 200);
  CHECK(Peak(p.order, 2) == 500);
  // (b) Too early: issued at G (100 ns): the copy ends at 300 < 400, no
  // stall, but X sits on the device through G (residency 300 ns) and the
  // peak rises to 500 + 100 = 600.
  PrefetchPlacement early = EvaluatePlacement(p, p.order, p.prefetches[0], 1, o);
  CHECK(early.exposed_ns == 0);
  CHECK(early.residency_ns == 300);
  CHECK(Peak(p.order, 1) == 600);
  // (c) Refined: D (independent of C) is hoisted before C and X is issued
  // at D: A 0-100, G 100-400, D 400-600 with the copy 400-600, C at 600:
  // no stall, residency 200 ns, X not resident during G: peak 500.
  absl::StatusOr<RefineResult> r = RefineOrder(p, o);
  REQUIRE(r.ok());
  CHECK(r->order == std::vector<int32_t>{0, 1, 3, 2, 4});
  CHECK(r->hoisted_ops == 1);
  REQUIRE(r->placements.size() == 1);
  CHECK(r->placements[0].issue_op == 3);
  CHECK(r->placements[0].exposed_ns == 0);
  CHECK(r->placements[0].residency_ns == 200);
  CHECK(r->placements[0].cost == Approx(0.2));  // 0 + 0.001 x 200
  CHECK(Peak(r->order, 3) == 500);
  // Without reordering the best position in the recorded order is (b):
  // cost 0.3 (hidden, residency 300) beats (a)'s 200 + 0.2.
  RefineOptions fixed;
  fixed.scan_ops = 0;
  absl::StatusOr<RefineResult> f = RefineOrder(p, fixed);
  REQUIRE(f.ok());
  CHECK(f->order == p.order);
  CHECK(f->placements[0].issue_op == 1);
  CHECK(f->placements[0].residency_ns == 300);
}

TEST_CASE("refinement: a shared load stream delays the second prefetch", "[hyperoffload]") {
  // Four 100-ns ops in a chain; two prefetches on tier 0, both allowed from
  // op 0, copy 150 ns, consumers ops 2 and 3. The first (consumer op 2,
  // starts at 200) is issued at op 0 (copy 0..150; at op 1 it would end at
  // 250 > 200). The second (consumer op 3 at 300) finds the stream busy
  // until 150: issued at op 1 (100), its copy runs 150..300: hidden.
  RefineProblem p;
  p.duration_ns = {100, 100, 100, 100};
  p.SetPredecessors({{}, {0}, {1}, {2}});
  p.order = {0, 1, 2, 3};
  p.prefetches = {{.consumer = 2, .earliest_op = 0, .copy_ns = 150, .tier = 0},
                  {.consumer = 3, .earliest_op = 0, .copy_ns = 150, .tier = 0}};
  absl::StatusOr<RefineResult> r = RefineOrder(p, {});
  REQUIRE(r.ok());
  CHECK(r->placements[0].issue_op == 0);
  CHECK(r->placements[0].exposed_ns == 0);
  CHECK(r->placements[1].issue_op == 1);
  CHECK(r->placements[1].exposed_ns == 0);
  CHECK(r->placements[1].residency_ns == 200);  // issued at 100, consumer at 300
}

TEST_CASE("refinement: contention on one load stream places the earlier prefetch earlier",
          "[hyperoffload]") {
  // Four 100-ns ops in a chain (op i starts at 100 i); two prefetches on
  // tier 0, both allowed from op 0: a (consumer op 2 at 200, copy 100) and
  // b (consumer op 3 at 300, copy 200).
  RefineProblem p;
  p.duration_ns = {100, 100, 100, 100};
  p.SetPredecessors({{}, {0}, {1}, {2}});
  p.order = {0, 1, 2, 3};
  p.prefetches = {{.consumer = 2, .earliest_op = 0, .copy_ns = 100, .tier = 0},
                  {.consumer = 3, .earliest_op = 0, .copy_ns = 200, .tier = 0}};
  SECTION("without the contention term, b stalls 100 ns") {
    // a alone: the latest start <= 200 - 100 is op 1 (100): copy 100..200.
    // b then finds the stream busy until 200: wherever it is issued at or
    // before op 2 its copy runs 200..400, 100 ns past op 3's start; the
    // least residency among equal stalls is the issue at op 2 (200).
    RefineOptions o;
    o.stream_contention = false;
    absl::StatusOr<RefineResult> r = RefineOrder(p, o);
    REQUIRE(r.ok());
    CHECK(r->placements[0].issue_op == 1);
    CHECK(r->placements[0].exposed_ns == 0);
    CHECK(r->placements[1].issue_op == 2);
    CHECK(r->placements[1].exposed_ns == 100);
  }
  SECTION("with it, both copies are hidden") {
    // Backward from the last consumer: b must end by 300, so it starts by
    // 100; a must end by then (not by its own 200), so it starts by 0.
    // a at op 0: copy 0..100; b at op 1: copy 100..300 — no stall; a
    // stays 200 ns on the device (0..200) instead of 100.
    absl::StatusOr<RefineResult> r = RefineOrder(p, {});
    REQUIRE(r.ok());
    CHECK(r->placements[0].issue_op == 0);
    CHECK(r->placements[0].exposed_ns == 0);
    CHECK(r->placements[0].delay_ns == 0);
    CHECK(r->placements[0].residency_ns == 200);
    CHECK(r->placements[1].issue_op == 1);
    CHECK(r->placements[1].exposed_ns == 0);
  }
}

TEST_CASE("load queue: latest starts backward, stalls forward", "[hyperoffload]") {
  // a: deadline 300, copy 150; b: deadline 400, copy 150 (one tier).
  // b: ends by 400, starts by 250; a: ends by min(300, 250) = 250, starts
  // by 100. On another tier c (deadline 300, copy 150) is not delayed.
  const std::vector<QueuedLoad> loads = {
      {.ready_ns = 0, .deadline_ns = 300, .copy_ns = 150, .tier = 0},
      {.ready_ns = 0, .deadline_ns = 400, .copy_ns = 150, .tier = 0},
      {.ready_ns = 0, .deadline_ns = 300, .copy_ns = 150, .tier = 1}};
  const std::vector<LoadSlot> s = LatestLoadStarts(loads);
  CHECK(s[0].latest_start_ns == 100);
  CHECK(s[0].finish_by_ns == 250);
  CHECK(s[1].latest_start_ns == 250);
  CHECK(s[1].finish_by_ns == 400);
  CHECK(s[2].latest_start_ns == 150);
  CHECK(s[2].finish_by_ns == 300);
  // Issued at their latest starts: no stall. a and b both issued at 150
  // (just in time for a alone): a runs 150..300, b 300..450: b stalls 50.
  CHECK(QueuedLoadStalls(loads, {100, 250, 150}) == std::vector<int64_t>{0, 0, 0});
  CHECK(QueuedLoadStalls(loads, {150, 150, 150}) == std::vector<int64_t>{0, 50, 0});
  // A load whose copy is not ready in time (ready 200 > latest 100)
  // starts at 200; the load before it need only end by then.
  const std::vector<QueuedLoad> late = {
      {.ready_ns = 0, .deadline_ns = 250, .copy_ns = 100, .tier = 0},
      {.ready_ns = 200, .deadline_ns = 300, .copy_ns = 200, .tier = 0}};
  const std::vector<LoadSlot> t = LatestLoadStarts(late);
  CHECK(t[1].latest_start_ns == 200);  // 300 - 200 = 100, raised to ready
  CHECK(t[0].finish_by_ns == 200);
  CHECK(t[0].latest_start_ns == 100);
}

TEST_CASE("load queue: latest starts are stall-free and maximal (random, naive check)",
          "[hyperoffload]") {
  // Random loads on two tiers; issued at their latest starts they never
  // stall when no latest start was raised to its ready time, and (naive
  // reference: QueuedLoadStalls itself) issuing any one of them 1 ns later
  // stalls a load of its tier.
  const uint64_t seed = 20261127;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  int checked = 0;  // trials with no latest start clamped to the ready time
  for (int trial = 0; trial < 500; ++trial) {
    INFO("trial " << trial);
    const int n = 1 + static_cast<int>(rng() % 6);
    std::vector<QueuedLoad> loads(n);
    for (QueuedLoad& l : loads) {
      l.deadline_ns = 100 * static_cast<int64_t>(5 + rng() % 20);
      l.copy_ns = 50 * static_cast<int64_t>(rng() % 6);
      l.ready_ns = 0;
      l.tier = static_cast<int32_t>(rng() % 2);
    }
    const std::vector<LoadSlot> slots = LatestLoadStarts(loads);
    std::vector<int64_t> issue(n);
    bool clamped = false;
    for (int j = 0; j < n; ++j) {
      issue[j] = slots[j].latest_start_ns;
      clamped = clamped || slots[j].finish_by_ns - loads[j].copy_ns < 0;
      CHECK(slots[j].finish_by_ns <= loads[j].deadline_ns);
    }
    if (clamped) continue;
    ++checked;
    const std::vector<int64_t> stalls = QueuedLoadStalls(loads, issue);
    for (int j = 0; j < n; ++j) CHECK(stalls[j] == 0);
    for (int j = 0; j < n; ++j) {
      if (loads[j].copy_ns == 0) continue;
      std::vector<int64_t> later = issue;
      ++later[j];
      const std::vector<int64_t> s = QueuedLoadStalls(loads, later);
      int64_t total = 0;
      for (int64_t x : s) total += x;
      CHECK(total > 0);
    }
  }
  WARN("load queue: " << checked << " of 500 trials checked (the rest clamped)");
  CHECK(checked >= 250);
}

TEST_CASE("refinement: invalid problems name the field", "[hyperoffload]") {
  RefineProblem p = Fig4();
  p.order = {0, 2, 1, 3, 4};
  CHECK(RefineOrder(p, {}).status().message() ==
        "order refinement: order runs op 2 at position 1 before its predecessor op 1 at "
        "position 2");
  p = Fig4();
  p.prefetches[0].earliest_op = 4;
  CHECK(RefineOrder(p, {}).status().message() ==
        "order refinement: prefetch 0: earliest op 4 comes after its consumer op 2");
  RefineOptions o;
  o.residency_weight = -1;
  CHECK(RefineOrder(Fig4(), o).status().code() == absl::StatusCode::kInvalidArgument);
}

// A random DAG of n ops in recorded order 0..n-1 (edges forward only).
RefineProblem RandomProblem(std::mt19937_64& rng, int32_t n) {
  RefineProblem p;
  p.duration_ns.resize(n);
  std::vector<std::vector<int32_t>> preds(n);
  p.order.resize(n);
  for (int32_t v = 0; v < n; ++v) {
    p.order[v] = v;
    p.duration_ns[v] = 100 * static_cast<int64_t>(rng() % 5);
    for (int32_t u = 0; u < v; ++u) {
      if (rng() % 3 == 0) preds[v].push_back(u);
    }
  }
  p.SetPredecessors(preds);
  const int32_t consumer = static_cast<int32_t>(rng() % n);
  const int32_t earliest = static_cast<int32_t>(rng() % (consumer + 1));
  p.prefetches = {{.consumer = consumer, .earliest_op = earliest,
                   .copy_ns = 50 * static_cast<int64_t>(rng() % 12), .tier = 0}};
  return p;
}

TEST_CASE("refinement finds a single prefetch's best position (brute force, <= 8 ops)",
          "[hyperoffload]") {
  const uint64_t seed = 20261126;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    const int32_t n = 1 + static_cast<int32_t>(rng() % 8);
    const RefineProblem p = RandomProblem(rng, n);
    INFO("trial " << trial);
    const RefinePrefetch& f = p.prefetches[0];
    RefineOptions fixed;
    fixed.scan_ops = 0;
    // Brute force: every issue op from the earliest through the consumer.
    double best = 1e300;
    for (int32_t op = f.earliest_op; op <= f.consumer; ++op) {
      best = std::min(best, EvaluatePlacement(p, p.order, f, op, fixed).cost);
    }
    absl::StatusOr<RefineResult> r = RefineOrder(p, fixed);
    REQUIRE(r.ok());
    CHECK(r->order == p.order);
    const PrefetchPlacement& got = r->placements[0];
    CHECK(got.cost == Approx(best).margin(1e-9));
    CHECK(EvaluatePlacement(p, p.order, f, got.issue_op, fixed).cost == Approx(got.cost));
    // With reordering: a valid order, never a worse cost.
    absl::StatusOr<RefineResult> re = RefineOrder(p, {});
    REQUIRE(re.ok());
    RefineProblem check = p;
    check.order = re->order;
    CHECK(check.Validate().ok());
    CHECK(re->placements[0].cost <= best + 1e-9);
    CHECK(EvaluatePlacement(p, re->order, f, re->placements[0].issue_op, fixed).cost ==
          Approx(re->placements[0].cost));
  }
}

}  // namespace
}  // namespace swapplan
