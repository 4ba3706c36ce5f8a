// PyTorch execution traces: the worked example tests/data/import/small_et.json
// (schema 1.0.2 layout) and a 1.0.1-layout copy of part of it.
//
//   ProfilerStep#0
//     ## forward ##   aten::linear (5) { aten::t (6), aten::mm (7) }
//                     aten::addmm (8)  { aten::empty (9) }
//     ## backward ##  aten::mul (11), aten::empty (12)
//     Optimizer.step  aten::add_ (14)
//   ProfilerStep#1    aten::relu (16)
//
// Storages (100 B = 25 float32 unless said): 100 x, 101 W (aten::t's output
// is a view of it), 102 y, 103 a workspace of addmm and, reused after it is
// freed, a 200 B buffer of the backward, 104 z (200 B), 105 g, 106 relu out.
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

#include "import/import_test_util.h"
#include "swapplan/curve/memory_curve.h"

namespace swapplan {
namespace {

using testing::Attr;
using testing::DataFile;
using testing::ImportText;
using testing::RoundRoofline;

TEST_CASE("ET: leaf ops plus ops with their own work, in order, with phases and iterations") {
  auto t = ImportText(DataFile("import/small_et.json"), "", RoundRoofline());
  REQUIRE(t.ok());
  CHECK(Attr(*t, "import.format") == "et-json");
  REQUIRE(t->num_iterations() == 2);  // ProfilerStep#0, ProfilerStep#1
  // aten::linear is not an op (its children cover x, W and y); aten::addmm
  // is, after its workspace aten::empty (it reads y and W, which no child
  // touches).
  const char* names[] = {"aten::t", "aten::mm", "aten::empty", "aten::addmm",
                         "aten::mul", "aten::empty", "aten::add_", "aten::relu"};
  const Phase phases[] = {Phase::kForward, Phase::kForward, Phase::kForward, Phase::kForward,
                          Phase::kBackward, Phase::kBackward, Phase::kOptimizer,
                          Phase::kForward};
  REQUIRE(t->num_ops() == 8);
  for (OpIndex i = 0; i < 8; ++i) {
    CHECK(t->op_name_at(i) == names[i]);
    CHECK(t->op(i).phase == phases[i]);
  }
  CHECK(t->iteration(0).num_ops() == 7);
  CHECK(t->iteration(1).num_ops() == 1);
}

TEST_CASE("ET: tensor lifetimes from storage ids, sizes in storage bytes, kinds") {
  auto t = ImportText(DataFile("import/small_et.json"), "", RoundRoofline());
  REQUIRE(t.ok());
  // File ids in order of first appearance: 0 W (seen first by aten::t),
  // 1 x, 2 y, 3 workspace, 4 z, 5 g, 6 the reused storage 103, 7 relu out.
  REQUIRE(t->num_tensors() == 8);
  const int64_t sizes[] = {100, 100, 100, 100, 200, 100, 200, 100};
  const TensorKind kinds[] = {TensorKind::kParameter,  // resident, used in FORWARD and OPTIMIZER
                              TensorKind::kInput,      // resident, FORWARD only
                              TensorKind::kTemporary,  // FORWARD -> FORWARD
                              TensorKind::kTemporary,
                              TensorKind::kActivation,  // FORWARD -> BACKWARD
                              TensorKind::kGradient,    // BACKWARD -> OPTIMIZER
                              TensorKind::kTemporary,   // storage 103 again: a new tensor
                              TensorKind::kTemporary};
  for (TensorId i = 0; i < 8; ++i) {
    CHECK(t->tensor(i).size_bytes == sizes[i]);
    CHECK(t->tensor(i).kind == kinds[i]);
  }
  CHECK(t->tensor(0).persistent);
  CHECK(t->tensor(1).persistent);
  CHECK_FALSE(t->tensor(6).persistent);
  // The view aten::t produces is W itself: aten::mm reads x and W.
  CHECK(t->inputs(1).size() == 2);
  CHECK(t->inputs(1)[1] == 0);
  CHECK(t->shape(4) == std::vector<int64_t>{5, 10});
  CHECK(t->tensor(4).dtype == DType::kFloat32);
}

TEST_CASE("ET: the rebuilt curve of the worked example") {
  auto t = ImportText(DataFile("import/small_et.json"), "", RoundRoofline());
  REQUIRE(t.ok());
  auto c = ComputeMemoryCurve(*t);
  REQUIRE(c.ok());
  // Resident x + W = 200 throughout. op1 mm: + y = 300; op2 empty: + the
  // workspace = 400; op3 addmm: the workspace is gone, + z (200) = 500; op4
  // mul: y gone, + g = 500; op5 empty: z gone, + 200 B buffer = 500; op6
  // add_: 300; op7 relu (iteration 1): x + W + out = 300.
  const int64_t expected[] = {200, 300, 400, 500, 500, 500, 300, 300};
  for (OpIndex i = 0; i < 8; ++i) CHECK(c->unswapped_bytes()[i] == expected[i]);
  CHECK(c->peak_unswapped().bytes == 500);
  CHECK(c->peak_unswapped().op == 3);
}

TEST_CASE("ET without Kineto: roofline durations and a note saying so") {
  auto t = ImportText(DataFile("import/small_et.json"), "", RoundRoofline());
  REQUIRE(t.ok());
  // 1e12 FLOP/s, 1e9 B/s. aten::mm: 2*25*5 = 250 FLOP (0.25 ns) but 300 B
  // moved (x, W, y) -> 300 ns. addmm: y + W + z = 400 B -> 400 ns. mul:
  // 200 + 100 -> 300 ns. add_: W + g + W -> 300 ns. relu: 200 ns. Views and
  // allocations (aten::t, aten::empty) launch nothing: 0.
  const int64_t expected[] = {0, 300, 0, 400, 300, 0, 300, 200};
  REQUIRE(t->has_op_durations());
  for (OpIndex i = 0; i < 8; ++i) CHECK(t->op(i).duration_ns == expected[i]);
  CHECK(t->iteration(0).wall_time_ns == 1300);
  CHECK(t->iteration(1).wall_time_ns == 200);
  CHECK(Attr(*t, "import.durations").find("estimated: roofline at 1e+12 FLOP/s and 1e+09 B/s") == 0);
}

TEST_CASE("ET: a matmul large enough to be compute-bound") {
  // mm of [1000, 1000] x [1000, 1000] float32: 2e9 FLOP / 1e12 = 2 ms; the
  // 12 MB moved take 12 ms at 1e9 B/s, so raise the bandwidth to 1e12 B/s:
  // 12 us < 2 ms.
  const std::string et = R"J({"schema": "1.0.1", "nodes": [
    {"name": "aten::mm", "id": 2, "parent": 1, "rf_id": 1, "scope": 0, "tid": 1, "fw_tid": 0,
     "inputs": [[1, 1, 0, 1000000, 4, "cuda:0"], [2, 2, 0, 1000000, 4, "cuda:0"]],
     "input_shapes": [[1000, 1000], [1000, 1000]], "input_types": ["Tensor(float)", "Tensor(float)"],
     "outputs": [[3, 3, 0, 1000000, 4, "cuda:0"]], "output_shapes": [[1000, 1000]],
     "output_types": ["Tensor(float)"]}]})J";
  ImportOptions o = RoundRoofline();
  o.roofline_device.memory_bandwidth_bytes_per_s = 1e12;
  auto t = ImportText(et, "", o);
  REQUIRE(t.ok());
  CHECK(t->op(0).duration_ns == 2'000'000);
  CHECK(Attr(*t, "import.schema") == "1.0.1");
}

