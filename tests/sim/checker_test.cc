// The policy checker, one violation at a time, on the two-layer toy of
// tests/data/traces/chameleon_toy.json:
//
//   op  name         phase  unswapped bytes      tensors (bytes; uses)
//   0   embed        F      400                  P 100 param; Gb 100 persistent grad
//   1   linear1      F      600                  A 200 (0, 1, 11)
//   2   linear2      F      700                  B 200 (1, 2, 10)
//   3   attn         F     1000                  C 100 (2, 3, 9)
//   4   mlp          F     1100                  T 300 (3, 4, 5)
//   5   loss         F     1200                  D 100 (4, 5, 8)
//   6   loss_bwd     B      900                  L 100 (5, 6)
//   7   mlp_bwd      B      800
//   8   attn_bwd     B      800                  trace ids: A 10, B 11, C 12,
//   9   linear2_bwd  B      700                  T 13, D 14, L 15
//   10  linear1_bwd  B      600
//   11  embed_bwd    B      400
//   12  sgd          O      200
//
// 1300 ns over 13 ops: Eq. (1) gives every op 100 ns (op i ends at
// 100 (i + 1)). The policies below use a 900-byte budget and a 2 B/ns d2h
// link unless a test says otherwise: a 200-byte copy takes 100 ns.
#include <catch2/catch.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/sim/checker.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

const Trace& Toy() {
  static const Trace t = testing::DataTrace("traces/chameleon_toy.json");
  return t;
}

PolicyItem Item(uint64_t id, int64_t size, int32_t out, int32_t rel, int32_t in, int32_t use) {
  return testing::SwapItem(id, size, out, rel, in, use);
}

Policy ToyPolicy(std::vector<PolicyItem> items) {
  Policy p;
  p.fingerprint = ComputeFingerprint(Toy(), 0);
  p.device.capacity_bytes = 900;
  p.device.h2d_bandwidth_bytes_per_s = 1e9;
  p.device.d2h_bandwidth_bytes_per_s = 2e9;
  p.planner = "test";
  p.items = std::move(items);
  return p;
}

CheckReport Check(const Policy& p) {
  absl::StatusOr<CheckReport> r = CheckPolicy(Toy(), p);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

std::vector<std::string> Messages(const CheckReport& r) {
  std::vector<std::string> m;
  for (const Violation& v : r.violations) m.push_back(v.message);
  return m;
}

// The Chameleon planner's policy for this toy (tests/planners/chameleon_test.cc):
// A out after op 1, copy 200..300 ns -> released after op 2, back at op 6;
// C out after op 3, copy 400..450 ns -> released after op 4, back at op 6.
const PolicyItem kA = Item(10, 200, 1, 2, 6, 11);
const PolicyItem kC = Item(12, 100, 3, 4, 6, 9);

TEST_CASE("checker: the planner's toy policy is clean", "[checker]") {
  CheckReport r = Check(ToyPolicy({kA, kC}));
  CHECK(r.clean());
  // A off ops 3..5, C off op 5: 1000-200 = 800, 1100-200 = 900,
  // 1200-300 = 900; op 6 holds 900. First op at the peak: op 4.
  CHECK(r.peak_bytes == 900);
  CHECK(r.peak_op == 4);
  CHECK(r.peak_unswapped_bytes == 1200);
  CHECK(r.bytes_out == 300);
  // h2d at 1 B/ns in swap-in order: A 600..800 ns (needed at 1100), C
  // queued 800..900 ns (needed at op 9 = 900 ns): on time.
  CHECK(r.late_swap_ins == 0);
}

TEST_CASE("checker: late swap-ins are reported as information", "[checker]") {
  // C brought back only at its first use (op 9, 900 ns): its copy ends at
  // 1000 ns, 100 ns after op 9 starts.
  CheckReport r = Check(ToyPolicy({kA, Item(12, 100, 3, 4, 9, 9)}));
  CHECK(r.clean());
  CHECK(r.late_swap_ins == 1);
  CHECK(r.swap_in_wait_ns == 100.0);
}

TEST_CASE("checker: over budget, one violation per run of ops", "[checker]") {
  // Nothing swapped: ops 3..5 hold 1000, 1100, 1200 > 900.
  CheckReport r = Check(ToyPolicy({}));
  CHECK(Messages(r) == std::vector<std::string>{
                           "op 5 (loss, FORWARD): 1200 bytes in use, 300 over the budget of 900 "
                           "(ops 3..5 are over) [over-budget]"});
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].kind == ViolationKind::kOverBudget);
  CHECK(r.violations[0].op == 5);
  CHECK(r.violations[0].bytes == 300);
}

