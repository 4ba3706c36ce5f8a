// Policy schema v2: the runtime section built from a trace (worked by hand),
// round trips of the device model and the runtime section, the v1 -> v2
// conversion, strict JSON errors naming the path, runtime-section
// validation, and matching from the policy alone.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/varying/matcher.h"

namespace swapplan {
namespace {

// Six ops, one iteration: forward linear (0) relu (1) loss (2), backward
// relu_bw (3) linear_bw (4), optimizer sgd (5). X (tensor 1) is made by
// linear, read by relu and relu_bw.
const char* kSixOps = R"({"format": "swapplan-trace",
  "metadata": {"h2d_bandwidth_bytes_per_s": 1e9, "d2h_bandwidth_bytes_per_s": 1e9},
  "tensors": [{"id": 0, "size_bytes": 100, "kind": "PARAMETER"},
    {"id": 1, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [5, 5]},
    {"id": 2, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]}],
  "iterations": [{"wall_time_ns": 600, "ops": [
     {"name": "linear", "phase": "FORWARD", "inputs": [0], "outputs": [1], "duration_ns": 100},
     {"name": "relu", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 100},
     {"name": "loss", "phase": "FORWARD", "inputs": [2], "duration_ns": 100},
     {"name": "relu_bw", "phase": "BACKWARD", "inputs": [2, 1], "duration_ns": 100},
     {"name": "linear_bw", "phase": "BACKWARD", "inputs": [1, 0], "duration_ns": 100},
     {"name": "sgd", "phase": "OPTIMIZER", "inputs": [0], "duration_ns": 100}]}]})";

// X out after relu (1), released there, back at loss (2) for relu_bw (3).
Policy XPolicy(const Trace& t) {
  Policy p;
  p.fingerprint = ComputeFingerprint(t, 0);
  p.device.capacity_bytes = 1000;
  p.device.reserve_bytes = 100;
  p.device.h2d_bandwidth_bytes_per_s = 1e9;
  p.device.d2h_bandwidth_bytes_per_s = 2e9;
  p.planner = "test";
  PolicyItem x;
  x.tensor_id = 1;
  x.swap_out_op = 1;
  x.release_op = 1;
  x.swap_in_op = 2;
  x.first_use_op = 3;
  x.size_bytes = 100;
  p.items.push_back(x);
  return p;
}

TEST_CASE("the runtime section of a policy, worked by hand", "[policy][v2]") {
  Trace t = testing::TraceFromJson(kSixOps);
  Policy p = XPolicy(t);
  REQUIRE(AttachPolicyRuntime(t, 0, &p).ok());
  const PolicyRuntime& rt = p.runtime;
  // Names in first-occurrence order; each occurs once, so ranks go by name
  // (byte order): linear 0, linear_bw 1, loss 2, relu 3, relu_bw 4, sgd 5.
  CHECK(rt.op_names ==
        std::vector<std::string>{"linear", "relu", "loss", "relu_bw", "linear_bw", "sgd"});
  CHECK(rt.op_ranks == std::vector<int32_t>{0, 3, 2, 4, 1, 5});
  CHECK(rt.mask_bits == 32);
  // (name index << 2) | phase: F = 0, B = 1, O = 2.
  CHECK(rt.op_sequence == std::vector<uint32_t>{0, 4, 8, 13, 17, 22});
  CHECK(RuntimeFingerprint(rt) == p.fingerprint.op_sequence_hash);
  REQUIRE(rt.items.size() == 1);
  const RuntimeItem& r = rt.items[0];
  // Decision: X's last use at or before swap_out_op 1 is relu (forward op 1),
  // where X is input 0.
  CHECK(r.decision == OpAnchor{Phase::kForward, 1, 1});
  CHECK(r.use_index == 0);
  const int64_t shape[] = {5, 5};
  CHECK(r.shape_hash == ShapeHash(shape));
  CHECK(r.release == OpAnchor{Phase::kForward, 1, 1});
  CHECK(r.swap_in == OpAnchor{Phase::kForward, 2, 2});
  CHECK(r.first_use == OpAnchor{Phase::kBackward, 0, 3});
  // The key at the decision op: used by linear (rank 0) and relu (rank 3):
  // count 2, mask bits 0 and 3 = 0x9, history (0 << 8) | 3 = 0x0003.
  const RuntimeKey& k = p.items[0].runtime_key;
  CHECK(k.op_count == 2);
  CHECK(k.op_mask == 0x9);
  CHECK(k.op_history == 0x0003);
  CHECK(k.dtype == DType::kFloat32);
  CHECK(k.size_bytes == 100);
  CHECK(k.shape == std::vector<int64_t>{5, 5});
  CHECK(p.Validate().ok());
  // BuildPolicyRuntime gives the same section without touching the policy.
  absl::StatusOr<PolicyRuntime> built = BuildPolicyRuntime(t, 0, XPolicy(t), 64);
  REQUIRE(built.ok());
  CHECK(built->mask_bits == 64);
  CHECK(built->op_sequence == rt.op_sequence);
  CHECK(built->items == rt.items);
}

