// Renders a simulation timeline (SimulatorOptions::record_timeline) in the
// Chrome trace event format, so it opens in Perfetto (ui.perfetto.dev) or
// chrome://tracing: one process, one track per stream — host (dispatch),
// compute (ops, recomputation, stalls), d2h and h2d (or one "link" track
// when half-duplex), and per memory tier beyond the host its store and load
// tracks — and a "device memory" counter with the bytes in use at
// the start of each op.
//
//   SimulatorOptions o;  o.record_timeline = true;
//   SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, Simulate(trace, policy, o));
//   std::string json = TimelineToChromeTrace(trace, policy, r);
//
// Times are microseconds (the format's unit) with nanosecond decimals.
// Complexity: O(spans).
#ifndef SWAPPLAN_SIM_CHROME_TRACE_H_
#define SWAPPLAN_SIM_CHROME_TRACE_H_

#include <string>

#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// Requires `result` to come from simulating `policy` on `trace` with
// record_timeline set (an empty timeline renders only the track names).
std::string TimelineToChromeTrace(const Trace& trace, const Policy& policy,
                                  const SimulationResult& result);

}  // namespace swapplan

#endif  // SWAPPLAN_SIM_CHROME_TRACE_H_