TEST_CASE("checker: fingerprint mismatch stops the check", "[checker]") {
  Policy p = ToyPolicy({kA});
  const uint64_t real = p.fingerprint.op_sequence_hash;
  p.fingerprint.op_sequence_hash ^= 1;
  CheckReport r = Check(p);
  CHECK(Messages(r) ==
        std::vector<std::string>{absl::StrFormat(
            "policy fingerprint (0x%016x, 13 ops) does not match iteration 0 of %s (0x%016x, 13 "
            "ops) [fingerprint-mismatch]",
            real ^ 1, Toy().source(), real)});
  p.fingerprint.op_sequence_hash = real;
  p.fingerprint.iteration = 4;
  CHECK(Messages(Check(p)) ==
        std::vector<std::string>{absl::StrCat("policy was made for iteration 4 but ",
                                              Toy().source(),
                                              " has 1 iterations [fingerprint-mismatch]")});
}

TEST_CASE("checker: unknown tensor", "[checker]") {
  CheckReport r = Check(ToyPolicy({kA, kC, Item(99, 100, 3, 4, 6, 9)}));
  CHECK(Messages(r) == std::vector<std::string>{absl::StrCat(
                           "item 2 (tensor 99): no such tensor in ", Toy().source(),
                           " [unknown-tensor]")});
}

TEST_CASE("checker: op outside the iteration", "[checker]") {
  CheckReport r = Check(ToyPolicy({kC, Item(10, 200, 1, 2, 6, 13)}));
  CHECK(Messages(r) ==
        std::vector<std::string>{
            "item 1 (tensor 10 'A'): first_use_op 13 is outside iteration 0 (13 ops) [op-out-of-range]",
            // A is not accounted: with only C off (op 5) ops 3..5 hold 1000,
            // 1100, 1100; the first worst is op 4.
            "op 4 (mlp, FORWARD): 1100 bytes in use, 200 over the budget of 900 (ops 3..5 are "
            "over) [over-budget]"});
}

TEST_CASE("checker: swap-in before swap-out and bad op order", "[checker]") {
  Policy p = ToyPolicy({kA, kC, Item(11, 200, 5, 5, 4, 10), Item(11, 200, 2, 7, 6, 10)});
  CHECK(Messages(Check(p)) ==
        std::vector<std::string>{
            "item 2 (tensor 11 'B'): swap-in at op 4 (mlp, FORWARD) is not after the swap-out at op 5 "
            "(loss, FORWARD) [swap-in-before-swap-out]",
            "item 3 (tensor 11 'B'): ops must satisfy swap_out_op <= release_op < swap_in_op <= "
            "first_use_op, got 2, 7, 6, 10 [bad-op-order]"});
}

TEST_CASE("checker: size mismatch is reported, accounting uses the trace size", "[checker]") {
  CheckReport r = Check(ToyPolicy({Item(10, 300, 1, 2, 6, 11), kC}));
  CHECK(Messages(r) == std::vector<std::string>{
                           "item 0 (tensor 10 'A'): size_bytes 300 but the trace says 200 "
                           "[size-mismatch]"});
  CHECK(r.peak_bytes == 900);  // as with the right size: 200 came off, not 300
}

TEST_CASE("checker: tensor not allocated over the window", "[checker]") {
  // D (id 14) lives during ops 4..8 only.
  CheckReport r = Check(ToyPolicy({kA, kC, Item(14, 100, 2, 2, 8, 8)}));
  CHECK(Messages(r) == std::vector<std::string>{
                           "item 2 (tensor 14 'D'): the tensor is not allocated throughout ops 2..8 "
                           "(it is allocated during ops 4..8) [not-resident]"});
}

