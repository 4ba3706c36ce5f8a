// Regression tests of issue 19 for the trace readers and the trace model:
// each class of malformed input that used to crash, hang or be accepted is
// refused with its exact one-line message and rule tag. Binary cases mutate
// one record of a valid trace through the protobuf schema, so each test
// breaks exactly one rule.
#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "support/cli_runner.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/trace/builder.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/trace/stats.h"
#include "swapplan/util/error.h"
#include "trace.pb.h"

namespace swapplan {
namespace {

namespace pb = ::swapplan::proto;
using testing::DataPath;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// The message after "<source>: ", checking the rule payload matches the
// bracketed tag and the message is one line.
std::string MessageOf(const absl::Status& st, const std::string& source) {
  std::string m(st.message());
  CHECK(m.find('\n') == std::string::npos);
  REQUIRE(m.rfind(source + ": ", 0) == 0);
  return m.substr(source.size() + 2);
}

// A minimal valid JSON trace with `tensors` and `ops` spliced in.
std::string Json(const std::string& tensors, const std::string& ops,
                 const std::string& iteration_extra = "") {
  return absl::StrCat(R"({"tensors": [)", tensors, R"(], "iterations": [{"ops": [)", ops, "]",
                      iteration_extra, "}]}");
}

// --- zero iterations ---------------------------------------------------------

TEST_CASE("a trace without iterations is refused", "[trace][robustness]") {
  absl::StatusOr<Trace> t = ParseTraceJson(R"({"tensors": [], "iterations": []})", "zero.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "zero.json") ==
        "the trace has no iterations (at least one is required) [no-iterations]");
  CHECK(RuleOf(t.status()) == std::optional<std::string>("no-iterations"));
  CHECK(ExitCode(t.status()) == 2);
}

// --- binary records, mutated through the schema ------------------------------

std::vector<pb::TraceRecord> Records(const std::string& binary) {
  std::vector<pb::TraceRecord> out;
  google::protobuf::io::ArrayInputStream array(binary.data(), static_cast<int>(binary.size()));
  google::protobuf::io::CodedInputStream in(&array);
  std::string magic;
  REQUIRE(in.ReadString(&magic, static_cast<int>(kTraceMagic.size())));
  uint32_t size = 0;
  while (in.ReadVarint32(&size)) {
    std::string buf;
    REQUIRE(in.ReadString(&buf, static_cast<int>(size)));
    REQUIRE(out.emplace_back().ParseFromString(buf));
  }
  return out;
}

std::string Binary(const std::vector<pb::TraceRecord>& records) {
  std::string out(kTraceMagic);
  {
    google::protobuf::io::StringOutputStream s(&out);
    google::protobuf::io::CodedOutputStream coded(&s);
    for (const pb::TraceRecord& r : records) {
      coded.WriteVarint32(static_cast<uint32_t>(r.ByteSizeLong()));
      REQUIRE(r.SerializeToCodedStream(&coded));
    }
  }
  return out;
}

// toy_valid.json plus four memory events (ALLOC 3 at op 0, ALLOC 4 at op 1,
// FREE 4 after op 2, FREE 3 after op 3) as binary records: header, tensors,
// iteration_begin, ops, memory_events, iteration_end, end. `edit` changes
// them before parsing.
absl::StatusOr<Trace> MutatedBinary(const std::function<void(std::vector<pb::TraceRecord>&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(testing::ReadFile(DataPath("traces/toy_valid.json")));
  j["iterations"][0]["memory_events"] = nlohmann::json::parse(
      R"([{"op": 0, "kind": "ALLOC", "tensor": 3}, {"op": 1, "kind": "ALLOC", "tensor": 4},
          {"op": 2, "kind": "FREE", "tensor": 4}, {"op": 3, "kind": "FREE", "tensor": 3}])");
  Trace t = testing::TraceFromJson(j.dump(), "toy_events.json");
  std::vector<pb::TraceRecord> records = Records(TraceToBinary(t));
  edit(records);
  return ParseTraceBinary(Binary(records), "m.trace");
}

pb::TraceRecord& First(std::vector<pb::TraceRecord>& records, pb::TraceRecord::RecordCase c) {
  for (pb::TraceRecord& r : records) {
    if (r.record_case() == c) return r;
  }
  FAIL("no such record");
  return records.front();
}

TEST_CASE("binary: the unmodified records parse", "[trace][robustness]") {
  absl::StatusOr<Trace> t = MutatedBinary([](auto&) {});
  INFO(t.status().ToString());
  CHECK(t.ok());
}

TEST_CASE("binary: negative and unknown enums are refused, not clamped", "[trace][robustness]") {
  // Records: 0 header, 1 tensors, 2 iteration_begin, 3 ops, 4 memory
  // events, 5 iteration_end, 6 end.
  SECTION("phase -1 (used to read as FORWARD)") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      First(r, pb::TraceRecord::kOps).mutable_ops()->mutable_ops(1)->set_phase(
          static_cast<pb::Phase>(-1));
    });
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(MessageOf(t.status(), "m.trace"),
               Catch::Matches(R"(record 3 \(byte \d+\): iteration 0, op 1: phase -1 is not a )"
                              R"(known phase \[bad-enum\])"));
  }
  SECTION("dtype 99") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      First(r, pb::TraceRecord::kTensors).mutable_tensors()->mutable_tensors(2)->set_dtype(
          static_cast<pb::DType>(99));
    });
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(MessageOf(t.status(), "m.trace"),
               Catch::Matches(R"(record 1 \(byte \d+\): tensor 3: dtype 99 is not a known dtype )"
                              R"(\[bad-enum\])"));
  }
  SECTION("tensor kind -5") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      First(r, pb::TraceRecord::kTensors).mutable_tensors()->mutable_tensors(0)->set_kind(
          static_cast<pb::TensorKind>(-5));
    });
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(MessageOf(t.status(), "m.trace"),
               Catch::EndsWith("tensor 1: kind -5 is not a known tensor kind [bad-enum]"));
  }
  SECTION("memory event kind -1") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      pb::MemoryEventChunk* c = First(r, pb::TraceRecord::kMemoryEvents).mutable_memory_events();
      c->mutable_events(0)->set_kind(static_cast<pb::MemoryEventKind>(-1));
    });
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(MessageOf(t.status(), "m.trace"),
               Catch::EndsWith("iteration 0, memory event of tensor 3 at op 0: kind -1 is not a "
                               "known memory event kind [bad-enum]"));
  }
  SECTION("op name id past int32") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      First(r, pb::TraceRecord::kOps).mutable_ops()->mutable_ops(0)->set_name_id(3000000000u);
    });
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(MessageOf(t.status(), "m.trace"),
               Catch::EndsWith("iteration 0, op 0: op name id 3000000000 is out of range "
                               "[unknown-op-name]"));
  }
}

