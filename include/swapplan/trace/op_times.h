// Op durations and timeline: per-op time estimates of one iteration — the one
// definition shared by the planners, the checker, the evaluation simulator and
// the baselines. Two sources:
//
//   eq1       seed 001 Eq. (1): every op takes T_iter / N_iter, where T_iter
//             is the iteration's measured wall time and N_iter its op count.
//             Needs no per-op durations — the point of the Chameleon method.
//   recorded  the ops' measured device durations, back to back.
//   auto      recorded when every op of the iteration has a duration (and
//             no iteration time is given explicitly); eq1 when none has;
//             when only some have, the others share what the recorded ones
//             leave of the wall time ("mixed"). The default everywhere, so a
//             policy is checked and simulated against the timeline it was
//             planned on.
//
// Durations are integers: Eq. (1) shares T exactly — the k-th of m estimated
// ops gets floor((k+1)·T/m) − floor(k·T/m) ns — so they sum to T and round
// numbers stay round.
//
//   time ->  0        end(0)     end(1)          end(2)
//            |--op 0--|--op 1----|-----op 2------|
//                          ^ a copy finishing here completes "during op 1":
//                            OpEndingAtOrAfter(t) == 1
//
// Host gaps are not modelled: op i starts when op i-1 ends.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(OpTimeline tl, OpTimeline::Build(trace, 0, OpTimeModel::kAuto));
//   double copy_done = tl.end_ns(10) + 4096 * 1e9 / 25e9;
//   int32_t release = tl.OpEndingAtOrAfter(copy_done);
//
// Complexity: Build O(ops of the iteration); queries O(1), OpEndingAtOrAfter
// O(log ops).
#ifndef SWAPPLAN_TRACE_OP_TIMES_H_
#define SWAPPLAN_TRACE_OP_TIMES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class OpTimeModel : uint8_t { kAuto = 0, kEq1 = 1, kRecorded = 2 };

// Where the durations of an iteration came from.
enum class DurationSource : uint8_t {
  kRecorded = 0,   // every op's recorded duration
  kEstimated = 1,  // Eq. 1 from the iteration time
  kMixed = 2,      // recorded where present; the others share the rest (Eq. 1)
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

// Returns the durations of iteration `iteration` under `model`.
// `iteration_time_ns` > 0 replaces the recorded wall time in Eq. (1).
// `compute_time_scale` (DeviceModel::compute_time_scale: the device planned
// for is that much slower than the one recorded) multiplies every recorded
// time — op durations and the wall time Eq. (1) shares — rounded to the
// nearest ns; an explicit iteration_time_ns is taken as given.
// InvalidArgument for a bad iteration, a negative iteration time or a scale
// not positive and finite, or for kRecorded when some op has no duration;
// FailedPrecondition when Eq. (1) is needed and there is no iteration time.
// O(ops of the iteration).
absl::StatusOr<OpDurations> ComputeOpDurations(const Trace& trace, int32_t iteration,
                                               OpTimeModel model = OpTimeModel::kAuto,
                                               int64_t iteration_time_ns = 0,
                                               double compute_time_scale = 1.0);

// "auto", "eq1", "recorded".
absl::string_view OpTimeModelName(OpTimeModel m);
// Parses the names above; false for anything else.
bool ParseOpTimeModel(absl::string_view name, OpTimeModel* out);

// Transfer time of `bytes` at `bytes_per_s`, in ns (seed 001 Eq. (3)). Always
// computed as bytes * 1e9 / bandwidth so that round numbers stay exact
// (100 bytes at 1e9 B/s is exactly 100 ns). Requires bytes_per_s > 0.
inline double TransferNs(int64_t bytes, double bytes_per_s) {
  return static_cast<double>(bytes) * 1e9 / bytes_per_s;
}

class OpTimeline {
 public:
  // Returns the timeline of iteration `iteration`: ComputeOpDurations laid
  // back to back. Its errors, plus InvalidArgument when the iteration's total
  // time is 0 (no time to overlap anything with).
  static absl::StatusOr<OpTimeline> Build(const Trace& trace, int32_t iteration,
                                          OpTimeModel model, int64_t iteration_time_ns = 0,
                                          double compute_time_scale = 1.0);

  int32_t num_ops() const { return static_cast<int32_t>(end_ns_.size()); }
  // Start and end of local op `i` (0 <= i < num_ops()).
  double start_ns(int32_t i) const { return i == 0 ? 0.0 : end_ns_[i - 1]; }
  double end_ns(int32_t i) const { return end_ns_[i]; }
  double duration_ns(int32_t i) const { return end_ns(i) - start_ns(i); }
  double total_ns() const { return end_ns_.empty() ? 0.0 : end_ns_.back(); }
  // The first op whose end is >= t: the op running when something that
  // completes at time t completes (an event exactly at an op boundary
  // belongs to the op that just ended). num_ops() when t > total_ns().
  int32_t OpEndingAtOrAfter(double t) const;

  // Stretches the timeline by `extra_ns[i]` of compute run just before op i
  // (recomputations): op i ends that much later, and so does every later
  // op. InvalidArgument unless extra_ns has num_ops() non-negative entries.
  // O(ops).
  absl::Status AddComputeBefore(absl::Span<const int64_t> extra_ns);

  // Where the durations came from.
  DurationSource source() const { return source_; }
  // T_iter of Eq. (1), or the sum of the recorded durations.
  int64_t iteration_time_ns() const { return iteration_time_ns_; }

 private:
  std::vector<double> end_ns_;
  DurationSource source_ = DurationSource::kEstimated;
  int64_t iteration_time_ns_ = 0;
};

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_OP_TIMES_H_
