// Advice from a comparison (eval/advise.h): ranking with worked values on
// hand-made rows, the errors, and the "what limits" notes on the two-layer
// toy (tests/data/traces/two_layers.json: 12 ops of 100 ns, f00 f01 f02 f10
// f11 f12 forward then b12 ... b00, 100-byte tensors).
#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/eval/advise.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

// A judged row: feasible or not, simulated time and bytes each way.
PlannerOutcome Row(const std::string& name, bool feasible, int64_t time_ns, int64_t d2h,
                   int64_t h2d, bool unlimited = false) {
  PlannerOutcome r;
  r.planner = name;
  r.planned = r.valid = true;
  r.feasible = feasible;
  r.unlimited_memory = unlimited;
  SimulationResult s;
  s.iteration_time_ns = time_ns;
  s.bytes_d2h = d2h;
  s.bytes_h2d = h2d;
  s.oom.occurred = !feasible;
  r.sim = s;
  r.items = d2h > 0 ? 1 : 0;
  return r;
}

Comparison Budget(int64_t budget, int64_t peak) {
  Comparison c;
  c.budget_bytes = budget;
  c.peak.bytes = peak;
  return c;
}

TEST_CASE("advise: fastest feasible row first, then fewest bytes moved, then row order",
          "[eval][advise]") {
  Comparison c = Budget(1000, 1200);
  c.rows.push_back(Row("ideal", true, 900, 0, 0, /*unlimited=*/true));  // never a candidate
  c.rows.push_back(Row("noswap", false, 900, 0, 0));                    // OOM
  c.rows.push_back(Row("chameleon", true, 1100, 300, 300));             // 1100 ns
  c.rows.push_back(Row("vdnn", true, 1050, 500, 500));                  // 1050 ns, 1000 B
  c.rows.push_back(Row("lru", true, 1050, 400, 400));                   // 1050 ns, 800 B
  PlannerOutcome none;
  none.planner = "recompute";  // did not plan
  c.rows.push_back(none);
  absl::StatusOr<Advice> a = ChooseAdvice(c);
  REQUIRE(a.ok());
  CHECK_FALSE(a->fits_without_swapping);
  CHECK(a->headroom_bytes == -200);  // 1000 - 1200
  CHECK(a->num_feasible == 3);       // chameleon, vdnn, lru
  CHECK(a->best == 4);               // lru: 1050 ns and 800 B < vdnn's 1000 B
  CHECK(a->runner_up == 3);          // vdnn: 1050 ns beats chameleon's 1100 ns
  CHECK(BytesMoved(c.rows[4]) == 800);
  CHECK(BytesMoved(c.rows[5]) == 0);  // no simulation

  // Equal time and bytes: the earlier row wins.
  c.rows[3] = Row("vdnn", true, 1050, 400, 400);
  a = ChooseAdvice(c);
  REQUIRE(a.ok());
  CHECK(a->best == 3);
  CHECK(a->runner_up == 4);
}

TEST_CASE("advise: the peak within the budget fits, one candidate has no runner-up",
          "[eval][advise]") {
  Comparison c = Budget(1000, 1000);  // headroom 0: fits
  c.rows.push_back(Row("noswap", true, 900, 0, 0));
  c.rows.push_back(Row("chameleon", false, 950, 100, 100));
  absl::StatusOr<Advice> a = ChooseAdvice(c);
  REQUIRE(a.ok());
  CHECK(a->fits_without_swapping);
  CHECK(a->headroom_bytes == 0);
  CHECK(a->best == 0);
  CHECK(a->runner_up == -1);
  CHECK(a->num_feasible == 1);
}

