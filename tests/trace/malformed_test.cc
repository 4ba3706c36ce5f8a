// Every malformed input in tests/data/malformed gets its exact message: the
// file, the iteration / op / tensor or JSON path, what is wrong, and the rule.
// Binary corruptions (bad magic, truncation inside a record, truncation at a
// record boundary, corrupt record, cut gzip) are produced from a valid trace
// at test time, byte-exactly, since they are easier to read as code than as
// hex fixtures.
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/file.h"

namespace swapplan {
namespace {

using testing::DataPath;

struct Case {
  const char* file;
  absl::StatusCode code;
  const char* message;  // after "<path>: "
};

const Case kCases[] = {
    {"unknown_tensor_input", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 1 (aten::relu): input 0 refers to unknown tensor id 99 [unknown-tensor]"},
    {"unknown_tensor_event", absl::StatusCode::kInvalidArgument,
     "iteration 0, memory event 0: ALLOC at op 0 refers to unknown tensor id 42 "
     "[unknown-tensor]"},
    {"duplicate_tensor", absl::StatusCode::kInvalidArgument,
     "tensor 3: id is declared twice (tensor #2 and #5 in declaration order) "
     "[duplicate-tensor]"},
    {"free_before_alloc", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 0 (aten::linear): FREE of tensor 4: it was never allocated "
     "[free-before-alloc]"},
    {"double_free", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 2 (loss_backward): FREE of tensor 4: it was already freed after "
     "iteration 0, op 2 (loss_backward) [double-free]"},
    {"use_after_free", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 3 (linear_backward): input 0 (tensor 3): used after it was freed after "
     "iteration 0, op 1 (aten::relu) [use-after-free]"},
    {"use_before_alloc", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 1 (aten::relu): output 0 (tensor 4): used before its ALLOC event "
     "[use-before-alloc]"},
    {"swap_in_without_swap_out", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 3 (linear_backward): SWAP_IN of tensor 3: it was never swapped out "
     "[swap-in-without-swap-out]"},
    {"use_while_swapped_out", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 1 (aten::relu): input 0 (tensor 3): used while swapped out (since "
     "iteration 0, op 0 (aten::linear)) [use-while-swapped-out]"},
    {"double_swap_out", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 2 (loss_backward): SWAP_OUT of tensor 3: it is already swapped out "
     "(since iteration 0, op 1 (aten::relu)) [double-swap-out]"},
    {"swap_out_freed", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 3 (linear_backward): SWAP_OUT of tensor 4: it was already freed "
     "[swap-out-not-resident]"},
    {"double_alloc", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 0 (aten::linear): ALLOC of tensor 3: it is already allocated (since "
     "iteration 0, op 0 (aten::linear)) [double-alloc]"},
    {"alloc_after_free", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 2 (loss_backward): ALLOC of tensor 4: it was freed after iteration 0, "
     "op 1 (aten::relu) (tensor ids are not reused) [alloc-after-free]"},
    {"negative_size", absl::StatusCode::kInvalidArgument,
     "tensor 4: size_bytes is -300; must be > 0 [bad-size]"},
    {"zero_size", absl::StatusCode::kInvalidArgument,
     "tensor 3: size_bytes is 0; must be > 0 [bad-size]"},
    {"op_index_out_of_range", absl::StatusCode::kInvalidArgument,
     "iteration 0, memory event 0: FREE of tensor 4 at op index 5, but the iteration has 5 "
     "ops [op-index-out-of-range]"},
    {"phase_forward_after_backward", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 3 (aten::relu): FORWARD op after a BACKWARD op of the same micro-batch "
     "(none given); an iteration with several forward/backward passes needs micro_batch hints "
     "[phase-order]"},
    {"phase_backward_after_optimizer", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 5 (linear_backward): BACKWARD op after the OPTIMIZER phase began at "
     "iteration 0, op 4 (sgd_step) [phase-order]"},
    {"unknown_op_name_id", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 0: op name id 7 is out of range (the table has 5 names) "
     "[unknown-op-name]"},
    {"negative_duration", absl::StatusCode::kInvalidArgument,
     "iteration 0, op 2 (loss_backward): duration_ns is -5; must be >= 0 [negative-value]"},
    {"negative_wall_time", absl::StatusCode::kInvalidArgument,
     "iteration 0: wall_time_ns is -1; must be >= 0 [negative-value]"},
    {"empty_iteration", absl::StatusCode::kInvalidArgument,
     "iteration 1: has no ops [empty-iteration]"},
    {"negative_bandwidth", absl::StatusCode::kInvalidArgument,
     "metadata: h2d_bandwidth_bytes_per_s is -1e+09; must be a finite value >= 0 "
     "[bad-metadata]"},
    {"unknown_field", absl::StatusCode::kInvalidArgument,
     "JSON $.tensors[1]: unknown field 'sizes' [json-schema]"},
    {"bad_phase", absl::StatusCode::kInvalidArgument,
     "JSON $.iterations[0].ops[0].phase: unknown phase 'FWD' (FORWARD, BACKWARD, OPTIMIZER or "
     "OTHER) [json-schema]"},
    {"id_not_integer", absl::StatusCode::kInvalidArgument,
     "JSON $.iterations[0].ops[0].inputs[0]: expected an unsigned integer, got string "
     "[json-schema]"},
    {"json_syntax", absl::StatusCode::kInvalidArgument,
     "JSON syntax error at byte 202 ($.tensors[1]): syntax error while parsing object key - "
     "unexpected end of input; expected string literal [json-syntax]"},
};

TEST_CASE("every malformed fixture fails with its exact message", "[trace][malformed]") {
  for (const Case& c : kCases) {
    std::string path = DataPath(std::string("malformed/") + c.file + ".json");
    SECTION(c.file) {
      absl::StatusOr<Trace> t = ReadTrace(path);
      REQUIRE_FALSE(t.ok());
      CHECK(t.status().code() == c.code);
      CHECK(std::string(t.status().message()) == path + ": " + c.message);
    }
  }
}

TEST_CASE("the valid base of the malformed fixtures parses", "[trace][malformed]") {
  // Guards against a fixture failing for a reason other than the one tested.
  absl::StatusOr<Trace> t = ReadTrace(DataPath("traces/toy_valid.json"));
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  CHECK(t->num_ops() == 5);
}

std::string ValidBinary() {
  absl::StatusOr<Trace> t = ReadTrace(DataPath("traces/toy_valid.json"));
  REQUIRE(t.ok());
  TraceWriteOptions opts;
  opts.ops_per_chunk = 2;  // several op records
  return TraceToBinary(*t, opts);
}

TEST_CASE("binary: bad magic", "[trace][malformed]") {
  std::string b = ValidBinary();
  b[0] = 'X';
  absl::StatusOr<Trace> t = ParseTraceBinary(b, "bad.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(t.status().message()) ==
        "bad.trace: not a swapplan binary trace (missing magic \"SWPLTRC1\") [bad-magic]");
}

// Byte offsets where each length-delimited record starts (after the magic).
std::vector<size_t> RecordStarts(const std::string& b) {
  std::vector<size_t> starts;
  size_t pos = kTraceMagic.size();
  while (pos < b.size()) {
    starts.push_back(pos);
    uint64_t len = 0;
    int shift = 0;
    while (true) {
      uint8_t byte = static_cast<uint8_t>(b[pos++]);
      len |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
    }
    pos += len;
  }
  return starts;
}

TEST_CASE("binary: truncated inside a record", "[trace][malformed]") {
  std::string b = ValidBinary();
  std::vector<size_t> starts = RecordStarts(b);
  // Keep the last record's length prefix and one payload byte.
  size_t cut = starts.back() + 2;
  absl::StatusOr<Trace> t = ParseTraceBinary(b.substr(0, cut), "cut.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(t.status().message()) ==
        absl::StrCat("cut.trace: record ", starts.size() - 1, " (byte ", starts.back(),
                     "): file ends inside a record of ",
                     static_cast<uint8_t>(b[starts.back()]), " bytes [truncated-record]"));
}

TEST_CASE("binary: cut at a record boundary", "[trace][malformed]") {
  std::string b = ValidBinary();
  std::vector<size_t> starts = RecordStarts(b);
  // header, tensors, iteration_begin, 3 op chunks (2 ops each), iteration_end, end.
  REQUIRE(starts.size() == 8);
  absl::StatusOr<Trace> t = ParseTraceBinary(b.substr(0, starts.back()), "short.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(t.status().message()) ==
        "short.trace: file ends after 7 records without the end record (cut at a record "
        "boundary?) [truncated-record]");
}

TEST_CASE("binary: corrupt record payload", "[trace][malformed]") {
  std::string b = ValidBinary();
  // Byte 8 is the first record's length; byte 9 its first tag. 0xff is a
  // tag with an invalid wire type (7).
  b[9] = static_cast<char>(0xff);
  absl::StatusOr<Trace> t = ParseTraceBinary(b, "corrupt.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == absl::StatusCode::kInvalidArgument);
  // "a record of N bytes", N the header record's length (byte 8, one
  // varint byte: the header record is under 128 bytes).
  REQUIRE(static_cast<uint8_t>(b[8]) < 0x80);
  CHECK(std::string(t.status().message()) ==
        absl::StrCat("corrupt.trace: record 0 (byte 8): a record of ",
                     static_cast<int>(static_cast<uint8_t>(b[8])),
                     " bytes does not parse as a TraceRecord [corrupt-record]"));
}

TEST_CASE("binary: record length beyond the limit", "[trace][malformed]") {
  std::string b(kTraceMagic);
  b += "\xff\xff\xff\xff\x0f";  // varint32 0xffffffff
  absl::StatusOr<Trace> t = ParseTraceBinary(b, "huge.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(std::string(t.status().message()) ==
        "huge.trace: record 0 (byte 8): record length 4294967295 exceeds the limit of "
        "1073741824 bytes [corrupt-record]");
}

TEST_CASE("binary: gzip stream cut short", "[trace][malformed]") {
  absl::StatusOr<Trace> full = ReadTrace(DataPath("traces/toy_valid.json"));
  REQUIRE(full.ok());
  std::string path = testing::TempDir() + "/toy.trace.gz";
  REQUIRE(WriteTrace(*full, path).ok());
  std::string gz;
  {
    std::ifstream in(path, std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string cut_path = testing::TempDir() + "/cut.trace.gz";
  {
    std::ofstream out(cut_path, std::ios::binary);
    out << gz.substr(0, gz.size() / 2);
  }
  absl::StatusOr<Trace> t = ReadTrace(cut_path);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(t.status().message()),
             Catch::StartsWith(cut_path + ": corrupt or truncated gzip stream") &&
                 Catch::EndsWith(") [corrupt-gzip]"));
}

TEST_CASE("a missing file is NotFound", "[trace][malformed]") {
  absl::StatusOr<Trace> t = ReadTrace("/nonexistent/x.trace");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(t.status().message()) == "/nonexistent/x.trace: no such file");
}

TEST_CASE("a file that is neither format is rejected", "[trace][malformed]") {
  std::string path = testing::TempDir() + "/garbage.bin";
  {
    std::ofstream out(path);
    out << "hello world";
  }
  absl::StatusOr<Trace> t = ReadTrace(path);
  REQUIRE_FALSE(t.ok());
  CHECK(std::string(t.status().message()) ==
        path + ": neither a swapplan binary trace (magic \"SWPLTRC1\") nor a JSON trace "
               "[bad-magic]");
}

}  // namespace
}  // namespace swapplan