TEST_CASE("the device model and the runtime section round trip", "[policy][v2]") {
  Trace t = testing::TraceFromJson(kSixOps);
  Policy p = XPolicy(t);
  p.device.name = "h100-like";
  p.device.copy_latency_ns = 5;
  p.device.copy_engines = 1;
  p.device.compute_time_scale = 0.5;
  p.device.peak_flops_per_s = 1e15;
  MemoryTier remote;
  remote.name = "remote";
  remote.capacity_bytes = 1 << 20;
  remote.store_bandwidth_bytes_per_s = 1e8;
  remote.load_bandwidth_bytes_per_s = 2e8;
  remote.latency_ns = 1000;
  remote.shared_by_ranks = 8;
  p.device.tiers.push_back(remote);
  REQUIRE(AttachPolicyRuntime(t, 0, &p).ok());
  for (const absl::StatusOr<Policy>& back :
       {ParsePolicyJson(PolicyToJson(p), "p.json"), ParsePolicyBinary(PolicyToBinary(p), "p.pb")}) {
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    CHECK(back->format_version == 2);
    CHECK(back->device == p.device);
    CHECK(back->runtime.op_names == p.runtime.op_names);
    CHECK(back->runtime.op_ranks == p.runtime.op_ranks);
    CHECK(back->runtime.op_sequence == p.runtime.op_sequence);
    CHECK(back->runtime.items == p.runtime.items);
    // The v1 fields repeat the model: budget = capacity - reserve.
    CHECK(back->BudgetBytes() == 900);
  }
  const std::string json = PolicyToJson(p);
  CHECK(json.find("\"format_version\": 2") != std::string::npos);
  CHECK(json.find("\"device_budget_bytes\": 900") != std::string::npos);
  CHECK(json.find("\"phase\": \"BACKWARD\"") != std::string::npos);
}

TEST_CASE("v1 policies are converted on read", "[policy][v2]") {
  absl::StatusOr<Policy> p = ParsePolicyJson(R"({"format": "swapplan-policy",
      "format_version": 1, "fingerprint": {"op_sequence_hash": "0x1", "iteration_ops": 4},
      "device_budget_bytes": 800, "h2d_bandwidth_bytes_per_s": 1e9,
      "d2h_bandwidth_bytes_per_s": 2e9, "planner": "old", "items": []})",
                                             "v1.json");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CHECK(p->format_version == 1);
  // The device model is what v1 recorded: the budget as the capacity.
  CHECK(p->device.capacity_bytes == 800);
  CHECK(p->device.reserve_bytes == 0);
  CHECK(p->device.h2d_bandwidth_bytes_per_s == 1e9);
  CHECK(p->device.d2h_bandwidth_bytes_per_s == 2e9);
  CHECK(p->device.copy_engines == 2);
  CHECK(p->runtime.empty());
  // Written back, it is v2.
  CHECK(PolicyToJson(*p).find("\"format_version\": 2") != std::string::npos);
  // A v1 file with a v2 section is malformed.
  absl::StatusOr<Policy> mixed = ParsePolicyJson(
      R"({"format": "swapplan-policy", "format_version": 1, "device": {"capacity_bytes": 1}})",
      "m.json");
  CHECK(mixed.status().message() ==
        "m.json: a format_version 1 policy has a v2 section (device or runtime) [policy-schema]");
  CHECK(KindOf(mixed.status()) == ErrorKind::kMalformedInput);
  absl::StatusOr<Policy> nodev =
      ParsePolicyJson(R"({"format": "swapplan-policy", "format_version": 2})", "n.json");
  CHECK(nodev.status().message() ==
        "n.json: a format_version 2 policy needs a device [policy-schema]");
  absl::StatusOr<Policy> v3 =
      ParsePolicyJson(R"({"format": "swapplan-policy", "format_version": 3})", "v3.json");
  CHECK(v3.status().message() ==
        "v3.json: policy format version 3 is not supported (this swapplan reads 1 and 2) "
        "[policy-schema]");
}

