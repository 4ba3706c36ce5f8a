// Input signatures and the choice of a policy among a keyed set.
#include "swapplan/varying/policy_set.h"

#include <catch2/catch.hpp>

#include "support/test_traces.h"

namespace swapplan {
namespace {

InputSignature Sig(int64_t tokens) {
  // A [1, tokens] int64 batch: 8 bytes per token.
  InputSignature s;
  const int64_t shape[] = {1, tokens};
  s.Add(DType::kInt64, shape, 8 * tokens);
  return s;
}

TEST_CASE("Input signature: shapes, dtypes and bytes", "[varying][policy_set]") {
  CHECK(Sig(512) == Sig(512));
  CHECK_FALSE(Sig(512) == Sig(1024));
  CHECK(Sig(512).bytes == 4096);
  CHECK(Sig(512).hash != 0);
  // The dtype and the rank count, not only the bytes.
  InputSignature a, b, c;
  const int64_t s1[] = {1, 512};
  const int64_t s2[] = {512};
  a.Add(DType::kInt64, s1, 4096);
  b.Add(DType::kFloat64, s1, 4096);
  c.Add(DType::kInt64, s2, 4096);
  CHECK(a.hash != b.hash);
  CHECK(a.hash != c.hash);
  CHECK(InputSignature{}.hash == 0);
}

TEST_CASE("Input signature of a trace iteration: its first forward op", "[varying][policy_set]") {
  // Op 0 is OTHER (a validation op opening the runtime iteration); the first
  // FORWARD op (op 1) uses tensors 2 (int64 [1, 4], 32 bytes) and 3
  // (float32 [4, 2], 32 bytes).
  Trace t = testing::TraceFromJson(R"({"format": "swapplan-trace",
    "tensors": [{"id": 1, "size_bytes": 100, "kind": "TEMPORARY"},
                {"id": 2, "size_bytes": 32, "dtype": "int64", "shape": [1, 4], "kind": "INPUT"},
                {"id": 3, "size_bytes": 32, "dtype": "float32", "shape": [4, 2], "kind": "ACTIVATION"}],
    "iterations": [{"wall_time_ns": 10, "ops": [
       {"name": "v", "phase": "OTHER", "outputs": [1]},
       {"name": "f", "phase": "FORWARD", "inputs": [2], "outputs": [3]},
       {"name": "b", "phase": "BACKWARD", "inputs": [3]}]}]})");
  InputSignature s = ComputeInputSignature(t, 0);
  InputSignature want;
  const int64_t s2[] = {1, 4};
  const int64_t s3[] = {4, 2};
  want.Add(DType::kInt64, s2, 32);
  want.Add(DType::kFloat32, s3, 32);
  CHECK(s == want);
  CHECK(s.bytes == 64);
}

TEST_CASE("Policy set: the exact signature, else the nearest larger, else the largest",
          "[varying][policy_set]") {
  PolicySet set;
  CHECK(set.Select(Sig(512)).index == -1);
  set.Insert(Sig(1024), 10);
  set.Insert(Sig(4096), 40);
  set.Insert(Sig(2048), 20);
  CHECK(set.size() == 3);
  PolicySet::Choice c = set.Select(Sig(2048));
  CHECK(c.index == 20);
  CHECK(c.exact);
  // 512 and 1536: the fewest bytes at or above -> 1024 and 2048.
  c = set.Select(Sig(512));
  CHECK(c.index == 10);
  CHECK_FALSE(c.exact);
  CHECK(set.Select(Sig(1536)).index == 20);
  // 8192: nothing above -> the largest, 4096.
  CHECK(set.Select(Sig(8192)).index == 40);
  // Insert replaces the policy of a signature.
  set.Insert(Sig(2048), 21);
  CHECK(set.size() == 3);
  CHECK(set.Select(Sig(2048)).index == 21);
  set.Clear();
  CHECK(set.empty());
}

}  // namespace
}  // namespace swapplan
