// Execution-order refinement (HyperOffload, seed 003 §3.3, §4.3, Algorithm
// 1): for each Prefetch cache operator, evaluate its feasible positions in
// a valid topological order — and legal reorderings of independent ops
// around its consumer — with a cost model of exposed transfer latency and
// device residency, and keep the best. Prefetches are "early enough to hide
// the transfer, late enough not to occupy memory".
//
// The problem is abstract (no trace): ops with durations and dataflow
// predecessors (trace/dataflow.h gives them for a trace iteration), a valid
// order, and the prefetches, each with its consumer op, the first op it may
// be issued at (after its Detach) and its copy time.
//
//   RefineProblem p;
//   p.duration_ns = {100, 300, 100, 200, 100};
//   p.SetPredecessors({{}, {0}, {1}, {1}, {2, 3}});
//   p.order = {0, 1, 2, 3, 4};
//   p.prefetches = {{.consumer = 2, .earliest_op = 1, .copy_ns = 200, .tier = 1}};
//   SWAPPLAN_ASSIGN_OR_RETURN(RefineResult r, RefineOrder(p, {}));
//   // r.order == {0, 1, 3, 2, 4}; r.placements[0].issue_op == 3
//
// Timeline of one prefetch (ops back to back from the order; a copy
// starts when its issue op starts and its tier's load stream is free):
//
//   compute  |.. issue op ..|.. op ..|  stall  |.. consumer ..|
//   load          |===== copy (copy_ns) =======|
//   device        |<------- residency -------->|  (block allocated at issue)
//
//   window     = start(consumer) - start(issue)     (compute hiding it)
//   exposed    = max(0, copy end - start(consumer)) (stall of the consumer)
//   delay      = max(0, copy end - next_start)      (contention, below)
//   residency  = start(consumer) + exposed - start(issue)
//   cost       = max(exposed, delay) + residency_weight * residency
//
// Contention (stream_contention, load_queue.h). The prefetches of a tier
// share its load stream, so a prefetch placed just in time for its own
// consumer may leave too little time for the next one on the stream:
//
//   compute  |.. op ..|.. op ..|.. consumer a ..|.. consumer b ..|
//   load     |== a ===========|== b ============|  b ends late: b stalls
//   load     |== a ====|== b ===========|            a placed by next_start(b)
//
// Before placing anything, the loads are placed as late as possible
// backward from the last consumer (LatestLoadStarts): next_start of a
// prefetch is the latest start of the next prefetch on its tier, and a
// copy ending after it delays that prefetch by `delay` (a stall later on)
// — so the cost charges it like an exposed stall. Without it (option off)
// each prefetch is placed just in time for its own consumer alone.
//
// Positions. Prefetches are taken in the order of their consumers; each one
// may be issued at any op from its earliest_op's position through its
// consumer's. Reordering: ops after the consumer that depend on nothing at
// or after the consumer's position (its "independent" ops: neither the
// consumer nor any op in between is among their predecessors, transitively
// through the ops moved with them) and that are not `pinned` may be hoisted
// to just before the consumer, in their order — their compute then hides
// the copy. For k = 0, 1, ... up to max_hoisted such ops (the first k found
// scanning at most scan_ops ops after the consumer), every issue position
// is evaluated; the least cost wins, ties to fewer hoisted ops, then to the
// later issue. The copy stream of each tier is a FIFO in consumer order:
// earlier prefetches' copies delay later ones on the same tier.
//
// Complexity: O(n + P log P + P * (log n + scan_ops * (max_hoisted +
// preds))) where P is the number of prefetches: the backward contention
// pass sorts them once; the issue position of each (k) is found by binary
// search on prefix sums of durations; a move shifts at most scan_ops
// entries of the order.
#ifndef SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_REFINE_H_
#define SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_REFINE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace swapplan {

struct RefinePrefetch {
  // The op that needs the data (waits for the copy).
  int32_t consumer = 0;
  // The first op the prefetch may be issued at (its position or later).
  int32_t earliest_op = 0;
  // Copy time (latency included), ns.
  int64_t copy_ns = 0;
  // Tier whose load stream carries the copy (one FIFO per tier).
  int32_t tier = 0;
  // Weighed in the load-stream queue (stream_contention): false leaves the
  // prefetch just in time for its own consumer and out of the other
  // prefetches' queue (the planner's KV-cache windows, kv_cache.h).
  bool queued = true;
};

struct RefineProblem {
  // Per op: its duration and its dataflow predecessors (ops that must run
  // before it), in compressed rows: op v's are preds[pred_begin[v] ..
  // pred_begin[v + 1]) (pred_begin has one entry per op plus one).
  std::vector<int64_t> duration_ns;
  std::vector<int32_t> pred_begin;
  std::vector<int32_t> preds;
  // A valid topological order of the ops.
  std::vector<int32_t> order;
  // Ops that must not move (the Store / Detach / consumer ops of cache
  // operators, communication); empty = none.
  std::vector<bool> pinned;
  std::vector<RefinePrefetch> prefetches;

  // Fills pred_begin / preds from one list per op.
  void SetPredecessors(const std::vector<std::vector<int32_t>>& lists);

  // InvalidArgument naming the field: sizes disagree, an op id out of
  // range, a negative duration or copy time, an order that is not a
  // permutation or breaks a dependency, a prefetch whose earliest op comes
  // after its consumer. O(n + edges + prefetches).
  absl::Status Validate() const;
};

struct RefineOptions {
  // Weight of one ns of residency against one ns of exposed latency
  // (dimensionless): small = hide first, then shorten residency.
  double residency_weight = 0.001;
  // Ops after a consumer scanned for independent ones (0 = no reordering).
  int32_t scan_ops = 64;
  // Independent ops hoisted before one consumer at most.
  int32_t max_hoisted = 8;
  // Weigh the load stream's contention: a prefetch's copy should end by the
  // latest start of the next prefetch on its tier (see above).
  bool stream_contention = true;

  // InvalidArgument for a negative or non-finite weight, negative counts.
  absl::Status Validate() const;
};

struct PrefetchPlacement {
  // The op the prefetch is issued at.
  int32_t issue_op = 0;
  // Ops hoisted before its consumer for it.
  int32_t hoisted = 0;
  // The cost model's figures at the time it was placed.
  int64_t exposed_ns = 0;
  // How long its copy runs past the next prefetch's latest start (0 without
  // contention).
  int64_t delay_ns = 0;
  int64_t residency_ns = 0;
  double cost = 0;
};

struct RefineResult {
  // The refined order (a valid topological order).
  std::vector<int32_t> order;
  // One per prefetch, same index.
  std::vector<PrefetchPlacement> placements;
  // Ops moved in total.
  int32_t hoisted_ops = 0;
};

// Refines `problem.order` as described above. InvalidArgument for an
// invalid problem or options.
absl::StatusOr<RefineResult> RefineOrder(const RefineProblem& problem,
                                         const RefineOptions& options);

// The cost model of one prefetch alone (empty streams) issued at `issue_op`
// in `order`: exposed, residency and cost as above. Requires a valid
// problem, issue_op at or before the consumer in `order`. O(n).
PrefetchPlacement EvaluatePlacement(const RefineProblem& problem, const std::vector<int32_t>& order,
                                    const RefinePrefetch& prefetch, int32_t issue_op,
                                    const RefineOptions& options);

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_PLANNERS_HYPEROFFLOAD_REFINE_H_
