// swapplan curve TRACE [--iteration N | --all-iterations] [--format csv|json | --json]
//                [--allocator cuda-caching|best-fit] [--alloc-conf TEXT] [-o FILE]
//
// Both curves: the allocated bytes (unswapped, as recorded) and the bytes
// the allocator model reserves for the same allocations and frees.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "budget_flags.h"
#include "cli.h"
#include "common.h"
#include "flags.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/reserved_curve.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::cli {
namespace {

struct CurveArgs {
  FlagSet flags;
  std::string trace;
  std::optional<int64_t> iteration;
  bool all_iterations = false;
  std::optional<std::string> format;
  bool json = false;
  std::optional<std::string> output;
  // --allocator / --alloc-conf: the model of the reserved curve.
  BudgetFlags budget;
};

// The reserved curves of iterations first..last.
using ReservedCurves = std::vector<ReservedCurve>;

std::string CsvField(absl::string_view s) {
  if (s.find_first_of(",\"\n") == absl::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string RenderCsv(const Trace& t, const MemoryCurve& c, int32_t first, int32_t last,
                      const ReservedCurves& rc) {
  std::string out =
      "iteration,op,global_op,name,phase,unswapped_bytes,recorded_bytes,recorded_after_bytes,"
      "num_live_tensors,allocator_bytes_in_use";
  out += ",reserved_bytes,allocated_block_bytes,largest_free_bytes\n";
  for (int32_t it = first; it <= last; ++it) {
    const IterationInfo& iter = t.iteration(it);
    for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
      const OpInfo& op = t.op(i);
      absl::StrAppend(&out, it, ",", i - iter.op_begin, ",", i, ",", CsvField(t.op_name(op.name)),
                      ",", PhaseName(op.phase), ",", c.unswapped_bytes()[i], ",",
                      c.recorded_bytes()[i], ",", c.recorded_after_bytes()[i], ",",
                      c.live_tensors()[i], ",",
                      op.allocator_bytes_in_use >= 0 ? absl::StrCat(op.allocator_bytes_in_use)
                                                     : "");
      const ReservedCurve& r = rc[it - first];
      const int32_t l = i - iter.op_begin;
      absl::StrAppend(&out, ",", r.reserved_bytes[l], ",", r.allocated_bytes[l], ",",
                      r.largest_free_bytes[l]);
      out += "\n";
    }
  }
  return out;
}

std::string RenderJson(const Trace& t, const MemoryCurve& c, int32_t first, int32_t last,
                       const ReservedCurves& rc, const BudgetBasis& basis) {
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
                  {"num_live_tensors", c.live_tensors()[i]}};
      if (op.allocator_bytes_in_use >= 0) row["allocator_bytes_in_use"] = op.allocator_bytes_in_use;
      const ReservedCurve& r = rc[it - first];
      const int32_t l = i - iter.op_begin;
      row["reserved_bytes"] = r.reserved_bytes[l];
      row["allocated_block_bytes"] = r.allocated_bytes[l];
      row["largest_free_bytes"] = r.largest_free_bytes[l];
      ops.push_back(std::move(row));
    }
    const ReservedCurve& r = rc[it - first];
    json reserved = {{"reserved_peak_bytes", r.peak_reserved_bytes},
                     {"reserved_peak_op", r.peak_position},
                     {"fragmentation_bytes", r.fragmentation_at_peak_bytes()}};
    iters.push_back({{"iteration", it},
                     {"peak_unswapped_bytes", ic.peak_unswapped.bytes},
                     {"peak_unswapped_op", ic.peak_unswapped.local_op},
                     {"peak_recorded_bytes", ic.peak_recorded.bytes},
                     {"peak_recorded_op", ic.peak_recorded.local_op},
                     {"persistent_bytes", ic.persistent_bytes},
                     {"ops", std::move(ops)}});
    iters.back()["reserved"] = std::move(reserved);
  }
  json j = {{"trace", t.source()}, {"iterations", std::move(iters)}};
  j["allocator"] = std::string(AllocatorKindName(basis.allocator.kind));
  j["alloc_conf"] = AllocConfText(basis.allocator);
  return j.dump(1) + "\n";
}

}  // namespace

void SetupCurve(CLI::App& root, Action* action) {
  auto args = std::make_shared<CurveArgs>();
  CLI::App* sub = root.add_subcommand(
      "curve", "Per-op memory curve: bytes in use without swaps, as recorded, after the op, "
               "live tensors, allocator figure, and the bytes an allocator model reserves for "
               "them (cuda-caching, PyTorch's defaults, unless --allocator / --alloc-conf).");
  args->flags.Positional(sub, "trace", &args->trace, "Trace file", /*required=*/true);
  AddIterationFlag(sub, &args->flags, &args->iteration);
  sub->add_flag("--all-iterations", args->all_iterations, "Every iteration of the trace");
  args->flags.Choice(sub, "--format", &args->format, {"csv", "json"}, "csv (default) or json");
  AddBudgetFlags(sub, &args->flags, &args->budget, {.budget_on = false});
  sub->add_flag("--json", args->json,
                "The same as --format json (docs/json/curve.schema.json)");
  args->flags.Text(sub, "-o,--output", &args->output, "Write the curve to FILE instead of stdout");
  sub->callback([args, action] {
    *action = [args]() -> absl::Status {
      args->flags.Parse();
      if (args->all_iterations && args->iteration) {
        args->flags.Add("--iteration and --all-iterations exclude each other");
      }
      if (args->json && args->format == std::optional<std::string>("csv")) {
        args->flags.Add("--json and --format csv exclude each other");
      }
      SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadTraceArg(args->trace, &args->flags));
      int32_t first = 0;
      int32_t last = trace.num_iterations() - 1;
      if (!args->all_iterations) {
        first = last = ResolveIteration(args->iteration, trace, &args->flags);
      }
      SWAPPLAN_RETURN_IF_ERROR(args->flags.Status());
      const BudgetBasis basis = ResolveBudgetBasis(args->budget, DeviceModel{}, &args->flags);
      SWAPPLAN_RETURN_IF_ERROR(args->flags.Status());
      SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
      // Both curves: the allocator model's reserved bytes next to the
      // allocated ones (cuda-caching with PyTorch's defaults unless
      // --allocator / --alloc-conf say), unlimited capacity (a curve has no
      // budget).
      ReservedCurves rc;
      for (int32_t it = first; it <= last; ++it) {
        SWAPPLAN_ASSIGN_OR_RETURN(AllocationSequence s, SequenceOfIteration(trace, it));
        SWAPPLAN_ASSIGN_OR_RETURN(ReservedCurve c,
                                  ReplayAllocations(s, basis.allocator, {.pinned_segments = 0}));
        rc.push_back(std::move(c));
      }
      const bool json = args->json || args->format == std::optional<std::string>("json");
      return WriteOutput(args->output.value_or(""),
                         json ? RenderJson(trace, curve, first, last, rc, basis)
                              : RenderCsv(trace, curve, first, last, rc));
    };
  });
}

}  // namespace swapplan::cli
