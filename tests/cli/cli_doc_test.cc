// docs/cli.md is the CLI reference generated from the --help of every
// subcommand (`swapplan help --markdown`): this test fails when the
// checked-in file differs from what the binary prints, so the reference
// cannot drift. After changing a flag or a help text:
//   ./build/swapplan help --markdown > docs/cli.md
#include <string>

#include <catch2/catch.hpp>

#include "support/cli_runner.h"

namespace {

using swapplan::testing::CliRun;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

TEST_CASE("docs/cli.md is what `swapplan help --markdown` prints", "[cli][docs]") {
  CliRun r = Swapplan("help --markdown");
  REQUIRE(r.exit_code == 0);
  const std::string checked_in = ReadFile(std::string(SWAPPLAN_SOURCE_ROOT) + "/docs/cli.md");
  INFO("docs/cli.md is stale: run ./build/swapplan help --markdown > docs/cli.md");
  CHECK(r.out == checked_in);
  // Every subcommand has its section, every section its --help.
  for (const char* command : {"inspect", "curve", "synth", "simulate", "compare", "plan", "check",
                              "whatif", "regress", "replay", "search", "devices", "help"}) {
    INFO(command);
    CHECK(r.out.find(std::string("\n## swapplan ") + command + "\n") != std::string::npos);
    CliRun h = Swapplan(std::string("help ") + command);
    CHECK(h.exit_code == 0);
    CHECK(r.out.find(h.out) != std::string::npos);
  }
  CHECK(Swapplan("help nonsense").exit_code == 2);
}

}  // namespace
