// Parameters and optimizer states in a tier across iterations (seed 003
// §5.1 "Optimizer State Management", §7.2.1 "offloading activations and a
// subset of parameters"): the windows the HyperOffload planner may add for
// a persistent tensor — one resident before and after the iteration — when
// activations alone do not reach the budget.
//
// One group per tensor, its windows consecutive in the result:
//   * the wrapping window (PolicyItem::wraps): off the device at the
//     iteration boundary — Prefetch before its first use, Store after its
//     last use (the optimizer's update), Detach when the Store completes;
//   * a clean window for every later idle gap that qualifies (a Detach
//     without a Store after the use before the gap, a Prefetch before the
//     use after it) while nothing has written the tensor since its first
//     use: the tier's copy, loaded at the first use, is still valid. A
//     parameter's gap between its last forward use and its backward use is
//     such a window; the update ends them.
//
//   compute  |fwd use| .......... |bwd use| ...... |update|
//   load  |==|                 |==|
//   store                                           |====|
//   device   |<---->|  (clean)    |<------------------->|  off elsewhere
//
// A gap qualifies when its compute time is at least min_idle_ratio x the
// Prefetch's copy time (no Store: the window is clean). The wrapping
// window always belongs to the group (the clean windows need its copy).
//
//   PersistentWindowOptions o{.min_tensor_bytes = 1 << 20, .max_uses = 64,
//                             .min_idle_ratio = 2};
//   std::vector<PersistentWindow> w = PersistentWindows(trace, 0, start, o,
//       [&](int64_t b) { return device.TierCopyNs(0, Direction::kHostToDevice, b); },
//       [&](int64_t b) { return device.TierCopyNs(0, Direction::kDeviceToHost, b); });
//
// Groups are ordered by the transfer time they are expected to expose
// (the first Prefetch before its first use's start, the Store after the
// last use past the iteration's end), least first, then by bytes x idle
// time, largest first: optimizer states (idle from the update to the next
// update, loaded during the backward pass) before the first layer's
// parameters (needed at once when the iteration starts).
//
// Complexity: O(tensors + uses + G log G) for G groups.
#ifndef SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_PERSISTENT_H_
#define SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_PERSISTENT_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "swapplan/trace/trace.h"

namespace swapplan {

struct PersistentWindowOptions {
  // Tensors smaller than this stay on the device.
  int64_t min_tensor_bytes = int64_t{1} << 20;
  // Tensors used more often than this in the iteration stay.
  int32_t max_uses = 64;
  // A clean gap qualifies when its compute time is at least this times its
  // Prefetch's copy time (dimensionless).
  double min_idle_ratio = 2.0;
};

struct PersistentWindow {
  TensorId tensor = kNoTensor;
  // Local ops. Wrapping: store_op = the last use (the Store's op),
  // consumer = the first use. Clean: store_op = the use before the gap
  // (the Detach's op), consumer = the use after it.
  int32_t store_op = 0;
  int32_t consumer = 0;
  int64_t bytes = 0;
  // Compute time off the device (wrapping: before the first use plus after
  // the last use).
  int64_t idle_ns = 0;
  bool wraps = false;
  bool clean = false;
  // The tensor's group: 0, 1, ... in the result's order.
  int32_t group = 0;
};

// The windows of every PARAMETER and OPTIMIZER_STATE tensor resident
// before and after iteration `iteration`, grouped as above. `start` has
// the iteration's op start times (ops + 1 entries, the last the end);
// load_ns / store_ns give a copy's time on the tier the windows will use.
// Requires a valid trace and iteration and start of the right size.
std::vector<PersistentWindow> PersistentWindows(const Trace& trace, int32_t iteration,
                                                const std::vector<int64_t>& start,
                                                const PersistentWindowOptions& options,
                                                const std::function<int64_t(int64_t)>& load_ns,
                                                const std::function<int64_t(int64_t)>& store_ns);

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_PERSISTENT_H_
