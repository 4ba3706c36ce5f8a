// The --help layout (cli/help_format.h): the exact text of a small App with
// every part HelpFormatter fixes (a default value, a list, a required
// option, a footer, a subcommand list), so that a CLI11 whose own Formatter
// prints them differently (2.4: "TYPE [VALUE] ", no blank line before the
// footer) cannot change swapplan's --help or docs/cli.md unnoticed.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "help_format.h"

namespace swapplan::cli {
namespace {

TEST_CASE("help layout: defaults as TYPE=VALUE, a blank line before the footer", "[cli][help]") {
  CLI::App app{"Tool."};
  app.name("tool");
  app.formatter(std::make_shared<HelpFormatter>());
  CLI::App* run = app.add_subcommand("run", "Run it.");
  std::string mode = "fast";
  std::vector<std::string> names;
  std::string trace;
  int count = 0;
  run->add_option("--mode", mode, "How")->capture_default_str();
  run->add_option("--name", names, "Repeatable");
  run->add_option("--count", count, "How many")->required();
  run->add_option("trace", trace, "Trace file")->type_name("FILE");
  run->footer("Footer line.");
  app.add_subcommand("stop", "Stop it.");
  // Names are padded to CLI11's 30 columns ("  " + name, then spaces).
  CHECK(run->help("tool") ==
        "Run it.\n"
        "Usage: tool run [OPTIONS] [trace]\n"
        "\n"
        "Positionals:\n"
        "  trace FILE                  Trace file\n"
        "\n"
        "Options:\n"
        "  -h,--help                   Print this help message and exit\n"
        "  --mode TEXT=fast            How\n"
        "  --name TEXT ...             Repeatable\n"
        "  --count INT REQUIRED        How many\n"
        "\n"
        "Footer line.\n");
  // The root: its subcommands listed, no REQUIRED mark on any of them.
  app.require_subcommand(1);
  CHECK(app.help() ==
        "Tool.\n"
        "Usage: tool [OPTIONS] SUBCOMMAND\n"
        "\n"
        "Options:\n"
        "  -h,--help                   Print this help message and exit\n"
        "\n"
        "Subcommands:\n"
        "  run                         Run it.\n"
        "  stop                        Stop it.\n"
        "\n");
}

}  // namespace
}  // namespace swapplan::cli