TEST_CASE("ET 1.0.1 layout: flat inputs / input_types, parent, backward thread") {
  // Forward on thread 1; the autograd thread 2 runs MulBackward0 (scope 1),
  // whose child aten::mul is therefore BACKWARD. No ProfilerStep: one
  // iteration.
  const std::string et = R"J({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_graph|thread]", "id": 2, "rf_id": 0, "parent": 1,
     "scope": 7, "tid": 1, "fw_tid": 0, "inputs": [], "input_shapes": [], "input_types": [],
     "outputs": [], "output_shapes": [], "output_types": []},
    {"name": "aten::mul", "id": 3, "rf_id": 1, "parent": 2, "scope": 0, "tid": 1, "fw_tid": 0,
     "op_schema": "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor",
     "inputs": [[1, 10, 0, 25, 4, "cuda:0"], [2, 11, 0, 25, 4, "cuda:0"]],
     "input_shapes": [[25], [25]], "input_types": ["Tensor(float)", "Tensor(float)"],
     "outputs": [[3, 12, 0, 25, 4, "cuda:0"]], "output_shapes": [[25]], "output_types": ["Tensor(float)"]},
    {"name": "MulBackward0", "id": 5, "rf_id": 3, "parent": 4, "scope": 1, "tid": 2, "fw_tid": 1,
     "inputs": [[4, 13, 0, 25, 4, "cuda:0"]], "input_shapes": [[25]], "input_types": ["Tensor(float)"],
     "outputs": [], "output_shapes": [], "output_types": []},
    {"name": "aten::mul", "id": 6, "rf_id": 4, "parent": 5, "scope": 0, "tid": 2, "fw_tid": 0,
     "inputs": [[4, 13, 0, 25, 4, "cuda:0"], [1, 10, 0, 25, 4, "cuda:0"]],
     "input_shapes": [[25], [25]], "input_types": ["Tensor(float)", "Tensor(float)"],
     "outputs": [[5, 14, 0, 25, 4, "cuda:0"]], "output_shapes": [[25]], "output_types": ["Tensor(float)"]},
    {"name": "[pytorch|profiler|execution_graph|thread]", "id": 4, "rf_id": 0, "parent": 1,
     "scope": 7, "tid": 2, "fw_tid": 0, "inputs": [], "input_shapes": [], "input_types": [],
     "outputs": [], "output_shapes": [], "output_types": []}]})J";
  auto t = ImportText(et, "", RoundRoofline());
  REQUIRE(t.ok());
  REQUIRE(t->num_ops() == 2);
  CHECK(t->op(0).phase == Phase::kForward);
  CHECK(t->op(1).phase == Phase::kBackward);
  CHECK(Attr(*t, "import.iterations") == "whole trace (no ProfilerStep#)");
  // Storage 10 is read in both passes: FORWARD and BACKWARD, resident -> no
  // optimizer in the trace -> PARAMETER by the rules (assembler.h).
  CHECK(t->tensor(0).kind == TensorKind::kParameter);
}

