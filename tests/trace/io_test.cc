// Round trips between the binary and JSON forms, gzip, and atomic writes.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

// Field-by-field equality of two traces (ids compared through trace_id).
void RequireSameTrace(const Trace& a, const Trace& b) {
  REQUIRE(a.num_tensors() == b.num_tensors());
  REQUIRE(a.num_ops() == b.num_ops());
  REQUIRE(a.num_iterations() == b.num_iterations());
  REQUIRE(a.events().size() == b.events().size());
  CHECK(a.op_names() == b.op_names());
  CHECK(a.metadata().device_name == b.metadata().device_name);
  CHECK(a.metadata().device_memory_bytes == b.metadata().device_memory_bytes);
  CHECK(a.metadata().h2d_bandwidth_bytes_per_s == b.metadata().h2d_bandwidth_bytes_per_s);
  CHECK(a.metadata().attributes == b.metadata().attributes);
  CHECK(a.metadata().model_layers == b.metadata().model_layers);
  for (TensorId t = 0; t < a.num_tensors(); ++t) {
    const TensorInfo& x = a.tensor(t);
    const TensorInfo& y = b.tensor(t);
    CHECK(x.trace_id == y.trace_id);
    CHECK(x.size_bytes == y.size_bytes);
    CHECK(x.dtype == y.dtype);
    CHECK(x.kind == y.kind);
    CHECK(x.persistent == y.persistent);
    CHECK(x.storage_id == y.storage_id);
    CHECK(x.device_address == y.device_address);
    CHECK(std::vector<int64_t>(a.shape(t).begin(), a.shape(t).end()) ==
          std::vector<int64_t>(b.shape(t).begin(), b.shape(t).end()));
    CHECK(a.tensor_name(t) == b.tensor_name(t));
    CHECK(a.lifetime(t).alloc_op == b.lifetime(t).alloc_op);
    CHECK(a.lifetime(t).free_op == b.lifetime(t).free_op);
  }
  for (OpIndex i = 0; i < a.num_ops(); ++i) {
    const OpInfo& x = a.op(i);
    const OpInfo& y = b.op(i);
    CHECK(x.name == y.name);
    CHECK(x.phase == y.phase);
    CHECK(x.duration_ns == y.duration_ns);
    CHECK(x.allocator_bytes_in_use == y.allocator_bytes_in_use);
    CHECK(x.stack_id == y.stack_id);
    CHECK(x.micro_batch == y.micro_batch);
    CHECK(x.layer == y.layer);
    CHECK(std::vector<TensorId>(a.uses(i).begin(), a.uses(i).end()) ==
          std::vector<TensorId>(b.uses(i).begin(), b.uses(i).end()));
    CHECK(x.num_inputs == y.num_inputs);
  }
  for (size_t e = 0; e < a.events().size(); ++e) {
    CHECK(a.events()[e].op == b.events()[e].op);
    CHECK(a.events()[e].tensor == b.events()[e].tensor);
    CHECK(a.events()[e].kind == b.events()[e].kind);
    CHECK(a.events()[e].passive == b.events()[e].passive);
  }
  for (int32_t it = 0; it < a.num_iterations(); ++it) {
    CHECK(a.iteration(it).wall_time_ns == b.iteration(it).wall_time_ns);
    CHECK(a.iteration(it).op_begin == b.iteration(it).op_begin);
  }
}

