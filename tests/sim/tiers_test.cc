// Memory tiers in the checker, the simulator and the policy formats, on the
// two-layer toy of tests/sim/checker_test.cc (13 ops of 100 ns; A 200
// bytes, used at ops 0, 1, 11; C 100 bytes, used at 2, 3, 9).
//
// Items (cache operators, policy.h): A Store after op 1, Detach after op 2,
// Prefetch at op 6 for op 11; C Store after op 3, Detach after op 4,
// Prefetch at op 6 for op 9. Host link 2 B/ns out, 1 B/ns in; the remote
// tier 1 B/ns both ways.
#include <catch2/catch.hpp>

#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {
namespace {

const Trace& Toy() {
  static const Trace t = testing::DataTrace("traces/chameleon_toy.json");
  return t;
}

PolicyItem Item(uint64_t id, int64_t size, int32_t out, int32_t rel, int32_t in, int32_t use,
                int32_t tier) {
  PolicyItem it = testing::SwapItem(id, size, out, rel, in, use);
  it.tier = tier;
  return it;
}

Policy TierPolicy(int64_t remote_capacity, int32_t shared_by, int32_t tier_a, int32_t tier_c) {
  Policy p;
  p.fingerprint = ComputeFingerprint(Toy(), 0);
  p.device.capacity_bytes = 900;
  p.device.h2d_bandwidth_bytes_per_s = 1e9;
  p.device.d2h_bandwidth_bytes_per_s = 2e9;
  p.device.tiers.push_back({.name = "remote", .capacity_bytes = remote_capacity,
                            .store_bandwidth_bytes_per_s = 1e9,
                            .load_bandwidth_bytes_per_s = 1e9, .shared_by_ranks = shared_by});
  p.planner = "test";
  p.items = {Item(10, 200, 1, 2, 6, 11, tier_a), Item(12, 100, 3, 4, 6, 9, tier_c)};
  return p;
}

CheckReport Check(const Policy& p) {
  absl::StatusOr<CheckReport> r = CheckPolicy(Toy(), p);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *std::move(r);
}

TEST_CASE("tiers: a tier's capacity is never exceeded (tier-over-capacity)", "[tiers]") {
  // Both on the remote tier: A is held there from op 1 (its Store) to op 11
  // (its Prefetch done), C from op 3 to op 9: 300 bytes at ops 3..9, over
  // a 250-byte tier from op 3 on. A's Store at 1 B/ns takes 200 ns (200..400)
  // and completes during op 3, after its Detach at op 2: the checker says so
  // too, so A's Detach moves to op 3 here.
  Policy p = TierPolicy(250, 1, 1, 1);
  p.items[0].release_op = 3;
  // A counted on the device through op 3: 1000 bytes there.
  p.device.capacity_bytes = 1000;
  CheckReport r = Check(p);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].kind == ViolationKind::kTierOverCapacity);
  CHECK(r.violations[0].message ==
        "tier 1 (remote) holds 300 bytes at op 3 (attn, FORWARD), over this rank's capacity of "
        "250 bytes [tier-over-capacity]");
  REQUIRE(r.tier_usage.size() == 2);
  CHECK(r.tier_usage[1].peak_bytes == 300);
  CHECK(r.tier_usage[1].items == 2);
  auto over = [](const CheckReport& c) {
    int n = 0;
    for (const Violation& v : c.violations) n += v.kind == ViolationKind::kTierOverCapacity;
    return n;
  };
  // 600 bytes shared by 2 ranks: 300 per rank, enough. (Each rank's copies
  // run at half the tier's bandwidth, so the Detach points are now early:
  // other rules, not this one.)
  p.device.tiers[0].capacity_bytes = 600;
  p.device.tiers[0].shared_by_ranks = 2;
  CHECK(over(Check(p)) == 0);
  // Shared by 3: 200 bytes per rank.
  p.device.tiers[0].shared_by_ranks = 3;
  CheckReport r3 = Check(p);
  CHECK(over(r3) == 1);
  CHECK(r3.tier_usage[1].capacity_bytes == 200);
}

TEST_CASE("tiers: each tier has its own copy streams in the simulator", "[tiers]") {
  // A to the host (d2h 2 B/ns: 200..300 ns), C to the remote tier (1 B/ns:
  // 400..500 ns): different streams. Prefetches at op 6 (600 ns): A from the
  // host at 1 B/ns 600..800, C from the remote tier 600..700 in parallel
  // (one shared stream would run C 800..900, still before op 9 at 900).
  Policy p = TierPolicy(1000, 1, 0, 1);
  CHECK(Check(p).clean());
  absl::StatusOr<SimulationResult> s = Simulate(Toy(), p, {.device = p.device});
  REQUIRE(s.ok());
  REQUIRE(s->tiers.size() == 2);
  CHECK(s->tiers[0].name == "host");
  CHECK(s->tiers[0].bytes_stored == 200);
  CHECK(s->tiers[0].bytes_loaded == 200);
  CHECK(s->tiers[1].name == "remote");
  CHECK(s->tiers[1].bytes_stored == 100);
  CHECK(s->tiers[1].store_busy_ns == 100);
  CHECK(s->tiers[1].load_busy_ns == 100);
  CHECK(s->tiers[1].peak_bytes == 100);
  CHECK(s->bytes_d2h == 300);  // summed over the tiers
  CHECK(s->iteration_time_ns == 1300);
}

TEST_CASE("tiers: policies name the tier of every move; v1 and unknown tiers refused",
          "[tiers]") {
  Policy p = TierPolicy(1000, 1, 0, 1);
  // JSON and binary keep the tier; tier 0 (the host) is not written.
  const std::string json = PolicyToJson(p);
  CHECK(json.find("\"tier\": 1") != std::string::npos);
  absl::StatusOr<Policy> back = ParsePolicyJson(json, "p.json");
  REQUIRE(back.ok());
  CHECK(back->items[0].tier == 0);
  CHECK(back->items[1].tier == 1);
  absl::StatusOr<Policy> bin = ParsePolicyBinary(PolicyToBinary(p), "p.pb");
  REQUIRE(bin.ok());
  CHECK(bin->items[1].tier == 1);
  // A tier the device model does not have.
  p.items[1].tier = 2;
  CHECK(p.Validate().message() ==
        "policy item 1 (tensor 12): tier 2 is not a tier of the device model (2 tiers: the host and 1 "
        "more)");
  // A tier on a RECOMPUTE item.
  p.items[1].tier = 1;
  p.items[1].action = ItemAction::kRecompute;
  CHECK(p.Validate().message() ==
        "policy item 1 (tensor 12): a tier is only allowed on SWAP items");
}

}  // namespace
}  // namespace swapplan
