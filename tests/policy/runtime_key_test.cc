// Runtime keys (seed 001 Appendix A): op ranking, one-hot mask, 8-bit
// history shift register, saturation, and the key at a policy's swap-out.
#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/policy/runtime_key.h"

namespace swapplan {
namespace {

TEST_CASE("runtime keys: ranking by count, ties by name", "[runtime_key]") {
  // counts: mm 3, add 1, relu 3, zero 0 -> mm and relu tie at 3: "mm" <
  // "relu" -> ranks mm 0, relu 1, add 2; zero unranked.
  std::vector<std::string> names = {"relu", "add", "mm", "zero"};
  std::vector<int64_t> counts = {3, 1, 3, 0};
  absl::StatusOr<OpFrequencyRanking> r = OpFrequencyRanking::FromCounts(counts, names, 32);
  REQUIRE(r.ok());
  CHECK(r->rank(2) == 0);
  CHECK(r->rank(0) == 1);
  CHECK(r->rank(1) == 2);
  CHECK(r->rank(3) == -1);
  CHECK(r->ranked() == std::vector<NameId>{2, 0, 1});
  CHECK(r->code(0).one_hot == 0x2);
  CHECK(r->code(0).rank_byte == 1);
  CHECK(r->code(3).one_hot == 0);
  CHECK(r->code(3).rank_byte == 255);
  CHECK(OpFrequencyRanking::FromCounts(counts, names, 16).status().message() ==
        "runtime keys: mask bits must be 32 or 64, got 16");
}

TEST_CASE("runtime keys: only the top mask_bits names get a bit; ranks saturate", "[runtime_key]") {
  // 300 names, name i occurring 1000 - i times: rank i.
  std::vector<std::string> names;
  std::vector<int64_t> counts;
  for (int i = 0; i < 300; ++i) {
    names.push_back("op" + std::to_string(1000 + i));
    counts.push_back(1000 - i);
  }
  OpFrequencyRanking r32 = *OpFrequencyRanking::FromCounts(counts, names, 32);
  OpFrequencyRanking r64 = *OpFrequencyRanking::FromCounts(counts, names, 64);
  CHECK(r32.code(31).one_hot == (uint64_t{1} << 31));
  CHECK(r32.code(32).one_hot == 0);
  CHECK(r64.code(63).one_hot == (uint64_t{1} << 63));
  CHECK(r64.code(64).one_hot == 0);
  CHECK(r32.code(254).rank_byte == 254);
  CHECK(r32.code(255).rank_byte == 255);
  CHECK(r32.code(299).rank_byte == 255);
}

TEST_CASE("runtime keys: update is count, or-mask, 8-bit shift", "[runtime_key]") {
  TensorKeyState s;
  s.Update({.one_hot = 0x4, .rank_byte = 2});
  s.Update({.one_hot = 0x1, .rank_byte = 0});
  s.Update({.one_hot = 0x4, .rank_byte = 2});
  CHECK(s.op_count == 3);
  CHECK(s.op_mask == 0x5);
  CHECK(s.op_history == 0x020002);
  // Only the last 8 users survive: after 9 more updates with rank 7 the
  // register holds eight 0x07 bytes.
  for (int i = 0; i < 9; ++i) s.Update({.one_hot = 0x80, .rank_byte = 7});
  CHECK(s.op_count == 12);
  CHECK(s.op_history == 0x0707070707070707ULL);
}

TEST_CASE("runtime keys: a tensor's key as of an op", "[runtime_key]") {
  // Names: mm x3, relu x1, add x1 -> ranks mm 0, add 1, relu 2.
  Trace t = testing::TraceFromJson(R"({"format": "swapplan-trace", "metadata": {},
    "tensors": [{"id": 7, "size_bytes": 64, "kind": "ACTIVATION", "dtype": "bfloat16",
                 "shape": [4, 8]},
                {"id": 8, "size_bytes": 64, "kind": "ACTIVATION"}],
    "iterations": [{"wall_time_ns": 100, "ops": [
      {"name": "mm", "phase": "FORWARD", "outputs": [7]},
      {"name": "relu", "phase": "FORWARD", "inputs": [7, 7], "outputs": [8]},
      {"name": "mm", "phase": "FORWARD", "inputs": [8]},
      {"name": "add", "phase": "BACKWARD", "inputs": [7, 8]},
      {"name": "mm", "phase": "BACKWARD", "inputs": [7]}]}]})");
  OpFrequencyRanking r = *OpFrequencyRanking::ForIteration(t, 0, 32);
  // Tensor 7 (dense id 0) after op 1: used by mm (rank 0) and relu (rank 2;
  // twice in one op counts once).
  TensorKeyState s = KeyStateAt(t, 0, r, 0, 1);
  CHECK(s.op_count == 2);
  CHECK(s.op_mask == 0x5);
  CHECK(s.op_history == 0x0002);
  // After op 3 (add, rank 1): history 00 02 01.
  TensorKeyState s3 = KeyStateAt(t, 0, r, 0, 3);
  CHECK(s3.op_count == 3);
  CHECK(s3.op_mask == 0x7);
  CHECK(s3.op_history == 0x000201);
  RuntimeKey k = MakeRuntimeKey(s, t, 0, 32);
  CHECK(k.op_count == 2);
  CHECK(k.dtype == DType::kBFloat16);
  CHECK(k.size_bytes == 64);
  CHECK(k.shape == std::vector<int64_t>{4, 8});
  CHECK(k.mask_bits == 32);
}

}  // namespace
}  // namespace swapplan
