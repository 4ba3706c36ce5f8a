// Op timeline: per-op time estimates of one iteration, as the planners and
// the checker see them. Two sources:
//
//   eq1       seed 001 Eq. (1): every op takes T_iter / N_iter, where T_iter
//             is the iteration's measured wall time and N_iter its op count.
//             Needs no per-op durations — the point of the Chameleon method.
//   recorded  the ops' measured device durations, back to back.
//   auto      recorded when every op of the iteration has a duration (and
//             no iteration time is given explicitly), otherwise eq1. The default of both the planner and the checker,
//             so that a policy is checked against the timeline it was
//             planned on.
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
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class OpTimeModel : uint8_t { kAuto = 0, kEq1 = 1, kRecorded = 2 };

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
  // Returns the timeline of iteration `iteration` (which must exist).
  // `iteration_time_ns` > 0 replaces the recorded wall time in Eq. (1).
  // InvalidArgument when the model needs something the trace lacks (eq1
  // without a wall time, recorded without every duration) or when the
  // iteration's total time is 0 (no time to overlap anything with).
  static absl::StatusOr<OpTimeline> Build(const Trace& trace, int32_t iteration,
                                          OpTimeModel model, int64_t iteration_time_ns = 0);

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

  // The model actually used (never kAuto).
  OpTimeModel model() const { return model_; }
  // T_iter of Eq. (1), or the sum of the recorded durations.
  int64_t iteration_time_ns() const { return iteration_time_ns_; }

 private:
  std::vector<double> end_ns_;
  OpTimeModel model_ = OpTimeModel::kEq1;
  int64_t iteration_time_ns_ = 0;
};

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_OP_TIMES_H_
