// Trace input for every command: LoadTrace() reads any supported format
// (swapplan binary/JSON, PyTorch ET JSON, Chakra .et, Kineto, memory
// snapshots, memory timelines), detected from the content; the root flags
// --trace-format NAME, --kineto FILE and --et-ops leaves|dispatch (accepted before or after the
// subcommand) apply to every command that reads a trace.
//
//   swapplan inspect resnet_et.json.gz --kineto resnet_kineto.json.gz
//   swapplan compare --trace-format kineto run.json --device-memory 8GiB
#ifndef SWAPPLAN_CLI_TRACE_INPUT_H_
#define SWAPPLAN_CLI_TRACE_INPUT_H_

#include <string>

#include <CLI/CLI.hpp>

#include "absl/status/statusor.h"
#include "swapplan/import/import.h"
#include "swapplan/trace/trace.h"

namespace swapplan::cli {

// Adds --trace-format, --kineto and --et-ops to the root app (call before the
// subcommands are set up; they fall through from every subcommand).
void AddTraceInputFlags(CLI::App& root);

// The options those flags set (defaults otherwise).
ImportOptions& GlobalImportOptions();

// ReadAnyTrace(path, GlobalImportOptions()).
absl::StatusOr<Trace> LoadTrace(const std::string& path);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_TRACE_INPUT_H_
