// torch.profiler memory timelines and torch.cuda memory snapshots.
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "import/import_test_util.h"
#include "swapplan/curve/memory_curve.h"

namespace swapplan {
namespace {

using testing::Attr;
using testing::DataFile;
using testing::ImportText;

// [ts_ns, action, bytes, category]; actions 1 PREEXISTING 2 CREATE
// 3 INCREMENT_VERSION 4 DESTROY; categories 0 PARAMETER 1 OPTIMIZER_STATE
// 3 TEMPORARY 4 ACTIVATION 5 GRADIENT.
const char kTimeline[] = R"([[-1, 1, 400, 0],
  [1000, 2, 100, 4], [1000, 2, 50, 3],
  [2000, 4, -50, 3],
  [3000, 2, 200, 5],
  [4000, 4, -100, 4],
  [5000, 2, 400, 1], [5000, 3, -400, 0], [5000, 3, 400, 0],
  [6000, 2, 100, 4]])";

TEST_CASE("Memory timeline: one op per timestamp, kinds from categories, exact curve") {
  auto t = ImportText(kTimeline);
  REQUIRE(t.ok());
  CHECK(Attr(*t, "import.format") == "memory-timeline");
  // A forward activation after optimizer work starts iteration 1.
  REQUIRE(t->num_iterations() == 2);
  REQUIRE(t->num_ops() == 6);
  const Phase phases[] = {Phase::kForward,  Phase::kForward,   Phase::kBackward,
                          Phase::kBackward, Phase::kOptimizer, Phase::kForward};
  for (OpIndex i = 0; i < 6; ++i) CHECK(t->op(i).phase == phases[i]);
  // Durations: time to the next timestamp (1000 ns), 0 for the last.
  CHECK(t->op(0).duration_ns == 1000);
  CHECK(t->op(5).duration_ns == 0);
  const TensorKind kinds[] = {TensorKind::kParameter, TensorKind::kActivation,
                              TensorKind::kTemporary, TensorKind::kGradient,
                              TensorKind::kOptimizerState, TensorKind::kActivation};
  REQUIRE(t->num_tensors() == 6);
  for (TensorId i = 0; i < 6; ++i) CHECK(t->tensor(i).kind == kinds[i]);
  auto c = ComputeMemoryCurve(*t);
  REQUIRE(c.ok());
  // During each op: 400+100+50, the temporary until it is destroyed, +200,
  // the activation until destroyed, +400 (optimizer state), +100.
  const int64_t expected[] = {550, 550, 700, 700, 1000, 1100};
  for (OpIndex i = 0; i < 6; ++i) CHECK(c->unswapped_bytes()[i] == expected[i]);
  CHECK(c->allocator().max_abs_diff_bytes == 0);
  CHECK(Attr(*t, "import.allocator_peak_bytes") == "1100");
}

TEST_CASE("Memory timeline: malformed rows") {
  auto bad_action = ImportText("[[1, 7, 10, 0]]");
  REQUIRE_FALSE(bad_action.ok());
  CHECK(bad_action.status().message() == "mem: row 0: action 7 is not 1-4 [timeline-schema]");
  auto short_row = ImportText("[[1, 2, 10]]");
  REQUIRE_FALSE(short_row.ok());
  CHECK(short_row.status().message() ==
        "mem: byte 11, at $[0]: a row has 3 values; expected [ts, action, bytes, category] "
        "[timeline-schema]");
  auto backwards = ImportText("[[5, 2, 10, 0], [4, 2, 10, 0]]");
  REQUIRE_FALSE(backwards.ok());
  CHECK(backwards.status().message() ==
        "mem: row 1: timestamp 4 is before the previous row's 5 [timeline-schema]");
}