TEST_CASE("binary: the end record's counts are compared", "[trace][robustness]") {
  struct Case {
    const char* what;
    std::function<void(pb::TraceEnd*)> edit;
    const char* message;
  };
  // toy_valid: 5 tensors, 1 iteration, 5 ops, 4 memory events.
  const Case cases[] = {
      {"ops", [](pb::TraceEnd* e) { e->set_num_ops(6); },
       "the end record counts 6 ops but the file holds 5 [count-mismatch]"},
      {"tensors", [](pb::TraceEnd* e) { e->set_num_tensors(4); },
       "the end record counts 4 tensors but the file holds 5 [count-mismatch]"},
      {"events", [](pb::TraceEnd* e) { e->set_num_memory_events(0); },
       "the end record counts 0 memory events but the file holds 4 [count-mismatch]"},
      {"iterations", [](pb::TraceEnd* e) { e->set_num_iterations(2); },
       "the end record counts 2 iterations but the file holds 1 [count-mismatch]"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      absl::StatusOr<Trace> t = MutatedBinary(
          [&](auto& r) { c.edit(First(r, pb::TraceRecord::kEnd).mutable_end()); });
      REQUIRE_FALSE(t.ok());
      CHECK_THAT(MessageOf(t.status(), "m.trace"), Catch::EndsWith(c.message));
      CHECK(RuleOf(t.status()) == std::optional<std::string>("count-mismatch"));
    }
  }
}

