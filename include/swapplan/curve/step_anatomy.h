// Step anatomy: what makes one iteration's unswapped peak, and whether the
// iteration is a *first step* — one in which the optimizer creates its state
// (Adam's exp_avg / exp_avg_sq, SGD's momentum buffers), so that the state is
// absent before the optimizer phase and resident after it. A trace of only
// such a step peaks where a steady-state step does not: in the optimizer,
// over parameters, gradients and the new state, none of which an activation
// planner moves. The anatomy says so, names the phase and the tensors at the
// peak, and estimates the steady-state peak: the same step with that state
// resident from the iteration's first op.
//
//   bytes        first step                steady-state estimate
//     ^                        .--.                   .--.
//     |      .-.              |    |      .-.        |    |
//     |     /   \    state -> |    |     /   \  ____|    |
//     |    /     \ .---------'     |    /     \/         |   (+ state bytes
//     |---'       '                '---'                 '-   before creation)
//     +--F-------B-------O----------> op
//
//   SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve c, ComputeMemoryCurve(trace));
//   SWAPPLAN_ASSIGN_OR_RETURN(StepAnatomy a, AnalyzeStep(trace, c, /*iteration=*/0));
//   if (a.first_step) { ... a.steady_peak_bytes ... }
//
// Complexity: O(ops of the iteration + tensors + S log S) for S optimizer
// state tensors created in the iteration.
#ifndef SWAPPLAN_CURVE_STEP_ANATOMY_H_
#define SWAPPLAN_CURVE_STEP_ANATOMY_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct StepAnatomy {
  int32_t iteration = -1;
  // The iteration's unswapped peak (curve.iterations()[iteration]).
  PeakInfo peak;
  // Bytes live during the peak op, by TensorKind (index static_cast<int>).
  std::array<int64_t, kNumTensorKinds> peak_bytes_by_kind{};

  // First step: OPTIMIZER_STATE tensors are allocated in this iteration and
  // outlive it (resident to its end, used by later iterations or never freed).
  bool first_step = false;
  int32_t num_state_tensors_created = 0;
  int64_t state_bytes_created = 0;
  // Global op of the first such allocation (kNoOp when none).
  OpIndex state_created_at = kNoOp;

  // Estimated unswapped peak of a steady-state step: the curve of this
  // iteration plus, at each op, the created state not yet allocated there.
  // Equal to peak.bytes when the iteration is not a first step.
  int64_t steady_peak_bytes = 0;
  OpIndex steady_peak_op = kNoOp;  // global op
  int32_t steady_peak_local_op = -1;
  Phase steady_peak_phase = Phase::kOther;
};

// The anatomy of `iteration` of `trace`, whose curve is `curve`.
// InvalidArgument when the iteration is out of range or the curve is not the
// trace's.
absl::StatusOr<StepAnatomy> AnalyzeStep(const Trace& trace, const MemoryCurve& curve,
                                        int32_t iteration);

}  // namespace swapplan

#endif  // SWAPPLAN_CURVE_STEP_ANATOMY_H_
