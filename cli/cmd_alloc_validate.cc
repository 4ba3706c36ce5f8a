// swapplan alloc-validate SNAPSHOT [--alloc-conf TEXT] [--json] [-o FILE]
//
// Replays the allocation trace of a torch.cuda.memory._snapshot() recording
// (import/alloc_recording.h) through the cuda-caching allocator model and
// compares reserved bytes per event, the reserved peak and the segments
// (alloc/recording_validation.h). The model takes the recording's
// allocator_settings unless --alloc-conf gives others. Exit 0 when the
// comparison ran (whatever it found), 2 for a file that is not a snapshot
// with an allocation trace.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "flags.h"
#include "swapplan/alloc/budget_basis.h"
#include "swapplan/alloc/recording_validation.h"
#include "swapplan/import/alloc_recording.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct AllocValidateArgs {
  FlagSet flags;
  std::string snapshot;
  std::optional<std::string> alloc_conf;
  bool json = false;
  std::optional<std::string> output;
};

std::string Pct(double f) { return absl::StrFormat("%.2f %%", 100.0 * f); }

std::string Settings(const ValidationReport& v, const std::string& from) {
  const std::string conf = AllocConfText(v.allocator);
  return absl::StrCat(conf.empty() ? "PyTorch's defaults" : conf, " (", from, ")");
}

std::string RenderText(const AllocatorRecording& r, const ValidationReport& v, const std::string& from,
                       double tolerance) {
  std::string out;
  absl::StrAppend(&out, "snapshot          ", r.source, " (cuda:", r.device, ", ", v.events,
                  " trace entries, ", r.segments.size(), " segments at the end)\n");
  absl::StrAppend(&out, "model             cuda-caching, ", Settings(v, from), "\n");
  absl::StrAppend(&out, "before the trace  ", v.initial_reserved_bytes, " B reserved in ",
                  v.initial_segments, " segments, ", v.initial_blocks, " blocks allocated (",
                  v.inferred_blocks, " sizes inferred from requests)\n");
  absl::StrAppend(&out, "compared          ", v.compared_events,
                  " events (allocs and completed frees)\n");
  absl::StrAppend(&out, "error per event   p50 ", Pct(v.error_p50_fraction), ", p90 ",
                  Pct(v.error_p90_fraction), ", p99 ", Pct(v.error_p99_fraction), ", max ",
                  Pct(v.error_max_fraction), " (", v.error_max_bytes, " B at entry ",
                  v.error_max_event, ")\n");
  absl::StrAppend(&out, "reserved peak     recorded ", v.recorded_peak_reserved_bytes,
                  " B, model ", v.model_peak_reserved_bytes, " B: error ",
                  Pct(v.peak_error_fraction), "\n");
  absl::StrAppend(&out, "at the end        recorded ", v.recorded_final_reserved_bytes,
                  " B, model ", v.model_final_reserved_bytes, " B\n");
  absl::StrAppend(&out, "segments opened   recorded ", v.recorded_segment_allocs, ", model ",
                  v.model_segment_allocs, "; same bytes at the same allocation ",
                  v.matched_segment_allocs, "; allocations that differ ", v.divergences, "\n");
  for (const std::string& d : v.divergence_notes) absl::StrAppend(&out, "  ", d, "\n");
  absl::StrAppend(&out, "segments at end   recorded ", v.recorded_segments, ", model ",
                  v.model_segments, "; same pool, stream and size ", v.matching_segments,
                  "; of those with the same blocks ", v.matching_layouts, "\n");
  absl::StrAppend(&out, "releases          ", v.releases_replayed,
                  " replayed as empty_cache; recorded OOMs ", v.recorded_ooms, "\n");
  absl::StrAppend(&out, "missing rules     ",
                  v.missing_rules.empty() ? "none" : absl::StrJoin(v.missing_rules, "\n                  "),
                  "\n");
  absl::StrAppend(&out, "verdict           ", v.within_tolerance ? "within " : "NOT within ",
                  Pct(tolerance), " (reserved peak and p99 error per event)\n");
  return out;
}