TEST_CASE("binary: INT64_MIN / INT32_MIN values are present, not absent", "[trace][robustness]") {
  SECTION("duration_ns = INT64_MIN") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      First(r, pb::TraceRecord::kOps).mutable_ops()->mutable_ops(2)->set_duration_ns(
          std::numeric_limits<int64_t>::min());
    });
    REQUIRE_FALSE(t.ok());
    CHECK(MessageOf(t.status(), "m.trace") ==
          "iteration 0, op 2 (loss_backward): duration_ns is -9223372036854775808; must be >= 0 "
          "[negative-value]");
  }
  SECTION("micro_batch = INT32_MIN") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      First(r, pb::TraceRecord::kOps).mutable_ops()->mutable_ops(0)->set_micro_batch(INT32_MIN);
    });
    REQUIRE_FALSE(t.ok());
    CHECK(MessageOf(t.status(), "m.trace") ==
          "iteration 0, op 0 (aten::linear): micro_batch is -2147483648; must be >= 0 "
          "[negative-value]");
  }
  SECTION("stack_id = -1") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      First(r, pb::TraceRecord::kOps).mutable_ops()->mutable_ops(1)->set_stack_id(-1);
    });
    REQUIRE_FALSE(t.ok());
    CHECK(MessageOf(t.status(), "m.trace") ==
          "iteration 0, op 1 (aten::relu): stack_id is -1; must be >= 0 [negative-value]");
  }
  SECTION("storage_id = -1") {
    absl::StatusOr<Trace> t = MutatedBinary([](auto& r) {
      First(r, pb::TraceRecord::kTensors).mutable_tensors()->mutable_tensors(1)->set_storage_id(-1);
    });
    REQUIRE_FALSE(t.ok());
    CHECK(MessageOf(t.status(), "m.trace") ==
          "tensor 2: storage_id is -1; must be >= 0 [negative-value]");
  }
}

TEST_CASE("JSON: INT64_MIN is a present value too", "[trace][robustness]") {
  absl::StatusOr<Trace> t = ParseTraceJson(
      Json(R"({"id": 0, "size_bytes": 8})",
           R"({"name": "a", "phase": "FORWARD", "outputs": [0],
               "allocator_bytes_in_use": -9223372036854775808})"),
      "min.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "min.json") ==
        "iteration 0, op 0 (a): allocator_bytes_in_use is -9223372036854775808; must be >= 0 "
        "[negative-value]");
}

// --- shape vs size -----------------------------------------------------------

TEST_CASE("shape x itemsize must fit in size_bytes when both are known", "[trace][robustness]") {
  auto parse = [](const std::string& tensor) {
    return ParseTraceJson(Json(tensor, R"({"name": "a", "phase": "FORWARD", "outputs": [0]})"),
                          "shape.json");
  };
  // [5, 5] float32 = 100 bytes: fits 100, not 99.
  CHECK(parse(R"({"id": 0, "size_bytes": 100, "dtype": "float32", "shape": [5, 5]})").ok());
  absl::StatusOr<Trace> t =
      parse(R"({"id": 0, "size_bytes": 99, "dtype": "float32", "shape": [5, 5]})");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "shape.json") ==
        "tensor 0: shape [5, 5] of float32 needs 100 bytes, more than its size_bytes 99 "
        "[bad-shape]");
  // A view's storage may be larger than its elements.
  CHECK(parse(R"({"id": 0, "size_bytes": 4096, "dtype": "float16", "shape": [3]})").ok());
  // Unknown dtype or no shape: nothing to compare.
  CHECK(parse(R"({"id": 0, "size_bytes": 1, "shape": [1000]})").ok());
  CHECK(parse(R"({"id": 0, "size_bytes": 1, "dtype": "float64"})").ok());
  // A product past int64.
  t = parse(R"({"id": 0, "size_bytes": 8, "dtype": "float32",
                "shape": [4294967296, 4294967296]})");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "shape.json") ==
        "tensor 0: shape [4294967296, 4294967296] of float32 elements overflows a 64-bit byte "
        "count [bad-shape]");
}

// --- totals that used to overflow later stages -------------------------------

