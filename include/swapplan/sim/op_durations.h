// Op durations of one iteration, as the evaluation simulator and the
// baselines use them: the recorded device durations when the trace has them,
// otherwise the Eq. 1 estimate of seeds 000/001 — every op of the iteration
// takes T_iter / N_iter.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(OpDurations d, ComputeOpDurations(trace, 0));
//   d.duration_ns[3];                 // op 3 of iteration 0 (local index)
//   d.source == DurationSource::kEstimated   // the trace had no durations
//
// Integer rounding: the estimated ops share the time exactly — the k-th of m
// estimated ops gets floor((k+1)·R/m) − floor(k·R/m) ns, so they sum to R.
// When only some ops have durations (kMixed), R is what the recorded ones
// leave of the wall time (0 when they already exceed it).
//
// Complexity: O(ops of the iteration).
#ifndef SWAPPLAN_SIM_OP_DURATIONS_H_
#define SWAPPLAN_SIM_OP_DURATIONS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class DurationSource : uint8_t {
  kRecorded = 0,   // every op of the iteration has a recorded duration
  kEstimated = 1,  // none has: Eq. 1 from the iteration's wall time
  kMixed = 2,      // some have; the others share the rest of the wall time
};

// "recorded", "estimated (Eq. 1)", "mixed (recorded + Eq. 1)".
absl::string_view DurationSourceName(DurationSource s);

struct OpDurations {
  // One entry per op of the iteration, by local op index.
  std::vector<int64_t> duration_ns;
  DurationSource source = DurationSource::kRecorded;
  // Sum of duration_ns.
  int64_t total_ns = 0;
};

// Returns the durations of iteration `iteration`. InvalidArgument when the
// iteration does not exist; FailedPrecondition when some op lacks a duration
// and the iteration has no wall time to estimate it from.
absl::StatusOr<OpDurations> ComputeOpDurations(const Trace& trace, int32_t iteration);

}  // namespace swapplan

#endif  // SWAPPLAN_SIM_OP_DURATIONS_H_
