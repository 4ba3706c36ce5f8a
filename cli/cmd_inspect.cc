// swapplan inspect TRACE [--json] [-o FILE]
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "common.h"
#include "flags.h"
#include "step_anatomy_text.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/step_anatomy.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/stats.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct InspectArgs {
  FlagSet flags;
  std::string trace;
  bool json = false;
  std::optional<int64_t> top_ops;
  std::optional<int64_t> top_tensors;
  std::optional<std::string> output;

  int top_op_count() const { return static_cast<int>(top_ops.value_or(10)); }
};

std::string PeakText(const Trace& t, const PeakInfo& p) {
  return absl::StrCat(BytesExact(p.bytes), " at iteration ", p.iteration,
                      ", op ", p.local_op,
                      " (", t.op_name_at(p.op), ", ", PhaseName(p.phase), ")");
}

// Metadata attribute `key` of an imported trace ("" when absent).
std::string ImportAttr(const Trace& t, absl::string_view key) {
  for (const auto& [k, v] : t.metadata().attributes) {
    if (k == key) return v;
  }
  return "";
}

// What an importer recorded (import.* attributes): format, how durations
// were obtained, the source's own allocator peak, approximations.
std::string ImportText(const Trace& t) {
  const std::string format = ImportAttr(t, "import.format");
  if (format.empty()) return "";
  std::string out = absl::StrCat("imported from   ", format);
  std::string durations = ImportAttr(t, "import.durations");
  if (!durations.empty()) absl::StrAppend(&out, "; durations ", durations);
  absl::StrAppend(&out, "\n");
  int64_t peak = 0;
  if (absl::SimpleAtoi(ImportAttr(t, "import.allocator_peak_bytes"), &peak)) {
    absl::StrAppend(&out, "source peak     ", BytesExact(peak),
                    " (the recording's own allocator figure)\n");
  }
  std::string notes;
  for (const auto& [k, v] : t.metadata().attributes) {
    if (absl::StartsWith(k, "import.note.")) {
      absl::StrAppend(&notes, notes.empty() ? "" : ", ", k.substr(12), " ", v);
    }
  }
  if (!notes.empty()) absl::StrAppend(&out, "import notes    ", notes, "\n");
  return out;
}

// The anatomy of the peak iteration and, when another iteration is the
// first step (iteration 0 creating the optimizer's state), that one's too.
struct Anatomies {
  StepAnatomy peak;
  std::optional<StepAnatomy> first;  // iteration 0, when a first step other than peak
};

absl::StatusOr<Anatomies> AnalyzeTrace(const Trace& t, const MemoryCurve& c) {
  Anatomies out;
  SWAPPLAN_ASSIGN_OR_RETURN(out.peak, AnalyzeStep(t, c, c.peak_unswapped().iteration));
  if (out.peak.iteration != 0) {
    SWAPPLAN_ASSIGN_OR_RETURN(StepAnatomy first, AnalyzeStep(t, c, 0));
    if (first.first_step) out.first = first;
  }
  return out;
}

std::string AnatomyText(const Trace& t, const MemoryCurve& c, const Anatomies& an) {
  std::string out;
  for (const auto& [label, text] : AnatomyLines(t, c, an.peak, -1)) {
    absl::StrAppend(&out, absl::StrFormat("%-16s", label), text, "\n");
  }
  if (an.first) {
    for (const auto& [label, text] : AnatomyLines(t, c, *an.first, -1)) {
      if (label == "peak holds") continue;  // not the trace's peak
      absl::StrAppend(&out, absl::StrFormat("%-16s", label), text, "\n");
    }
  }
  return out;
}