TEST_CASE("sizes, durations and wall times must sum within int64", "[trace][robustness]") {
  const std::string op = R"({"name": "a", "phase": "FORWARD", "outputs": [0, 1]})";
  // 2^62 + 2^62 = 2^63: one past INT64_MAX (release builds SIGSEGVed later).
  absl::StatusOr<Trace> t = ParseTraceJson(
      Json(R"({"id": 0, "size_bytes": 4611686018427387904},
              {"id": 1, "size_bytes": 4611686018427387904})", op),
      "sizes.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "sizes.json") ==
        "tensor 1: size_bytes 4611686018427387904 makes the sizes of all tensors overflow a "
        "64-bit integer [overflow]");
  CHECK(ExitCode(t.status()) == 2);

  t = ParseTraceJson(
      Json(R"({"id": 0, "size_bytes": 8})",
           R"({"name": "a", "phase": "FORWARD", "outputs": [0], "duration_ns": 9223372036854775807},
              {"name": "b", "phase": "FORWARD", "inputs": [0], "duration_ns": 1})"),
      "durations.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "durations.json") ==
        "iteration 0, op 1 (b): duration_ns 1 makes the durations of all ops overflow a 64-bit "
        "integer [overflow]");

  t = ParseTraceJson(
      R"({"tensors": [{"id": 0, "size_bytes": 8, "kind": "PARAMETER"}], "iterations": [
          {"wall_time_ns": 9223372036854775807, "ops": [{"name": "a", "phase": "FORWARD", "inputs": [0]}]},
          {"wall_time_ns": 9223372036854775807, "ops": [{"name": "a", "phase": "FORWARD", "inputs": [0]}]}]})",
      "walls.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "walls.json") ==
        "iteration 1: wall_time_ns 9223372036854775807 makes the wall times of all iterations "
        "overflow a 64-bit integer [overflow]");
}

TEST_CASE("totals at INT64_MAX exactly are accepted, and stats use them", "[trace][robustness]") {
  // 3 tensors: (2^63 - 1) - 2 + 1 + 1 = INT64_MAX bytes.
  Trace t = testing::TraceFromJson(Json(
      R"({"id": 0, "size_bytes": 9223372036854775805}, {"id": 1, "size_bytes": 1},
         {"id": 2, "size_bytes": 1})",
      R"({"name": "a", "phase": "FORWARD", "outputs": [0, 1, 2], "duration_ns": 9223372036854775806},
         {"name": "b", "phase": "FORWARD", "inputs": [0], "duration_ns": 1})",
      R"(, "wall_time_ns": 9223372036854775807)"));
  CHECK(t.total_tensor_bytes() == kMax);
  CHECK(t.total_op_duration_ns() == kMax);
  CHECK(t.total_wall_time_ns() == kMax);
  TraceStats s = ComputeTraceStats(t);
  CHECK(s.total_op_duration_ns == kMax);
  CHECK(s.bytes_per_kind[static_cast<int>(TensorKind::kOther)] == kMax);
  // The whole trace is live at op 0: the curve peaks at INT64_MAX, exactly.
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t);
  REQUIRE(c.ok());
  CHECK(c->peak_unswapped().bytes == kMax);
  absl::StatusOr<OpTimeline> tl = OpTimeline::Build(t, 0, OpTimeModel::kRecorded);
  REQUIRE(tl.ok());
  CHECK(tl->total_ns() == kMax);
}

TEST_CASE("curve: allocator comparisons that overflow name the op", "[trace][robustness]") {
  // Each op's allocator figure is ~INT64_MAX off the rebuilt 8 bytes; their
  // sum overflows at op 1.
  Trace t = testing::TraceFromJson(Json(
      R"({"id": 0, "size_bytes": 8, "kind": "PARAMETER"})",
      R"({"name": "a", "phase": "FORWARD", "inputs": [0], "allocator_bytes_in_use": 9223372036854775807},
         {"name": "b", "phase": "FORWARD", "inputs": [0], "allocator_bytes_in_use": 9223372036854775807})"),
      "alloc.json");
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t);
  REQUIRE_FALSE(c.ok());
  CHECK(MessageOf(c.status(), "alloc.json") ==
        "iteration 0, op 1: the allocator_bytes_in_use comparison (sum of |allocator - "
        "rebuilt|) overflows a 64-bit integer [overflow]");
  CHECK(ExitCode(c.status()) == 2);
}

// --- JSON numbers and syntax -------------------------------------------------

