// What-if scaling (seed 001 §7.2 Table 4 and Appendix C Table 3; for
// inference requests seed 003 §7.3's longest context): starting
// from a synthesizer configuration, grow one dimension — micro-batch size,
// sequence length, hidden size or layer count — and find, per planner, the
// largest value whose step still fits the device (capacity minus reserve),
// with the simulated step time at every value tried and, beside it, the
// time linearly extrapolated from the two largest values that fit without
// swapping (the paper's "E-Time").
//
//   WhatIfOptions o;
//   SWAPPLAN_ASSIGN_OR_RETURN(o.base.model, ModelPreset("llama2-7b"));
//   SWAPPLAN_ASSIGN_OR_RETURN(o.base.device, DevicePresetModel("ascend-910b-64g"));
//   o.base.micro_batch_sequences = 4;
//   o.base.model.layers = 5;
//   o.dimension = ScaleDimension::kBatch;
//   SWAPPLAN_ASSIGN_OR_RETURN(WhatIfResult r, RunWhatIf(o));
//   r.max["chameleon"].value;   // largest micro-batch that fits with Chameleon
//
// Values tried are v_k = start + k × step (start: the base configuration's).
// Search: v_0, then galloping k = 1, 2, 4, 8, ... while any planner still
// fits at the last value tried (and v_k <= max_value), then per planner a
// binary search between its largest fitting and smallest failing k. Every
// value tried is judged for every planner (one synthesis, one comparison:
// eval/compare.h), so the table has no holes and each evaluation helps
// every planner's search. This assumes a planner that fails at v fails at
// every larger v (memory grows with each dimension); for a heuristic that
// breaks it the result is the largest value found, and the table shows
// every value tried.
//
// Step times are the simulator's iteration times (ideal: unlimited memory)
// on the synthesizer's roofline durations; a planner's step "fits" when its
// simulated run has no OOM.
//
// Complexity: O(log(range) × planners) evaluations, each a synthesis
// O(ops + tensors) plus the comparison (see compare.h).
#ifndef SWAPPLAN_EVAL_WHATIF_H_
#define SWAPPLAN_EVAL_WHATIF_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/eval/compare.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/synth/config.h"

namespace swapplan {

enum class ScaleDimension : uint8_t {
  kBatch = 0,   // sequences per micro-batch (MBS)
  kSeq = 1,     // sequence length (an inference request's prompt)
  kHidden = 2,  // hidden size (FFN width and heads fixed)
  kLayers = 3,  // transformer layers of the whole model
};
// "batch", "seq", "hidden", "layers".
absl::string_view ScaleDimensionName(ScaleDimension d);
// The dimension a name means: a ScaleDimensionName or "sequence" (= "seq");
// false for any other name.
bool ParseScaleDimension(absl::string_view name, ScaleDimension* out);

// The value of dimension `d` in `o`, and `o` with it set to `value` (for
// kSeq with learned positions the position table grows with it).
int64_t DimensionValue(const SynthOptions& o, ScaleDimension d);
SynthOptions WithDimension(SynthOptions o, ScaleDimension d, int64_t value);

// Step used when WhatIfOptions::step is 0: batch 1; layers the pipeline
// degree (layers must stay divisible by it); seq 1024; hidden the smallest
// multiple of 2 × heads × tp that is at least 128 (heads must divide it,
// head dimensions stay even for rotary embeddings).
int64_t DefaultStep(const SynthOptions& o, ScaleDimension d);

struct WhatIfOptions {
  // Starting configuration (its iterations are forced to 1, tensor names
  // off). The budget is base.device.capacity_bytes − reserve_bytes.
  SynthOptions base;
  ScaleDimension dimension = ScaleDimension::kBatch;
  // Grid step; 0 = DefaultStep.
  int64_t step = 0;
  // Largest value to try; 0 = no limit but max_evaluations.
  int64_t max_value = 0;
  // Evaluations (syntheses) at most; the search stops there with a note.
  int32_t max_evaluations = 64;
  // Kept back from the device memory for fragmentation and workspace.
  int64_t reserve_bytes = 0;
  // Copy latency, half duplex, ...; bandwidths 0 = the device's host link.
  SimulatorOptions simulator;
  // > 0: a planner's step counts as fitting only when its simulated
  // overhead versus ideal is at most this (0.2 = 20%); 0 = any step that
  // runs without OOM fits, however slow.
  double max_overhead_vs_ideal = 0;
  // Two values (both on the grid, both fitting without swapping) to
  // extrapolate the step time through, as the paper's Table 3 does; empty =
  // the two largest values tried that fit without swapping.
  std::vector<int64_t> extrapolate_from;
  // Planners to size; empty = every planner of compare's default set, or
  // for an inference request (base.inference) noswap, chameleon and
  // hyperoffload (its KV-cache offload, planners/hyperoffload/kv_cache.h).
  // "ideal" is always judged (the reference) but never sized.
  std::vector<std::string> planners;
  // Planner-specific options (compare.h), e.g. {"hyperoffload",
  // "kv_offload", "all"}.
  std::vector<CompareOptions::PlannerOption> planner_options;