std::string RenderJson(const AllocatorRecording& r, const ValidationReport& v, const std::string& from,
                       double tolerance) {
  using nlohmann::json;
  json j = {{"snapshot", r.source},
            {"device", r.device},
            {"allocator", "cuda-caching"},
            {"alloc_conf", AllocConfText(v.allocator)},
            {"settings_from", from},
            {"events", v.events},
            {"compared_events", v.compared_events},
            {"initial_reserved_bytes", v.initial_reserved_bytes},
            {"initial_segments", v.initial_segments},
            {"initial_blocks", v.initial_blocks},
            {"inferred_blocks", v.inferred_blocks},
            {"error_p50_fraction", v.error_p50_fraction},
            {"error_p90_fraction", v.error_p90_fraction},
            {"error_p99_fraction", v.error_p99_fraction},
            {"error_max_fraction", v.error_max_fraction},
            {"error_max_bytes", v.error_max_bytes},
            {"error_max_event", v.error_max_event},
            {"recorded_peak_reserved_bytes", v.recorded_peak_reserved_bytes},
            {"model_peak_reserved_bytes", v.model_peak_reserved_bytes},
            {"peak_error_fraction", v.peak_error_fraction},
            {"recorded_final_reserved_bytes", v.recorded_final_reserved_bytes},
            {"model_final_reserved_bytes", v.model_final_reserved_bytes},
            {"recorded_segment_allocs", v.recorded_segment_allocs},
            {"model_segment_allocs", v.model_segment_allocs},
            {"matched_segment_allocs", v.matched_segment_allocs},
            {"divergences", v.divergences},
            {"divergence_notes", v.divergence_notes},
            {"releases_replayed", v.releases_replayed},
            {"recorded_ooms", v.recorded_ooms},
            {"recorded_segments", v.recorded_segments},
            {"model_segments", v.model_segments},
            {"matching_segments", v.matching_segments},
            {"matching_layouts", v.matching_layouts},
            {"missing_rules", v.missing_rules},
            {"tolerance_fraction", tolerance},
            {"within_tolerance", v.within_tolerance}};
  return j.dump(1) + "\n";
}

}  // namespace

void SetupAllocValidate(CLI::App& root, Action* action) {
  auto args = std::make_shared<AllocValidateArgs>();
  CLI::App* sub = root.add_subcommand(
      "alloc-validate",
      "Replay a torch.cuda.memory._snapshot() allocation trace through the caching-allocator "
      "model: reserved bytes per event, the reserved peak and the segments, recorded vs model.");
  args->flags.Positional(sub, "snapshot", &args->snapshot,
                         "Snapshot (pickle or JSON) recorded with _record_memory_history()",
                         /*required=*/true);
  args->flags.Text(sub, "--alloc-conf", &args->alloc_conf,
                   "PYTORCH_CUDA_ALLOC_CONF-style options of the model instead of the "
                   "recording's allocator_settings");
  sub->add_flag("--json", args->json, "JSON instead of text");
  args->flags.Text(sub, "-o,--output", &args->output, "Write the report to FILE instead of stdout");
  sub->callback([args, action] {
    *action = [args]() -> absl::Status {
      args->flags.Parse();
      ValidationOptions o;
      if (args->alloc_conf) {
        absl::StatusOr<AllocatorOptions> a = ParseAllocConf(*args->alloc_conf);
        if (a.ok()) {
          o.allocator = *a;
          o.use_recorded_settings = false;
        } else {
          args->flags.Add(absl::StrCat("--alloc-conf: ", a.status().message()));
        }
      }
      SWAPPLAN_RETURN_IF_ERROR(args->flags.Status());
      SWAPPLAN_ASSIGN_OR_RETURN(AllocatorRecording r, ReadAllocatorRecording(args->snapshot));
      SWAPPLAN_ASSIGN_OR_RETURN(ValidationReport v, ValidateAgainstRecording(r, o));
      const std::string from = !o.use_recorded_settings ? "--alloc-conf"
                               : r.has_settings ? "the recording's allocator_settings"
                                                : "the snapshot has no allocator_settings";
      return WriteOutput(args->output.value_or(""),
                         args->json ? RenderJson(r, v, from, o.tolerance_fraction)
                                    : RenderText(r, v, from, o.tolerance_fraction));
    };
  });
}

}  // namespace swapplan::cli