TEST_CASE("JSON: a number past a double is a json-number error with its path",
          "[trace][robustness]") {
  absl::StatusOr<Trace> t = ParseTraceJson(
      R"({"tensors": [{"id": 0, "size_bytes": 1e400}], "iterations": []})", "big.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "big.json") ==
        "JSON $.tensors[0].size_bytes (byte 42): number overflow parsing '1e400' (out of the "
        "range of a double) [json-number]");
  CHECK(RuleOf(t.status()) == std::optional<std::string>("json-number"));
  CHECK(ExitCode(t.status()) == 2);
}

TEST_CASE("JSON: syntax errors give the byte and path on one line", "[trace][robustness]") {
  absl::StatusOr<Trace> t =
      ParseTraceJson("{\"metadata\": {\"a b\": [1, 2, tru]}}", "syn.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "syn.json") ==
        "JSON syntax error at byte 32 ($.metadata[\"a b\"][2]): syntax error while parsing value "
        "- invalid literal; last read: '2, tru]' [json-syntax]");
}

TEST_CASE("JSON: deep nesting neither crashes nor recurses", "[trace][robustness]") {
  // 200000 nested arrays as an attribute value: parsed iteratively, refused
  // by the schema (attributes are flat).
  std::string deep = R"({"metadata": {"attributes": {"x": )" + std::string(200000, '[') +
                     std::string(200000, ']') + R"(}}, "iterations": []})";
  absl::StatusOr<Trace> t = ParseTraceJson(deep, "deep.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "deep.json") ==
        "JSON $.metadata.attributes.x: expected a string, number, true/false or null "
        "[json-schema]");
  // Unclosed: the syntax error path is 200000 levels deep, cut to fit a line.
  absl::StatusOr<Trace> u = ParseTraceJson(std::string(200000, '['), "open.json");
  REQUIRE_FALSE(u.ok());
  CHECK(std::string(u.status().message()).size() < 400);
  CHECK(RuleOf(u.status()) == std::optional<std::string>("json-syntax"));
}

TEST_CASE("messages quote input text on one line", "[trace][robustness]") {
  absl::StatusOr<Trace> t = ParseTraceJson(
      Json(R"({"id": 0, "size_bytes": 8})",
           R"({"name": "line1\nline2", "phase": "FORWARD", "inputs": [0], "duration_ns": -1})"),
      "nl.json");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "nl.json") ==
        "iteration 0, op 0 (line1\\nline2): duration_ns is -1; must be >= 0 [negative-value]");
  t = ParseTraceJson(R"({"tens\tors": [], "iterations": []})", "tab.json");
  CHECK(MessageOf(t.status(), "tab.json") == "JSON $: unknown field 'tens\\tors' [json-schema]");
}

// --- decompression and read limits -------------------------------------------

// `members` concatenated gzip members, each inflating to `member` (a tiny
// file that inflates to members × member.size() bytes).
std::string GzipBomb(const std::string& member, int members) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string one(deflateBound(&z, member.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(member.data()));
  z.avail_in = static_cast<uInt>(member.size());
  z.next_out = reinterpret_cast<Bytef*>(one.data());
  z.avail_out = static_cast<uInt>(one.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  one.resize(z.total_out);
  deflateEnd(&z);
  std::string out;
  out.reserve(one.size() * members);
  for (int i = 0; i < members; ++i) out += one;
  return out;
}

TEST_CASE("gzip input past the decompression limit is refused", "[trace][robustness]") {
  // 64 members of 1 MiB of spaces: 64 MiB inflated from about 70 KB.
  const std::string bomb = GzipBomb(std::string(1 << 20, ' '), 64);
  CHECK(bomb.size() < 100000);
  const std::string path = testing::TempDir() + "/bomb.json.gz";
  {
    std::ofstream out(path, std::ios::binary);
    out << bomb;
  }
  TraceReadOptions o;
  o.max_decompressed_bytes = 8 << 20;  // 8 MiB
  absl::StatusOr<Trace> t = ReadTrace(path, o);
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), path) ==
        "gzip data inflates to more than 8.00 MiB, the limit on decompressed input "
        "(--max-decompressed-bytes) [decompressed-limit]");
  CHECK(KindOf(t.status()) == ErrorKind::kResourceLimit);
  CHECK(ExitCode(t.status()) == 2);

  // The JSON form is refused once its text passes max_json_bytes, before
  // it is buffered whole.
  o = TraceReadOptions{};
  o.max_json_bytes = 4 << 20;
  t = ReadTrace(path, o);
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), path) ==
        "the decompressed content exceeds 4.00 MiB, the limit for inputs read whole (JSON "
        "traces, policies, baselines) [read-limit]");

  // Binary: the same limit applies to ParseTraceBinary's gzip input. The
  // magic and a record of 512 MiB, then 64 MiB of spaces as its payload.
  o = TraceReadOptions{};
  o.max_decompressed_bytes = 1 << 20;
  const std::string binary_bomb =
      GzipBomb(std::string(kTraceMagic) + "\x80\x80\x80\x80\x02", 1) + bomb;
  t = ParseTraceBinary(binary_bomb, "bomb.trace.gz", o);
  REQUIRE_FALSE(t.ok());
  CHECK(RuleOf(t.status()) == std::optional<std::string>("decompressed-limit"));

  o.max_json_bytes = 0;
  CHECK(ReadTrace(path, o).status().message() ==
        "trace read options: max_decompressed_bytes (1048576) and max_json_bytes (0) must be "
        ">= 1");
}

