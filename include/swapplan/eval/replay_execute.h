// Executed replay: a multi-iteration trace run op by op through the runtime
// shim (runtime/runtime.h) on the host backend (runtime/host_backend.h),
// with the replay's planner as the runtime's policy provider — the executed
// counterpart of RunReplay (eval/replay.h), row for row.
//
//   trace op i of runtime iteration t (segment.h: the replay's boundaries)
//     IterationBegin                   at the first op of t
//     OpBegin(name, phase, inputs)     the trace's inputs (handles)
//     AllocTensor(size, dtype, shape)  each tensor whose device lifetime
//                                      starts at op i: runtime-owned, so the
//                                      budget, the arena and Algorithm 3
//                                      apply to it
//     OpEnd(outputs)                   the trace's outputs
//     FreeTensor                       each tensor whose lifetime ends at i
//     op clock += duration_ns(i)       the runtime's op clock is virtual
//     IterationEnd                     after the last op of t -> one row
//
//   the runtime's PolicyProvider (GenPolicy): reads the execution record
//   the runtime wrote for the iteration just run, plans it with the
//   replay's planner and planning device (capacity − reserve), writes the
//   policy; the runtime prepares it from the record and runs it.
//
// Time. The host backend computes nothing: the "kernels" are the driver's
// calls. The runtime's op clock (RuntimeOptions::op_clock_ns) is a virtual
// clock that advances by each op's duration in the trace, so the records
// the provider plans on carry the trace's op times (the planner sees what
// the replay's planner sees) and a row's time is the iteration's compute
// time without stalls. Copies are not timed by default (a memcpy; timed
// copies sleep for latency + bytes / bandwidth in real time): executed and
// simulated runs agree on counts, not on time.
//
// Memory. The runtime enforces the budget (the replay's capacity) in exact
// bytes, as the simulator does; the host arena behind it is larger
// (ExecuteOptions::arena_capacity_ratio) so that fragmentation, which the
// simulator does not model, never decides an allocation. Persistent tensors
// (resident before the first op or across a runtime iteration boundary —
// parameters, optimizer states, gradients accumulated across a cut) are
// allocated persistent: never a passive-swap candidate, as in the replay's
// extracted iterations. An allocation that does not fit and that Algorithm
// 3 cannot resolve (or, with OOM handling in WarmUp only, that comes after
// warm-up) is a crash in a real run; the runtime counts it, and the driver,
// as the simulator does, goes on over the budget: the tensor is registered
// as framework-owned storage of the driver (RuntimeOptions::
// overcommit_on_oom). A passive swap-in that does not fit fails the op's
// OpBegin (the op runs without the runtime's bookkeeping of its end); the
// simulator over-commits there too.
//
// Rows (ReplayRow, so the replay's report prints them): stage, policy, items
// (found = matched; the runtime cannot tell a wrong tensor from the right
// one, so mismatched is 0 and a wrong tensor counts as matched), missed,
// policy swaps (copies out started for items), uses while off device,
// allocation failures (ops during which an allocation failed, as the simulator
// counts them; the runtime counts each failed allocation), passive swap-outs,
// unresolved OOMs (ops with an allocation that did not fit in the end), the
// tracker's verdict, the policy generated or why not;
// time_ns the op-clock time, stall_ns the measured stalls, peak_bytes the
// runtime's peak.
//
//   ExecuteOptions o;
//   o.replay.simulator.device.capacity_bytes = 2870LL << 20;
//   o.replay.model_runtime = true;  (with keying, plan_on, remembered as required)
//   SWAPPLAN_ASSIGN_OR_RETURN(ReplaySummary s, RunExecutedReplay(trace, o, on_row));
//
// Cost: O(ops + uses + tensors) driver work plus the runtime's per-op cost
// (runtime.h) and, per GenPolicy iteration, writing and reading one record
// and one planner run. Host memory: the arena's touched bytes (up to its
// capacity) plus the host copies of off-device tensors.
// Threading: one call at a time per ExecuteOptions; it runs the runtime on
// the calling thread (the host backend's copy workers are internal).
#ifndef SWAPPLAN_EVAL_REPLAY_EXECUTE_H_
#define SWAPPLAN_EVAL_REPLAY_EXECUTE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/eval/replay.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct ExecuteOptions {
  // The replay's options, used as the simulated replay uses them: planner,
  // matcher, runtime-key bits, tracker, boundary, device (capacity = the
  // runtime's budget; reserve and bandwidths for planning), OOM handling,
  // max_iterations. Requires model_runtime (and what it requires): the
  // runtime keeps one policy planned on one iteration.
  ReplayOptions replay;
  // Where the runtime writes its records and the provider its policies;
  // "" = a new directory under the system's temporary directory, removed
  // afterwards.
  std::string work_dir;
  // The host arena's capacity as a multiple of the budget (>= 1).
  double arena_capacity_ratio = 2.0;
  // Copies take latency + bytes / bandwidth in real time (slow) instead of
  // a plain memcpy.
  bool timed_copies = false;

  // InvalidArgument naming the field (and the replay options' own errors).
  absl::Status Validate() const;
};

// Executes `trace` as described at the top; `on_row` once per runtime
// iteration, in order. InvalidArgument for bad options or no bandwidth;
// runtime errors other than unresolved OOMs and planner errors other than
// infeasibility (a row's plan_error) are returned naming the iteration and
// op. O(ops + uses + tensors) plus the runtime and planner work.
absl::StatusOr<ReplaySummary> RunExecutedReplay(const Trace& trace, const ExecuteOptions& options,
                                                absl::FunctionRef<void(const ReplayRow&)> on_row);

// One per-iteration figure on which a simulated and an executed row differ.
struct RowDifference {
  int32_t iteration = 0;
  std::string field;  // e.g. "stage", "passive swaps"
  int64_t simulated = 0;
  int64_t executed = 0;
};

// The figures compared per iteration, in this order: "stage" (Stage as an
// integer), "policy" (the policy that ran: the index of the plans made so
// far, -1 none — the runtime's load order is the replay's generation order), "items", "items found" (simulated: matched
// + mismatched), "items missed", "uses while off device", "allocation
// failures", "passive swaps", "unresolved OOMs", "policy swaps" (copies out
// started for items; ReplayOptions::model_runtime counts them as the
// runtime does), "next stage", "policy made" (0/1). Appends one RowDifference per differing figure. O(1).
void CompareReplayRows(const ReplayRow& simulated, const ReplayRow& executed,
                       std::vector<RowDifference>* out);

// The names of the compared figures, in CompareReplayRows' order.
const std::vector<std::string>& ComparedReplayFields();

}  // namespace swapplan

#endif  // SWAPPLAN_EVAL_REPLAY_EXECUTE_H_