std::string RenderText(const Trace& t, const TraceStats& s, const MemoryCurve& c,
                       const Anatomies& an, const InspectArgs& args) {
  const TraceMetadata& m = t.metadata();
  std::string out;
  absl::StrAppend(&out, "trace           ", t.source(), "\n");
  absl::StrAppend(&out, "device          ", m.device_name.empty() ? "(unknown)" : m.device_name);
  if (m.device_memory_bytes > 0) absl::StrAppend(&out, ", ", FormatBytes(m.device_memory_bytes));
  if (m.h2d_bandwidth_bytes_per_s > 0) {
    absl::StrAppend(&out, ", h2d ", FormatBandwidth(m.h2d_bandwidth_bytes_per_s));
  }
  if (m.d2h_bandwidth_bytes_per_s > 0) {
    absl::StrAppend(&out, ", d2h ", FormatBandwidth(m.d2h_bandwidth_bytes_per_s));
  }
  absl::StrAppend(&out, "\n");
  if (!m.model_name.empty() || m.model_layers > 0) {
    absl::StrAppend(&out, "model           ", m.model_name.empty() ? "(unnamed)" : m.model_name);
    if (m.model_layers > 0) absl::StrAppend(&out, " (", m.model_layers, " layers)");
    absl::StrAppend(&out, "\n");
  }
  if (!m.recorder.empty()) {
    absl::StrAppend(&out, "recorded by     ", m.recorder, " ", m.recorder_version,
                    m.framework.empty() ? "" : absl::StrCat(" (", m.framework, ")"), "\n");
  }
  absl::StrAppend(&out, ImportText(t));
  absl::StrAppend(&out, "iterations      ", t.num_iterations(), "\n");
  absl::StrAppend(&out, "ops             ", t.num_ops(), " (");
  for (int p = 0; p < kNumPhases; ++p) {
    absl::StrAppend(&out, p == 0 ? "" : ", ", PhaseName(static_cast<Phase>(p)), " ",
                    s.ops_per_phase[p]);
  }
  absl::StrAppend(&out, ")\n");
  absl::StrAppend(&out, "tensors         ", t.num_tensors(), " (", t.num_uses(), " uses, ",
                  s.memory_events, " memory events, ", s.active_swaps, " active and ",
                  s.passive_swaps, " passive swap-outs)\n");
  absl::StrAppend(&out, "iteration time  ");
  if (t.num_iterations() == 1) {
    absl::StrAppend(&out, FormatDurationNs(s.total_wall_time_ns));
  } else {
    absl::StrAppend(&out, "mean ", FormatDurationNs(s.total_wall_time_ns / t.num_iterations()),
                    " (min ", FormatDurationNs(s.min_wall_time_ns), ", max ",
                    FormatDurationNs(s.max_wall_time_ns), ")");
  }
  absl::StrAppend(&out, t.has_op_durations()
                            ? absl::StrCat("; op durations recorded (sum ",
                                           FormatDurationNs(s.total_op_duration_ns), ")")
                            : "; no per-op durations",
                  "\n\n");

  TextTable kinds({"tensor kind", "count", "total bytes"});
  for (int k = 0; k < kNumTensorKinds; ++k) {
    if (s.tensors_per_kind[k] == 0) continue;
    kinds.AddRow({std::string(TensorKindName(static_cast<TensorKind>(k))),
                  absl::StrCat(s.tensors_per_kind[k]), FormatBytes(s.bytes_per_kind[k])});
  }
  absl::StrAppend(&out, kinds.Render(), "\n");

  TextTable ops({"op", "count"});
  for (size_t i = 0; i < s.op_name_counts.size() && static_cast<int>(i) < args.top_op_count(); ++i) {
    ops.AddRow({t.op_name(s.op_name_counts[i].first), absl::StrCat(s.op_name_counts[i].second)});
  }
  absl::StrAppend(&out, ops.Render(), "\n");

  const IterationCurve& peak_it = c.iterations()[c.peak_unswapped().iteration];
  absl::StrAppend(&out, "peak unswapped  ", PeakText(t, c.peak_unswapped()), "\n");
  absl::StrAppend(&out, "peak recorded   ", PeakText(t, c.peak_recorded()), "\n");
  absl::StrAppend(&out, "persistent      ", BytesExact(peak_it.persistent_bytes),
                  " resident through iteration ", c.peak_unswapped().iteration, "\n");
  absl::StrAppend(&out, AnatomyText(t, c, an));
  const AllocatorComparison& a = c.allocator();
  if (a.ops_compared > 0) {
    absl::StrAppend(&out, "allocator diff  max ", FormatBytes(a.max_abs_diff_bytes), " at ",
                    t.op_name_at(a.max_diff_op), " (global op ", a.max_diff_op, "), mean ",
                    FormatBytes(static_cast<int64_t>(a.mean_abs_diff_bytes)), " over ",
                    a.ops_compared, " ops\n");
  } else {
    absl::StrAppend(&out, "allocator diff  (no allocator figures recorded)\n");
  }
  if (!peak_it.largest_at_peak.empty()) {
    absl::StrAppend(&out, "\nlargest tensors live at the unswapped peak:\n");
    // The tensor column: "NAME (ID)" (trace/tensor_label.h), "ID" unnamed.
    TextTable big({"tensor", "bytes", "kind"});
    for (TensorId id : peak_it.largest_at_peak) {
      big.AddRow({TensorLabel(t, id, LabelForm::kCell), FormatBytes(t.tensor(id).size_bytes),
                  std::string(TensorKindName(t.tensor(id).kind))});
    }
    absl::StrAppend(&out, big.Render(/*left_columns=*/1));
  }
  return out;
}

