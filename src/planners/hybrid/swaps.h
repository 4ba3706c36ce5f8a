// Internal: the hybrid planner's swap step (hybrid_planner.h, step 2) — the
// Chameleon planner on top of the recomputations — in its own translation
// unit (the Chameleon and baseline headers each define their own
// kDefaultLogicalLayers).
#ifndef SWAPPLAN_SRC_PLANNERS_HYBRID_SWAPS_H_
#define SWAPPLAN_SRC_PLANNERS_HYBRID_SWAPS_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "swapplan/planners/planner.h"

namespace swapplan::hybrid_internal {

// What the recomputations leave (ChameleonOverlay's fields).
struct SwapInputs {
  std::vector<int64_t> bytes_delta;
  std::vector<int64_t> extra_compute_ns;
  std::vector<TensorId> excluded;
  std::vector<std::pair<TensorId, int32_t>> pinned;
  // The iteration's fingerprint (ChameleonOverlay::fingerprint), or empty.
  std::optional<PolicyFingerprint> fingerprint;
};

// ChameleonPlanner::PlanWithOverlay with `logical_layers` (0: its default)
// and `min_tensor_bytes`, the other options at their defaults: the swap
// items only.
absl::StatusOr<Policy> PlanSwaps(const PlanningProblem& problem, int32_t logical_layers,
                                 int64_t min_tensor_bytes, SwapInputs inputs);

}  // namespace swapplan::hybrid_internal

#endif  // SWAPPLAN_SRC_PLANNERS_HYBRID_SWAPS_H_
