// Running the swapplan binary from tests: stdout, stderr, exit status, and
// golden-file comparison. Goldens live in tests/golden/; after an intended
// output change, regenerate them with SWAPPLAN_UPDATE_GOLDEN=1.
#ifndef SWAPPLAN_TESTS_SUPPORT_CLI_RUNNER_H_
#define SWAPPLAN_TESTS_SUPPORT_CLI_RUNNER_H_

#include <string>

namespace swapplan::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The whole content of a file ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// Runs `swapplan <args>` (args as written on a shell command line) with
// tests/data as the working directory.
CliRun Swapplan(const std::string& args);

// CHECKs that `actual` equals tests/golden/<name>; rewrites the golden
// instead when SWAPPLAN_UPDATE_GOLDEN is set.
void CheckGolden(const std::string& name, const std::string& actual);

// Masks for output that changes from run to run (no std::regex: GCC 12
// warns inside <regex> under the sanitizers).
//
// Planning times: in every table row (the lines after a header line
// starting with "planner " up to the next blank line) a trailing duration
// "  12.5 us" becomes "  <time>".
std::string MaskPlanTimes(const std::string& text);
// Every `before` + duration + `after` (a duration: digits and dots, a
// space, one of ns us ms s) becomes `replacement`:
//   MaskDurations("... in 1.25 s; ...", " in ", ";", " in <time>;")
//     -> "... in <time>; ..."
std::string MaskDurations(const std::string& text, const std::string& before,
                          const std::string& after, const std::string& replacement);

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_SUPPORT_CLI_RUNNER_H_