nlohmann::json PeakAtJson(const Trace& t, const PeakInfo& p) {
  return {{"iteration", p.iteration},
          {"op", p.local_op},
          {"op_name", t.op_name_at(p.op)},
          {"phase", std::string(PhaseName(p.phase))}};
}

std::string RenderJson(const Trace& t, const TraceStats& s, const MemoryCurve& c,
                       const Anatomies& an, const InspectArgs& args) {
  using nlohmann::json;
  const IterationCurve& peak_it = c.iterations()[c.peak_unswapped().iteration];
  const TraceMetadata& md = t.metadata();
  json j;
  j["trace"] = t.source();
  j["metadata"] = {{"device_name", md.device_name},
                   {"device_memory_bytes", md.device_memory_bytes},
                   {"h2d_bandwidth_bytes_per_s", md.h2d_bandwidth_bytes_per_s},
                   {"d2h_bandwidth_bytes_per_s", md.d2h_bandwidth_bytes_per_s},
                   {"model_name", md.model_name},
                   {"model_layers", md.model_layers}};
  j["num_iterations"] = t.num_iterations();
  j["num_ops"] = t.num_ops();
  json phases = json::object();
  for (int p = 0; p < kNumPhases; ++p) {
    phases[std::string(PhaseName(static_cast<Phase>(p)))] = s.ops_per_phase[p];
  }
  j["num_ops_by_phase"] = phases;
  j["num_tensors"] = t.num_tensors();
  j["num_uses"] = t.num_uses();
  json kinds = json::object();
  for (int k = 0; k < kNumTensorKinds; ++k) {
    kinds[std::string(TensorKindName(static_cast<TensorKind>(k)))] = {
        {"num_tensors", s.tensors_per_kind[k]}, {"bytes", s.bytes_per_kind[k]}};
  }
  j["tensors_by_kind"] = kinds;
  json top = json::array();
  for (size_t i = 0; i < s.op_name_counts.size() && static_cast<int>(i) < args.top_op_count(); ++i) {
    top.push_back({{"name", t.op_name(s.op_name_counts[i].first)},
                   {"num_ops", s.op_name_counts[i].second}});
  }
  j["top_ops"] = top;
  j["peak_unswapped_bytes"] = c.peak_unswapped().bytes;
  j["peak_unswapped_at"] = PeakAtJson(t, c.peak_unswapped());
  j["peak_recorded_bytes"] = c.peak_recorded().bytes;
  j["peak_recorded_at"] = PeakAtJson(t, c.peak_recorded());
  j["persistent_bytes"] = peak_it.persistent_bytes;
  int64_t resident_at_start = 0;  // allocated before the first op (no ALLOC)
  for (TensorId id = 0; id < t.num_tensors(); ++id) {
    const TensorLifetime& lt = t.lifetime(id);
    if (lt.occupies_device() && lt.alloc_op == -1) resident_at_start += t.tensor(id).size_bytes;
  }
  j["resident_at_start_bytes"] = resident_at_start;
  nlohmann::json anatomy = AnatomyJson(t, an.peak);
  j["peak_bytes_by_kind"] = anatomy["peak_bytes_by_kind"];
  j["first_step"] = an.first ? AnatomyJson(t, *an.first)["first_step"] : anatomy["first_step"];
  j["mean_wall_time_ns"] = t.num_iterations() > 0 ? s.total_wall_time_ns / t.num_iterations() : 0;
  j["has_op_durations"] = t.has_op_durations();
  j["num_memory_events"] = s.memory_events;
  j["num_active_swap_outs"] = s.active_swaps;
  j["num_passive_swap_outs"] = s.passive_swaps;
  if (c.allocator().ops_compared > 0) {
    j["allocator_diff"] = {{"num_ops_compared", c.allocator().ops_compared},
                           {"max_abs_bytes", c.allocator().max_abs_diff_bytes},
                           {"mean_abs_bytes", c.allocator().mean_abs_diff_bytes}};
  }
  json largest = json::array();
  for (TensorId id : peak_it.largest_at_peak) {
    largest.push_back({{"tensor_id", t.tensor(id).trace_id},
                       {"size_bytes", t.tensor(id).size_bytes},
                       {"kind", std::string(TensorKindName(t.tensor(id).kind))},
                       {"name", std::string(t.tensor_name(id))},
                       {"label", TensorLabel(t, id)}});
  }
  j["largest_at_peak"] = largest;
  json per_iter = json::array();
  for (int32_t it = 0; it < t.num_iterations(); ++it) {
    const IterationCurve& ic = c.iterations()[it];
    per_iter.push_back({{"iteration", it},
                        {"num_ops", t.iteration(it).num_ops()},
                        {"wall_time_ns", t.iteration(it).wall_time_ns},
                        {"peak_unswapped_bytes", ic.peak_unswapped.bytes},
                        {"peak_recorded_bytes", ic.peak_recorded.bytes},
                        {"persistent_bytes", ic.persistent_bytes}});
  }
  j["iterations"] = per_iter;
  // What an importer recorded (import.* metadata attributes), when it did.
  json imported = json::object();
  for (const auto& [k, v] : t.metadata().attributes) {
    if (absl::StartsWith(k, "import.")) imported[k.substr(7)] = v;
  }
  if (!imported.empty()) j["import"] = imported;
  return j.dump(2) + "\n";
}

}  // namespace