// tests/data/import/snapshot_*: written by tests/import/make_snapshot_fixtures.py
// (hand-built, no CUDA device recorded them; see that script).
void CheckTrainingSnapshot(const Trace& t) {
  // 29 ring entries: segment_alloc; iteration 0: 3 allocs, the loss freed
  // (requested, completed), g1, a2 freed, g2, a1 freed, m1, m2 (13);
  // iteration 1: 5, the old gradients freed (4), 6.
  REQUIRE(t.num_ops() == 29);
  REQUIRE(t.num_iterations() == 2);  // a new one after the optimizer's allocations
  // 12 allocations in the ring + the two parameters resident from before it.
  REQUIRE(t.num_tensors() == 14);
  auto c = ComputeMemoryCurve(t);
  REQUIRE(c.ok());
  // Peak when iteration 1 allocates its loss: parameters 8192 + old
  // gradients 8192 + momentum 8192 + a1 1024 + a2 2048 + loss 512.
  CHECK(c->peak_unswapped().bytes == 28160);
  CHECK(c->peak_unswapped().iteration == 1);
  CHECK(c->peak_unswapped().local_op == 2);
  // The segments' allocated_size (24576) equals the rebuilt bytes after the
  // last op.
  CHECK(c->allocator().ops_compared == 1);
  CHECK(c->allocator().max_abs_diff_bytes == 0);
  CHECK(testing::TensorsOfKind(t, TensorKind::kActivation) == 4);  // a1, a2 of both iterations
  CHECK(testing::TensorsOfKind(t, TensorKind::kOptimizerState) == 2);
  CHECK(testing::TensorsOfKind(t, TensorKind::kGradient) == 4);
  CHECK(t.op_name_at(1) == "alloc model.py:10:forward");
  CHECK(t.op(1).stack_id >= 0);
}

TEST_CASE("Memory snapshot: pickle (protocols 4 and 2) and JSON give the same trace") {
  for (const char* f : {"import/snapshot_v2.pickle", "import/snapshot_v2_protocol2.pickle",
                        "import/snapshot_v2.json"}) {
    INFO(f);
    auto t = ImportText(DataFile(f));
    REQUIRE(t.ok());
    CHECK(Attr(*t, "import.format") == "memory-snapshot");
    CheckTrainingSnapshot(*t);
  }
}

TEST_CASE("Memory snapshot: torch 1.13 list of segments, no history ring") {
  auto t = ImportText(DataFile("import/snapshot_113.pickle"));
  REQUIRE(t.ok());
  // Three active blocks (4096, 4096, 2048), one op each; the inactive one is
  // free space.
  REQUIRE(t->num_ops() == 3);
  auto c = ComputeMemoryCurve(*t);
  REQUIRE(c.ok());
  CHECK(c->peak_unswapped().bytes == 10240);
  CHECK(Attr(*t, "import.source") == "segments only (no allocation history)");
}

TEST_CASE("Memory snapshot: hostile pickles are refused, nothing runs") {
  auto global = ImportText(DataFile("import/pickle_global.pickle"));
  REQUIRE_FALSE(global.ok());
  CHECK(global.status().message() ==
        "mem: pickle byte 2: opcode 0x63 (GLOBAL) is refused: snapshot pickles hold plain data "
        "only, and this unpickler never imports or calls anything [pickle-opcode]");
  auto huge = ImportText(DataFile("import/pickle_huge_string.pickle"));
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().message() ==
        "mem: pickle byte 2: a string declares 2147483647 bytes; the input ends first "
        "[declared-size]");
  auto cycle = ImportText(DataFile("import/pickle_cycle.pickle"));
  REQUIRE_FALSE(cycle.ok());
  CHECK(cycle.status().message() == "mem: segments[0]: is not a dict [snapshot-schema]");
  // STACK_GLOBAL + REDUCE, as pickle.dumps of a class instance writes them.
  static constexpr char kStackGlobal[] =
      "\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system\x93.";
  auto stack_global =
      ImportText(std::string(kStackGlobal, sizeof(kStackGlobal) - 1),
                 "memory-snapshot");
  REQUIRE_FALSE(stack_global.ok());
  CHECK(std::string(stack_global.status().message()).find("(STACK_GLOBAL) is refused") !=
        std::string::npos);
  auto no_stop = ImportText(std::string("\x80\x04]", 3), "memory-snapshot");
  REQUIRE_FALSE(no_stop.ok());
  CHECK(no_stop.status().message() ==
        "mem: pickle byte 3: the pickle ends before its STOP opcode [pickle-truncated]");
  auto underflow = ImportText(std::string("\x80\x04\x61.", 4), "memory-snapshot");
  REQUIRE_FALSE(underflow.ok());
  CHECK(underflow.status().message() == "mem: pickle byte 2: stack underflow [pickle-schema]");
}

}  // namespace
}  // namespace swapplan
