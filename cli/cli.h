// Shared pieces of the swapplan command-line layer. Each subcommand lives in
// its own cmd_*.cc and exposes one Setup function that declares its options
// on a CLI11 subcommand and stores the action to run after parsing. The
// library does the work; this layer parses flags (flags.h, device_flags.h),
// renders tables/JSON and maps statuses to exit codes (SPEC §10): 0
// success, 1 internal error, 2 bad input or usage, 3 infeasible, 4 a
// quality regression (regress).
#ifndef SWAPPLAN_CLI_CLI_H_
#define SWAPPLAN_CLI_CLI_H_

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace swapplan::cli {

using Action = std::function<absl::Status()>;

// Subcommands. Each adds itself to `root` and sets `*action` when selected.
void SetupInspect(CLI::App& root, Action* action);
void SetupCurve(CLI::App& root, Action* action);
void SetupSynth(CLI::App& root, Action* action);
void SetupSimulate(CLI::App& root, Action* action);
void SetupCompare(CLI::App& root, Action* action);
void SetupPlan(CLI::App& root, Action* action);
void SetupCheck(CLI::App& root, Action* action);
void SetupWhatIf(CLI::App& root, Action* action);
void SetupRegress(CLI::App& root, Action* action);
void SetupReplay(CLI::App& root, Action* action);
void SetupSearch(CLI::App& root, Action* action);
void SetupOptimum(CLI::App& root, Action* action);
void SetupPolicy(CLI::App& root, Action* action);
void SetupImport(CLI::App& root, Action* action);
void SetupDevices(CLI::App& root, Action* action);
void SetupAdvise(CLI::App& root, Action* action);
void SetupReport(CLI::App& root, Action* action);
// `swapplan alloc-validate SNAPSHOT`: the allocator model against a recorded
// torch.cuda.memory._snapshot() (alloc/recording_validation.h).
void SetupAllocValidate(CLI::App& root, Action* action);
// `swapplan serve`: the planner service (docs/service.md).
void SetupServe(CLI::App& root, Action* action);
// `swapplan help [--markdown]`: the --help of every subcommand (docs/cli.md
// is its Markdown form).
void SetupHelp(CLI::App& root, Action* action);

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInfeasible = 3;
inline constexpr int kExitQualityRegression = 4;

// Exit status for a library status: ExitCode (util/error.h), decided by the
// status's ErrorKind, never by its message.
int ExitCodeFor(const absl::Status& status);

// One line, in swapplan's words, for a CLI11 parse error that is not a
// request for help or the version (main.cc prints it as "swapplan: <line>"
// and exits 2; CLI11's own text and its "Run with --help" second line never
// reach the user). `app` is the root after the failed parse: the extras it
// kept name the unexpected arguments in command-line order. Every value
// quoted is escaped (util/utf8.h), so the line stays one line.
std::string DescribeParseError(const CLI::App& app, const CLI::ParseError& error);

// InvalidArgument "--hidden: empty value (leave the flag out instead)" when
// a flag is given an empty value ("--hidden ''" or "--hidden="). CLI11
// converts "" to 0 or to an empty string without running validators, so a
// value lost in an unset shell variable would pass as given (issue 19's
// mutation campaign). Checks the raw command line before CLI11 parses it:
// an empty argument right after an argument that starts with '-'.
absl::Status RefuseEmptyValues(int argc, const char* const* argv);

// Writes `content` to `path` atomically, or to stdout when `path` is empty
// or "-".
absl::Status WriteOutput(const std::string& path, absl::string_view content);

// A plain-text table with left-aligned first column and right-aligned others.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Column 0 left-aligned unless `left_columns` says more columns are text.
  std::string Render(int left_columns = 1) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_CLI_H_
