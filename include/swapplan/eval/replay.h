// Multi-iteration replay (SPEC §8): a trace of many iterations — with
// loss-scale skips, validation passes, routing changes, sequence lengths
// that change per iteration — run through what a Chameleon-style runtime
// does, iteration by iteration:
//
//   runtime iteration t (segment.h: where the runtime sees iterations)
//     stage_t         decided by the stage tracker at the end of t-1 (t = 0:
//                     WarmUp)
//     key_t           the input signature of t (policy_set.h: shapes of the
//                     first forward op's tensors), when policies are keyed
//     policy_t        WarmUp: none; GenPolicy: the latest policy made for
//                     key_t; Stable: the one kept for key_t at the move to
//                     Stable. A key without one takes the nearest key's
//                     (policy_set.h), and the row says so.
//     matching        the matcher walks t's ops, updating runtime keys, and
//                     finds each policy item's tensor (or misses it)
//     execution       the matched swaps on t's own ops: swap-out after the
//                     decision op, release and swap-in at the item's
//                     positions found again in t (fuzzy: by phase position;
//                     naive: by op ordinal), first use = the tensor's next
//                     use in t, with the tensor's own size (a tensor larger
//                     or smaller than planned — "resized" — still applies).
//                     A use of the tensor after the swap-out and before its
//                     swap-in is a use while off device — a crash in a real
//                     run; the replay counts it and goes on as if a stalling
//                     passive swap-in had brought it back.
//     simulation      the evaluation simulator with the device's whole
//                     capacity (the reserve is for planning); an allocation
//                     that does not fit goes to Algorithm 3 (passive swaps)
//                     in every stage by default — counted, never a crash
//                     unless Algorithm 3 cannot resolve it — or in WarmUp
//                     only (the paper; then one after warm-up is a crash)
//     end of t        tracker.Observe(t's op tokens, whether t's policy
//                     missed: an allocation failure or a use while off
//                     device) -> stage_{t+1}; repeated misses in Stable send
//                     it back to GenPolicy. If t is observed in detail (the
//                     next stage is GenPolicy, or t ran in GenPolicy), the
//                     planner plans for key_t (budget = capacity − reserve):
//                     on t itself, or on the envelope (envelope.h) of the
//                     iterations with key_t observed since the last WarmUp.
//                     On the move to Stable each key keeps its policy: the
//                     envelope's latest, or (planning on single iterations)
//                     the GenPolicy policy whose iterations simulated fastest
//                     (crash-free and OOM-free first), as the paper does.
//     oracle          (optional) t planned on itself with perfect knowledge,
//                     applied by tensor id, simulated the same way: the
//                     yardstick of the time a policy costs.
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
// matching (O(uses)), one simulator run (O(ops + tensors + items)), and when
// observed in detail one planner run (on an envelope: plus Observe and
// Build, O(ops + uses + tensors)); the oracle adds a planner run and a
// simulator run per iteration. Kept across iterations: per key its policies
// of the current GenPolicy run and its envelope (O(tensor and op roles)).
#ifndef SWAPPLAN_EVAL_REPLAY_H_
#define SWAPPLAN_EVAL_REPLAY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/planners/chain.h"
#include "swapplan/planners/chameleon/options.h"
#include "swapplan/planners/planner.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"
#include "swapplan/varying/envelope.h"
#include "swapplan/varying/matcher.h"
#include "swapplan/varying/policy_set.h"
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
  // The item's size as planned and the found tensor's (they differ for a
  // resized tensor: MoE routing, another sequence length).
  int64_t planned_bytes = 0;
  int64_t found_bytes = 0;
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
  // Matched items whose tensor is larger / smaller than the item planned.
  int32_t resized_larger = 0;
  int32_t resized_smaller = 0;
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
// counts as matched. The matcher sees every op; decisions at the
// iteration's ops before `first_decision_op` (local index) are dropped —
// their items are not found — as in a runtime that chooses its policy at
// the first FORWARD op (ReplayOptions::model_runtime). O(ops + uses + items).
AppliedPolicy ApplyPolicy(const Trace& trace, int32_t iteration, const MatchablePolicy& policy,
                          absl::Span<const uint64_t> item_roles, TensorMatcher& matcher,
                          RuntimeTensorTable& table, int32_t first_decision_op = 0);

