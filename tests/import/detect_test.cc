// Format detection: every format from its content, through gzip and tar
// wrappers; forcing a format; the message for an unknown one.
#include <fstream>

#include <catch2/catch.hpp>

#include "import/chakra_writer.h"
#include "import/formats.h"
#include "import/import_test_util.h"
#include "support/test_traces.h"

namespace swapplan {
namespace {

using import_internal::DetectContent;
using testing::DataFile;
using testing::Gzip;
using testing::ImportText;
using testing::Tar;

TEST_CASE("Detection from the first bytes of every format") {
  CHECK(DetectContent(R"({"schema": "1.0.1", "pid": 3, "nodes": [)", false).format == "et-json");
  CHECK(DetectContent(R"({"schemaVersion": 1, "deviceProperties": [)", false).format == "kineto");
  CHECK(DetectContent(R"([{"ph": "X", "name": "a", "ts": 1}])", true).format == "kineto");
  CHECK(DetectContent(R"({"segments": [], "device_traces": []})", true).format ==
        "memory-snapshot");
  CHECK(DetectContent(R"([{"address": 1, "total_size": 2, "blocks": []}])", true).format ==
        "memory-snapshot");
  CHECK(DetectContent("[[-1, 1, 512, 7], [0, 2, 8, 3]]", true).format == "memory-timeline");
  CHECK(DetectContent(std::string("\x80\x04\x95", 3), false).format == "memory-snapshot");
  CHECK(DetectContent("SWPLTRC1....", false).format == "swapplan");
  CHECK(DetectContent(R"({"format": "swapplan-trace", "format_version": 1})", true).format ==
        "swapplan");
  CHECK(DetectContent(testing::ChakraFromEtJson(DataFile("import/small_et.json")), true).format ==
        "chakra-et");
  // A long value before the decisive key: the other keys still decide.
  std::string head = R"({"deviceProperties": [)" + std::string(70000, ' ');
  CHECK(DetectContent(head.substr(0, 65536), false).format == "kineto");
  CHECK(DetectContent(R"({"foo": 1})", true).format.empty());
  CHECK(DetectContent(R"({"foo": 1})", true).evidence == "JSON object with keys foo");
}

TEST_CASE("gzip, tar and tar.gz wrappers are peeled; the first trace member is taken") {
  const std::string k = DataFile("import/small_kineto.json");
  for (const std::string& wrapped :
       {Gzip(k), Tar({{"._trace.json", "junk"}, {"notes.txt", "hello"}, {"trace.json", k}}),
        Gzip(Tar({{"dir/trace.json.gz", Gzip(k)}}))}) {
    auto t = ImportText(wrapped);
    REQUIRE(t.ok());
    CHECK(t->num_ops() == 4);
  }
  std::string path = testing::TempDir() + "/wrapped.tar.gz";
  std::ofstream(path, std::ios::binary) << Gzip(Tar({{"notes.txt", "x"}, {"t.json", k}}));
  auto d = DetectTraceFormat(path);
  REQUIRE(d.ok());
  CHECK(d->format == "kineto");
  CHECK(d->wrappers == std::vector<std::string>{"gzip", "tar member t.json"});
}

TEST_CASE("An unknown format lists what was seen and what is supported") {
  auto t = ImportText(Gzip(R"({"foo": 1, "bar": [2]})"));
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message() ==
        "mem: unknown trace format: byte 0 (after gzip): JSON object with keys foo, bar; "
        "supported formats: swapplan, et-json, chakra-et, kineto, memory-snapshot, "
        "memory-timeline; force one with --trace-format NAME [unknown-format]");
  auto tar = ImportText(Tar({{"a.txt", "hello"}}));
  REQUIRE_FALSE(tar.ok());
  CHECK(tar.status().message() ==
        "mem: tar archive has no member in a supported trace format (members: a.txt) "
        "[unknown-format]");
}

TEST_CASE("A forced format reads the content as that format") {
  auto t = ImportText(DataFile("import/small_kineto.json"), "et-json");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message() == "mem: no \"nodes\" array: not an execution trace [et-schema]");
  ImportOptions bad;
  bad.format = "csv";
  auto u = ImportFromMemory("x", "mem", bad);
  REQUIRE_FALSE(u.ok());
  CHECK(u.status().message() ==
        "import options: unknown format 'csv'; supported formats: swapplan, et-json, chakra-et, "
        "kineto, memory-snapshot, memory-timeline");
}

TEST_CASE("swapplan's own traces read through the registry") {
  auto t = ReadAnyTrace(testing::DataPath("traces/toy_valid.json"));
  REQUIRE(t.ok());
  CHECK(t->num_ops() > 0);
}

TEST_CASE("The decompressed-bytes cap") {
  ImportOptions o;
  o.max_decompressed_bytes = 1000;
  auto t = ImportFromMemory(Gzip(std::string(5000, ' ') + "[]"), "mem", o);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(t.status().message()).find("decompresses to more than 1000 bytes") !=
        std::string::npos);
}

}  // namespace
}  // namespace swapplan
