// swapplan import FILE... -o OUT [--format F] [--kineto FILE]
//                  [--peak-flops X] [--memory-bandwidth BW]
//
// Converts a trace of another tool (PyTorch execution trace, Chakra .et,
// Kineto, memory snapshot, memory timeline) into a swapplan trace once, and
// says what it did: format, iterations, ops, how durations were obtained,
// what was approximated, and — where the source recorded allocator figures —
// how the rebuilt memory curve compares with them.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "flags.h"
#include "progress.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/import/import.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"
#include "trace_input.h"

namespace swapplan::cli {
namespace {

struct ImportArgs {
  FlagSet flags;
  std::vector<std::string> inputs;
  std::string output;
  std::string format;
  std::string kineto;
  // The roofline figures, spelled as every other command's device flags.
  std::optional<double> peak_flops;
  std::optional<double> memory_bandwidth;
};

std::string Attribute(const Trace& t, absl::string_view key) {
  for (const auto& [k, v] : t.metadata().attributes) {
    if (k == key) return v;
  }
  return "";
}

absl::Status Run(ImportArgs& args) {
  args.flags.Parse();
  SWAPPLAN_RETURN_IF_ERROR(args.flags.Status());
  ImportOptions opts = GlobalImportOptions();
  if (!args.format.empty()) opts.format = args.format;
  if (!args.kineto.empty()) opts.kineto_path = args.kineto;
  if (args.peak_flops) opts.roofline_device.peak_flops_per_s = *args.peak_flops;
  if (args.memory_bandwidth) {
    opts.roofline_device.memory_bandwidth_bytes_per_s = *args.memory_bandwidth;
  }
  // Several inputs: one trace plus, for an execution trace, its Kineto trace.
  std::string primary;
  std::vector<std::string> primaries;
  for (const std::string& in : args.inputs) {
    ImportOptions detect = opts;
    detect.format.clear();
    SWAPPLAN_ASSIGN_OR_RETURN(Detection d, DetectTraceFormat(in, detect));
    if (args.inputs.size() > 1 && d.format == kFormatKineto && opts.kineto_path.empty()) {
      opts.kineto_path = in;
    } else {
      primaries.push_back(in);
    }
  }
  if (primaries.size() != 1) {
    return Error(ErrorKind::kUsage,
                 absl::StrCat("import converts one trace (optionally with the Kineto trace of "
                              "the same run); got ",
                              primaries.size(), " traces: ", absl::StrJoin(primaries, ", ")));
  }
  primary = primaries[0];
  ProgressBar bar("import", ProgressUnit::kBytes);
  opts.progress = [&bar](int64_t read, int64_t total) { bar.Update(read, total); };
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadAnyTrace(primary, opts));
  bar.Finish();
  SWAPPLAN_RETURN_IF_ERROR(WriteTrace(trace, args.output));
  SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
  std::string out;
  absl::StrAppend(&out, "imported   ", primary, " (", Attribute(trace, "import.format"), ")",
                  opts.kineto_path.empty() ? "" : absl::StrCat(" with Kineto ", opts.kineto_path),
                  "\n");
  absl::StrAppend(&out, "wrote      ", args.output, ": ", trace.num_iterations(),
                  " iterations, ", trace.num_ops(), " ops, ", trace.num_tensors(), " tensors\n");
  std::string durations = Attribute(trace, "import.durations");
  if (!durations.empty()) absl::StrAppend(&out, "durations  ", durations, "\n");
  absl::StrAppend(&out, "peak       ", FormatBytes(curve.peak_unswapped().bytes), " (",
                  curve.peak_unswapped().bytes, " B) rebuilt, during iteration ",
                  curve.peak_unswapped().iteration, ", op ", curve.peak_unswapped().local_op, "\n");
  std::string source_peak = Attribute(trace, "import.allocator_peak_bytes");
  if (!source_peak.empty()) {
    int64_t p = 0;
    if (absl::SimpleAtoi(source_peak, &p)) {
      absl::StrAppend(&out, "source     allocator peak ", FormatBytes(p), " (", p, " B)\n");
    }
  }
  if (curve.allocator().ops_compared > 0) {
    absl::StrAppend(&out, "cross-check rebuilt vs allocator after each op: max difference ",
                    curve.allocator().max_abs_diff_bytes, " B over ",
                    curve.allocator().ops_compared, " ops\n");
  }
  for (const auto& [k, v] : trace.metadata().attributes) {
    if (absl::StartsWith(k, "import.note.")) {
      absl::StrAppend(&out, "note       ", k.substr(12), ": ", v, "\n");
    }
  }
  return WriteOutput("", out);
}

}  // namespace

void SetupImport(CLI::App& root, Action* action) {
  auto args = std::make_shared<ImportArgs>();
  std::vector<std::string> names;
  for (const FormatInfo& f : SupportedFormats()) names.push_back(f.name);
  CLI::App* sub = root.add_subcommand(
      "import",
      "Convert a trace of another tool into a swapplan trace (every command also reads those "
      "traces directly). Formats: " + absl::StrJoin(names, ", ") + ".");
  sub->add_option("files", args->inputs,
                  "The trace to convert; for an execution trace, optionally also its Kineto "
                  "trace")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", args->output, "Output trace (.trace, .trace.gz, .json, .json.gz)")
      ->required();
  sub->add_option("--format", args->format, "Read the input as this format (default: detect)")
      ->check(CLI::IsMember(names));
  sub->add_option("--kineto", args->kineto,
                  "Kineto trace of the same run (for an execution trace): durations and "
                  "allocator figures")
      ->check(CLI::ExistingFile);
  args->flags.Number(sub, "--peak-flops", &args->peak_flops,
                     "Roofline peak FLOP/s for ops without recorded durations (default 312e12)",
                     1, 1e20);
  args->flags.Bandwidth(sub, "--memory-bandwidth", &args->memory_bandwidth,
                        "Roofline memory bandwidth for ops without recorded durations (default "
                        "1555GB/s)");
  sub->callback([args, action] {
    *action = [args]() -> absl::Status { return Run(*args); };
  });
}

}  // namespace swapplan::cli
