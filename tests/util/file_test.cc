#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "support/test_traces.h"
#include "swapplan/util/error.h"
#include "swapplan/util/file.h"

namespace swapplan {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("OutputFile commits atomically and InputFile reads gzip transparently", "[util][file]") {
  std::string dir = testing::TempDir();
  for (bool gz : {false, true}) {
    std::string path = dir + (gz ? "/f.txt.gz" : "/f.txt");
    {
      auto out = OutputFile::Open(path, gz);
      REQUIRE(out.ok());
      (*out)->ostream() << std::string(100000, 'x') << "end";
      CHECK_FALSE(std::filesystem::exists(path));  // not visible before Commit
      REQUIRE((*out)->Commit().ok());
    }
    auto in = InputFile::Open(path);
    REQUIRE(in.ok());
    CHECK((*in)->gzip() == gz);
    auto all = (*in)->ReadAll();
    REQUIRE(all.ok());
    CHECK(all->size() == 100003);
    CHECK(all->substr(100000) == "end");
  }
}

TEST_CASE("an uncommitted OutputFile leaves nothing behind", "[util][file]") {
  std::string path = testing::TempDir() + "/abandoned.txt";
  {
    auto out = OutputFile::Open(path);
    REQUIRE(out.ok());
    (*out)->ostream() << "partial";
  }
  CHECK_FALSE(std::filesystem::exists(path));
  for (const auto& e : std::filesystem::directory_iterator(testing::TempDir())) {
    CHECK(e.path().filename().string().rfind("abandoned.txt", 0) != 0);
  }
}

TEST_CASE("WriteStringToFile replaces content", "[util][file]") {
  std::string path = testing::TempDir() + "/w.txt";
  REQUIRE(WriteStringToFile(path, "one").ok());
  REQUIRE(WriteStringToFile(path, "two").ok());
  CHECK(Slurp(path) == "two");
}

TEST_CASE("InputFile limits: decompressed bytes and ReadAll", "[util][file][robustness]") {
  // 100003 bytes, plain and gzip.
  std::string dir = testing::TempDir();
  for (bool gz : {false, true}) {
    std::string path = dir + (gz ? "/limit.txt.gz" : "/limit.txt");
    REQUIRE(WriteStringToFile(path, std::string(100003, 'y')).ok());
    // Exactly the size passes; one byte less does not.
    auto in = InputFile::Open(path);
    REQUIRE(in.ok());
    CHECK((*in)->ReadAll(100003).ok());
    in = InputFile::Open(path);
    REQUIRE(in.ok());
    absl::StatusOr<std::string> all = (*in)->ReadAll(100002);
    REQUIRE_FALSE(all.ok());
    CHECK(std::string(all.status().message()) ==
          path + (gz ? ": the decompressed content" : ": the file") +
              " exceeds 97.66 KiB, the limit for inputs read whole (JSON traces, policies, "
              "baselines) [read-limit]");
    CHECK(KindOf(all.status()) == ErrorKind::kResourceLimit);
    CHECK(ExitCode(all.status()) == 2);
  }
  // The gzip stream itself stops at max_decompressed_bytes.
  auto in = InputFile::Open(dir + "/limit.txt.gz", 65536);
  REQUIRE(in.ok());
  absl::StatusOr<std::string> all = (*in)->ReadAll();
  REQUIRE_FALSE(all.ok());
  CHECK(std::string(all.status().message()) ==
        dir + "/limit.txt.gz: gzip data inflates to more than 64.00 KiB, the limit on "
              "decompressed input (--max-decompressed-bytes) [decompressed-limit]");
  CHECK(RuleOf(all.status()) == std::optional<std::string>("decompressed-limit"));
  CHECK(InputFile::Open(dir + "/limit.txt.gz", 0).status().message() ==
        "the decompressed-size limit is 0; must be > 0");
}

TEST_CASE("opening a missing file is NotFound", "[util][file]") {
  auto in = InputFile::Open("/definitely/missing");
  REQUIRE_FALSE(in.ok());
  CHECK(in.status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace swapplan
