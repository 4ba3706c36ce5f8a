// Swap windows and the candidate list (seed 001 §5.3, Eq. (2)).
//
// A swap window is an idle gap of a tensor between a forward use and the
// next use, which is a backward use: the tensor may leave the device after
// its last forward use (`last_fwd_op`, the swap-out op) and must be back for
// its first backward use (`first_bwd_op`). With several micro-batches
// (gradient accumulation, a 1F1B pipeline stage) each micro-batch's
// activations are used by that micro-batch's forward and backward ops only,
// so the window runs from the micro-batch's own last forward use to its own
// first backward use, whatever other micro-batches run in between:
//
//   ops     F0 F0 F1 F1 B0 B0 F2 B1 ...        (1F1B)
//   t (mb0)  u--------------u                  window: after op 1 .. op 4
//
// "Forward" and "backward" are the ops' effective types (logical_layers.h:
// OTHER ops take their segment's). Parameters and persistent tensors are
// never windows, nor tensors under min_tensor_bytes, nor gaps whose copy out
// cannot complete (idle d2h stream) at least one op before the first
// backward use — such a swap could never free anything.
//
//   coverage  ops [cover_begin, first_bwd_op - 1] during which the tensor
//             can be off the device: from the op after its earliest release
//             (default) or, as in the papers, after its last forward use.
//
// The candidate list (CL) holds the unselected windows whose coverage
// contains at least one MRE, scored by Eq. (2):
//
//   score = N̂_MRE + C × Ŝ      N_MRE = MREs in the coverage, S = bytes,
//                                 both normalised over the CL (options.h)
//
// sorted by score descending; ties: larger tensor first, then window order
// (trace tensor order, then op order), so results are deterministic.
//
// Complexity: FindSwapWindows O(ops + uses of the iteration's tensors +
// windows × log ops); ScoreCandidates O(c log ops + c log c) for c windows.
#ifndef SWAPPLAN_PLANNERS_CHAMELEON_CANDIDATES_H_
#define SWAPPLAN_PLANNERS_CHAMELEON_CANDIDATES_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "swapplan/planners/chameleon/logical_layers.h"
#include "swapplan/planners/chameleon/mrl.h"
#include "swapplan/planners/chameleon/options.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct SwapWindow {
  TensorId tensor = kNoTensor;
  // Local ops: the last forward use (swap-out op) and the next use.
  int32_t last_fwd_op = 0;
  int32_t first_bwd_op = 0;
  int64_t size_bytes = 0;
  // Eq. (3) copy times per direction.
  double out_ns = 0;
  double in_ns = 0;
  // The op during which the copy out completes when the d2h stream is idle:
  // no policy can release the tensor earlier.
  int32_t earliest_release_op = 0;
  // First op of the coverage (see above); the last is first_bwd_op - 1.
  int32_t cover_begin = 0;

  int32_t cover_end() const { return first_bwd_op - 1; }
};

// All swap windows of iteration `iteration`, ordered by tensor then op.
// Requires positive bandwidths and `layers` / `timeline` of that iteration.
std::vector<SwapWindow> FindSwapWindows(const Trace& trace, int32_t iteration,
                                        const LogicalLayers& layers, const OpTimeline& timeline,
                                        double h2d_bytes_per_s, double d2h_bytes_per_s,
                                        int64_t min_tensor_bytes, IdleWindowStart start);

struct ScoredCandidate {
  // Index into the windows vector.
  int32_t window = 0;
  int32_t n_mre = 0;
  double n_hat = 0;
  double s_hat = 0;
  double score = 0;
};

// The CL: every window in `available` whose coverage contains an active MRE,
// scored by Eq. (2) and sorted (see above).
std::vector<ScoredCandidate> ScoreCandidates(absl::Span<const SwapWindow> windows,
                                             absl::Span<const int32_t> available,
                                             const MemoryReductionList& mrl, double score_c,
                                             ScoreNormalization normalization);

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_CHAMELEON_CANDIDATES_H_
