// The policy resolver on the two-layer toy of tests/data/traces/chameleon_toy.json
// (13 ops; A = 10: 200 bytes used by ops 0, 1, 11; B = 11: 200 bytes, ops 1,
// 2, 10; C = 12: 100 bytes, ops 2, 3, 9; P = 1 and Gb = 2: persistent, 100
// bytes each; unswapped peak 1200 bytes at op 5): positions, copy durations
// from the device model, the bytes per position, the first issue as the
// error (kind and rule tag) versus every issue.
#include "swapplan/policy/resolver.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"

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
  p.items = std::move(items);
  return p;
}

// 1 byte/ns in, 2 bytes/ns out, 10 ns per copy.
DeviceModel Link() {
  return {.capacity_bytes = 900, .h2d_bandwidth_bytes_per_s = 1e9,
          .d2h_bandwidth_bytes_per_s = 2e9, .copy_latency_ns = 10};
}

TEST_CASE("resolver: items in positions, copies timed by the device model", "[resolver]") {
  absl::StatusOr<PolicyResolver> r = PolicyResolver::Create(Toy(), 0);
  REQUIRE(r.ok());
  CHECK(r->num_ops() == 13);
  CHECK(r->fingerprint() == ComputeFingerprint(Toy(), 0));
  CHECK(r->SlotOf(10) >= 0);
  CHECK(r->SlotOf(999) == -1);
  PolicyItem c = Item(12, 100, 3, 3, 8, 9);
  c.action = ItemAction::kRecompute;
  // C's producer, op 2, takes 1300 ns / 13 ops = 100 ns (Eq. 1): the
  // recipe's cost, so the stated time is not understated.
  c.recompute_ns = 100;
  absl::StatusOr<ResolvedPolicy> rp = r->Resolve(ToyPolicy({Item(10, 200, 1, 2, 6, 11), c}), Link());
  REQUIRE(rp.ok());
  REQUIRE(rp->items.size() == 2);
  const ResolvedItem& a = rp->items[0];
  CHECK(a.item == 0);
  CHECK(r->tensors()[a.slot].id == a.tensor);
  CHECK(a.size_bytes == 200);
  CHECK((a.out == 1 && a.release == 2 && a.in == 6 && a.use == 11));
  CHECK(a.out_ns == 110);  // 10 + 200 B / 2 B/ns
  CHECK(a.in_ns == 210);   // 10 + 200 B / 1 B/ns
  // A RECOMPUTE item makes no copy.
  CHECK_FALSE(rp->items[1].swap());
  CHECK(rp->items[1].out_ns == 0);
  CHECK(rp->items[1].in_ns == 0);
  CHECK(rp->accounted == std::vector<int32_t>{0, 1});
  CHECK(rp->issues.empty());
  // The bytes per position are the memory curve's.
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(Toy());
  REQUIRE(curve.ok());
  CHECK(rp->UnswappedBytes() == curve->unswapped_bytes());
  // Unknown bandwidths leave copies untimed.
  absl::StatusOr<ResolvedPolicy> untimed = r->Resolve(ToyPolicy({Item(10, 200, 1, 2, 6, 11)}), {});
  REQUIRE(untimed.ok());
  CHECK(untimed->items[0].out_ns == 0);
}

