#include "support/cli_runner.h"

#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

#include <catch2/catch.hpp>

#include "support/test_traces.h"

namespace swapplan::testing {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

CliRun Swapplan(const std::string& args) {
  static std::atomic<int> counter{0};
  const std::string base = TempDir() + "/cli." + std::to_string(counter++);
  const std::string out = base + ".out", err = base + ".err";
  const std::string cmd = std::string("cd '") + SWAPPLAN_TEST_DATA_DIR + "' && '" +
                          SWAPPLAN_BINARY + "' " + args + " > '" + out + "' 2> '" + err + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
}

void CheckGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(SWAPPLAN_GOLDEN_DIR) + "/" + name;
  if (std::getenv("SWAPPLAN_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
  }
  INFO("golden " << path << " (regenerate with SWAPPLAN_UPDATE_GOLDEN=1)");
  CHECK(actual == ReadFile(path));
}

}  // namespace swapplan::testing
