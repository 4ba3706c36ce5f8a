// vdnn and bucket: layer-aligned swap-all heuristics (see baselines.h).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/baselines/baselines.h"
#include "planners/baselines/common.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::Status LayerSwapOptions::Validate() const {
  auto bad = [](absl::string_view field, int64_t v) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer-swap options: ", field, " is ", v, "; must be >= 0"));
  };
  if (min_bytes < 0) return bad("min_bytes", min_bytes);
  if (release_lag_layers < 0) return bad("release_lag_layers", release_lag_layers);
  if (prefetch_lead_layers < 0) return bad("prefetch_lead_layers", prefetch_lead_layers);
  if (logical_layers < 0) return bad("logical_layers", logical_layers);
  return absl::OkStatus();
}

const OptionTable<LayerSwapOptions>& LayerSwapOptionTable() {
  using O = LayerSwapOptions;
  using T = OptionType;
  static const OptionTable<O> table({
      {"min_bytes", T::kBytes, "Activations smaller than this stay on the device", "",
       [](const O& o) { return absl::StrCat(o.min_bytes); },
       [](O& o, absl::string_view v) { return ParseOptionBytes(v, &o.min_bytes); }},
      {"release_lag_layers", T::kInt,
       "Release at the end of the forward layer this many layers after the last forward use's",
       "", [](const O& o) { return absl::StrCat(o.release_lag_layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.release_lag_layers); }},
      {"prefetch_lead_layers", T::kInt,
       "Swap in at the start of the backward layer this many layers before the first backward "
       "use's",
       "", [](const O& o) { return absl::StrCat(o.prefetch_lead_layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.prefetch_lead_layers); }},
      {"logical_layers", T::kInt,
       "Logical layers per phase when the trace has no layer hints (0: metadata model_layers, "
       "else 12)",
       "", [](const O& o) { return absl::StrCat(o.logical_layers); },
       [](O& o, absl::string_view v) { return ParseOptionInt(v, &o.logical_layers); }},
  });
  return table;
}

absl::Status LayerSwapPlanner::SetOption(absl::string_view name, absl::string_view value) {
  LayerSwapOptions next = options_;
  SWAPPLAN_RETURN_IF_ERROR(LayerSwapOptionTable().Set(name_, &next, name, value));
  SWAPPLAN_RETURN_IF_ERROR(next.Validate());
  options_ = next;
  return absl::OkStatus();
}

LayerSwapOptions VdnnOptions() {
  return {.min_bytes = 0, .release_lag_layers = 0, .prefetch_lead_layers = 1};
}

LayerSwapOptions BucketOptions() {
  return {.min_bytes = 20LL << 20, .release_lag_layers = 1, .prefetch_lead_layers = 1};
}

absl::StatusOr<Policy> LayerSwapPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const Trace& trace = *problem.trace;
  const int32_t it = problem.iteration;
  SWAPPLAN_ASSIGN_OR_RETURN(LayerSegments layers,
                            SegmentLayers(trace, it, options_.logical_layers));
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> unswapped, IterationUnswappedBytes(problem));
  Policy p = BaselinePolicy(problem, name_, LayerSwapOptionTable().ToParameters(options_));
  for (const ActivationWindow& w : ActivationWindows(trace, it)) {
    if (w.size_bytes < options_.min_bytes) continue;
    const int32_t u = w.last_forward_use, v = w.first_backward_use;
    // Release: the end of the forward layer `lag` layers after u's.
    int32_t seg = layers.segment_of_op[u];
    for (int32_t i = 0; i < options_.release_lag_layers; ++i) {
      const int32_t next = layers.next_same_phase[seg];
      if (next < 0) break;
      seg = next;
    }
    const int32_t release = std::max(u, std::min(layers.segments[seg].last_op, v - 1));
    // Swap-in: the start of the backward layer `lead` layers before v's.
    seg = layers.segment_of_op[v];
    for (int32_t i = 0; i < options_.prefetch_lead_layers; ++i) {
      const int32_t prev = layers.prev_same_phase[seg];
      if (prev < 0) break;
      seg = prev;
    }
    const int32_t swap_in = std::max(layers.segments[seg].first_op, release + 1);
    PolicyItem item = MakePolicyItem(trace, it, w.tensor, u, release, swap_in, v);
    // The layer boundary synchronises with the copy: the op after the
    // release point waits for it when it outlasts the layer (policy.h).
    item.release_waits_for_copy = true;
    p.items.push_back(std::move(item));
  }
  SWAPPLAN_RETURN_IF_ERROR(CheckPolicyFits(
      problem, unswapped, absl::StrCat("swapping ", p.items.size(), " activations"), &p));
  return p;
}

}  // namespace swapplan
