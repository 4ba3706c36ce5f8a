// Policy model, JSON/binary round trips and trace fingerprints.
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>

#include "support/cli_runner.h"
#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

Policy SamplePolicy() {
  Policy p;
  p.fingerprint = {.op_sequence_hash = 0xfedcba9876543210ULL, .iteration_ops = 40, .iteration = 0};
  p.device.capacity_bytes = 1000;
  p.device.h2d_bandwidth_bytes_per_s = 1e9;
  p.device.d2h_bandwidth_bytes_per_s = 2e9;
  p.planner = "chameleon";
  p.parameters = {{"score_c", "1"}, {"layers", "4"}};
  p.expected_peak_bytes = 990;
  p.expected_overhead_ns = 5;
  PolicyItem it;
  it.tensor_id = 42;
  it.runtime_key = {.op_count = 2, .op_mask = 0x5, .op_history = 0x0300, .dtype = DType::kBFloat16,
                    .size_bytes = 100, .shape = {10, 5}, .mask_bits = 32};
  it.swap_out_op = 10;
  it.release_op = 12;
  it.swap_in_op = 30;
  it.first_use_op = 33;
  it.size_bytes = 100;
  p.items.push_back(it);
  return p;
}

void RequireSame(const Policy& a, const Policy& b) {
  CHECK(a.fingerprint.op_sequence_hash == b.fingerprint.op_sequence_hash);
  CHECK(a.fingerprint.iteration_ops == b.fingerprint.iteration_ops);
  CHECK(a.fingerprint.iteration == b.fingerprint.iteration);
  CHECK(a.device == b.device);
  CHECK(a.planner == b.planner);
  CHECK(a.parameters == b.parameters);
  CHECK(a.expected_peak_bytes == b.expected_peak_bytes);
  CHECK(a.expected_overhead_ns == b.expected_overhead_ns);
  REQUIRE(a.items.size() == b.items.size());
  for (size_t i = 0; i < a.items.size(); ++i) {
    const PolicyItem& x = a.items[i];
    const PolicyItem& y = b.items[i];
    CHECK(x.tensor_id == y.tensor_id);
    CHECK(x.swap_out_op == y.swap_out_op);
    CHECK(x.release_op == y.release_op);
    CHECK(x.swap_in_op == y.swap_in_op);
    CHECK(x.first_use_op == y.first_use_op);
    CHECK(x.size_bytes == y.size_bytes);
    CHECK(x.release_waits_for_copy == y.release_waits_for_copy);
    CHECK(x.runtime_key.FeaturesEqual(y.runtime_key));
    CHECK(x.runtime_key.shape == y.runtime_key.shape);
    CHECK(x.runtime_key.size_bytes == y.runtime_key.size_bytes);
    CHECK(x.runtime_key.mask_bits == y.runtime_key.mask_bits);
  }
}

TEST_CASE("policy round trips through JSON and binary, in files too", "[policy]") {
  Policy p = SamplePolicy();
  absl::StatusOr<Policy> j = ParsePolicyJson(PolicyToJson(p), "p.json");
  INFO(j.status().ToString());
  REQUIRE(j.ok());
  RequireSame(p, *j);
  absl::StatusOr<Policy> b = ParsePolicyBinary(PolicyToBinary(p), "p.pb");
  REQUIRE(b.ok());
  RequireSame(p, *b);
  for (const char* name : {"p.pb", "p.json", "p.json.gz", "p.pb.gz"}) {
    std::string path = testing::TempDir() + "/" + name;
    REQUIRE(WritePolicy(p, path).ok());
    absl::StatusOr<Policy> r = ReadPolicy(path);
    INFO(name << ": " << r.status().ToString());
    REQUIRE(r.ok());
    RequireSame(p, *r);
  }
  // 64-bit values are hex strings in JSON.
  CHECK(PolicyToJson(p).find("\"op_sequence_hash\": \"0xfedcba9876543210\"") != std::string::npos);
}

