// The protobuf-free policy decoder (policy/policy_wire.h) against the
// protobuf one (ParsePolicyBinary): random policies, the schema v2 fields,
// damaged bytes. Seeds are printed on failure.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "policy.pb.h"
#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/policy_runtime.h"
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
  CHECK(a.BudgetBytes() == b.BudgetBytes());
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
  p.device.capacity_bytes = n(1, int64_t{1} << 40);
  p.device.h2d_bandwidth_bytes_per_s = static_cast<double>(n(1, 100)) * 1e9;
  p.device.d2h_bandwidth_bytes_per_s = static_cast<double>(n(1, 100)) * 0.5e9;
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
  // A policy planned for a real trace: its runtime section built from it.
  const Trace trace = testing::TraceFromJson(R"({"format": "swapplan-trace", "format_version": 1,
    "tensors": [{"id": 1, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]},
                {"id": 2, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]}],
    "iterations": [{"wall_time_ns": 400, "ops": [
      {"name": "fwd", "phase": "FORWARD", "outputs": [1]},
      {"name": "fwd", "phase": "FORWARD", "inputs": [1], "outputs": [2]},
      {"name": "bwd", "phase": "BACKWARD", "inputs": [2]},
      {"name": "bwd", "phase": "BACKWARD", "inputs": [1]}]}]})");
  Policy p;
  p.device.name = "a100";
  p.device.capacity_bytes = 1000;
  p.device.reserve_bytes = 100;
  p.device.h2d_bandwidth_bytes_per_s = 25e9;
  p.device.d2h_bandwidth_bytes_per_s = 24e9;
  p.device.copy_latency_ns = 5000;
  p.device.copy_engines = 1;
  p.device.compute_time_scale = 0.5;
  p.device.tiers.push_back({.name = "remote", .capacity_bytes = 1 << 30,
                            .store_bandwidth_bytes_per_s = 1e9,
                            .load_bandwidth_bytes_per_s = 2e9, .latency_ns = 100,
                            .shared_by_ranks = 8});
  p.planner = "test";
  p.fingerprint = ComputeFingerprint(trace, 0);
  PolicyItem it;
  it.tensor_id = 1;
  it.swap_out_op = 1;
  it.release_op = 1;
  it.swap_in_op = 2;
  it.first_use_op = 3;
  it.size_bytes = 100;
  p.items.push_back(it);
  REQUIRE(AttachPolicyRuntime(trace, 0, &p).ok());
  const std::string bytes = PolicyToBinary(p);
  absl::StatusOr<Policy> a = ParsePolicyBinary(bytes, "v2.pb");
  absl::StatusOr<Policy> b = ParsePolicyWire(bytes, "v2.pb");
  INFO(a.status().message() << " / " << b.status().message());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  Same(*a, *b);
  CHECK(b->format_version == 2);
  CHECK(b->device.tiers.size() == 1);
  CHECK(b->runtime.op_names == std::vector<std::string>{"fwd", "bwd"});
  REQUIRE(b->runtime.items.size() == 1);
  // The decision op (FORWARD, phase position 1) and the release anchor
  // (FORWARD 1): FORWARD is protobuf's default, not written, read back.
  CHECK(b->runtime.items[0].decision == OpAnchor{Phase::kForward, 1, 1});
  CHECK(b->runtime.items[0].swap_in == OpAnchor{Phase::kBackward, 0, 2});
  // And the v1 form (no device section) converts the same way.
  proto::Policy msg;
  REQUIRE(msg.ParseFromString(bytes));
  msg.set_format_version(1);
  msg.clear_device();
  msg.clear_runtime();
  const std::string v1 = msg.SerializeAsString();
  a = ParsePolicyBinary(v1, "v1.pb");
  b = ParsePolicyWire(v1, "v1.pb");
  INFO(a.status().message() << " / " << b.status().message());
  REQUIRE(a.ok() == b.ok());
  if (a.ok()) Same(*a, *b);
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
