// Dataflow graph of one trace iteration (SPEC §5.1, seed 002 §4.1): ops are
// nodes; an edge u -> v says op u must run before op v in every schedule.
// Any topological order of the graph is a valid schedule (execution order)
// of the iteration; the recorded order always is one.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(DataflowGraph g, DataflowGraph::Build(trace, /*iteration=*/1));
//   for (int32_t v : g.successors(op)) ...;
//   SWAPPLAN_RETURN_IF_ERROR(g.ValidateSchedule(schedule));   // a topological order?
//
// Edges (local op indices, always from an earlier to a later recorded op):
//   * Tensor dependencies, per tensor (storage) over its uses in recorded
//     order. An op *writes* a tensor when the tensor is among its outputs
//     (the producer, an in-place update, an out= argument, an optimizer
//     step), and *reads* it when it is only among its inputs.
//       read after write   last write -> each later read  (producer -> consumer)
//       write after read   each read since the last write -> the next write
//       write after write  last write -> next write
//     So an in-place write keeps the readers before it before it and the
//     readers after it after it, and an optimizer update stays after every
//     use of the parameter it overwrites.
//   * Side effects, in recorded order (one chain through all such ops):
//       - collectives and point-to-point communication (names containing
//         "c10d::", "nccl", "hccl", "allreduce"/"all_reduce",
//         "allgather"/"all_gather", "reduce_scatter", "broadcast",
//         "all_to_all"/"alltoall", "barrier"): every rank must issue them in
//         the same order;
//       - ops with no outputs (host syncs such as aten::_local_scalar_dense,
//         prints, asserts) and ops that use no tensor at all;
//       - with `order_optimizer_ops` (default), every OPTIMIZER-phase op: the
//         optimizer step keeps its recorded order (loss-scale checks, norm,
//         clip, updates, zeroing), which data dependencies alone would let
//         interleave with unrelated backward work.
//   Duplicate edges are merged.
//
// Complexity: Build O(ops + uses + E log E) time, O(ops + E) memory, E <=
// 2 x uses + ops; ValidateSchedule O(ops + E).
#ifndef SWAPPLAN_TRACE_DATAFLOW_H_
#define SWAPPLAN_TRACE_DATAFLOW_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct DataflowOptions {
  // Chain every OPTIMIZER-phase op in recorded order.
  bool order_optimizer_ops = true;
  // Chain communication ops and ops without outputs (see above). Turning it
  // off is only sensible for single-device traces without host syncs.
  bool order_side_effects = true;

  absl::Status Validate() const { return absl::OkStatus(); }
};

// How many (merged) edges each rule contributed; an edge implied by several
// rules counts under the first: data, then side effects.
struct DataflowEdgeStats {
  int64_t data = 0;
  int64_t side_effect = 0;
};

class DataflowGraph {
 public:
  // The graph of iteration `iteration`. InvalidArgument for a bad iteration.
  static absl::StatusOr<DataflowGraph> Build(const Trace& trace, int32_t iteration,
                                             const DataflowOptions& options = {});

  int32_t num_ops() const { return n_; }
  int64_t num_edges() const { return static_cast<int64_t>(succ_.size()); }
  // Direct successors / predecessors of local op `op`, ascending.
  absl::Span<const int32_t> successors(int32_t op) const {
    return absl::MakeConstSpan(succ_).subspan(succ_begin_[op], succ_begin_[op + 1] - succ_begin_[op]);
  }
  absl::Span<const int32_t> predecessors(int32_t op) const {
    return absl::MakeConstSpan(pred_).subspan(pred_begin_[op], pred_begin_[op + 1] - pred_begin_[op]);
  }
  int32_t in_degree(int32_t op) const { return pred_begin_[op + 1] - pred_begin_[op]; }
  const DataflowEdgeStats& stats() const { return stats_; }

  // OK when `schedule` is a permutation of 0..num_ops-1 in which every edge
  // goes forward. InvalidArgument naming the first offending entry or edge
  // ("op 7 runs at position 3, before its predecessor op 5 at position 9").
  absl::Status ValidateSchedule(absl::Span<const int32_t> schedule) const;

 private:
  int32_t n_ = 0;
  std::vector<int32_t> succ_begin_, succ_;
  std::vector<int32_t> pred_begin_, pred_;
  DataflowEdgeStats stats_;
};

// True when the op name denotes communication (the side-effect rule above).
bool IsCommunicationOpName(absl::string_view name);

// Position of each local op in `schedule` (a permutation of 0..n-1).
// InvalidArgument when it is not one. O(n).
absl::StatusOr<std::vector<int32_t>> SchedulePositions(absl::Span<const int32_t> schedule,
                                                       int32_t n);

// Where a tensor occupies the device under a schedule, in positions (the
// evaluation simulator's rule, sim/simulator.h): from the earliest to the
// latest position of its ALLOC op, FREE op and uses in the iteration;
// alloc == -1 when resident before the iteration, free == n when never
// freed within it. `pos` maps local ops to positions. O(uses of the tensor
// + log uses).
struct ScheduledLifetime {
  int32_t alloc = -1;
  int32_t free = 0;
};
ScheduledLifetime ScheduleLifetime(const Trace& trace, int32_t iteration, TensorId t,
                                   absl::Span<const int32_t> pos);

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_DATAFLOW_H_