void SetupInspect(CLI::App& root, Action* action) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* sub = root.add_subcommand(
      "inspect", "Summarize a trace: iterations, ops per phase, op histogram, tensors by kind, "
                 "peak memory (unswapped and recorded), iteration time.");
  args->flags.Positional(sub, "trace", &args->trace,
                         "Trace file (binary or JSON, optionally gzip)", /*required=*/true);
  sub->add_flag("--json", args->json, "Machine-readable JSON report (docs/json/inspect.schema.json)");
  args->flags.Int(sub, "--top-ops", &args->top_ops, "Op names to list (default 10)", 0, INT32_MAX);
  args->flags.Int(sub, "--top-tensors", &args->top_tensors,
                  "Largest tensors at the peak to list (default 10)", 0, INT32_MAX);
  args->flags.Text(sub, "-o,--output", &args->output, "Write the report to FILE instead of stdout");
  sub->callback([args, action] {
    *action = [args]() -> absl::Status {
      args->flags.Parse();
      SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadTraceArg(args->trace, &args->flags));
      SWAPPLAN_RETURN_IF_ERROR(args->flags.Status());
      CurveOptions opts;
      opts.top_tensors_at_peak = static_cast<int32_t>(args->top_tensors.value_or(10));
      SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace, opts));
      TraceStats stats = ComputeTraceStats(trace);
      SWAPPLAN_ASSIGN_OR_RETURN(Anatomies anatomies, AnalyzeTrace(trace, curve));
      return WriteOutput(args->output.value_or(""),
                         args->json ? RenderJson(trace, stats, curve, anatomies, *args)
                                    : RenderText(trace, stats, curve, anatomies, *args));
    };
  });
}

}  // namespace swapplan::cli