TEST_CASE("policy validation names the item", "[policy]") {
  Policy p = SamplePolicy();
  p.items[0].release_op = 31;  // after swap_in_op 30
  absl::Status st = p.Validate();
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(st.message()) ==
        "policy item 0 (tensor 42): ops must satisfy swap_out_op <= release_op < swap_in_op <= "
        "first_use_op, got 10, 31, 30, 33");
  p = SamplePolicy();
  p.items[0].first_use_op = 40;
  p.items[0].swap_in_op = 39;
  CHECK(std::string(p.Validate().message()) ==
        "policy item 0 (tensor 42): first_use_op 40 is outside the iteration (40 ops)");
  // Reading a policy applies the same checks.
  absl::StatusOr<Policy> r = ParsePolicyJson(PolicyToJson(p), "bad.json");
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()) ==
        "bad.json: policy item 0 (tensor 42): first_use_op 40 is outside the iteration (40 ops) "
        "[bad-policy]");
  CHECK(RuleOf(r.status()) == "bad-policy");
}

TEST_CASE("policy JSON errors name the path", "[policy]") {
  absl::StatusOr<Policy> r = ParsePolicyJson(
      R"({"format": "swapplan-policy", "format_version": 1, "items": [{"tensor_id": -1}]})", "x");
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()) ==
        "x: JSON $.items[0].tensor_id: expected an unsigned integer, got number [policy-schema]");
  r = ParsePolicyJson(R"({"format": "swapplan-trace"})", "y");
  CHECK(std::string(r.status().message()) ==
        "y: not a swapplan policy (format is 'swapplan-trace') [policy-schema]");
  r = ParsePolicyJson(R"({"bogus": 1})", "z");
  CHECK(std::string(r.status().message()) == "z: JSON $.bogus: unknown field [unknown-field]");
}

// Issue 19: malformed policy text names the byte and a rule, on one line.
TEST_CASE("policy JSON syntax errors give the byte and a rule", "[policy][issue19]") {
  // {"format": ]  -- the value is missing: parsing stops at byte 12, the ']'.
  absl::StatusOr<Policy> r = ParsePolicyJson(R"({"format": ])", "p.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()),
             Catch::StartsWith("p.json: not valid JSON at byte 12 (") &&
                 Catch::EndsWith("[json-syntax]"));
  r = ParsePolicyJson(R"({"format": "swapplan-policy", "format_version": 1e400})", "p.json");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("number overflow parsing '1e400'") &&
                 Catch::EndsWith("[json-number]"));
}

// Issue 19: an unknown key with a newline (JSON "\n") is quoted escaped.
TEST_CASE("policy JSON: a key with a control character is quoted on one line",
          "[policy][issue19]") {
  absl::StatusOr<Policy> r = ParsePolicyJson(R"({"a\nb": 1})", "k.json");
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()) == "k.json: JSON $.a\\nb: unknown field [unknown-field]");
}

// Issue 19 (fuzz finding policy_binary_newline_in_format.policy): the format
// string of a binary policy is quoted escaped, so the message is one line.
TEST_CASE("binary policy with a control character in its format: one line", "[policy][issue19]") {
  const std::string bytes = testing::ReadFile(std::string(SWAPPLAN_TEST_DATA_DIR) +
                                              "/fuzz_findings/policy_binary_newline_in_format.policy");
  absl::StatusOr<Policy> r = ParsePolicyBinary(bytes, "f.policy");
  REQUIRE_FALSE(r.ok());
  const std::string m(r.status().message());
  CHECK_THAT(m, Catch::StartsWith("f.policy: not a swapplan policy (format is '"));
  CHECK(m.find('\n') == std::string::npos);
}

