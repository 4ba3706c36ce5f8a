// Reserved-bytes curve: an allocator model (alloc/allocator_model.h)
// replayed over one iteration's allocations and frees in order, giving per
// op what the allocator holds from the device, not only what the program
// has allocated (curve/memory_curve.h).
//
//   reserved ^        .----------------------   reserved: segments stay
//            |   .---'   .--.                     cached after frees
//            |  /   .---'    '--.   allocated
//            |-'---'             '---------
//            +--------------------------------> op
//
// The sequence. Tensors resident before the iteration are allocated first
// (trace order); then for each position (op, or schedule position under a
// policy): the tensors coming back on it (swap-ins and recomputations, item
// order), then the tensors the op allocates (trace order); "during the op"
// is measured here; then everything freed after the op (trace order), the
// tensors a policy item releases after it included. One stream (0): the
// trace has no streams and a swap-in is allocated on the compute stream's
// pool (as the runtime's hooks do). A recomputation's transient tensors are
// not allocated (its targets are).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(AllocationSequence s, SequenceOfIteration(trace, 0));
//   SWAPPLAN_ASSIGN_OR_RETURN(ReservedCurve c, ReplayAllocations(s, AllocatorOptions{}));
//   c.peak_reserved_bytes;                 // >= the allocated peak
//   c.reserved_bytes[op] - c.allocated_bytes[op];   // fragmentation during op
//
// Complexity: building a sequence O(tensors + items + positions); the
// replay O(steps log blocks) time and O(positions + blocks) memory, plus one
// more replay up to the peak for the segments that pin it.
#ifndef SWAPPLAN_CURVE_RESERVED_CURVE_H_
#define SWAPPLAN_CURVE_RESERVED_CURVE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/alloc/allocator_model.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct AllocationStep {
  enum class Kind : uint8_t { kAlloc, kFree, kEmptyCache };
  Kind kind = Kind::kAlloc;
  // -1: before the first position.
  int32_t position = -1;
  // Index into AllocationSequence::slot_tensor.
  int32_t slot = 0;
  int64_t bytes = 0;
  int32_t stream = 0;
};

struct AllocationSequence {
  int32_t num_positions = 0;
  // The trace tensor of each slot.
  std::vector<TensorId> slot_tensor;
  // Ascending positions; within one: allocations, then frees.
  std::vector<AllocationStep> steps;
};

// The unswapped sequence of `iteration` (InvalidArgument when it does not
// exist).
absl::StatusOr<AllocationSequence> SequenceOfIteration(const Trace& trace, int32_t iteration);
// The sequence of a resolved policy (its accounted items; schedule positions
// when it has a schedule). Requires a resolution that did not stop.
AllocationSequence SequenceOfPolicy(const Trace& trace, const ResolvedPolicy& policy);

// A segment at the reserved peak with free bytes in it: the allocated
// blocks in it keep it from being released or reused by a larger request.
struct PinnedSegment {
  int64_t bytes = 0;
  int64_t free_bytes = 0;
  int64_t largest_free_bytes = 0;
  // Tensors of its allocated blocks, largest block first.
  std::vector<TensorId> tensors;
};

struct ReservedCurve {
  AllocatorOptions options;
  // Per position, during it (after its allocations).
  std::vector<int64_t> reserved_bytes;
  std::vector<int64_t> allocated_bytes;  // blocks, rounded
  std::vector<int64_t> requested_bytes;  // the tensors' sizes
  std::vector<int64_t> largest_free_bytes;
  // The first position of the highest reserved value (-1 when no position).
  int64_t peak_reserved_bytes = 0;
  int32_t peak_position = -1;
  // The requested-bytes peak (the allocated curve the planners see).
  int64_t peak_requested_bytes = 0;
  int32_t peak_requested_position = -1;
  // Allocations over options.capacity_bytes after the cache was released,
  // and the position of the first (-1: none).
  int32_t ooms = 0;
  int32_t first_oom_position = -1;
  // Segments with free bytes at the peak, most free bytes first (at most
  // AllocReplayOptions::pinned_segments).
  std::vector<PinnedSegment> pinned;

  int64_t fragmentation_at_peak_bytes() const {
    return peak_position < 0 ? 0 : reserved_bytes[peak_position] - allocated_bytes[peak_position];
  }
};

struct AllocReplayOptions {
  // How many pinned segments to list at the peak.
  int32_t pinned_segments = 5;
  // InvalidArgument when negative.
  absl::Status Validate() const;
};

// Replays `sequence` through the model of `options`. InvalidArgument for
// invalid options, a request above kMaxAllocatorRequestBytes, or a step
// that frees a slot not allocated (or allocates one twice) — never for a
// sequence built above.
absl::StatusOr<ReservedCurve> ReplayAllocations(const AllocationSequence& sequence,
                                                const AllocatorOptions& options,
                                                const AllocReplayOptions& replay = {});

// The curve of `policy` (its fingerprint's iteration of `trace`) resolved on
// `device`: PolicyResolver + SequenceOfPolicy + ReplayAllocations. The
// resolver's first issue as the error (a policy the checker would refuse).
absl::StatusOr<ReservedCurve> PolicyReservedCurve(const Trace& trace, const Policy& policy,
                                                  const DeviceModel& device,
                                                  const AllocatorOptions& options,
                                                  const AllocReplayOptions& replay = {});

}  // namespace swapplan

#endif  // SWAPPLAN_CURVE_RESERVED_CURVE_H_
