// Runtime iterations: where they end, and extracted one-iteration traces that
// occupy the device exactly as the ops did in the whole trace.
#include "swapplan/varying/segment.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"

namespace swapplan {
namespace {

// Iteration 0: f b o v (a validation op after the optimizer step);
// iteration 1: f b o; iteration 2: f b (a skipped step: no optimizer op) v.
// P is a parameter; A is made in 0 and used in 1 (crosses the boundary);
// V is the validation op's output, freed explicitly in the next op.
const char* kTrace = R"({"format": "swapplan-trace", "metadata": {"device_name": "toy"},
  "tensors": [{"id": 7, "size_bytes": 1000, "kind": "PARAMETER"},
              {"id": 8, "size_bytes": 100, "kind": "ACTIVATION", "dtype": "float32", "shape": [25]},
              {"id": 9, "size_bytes": 200, "kind": "TEMPORARY"},
              {"id": 10, "size_bytes": 300, "kind": "ACTIVATION"}],
  "iterations": [
    {"wall_time_ns": 400, "ops": [
       {"name": "f", "phase": "FORWARD", "inputs": [7], "outputs": [8], "duration_ns": 100},
       {"name": "b", "phase": "BACKWARD", "inputs": [8], "duration_ns": 100},
       {"name": "o", "phase": "OPTIMIZER", "inputs": [7], "duration_ns": 100},
       {"name": "v", "phase": "OTHER", "inputs": [7, 8], "outputs": [9], "duration_ns": 100}],
     "memory_events": [{"op": 0, "kind": "ALLOC", "tensor": 8}]},
    {"wall_time_ns": 300, "ops": [
       {"name": "f", "phase": "FORWARD", "inputs": [7, 9, 8], "outputs": [10], "duration_ns": 100},
       {"name": "b", "phase": "BACKWARD", "inputs": [10], "duration_ns": 100},
       {"name": "o", "phase": "OPTIMIZER", "inputs": [7], "duration_ns": 100}]},
    {"wall_time_ns": 300, "ops": [
       {"name": "f", "phase": "FORWARD", "inputs": [7], "duration_ns": 100},
       {"name": "b", "phase": "BACKWARD", "inputs": [7], "duration_ns": 100},
       {"name": "v", "phase": "OTHER", "inputs": [7], "duration_ns": 100}]}]})";

TEST_CASE("Runtime iterations end after the optimizer step", "[varying][segment]") {
  Trace t = testing::TraceFromJson(kTrace);
  // Global ops: it 0 = 0..3, it 1 = 4..6, it 2 = 7..9.
  std::vector<OpRange> trace_ranges = RuntimeIterations(t, IterationBoundary::kTrace);
  REQUIRE(trace_ranges.size() == 3);
  CHECK(trace_ranges[0].begin == 0);
  CHECK(trace_ranges[0].end == 4);
  CHECK(trace_ranges[1].end == 7);
  CHECK(trace_ranges[2].end == 10);
  // Optimizer boundary: 0..2 (f b o), 3..6 (v | f b o), 7..9 (the last trace
  // iteration keeps its trailing op; it has no optimizer op anyway).
  std::vector<OpRange> r = RuntimeIterations(t, IterationBoundary::kOptimizerEnd);
  REQUIRE(r.size() == 3);
  CHECK(r[0].begin == 0);
  CHECK(r[0].end == 3);
  CHECK(r[1].begin == 3);
  CHECK(r[1].end == 7);
  CHECK(r[2].begin == 7);
  CHECK(r[2].end == 10);
  IterationBoundary b;
  CHECK(ParseIterationBoundary("optimizer", &b));
  CHECK(b == IterationBoundary::kOptimizerEnd);
  CHECK_FALSE(ParseIterationBoundary("step", &b));
}

TEST_CASE("An extracted runtime iteration is a valid one-iteration trace", "[varying][segment]") {
  Trace t = testing::TraceFromJson(kTrace);
  SegmentExtractor x(t, RuntimeIterations(t, IterationBoundary::kOptimizerEnd));
  absl::StatusOr<Trace> s = x.Extract(1);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  CHECK(s->source() == "test.json (runtime iteration 1)");
  REQUIRE(s->num_iterations() == 1);
  CHECK(s->iteration(0).num_ops() == 4);
  CHECK(s->op_name_at(0) == "v");
  CHECK(s->op(0).phase == Phase::kOther);
  CHECK(s->op(1).duration_ns == 100);
  // Wall time: 1/4 of iteration 0 (one op of four) + all of iteration 1.
  CHECK(s->iteration(0).wall_time_ns == 100 + 300);
  // Tensors: P (persistent), A (made before, used at local 0 and 1), V
  // (made at local 0), 10 (made at local 1). File ids are kept.
  REQUIRE(s->num_tensors() == 4);
  std::vector<uint64_t> ids;
  for (TensorId i = 0; i < s->num_tensors(); ++i) ids.push_back(s->tensor(i).trace_id);
  CHECK(ids == std::vector<uint64_t>{7, 8, 9, 10});
  CHECK(s->tensor(1).dtype == DType::kFloat32);
  CHECK(s->shape(1).size() == 1);
  // A: resident from the start (it was allocated in the previous runtime
  // iteration), freed after its last use (local op 1).
  CHECK(s->lifetime(1).alloc_op == -1);
  CHECK(s->lifetime(1).free_op == 1);
  CHECK(s->lifetime(2).alloc_op == 0);
  CHECK(s->lifetime(2).free_op == 1);
  CHECK(s->lifetime(0).alloc_op == -1);
  CHECK(s->lifetime(0).free_op == s->num_ops());
  // Op names are the whole table, in the same order.
  CHECK(s->op_names() == t.op_names());
}

TEST_CASE("Extracted iterations reproduce the whole trace's memory curve", "[varying][segment]") {
  // Random multi-iteration traces (micro-batches, explicit and implicit
  // lifetimes, recorded swaps): the unswapped bytes of every op are the same
  // in the whole trace and in its runtime iteration, for both boundaries.
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);
    testing::RandomTraceOptions ro;
    ro.iterations = 4;
    ro.ops_per_iteration = 30 + static_cast<int32_t>(seed % 30);
    ro.micro_batches = 1 + static_cast<int32_t>(seed % 3);
    Trace t = testing::RandomTrace(seed, ro);
    absl::StatusOr<MemoryCurve> whole = ComputeMemoryCurve(t);
    REQUIRE(whole.ok());
    for (IterationBoundary b : {IterationBoundary::kTrace, IterationBoundary::kOptimizerEnd}) {
      std::vector<OpRange> ranges = RuntimeIterations(t, b);
      OpIndex covered = 0;
      for (const OpRange& r : ranges) {
        CHECK(r.begin == covered);
        covered = r.end;
      }
      CHECK(covered == t.num_ops());
      SegmentExtractor x(t, ranges);
      for (int32_t i = 0; i < x.num_segments(); ++i) {
        absl::StatusOr<Trace> s = x.Extract(i);
        INFO("boundary " << IterationBoundaryName(b) << ", segment " << i << ": "
                         << s.status().ToString());
        REQUIRE(s.ok());
        absl::StatusOr<MemoryCurve> part = ComputeMemoryCurve(*s);
        REQUIRE(part.ok());
        for (OpIndex op = ranges[i].begin; op < ranges[i].end; ++op) {
          CHECK(part->unswapped_bytes()[op - ranges[i].begin] == whole->unswapped_bytes()[op]);
        }
      }
    }
  }
}

}  // namespace
}  // namespace swapplan