TEST_CASE("strict JSON: unknown keys, wrong types and ranges name the path", "[policy][v2]") {
  auto message = [](const std::string& body) {
    return std::string(
        ParsePolicyJson(R"({"format": "swapplan-policy", "format_version": 2, )" + body + "}",
                        "s.json")
            .status()
            .message());
  };
  CHECK(message(R"("device": {"capacity_bytes": 1, "colour": "red"})") ==
        "s.json: JSON $.device.colour: unknown field [unknown-field]");
  CHECK(message(R"("device": {"copy_engines": 3})") ==
        "s.json: JSON $.device.copy_engines: 3 is out of range (at most 2) [policy-schema]");
  CHECK(message(R"("device": {"h2d_bandwidth_bytes_per_s": "fast"})") ==
        "s.json: JSON $.device.h2d_bandwidth_bytes_per_s: expected a finite number, got string [policy-schema]");
  CHECK(message(R"("items": [{"swap_in_op": 4294967296}])") ==
        "s.json: JSON $.items[0].swap_in_op: 4294967296 is out of range (at most 2147483647) [policy-schema]");
  CHECK(message(R"("fingerprint": {"iteration": 1, "ops": 3})") ==
        "s.json: JSON $.fingerprint.ops: unknown field [unknown-field]");
  CHECK(message(R"("parameters": [{"name": "a", "value": "b", "extra": 1}])") ==
        "s.json: JSON $.parameters[0]: expected {\"name\": ..., \"value\": ...} [policy-schema]");
  CHECK(message(R"("runtime": {"items": [{"decision": {"phase": "SIDEWAYS"}}]})") ==
        "s.json: JSON $.runtime.items[0].decision.phase: unknown phase 'SIDEWAYS' [policy-schema]");
  CHECK(message(R"("runtime": {"op_ranks": [0, -2]})") ==
        "s.json: JSON $.runtime.op_ranks[1]: -2 is out of range (a rank, or -1) [policy-schema]");
  CHECK(message(R"("expected_peak_bytes": 9223372036854775808)") ==
        "s.json: JSON $.expected_peak_bytes: out of the range of a 64-bit integer [policy-schema]");
  // Semantic checks of the device model name the field.
  CHECK(message(R"("device": {"capacity_bytes": 100, "reserve_bytes": 100,
                              "h2d_bandwidth_bytes_per_s": 1, "d2h_bandwidth_bytes_per_s": 1})") ==
        "s.json: policy: device model \"\": reserve_bytes must be below capacity_bytes "
        "[bad-device]");
}

TEST_CASE("a runtime section must belong to its policy", "[policy][v2]") {
  Trace t = testing::TraceFromJson(kSixOps);
  Policy p = XPolicy(t);
  REQUIRE(AttachPolicyRuntime(t, 0, &p).ok());
  Policy bad = p;
  std::swap(bad.runtime.op_sequence[0], bad.runtime.op_sequence[1]);  // relu before linear
  CHECK(bad.Validate().message() ==
        "policy runtime.op_sequence: does not hash to the policy's fingerprint op_sequence_hash "
        "(the runtime section belongs to another op sequence)");
  bad = p;
  bad.runtime.items[0].swap_in.ordinal = 3;
  CHECK(bad.Validate().message() ==
        "policy runtime.items[0].swap_in: ordinal 3 is not the item's op 2");
  bad = p;
  bad.runtime.items[0].decision.phase_ordinal = 0;
  CHECK(bad.Validate().message() ==
        "policy runtime.items[0].decision: op 1 is FORWARD op 1 of its phase; the anchor says "
        "FORWARD op 0");
  bad = p;
  bad.runtime.op_ranks[1] = 0;  // rank 0 twice
  CHECK(bad.Validate().message() ==
        "policy runtime.op_ranks[1]: rank 0 is out of range or repeated (6 names)");
  bad = p;
  bad.runtime.items.clear();
  CHECK(bad.Validate().message() == "policy runtime.items: has 0 entries; the policy has 1 items");
  // Reading applies the same checks.
  CHECK(ParsePolicyBinary(PolicyToBinary(bad), "b.pb").status().message() ==
        "b.pb: policy runtime.items: has 0 entries; the policy has 1 items [bad-policy]");
}

