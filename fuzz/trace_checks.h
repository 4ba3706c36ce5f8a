// What a fuzz target checks on a trace the reader accepted: the stages that
// every command runs next (memory curve, statistics, op durations and
// timelines) succeed or fail cleanly on it, and the trace survives a round
// trip through both forms unchanged in counts.
#ifndef SWAPPLAN_FUZZ_TRACE_CHECKS_H_
#define SWAPPLAN_FUZZ_TRACE_CHECKS_H_

#include <string>

#include "fuzz_util.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/policy/saved_tensor_clock.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/trace/stats.h"

namespace swapplan::fuzz {

inline void CheckAcceptedTrace(const Trace& t, const std::string& source) {
  if (t.num_iterations() < 1) Finding("accepted a trace without iterations");
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t);
  CheckOneLineError(c.status(), source);
  TraceStats s = ComputeTraceStats(t);
  if (s.total_wall_time_ns < 0 || s.total_op_duration_ns < 0) Finding("negative totals");
  for (int32_t it = 0; it < t.num_iterations(); ++it) {
    absl::StatusOr<OpDurations> d = ComputeOpDurations(t, it);
    if (!d.ok() && KindOf(d.status()) == ErrorKind::kInternal) Finding("internal op-time error");
    absl::StatusOr<OpTimeline> tl = OpTimeline::Build(t, it, OpTimeModel::kAuto);
    if (!tl.ok() && KindOf(tl.status()) == ErrorKind::kInternal) Finding("internal timeline error");
    // The saved-tensor clock on an accepted trace: refused only when the
    // iteration recorded no events.
    absl::StatusOr<SavedClockPolicy> snapped = SnapToSavedTensorEvents(t, it, Policy{});
    if (snapped.ok() != t.iteration(it).saved_recorded) Finding("saved-clock snapping");
  }
  // Round trips: what was accepted is written and read back identically.
  for (bool json : {true, false}) {
    absl::StatusOr<Trace> back = json ? ParseTraceJson(TraceToJson(t), source)
                                      : ParseTraceBinary(TraceToBinary(t), source);
    if (!back.ok()) Finding("round trip refused: " + std::string(back.status().message()));
    if (back->num_ops() != t.num_ops() || back->num_tensors() != t.num_tensors() ||
        back->events().size() != t.events().size() ||
        back->total_tensor_bytes() != t.total_tensor_bytes() ||
        back->total_wall_time_ns() != t.total_wall_time_ns()) {
      Finding("round trip changed the trace");
    }
    for (int32_t it = 0; it < t.num_iterations(); ++it) {
      if (back->iteration(it).saved_recorded != t.iteration(it).saved_recorded ||
          back->iteration_saved_events(it).size() != t.iteration_saved_events(it).size()) {
        Finding("round trip changed the saved-tensor events");
      }
    }
  }
}

}  // namespace swapplan::fuzz

#endif  // SWAPPLAN_FUZZ_TRACE_CHECKS_H_
