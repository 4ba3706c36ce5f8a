// TraceBuilder: id resolution and lifetime resolution on hand-made traces.
#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/trace/builder.h"

namespace swapplan {
namespace {

using testing::TraceFromJson;

// The toy trace used across the curve tests (tests/data/traces/toy_valid.json):
//
//   tensors: 1 W PARAMETER 1000 (persistent), 2 X INPUT 100, 3 A ACTIVATION 200,
//            4 B ACTIVATION 300, 5 G GRADIENT 400
//   op 0 FORWARD  aten::linear    in X,W   out A
//   op 1 FORWARD  aten::relu      in A     out B
//   op 2 BACKWARD loss_backward   in B     out G
//   op 3 BACKWARD linear_backward in A,G
//   op 4 OPTIMIZER sgd_step       in W,G
//
// Implicit lifetimes (first use .. last use; W resident throughout):
//   W [-1, 5]  X [0, 0]  A [0, 3]  B [1, 2]  G [2, 4]
TEST_CASE("implicit lifetimes come from first and last use", "[trace][builder]") {
  Trace t = TraceFromJson(R"({"tensors": [
      {"id": 1, "size_bytes": 1000, "kind": "PARAMETER"},
      {"id": 2, "size_bytes": 100, "kind": "INPUT"},
      {"id": 3, "size_bytes": 200, "kind": "ACTIVATION"},
      {"id": 4, "size_bytes": 300, "kind": "ACTIVATION"},
      {"id": 5, "size_bytes": 400, "kind": "GRADIENT"}],
    "iterations": [{"wall_time_ns": 1000, "ops": [
      {"name": "aten::linear", "phase": "FORWARD", "inputs": [2, 1], "outputs": [3]},
      {"name": "aten::relu", "phase": "FORWARD", "inputs": [3], "outputs": [4]},
      {"name": "loss_backward", "phase": "BACKWARD", "inputs": [4], "outputs": [5]},
      {"name": "linear_backward", "phase": "BACKWARD", "inputs": [3, 5]},
      {"name": "sgd_step", "phase": "OPTIMIZER", "inputs": [1, 5]}]}]})");
  REQUIRE(t.num_tensors() == 5);
  REQUIRE(t.num_ops() == 5);
  // Ids 1..5 are not dense (0..4), so the hash index is used.
  CHECK(t.tensor(0).trace_id == 1);
  CHECK(t.tensor(0).persistent);
  CHECK_FALSE(t.tensor(4).persistent);  // gradients are not persistent by default

  const TensorLifetime& w = t.lifetime(0);
  CHECK(w.alloc_op == -1);
  CHECK(w.free_op == 5);  // num_ops: never freed
  CHECK(w.first_use == 0);
  CHECK(w.last_use == 4);
  CHECK(w.first_use_in_phase[static_cast<int>(Phase::kForward)] == 0);
  CHECK(w.last_use_in_phase[static_cast<int>(Phase::kBackward)] == kNoOp);
  CHECK(w.first_use_in_phase[static_cast<int>(Phase::kOptimizer)] == 4);

  auto life = [&](TensorId id) { return std::make_pair(t.lifetime(id).alloc_op, t.lifetime(id).free_op); };
  CHECK(life(1) == std::make_pair(0, 0));  // X
  CHECK(life(2) == std::make_pair(0, 3));  // A
  CHECK(life(3) == std::make_pair(1, 2));  // B
  CHECK(life(4) == std::make_pair(2, 4));  // G

  // A: last forward use op 1, first backward use op 3 (its idle window).
  const TensorLifetime& a = t.lifetime(2);
  CHECK(a.last_use_in_phase[static_cast<int>(Phase::kForward)] == 1);
  CHECK(a.first_use_in_phase[static_cast<int>(Phase::kBackward)] == 3);

  // Use lists, ascending, one entry per op.
  auto uses = t.tensor_uses(2);
  CHECK(std::vector<OpIndex>(uses.begin(), uses.end()) == std::vector<OpIndex>{0, 1, 3});
  CHECK(t.inputs(3).size() == 2);
  CHECK(t.outputs(0)[0] == 2);
  CHECK(t.op_name_at(2) == "loss_backward");
  CHECK(t.iteration(0).wall_time_ns == 1000);
  CHECK_FALSE(t.has_op_durations());
}