// ---------------------------------------------------------------------------
// The replay.

// How the policies of GenPolicy and Stable are keyed.
enum class PolicyKeying : uint8_t {
  kSingle = 0,   // one policy at a time, for every iteration (the paper)
  kByInput = 1,  // one per input signature (policy_set.h)
};
// "single", "input"; the parser returns false for anything else.
absl::string_view PolicyKeyingName(PolicyKeying k);
bool ParsePolicyKeying(absl::string_view name, PolicyKeying* out);

// What the planner plans on.
enum class PlanningInput : uint8_t {
  kIteration = 0,  // the iteration just observed (the paper)
  kEnvelope = 1,   // the envelope of the iterations observed with its key
  // The iteration just observed, with the budget lowered until the policy,
  // matched and simulated on every iteration observed with its key, peaks
  // under the budget by a margin (ReplayOptions::verify_margin).
  kObserved = 2,
};
// "iteration", "envelope", "observed"; the parser returns false for
// anything else.
absl::string_view PlanningInputName(PlanningInput p);
bool ParsePlanningInput(absl::string_view name, PlanningInput* out);

struct ReplayOptions {
  // Planner name (planners/registry.h). "chain" (the default) runs the
  // planner chain (planners/chain.h) with `chain`: per input signature the
  // first planner whose policy passes the checker at the budget, its
  // executor set by the replay (matched; runtime with model_runtime).
  // "chameleon" — alone or as the chain's member — runs with `chameleon`.
  std::string planner = "chain";
  PlannerChainOptions chain;
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
  // handling is set by the replay (oom_handling_in_all_stages).
  SimulatorOptions simulator;
  // Policies per input signature, planned on envelopes (the defaults: what
  // docs/varying.md measured to hold on MoE routing and per-iteration
  // sequence lengths), or the paper's one policy planned on one iteration.
  PolicyKeying keying = PolicyKeying::kByInput;
  PlanningInput plan_on = PlanningInput::kObserved;
  EnvelopeOptions envelope;
  // kObserved: the peaks of the observed iterations with the policy must
  // stay under the budget after adding this multiple of their spread
  // (max − min); at most `verify_rounds` plans per observed iteration, and
  // the last `verify_iterations` iterations of a key are kept to verify on.
  double verify_margin = 0.0;
  int32_t verify_rounds = 8;
  int32_t verify_iterations = 8;
  // Policy sets of sequences the run left (a skipped step, a validation pass
  // sends the tracker to WarmUp) kept for when it comes back: an iteration
  // that passes the tracker's stability tests against a remembered
  // sequence's goes straight to Stable with its policies, instead of WarmUp
  // and GenPolicy again. At most this many sequences, the least recently
  // left dropped first; 0 = none (the paper: WarmUp forgets).
  int32_t remembered_sequences = 4;
  // Replay only the first N runtime iterations; 0 = all.
  int32_t max_iterations = 0;
  // Algorithm 3 in every stage (default): after warm-up an allocation that
  // does not fit is a policy miss, handled by the same passive path and
  // counted. false: in WarmUp only, as the paper describes it; after warm-up
  // such an allocation is an OOM, a crash.
  bool oom_handling_in_all_stages = true;
  // Also plan every runtime iteration on itself and simulate that policy
  // (ReplayRow::oracle_*): one more planner and simulator run per iteration.
  bool oracle = false;
  // Keep the per-item reports of this runtime iteration in its row (-1:
  // none).
  int32_t explain_iteration = -1;
  // Model what the runtime shim (runtime/runtime.h) does where the replay
  // otherwise differs (docs/varying.md, "Executed on the runtime"):
  //   * the Stable policy is the runtime's choice among the policies made
  //     since GenPolicy was entered: no unresolved OOM or use while off
  //     device in its GenPolicy runs first, then the shortest iteration —
  //     the policies' own simulated_iteration_time_ns when every candidate
  //     has one, else the mean op time of its runs (the runtime's op clock:
  //     the trace's op durations, no stalls) — then the earliest; none ran:
  //     the latest;
  //     (plan_on kIteration; with kObserved the key's latest, as without
  //     model_runtime);
  //   * with plan_on kIteration, after a failed plan the key's next GenPolicy
  //     iteration runs no policy (kObserved: its previous one);
  //   * the policy is chosen at the iteration's first FORWARD op, when the
  //     input signature is known: items decided at ops before it are not
  //     found (missed), and an iteration without a FORWARD op runs none;
  //   * policy swaps also count found tensors with no use after their
  //     swap-out (the runtime starts their copies out; the simulator leaves
  //     them out);
  //   * the runtime's provider gets a key's last records, not an envelope:
  //     plan_on kEnvelope is InvalidArgument. Keying, remembered sequences
  //     and observed planning are the runtime's too (RuntimeOptions::
  //     policies_by_input, remembered_sequences, planning, observed_records).
  bool model_runtime = false;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

struct ReplayRow {
  // Runtime iteration, the trace iteration its first op belongs to, its ops.
  int32_t iteration = 0;
  int32_t trace_iteration = 0;
  int32_t ops = 0;
  // Its input signature (policy_set.h).
  InputSignature input;
  // Stage the iteration ran in, and the policy it ran (-1: none); whether
  // that policy was made for another input signature (the nearest one).
  Stage stage = Stage::kWarmUp;
  int32_t policy = -1;
  bool policy_of_other_input = false;
  int32_t items = 0;
  int32_t matched = 0;
  int32_t missed = 0;
  int32_t mismatched = 0;
  // Matched items whose tensor is larger / smaller than planned.
  int32_t resized_larger = 0;
  int32_t resized_smaller = 0;
  // Swap-outs the policy executed (matched or mismatched items whose tensor
  // is used again).
  int32_t policy_swaps = 0;
  int32_t uses_while_off_device = 0;
  // Allocation failures: with Algorithm 3 (every stage by default; WarmUp
  // only otherwise) those that invoked it, else the ops whose allocations
  // did not fit. Passive swap-outs. Failures nothing resolved — those
  // Algorithm 3 could not resolve, and every OOM where it does not run:
  // each a crash in a real run. resolved = ooms − unresolved_ooms.
  int32_t ooms = 0;
  int32_t passive_swaps = 0;
  int32_t unresolved_ooms = 0;
  // First unresolved OOM: local op, bytes missing.
  int32_t first_oom_op = -1;
  int64_t first_oom_missing_bytes = 0;
  int64_t time_ns = 0;
  int64_t stall_ns = 0;
  int64_t peak_bytes = 0;
  // Oracle (ReplayOptions::oracle): the iteration planned on itself and
  // simulated; whether that planning failed (then it ran with no policy),
  // and the passive swaps its simulation needed.
  int64_t oracle_time_ns = 0;
  bool oracle_plan_failed = false;
  int32_t oracle_passive_swaps = 0;
  // The tracker's verdict on this iteration's sequence, the stage it sets
  // for the next one and why, and the policy misses counted in Stable.
  bool sequence_stable = false;
  double length_change = 0;
  double similarity = 1;
  Stage next_stage = Stage::kWarmUp;
  StageChange change = StageChange::kNone;
  int32_t policy_misses = 0;
  // The policy generated at the end of this iteration (-1: none) and how
  // many iterations it was planned on (1, or the envelope's observations).
  int32_t generated_policy = -1;
  int32_t planned_on_iterations = 0;
  // Why no policy was generated although this iteration was observed in
  // detail.
  std::string plan_error;
  // The planner that made the policy this iteration ran (Policy::planner,
  // e.g. the chain's member), and the one that made the policy generated at
  // its end; "" for none.
  std::string policy_planner;
  std::string generated_by;
  // plan_error repeats the failure already said for this input signature
  // (InputPlanning::no_fit): a report names it once.
  bool plan_error_repeated = false;
  // First use while off device (local op, trace id of the tensor).
  int32_t first_off_device_op = -1;
  uint64_t first_off_device_tensor = 0;
  // Per-item reports (only for ReplayOptions::explain_iteration).
  std::vector<ItemReport> reports;
};

// What GenPolicy made for one input signature.
struct InputPlanning {
  InputSignature input;
  // Policies made for it, and by which planner (the chain's members).
  int32_t policies = 0;
  std::map<std::string, int32_t> by_planner;
  // The planner of the last policy made for it; "" = none.
  std::string planner;
  // The first planning failure for it (the chain's message: the unswapped
  // peak and the closest planner's shortfall), said once; "" = none.
  std::string no_fit;
  int32_t plan_failures = 0;
  // The iteration of that failure.
  int32_t no_fit_iteration = -1;
};

struct ReplaySummary {
  int32_t iterations = 0;
  int32_t iterations_by_stage[3] = {0, 0, 0};
  int32_t policies_generated = 0;
  int32_t plan_failures = 0;
  // Distinct input signatures seen, and iterations that ran the policy of
  // another signature.
  int32_t input_signatures = 0;
  int32_t policy_of_other_input = 0;
  // Returns to GenPolicy because of repeated policy misses in Stable, and
  // returns to Stable on a remembered sequence.
  int32_t policy_miss_returns = 0;
  int32_t known_sequence_returns = 0;
  int64_t uses_while_off_device = 0;
  int64_t ooms = 0;
  int64_t ooms_after_warmup = 0;
  int64_t passive_swaps = 0;
  int64_t unresolved_ooms = 0;
  int32_t first_unresolved_oom_iteration = -1;
  int64_t items = 0, matched = 0, missed = 0, mismatched = 0;
  int64_t resized_larger = 0, resized_smaller = 0;
  int64_t time_ns = 0;
  // Per stage (index: Stage).
  int64_t policy_swaps_by_stage[3] = {0, 0, 0};
  int64_t passive_swaps_by_stage[3] = {0, 0, 0};
  int64_t ooms_by_stage[3] = {0, 0, 0};
  int64_t time_ns_by_stage[3] = {0, 0, 0};
  // Oracle totals (ReplayOptions::oracle), over all iterations and per
  // stage; iterations whose planning on themselves failed.
  int64_t oracle_time_ns = 0;
  int64_t oracle_time_ns_by_stage[3] = {0, 0, 0};
  int32_t oracle_plan_failures = 0;
  // First runtime iteration with a use while off device / with an OOM in
  // GenPolicy or Stable; -1 when none.
  int32_t first_off_device_iteration = -1;
  int32_t first_oom_after_warmup_iteration = -1;
  // Runtime iterations in the trace (also those not replayed).
  int32_t runtime_iterations = 0;
  // Per input signature, in order of first appearance: what GenPolicy made
  // (AccumulateReplayRow); and the policies made per planner.
  std::vector<InputPlanning> inputs;
  std::map<std::string, int32_t> policies_by_planner;
};

// Replays `trace` as described at the top. `on_row` is called once per
// runtime iteration, in order. InvalidArgument for bad options, an unknown
// planner, or no bandwidth (neither options nor trace metadata); planner
// errors other than ResourceExhausted (which is a row's plan_error) and
// simulator errors are returned with the iteration named.
absl::StatusOr<ReplaySummary> RunReplay(const Trace& trace, const ReplayOptions& options,
                                        absl::FunctionRef<void(const ReplayRow&)> on_row);

// Adds `row` to the totals of `sum` (what RunReplay does per row; for
// drivers producing rows of their own, eval/replay_execute.h), and sets its
// plan_error_repeated. O(input signatures).
void AccumulateReplayRow(ReplayRow& row, ReplaySummary& sum);

// The planner the replay plans with (options.planner; Chameleon with
// options.chameleon, alone or in the chain; the chain with options.chain and
// the replay's executor). InvalidArgument for an unknown planner or bad
// Chameleon or chain options.
absl::StatusOr<std::unique_ptr<Planner>> CreateReplayPlanner(const ReplayOptions& options);

// The device the replay plans for: options.simulator.device with the trace
// metadata's bandwidths where the options give none. InvalidArgument naming
// the trace when neither has one.
absl::StatusOr<DeviceModel> ReplayDevice(const Trace& trace, const ReplayOptions& options);

}  // namespace swapplan

#endif  // SWAPPLAN_EVAL_REPLAY_H_