TEST_CASE("ET: storages on the CPU are not device memory") {
  const std::string et = R"J({"schema": "1.0.1", "nodes": [
    {"name": "aten::copy_", "id": 2, "rf_id": 1, "parent": 1, "scope": 0, "tid": 1,
     "inputs": [[1, 1, 0, 25, 4, "cuda:0"], [2, 2, 0, 1000, 4, "cpu"]],
     "input_shapes": [[25], [1000]], "input_types": ["Tensor(float)", "Tensor(float)"],
     "outputs": [[1, 1, 0, 25, 4, "cuda:0"]], "output_shapes": [[25]], "output_types": ["Tensor(float)"]}]})J";
  auto t = ImportText(et, "", RoundRoofline());
  REQUIRE(t.ok());
  CHECK(t->num_tensors() == 1);
  CHECK(t->tensor(0).size_bytes == 100);
  CHECK(Attr(*t, "import.device") == "cuda:0");
}

TEST_CASE("ET: attribute numbers that are not integers (fuzz finding)") {
  // libFuzzer: "scope": NaN reached a double -> int64 conversion out of
  // range (undefined behaviour). Non-finite and out-of-range attribute values
  // now leave the attribute absent.
  for (const char* v : {"NaN", "-Infinity", "-1e300", "1e300", "2.5"}) {
    INFO(v);
    const std::string et = absl::StrCat(R"J({"schema": "1.0.1", "nodes": [{"name": "aten::mul",
      "id": 3, "rf_id": 1, "parent": 2, "scope": )J", v, R"J(, "tid": )J", v, R"J(,
      "inputs": [[1, 10, 0, 25, 4, "cuda:0"]], "input_types": ["Tensor(float)"]}]})J");
    auto t = ImportText(et, "", RoundRoofline());
    REQUIRE(t.ok());
    CHECK(t->num_ops() == 1);
  }
}

TEST_CASE("ET: malformed inputs name the node and the rule") {
  SECTION("no nodes") {
    auto t = ImportText(R"J({"schema": "1.0.1", "pid": 1})J", "et-json");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message() == "mem: no \"nodes\" array: not an execution trace [et-schema]");
  }
  SECTION("duplicate id") {
    auto t = ImportText(R"J({"schema": "1.0.1", "nodes": [{"id": 3, "name": "a"}, {"id": 3, "name": "b"}]})J");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message() == "mem: node id 3 appears twice [et-schema]");
  }
  SECTION("tensor size overflow") {
    auto t = ImportText(R"J({"schema": "1.0.1", "nodes": [{"id": 3, "name": "aten::x",
      "inputs": [[1, 1, 0, 4611686018427387904, 4, "cuda:0"]], "input_types": ["Tensor(float)"]}]})J");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message() ==
          "mem: node 3 inputs[0]: tensor size (offset + numel) * itemsize overflows int64 "
          "[et-schema]");
  }
  SECTION("a node without id") {
    auto t = ImportText(R"J({"schema": "1.0.1", "nodes": [{"name": "aten::x"}]})J");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message() ==
          "mem: byte 49, at $.nodes[0]: node has no integer \"id\" [et-schema]");
  }
  SECTION("only annotations") {
    auto t = ImportText(R"J({"schema": "1.0.1", "nodes": [{"id": 2, "name": "## forward ##", "scope": 7}]})J");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message() == "mem: no operators found to build a trace from [no-ops]");
  }
}

}  // namespace
}  // namespace swapplan
