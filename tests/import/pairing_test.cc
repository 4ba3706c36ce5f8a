// Execution trace + Kineto trace of the same run (--kineto): durations and
// allocator figures by record-function id, checked by name.
#include <fstream>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "import/import_test_util.h"
#include "support/test_traces.h"

namespace swapplan {
namespace {

using testing::Attr;
using testing::DataFile;
using testing::ImportText;

// Kineto ops for the nodes of small_et.json (rf ids 3-16), each op `dur`
// us long starting at `ts`; kernels of `kernel_us` launched by those given.
std::string KinetoFor(bool with_rf_ids, bool wrong_names) {
  struct Op {
    const char* name;
    int rf, ts, dur, kernel_us;
  };
  const Op ops[] = {{"ProfilerStep#0", 3, 0, 100, 0},  {"## forward ##", 4, 1, 40, 0},
                    {"aten::linear", 5, 2, 10, 0},     {"aten::t", 6, 3, 1, 0},
                    {"aten::mm", 7, 5, 5, 5},          {"aten::addmm", 8, 20, 10, 7},
                    {"aten::empty", 9, 21, 1, 0},      {"## backward ##", 10, 45, 20, 0},
                    {"aten::mul", 11, 46, 5, 2},       {"aten::empty", 12, 52, 1, 0},
                    {"Optimizer.step#SGD.step", 13, 70, 20, 0},
                    {"aten::add_", 14, 71, 5, 1},      {"ProfilerStep#1", 15, 110, 50, 0},
                    {"aten::relu", 16, 111, 5, 4}};
  std::string ev;
  int corr = 100;
  for (const Op& o : ops) {
    std::string name = wrong_names && o.rf >= 5 ? "aten::other" : o.name;
    bool annotation = name[0] == '#' || name.rfind("Profiler", 0) == 0 || name.rfind("Optim", 0) == 0;
    absl::StrAppend(&ev, ev.empty() ? "" : ",\n", R"({"ph": "X", "cat": ")",
                    annotation ? "user_annotation" : "cpu_op", R"(", "name": ")", name,
                    R"(", "pid": 1, "tid": 1, "ts": )", o.ts, R"(, "dur": )", o.dur,
                    R"(, "args": {"External id": )", o.rf + 1000,
                    with_rf_ids ? absl::StrCat(R"(, "Record function id": )", o.rf) : "", "}}");
    if (o.kernel_us > 0) {
      // aten::addmm launches after its child aten::empty (21-22).
      int launch = o.rf == 8 ? 25 : o.ts + o.dur - 1;
      absl::StrAppend(&ev, ",\n", R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": )",
                      launch, R"(, "dur": 1, "args": {"correlation": )", corr, "}},\n",
                      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )",
                      launch + 1, R"(, "dur": )", o.kernel_us, R"(, "args": {"correlation": )",
                      corr, "}}");
      ++corr;
    }
  }
  absl::StrAppend(&ev, ",\n", R"({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 6, "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 100, "Total Allocated": 300}})");
  return absl::StrCat(R"({"deviceProperties": [{"id": 0, "name": "Paired GPU", "totalGlobalMem": 4096}], "traceEvents": [)", ev, "]}");
}

std::string WriteTemp(const std::string& name, const std::string& content) {
  std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

TEST_CASE("ET + Kineto: durations from the kernels each op launched, by Record function id") {
  ImportOptions o;
  o.kineto_path = WriteTemp("paired_kineto.json", KinetoFor(/*with_rf_ids=*/true, false));
  auto t = ImportText(DataFile("import/small_et.json"), "", o);
  REQUIRE(t.ok());
  // Ops: t, mm, empty, addmm, mul, empty, add_, relu.
  const int64_t expected[] = {0, 5000, 0, 7000, 2000, 0, 1000, 4000};
  for (OpIndex i = 0; i < 8; ++i) CHECK(t->op(i).duration_ns == expected[i]);
  CHECK(t->iteration(0).wall_time_ns == 100'000);  // ProfilerStep#0 in Kineto
  CHECK(t->iteration(1).wall_time_ns == 50'000);
  CHECK(Attr(*t, "import.kineto_paired_ops") == "8 of 8");
  CHECK(Attr(*t, "import.durations").find("paired by Record function id = rf_id") !=
        std::string::npos);
  CHECK(t->metadata().device_name == "Paired GPU");
  // Total Allocated after each op: 200 before the allocation at 6 us (300 -
  // 100), 300 after it: aten::t ends at 4 us, aten::mm at 10 us.
  CHECK(t->op(0).allocator_bytes_in_use == 200);
  CHECK(t->op(1).allocator_bytes_in_use == 300);
}

TEST_CASE("ET + Kineto: External id when Kineto has no Record function id") {
  // External ids are rf_id + 1000: found by aligning the names.
  ImportOptions o;
  o.kineto_path = WriteTemp("paired_kineto_ext.json", KinetoFor(/*with_rf_ids=*/false, false));
  auto t = ImportText(DataFile("import/small_et.json"), "", o);
  REQUIRE(t.ok());
  CHECK(t->op(1).duration_ns == 5000);
  CHECK(Attr(*t, "import.durations").find("External id aligned with rf_id on names") !=
        std::string::npos);
}

TEST_CASE("ET + Kineto of another run: refused, with the figures") {
  ImportOptions o;
  o.kineto_path = WriteTemp("unpaired_kineto.json", KinetoFor(true, /*wrong_names=*/true));
  auto t = ImportText(DataFile("import/small_et.json"), "", o);
  REQUIRE_FALSE(t.ok());
  INFO(t.status().message());
  CHECK(std::string(t.status().message()).find("does not pair with mem: paired by Record function "
                                               "id = rf_id; the best alignment agrees on 14% of "
                                               "14 op names") != std::string::npos);
  CHECK(std::string(t.status().message()).find("[kineto-pairing]") != std::string::npos);
}

TEST_CASE("--kineto with a trace that is not an execution trace is a usage error") {
  ImportOptions o;
  o.kineto_path = WriteTemp("k2.json", KinetoFor(true, false));
  auto t = ImportText(DataFile("import/small_kineto.json"), "", o);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message() ==
        "mem is a kineto trace; a Kineto trace (--kineto) pairs only with an execution trace "
        "(et-json or chakra-et)");
}

}  // namespace
}  // namespace swapplan
