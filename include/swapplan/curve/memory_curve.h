// Memory curve: bytes in use per op, rebuilt from the trace's tensor
// lifetimes (seeds 000/001 §4, Fig. 3). Two curves per op:
//
//   unswapped  as if nothing had been swapped — a tensor occupies the device
//              from its allocation to its free, swap events ignored. This is
//              what planners must bring under the budget.
//   recorded   what the recorded run actually held: tensors swapped out by
//              the runtime (passively on OOM, or by a previous policy) are
//              subtracted between their SWAP_OUT and SWAP_IN.
//
//   bytes
//     ^            unswapped
//     |        .------------.
//     |       /   .------.   |    <- a swapped-out tensor is still counted
//     |      /   / rec.   |  |
//     |-----'---'         '--'---  recorded dips while it is off-device
//     +-----------------------------> op
//
// Values are "during the op" (everything alive at any point of it: inputs,
// outputs, tensors freed right after). Allocators report bytes in use *after*
// an op; where the trace has such figures they are compared with the rebuilt
// recorded curve after each op, which exposes recorder or importer bugs.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve c, ComputeMemoryCurve(trace));
//   c.peak_unswapped().bytes;   // the number planners must beat
//   c.unswapped_bytes()[op];    // per global op
//
// Complexity: O(ops + tensors + events + P × I) time, where P counts tensors
// alive across I > 1 iterations (only for per-iteration "largest at peak"
// lists), and O(ops) memory (four arrays of one value per op).
#ifndef SWAPPLAN_CURVE_MEMORY_CURVE_H_
#define SWAPPLAN_CURVE_MEMORY_CURVE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct CurveOptions {
  // How many of the largest tensors live at each peak to list.
  int32_t top_tensors_at_peak = 10;

  // InvalidArgument when top_tensors_at_peak < 0.
  absl::Status Validate() const;
};

struct PeakInfo {
  int64_t bytes = 0;
  OpIndex op = kNoOp;       // global op index of the first op at the peak
  int32_t iteration = -1;
  int32_t local_op = -1;    // index within the iteration
  Phase phase = Phase::kOther;
};

struct AllocatorComparison {
  // Ops that carry allocator_bytes_in_use.
  int64_t ops_compared = 0;
  // max |allocator - rebuilt recorded bytes after the op| and where.
  int64_t max_abs_diff_bytes = 0;
  OpIndex max_diff_op = kNoOp;
  double mean_abs_diff_bytes = 0;
};

struct IterationCurve {
  PeakInfo peak_unswapped;
  PeakInfo peak_recorded;
  // Bytes resident during the whole iteration (allocated before its first op
  // and still allocated at its last): parameters, optimizer states, gradients
  // kept across iterations, ...
  int64_t persistent_bytes = 0;
  // Largest tensors live at peak_unswapped, by size descending (ties: id).
  std::vector<TensorId> largest_at_peak;
  AllocatorComparison allocator;
};

class MemoryCurve {
 public:
  // Per global op (Trace::num_ops() entries each).
  const std::vector<int64_t>& unswapped_bytes() const { return unswapped_; }
  const std::vector<int64_t>& recorded_bytes() const { return recorded_; }
  // Recorded bytes in use after the op (allocator view).
  const std::vector<int64_t>& recorded_after_bytes() const { return recorded_after_; }
  // Tensors occupying the device during the op, swaps ignored.
  const std::vector<int32_t>& live_tensors() const { return live_; }

  const std::vector<IterationCurve>& iterations() const { return iterations_; }
  // Over all iterations.
  const PeakInfo& peak_unswapped() const { return peak_unswapped_; }
  const PeakInfo& peak_recorded() const { return peak_recorded_; }
  const AllocatorComparison& allocator() const { return allocator_; }

 private:
  friend absl::StatusOr<MemoryCurve> ComputeMemoryCurve(const Trace&, const CurveOptions&);
  std::vector<int64_t> unswapped_;
  std::vector<int64_t> recorded_;
  std::vector<int64_t> recorded_after_;
  std::vector<int32_t> live_;
  std::vector<IterationCurve> iterations_;
  PeakInfo peak_unswapped_;
  PeakInfo peak_recorded_;
  AllocatorComparison allocator_;
};

// Returns the curves of every iteration of `trace`. Requires a trace from
// TraceBuilder::Finish() (always valid). InvalidArgument for bad options;
// every sum is checked (util/checked.h), and an overflow — possible only
// through allocator_bytes_in_use values near INT64_MAX, since Finish()
// bounds the sum of all tensor sizes — is an input error naming the tensor
// or op (rule overflow).
absl::StatusOr<MemoryCurve> ComputeMemoryCurve(const Trace& trace,
                                               const CurveOptions& options = {});

}  // namespace swapplan

#endif  // SWAPPLAN_CURVE_MEMORY_CURVE_H_