TEST_CASE("advise: nothing feasible, and malformed comparisons", "[eval][advise]") {
  Comparison c = Budget(500, 1200);
  c.rows.push_back(Row("ideal", true, 900, 0, 0, /*unlimited=*/true));
  c.rows.push_back(Row("noswap", false, 900, 0, 0));
  absl::StatusOr<Advice> a = ChooseAdvice(c);
  REQUIRE(a.ok());
  CHECK(a->best == -1);
  CHECK(a->runner_up == -1);
  CHECK(a->num_feasible == 0);
  CHECK(a->headroom_bytes == -700);

  absl::StatusOr<Advice> empty = ChooseAdvice(Budget(500, 100));
  CHECK(KindOf(empty.status()) == ErrorKind::kMalformedInput);
  CHECK(empty.status().message() == "advise: the comparison has no planner rows");

  PlannerOutcome no_sim;
  no_sim.planner = "chameleon";
  no_sim.feasible = true;
  c.rows.push_back(no_sim);
  absl::StatusOr<Advice> bad = ChooseAdvice(c);
  CHECK(KindOf(bad.status()) == ErrorKind::kMalformedInput);
  CHECK(bad.status().message() == "advise: feasible row 'chameleon' has no simulation");
}

TEST_CASE("advise: what limits a row, in compare's words", "[eval][advise]") {
  const Trace t = testing::DataTrace("traces/two_layers.json");
  CHECK(LocalOpText(t, 0, 4) == "op 4 (f11)");
  CHECK(BytesWithExact(100) == "100 B");
  CHECK(BytesWithExact(2048) == "2.00 KiB (2048 B)");

  PlannerOutcome not_planned;
  not_planned.infeasible_reason = "the budget is below the persistent bytes";
  CHECK(OutcomeNote(t, 0, not_planned) == "the budget is below the persistent bytes");

  PlannerOutcome invalid;
  invalid.planned = true;
  invalid.invalid_reason = "item 0: tensor 9 is unknown";
  CHECK(OutcomeNote(t, 0, invalid) ==
        "invalid policy (fails the checker): item 0: tensor 9 is unknown");

  // A simulated OOM at op 6 (b12): asked for 100 B with 50 B free.
  PlannerOutcome oom = Row("noswap", false, 1200, 0, 0);
  oom.sim->oom.op = 6;
  oom.sim->oom.requested_bytes = 100;
  oom.sim->oom.free_bytes = 50;
  CHECK(OutcomeNote(t, 0, oom) == "simulated OOM at op 6 (b12): requested 100 B with 50 B free");

  PlannerOutcome fits = Row("noswap", true, 1200, 0, 0);
  CHECK(OutcomeNote(t, 0, fits) == "fits without swapping");
  PlannerOutcome ideal = Row("ideal", true, 1200, 0, 0, /*unlimited=*/true);
  CHECK(OutcomeNote(t, 0, ideal) == "unlimited memory (the reference for overhead)");

  // Copies of 200 B each way, all hidden.
  PlannerOutcome hidden = Row("chameleon", true, 1200, 200, 200);
  CHECK(OutcomeNote(t, 0, hidden) == "all 200 B of copies hidden");

  // 300 ns of stall in 2 ops (200 swap-in + 100 release), the longest 200 ns
  // at op 7 (b11) waiting for tensor 4 to come back; 150 ns recomputation of
  // 1 tensor.
  PlannerOutcome stalls = Row("vdnn", true, 1650, 200, 200);
  SimulationResult& s = *stalls.sim;
  s.stall_ns = 300;
  s.ops_with_stall = 2;
  s.stall_swap_in_ns = 200;
  s.stall_release_ns = 100;
  s.recompute_ns = 150;
  s.recomputed_items = 1;
  s.top_stalls.push_back({.op = 7, .stall_ns = 200, .cause = StallCause::kSwapIn, .tensor_id = 4});
  CHECK(OutcomeNote(t, 0, stalls) ==
        "recomputes 150 ns of forward for 1 tensors; stalls 300 ns in 2 ops (swap-in 200 ns, "
        "release 100 ns), longest 200 ns at op 7 (b11) waiting for the copy in of "
        "a10 \xE2\x86\x92 ACTIVATION 100 B");  // tensor 4, named a10 (trace/tensor_label.h)
}

}  // namespace
}  // namespace swapplan
