// The hybrid planner's swap step (swaps.h).
#include "planners/hybrid/swaps.h"

#include <utility>

#include "swapplan/planners/chameleon/chameleon_planner.h"

namespace swapplan::hybrid_internal {

absl::StatusOr<Policy> PlanSwaps(const PlanningProblem& problem, int32_t logical_layers,
                                 int64_t min_tensor_bytes, SwapInputs inputs) {
  ChameleonOptions options;
  options.layers = logical_layers;
  options.min_tensor_bytes = min_tensor_bytes;
  ChameleonPlanner chameleon(options);
  ChameleonOverlay overlay;
  overlay.bytes_delta = std::move(inputs.bytes_delta);
  overlay.extra_compute_ns = std::move(inputs.extra_compute_ns);
  overlay.excluded = std::move(inputs.excluded);
  overlay.pinned = std::move(inputs.pinned);
  overlay.fingerprint = std::move(inputs.fingerprint);
  return chameleon.PlanWithOverlay(problem, overlay);
}

}  // namespace swapplan::hybrid_internal
