// Multi-iteration replay (SPEC §8): a trace of many iterations — with
// loss-scale skips, validation passes, routing changes — run through what a
// Chameleon-style runtime does, iteration by iteration:
//
//   runtime iteration t (segment.h: where the runtime sees iterations)
//     stage_t         decided by the stage tracker at the end of t-1 (t = 0:
//                     WarmUp)
//     policy_t        WarmUp: none; GenPolicy: the one generated at the end
//                     of t-1; Stable: the best of the GenPolicy run
//     matching        the matcher walks t's ops, updating runtime keys, and
//                     finds each policy item's tensor (or misses it)
//     execution       the matched swaps on t's own ops: swap-out after the
//                     decision op, release and swap-in at the item's
//                     positions found again in t (fuzzy: by phase position;
//                     naive: by op ordinal), first use = the tensor's next
//                     use in t. A use of the tensor after the swap-out and
//                     before its swap-in is a use while off device — a
//                     crash in a real run; the replay counts it and goes on
//                     as if a stalling passive swap-in had brought it back.
//     simulation      the evaluation simulator with the device's whole
//                     capacity (the reserve is for planning); in
//                     WarmUp, allocation failures go to Algorithm 3 (passive
//                     swaps); after warm-up one is an OOM, a crash, unless
//                     oom_handling_in_all_stages
//     end of t        tracker.Observe(t's op tokens) -> stage_{t+1}; if
//                     GenPolicy, the planner plans t (budget = capacity −
//                     reserve) -> policy_{t+1}; on the move to Stable the
//                     GenPolicy policy whose iteration simulated fastest
//                     (crash-free and OOM-free first) is kept.
//
// The replay also knows what the runtime cannot: which tensor each item
// should have found (tensor_roles.h), so every item is matched (the right
// tensor), mismatched (another one — it was swapped instead) or missed.
//
//   ReplayOptions o;
//   o.simulator.device.capacity_bytes = 64LL << 30;
//   SWAPPLAN_ASSIGN_OR_RETURN(ReplaySummary s,
//       RunReplay(trace, o, [](const ReplayRow& row) { ... }));
//
// Cost per runtime iteration: extracting it (O(its ops, uses and tensors)),
// matching (O(uses)), one simulator run (O(ops + tensors + items)), and in
// GenPolicy one planner run. Nothing is kept across iterations but the
// policies of the current GenPolicy run.
#ifndef SWAPPLAN_EVAL_REPLAY_H_
#define SWAPPLAN_EVAL_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/planners/chameleon/options.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"
#include "swapplan/varying/matcher.h"
#include "swapplan/varying/segment.h"
#include "swapplan/varying/stage_tracker.h"