TEST_CASE("checker: use while off the device, one violation per use", "[checker]") {
  // A swapped out after op 0 although op 1 uses it. Its copy (100..200 ns)
  // is done by the end of op 1, so the release is fine; with A off ops 2..5
  // and C off op 5, ops 2..5 hold 500, 800, 900, 900: within budget.
  CheckReport r = Check(ToyPolicy({Item(10, 200, 0, 1, 6, 11), kC}));
  CHECK(Messages(r) == std::vector<std::string>{
                           "item 0 (tensor 10 'A'): used by op 1 (linear1, FORWARD) between its "
                           "swap-out after op 0 and its first use at op 11 [use-while-off-device]"});
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].op == 1);
  // B swapped out after op 1 and back at 6, first use 10: op 2 uses it.
  // (Its copy is queued behind A's: 300..400 ns, so released after op 3.)
  CheckReport r2 = Check(ToyPolicy({kA, kC, Item(11, 200, 1, 3, 6, 10)}));
  CHECK(Messages(r2) == std::vector<std::string>{
                            "item 2 (tensor 11 'B'): used by op 2 (linear2, FORWARD) between its "
                            "swap-out after op 1 and its first use at op 10 "
                            "[use-while-off-device]"});
}

TEST_CASE("checker: duplicated and overlapping items", "[checker]") {
  CheckReport r = Check(ToyPolicy({kA, kC, kA, Item(10, 200, 2, 3, 8, 11)}));
  CHECK(Messages(r) ==
        std::vector<std::string>{
            "item 2 (tensor 10 'A'): duplicates item 0 [duplicate-item]",
            "item 3 (tensor 10 'A'): window ops 2..11 overlaps item 0's window ops 1..11 "
            "[overlapping-items]"});
  // Two windows of one tensor that meet at an op do not overlap: C's
  // (2..3) and (3..9). (The first cannot release in time — not tested here.)
  CheckReport touching = Check(ToyPolicy({kA, Item(12, 100, 2, 2, 3, 3), kC}));
  for (const Violation& v : touching.violations) {
    CHECK(v.kind != ViolationKind::kOverlappingItems);
    CHECK(v.kind != ViolationKind::kDuplicateItem);
  }
}

TEST_CASE("checker: release before the copy could finish", "[checker]") {
  // A's copy runs 200..300 ns, i.e. completes during op 2 (200..300); a
  // release after op 1 (ends 200 ns) is too early.
  CheckReport r = Check(ToyPolicy({Item(10, 200, 1, 1, 6, 11), kC}));
  CHECK(Messages(r) == std::vector<std::string>{
                           // Tensors are named by their labels (trace/tensor_label.h).
                           "item 0 (tensor 10 'A'): released "
                           "after op 1 "
                           "(linear1, FORWARD) (200.0 "
                           "ns) but its copy out (200 bytes at 2.0 GB/s, started at 200.0 ns) "
                           "completes at 300.0 ns, during op 2 (linear2, FORWARD) "
                           "[release-before-copy-done]"});
  CHECK(r.violations[0].op == 2);
}

TEST_CASE("checker: the d2h stream is one FIFO", "[checker]") {
  // At 1 B/ns: A's copy (ready at 200 ns) runs 200..400 ns -> release after
  // op 3 is right. B is ready at 300 ns but queued behind A: 400..600 ns,
  // completing during op 5, so a release after op 4 is too early.
  Policy p = ToyPolicy({Item(10, 200, 1, 3, 6, 11), Item(11, 200, 2, 4, 6, 10)});
  p.device.d2h_bandwidth_bytes_per_s = 1e9;
  p.device.capacity_bytes = 2000;
  CHECK(Messages(Check(p)) ==
        std::vector<std::string>{
            "item 1 (tensor 11 'B'): released after op 4 (mlp, "
            "FORWARD) (500.0 ns) but its copy out "
            "(200 bytes at 1.0 GB/s, started at 400.0 ns) completes at 600.0 ns, during op 5 "
            "(loss, FORWARD) [release-before-copy-done]"});
  p.items[1].release_op = 5;
  CHECK(Check(p).clean());
}

TEST_CASE("checker: no d2h bandwidth", "[checker]") {
  Policy p = ToyPolicy({kA, kC});
  p.device.d2h_bandwidth_bytes_per_s = 0;
  CHECK(Messages(Check(p)) ==
        std::vector<std::string>{"the policy has items but no d2h bandwidth, so its release "
                                 "points cannot be checked [no-bandwidth]"});
}