// Issue 19, round 5: the campaign's bomb "SWPLTRC1", a record announcing
// 2^30 - 1 bytes, then zeros. The reader used to buffer the whole announced
// record before parsing it (1 GiB inflated, 1 GiB of memory, 10-29 s of wall
// time under load); it now parses the record from the stream and refuses it
// at its first field (a zero tag), so inflating 4 MiB is enough to refuse
// it — with the old reader the 4 MiB cap below ended in decompressed-limit.
TEST_CASE("binary: a record announcing 1 GiB of zeros is refused at its first bytes",
          "[trace][robustness]") {
  // 2^30 - 1 = 0x3fffffff as a varint: ff ff ff ff 03.
  const std::string head = std::string(kTraceMagic) + "\xff\xff\xff\xff\x03";
  // 1024 members of 1 MiB of zeros: 1 GiB inflated from about 1 MB.
  const std::string bomb = GzipBomb(head, 1) + GzipBomb(std::string(1 << 20, '\0'), 1024);
  CHECK(bomb.size() < 2000000);
  const std::string expected =
      "record 0 (byte 8): a record of 1073741823 bytes does not parse as a TraceRecord "
      "[corrupt-record]";
  TraceReadOptions o;
  o.max_decompressed_bytes = 4 << 20;  // 4 MiB: the gzip stream's 1 MiB buffer, and slack
  absl::StatusOr<Trace> t = ParseTraceBinary(bomb, "bomb.trace.gz", o);
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "bomb.trace.gz") == expected);
  CHECK(ExitCode(t.status()) == 2);
  // The same from a file, with the default 64 GiB cap.
  const std::string path = testing::TempDir() + "/record-bomb.trace.gz";
  {
    std::ofstream out(path, std::ios::binary);
    out << bomb;
  }
  t = ReadTrace(path);
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), path) == expected);
  // Uncompressed, the announced length past the data still reads as a
  // corrupt record (its first byte is a zero tag), not as a truncation.
  t = ParseTraceBinary(head + std::string(64, '\0'), "zeros.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "zeros.trace") == expected);
}

// A record whose bytes parse but end before its announced length: a cut at
// a field boundary is a truncation when the data ends, and corrupt when a
// zero tag ends the parse early with data left.
TEST_CASE("binary: a record cut at a field boundary is truncated, not corrupt",
          "[trace][robustness]") {
  // A record announcing 10 bytes whose first 2 are a valid field: an empty
  // header (tag 0x0a = field 1, length-delimited; length 0).
  const std::string head = std::string(kTraceMagic) + "\x0a";  // a record of 10 bytes
  absl::StatusOr<Trace> t = ParseTraceBinary(head + std::string("\x0a\x00", 2), "cut.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "cut.trace") ==
        "record 0 (byte 8): file ends inside a record of 10 bytes [truncated-record]");
  t = ParseTraceBinary(head + std::string("\x0a\x00\x00", 3) + std::string(7, 'x'),
                       "zero-tag.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(MessageOf(t.status(), "zero-tag.trace") ==
        "record 0 (byte 8): a record of 10 bytes does not parse as a TraceRecord "
        "[corrupt-record]");
}

}  // namespace
}  // namespace swapplan