  // InvalidArgument naming the field (bad base configuration, step < 0,
  // max_value below the start, reserve not below the capacity, unknown
  // planner, max_evaluations < 1, negative max overhead, extrapolate_from
  // not two distinct values on the grid).
  absl::Status Validate() const;
};

struct WhatIfCell {
  // The simulated step runs without OOM.
  bool feasible = false;
  // Feasible and within max_overhead_vs_ideal: what the search sizes.
  bool fits = false;
  // Simulated iteration time and its parts (when the planner returned a
  // policy; 0 otherwise).
  int64_t iteration_time_ns = 0;
  double overhead_vs_ideal = 0;
  int64_t stall_ns = 0;
  int64_t recompute_ns = 0;
  int64_t peak_bytes = 0;
};

struct WhatIfPoint {
  int64_t value = 0;
  int64_t peak_unswapped_bytes = 0;
  int64_t persistent_bytes = 0;
  int64_t ideal_time_ns = 0;
  // Linear extrapolation of the step time through two values that fit
  // without swapping (WhatIfOptions::extrapolate_from, else the two largest
  // tried); nullopt for values that fit without swapping or when fewer than
  // two do.
  std::optional<int64_t> extrapolated_time_ns;
  // Per planner (WhatIfResult::planners order).
  std::vector<WhatIfCell> cells;
};

struct WhatIfMax {
  // Largest value that fits (WhatIfCell::fits); nullopt when not even the
  // start does.
  std::optional<int64_t> value;
  int64_t iteration_time_ns = 0;
  // Smallest value tried that does not fit (nullopt: none tried).
  std::optional<int64_t> first_failing;
};

struct WhatIfResult {
  ScaleDimension dimension = ScaleDimension::kBatch;
  int64_t start = 0;
  int64_t step = 0;
  int64_t budget_bytes = 0;
  int64_t device_memory_bytes = 0;
  int64_t reserve_bytes = 0;
  double max_overhead_vs_ideal = 0;
  double h2d_bandwidth_bytes_per_s = 0;
  double d2h_bandwidth_bytes_per_s = 0;
  // Sized planners, in table order (ideal excluded).
  std::vector<std::string> planners;
  // Every value tried, ascending.
  std::vector<WhatIfPoint> points;
  // Per planner (same order as `planners`).
  std::vector<WhatIfMax> max;
  // The two values the extrapolation runs through (nullopt: fewer than two
  // fit without swapping).
  std::optional<int64_t> extrapolation_from, extrapolation_to;
  // Why the search stopped early, if it did (evaluation cap, max_value, a
  // value the synthesizer cannot build).
  std::string note;
  int32_t evaluations = 0;
};

// After each evaluation: the point and the wall time so far (seconds).
using WhatIfProgress = std::function<void(const WhatIfPoint&, double elapsed_s)>;

// Runs the search. InvalidArgument for bad options or when the start value
// itself cannot be synthesized; errors of the planners other than
// ResourceExhausted.
absl::StatusOr<WhatIfResult> RunWhatIf(const WhatIfOptions& options,
                                       const WhatIfProgress& progress = {});

}  // namespace swapplan

#endif  // SWAPPLAN_EVAL_WHATIF_H_