TEST_CASE("matching from the policy alone equals matching with the trace", "[policy][v2]") {
  Trace t = testing::TraceFromJson(kSixOps);
  Policy p = XPolicy(t);
  REQUIRE(AttachPolicyRuntime(t, 0, &p).ok());
  // A v1 policy (no runtime section) cannot be matched without the trace.
  absl::StatusOr<MatchablePolicy> none = MakeMatchablePolicy(XPolicy(t));
  CHECK(KindOf(none.status()) == ErrorKind::kMalformedInput);
  CHECK_THAT(std::string(none.status().message()), Catch::Contains("policy upgrade"));

  absl::StatusOr<MatchablePolicy> alone = MakeMatchablePolicy(p);
  absl::StatusOr<MatchablePolicy> traced = MakeMatchablePolicy(t, 0, XPolicy(t));
  REQUIRE(alone.ok());
  REQUIRE(traced.ok());
  REQUIRE(alone->items.size() == 1);
  const MatchableItem& a = alone->items[0];
  const MatchableItem& b = traced->items[0];
  CHECK(a.decision == b.decision);
  CHECK(a.use_index == b.use_index);
  CHECK(a.key.op_count == b.key.op_count);
  CHECK(a.key.op_mask == b.key.op_mask);
  CHECK(a.key.op_history == b.key.op_history);
  CHECK(a.shape_hash == b.shape_hash);
  CHECK(a.first_use == b.first_use);
  CHECK(alone->source_ops == 6);
  // Tokens: indices into the policy's table (relu is entry 1, rank 3) ...
  CHECK(alone->codes[1].one_hot == (1u << 3));
  CHECK(alone->codes[1].rank_byte == 3);
  // ... after BindOpNames, the caller's NameIds; unknown names code as
  // "not ranked".
  const std::vector<std::string> names = {"sgd", "gelu", "relu"};
  BindOpNames(names, &*alone);
  REQUIRE(alone->codes.size() == 3);
  CHECK(alone->codes[0].rank_byte == 5);
  CHECK(alone->codes[1].rank_byte == 255);
  CHECK(alone->codes[1].one_hot == 0);
  CHECK(alone->codes[2].one_hot == (1u << 3));

  // The runtime shim's loop, tokens from the policy's own table: the fuzzy
  // matcher finds X (slot 1) after relu, the op 1.
  absl::StatusOr<MatchablePolicy> shim = MakeMatchablePolicy(p);
  REQUIRE(shim.ok());
  absl::StatusOr<std::unique_ptr<TensorMatcher>> m =
      CreateMatcher(MatcherKind::kFuzzy, *shim, {});
  REQUIRE(m.ok());
  RuntimeTensorTable table;
  table.Reset(3);
  for (TensorId s = 0; s < 3; ++s) {
    table.Describe(s, t.tensor(s).dtype, t.tensor(s).size_bytes, ShapeHash(t.shape(s)));
  }
  (*m)->BeginIteration();
  std::vector<MatchDecision> out;
  const std::vector<std::vector<int32_t>> slots = {{0, 1}, {1, 2}, {2}, {2, 1}, {1, 0}, {0}};
  for (int32_t op = 0; op < 6; ++op) {
    const uint32_t e = shim->policy.runtime.op_sequence[op];
    (*m)->OnOp(OpSequenceName(e), OpSequencePhase(e), slots[op], table, &out);
    if (op == 0) CHECK(out.empty());
    if (op == 1) CHECK(out.size() == 1);
  }
  REQUIRE(out.size() == 1);
  CHECK(out[0].item == 0);
  CHECK(out[0].slot == 1);
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

TEST_CASE("the streaming fingerprint: the worked example of docs/policy-format.md",
          "[policy][v2]") {
  CHECK(NameHash("linear") == 0xac3191c5ecc66e60ULL);
  CHECK(NameHash("relu") == 0x4d0b5e1fbffd04f3ULL);
  CHECK(NameHash("relu_bw") == 0x320694142f82b51fULL);
  FingerprintState fp;
  fp.AddOp(NameHash("linear"), Phase::kForward);
  CHECK(fp.value() == 0x93d2809b73fb25e2ULL);
  fp.AddOp(NameHash("relu"), Phase::kForward);
  CHECK(fp.value() == 0x82b1ea3afba3a454ULL);
  fp.AddOp(NameHash("relu_bw"), Phase::kBackward);
  CHECK(fp.value() == 0x4bef3db81e4a1a98ULL);
  CHECK(fp.ops() == 3);
  Trace t = testing::TraceFromJson(R"({"iterations": [{"ops": [
      {"name": "linear", "phase": "FORWARD"}, {"name": "relu", "phase": "FORWARD"},
      {"name": "relu_bw", "phase": "BACKWARD"}]}]})");
  CHECK(ComputeFingerprint(t, 0).op_sequence_hash == 0x4bef3db81e4a1a98ULL);
  CHECK(ComputeFingerprint(t, 0).iteration_ops == 3);
}

}  // namespace
}  // namespace swapplan
