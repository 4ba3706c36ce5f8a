// Memory curve on hand-computed traces; every expected value is derived in a
// comment.
#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

using testing::TraceFromJson;

MemoryCurve Curve(const Trace& t, CurveOptions o = {}) {
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t, o);
  REQUIRE(c.ok());
  return std::move(c).value();
}

// Toy trace (tests/data/traces/toy_valid.json):
//   W PARAMETER 1000 persistent, X INPUT 100, A ACT 200, B ACT 300, G GRAD 400
//   op 0 F linear   X,W -> A      live: W X A       = 1000+100+200         = 1300
//   op 1 F relu     A   -> B      live: W A B       = 1000+200+300         = 1500
//   op 2 B loss_bw  B   -> G      live: W A B G     = 1000+200+300+400     = 1900  <- peak
//   op 3 B lin_bw   A,G           live: W A G       = 1000+200+400         = 1600
//   op 4 O sgd      W,G           live: W G         = 1000+400             = 1400
// Frees after each op (last uses): op0 X(100), op2 B(300), op3 A(200), op4 G(400)
//   after: 1200, 1500, 1600, 1400, 1000
TEST_CASE("toy trace: curve, peak, persistent bytes", "[curve]") {
  absl::StatusOr<Trace> t = ReadTrace(testing::DataPath("traces/toy_valid.json"));
  REQUIRE(t.ok());
  MemoryCurve c = Curve(*t);
  CHECK(c.unswapped_bytes() == std::vector<int64_t>{1300, 1500, 1900, 1600, 1400});
  CHECK(c.recorded_bytes() == c.unswapped_bytes());  // no swaps recorded
  CHECK(c.recorded_after_bytes() == std::vector<int64_t>{1200, 1500, 1600, 1400, 1000});
  CHECK(c.live_tensors() == std::vector<int32_t>{3, 3, 4, 3, 2});
  CHECK(c.peak_unswapped().bytes == 1900);
  CHECK(c.peak_unswapped().local_op == 2);
  CHECK(c.peak_unswapped().phase == Phase::kBackward);
  REQUIRE(c.iterations().size() == 1);
  CHECK(c.iterations()[0].persistent_bytes == 1000);  // W only
  // Live at op 2: W(1000) B(300) G(400) A(200) — ids 1, 4, 5, 3 -> dense 0, 3, 4, 2.
  CHECK(c.iterations()[0].largest_at_peak == std::vector<TensorId>{0, 4, 3, 2});
  CHECK(c.allocator().ops_compared == 0);
}

// A trace with an active swap (a policy moved A out after op 1 and back at
// op 3) and a passive one (the runtime evicted B at an OOM after op 1 and
// touched it again at op 2), plus allocator figures from the recorded run.
//
//   unswapped: identical to the toy: 1300 1500 1900 1600 1400
//   off-device: A during op 2 (out after op 1, in at op 3)          -200 @2
//               B: out after op 1, in at op 2 -> off during no op     0
//   recorded:   1300 1500 1700 1600 1400
//   recorded after op i (minus frees and swap-outs at i):
//     op0: 1300 - X 100             = 1200
//     op1: 1500 - A 200 - B 300     = 1000
//     op2: 1700 - B 300 (freed)     = 1400
//     op3: 1600 - A 200             = 1400
//     op4: 1400 - G 400             = 1000
//   allocator says: 1200 1000 1450 1400 900  -> |diff| 0 0 50 0 100
//     max 100 at op 4, mean 150/5 = 30
TEST_CASE("recorded swaps: unswapped curve undoes them value by value", "[curve]") {
  Trace t = TraceFromJson(R"({"tensors": [
      {"id": 1, "size_bytes": 1000, "kind": "PARAMETER"},
      {"id": 2, "size_bytes": 100, "kind": "INPUT"},
      {"id": 3, "size_bytes": 200, "kind": "ACTIVATION"},
      {"id": 4, "size_bytes": 300, "kind": "ACTIVATION"},
      {"id": 5, "size_bytes": 400, "kind": "GRADIENT"}],
    "iterations": [{"wall_time_ns": 1000, "ops": [
      {"name": "linear", "phase": "FORWARD", "inputs": [2, 1], "outputs": [3],
       "allocator_bytes_in_use": 1200},
      {"name": "relu", "phase": "FORWARD", "inputs": [3], "outputs": [4],
       "allocator_bytes_in_use": 1000},
      {"name": "loss_bw", "phase": "BACKWARD", "inputs": [4], "outputs": [5],
       "allocator_bytes_in_use": 1450},
      {"name": "lin_bw", "phase": "BACKWARD", "inputs": [3, 5], "allocator_bytes_in_use": 1400},
      {"name": "sgd", "phase": "OPTIMIZER", "inputs": [1, 5], "allocator_bytes_in_use": 900}],
     "memory_events": [
      {"op": 1, "kind": "SWAP_OUT", "tensor": 3},
      {"op": 3, "kind": "SWAP_IN", "tensor": 3},
      {"op": 1, "kind": "SWAP_OUT", "tensor": 4, "passive": true},
      {"op": 2, "kind": "SWAP_IN", "tensor": 4, "passive": true}]}]})");
  MemoryCurve c = Curve(t);
  CHECK(c.unswapped_bytes() == std::vector<int64_t>{1300, 1500, 1900, 1600, 1400});
  CHECK(c.recorded_bytes() == std::vector<int64_t>{1300, 1500, 1700, 1600, 1400});
  CHECK(c.recorded_after_bytes() == std::vector<int64_t>{1200, 1000, 1400, 1400, 1000});
  CHECK(c.peak_unswapped().bytes == 1900);
  CHECK(c.peak_recorded().bytes == 1700);
  CHECK(c.peak_recorded().local_op == 2);
  CHECK(c.allocator().ops_compared == 5);
  CHECK(c.allocator().max_abs_diff_bytes == 100);
  CHECK(c.allocator().max_diff_op == 4);
  CHECK(c.allocator().mean_abs_diff_bytes == Approx(30.0));
}

