// swapplan curve TRACE [--iteration N] [--format csv|json] [-o FILE]
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cli.h"
#include "trace_input.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::cli {
namespace {

struct CurveArgs {
  std::string trace;
  int iteration = -1;
  std::string format = "csv";
  std::string output;
};

std::string CsvField(absl::string_view s) {
  if (s.find_first_of(",\"\n") == absl::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string RenderCsv(const Trace& t, const MemoryCurve& c, int32_t first, int32_t last) {
  std::string out =
      "iteration,op,global_op,name,phase,unswapped_bytes,recorded_bytes,recorded_after_bytes,"
      "live_tensors,allocator_bytes_in_use\n";
  for (int32_t it = first; it <= last; ++it) {
    const IterationInfo& iter = t.iteration(it);
    for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
      const OpInfo& op = t.op(i);
      absl::StrAppend(&out, it, ",", i - iter.op_begin, ",", i, ",", CsvField(t.op_name(op.name)),
                      ",", PhaseName(op.phase), ",", c.unswapped_bytes()[i], ",",
                      c.recorded_bytes()[i], ",", c.recorded_after_bytes()[i], ",",
                      c.live_tensors()[i], ",",
                      op.allocator_bytes_in_use >= 0 ? absl::StrCat(op.allocator_bytes_in_use)
                                                     : "",
                      "\n");
    }
  }
  return out;
}

std::string RenderJson(const Trace& t, const MemoryCurve& c, int32_t first, int32_t last) {
  using nlohmann::json;
  json iters = json::array();
  for (int32_t it = first; it <= last; ++it) {
    const IterationInfo& iter = t.iteration(it);
    const IterationCurve& ic = c.iterations()[it];
    json ops = json::array();
    for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
      const OpInfo& op = t.op(i);
      json row = {{"op", i - iter.op_begin},
                  {"name", t.op_name(op.name)},
                  {"phase", std::string(PhaseName(op.phase))},
                  {"unswapped_bytes", c.unswapped_bytes()[i]},
                  {"recorded_bytes", c.recorded_bytes()[i]},
                  {"recorded_after_bytes", c.recorded_after_bytes()[i]},
                  {"live_tensors", c.live_tensors()[i]}};
      if (op.allocator_bytes_in_use >= 0) row["allocator_bytes_in_use"] = op.allocator_bytes_in_use;
      ops.push_back(std::move(row));
    }
    iters.push_back({{"iteration", it},
                     {"peak_unswapped_bytes", ic.peak_unswapped.bytes},
                     {"peak_unswapped_op", ic.peak_unswapped.local_op},
                     {"peak_recorded_bytes", ic.peak_recorded.bytes},
                     {"peak_recorded_op", ic.peak_recorded.local_op},
                     {"persistent_bytes", ic.persistent_bytes},
                     {"ops", std::move(ops)}});
  }
  json j = {{"trace", t.source()}, {"iterations", std::move(iters)}};
  return j.dump(1) + "\n";
}

}  // namespace

void SetupCurve(CLI::App& root, Action* action) {
  auto args = std::make_shared<CurveArgs>();
  CLI::App* sub = root.add_subcommand(
      "curve", "Per-op memory curve: bytes in use without swaps, as recorded, after the op, "
               "live tensors, allocator figure.");
  sub->add_option("trace", args->trace, "Trace file")->required();
  sub->add_option("--iteration", args->iteration, "Only this iteration (default: all)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--format", args->format, "csv or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"csv", "json"}));
  sub->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
  sub->callback([args, action] {
    *action = [args]() -> absl::Status {
      SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(args->trace));
      int32_t first = 0;
      int32_t last = trace.num_iterations() - 1;
      if (args->iteration >= 0) {
        if (args->iteration >= trace.num_iterations()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--iteration ", args->iteration, " is out of range: ", trace.source(),
                           " has ", trace.num_iterations(), " iterations"));
        }
        first = last = args->iteration;
      }
      SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
      return WriteOutput(args->output, args->format == "json"
                                           ? RenderJson(trace, curve, first, last)
                                           : RenderCsv(trace, curve, first, last));
    };
  });
}

}  // namespace swapplan::cli
