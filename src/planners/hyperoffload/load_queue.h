// Load-stream contention for the HyperOffload planner: the loads
// (Prefetches) of one tier share its load stream, one copy at a time in
// FIFO order, so placing one prefetch just in time for its own consumer can
// delay the prefetches after it (seed 003 §5.1: prefetches "inside
// computation-heavy regions of the backward pass"; Chameleon's
// logical-layer simulator weighs the same contention, seed 001 §4.4).
//
// LatestLoadStarts places the loads of every tier as late as possible
// without a stall, going backward from the last consumer: each load must
// finish by its own deadline (its consumer's start) and by the latest start
// of the next load on its tier, so placing a load delays every earlier one:
//
//   time  ------------------------------------------------------------>
//   load  |== a ==|== b ==========|                   (a, b on one tier)
//                 ^ latest_start(b)
//                                 ^ deadline(b)   ^ deadline(a)
//   a alone would start at deadline(a) - copy(a), after b: a must end by
//   latest_start(b) instead (its finish_by), so it starts earlier.
//
//   std::vector<QueuedLoad> loads = {{.ready_ns = 0, .deadline_ns = 300, .copy_ns = 150},
//                                    {.ready_ns = 0, .deadline_ns = 400, .copy_ns = 150}};
//   std::vector<LoadSlot> s = LatestLoadStarts(loads);
//   // s[1] = {.latest_start_ns = 250, .finish_by_ns = 400}
//   // s[0] = {.latest_start_ns = 100, .finish_by_ns = 250}
//
// A load that cannot start at its latest start (latest < ready: its tier
// copy is not valid yet) starts at ready_ns and stalls its consumer; the
// loads before it then need only finish by its ready time (finishing
// earlier would not help it).
//
// Loads of one tier queue in the order of their deadlines (ties: by index),
// the order the planner issues them in. Tiers are independent (every tier
// has its own load stream, device/device_model.h); a half-duplex link's
// stores share the stream too, which this model does not weigh (the
// planner's Detach placement queues the stores on their own).
//
// Complexity: O(L log L) for L loads (one sort), O(L) memory.
#ifndef SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_LOAD_QUEUE_H_
#define SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_LOAD_QUEUE_H_

#include <cstdint>
#include <vector>

namespace swapplan {

struct QueuedLoad {
  // Earliest time the copy may start (the op after its Detach starts).
  int64_t ready_ns = 0;
  // Its consumer's start: the copy should be done by then.
  int64_t deadline_ns = 0;
  // Copy time, latency included.
  int64_t copy_ns = 0;
  // Tier whose load stream carries it.
  int32_t tier = 0;
};

struct LoadSlot {
  // The latest start without a stall of this load or a later one on its
  // tier: min(deadline, next load's latest start) - copy, but not before
  // ready_ns.
  int64_t latest_start_ns = 0;
  // The time the copy must end by: min(deadline, the latest start of the
  // next load on its tier, raised to that load's ready time).
  int64_t finish_by_ns = 0;
};

// One slot per load, same index. Requires copy_ns >= 0, tier >= 0.
std::vector<LoadSlot> LatestLoadStarts(const std::vector<QueuedLoad>& loads);

// The consumer stalls when the loads are issued at `issue_ns` (one per
// load, >= its ready_ns) and run in FIFO order of issue time (ties: by
// deadline, then index) on their tier's stream: per load, max(0, copy end
// - deadline). O(L log L).
std::vector<int64_t> QueuedLoadStalls(const std::vector<QueuedLoad>& loads,
                                      const std::vector<int64_t>& issue_ns);

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_LOAD_QUEUE_H_