// Two iterations; activations die each iteration, the parameter persists,
// and an optimizer state appears with an ALLOC in iteration 0's optimizer.
//   P PARAM 1000 persistent; S OPT_STATE 500 allocated at op 2 (iteration 0)
//   it0: op0 F out A(10)   op1 B in A    op2 O in P out S
//   it1: op3 F out C(20)   op4 B in C    op5 O in P, S
//   unswapped: op0 1010, op1 1010, op2 1500, op3 1520, op4 1520, op5 1500
//   persistent: it0 = P only (S allocated during it0) = 1000; it1 = P + S = 1500
TEST_CASE("multi-iteration: persistent bytes and per-iteration peaks", "[curve]") {
  Trace t = TraceFromJson(R"({"tensors": [
      {"id": 0, "size_bytes": 1000, "kind": "PARAMETER"},
      {"id": 1, "size_bytes": 500, "kind": "OPTIMIZER_STATE"},
      {"id": 2, "size_bytes": 10, "kind": "ACTIVATION"},
      {"id": 3, "size_bytes": 20, "kind": "ACTIVATION"}],
    "iterations": [
     {"wall_time_ns": 100, "ops": [
      {"name": "f", "phase": "FORWARD", "outputs": [2]},
      {"name": "b", "phase": "BACKWARD", "inputs": [2]},
      {"name": "adam", "phase": "OPTIMIZER", "inputs": [0], "outputs": [1]}],
      "memory_events": [{"op": 2, "kind": "ALLOC", "tensor": 1}]},
     {"wall_time_ns": 90, "ops": [
      {"name": "f", "phase": "FORWARD", "outputs": [3]},
      {"name": "b", "phase": "BACKWARD", "inputs": [3]},
      {"name": "adam", "phase": "OPTIMIZER", "inputs": [0, 1]}]}]})");
  MemoryCurve c = Curve(t);
  CHECK(c.unswapped_bytes() == std::vector<int64_t>{1010, 1010, 1500, 1520, 1520, 1500});
  REQUIRE(c.iterations().size() == 2);
  CHECK(c.iterations()[0].persistent_bytes == 1000);
  CHECK(c.iterations()[1].persistent_bytes == 1500);
  CHECK(c.iterations()[0].peak_unswapped.bytes == 1500);
  CHECK(c.iterations()[0].peak_unswapped.local_op == 2);
  CHECK(c.iterations()[1].peak_unswapped.bytes == 1520);
  CHECK(c.iterations()[1].peak_unswapped.local_op == 0);
  CHECK(c.peak_unswapped().iteration == 1);
  CHECK(c.peak_unswapped().op == 3);
}

TEST_CASE("curve options are validated", "[curve]") {
  CurveOptions o;
  o.top_tensors_at_peak = -1;
  absl::Status st = o.Validate();
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(st.message()) == "curve options: top_tensors_at_peak is -1; must be >= 0");
}

}  // namespace
}  // namespace swapplan
