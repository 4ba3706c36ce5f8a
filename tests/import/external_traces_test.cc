// The ten traces in ../shared/external-traces (README there: provenance,
// licenses), one test each: they import, pass validation (ReadAnyTrace
// returns only validated traces), have the expected iterations, phases and
// tensor kinds, and give a memory curve. Kineto traces and the memory
// timeline that record allocator totals are checked against them: the
// rebuilt curve equals the source's figure after every op, and the peaks
// agree. Skipped, with a message, when the directory is absent (set
// SWAPPLAN_EXTERNAL_TRACES_DIR).
#include <fstream>
#include <optional>

#include <catch2/catch.hpp>

#include "absl/strings/numbers.h"
#include "import/import_test_util.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"

namespace swapplan {
namespace {

using testing::Attr;
using testing::OpsPerPhase;
using testing::TensorsOfKind;

bool Available(const std::string& name, std::string* path) {
  *path = testing::ExternalTracePath(name);
  if (std::ifstream(*path).good()) return true;
  WARN("skipped: " << *path << " not found (set SWAPPLAN_EXTERNAL_TRACES_DIR)");
  return false;
}

struct Loaded {
  Trace trace;
  MemoryCurve curve;
};

// Imports `name`; REQUIREs success and a curve.
std::optional<Loaded> Load(const std::string& name, const ImportOptions& options = {}) {
  std::string path;
  if (!Available(name, &path)) return std::nullopt;
  absl::StatusOr<Trace> t = ReadAnyTrace(path, options);
  INFO(t.status().message());
  REQUIRE(t.ok());
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(*t);
  REQUIRE(c.ok());
  return Loaded{std::move(*t), std::move(*c)};
}

int64_t AttrInt(const Trace& t, const std::string& key) {
  int64_t v = -1;
  return absl::SimpleAtoi(Attr(t, key), &v) ? v : -1;
}

TEST_CASE("external: param-linear_et (ET 1.0.1, one SGD step)") {
  auto l = Load("param-linear_et.json.gz");
  if (!l) return;
  const Trace& t = l->trace;
  CHECK(Attr(t, "import.format") == "et-json");
  CHECK(t.num_iterations() == 1);  // one Optimizer.step#, no ProfilerStep#
  CHECK(t.num_ops() == 411);
  CHECK(OpsPerPhase(t, Phase::kForward) == 92);
  CHECK(OpsPerPhase(t, Phase::kBackward) == 234);  // the autograd thread
  CHECK(OpsPerPhase(t, Phase::kOptimizer) == 43);
  CHECK(OpsPerPhase(t, Phase::kOther) == 42);      // Optimizer.zero_grad#
  CHECK(TensorsOfKind(t, TensorKind::kParameter) == 42);  // 21 Linear layers x (W, b)
  CHECK(TensorsOfKind(t, TensorKind::kGradient) > 0);
  CHECK(TensorsOfKind(t, TensorKind::kActivation) > 0);
  // Storages an op makes and a child fills first (aten::addmm's output under
  // its aten::copy_) are allocated there, not resident before the trace, and
  // gradients live to the end of the iteration (.grad holds them until the
  // next zero_grad): docs/importers.md. Before both: 232960004.
  CHECK(l->curve.peak_unswapped().bytes == 268697600);
  CHECK(l->curve.peak_unswapped().phase == Phase::kBackward);
}

TEST_CASE("external: param-resnet_et (ET 1.1.0-chakra, ProfilerStep#6-8, ## annotations ##)") {
  auto l = Load("param-resnet_et.json.gz");
  if (!l) return;
  const Trace& t = l->trace;
  CHECK(t.num_iterations() == 3);
  CHECK(Attr(t, "import.iterations") == "ProfilerStep#6 .. #8");
  for (int32_t it = 0; it < 3; ++it) CHECK(t.iteration(it).num_ops() == 3109);
  CHECK(OpsPerPhase(t, Phase::kForward) == 3732);
  CHECK(OpsPerPhase(t, Phase::kBackward) == 4140);
  CHECK(OpsPerPhase(t, Phase::kOptimizer) == 1455);
  CHECK(TensorsOfKind(t, TensorKind::kParameter) == 161);
  CHECK(TensorsOfKind(t, TensorKind::kOptimizerState) == 161);  // SGD momentum
  CHECK(TensorsOfKind(t, TensorKind::kActivation) > 0);
  CHECK(l->curve.peak_unswapped().bytes == 3089966376);  // 8 B: as param-linear
}

TEST_CASE("external: chakra-1.0.2-chakra.0.0.4_et (ET JSON, all-gather test)") {
  auto l = Load("chakra-1.0.2-chakra.0.0.4_et.json.gz");
  if (!l) return;
  const Trace& t = l->trace;
  CHECK(Attr(t, "import.schema") == "1.0.2-chakra.0.0.4");
  CHECK(t.num_iterations() == 1);
  CHECK(t.num_ops() == 190);
  CHECK(OpsPerPhase(t, Phase::kForward) == 190);  // no training step in it
  // Scalars on cuda:0 (4 and 8 B): 20 B at most at once.
  CHECK(l->curve.peak_unswapped().bytes == 20);
}

TEST_CASE("external: hta-simple_add_et (ET 1.0.1, PARAM benchmark)") {
  auto l = Load("hta-simple_add_et.json.gz");
  if (!l) return;
  CHECK(l->trace.num_iterations() == 1);
  CHECK(l->trace.num_ops() == 16);
  CHECK(l->curve.peak_unswapped().bytes == 786432);  // three 256x256 float32
}

TEST_CASE("external: hta-simple_add ET + Kineto pair by External id = rf_id") {
  std::string kineto;
  if (!Available("hta-simple_add_kineto.json.gz", &kineto)) return;
  ImportOptions o;
  o.kineto_path = kineto;
  auto l = Load("hta-simple_add_et.json.gz", o);
  if (!l) return;
  CHECK(Attr(l->trace, "import.kineto_paired_ops") == "16 of 16");
  CHECK(l->trace.metadata().device_name == "NVIDIA A100-PG509-200");
}

TEST_CASE("external: param-linear ET + Kineto pair by aligning External ids") {
  std::string kineto;
  if (!Available("param-linear_kineto.json.gz", &kineto)) return;
  ImportOptions o;
  o.kineto_path = kineto;
  auto l = Load("param-linear_et.json.gz", o);
  if (!l) return;
  CHECK(Attr(l->trace, "import.kineto_paired_ops") == "411 of 411");
  CHECK(l->trace.has_op_durations());
}

TEST_CASE("external: param-resnet ET and Kineto are not one run and do not pair") {
  std::string et, kineto;
  if (!Available("param-resnet_et.json.gz", &et) ||
      !Available("param-resnet_kineto.json.gz", &kineto)) {
    return;
  }
  ImportOptions o;
  o.kineto_path = kineto;
  auto t = ReadAnyTrace(et, o);
  REQUIRE_FALSE(t.ok());
  CHECK(std::string(t.status().message()).find("[kineto-pairing]") != std::string::npos);
}

TEST_CASE("external: param-linear_kineto (no memory events, 40 SGD steps)") {
  auto l = Load("param-linear_kineto.json.gz");
  if (!l) return;
  CHECK(l->trace.num_iterations() == 40);
  CHECK(l->trace.num_tensors() == 0);
  CHECK(OpsPerPhase(l->trace, Phase::kBackward) > 0);
  CHECK(OpsPerPhase(l->trace, Phase::kOptimizer) > 0);
}

TEST_CASE("external: param-resnet_kineto (no memory events, 30 SGD steps)") {
  auto l = Load("param-resnet_kineto.json.gz");
  if (!l) return;
  CHECK(l->trace.num_iterations() == 30);
  CHECK(OpsPerPhase(l->trace, Phase::kForward) > 0);
  CHECK(OpsPerPhase(l->trace, Phase::kBackward) > 0);
}

TEST_CASE("external: hta-simple_add_kineto") {
  auto l = Load("hta-simple_add_kineto.json.gz");
  if (!l) return;
  CHECK(l->trace.num_iterations() == 1);
  CHECK(l->trace.num_ops() == 16);
  CHECK(l->trace.has_op_durations());
}

TEST_CASE("external: hta-df_index_resolver_kineto matches its own Total Allocated") {
  auto l = Load("hta-df_index_resolver_kineto.json.gz");
  if (!l) return;
  const Trace& t = l->trace;
  CHECK(t.num_iterations() == 5);  // ProfilerStep#2-6
  CHECK(Attr(t, "import.memory_device") == "cuda:1");
  CHECK(t.metadata().device_name == "Tesla V100-SXM2-32GB");
  CHECK(TensorsOfKind(t, TensorKind::kActivation) > 0);
  CHECK(OpsPerPhase(t, Phase::kOptimizer) > 0);
  // Every op: rebuilt bytes after it == Kineto's Total Allocated.
  CHECK(l->curve.allocator().ops_compared == t.num_ops());
  CHECK(l->curve.allocator().max_abs_diff_bytes == 0);
  // And the peak equals Kineto's own (6,629,508,096 B).
  CHECK(l->curve.peak_unswapped().bytes == AttrInt(t, "import.allocator_peak_bytes"));
  CHECK(l->curve.peak_unswapped().bytes == 6629508096);
}

TEST_CASE("external: kineto-resnet50_worker0 (older Operator format, no Addr, no totals)") {
  auto l = Load("kineto-resnet50_worker0.pt.trace.json.gz");
  if (!l) return;
  const Trace& t = l->trace;
  CHECK(t.num_iterations() == 6);  // ProfilerStep#5-10
  CHECK(t.num_tensors() == 4110);
  CHECK(Attr(t, "import.note.no_total_allocated_figures") == "1");
  CHECK(TensorsOfKind(t, TensorKind::kActivation) > 0);
  CHECK(OpsPerPhase(t, Phase::kBackward) > 0);
  CHECK(OpsPerPhase(t, Phase::kOptimizer) > 0);
  CHECK(l->curve.peak_unswapped().bytes == 2791636480);
}

TEST_CASE("external: hta-memory_timeline (raw timeline rows)") {
  auto l = Load("hta-memory_timeline.raw.gz");
  if (!l) return;
  const Trace& t = l->trace;
  CHECK(Attr(t, "import.format") == "memory-timeline");
  CHECK(t.num_iterations() == 5);
  for (TensorKind k : {TensorKind::kParameter, TensorKind::kOptimizerState, TensorKind::kInput,
                       TensorKind::kActivation, TensorKind::kGradient, TensorKind::kTemporary}) {
    CHECK(TensorsOfKind(t, k) > 0);
  }
  CHECK(l->curve.allocator().max_abs_diff_bytes == 0);
  CHECK(l->curve.peak_unswapped().bytes == AttrInt(t, "import.allocator_peak_bytes"));
  CHECK(l->curve.peak_unswapped().bytes == 3082832104);
}

}  // namespace
}  // namespace swapplan
