#include "support/cli_runner.h"

#include <sys/wait.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

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

namespace {

bool IsDurationUnit(const std::string& s) {
  return s == "ns" || s == "us" || s == "ms" || s == "s";
}

// Length of the duration "<digits and dots> <unit>" at text[pos], 0 if none.
size_t DurationAt(const std::string& text, size_t pos) {
  size_t i = pos;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == pos || i >= text.size() || text[i] != ' ') return 0;
  size_t j = ++i;
  while (j < text.size() && std::islower(static_cast<unsigned char>(text[j]))) ++j;
  return IsDurationUnit(text.substr(i, j - i)) ? j - pos : 0;
}

}  // namespace

std::string MaskPlanTimes(const std::string& text) {
  std::istringstream in(text);
  std::string out;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("planner ", 0) == 0) {
      in_table = true;
    } else if (line.empty()) {
      in_table = false;
    } else if (in_table) {
      // The last field: back over the unit and the number to the spaces.
      const size_t unit = line.rfind(' ');
      size_t number = unit == std::string::npos || unit == 0 ? std::string::npos
                                                             : line.rfind(' ', unit - 1);
      if (number != std::string::npos && DurationAt(line, number + 1) == line.size() - number - 1) {
        while (number > 0 && line[number - 1] == ' ') --number;
        line = line.substr(0, number) + "  <time>";
      }
    }
    out += line + "\n";
  }
  return out;
}

std::string MaskDurations(const std::string& text, const std::string& before,
                          const std::string& after, const std::string& replacement) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t hit = text.find(before, pos);
    if (hit == std::string::npos) break;
    const size_t d = hit + before.size();
    const size_t len = DurationAt(text, d);
    if (len > 0 && text.compare(d + len, after.size(), after) == 0) {
      out += text.substr(pos, hit - pos) + replacement;
      pos = d + len + after.size();
    } else {
      out += text.substr(pos, d - pos);
      pos = d;
    }
  }
  return out + text.substr(pos);
}

}  // namespace swapplan::testing