constexpr const char* kRich = R"({"format": "swapplan-trace", "format_version": 1,
  "metadata": {"device_name": "ascend-910b", "device_memory_bytes": 68719476736,
               "h2d_bandwidth_bytes_per_s": 2.5e10, "d2h_bandwidth_bytes_per_s": 2.2e10,
               "framework": "pytorch 2.1", "recorder": "test", "recorder_version": "1",
               "model_name": "toy", "model_layers": 2, "attributes": {"batch": "4", "seq": "128"}},
  "op_names": ["aten::mm", "aten::add"],
  "tensors": [
    {"id": 10, "size_bytes": 4096, "dtype": "bfloat16", "shape": [32, 64], "kind": "PARAMETER",
     "name": "layers.0.w"},
    {"id": 11, "size_bytes": 256, "dtype": "float32", "shape": [64], "kind": "ACTIVATION",
     "storage_id": 3, "device_address": 140000000},
    {"id": 12, "size_bytes": 256, "kind": "GRADIENT", "persistent": true}],
  "iterations": [
    {"wall_time_ns": 5000, "ops": [
      {"name": "aten::mm", "phase": "FORWARD", "inputs": [10], "outputs": [11], "duration_ns": 10,
       "allocator_bytes_in_use": 4352, "stack_id": 9, "micro_batch": 0, "layer": 1},
      {"name": 1, "phase": "BACKWARD", "inputs": [11, 11], "outputs": [12]}],
     "memory_events": [{"op": 0, "kind": "SWAP_OUT", "tensor": 11, "passive": true},
                       {"op": 1, "kind": "SWAP_IN", "tensor": 11, "passive": true}]},
    {"wall_time_ns": 4000, "ops": [
      {"name": "aten::add", "phase": "OPTIMIZER", "inputs": [10, 12], "outputs": [10]}]}]})";

TEST_CASE("JSON -> binary -> JSON round trip keeps everything", "[trace][io]") {
  Trace a = testing::TraceFromJson(kRich);
  std::string bin = TraceToBinary(a);
  absl::StatusOr<Trace> b = ParseTraceBinary(bin, "rt.trace");
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  RequireSameTrace(a, *b);
  std::string json = TraceToJson(*b);
  absl::StatusOr<Trace> c = ParseTraceJson(json, "rt.json");
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  RequireSameTrace(a, *c);
  // Serializations are deterministic.
  CHECK(TraceToJson(*c) == json);
  CHECK(TraceToBinary(*c) == bin);
}

TEST_CASE("files round trip in all four forms", "[trace][io]") {
  Trace a = testing::TraceFromJson(kRich);
  for (const char* name : {"t.trace", "t.trace.gz", "t.json", "t.json.gz"}) {
    SECTION(name) {
      std::string path = testing::TempDir() + "/" + name;
      REQUIRE(WriteTrace(a, path).ok());
      absl::StatusOr<Trace> b = ReadTrace(path);
      INFO(b.status().ToString());
      REQUIRE(b.ok());
      RequireSameTrace(a, *b);
      // Compression is sniffed from content: a gzip file is really gzip.
      std::ifstream in(path, std::ios::binary);
      unsigned char magic[2] = {0, 0};
      in.read(reinterpret_cast<char*>(magic), 2);
      bool is_gzip = magic[0] == 0x1f && magic[1] == 0x8b;
      CHECK(is_gzip == (std::string(name).size() > 3 &&
                        std::string(name).substr(std::string(name).size() - 3) == ".gz"));
    }
  }
}

TEST_CASE("random traces round trip through the binary form", "[trace][io]") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    INFO("seed " << seed);
    testing::RandomTraceOptions o;
    o.iterations = 1 + static_cast<int32_t>(seed % 3);
    Trace a = testing::RandomTrace(seed, o);
    TraceWriteOptions w;
    w.ops_per_chunk = 7;
    w.tensors_per_chunk = 5;
    w.events_per_chunk = 3;
    absl::StatusOr<Trace> b = ParseTraceBinary(TraceToBinary(a, w), "r.trace");
    REQUIRE(b.ok());
    RequireSameTrace(a, *b);
  }
}

TEST_CASE("a failed write leaves no file behind", "[trace][io]") {
  Trace a = testing::TraceFromJson(kRich);
  std::string dir = testing::TempDir() + "/no_such_dir";
  absl::Status st = WriteTrace(a, dir + "/x.trace");
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("writing over an existing file replaces it atomically", "[trace][io]") {
  Trace a = testing::TraceFromJson(kRich);
  std::string path = testing::TempDir() + "/replace.trace";
  REQUIRE(WriteTrace(a, path).ok());
  REQUIRE(WriteTrace(a, path).ok());
  CHECK(ReadTrace(path).ok());
  // No temporaries left next to it.
  int others = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing::TempDir())) {
    if (e.path().filename().string().rfind("replace.trace.tmp", 0) == 0) ++others;
  }
  CHECK(others == 0);
}

}  // namespace
}  // namespace swapplan
