// Chakra .et: records written by tests/import/chakra_writer.cc (no binary
// .et is among the external traces) import into the same trace as the ET
// JSON they came from; the Python-literal IO fields; corrupt records.
#include <cstdlib>
#include <fstream>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "import/chakra_writer.h"
#include "import/import_test_util.h"
#include "import/pylit.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/import/import.h"

namespace swapplan {
namespace {

using testing::Attr;
using testing::DataFile;
using testing::ImportText;
using testing::RoundRoofline;

void CheckSameTrace(const Trace& a, const Trace& b) {
  REQUIRE(a.num_ops() == b.num_ops());
  REQUIRE(a.num_tensors() == b.num_tensors());
  REQUIRE(a.num_iterations() == b.num_iterations());
  for (OpIndex i = 0; i < a.num_ops(); ++i) {
    CHECK(a.op_name_at(i) == b.op_name_at(i));
    CHECK(a.op(i).phase == b.op(i).phase);
    CHECK(a.op(i).duration_ns == b.op(i).duration_ns);
  }
  for (TensorId t = 0; t < a.num_tensors(); ++t) {
    CHECK(a.tensor(t).size_bytes == b.tensor(t).size_bytes);
    CHECK(a.tensor(t).kind == b.tensor(t).kind);
  }
}

TEST_CASE("Chakra .et: the worked ET example written as .et imports identically") {
  const std::string json = DataFile("import/small_et.json");
  const std::string et = testing::ChakraFromEtJson(json);
  auto from_json = ImportText(json, "", RoundRoofline());
  auto from_et = ImportText(et, "", RoundRoofline());
  REQUIRE(from_json.ok());
  REQUIRE(from_et.ok());
  CHECK(Attr(*from_et, "import.format") == "chakra-et");
  CHECK(Attr(*from_et, "import.schema") == "1.0.2-chakra.0.0.4");
  CheckSameTrace(*from_json, *from_et);
}

TEST_CASE("Chakra .et fixture in tests/data is what the writer produces") {
  // Regenerate with SWAPPLAN_REGENERATE_FIXTURES=1 after changing the writer.
  const std::string et = testing::ChakraFromEtJson(DataFile("import/small_et.json"));
  const std::string path = testing::DataPath("import/small.et");
  if (std::getenv("SWAPPLAN_REGENERATE_FIXTURES") != nullptr) {
    std::ofstream(path, std::ios::binary) << et;
  }
  CHECK(DataFile("import/small.et") == et);
  auto t = ReadAnyTrace(path);
  REQUIRE(t.ok());
  CHECK(t->num_ops() == 8);
}

TEST_CASE("Chakra .et: the external chakra JSON trace written as .et") {
  const std::string path = testing::ExternalTracePath("chakra-1.0.2-chakra.0.0.4_et.json.gz");
  if (!std::ifstream(path).good()) {
    WARN("skipped: " << path << " not found (set SWAPPLAN_EXTERNAL_TRACES_DIR)");
    return;
  }
  auto direct = ReadAnyTrace(path);
  REQUIRE(direct.ok());
  // The JSON inside the gzip, through the writer.
  std::string tmp = testing::TempDir() + "/chakra_ext.json";
  REQUIRE(std::system(absl::StrCat("gzip -dc '", path, "' > '", tmp, "'").c_str()) == 0);
  std::ifstream f(tmp);
  std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto from_et = ImportText(testing::ChakraFromEtJson(json));
  REQUIRE(from_et.ok());
  CheckSameTrace(*direct, *from_et);
}

TEST_CASE("Chakra .et written by Chakra itself (optional: SWAPPLAN_CHAKRA_ET_FILE)") {
  // mlcommons/chakra @21585d8 tests/data/feeder_tests_trace.tar.gz holds a
  // chakra.0.et from an older converter (ops split in numbered pieces).
  const char* path = std::getenv("SWAPPLAN_CHAKRA_ET_FILE");
  if (path == nullptr) {
    WARN("skipped: set SWAPPLAN_CHAKRA_ET_FILE to a .et written by Chakra");
    return;
  }
  auto t = ReadAnyTrace(path);
  REQUIRE(t.ok());
  CHECK(testing::OpsPerPhase(*t, Phase::kForward) > 0);
  CHECK(testing::OpsPerPhase(*t, Phase::kBackward) > 0);
  CHECK(ComputeMemoryCurve(*t).ok());
}

TEST_CASE("Chakra .et: corrupt and truncated records") {
  const std::string et = testing::ChakraFromEtJson(DataFile("import/small_et.json"));
  SECTION("cut inside a record") {
    auto t = ImportText(et.substr(0, et.size() - 10), "chakra-et");
    REQUIRE_FALSE(t.ok());
    CHECK(std::string(t.status().message()).find("bytes but only") != std::string::npos);
    CHECK(std::string(t.status().message()).find("[declared-size]") != std::string::npos);
  }
  SECTION("a length beyond the per-record limit") {
    auto t = ImportText(std::string("\xff\xff\xff\xff\x0f", 5), "chakra-et");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message() ==
          "mem: record 0 at byte 0: declares 4294967295 bytes, more than the 268435456-byte "
          "limit per record [declared-size]");
  }
  SECTION("a record that is not a message") {
    auto t = ImportText(std::string("\x03\xff\xff\xff", 4), "chakra-et");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message() ==
          "mem: record 0 at byte 0: not a valid Chakra GlobalMetadata message [chakra-record]");
  }
}

