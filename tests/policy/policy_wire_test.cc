// The protobuf-free policy decoder (policy/policy_wire.h) against the
// protobuf one (ParsePolicyBinary): random policies, the schema v2 fields,
// damaged bytes. Seeds are printed on failure.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "policy.pb.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/policy_wire.h"

namespace swapplan {
namespace {

// Everything but format_version (checked against the bytes below).
void Same(const Policy& a, const Policy& b) {
  CHECK(a.fingerprint == b.fingerprint);
  CHECK(a.fingerprint.iteration == b.fingerprint.iteration);
  CHECK(a.device == b.device);
  CHECK(a.runtime.op_names == b.runtime.op_names);
  CHECK(a.runtime.op_ranks == b.runtime.op_ranks);
  CHECK(a.runtime.mask_bits == b.runtime.mask_bits);
  CHECK(a.runtime.op_sequence == b.runtime.op_sequence);
  CHECK(a.runtime.items == b.runtime.items);
  CHECK(a.device_budget_bytes == b.device_budget_bytes);
  CHECK(a.h2d_bandwidth_bytes_per_s == b.h2d_bandwidth_bytes_per_s);
  CHECK(a.d2h_bandwidth_bytes_per_s == b.d2h_bandwidth_bytes_per_s);
  CHECK(a.planner == b.planner);
  CHECK(a.parameters == b.parameters);
  CHECK(a.expected_peak_bytes == b.expected_peak_bytes);
  CHECK(a.expected_overhead_ns == b.expected_overhead_ns);
  CHECK(a.simulated_iteration_time_ns == b.simulated_iteration_time_ns);
  CHECK(a.schedule == b.schedule);
  CHECK(a.pool == b.pool);
  REQUIRE(a.items.size() == b.items.size());
  for (size_t k = 0; k < a.items.size(); ++k) {
    const PolicyItem& x = a.items[k];
    const PolicyItem& y = b.items[k];
    CHECK(x.tensor_id == y.tensor_id);
    CHECK(x.runtime_key.FeaturesEqual(y.runtime_key));
    CHECK(x.runtime_key.size_bytes == y.runtime_key.size_bytes);
    CHECK(x.runtime_key.shape == y.runtime_key.shape);
    CHECK(x.runtime_key.mask_bits == y.runtime_key.mask_bits);
    CHECK(x.swap_out_op == y.swap_out_op);
    CHECK(x.release_op == y.release_op);
    CHECK(x.swap_in_op == y.swap_in_op);
    CHECK(x.first_use_op == y.first_use_op);
    CHECK(x.size_bytes == y.size_bytes);
    CHECK(x.action == y.action);
    CHECK(x.recompute_ns == y.recompute_ns);
    CHECK(x.release_waits_for_copy == y.release_waits_for_copy);
    CHECK(x.wraps == y.wraps);
    CHECK(x.clean == y.clean);
  }
}

Policy RandomPolicy(std::mt19937_64& rng) {
  auto n = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Policy p;
  p.fingerprint = {.op_sequence_hash = rng(), .iteration_ops = static_cast<int32_t>(n(10, 500)),
                   .iteration = static_cast<int32_t>(n(0, 3))};
  p.device_budget_bytes = n(0, int64_t{1} << 40);
  p.h2d_bandwidth_bytes_per_s = static_cast<double>(n(1, 100)) * 1e9;
  p.d2h_bandwidth_bytes_per_s = static_cast<double>(n(1, 100)) * 0.5e9;
  p.planner = n(0, 1) ? "chameleon" : "vdnn";
  for (int i = n(0, 3); i > 0; --i) p.parameters.emplace_back("k" + std::to_string(i), "v\xc3\xa9");
  p.expected_peak_bytes = n(0, 1 << 30);
  p.expected_overhead_ns = n(0, 1000);
  p.simulated_iteration_time_ns = n(0, 1'000'000);
  const int32_t ops = p.fingerprint.iteration_ops;
  for (int i = n(0, 20); i > 0; --i) {
    PolicyItem it;
    it.tensor_id = static_cast<uint64_t>(n(0, 1'000'000));
    it.swap_out_op = static_cast<int32_t>(n(0, ops - 4));
    it.release_op = static_cast<int32_t>(n(it.swap_out_op, ops - 3));
    it.swap_in_op = static_cast<int32_t>(n(it.release_op + 1, ops - 2));
    it.first_use_op = static_cast<int32_t>(n(it.swap_in_op, ops - 1));
    it.size_bytes = n(1, 1 << 30);
    it.runtime_key = {.op_count = static_cast<uint32_t>(n(0, 9)), .op_mask = rng(),
                      .op_history = rng(), .dtype = static_cast<DType>(n(0, kNumDTypes - 1)),
                      .size_bytes = it.size_bytes, .shape = {n(1, 9), -n(0, 3)},
                      .mask_bits = n(0, 1) ? 32u : 64u};
    it.action = n(0, 5) == 0 ? ItemAction::kRecompute : ItemAction::kSwap;
    if (it.action == ItemAction::kRecompute) it.recompute_ns = n(1, 1000);
    it.release_waits_for_copy = it.action == ItemAction::kSwap && n(0, 1);
    p.items.push_back(it);
  }
  return p;
}

TEST_CASE("policy wire decoder: the same policy as protobuf's, on random policies") {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    const Policy p = RandomPolicy(rng);
    REQUIRE(p.Validate().ok());
    const std::string bytes = PolicyToBinary(p);
    absl::StatusOr<Policy> a = ParsePolicyBinary(bytes, "x.pb");
    absl::StatusOr<Policy> b = ParsePolicyWire(bytes, "x.pb");
    REQUIRE(a.ok());
    INFO(b.status().message());
    REQUIRE(b.ok());
    Same(*a, *b);
    proto::Policy msg;
    REQUIRE(msg.ParseFromString(bytes));
    CHECK(b->format_version == static_cast<int32_t>(msg.format_version()));
  }
}

TEST_CASE("policy wire decoder: the schema v2 sections (device model, runtime)") {
  std::mt19937_64 rng(7);
  proto::Policy msg;
  REQUIRE(msg.ParseFromString(PolicyToBinary(RandomPolicy(rng))));
  msg.set_format_version(2);
  proto::DeviceModel* d = msg.mutable_device();
  d->set_name("a100");
  d->set_capacity_bytes(int64_t{80} << 30);
  d->set_reserve_bytes(int64_t{2} << 30);
  d->set_h2d_bandwidth_bytes_per_s(25e9);
  d->set_d2h_bandwidth_bytes_per_s(24e9);
  d->set_copy_latency_ns(5000);
  d->set_copy_engines(1);
  d->set_compute_time_scale(0.5);
  proto::MemoryTier* tier = d->add_tiers();
  tier->set_name("remote");
  tier->set_capacity_bytes(1 << 30);
  tier->set_store_bandwidth_bytes_per_s(1e9);
  tier->set_load_bandwidth_bytes_per_s(2e9);
  tier->set_latency_ns(100);
  tier->set_shared_by_ranks(8);
  proto::PolicyRuntime* rt = msg.mutable_runtime();
  rt->add_op_names("aten::mm");
  rt->add_op_names("aten::add");
  rt->add_op_ranks(1);
  rt->add_op_ranks(-1);  // sint32, zigzag
  rt->set_mask_bits(64);
  rt->add_op_sequence((1u << 2) | 1u);
  proto::RuntimeItem* item = rt->add_items();
  item->mutable_decision()->set_phase(proto::PHASE_BACKWARD);
  item->mutable_decision()->set_phase_ordinal(3);
  item->mutable_decision()->set_ordinal(9);
  item->set_use_index(2);
  item->set_shape_hash(0xdeadbeefcafef00dULL);
  item->mutable_swap_in()->set_phase(proto::PHASE_OPTIMIZER);
  absl::StatusOr<Policy> p = ParsePolicyWire(msg.SerializeAsString(), "v2.pb");
  INFO(p.status().message());
  REQUIRE(p.ok());
  CHECK(p->format_version == 2);
  CHECK(p->device.name == "a100");
  CHECK(p->device.capacity_bytes == int64_t{80} << 30);
  CHECK(p->device.reserve_bytes == int64_t{2} << 30);
  CHECK(p->device.d2h_bandwidth_bytes_per_s == 24e9);
  CHECK(p->device.copy_latency_ns == 5000);
  CHECK(p->device.copy_engines == 1);
  CHECK(p->device.compute_time_scale == 0.5);
  REQUIRE(p->device.tiers.size() == 1);
  CHECK(p->device.tiers[0].name == "remote");
  CHECK(p->device.tiers[0].shared_by_ranks == 8);
  CHECK(p->device.tiers[0].latency_ns == 100);
  CHECK(p->runtime.op_names == std::vector<std::string>{"aten::mm", "aten::add"});
  CHECK(p->runtime.op_ranks == std::vector<int32_t>{1, -1});
  CHECK(p->runtime.mask_bits == 64);
  CHECK(p->runtime.op_sequence == std::vector<uint32_t>{5});
  REQUIRE(p->runtime.items.size() == 1);
  const RuntimeItem& ri = p->runtime.items[0];
  CHECK(ri.decision == OpAnchor{Phase::kBackward, 3, 9});
  CHECK(ri.use_index == 2);
  CHECK(ri.shape_hash == 0xdeadbeefcafef00dULL);
  CHECK(ri.swap_in.phase == Phase::kOptimizer);
  // Not written (all defaults): protobuf's FORWARD / 0, not the struct's.
  CHECK(ri.release == OpAnchor{Phase::kForward, 0, 0});
  CHECK(ri.first_use == OpAnchor{Phase::kForward, 0, 0});
}

TEST_CASE("policy wire decoder: damaged bytes fail where protobuf's fail, never crash") {
  std::mt19937_64 rng(11);
  int agreed = 0;
  for (int round = 0; round < 300; ++round) {
    INFO("round " << round);
    std::string bytes = PolicyToBinary(RandomPolicy(rng));
    if (round % 2 == 0) {
      bytes.resize(std::uniform_int_distribution<size_t>(0, bytes.size())(rng));
    } else {
      const size_t at = std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng);
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
    }
    absl::StatusOr<Policy> a = ParsePolicyBinary(bytes, "d.pb");
    absl::StatusOr<Policy> b = ParsePolicyWire(bytes, "d.pb");
    INFO(a.status().message() << " / " << b.status().message());
    CHECK(a.ok() == b.ok());
    if (a.ok() && b.ok()) Same(*a, *b);
    agreed += a.ok() == b.ok();
  }
  CHECK(agreed == 300);
  absl::StatusOr<Policy> junk = ParsePolicyWire(std::string("\x0a\xff", 2), "junk.pb");
  CHECK(absl::IsInvalidArgument(junk.status()));
  CHECK(junk.status().message().find("junk.pb: not a binary swapplan policy") != std::string::npos);
}

}  // namespace
}  // namespace swapplan
