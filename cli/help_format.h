// HelpFormatter: swapplan's layout of every --help text (and so of
// docs/cli.md, `swapplan help --markdown`), the same whichever CLI11 the
// binary is built with. CLI11's own Formatter changed between 2.1 (Debian
// 12) and 2.4 (Debian 13): a default value prints as "TYPE=VALUE" on 2.1 and
// "TYPE [VALUE] " on 2.4, a footer follows a blank line on 2.1 and none on
// 2.4, and a required subcommand is marked REQUIRED on 2.4 only. This class
// fixes those parts to 2.1's layout, built only from public Option and App
// getters that both versions have; the rest (groups, columns, usage line) is
// CLI11's code, identical in both.
//
//   CLI::App app{"..."};
//   app.formatter(std::make_shared<swapplan::cli::HelpFormatter>());  // before
//   SetupInspect(app, &action);             // subcommands inherit it
//
// Complexity: linear in the options and subcommands listed.
#ifndef SWAPPLAN_CLI_HELP_FORMAT_H_
#define SWAPPLAN_CLI_HELP_FORMAT_H_

#include <string>

#include <CLI/CLI.hpp>

namespace swapplan::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  // "Usage: ...", the positionals, the option groups, the subcommands, then
  // a blank line and the footer (if any). --help of a subcommand inside
  // --help-all (AppFormatMode::Sub) is CLI11's expanded form.
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;
  // The footer and a newline; empty without one.
  std::string make_footer(const CLI::App* app) const override;
  // After an option's names: " TYPE=DEFAULT", " ..." for a list, " x N" for
  // N values, " REQUIRED", the environment variable, Needs: and Excludes:.
  std::string make_option_opts(const CLI::Option* opt) const override;
  // "  NAME   description" in the subcommand list (no REQUIRED mark).
  std::string make_subcommand(const CLI::App* sub) const override;
};

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_HELP_FORMAT_H_