TEST_CASE("Chakra .et: text that is not UTF-8 gets the importer's message, not protobuf's") {
  // Found by a mutation run: protobuf rejected (and logged) string fields
  // with invalid UTF-8; the fields are bytes in our .proto, and the trace
  // model's own check names the op.
  const std::string json = R"J({"schema": "1.0.1", "nodes": [{"id": 2, "name": "aten::mul",
    "parent": 1, "rf_id": 1, "scope": 0, "tid": 1,
    "inputs": [[1, 10, 0, 25, 4, "cuda:0"]], "input_shapes": [[25]], "input_types": ["Tensor(float)"],
    "outputs": [], "output_shapes": [], "output_types": []}]})J";
  std::string et = testing::ChakraFromEtJson(json);
  const size_t at = et.find("aten::mul");
  REQUIRE(at != std::string::npos);
  et[at + 6] = '\xff';  // "aten::\xffel"
  auto t = ImportText(et, "chakra-et");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message() == "mem: op name 0: is not valid UTF-8 [bad-text]");
}

TEST_CASE("Python literals of the .et IO fields") {
  using import_internal::ParsePythonLiteral;
  using import_internal::ValueTree;
  ValueTree t;
  uint32_t v = 0;
  REQUIRE(ParsePythonLiteral("[[6, 7, 0, 65536, 4, 'cuda:0'], 1.5, '<None>', True, None, (1,), "
                             "{'a': -2}, 18446744073709551615, 'it\\'s']",
                             "w", &t, &v)
              .ok());
  const auto& items = t.Items(v);
  REQUIRE(items.size() == 9);
  CHECK(t.Items(items[0]).size() == 6);
  CHECK(t.Str(t.Items(items[0])[5]) == "cuda:0");
  double d = 0;
  CHECK(t.AsDouble(items[1], &d));
  CHECK(d == 1.5);
  CHECK(t.Get(items[3]).flag);
  CHECK(t.Kind(items[5]) == import_internal::ValueKind::kTuple);
  int64_t x = 0;
  CHECK(t.AsInt(t.Lookup(items[6], "a"), &x));
  CHECK(x == -2);
  CHECK_FALSE(t.AsInt(items[7], &x));  // beyond int64: marked too large
  CHECK(t.Str(items[8]) == "it's");
  uint32_t w = 0;
  absl::Status bad = ParsePythonLiteral("[1, 2", "node 3 inputs.values", &t, &w);
  CHECK(bad.message() == "node 3 inputs.values: character 5: unterminated container [chakra-record]");
}

}  // namespace
}  // namespace swapplan