TEST_CASE("explicit events override implicit lifetimes", "[trace][builder]") {
  // T is allocated one op before its first use and freed one op after its
  // last; P is a parameter freed explicitly (ZeRO-3 style gather).
  Trace t = TraceFromJson(R"({"tensors": [
      {"id": 0, "size_bytes": 64, "kind": "TEMPORARY"},
      {"id": 1, "size_bytes": 32, "kind": "PARAMETER", "persistent": false}],
    "iterations": [{"ops": [
      {"name": "a", "phase": "FORWARD"},
      {"name": "b", "phase": "FORWARD", "inputs": [0, 1]},
      {"name": "c", "phase": "FORWARD"},
      {"name": "d", "phase": "FORWARD"}],
     "memory_events": [{"op": 0, "kind": "ALLOC", "tensor": 0},
                       {"op": 2, "kind": "FREE", "tensor": 0},
                       {"op": 1, "kind": "ALLOC", "tensor": 1},
                       {"op": 3, "kind": "FREE", "tensor": 1}]}]})");
  CHECK(t.lifetime(0).alloc_op == 0);
  CHECK(t.lifetime(0).free_op == 2);
  CHECK_FALSE(t.tensor(1).persistent);
  CHECK(t.lifetime(1).alloc_op == 1);
  CHECK(t.lifetime(1).free_op == 3);
  // Events are sorted by op, stable within an op.
  REQUIRE(t.events().size() == 4);
  CHECK(t.events()[0].op == 0);
  CHECK(t.events()[1].kind == MemoryEventKind::kAlloc);
  CHECK(t.events()[1].op == 1);
  CHECK(t.events()[3].op == 3);
}

TEST_CASE("a persistent tensor with an ALLOC event starts at that op", "[trace][builder]") {
  // Adam states created lazily by the first optimizer step.
  Trace t = TraceFromJson(R"({"tensors": [{"id": 7, "size_bytes": 8, "kind": "OPTIMIZER_STATE"}],
    "iterations": [{"ops": [{"name": "x", "phase": "FORWARD"},
                            {"name": "adam", "phase": "OPTIMIZER", "outputs": [7]}],
                    "memory_events": [{"op": 1, "kind": "ALLOC", "tensor": 7}]},
                   {"ops": [{"name": "adam", "phase": "OPTIMIZER", "inputs": [7]}]}]})");
  CHECK(t.lifetime(0).alloc_op == 1);
  CHECK(t.lifetime(0).free_op == 3);  // num_ops: survives the trace
  CHECK(t.IterationOf(2) == 1);
}

TEST_CASE("micro-batch hints allow interleaved forward/backward", "[trace][builder]") {
  // 1F1B-like order: F0 F1 B0 F2 B1 B2.
  Trace t = TraceFromJson(R"({"iterations": [{"ops": [
      {"name": "f", "phase": "FORWARD", "micro_batch": 0},
      {"name": "f", "phase": "FORWARD", "micro_batch": 1},
      {"name": "b", "phase": "BACKWARD", "micro_batch": 0},
      {"name": "f", "phase": "FORWARD", "micro_batch": 2},
      {"name": "b", "phase": "BACKWARD", "micro_batch": 1},
      {"name": "b", "phase": "BACKWARD", "micro_batch": 2}]}]})");
  CHECK(t.op(3).micro_batch == 2);
  CHECK(t.num_op_names() == 2);
}

TEST_CASE("builder reports structural misuse", "[trace][builder]") {
  TraceBuilder b("s");
  NameId n = b.InternOpName("x");
  b.AddOp({.name = n, .phase = Phase::kForward});
  absl::StatusOr<Trace> t = std::move(b).Finish();
  REQUIRE_FALSE(t.ok());
  CHECK(std::string(t.status().message()) == "s: op 0 is outside any iteration [unclosed-iteration]");

  TraceBuilder b2("s2");
  b2.BeginIteration();
  b2.AddOp({.name = b2.InternOpName("x"), .phase = Phase::kForward});
  absl::StatusOr<Trace> t2 = std::move(b2).Finish();
  REQUIRE_FALSE(t2.ok());
  CHECK(std::string(t2.status().message()) == "s2: iteration 0 was never ended [unclosed-iteration]");
}

TEST_CASE("builder with dense ids resolves without a hash map", "[trace][builder]") {
  TraceBuilder b("dense");
  const int64_t shape[] = {10};
  for (uint64_t id = 0; id < 3; ++id) {
    b.AddTensor({.id = id, .size_bytes = 40, .dtype = DType::kFloat32, .shape = shape,
                 .kind = TensorKind::kActivation});
  }
  b.BeginIteration();
  const uint64_t in[] = {0, 1};
  const uint64_t out[] = {2};
  b.AddOp({.name = b.InternOpName("add"), .phase = Phase::kForward, .inputs = in, .outputs = out,
           .duration_ns = 5});
  b.EndIteration(10);
  absl::StatusOr<Trace> t = std::move(b).Finish();
  REQUIRE(t.ok());
  CHECK(t->shape(1)[0] == 10);
  CHECK(t->has_op_durations());
  CHECK(t->op(0).duration_ns == 5);
  CHECK(t->op(0).allocator_bytes_in_use == -1);
  CHECK(t->op(0).micro_batch == -1);
  CHECK(t->inputs(0)[1] == 1);
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

TEST_CASE("text that is not UTF-8 is rejected", "[trace][builder]") {
  TraceBuilder b("bin.trace");
  b.BeginIteration();
  b.AddOp({.name = b.AddOpName("aten::\xff"), .phase = Phase::kForward});
  b.EndIteration(0);
  absl::StatusOr<Trace> t = std::move(b).Finish();
  REQUIRE_FALSE(t.ok());
  CHECK(std::string(t.status().message()) == "bin.trace: op name 0: is not valid UTF-8 [bad-text]");
}

}  // namespace
}  // namespace swapplan