TEST_CASE("checker: every violation at once", "[checker]") {
  Policy p = ToyPolicy({Item(10, 200, 1, 1, 6, 11), Item(99, 1, 1, 1, 2, 2),
                        Item(11, 200, 1, 2, 6, 10)});
  CheckReport r = Check(p);
  std::vector<ViolationKind> kinds;
  for (const Violation& v : r.violations) kinds.push_back(v.kind);
  // Item checks in item order, then copy timing, then memory: A released
  // too early; B used by op 2 inside its window, and its copy (queued
  // behind A's 200..300 ns) ends at 400 ns, during op 3; with A off 2..5 and
  // B off 3..5 every op is within budget.
  CHECK(kinds == std::vector<ViolationKind>{ViolationKind::kUnknownTensor,
                                            ViolationKind::kUseWhileOffDevice,
                                            ViolationKind::kReleaseBeforeCopyDone,
                                            ViolationKind::kReleaseBeforeCopyDone});
}

TEST_CASE("checker: ViolationTag names", "[checker]") {
  CHECK(ViolationTag(ViolationKind::kOverBudget) == "over-budget");
  CHECK(ViolationTag(ViolationKind::kReleaseBeforeCopyDone) == "release-before-copy-done");
  CHECK(ViolationTag(ViolationKind::kUseWhileOffDevice) == "use-while-off-device");
}

TEST_CASE("checker: bad options and missing times", "[checker]") {
  CheckOptions o;
  o.iteration_time_ns = -1;
  CHECK(CheckPolicy(Toy(), ToyPolicy({}), o).status().message() ==
        "check options: iteration_time_ns is -1; must be >= 0");
  o.iteration_time_ns = 0;
  o.op_time_model = OpTimeModel::kRecorded;
  absl::StatusOr<CheckReport> r = CheckPolicy(Toy(), ToyPolicy({kA, kC}), o);
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(r.status().message() ==
        absl::StrCat(Toy().source(),
                     ": iteration 0: op times 'recorded' need a duration on every op, and 13 of "
                     "13 ops have none"));
}

TEST_CASE("RECOMPUTE items: no copy, no release check, their time on the timeline",
          "[checker]") {
  // B (200 bytes) dropped after op 2, recomputed for 400 ns when op 10 is
  // reached: no copy out (bytes_out 0) and no release check although
  // nothing was copied; off the device during ops 3..9.
  PolicyItem b = Item(11, 200, 2, 2, 10, 10);
  b.action = ItemAction::kRecompute;
  b.recompute_ns = 400;
  Policy roomy = ToyPolicy({b});
  roomy.device.capacity_bytes = 1200;
  CheckReport r = Check(roomy);
  CHECK(r.clean());
  CHECK(r.bytes_out == 0);
  CHECK(r.late_swap_ins == 0);
  CHECK(r.peak_bytes == 1000);  // op 5: 1200 - 200
  CHECK(r.peak_op == 5);
  // A (200 bytes) out after op 1 (copy 200..300 ns = end of op 2, its
  // release), back when op 10 is reached, for op 11. The recomputation runs
  // on the compute stream at op 10: op 10 ends at 1000 + 400 + 100 = 1500 ns
  // and A's copy in (1 B/ns: 1000..1200 ns) is early. Without B, op 11
  // would start at 1100 ns and A's copy in would be 100 ns late.
  PolicyItem a = Item(10, 200, 1, 2, 10, 11);
  r = Check(ToyPolicy({b, a}));
  INFO(testing::ViolationMessages(r));
  CHECK(r.clean());
  CHECK(r.bytes_out == 200);  // A only
  CHECK(r.late_swap_ins == 0);
  CHECK(r.peak_bytes == 800);  // op 5: 1200 - 200 - 200 (op 2: 700)
  r = Check(ToyPolicy({a}));
  CHECK(r.late_swap_ins == 1);
  CHECK(r.swap_in_wait_ns == 100);
  // A RECOMPUTE item cannot wait for a copy it does not make.
  b.release_waits_for_copy = true;
  roomy.items = {b};
  r = Check(roomy);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].message ==
        "item 0 (tensor 11 'B'): release_waits_for_copy is set on a RECOMPUTE item (no copy to wait "
        "for) [bad-action]");
}

}  // namespace
}  // namespace swapplan