TEST_CASE("resolver: under a schedule, positions and lifetimes follow it", "[resolver]") {
  absl::StatusOr<PolicyResolver> r = PolicyResolver::Create(Toy(), 0);
  REQUIRE(r.ok());
  // Ops 2 and 3 swapped: C (used by 2, 3) still lives at positions 2..3.
  const std::vector<int32_t> schedule = {0, 1, 3, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  absl::StatusOr<ResolvedPolicy> rp =
      r->Resolve(ToyPolicy({Item(10, 200, 1, 2, 6, 11)}), Link(), {.schedule = schedule});
  REQUIRE(rp.ok());
  CHECK(rp->scheduled());
  CHECK(rp->Pos(3) == 2);
  CHECK(rp->OpAt(3) == 2);
  CHECK(rp->items[0].release == 3);  // op 2 runs at position 3
  // T (13, made by op 3) is allocated at position 2 now, at 3 in the
  // recorded order.
  const int32_t t = r->SlotOf(13);
  REQUIRE(t >= 0);
  CHECK(r->tensors()[t].alloc == 3);
  CHECK(rp->tensors[t].alloc == 2);
  // Not a permutation: nothing else is resolved.
  const std::vector<int32_t> bad = {0, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  absl::StatusOr<ResolvedPolicy> all =
      r->Resolve(ToyPolicy({Item(10, 200, 1, 2, 6, 11)}), Link(),
                 {.schedule = bad, .all_issues = true});
  REQUIRE(all.ok());
  CHECK(all->stopped);
  REQUIRE(all->issues.size() == 1);
  CHECK(all->issues[0].rule == ResolveRule::kBadSchedule);
  CHECK(all->items.empty());
}

TEST_CASE("resolver: the first issue is the error; all_issues lists every one", "[resolver]") {
  absl::StatusOr<PolicyResolver> r = PolicyResolver::Create(Toy(), 0);
  REQUIRE(r.ok());
  // Item 0: unknown tensor. Item 1: A used by op 1 while off device (out
  // after op 0). Item 2: duplicates item 1.
  Policy p = ToyPolicy({Item(999, 100, 1, 1, 3, 4), Item(10, 200, 0, 0, 6, 11),
                        Item(10, 200, 0, 0, 6, 11)});
  absl::StatusOr<ResolvedPolicy> strict = r->Resolve(p, Link());
  CHECK(strict.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(KindOf(strict.status()) == ErrorKind::kMalformedInput);
  CHECK(RuleOf(strict.status()) == std::optional<std::string>("unknown-tensor"));
  CHECK(strict.status().message() ==
        "item 0 (tensor 999): no such tensor in " + Toy().source() + " [unknown-tensor]");
  absl::StatusOr<ResolvedPolicy> all = r->Resolve(p, Link(), {.all_issues = true});
  REQUIRE(all.ok());
  std::vector<std::string> tags;
  for (const ResolveIssue& i : all->issues) tags.emplace_back(ResolveRuleTag(i.rule));
  CHECK(tags == std::vector<std::string>{"unknown-tensor", "use-while-off-device",
                                         "use-while-off-device", "duplicate-item"});
  CHECK(all->issues[1].op == 1);
  CHECK(all->issues[1].item == 1);
  // Item 1 is accounted (a use while off device is reported, not fatal to
  // the accounting); 0 and the duplicate are not.
  CHECK(all->accounted == std::vector<int32_t>{-1, 0, -1});
  // Another op sequence: a fingerprint mismatch, kind and tag.
  Policy other = ToyPolicy({});
  other.fingerprint.op_sequence_hash ^= 1;
  absl::StatusOr<ResolvedPolicy> fp = r->Resolve(other, Link());
  CHECK(fp.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(KindOf(fp.status()) == ErrorKind::kFingerprintMismatch);
  CHECK(RuleOf(fp.status()) == std::optional<std::string>("fingerprint-mismatch"));
  CHECK(PolicyResolver::Create(Toy(), 3).status().message() ==
        "iteration 3 is out of range (" + Toy().source() + " has 1 iterations)");
}

TEST_CASE("resolver: actions", "[resolver]") {
  absl::StatusOr<PolicyResolver> r = PolicyResolver::Create(Toy(), 0);
  REQUIRE(r.ok());
  PolicyItem swap_with_time = Item(10, 200, 1, 2, 6, 11);
  swap_with_time.recompute_ns = 5;
  PolicyItem wrapped_recompute = Item(10, 200, 1, 2, 6, 11);
  wrapped_recompute.action = ItemAction::kRecompute;
  wrapped_recompute.clean = true;
  absl::StatusOr<ResolvedPolicy> all =
      r->Resolve(ToyPolicy({swap_with_time, wrapped_recompute}), Link(), {.all_issues = true});
  REQUIRE(all.ok());
  REQUIRE(all->issues.size() == 2);
  CHECK(all->issues[0].message ==
        "item 0 (tensor 10 'A'): recompute_ns is 5; must be >= 0, and 0 for a SWAP item "
        "[bad-action]");
  CHECK(all->issues[1].message ==
        "item 1 (tensor 10 'A'): clean is only allowed on SWAP items [bad-op-order]");
  CHECK(all->items.empty());
}

}  // namespace
}  // namespace swapplan
