#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "support/test_traces.h"
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

TEST_CASE("opening a missing file is NotFound", "[util][file]") {
  auto in = InputFile::Open("/definitely/missing");
  REQUIRE_FALSE(in.ok());
  CHECK(in.status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace swapplan
