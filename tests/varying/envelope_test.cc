// The iteration envelope: per-role smallest sizes and per-op largest bytes
// over observed iterations, and the planning input built from them.
#include "swapplan/varying/envelope.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"

namespace swapplan {
namespace {

// Two iterations of f0 f1 | b0 b1 with a 1000-byte parameter P (id 1):
// f0 makes A, f1 makes B from A, b0 uses B (B dies), b1 uses A (A dies).
// Iteration 0: A (id 2) 100 bytes, B (id 3) 200. Iteration 1: A (id 4) 60,
// B (id 5) 300 — the same roles, other sizes (routing moved tokens).
// Bytes in use per op (P + live):
//   iteration 0: 1100 1300 1300 1100      iteration 1: 1060 1360 1360 1060
const char* kTwo = R"({"format": "swapplan-trace", "metadata": {"device_name": "toy"},
  "tensors": [{"id": 1, "size_bytes": 1000, "kind": "PARAMETER"},
              {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
              {"id": 3, "size_bytes": 200, "kind": "ACTIVATION"},
              {"id": 4, "size_bytes": 60, "kind": "ACTIVATION"},
              {"id": 5, "size_bytes": 300, "kind": "ACTIVATION"}],
  "iterations": [
    {"wall_time_ns": 400, "ops": [
       {"name": "f0", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 100},
       {"name": "f1", "phase": "FORWARD", "inputs": [1, 2], "outputs": [3], "duration_ns": 100},
       {"name": "b0", "phase": "BACKWARD", "inputs": [3], "duration_ns": 100},
       {"name": "b1", "phase": "BACKWARD", "inputs": [2], "duration_ns": 100}]},
    {"wall_time_ns": 400, "ops": [
       {"name": "f0", "phase": "FORWARD", "inputs": [1], "outputs": [4], "duration_ns": 100},
       {"name": "f1", "phase": "FORWARD", "inputs": [1, 4], "outputs": [5], "duration_ns": 100},
       {"name": "b0", "phase": "BACKWARD", "inputs": [5], "duration_ns": 100},
       {"name": "b1", "phase": "BACKWARD", "inputs": [4], "duration_ns": 100}]}]})";

int64_t SizeOf(const Trace& t, uint64_t file_id) {
  for (TensorId i = 0; i < t.num_tensors(); ++i) {
    if (t.tensor(i).trace_id == file_id) return t.tensor(i).size_bytes;
  }
  return -1;
}

TEST_CASE("Envelope: bytes in use per op", "[varying][envelope]") {
  Trace t = testing::TraceFromJson(kTwo);
  CHECK(BytesInUsePerOp(t, 0) == std::vector<int64_t>{1100, 1300, 1300, 1100});
  CHECK(BytesInUsePerOp(t, 1) == std::vector<int64_t>{1060, 1360, 1360, 1060});
}

TEST_CASE("Envelope: smallest sizes and largest bytes of two observations",
          "[varying][envelope]") {
  Trace t = testing::TraceFromJson(kTwo);
  IterationEnvelope env(EnvelopeOptions{.spread_margin = 0});
  env.Observe(t, 0);
  env.Observe(t, 1);
  CHECK(env.observations() == 2);
  EnvelopeStats st;
  absl::StatusOr<Trace> b = env.Build(t, 1, &st);
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  REQUIRE(b->num_iterations() == 1);
  // Sizes of iteration 1's tensors: A' = min(60, 100) = 60 (unchanged),
  // B' = min(300, 200) = 200: one tensor shrunk by 100 bytes.
  CHECK(SizeOf(*b, 4) == 60);
  CHECK(SizeOf(*b, 5) == 200);
  CHECK(SizeOf(*b, 1) == 1000);
  CHECK(st.tensors_shrunk == 1);
  CHECK(st.bytes_shrunk == 100);
  // With those sizes: 1060 1260 1260 1060; the most each op needed:
  // max(1100, 1060) = 1100, max(1300, 1360) = 1360, 1360, 1100 -> headroom
  // 40, 100, 100, 40 (ids 6 + op: the largest id is 5).
  CHECK(BytesInUsePerOp(*b, 0) == std::vector<int64_t>{1100, 1360, 1360, 1100});
  CHECK(SizeOf(*b, 6) == 40);
  CHECK(SizeOf(*b, 7) == 100);
  CHECK(SizeOf(*b, 8) == 100);
  CHECK(SizeOf(*b, 9) == 40);
  CHECK(st.ops_with_headroom == 4);
  CHECK(st.max_headroom_bytes == 100);
  CHECK(st.peak_bytes == 1360);
  // Headroom blocks are used by no op: the ops' uses are the originals.
  CHECK(b->num_uses() == 7);
  // The memory curve library agrees with the per-op bytes.
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(*b);
  REQUIRE(c.ok());
  CHECK(c->peak_unswapped().bytes == 1360);
}

TEST_CASE("Envelope: the spread margin extrapolates beyond the observations",
          "[varying][envelope]") {
  Trace t = testing::TraceFromJson(kTwo);
  IterationEnvelope env(EnvelopeOptions{.spread_margin = 1});
  env.Observe(t, 0);
  env.Observe(t, 1);
  EnvelopeStats st;
  absl::StatusOr<Trace> b = env.Build(t, 1, &st);
  REQUIRE(b.ok());
  // A: [60, 100] -> 60 - 40 = 20; B: [200, 300] -> 200 - 100 = 100.
  CHECK(SizeOf(*b, 4) == 20);
  CHECK(SizeOf(*b, 5) == 100);
  // Ops: [1060, 1100] -> 1100 + 40 = 1140; [1300, 1360] -> 1360 + 60 = 1420.
  CHECK(BytesInUsePerOp(*b, 0) == std::vector<int64_t>{1140, 1420, 1420, 1140});
  // With 20 and 100: 1020 1120 1120 1020 -> headroom 120 300 300 120.
  CHECK(SizeOf(*b, 6) == 120);
  CHECK(SizeOf(*b, 7) == 300);
  CHECK(st.max_headroom_bytes == 300);
  // A size never drops below one byte.
  IterationEnvelope wide(EnvelopeOptions{.spread_margin = 10});
  wide.Observe(t, 0);
  wide.Observe(t, 1);
  absl::StatusOr<Trace> w = wide.Build(t, 1);
  REQUIRE(w.ok());
  CHECK(SizeOf(*w, 4) == 1);
  // Clear forgets: one observation of iteration 0, built on itself, is it.
  wide.Clear();
  CHECK(wide.observations() == 0);
  wide.Observe(t, 0);
  absl::StatusOr<Trace> self = wide.Build(t, 0, &st);
  REQUIRE(self.ok());
  CHECK(SizeOf(*self, 2) == 100);
  CHECK(st.tensors_shrunk == 0);
  CHECK(st.ops_with_headroom == 0);
  CHECK(BytesInUsePerOp(*self, 0) == BytesInUsePerOp(t, 0));
}

TEST_CASE("Envelope: options are validated", "[varying][envelope]") {
  EnvelopeOptions o;
  o.spread_margin = -1;
  CHECK(o.Validate().message() == "envelope options: spread_margin is -1; must be finite and >= 0");
  o.spread_margin = 0.5;
  CHECK(o.Validate().ok());
}

TEST_CASE("Envelope: property — one observation rebuilds the same memory curve",
          "[varying][envelope][property]") {
  // Random valid traces (recorded swaps dropped: the envelope is about the
  // unswapped curve): the built iteration holds exactly the bytes of the
  // original at every op, and the curve library agrees.
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    INFO("seed " << seed);
    testing::RandomTraceOptions ro;
    ro.iterations = 2;
    ro.micro_batches = 1 + static_cast<int32_t>(seed % 3);
    Trace t = testing::RandomTrace(seed, ro);
    for (int32_t it = 0; it < t.num_iterations(); ++it) {
      IterationEnvelope env;
      env.Observe(t, it);
      EnvelopeStats st;
      absl::StatusOr<Trace> b = env.Build(t, it, &st);
      INFO(b.status().ToString());
      REQUIRE(b.ok());
      CHECK(st.ops_with_headroom == 0);
      CHECK(st.tensors_shrunk == 0);
      CHECK(BytesInUsePerOp(*b, 0) == BytesInUsePerOp(t, it));
      absl::StatusOr<MemoryCurve> cb = ComputeMemoryCurve(*b);
      absl::StatusOr<MemoryCurve> ct = ComputeMemoryCurve(t);
      REQUIRE(cb.ok());
      REQUIRE(ct.ok());
      const IterationInfo& info = t.iteration(it);
      for (int32_t j = 0; j < info.num_ops(); ++j) {
        CHECK(cb->unswapped_bytes()[j] == ct->unswapped_bytes()[info.op_begin + j]);
      }
    }
  }
}

}  // namespace
}  // namespace swapplan