TEST_CASE("fingerprints follow the op sequence", "[policy]") {
  absl::StatusOr<Trace> t = ReadTrace(testing::DataPath("traces/toy_valid.json"));
  REQUIRE(t.ok());
  PolicyFingerprint fp = ComputeFingerprint(*t, 0);
  CHECK(fp.iteration_ops == 5);
  // Same ops, different tensor sizes and ids: same fingerprint.
  Trace same = testing::TraceFromJson(R"({"tensors": [{"id": 9, "size_bytes": 1, "kind": "INPUT"}],
    "iterations": [{"ops": [
      {"name": "aten::linear", "phase": "FORWARD", "inputs": [9]},
      {"name": "aten::relu", "phase": "FORWARD"},
      {"name": "loss_backward", "phase": "BACKWARD"},
      {"name": "linear_backward", "phase": "BACKWARD"},
      {"name": "sgd_step", "phase": "OPTIMIZER"}]}]})");
  CHECK(ComputeFingerprint(same, 0) == fp);
  // One op renamed: different.
  Trace other = testing::TraceFromJson(R"({"iterations": [{"ops": [
      {"name": "aten::linear", "phase": "FORWARD"},
      {"name": "aten::gelu", "phase": "FORWARD"},
      {"name": "loss_backward", "phase": "BACKWARD"},
      {"name": "linear_backward", "phase": "BACKWARD"},
      {"name": "sgd_step", "phase": "OPTIMIZER"}]}]})");
  CHECK_FALSE(ComputeFingerprint(other, 0) == fp);

  Policy p;
  p.fingerprint = fp;
  CHECK(CheckFingerprint(p, *t).ok());
  absl::Status st = CheckFingerprint(p, other);
  CHECK(st.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(st.message()),
             Catch::EndsWith("[fingerprint-mismatch]") && Catch::Contains("5 ops) does not match"));
}

TEST_CASE("RECOMPUTE items round trip; SWAP stays implicit in JSON", "[policy]") {
  Policy p = SamplePolicy();
  PolicyItem r = p.items[0];
  r.tensor_id = 43;
  r.action = ItemAction::kRecompute;
  r.recompute_ns = 1234;
  p.items.push_back(r);
  const std::string json = PolicyToJson(p);
  // One "action" key: the RECOMPUTE item's; the SWAP item has none.
  CHECK(json.find("\"action\": \"RECOMPUTE\"") != std::string::npos);
  CHECK(json.find("\"action\"") == json.rfind("\"action\""));
  for (const absl::StatusOr<Policy>& back :
       {ParsePolicyJson(json, "p.json"), ParsePolicyBinary(PolicyToBinary(p), "p.pb")}) {
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    RequireSame(p, *back);
    CHECK(back->items[0].action == ItemAction::kSwap);
    CHECK(back->items[0].recompute_ns == 0);
    CHECK(back->items[1].action == ItemAction::kRecompute);
    CHECK(back->items[1].recompute_ns == 1234);
  }
}

TEST_CASE("action and recompute_ns are validated", "[policy]") {
  Policy p = SamplePolicy();
  p.items[0].recompute_ns = 5;  // a SWAP item cannot carry recompute time
  CHECK(p.Validate().message() ==
        "policy item 0 (tensor 42): recompute_ns is 5; must be >= 0, and 0 for a SWAP item");
  p.items[0].action = ItemAction::kRecompute;
  CHECK(p.Validate().ok());
  p.items[0].recompute_ns = -1;
  CHECK(p.Validate().message() ==
        "policy item 0 (tensor 42): recompute_ns is -1; must be >= 0, and 0 for a SWAP item");
  absl::StatusOr<Policy> bad = ParsePolicyJson(
      R"({"format": "swapplan-policy", "format_version": 1, "items": [{"action": "DROP"}]})", "x");
  CHECK(bad.status().message() ==
        "x: JSON $.items[0].action: unknown action 'DROP' (expected SWAP or RECOMPUTE) [policy-schema]");
}

