// swapplan: command-line entry point. Parses the subcommand with CLI11, runs
// its action and maps the resulting status to an exit code (cli.h); every
// line of a failed status's message is printed as "swapplan: <line>".
#include <exception>
#include <iostream>
#include <memory>
#include <new>

#include "cli.h"
#include "flags.h"
#include "help_format.h"
#include "progress.h"
#include "trace_input.h"
#include "swapplan/util/error.h"

int main(int argc, char** argv) {
  namespace cli = swapplan::cli;
  CLI::App app{
      "swapplan: plan activation swapping between accelerator and host memory from "
      "recorded training traces."};
  app.name("swapplan");
  // One --help layout on every CLI11 (help_format.h); the subcommands added
  // below inherit it.
  app.formatter(std::make_shared<cli::HelpFormatter>());
  app.require_subcommand(1);
  app.set_version_flag("--version", "swapplan " SWAPPLAN_VERSION);
  app.add_flag("-q,--quiet", cli::GlobalQuiet(),
               "No progress bars on stderr (they are drawn only when stderr is a terminal and "
               "the work takes over a second)");
  cli::Action action;
  cli::AddTraceInputFlags(app);
  cli::SetupAdvise(app, &action);
  cli::SetupReport(app, &action);
  cli::SetupInspect(app, &action);
  cli::SetupCurve(app, &action);
  cli::SetupAllocValidate(app, &action);
  cli::SetupSynth(app, &action);
  cli::SetupSimulate(app, &action);
  cli::SetupCompare(app, &action);
  cli::SetupPlan(app, &action);
  cli::SetupCheck(app, &action);
  cli::SetupWhatIf(app, &action);
  cli::SetupRegress(app, &action);
  cli::SetupReplay(app, &action);
  cli::SetupSearch(app, &action);
  cli::SetupOptimum(app, &action);
  cli::SetupPolicy(app, &action);
  cli::SetupImport(app, &action);
  cli::SetupDevices(app, &action);
  cli::SetupServe(app, &action);
  cli::SetupHelp(app, &action);
  if (absl::Status empty = cli::RefuseEmptyValues(argc, argv); !empty.ok()) {
    std::cerr << "swapplan: " << empty.message() << "\n";
    return cli::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e) == 0 ? cli::kExitOk : cli::kExitBadInput;
  } catch (const CLI::ParseError& e) {
    // One line in swapplan's words (issue 19), never CLI11's two.
    std::cerr << "swapplan: " << cli::DescribeParseError(app, e) << "\n";
    return cli::kExitBadInput;
  }
  absl::Status status;
  try {
    status = action ? action() : absl::InvalidArgumentError("no subcommand given");
  } catch (const std::bad_alloc&) {
    // A valid input may simply be too large for this machine (util/error.h:
    // a resource limit, exit 2), never an internal error.
    status = swapplan::WithRule(swapplan::Error(swapplan::ErrorKind::kResourceLimit,
                            "out of memory: the input is too large for this machine "
                            "[out-of-memory]"),
                      "out-of-memory");
  } catch (const std::exception& e) {
    status = absl::InternalError(e.what());
  }
  if (!status.ok()) {
    // Several problems (a FlagSet's) are several lines, each prefixed.
    for (const std::string& line : cli::StatusLines(status)) {
      std::cerr << "swapplan: " << line << "\n";
    }
    return cli::ExitCodeFor(status);
  }
  return cli::kExitOk;
}
