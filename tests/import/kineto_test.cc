// Kineto traces: the worked example tests/data/import/small_kineto.json.
//
//   ProfilerStep#1 [0, 1000] us, thread 1
//     aten::empty [10, 15]          alloc A 1000 B at 11 (Total Allocated 6000)
//     aten::mm    [20, 30]          alloc B 2000 B at 21 (8000); launches a
//       aten::empty [22, 24]          3 us kernel at 25; frees A at 27 (7000)
//                                   alloc C 500 B at 23 (8500), free at 24 (8000)
//   outside every op at 40 us:      a free of 300 B never allocated (6700)
//   a CPU allocation (Device Type 0) at 12 us is not device memory.
//
// Ops: aten::empty, aten::mm (its time before the child: the alloc at 21),
// aten::empty (the child), aten::mm again (after the child: the launch and
// the free at 27). Resident at the start: 6000 - 1000 = 5000 B, of which
// 300 B are freed at 40 us, so 4700 B remain one block.
#include <catch2/catch.hpp>

#include "import/import_test_util.h"
#include "swapplan/curve/memory_curve.h"

namespace swapplan {
namespace {

using testing::Attr;
using testing::DataFile;
using testing::ImportText;

TEST_CASE("Kineto: ops are leaves and stretches of own work") {
  auto t = ImportText(DataFile("import/small_kineto.json"));
  REQUIRE(t.ok());
  CHECK(Attr(*t, "import.format") == "kineto");
  REQUIRE(t->num_iterations() == 1);
  REQUIRE(t->num_ops() == 4);
  const char* names[] = {"aten::empty", "aten::mm", "aten::empty", "aten::mm"};
  for (OpIndex i = 0; i < 4; ++i) CHECK(t->op_name_at(i) == names[i]);
  // The 3 us kernel was launched by aten::mm after its child: op 3.
  const int64_t durations[] = {0, 0, 0, 3000};
  for (OpIndex i = 0; i < 4; ++i) CHECK(t->op(i).duration_ns == durations[i]);
  CHECK(t->iteration(0).wall_time_ns == 1'000'000);
  CHECK(t->metadata().device_name == "Test GPU");
  CHECK(t->metadata().device_memory_bytes == 1000000);
}

TEST_CASE("Kineto: memory events become tensors; the curve matches Total Allocated") {
  auto t = ImportText(DataFile("import/small_kineto.json"));
  REQUIRE(t.ok());
  // A, B, C, the 300 B freed at 40 us, the 4700 B resident block.
  REQUIRE(t->num_tensors() == 5);
  auto c = ComputeMemoryCurve(*t);
  REQUIRE(c.ok());
  // After each op, as the allocator saw it: 6000, 8000, 8000 (C came and
  // went), 6700 (A and the 300 B freed; B stays to the end).
  const int64_t after[] = {6000, 8000, 8000, 6700};
  for (OpIndex i = 0; i < 4; ++i) {
    CHECK(t->op(i).allocator_bytes_in_use == after[i]);
    CHECK(c->recorded_after_bytes()[i] == after[i]);
  }
  CHECK(c->allocator().max_abs_diff_bytes == 0);
  // The peak: 8500 during the child aten::empty, as Kineto's own peak.
  CHECK(c->peak_unswapped().bytes == 8500);
  CHECK(c->peak_unswapped().op == 2);
  CHECK(Attr(*t, "import.allocator_peak_bytes") == "8500");
  CHECK(Attr(*t, "import.memory_device") == "cuda:0");
}

TEST_CASE("Kineto: older traces without addresses or totals") {
  // "Operator" category, string tids, no Addr, no Total Allocated: frees
  // pair with the last live allocation of the same size.
  const std::string k = R"({"traceEvents": [
    {"ph": "X", "cat": "Operator", "name": "ProfilerStep#5", "pid": "9", "tid": "9", "ts": 0, "dur": 100},
    {"ph": "X", "cat": "Operator", "name": "aten::add", "pid": "9", "tid": "9", "ts": 10, "dur": 10},
    {"ph": "X", "cat": "Operator", "name": "aten::relu", "pid": "9", "tid": "9", "ts": 30, "dur": 10},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": "9", "tid": "9", "ts": 11, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": "9", "tid": "9", "ts": 31, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 1024}},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": "9", "tid": "9", "ts": 32, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -512}}]})";
  auto t = ImportText(k);
  REQUIRE(t.ok());
  REQUIRE(t->num_ops() == 2);
  CHECK(t->num_tensors() == 2);
  CHECK(Attr(*t, "import.note.no_total_allocated_figures") == "1");
  CHECK_FALSE(t->has_allocator_bytes());
  auto c = ComputeMemoryCurve(*t);
  REQUIRE(c.ok());
  CHECK(c->peak_unswapped().bytes == 1536);  // 512 + 1024 during aten::relu
  // Host time: no device activity in the trace.
  CHECK(t->op(0).duration_ns == 10'000);
}

TEST_CASE("Kineto: iterations from Optimizer.step# when there is no ProfilerStep#") {
  const std::string k = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
    {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, "tid": 1, "ts": 10, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1, "tid": 1, "ts": 12, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 30, "dur": 5},
    {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, "tid": 1, "ts": 40, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1, "tid": 1, "ts": 42, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 60, "dur": 5}]})";
  auto t = ImportText(k);
  REQUIRE(t.ok());
  REQUIRE(t->num_iterations() == 2);
  CHECK(t->op(1).phase == Phase::kOptimizer);
  CHECK(Attr(*t, "import.note.ops_after_last_optimizer_step") == "1");
  // The second iteration runs from the end of the first step (20 us) to the
  // end of the second (50 us).
  CHECK(t->iteration(1).wall_time_ns == 30'000);
}

TEST_CASE("Kineto: malformed inputs") {
  SECTION("not a trace") {
    auto t = ImportText(R"({"schemaVersion": 1})", "kineto");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message() == "mem: no \"traceEvents\" array: not a Kineto trace [kineto-schema]");
  }
  SECTION("time overflow") {
    auto t = ImportText(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 9223372036854775, "dur": 1e30}]})");
    REQUIRE_FALSE(t.ok());
    CHECK(std::string(t.status().message()).find("time out of range [kineto-schema]") != std::string::npos);
  }
}

}  // namespace
}  // namespace swapplan