TEST_CASE("release_waits_for_copy round trips; false stays implicit in JSON", "[policy]") {
  Policy p = SamplePolicy();
  PolicyItem w = p.items[0];
  w.tensor_id = 44;
  w.release_waits_for_copy = true;
  p.items.push_back(w);
  const std::string json = PolicyToJson(p);
  CHECK(json.find("\"release_waits_for_copy\": true") != std::string::npos);
  CHECK(json.find("release_waits_for_copy") == json.rfind("release_waits_for_copy"));
  for (const absl::StatusOr<Policy>& back :
       {ParsePolicyJson(json, "p.json"), ParsePolicyBinary(PolicyToBinary(p), "p.pb")}) {
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    RequireSame(p, *back);
    CHECK_FALSE(back->items[0].release_waits_for_copy);
    CHECK(back->items[1].release_waits_for_copy);
  }
  // Only a SWAP item has a copy to wait for.
  p.items[1].action = ItemAction::kRecompute;
  CHECK(p.Validate().message() ==
        "policy item 1 (tensor 44): release_waits_for_copy is set on a RECOMPUTE item (no copy "
        "to wait for)");
  absl::StatusOr<Policy> bad = ParsePolicyJson(
      R"({"format": "swapplan-policy", "format_version": 1,
          "items": [{"release_waits_for_copy": 1}]})", "x");
  CHECK(bad.status().message() ==
        "x: JSON $.items[0].release_waits_for_copy: expected true or false, got number [policy-schema]");
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