namespace swapplan {

// ---------------------------------------------------------------------------
// One policy applied to one iteration.

// What became of one policy item in one iteration.
enum class ItemOutcome : uint8_t {
  kMissed = 0,      // no runtime tensor matched it
  kMatched = 1,     // the right tensor (by role)
  kMismatched = 2,  // another tensor: it was swapped instead
};
absl::string_view ItemOutcomeName(ItemOutcome o);  // "missed", "matched", "mismatched"

struct ItemReport {
  ItemOutcome outcome = ItemOutcome::kMissed;
  // Found tensor (trace id) and the op after which it was swapped out
  // (local), or -1.
  uint64_t tensor_id = 0;
  int32_t decision_op = -1;
  // Where the swap-in trigger and the tensor's next use fell (local ops; -1
  // when it has no further use), and whether that use came while off device.
  int32_t swap_in_op = -1;
  int32_t next_use_op = -1;
  bool used_while_off_device = false;
  // The tensor the item should have found (trace id; 0 when the iteration
  // has no tensor in that role or no roles were given).
  uint64_t expected_tensor_id = 0;
};

struct AppliedPolicy {
  // Items on the iteration's own tensors (file ids) and ops, ready for the
  // simulator (fingerprint of the iteration).
  Policy policy;
  int32_t items = 0;
  // Items whose tensor was found: the right one / another one; not found.
  int32_t matched = 0;
  int32_t mismatched = 0;
  int32_t missed = 0;
  // Items whose tensor is used after its swap-out and before its swap-in.
  int32_t uses_while_off_device = 0;
  // The first of those: local op of the use, trace id of the tensor, item.
  int32_t first_off_device_op = -1;
  uint64_t first_off_device_tensor = 0;
  int32_t first_off_device_item = -1;
  // Matched tensors with no use after the swap-out (not simulated: the copy
  // out would only move a dying tensor).
  int32_t unused_after_swap_out = 0;
  // Per policy item, in policy order.
  std::vector<ItemReport> reports;
};

// Runs `matcher` (made for `policy`) over iteration `iteration` of `trace`
// and turns its decisions into an executable policy, as described above.
// `item_roles` (tensor_roles.h of each item's tensor in the policy's own
// iteration) tells matched from mismatched; when empty every found tensor
// counts as matched. O(ops + uses + items).
AppliedPolicy ApplyPolicy(const Trace& trace, int32_t iteration, const MatchablePolicy& policy,
                          absl::Span<const uint64_t> item_roles, TensorMatcher& matcher,
                          RuntimeTensorTable& table);

// ---------------------------------------------------------------------------
// The replay.

struct ReplayOptions {
  // Planner name (planners/registry.h); "chameleon" runs with `chameleon`.
  std::string planner = "chameleon";
  ChameleonOptions chameleon;
  MatcherKind matcher = MatcherKind::kFuzzy;
  MatcherOptions matcher_options;
  // Mask width of the runtime keys: 32 or 64.
  int32_t runtime_key_bits = 32;
  StageTrackerOptions tracker;
  IterationBoundary boundary = IterationBoundary::kOptimizerEnd;
  // The device and the simulator's behaviour. simulator.device: capacity
  // required (> 0, the memory the simulator enforces), reserve (the planning
  // budget is capacity − reserve), bandwidths (0 = the trace metadata's),
  // latency, copy engines, compute time scale — planners plan for it. OOM
  // handling is set by the replay (Algorithm 3 in WarmUp).
  SimulatorOptions simulator;
  // Replay only the first N runtime iterations; 0 = all.
  int32_t max_iterations = 0;
  // Algorithm 3 in every stage instead of WarmUp only. The paper handles
  // OOM this way in the Warm-Up stage; after it, a policy that lets an
  // allocation fail crashes the run (the default here).
  bool oom_handling_in_all_stages = false;
  // Keep the per-item reports of this runtime iteration in its row (-1:
  // none).
  int32_t explain_iteration = -1;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

struct ReplayRow {
  // Runtime iteration, the trace iteration its first op belongs to, its ops.
  int32_t iteration = 0;
  int32_t trace_iteration = 0;
  int32_t ops = 0;
  // Stage the iteration ran in, and the policy it ran (-1: none).
  Stage stage = Stage::kWarmUp;
  int32_t policy = -1;
  int32_t items = 0;
  int32_t matched = 0;
  int32_t missed = 0;
  int32_t mismatched = 0;
  int32_t uses_while_off_device = 0;
  // Allocation failures: in WarmUp (or with oom_handling_in_all_stages)
  // those that invoked Algorithm 3, else the ops whose allocations did not
  // fit. Passive swap-outs. Failures nothing resolved — every OOM outside
  // WarmUp by default, and those Algorithm 3 could not resolve: each a
  // crash in a real run.
  int32_t ooms = 0;
  int32_t passive_swaps = 0;
  int32_t unresolved_ooms = 0;
  // First unresolved OOM: local op, bytes missing.
  int32_t first_oom_op = -1;
  int64_t first_oom_missing_bytes = 0;
  int64_t time_ns = 0;
  int64_t stall_ns = 0;
  int64_t peak_bytes = 0;
  // The tracker's verdict on this iteration's sequence, the stage it sets
  // for the next one, and the policy generated for it (-1: none).
  bool sequence_stable = false;
  double length_change = 0;
  double similarity = 1;
  Stage next_stage = Stage::kWarmUp;
  int32_t generated_policy = -1;
  // Why no policy was generated although the next stage is GenPolicy.
  std::string plan_error;
  // First use while off device (local op, trace id of the tensor).
  int32_t first_off_device_op = -1;
  uint64_t first_off_device_tensor = 0;
  // Per-item reports (only for ReplayOptions::explain_iteration).
  std::vector<ItemReport> reports;
};

struct ReplaySummary {
  int32_t iterations = 0;
  int32_t iterations_by_stage[3] = {0, 0, 0};
  int32_t policies_generated = 0;
  int32_t plan_failures = 0;
  int64_t uses_while_off_device = 0;
  int64_t ooms = 0;
  int64_t ooms_after_warmup = 0;
  int64_t passive_swaps = 0;
  int64_t unresolved_ooms = 0;
  int32_t first_unresolved_oom_iteration = -1;
  int64_t items = 0, matched = 0, missed = 0, mismatched = 0;
  int64_t time_ns = 0;
  // First runtime iteration with a use while off device / with an OOM in
  // GenPolicy or Stable; -1 when none.
  int32_t first_off_device_iteration = -1;
  int32_t first_oom_after_warmup_iteration = -1;
  // Runtime iterations in the trace (also those not replayed).
  int32_t runtime_iterations = 0;
};

// Replays `trace` as described at the top. `on_row` is called once per
// runtime iteration, in order. InvalidArgument for bad options, an unknown
// planner, or no bandwidth (neither options nor trace metadata); planner
// errors other than ResourceExhausted (which is a row's plan_error) and
// simulator errors are returned with the iteration named.
absl::StatusOr<ReplaySummary> RunReplay(const Trace& trace, const ReplayOptions& options,
                                        absl::FunctionRef<void(const ReplayRow&)> on_row);

}  // namespace swapplan

#endif  // SWAPPLAN_EVAL_REPLAY_H_