// Peak resident memory of this process so far, in bytes (Linux: ru_maxrss
// is in KiB).
int64_t PeakRssBytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// Issue 19 (allocation before validation): a policy whose fingerprint says
// 2^31 - 1 ops made Policy::Validate fill a 2^31-entry vector (8 GiB, 13 s
// of the mutation campaign) before the trace could disagree. Nothing is
// sized from iteration_ops now: reading and validating it allocates a few
// KiB and takes microseconds, and the mismatch with a real trace is then
// the fingerprint error.
TEST_CASE("a policy claiming 2^31 - 1 ops is read without sizing anything by it",
          "[policy][robustness]") {
  const std::string json =
      testing::ReadFile(testing::DataPath("robustness/huge_iteration_ops_policy.json"));
  REQUIRE(json.find("\"iteration_ops\": 2147483647") != std::string::npos);
  const int64_t rss_before = PeakRssBytes();
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<Policy> p = ParsePolicyJson(json, "huge.json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Valid in itself: 13 real ops are not needed to read a v1 policy.
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CHECK(p->fingerprint.iteration_ops == INT32_MAX);
  // 8 GiB before; a 64 MiB margin for the allocator and sanitizer builds.
  CHECK(PeakRssBytes() - rss_before < (int64_t{64} << 20));
  CHECK(seconds < 5);
  // Against the toy trace (13 ops): a fingerprint mismatch, exit 2.
  absl::StatusOr<Trace> trace = ReadTrace(testing::DataPath("traces/chameleon_toy.json"));
  REQUIRE(trace.ok());
  absl::Status fp = CheckFingerprint(*p, *trace);
  CHECK(KindOf(fp) == ErrorKind::kFingerprintMismatch);
  CHECK_THAT(std::string(fp.message()), Catch::Contains("2147483647 ops"));
  // Past 2^31 - 1 (2^32 - 1, the most a uint32 holds) is refused at read,
  // never clamped to 2^31 - 1.
  std::string big = json;
  big.replace(big.find("2147483647"), 10, "4294967295");
  absl::StatusOr<Policy> clamped = ParsePolicyJson(big, "big.json");
  CHECK(KindOf(clamped.status()) == ErrorKind::kMalformedInput);
  CHECK_THAT(std::string(clamped.status().message()),
             Catch::StartsWith("big.json: ") && Catch::Contains("4294967295"));
}

// Issue 19 (silent acceptance): the JSON reader truncated uint64 to uint32,
// so format_version 2^32 + 1 read as 1.
TEST_CASE("format_version past 32 bits is refused, not truncated", "[policy][robustness]") {
  absl::StatusOr<Policy> r = ParsePolicyJson(
      R"({"format": "swapplan-policy", "format_version": 4294967297})", "v.json");
  CHECK(KindOf(r.status()) == ErrorKind::kMalformedInput);
  CHECK(RuleOf(r.status()) == "policy-schema");
  CHECK(std::string(r.status().message()) ==
        "v.json: JSON $.format_version: 4294967297 is out of range (at most 4294967295) "
        "[policy-schema]");
}

// Issue 19 (silent acceptance): the planner's estimates were read as any
// int64 — a negative peak, an overhead of 2^63 - 1 ns — and carried into
// reports and replay's iteration-time sums. Every reader (JSON, binary, the
// checker's) refuses them in Policy::ValidateHeader, naming field and value.
TEST_CASE("policy estimates out of range are refused by every reader", "[policy][robustness]") {
  struct Case {
    int64_t Policy::*field;
    int64_t value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {&Policy::expected_peak_bytes, -1,
       "policy: expected_peak_bytes is -1; must be in [0, 2^63 - 1] [bad-estimate]"},
      {&Policy::expected_overhead_ns, INT64_MAX,
       "policy: expected_overhead_ns is 9223372036854775807; must be in [0, 1e17] [bad-estimate]"},
      {&Policy::expected_overhead_ns, -1,
       "policy: expected_overhead_ns is -1; must be in [0, 1e17] [bad-estimate]"},
      // One past the bound (1e17 ns, kMaxCopyNs).
      {&Policy::simulated_iteration_time_ns, kMaxCopyNs + 1,
       "policy: simulated_iteration_time_ns is 100000000000000001; must be in [0, 1e17] "
       "[bad-estimate]"},
      {&Policy::simulated_iteration_time_ns, INT64_MIN,
       "policy: simulated_iteration_time_ns is -9223372036854775808; must be in [0, 1e17] "
       "[bad-estimate]"},
  };
  for (const Case& c : cases) {
    Policy p = SamplePolicy();
    p.*(c.field) = c.value;
    INFO(c.message);
    const absl::StatusOr<Policy> j = ParsePolicyJson(PolicyToJson(p), "p.json");
    CHECK(KindOf(j.status()) == ErrorKind::kMalformedInput);
    CHECK(std::string(j.status().message()) == "p.json: " + c.message);
    const absl::StatusOr<Policy> b = ParsePolicyBinary(PolicyToBinary(p), "p.pb");
    CHECK(KindOf(b.status()) == ErrorKind::kMalformedInput);
    CHECK(std::string(b.status().message()) == "p.pb: " + c.message);
    CHECK(RuleOf(b.status()) == "bad-estimate");
  }
  // The bounds themselves are accepted.
  Policy edge = SamplePolicy();
  edge.expected_peak_bytes = INT64_MAX;
  edge.expected_overhead_ns = kMaxCopyNs;
  edge.simulated_iteration_time_ns = kMaxCopyNs;
  const absl::StatusOr<Policy> ok = ParsePolicyJson(PolicyToJson(edge), "p.json");
  INFO(ok.status().ToString());
  CHECK(ok.ok());
  // The checker's reader refuses the same file with the same line.
  Policy bad = SamplePolicy();
  bad.expected_overhead_ns = INT64_MAX;
  const std::string path = testing::TempDir() + "/estimate.json";
  {
    std::ofstream(path) << PolicyToJson(bad);
  }
  const absl::StatusOr<Policy> fc = ReadPolicyForCheck(path);
  CHECK(KindOf(fc.status()) == ErrorKind::kMalformedInput);
  CHECK_THAT(std::string(fc.status().message()),
             Catch::Contains("expected_overhead_ns is 9223372036854775807") &&
                 Catch::Contains("[bad-estimate]"));
}

}  // namespace
}  // namespace swapplan
