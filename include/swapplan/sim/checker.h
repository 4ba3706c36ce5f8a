// Policy checker (SPEC §6): replays a policy against the trace iteration it
// was made for, with exact byte accounting, and lists every violation — not
// just the first. A policy passes only when the list is empty; every planner
// test runs its policies through this.
//
// The structural rules (tensors, op order, actions, residency, uses while
// off the device, duplicates and overlaps, clean items, the schedule) are
// the policy resolver's (policy/resolver.h), shared with the evaluation
// simulator; the checker lists every one of its issues and adds the budget,
// the release points and the pool.
//
// The device checked against is the policy's (its device model: budget =
// capacity − reserve, bandwidths, compute_time_scale, tiers), or
// CheckOptions::device (with the policy's tiers when it has none).
//
// Tiers. Every tier has its own copy streams (policy/resolver.h, "Tiers"):
// the release points and the swap-in timing below are checked per tier,
// each tier's copies on their own FIFO at the tier's per-rank bandwidth
// (DeviceModel::TierBandwidth); the host is tier 0.
//
// Byte accounting follows the item semantics of policy/policy.h: during op i
// the device holds the unswapped bytes of op i (the trace's lifetimes, as in
// curve/memory_curve.h) minus the size of every item with release_op < i <
// swap_in_op. A RECOMPUTE item is dropped after release_op and counted again
// from swap_in_op, like a SWAP item, but makes no copy: it is not in the
// copy queues nor in bytes_out, and its recompute_ns run on the compute
// stream when swap_in_op is reached (before that op, as the simulator runs
// them), which the op timeline below includes. The items re-run at one
// position form one recipe (policy/resolver.h ResolvedRecompute): while it
// runs the device holds the bytes of that position less the trace's
// allocations of the op itself (not made yet) plus the recipe's transient
// peak (chained inputs produced again, other outputs of re-run ops); the
// position's bytes are the larger of that and its own.
//
//   compute  | op k-1 |== recipe of k ==| op k |
//   bytes    |        |bytes_k - alloc_k + transient_k| bytes_k |
//
// Schedules (Advisor policies): everything above and below is evaluated in
// schedule positions — the replay runs the ops in the policy's order, the
// unswapped bytes of a position come from the tensors' lifetimes under the
// schedule (the simulator's rule, trace/dataflow.h: ScheduleLifetime), and
// the op timeline lays the ops back to back in that order. A wrapping item
// takes its tensor off before swap_in_op and after release_op; its copy out
// may run past the last op when release_op is the last position. A clean
// item makes no copy. With a pool, every tensor on the device also holds
// one object of its class.
//
// Release points are checked against the copy-out stream of each tier (the
// host's d2h link for tier 0), each one FIFO: copies are enqueued in
// swap_out_op order (ties: item order), each starts when its swap_out_op
// has ended and its stream is free, and takes bytes / the tier's store
// bandwidth (Eq. 3) on the op timeline of trace/op_times.h
// (durations scaled by the device's compute_time_scale, recomputations
// included).
// The block may be reused after release_op, so the copy must be done by the
// end of release_op:
//
//   compute  |op 10 |op 11 |op 12 |op 13 |op 14 |
//   d2h             |==== item A ====|= B =|          B queued behind A
//                                         ^ B completes during op 14:
//                   release_op of B >= 14, else [release-before-copy-done]
//
// Violations, each tagged (the tag ends the message):
//   fingerprint-mismatch     the policy was made for another op sequence;
//                            nothing else is checked
//   unknown-tensor           the item's tensor id is not in the trace
//   op-out-of-range          an op index outside the iteration
//   swap-in-before-swap-out  swap_in_op <= swap_out_op
//   bad-op-order             otherwise not swap_out <= release < swap_in <= first_use
//                            (or wraps / clean on a RECOMPUTE item)
//   bad-action               an unknown action, recompute_ns negative or on a
//                            SWAP item, release_waits_for_copy on a RECOMPUTE
//                            item
//   size-mismatch            size_bytes differs from the trace's
//   not-resident             the tensor is not allocated from swap_out_op to
//                            first_use_op
//   use-while-off-device     a use strictly between swap_out_op and
//                            first_use_op (one violation per use)
//   duplicate-item           two items with the same tensor and ops
//   overlapping-items        two windows [swap_out_op, first_use_op] of one
//                            tensor overlap (touching at one op is fine)
//   no-bandwidth             SWAP items but no d2h bandwidth to time them with
//   release-before-copy-done the copy out is still running after release_op
//                            (not for items marked release_waits_for_copy:
//                            those are planned waits, counted in the report)
//   over-budget              one per maximal run of ops above the budget,
//                            naming the worst op and by how much
//   not-recomputable         RECOMPUTE items whose recipe cannot run
//                            (trace/recompute.h: the tensor and the reason)
//   recompute-understated    recompute_ns summed at a position below the
//                            recipe's cost
//   bad-schedule             the schedule is not a permutation of the ops;
//                            nothing else is checked
//   schedule-breaks-dependency  the schedule runs an op before one it
//                            depends on (trace/dataflow.h); the first edge
//   wrap-not-persistent      a wrapping item's tensor is not resident
//                            before and after the iteration
//   clean-not-on-host        a clean item's tensor never came back from the
//                            host before its swap-out
//   clean-but-written        a clean item's tensor was written after it came
//                            back from its tier
//   unknown-tier             an item names a tier the device model lacks
//   clean-other-tier         a clean item's tensor last came back from
//                            another tier than the one it names
//   tier-over-capacity       the items hold more of a tier than this rank's
//                            capacity of it (one per tier, at the worst op)
//   bad-pool                 the pool breaks a rule of MemoryPool::Validate
//   pool-over-budget         the pool's objects exceed the budget
//   pool-no-class            a tensor size no class can hold
//   pool-class-full          one per maximal run of ops where a class needs
//                            more objects than it has, naming the worst op
//   reserved-over-budget     budget on reserved bytes only: the allocator
//                            model (alloc/allocator_model.h), replayed over
//                            the policy's allocations and frees with the
//                            budget as its capacity (curve/reserved_curve.h),
//                            cannot place an allocation even after releasing
//                            its cache; one violation at the first such op,
//                            with the count
// Items with an unknown tensor, an op out of range, a bad op order or
// action, a tensor not resident, or that duplicate or overlap an earlier
// item are left out of the byte accounting and the copy queue (a size
// mismatch is accounted with the trace's size). `swapplan check` reads policy files
// with ReadPolicyForCheck, so structural problems are listed here too.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(CheckReport r, CheckPolicy(trace, policy));
//   for (const Violation& v : r.violations) std::cout << v.message << "\n";
//
// Complexity: O(ops + tensors + items log items + uses of the items'
// tensors) time, O(ops + tensors) memory; with a schedule add the dataflow
// graph, O(uses log uses); with a pool O(tensors log tensors).
#ifndef SWAPPLAN_SIM_CHECKER_H_
#define SWAPPLAN_SIM_CHECKER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/alloc/budget_basis.h"
#include "swapplan/device/device_model.h"
#include "swapplan/policy/policy.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class ViolationKind : uint8_t {
  kFingerprintMismatch,
  kUnknownTensor,
  kOpOutOfRange,
  kSwapInBeforeSwapOut,
  kBadOpOrder,
  kSizeMismatch,
  kNotResident,
  kUseWhileOffDevice,
  kDuplicateItem,
  kOverlappingItems,
  kNoBandwidth,
  kReleaseBeforeCopyDone,
  kOverBudget,
  kBadSchedule,
  kScheduleBreaksDependency,
  kWrapNotPersistent,
  kCleanNotOnHost,
  kCleanWritten,
  kBadPool,
  kPoolOverBudget,
  kPoolNoClass,
  kPoolClassFull,
  kBadAction,
  kUnknownTier,
  kCleanOtherTier,
  kTierOverCapacity,
  kNotRecomputable,
  kRecomputeUnderstated,
  kReservedOverBudget,
};

// The bracketed tag of each kind, e.g. "use-while-off-device".
absl::string_view ViolationTag(ViolationKind kind);

struct Violation {
  ViolationKind kind = ViolationKind::kOverBudget;
  // Index of the item concerned in Policy::items; -1 for policy-wide ones.
  int32_t item = -1;
  // Local op concerned (the use, the copy's completion op, the worst op over
  // budget); -1 when none.
  int32_t op = -1;
  // Bytes over the budget (over-budget only).
  int64_t bytes = 0;
  // Full message, ending in " [tag]".
  std::string message;
};

struct CheckOptions {
  // The device to check against: budget (capacity - reserve), bandwidths,
  // compute_time_scale. Default: the one the policy records.
  std::optional<DeviceModel> device;
  // Op times for the copy queue: must match what the planner used (both
  // default to auto).
  OpTimeModel op_time_model = OpTimeModel::kAuto;
  // > 0: iteration time for Eq. (1) instead of the recorded wall time (ns).
  int64_t iteration_time_ns = 0;
  // The bytes the budget is held to (alloc/budget_basis.h). kReserved:
  // `allocator` (its capacity_bytes replaced by the budget) is replayed over
  // the policy, adding reserved-over-budget violations. report_reserved:
  // replay it (and fill the report's reserved_* fields) with the budget on
  // allocated bytes too.
  BudgetOn budget_on = BudgetOn::kAllocated;
  AllocatorOptions allocator;
  bool report_reserved = false;

  // InvalidArgument when iteration_time_ns < 0 or the device is invalid
  // (DeviceModel::ValidatePartial).
  absl::Status Validate() const;
};

struct CheckReport {
  std::vector<Violation> violations;
  int32_t iteration = 0;
  int32_t items = 0;
  int64_t budget_bytes = 0;
  // Unswapped peak of the iteration (under the policy's schedule), and the
  // peak with the policy applied (items excluded from accounting do not
  // count); local op of the peak.
  int64_t peak_unswapped_bytes = 0;
  int64_t peak_bytes = 0;
  int32_t peak_op = -1;
  // Bytes copied off the device (to any tier) by the accounted SWAP items
  // (clean and RECOMPUTE items copy nothing).
  int64_t bytes_out = 0;
  // Per tier of the device checked against (0: the host): what the items
  // hold there at most against this rank's capacity, and the bytes they
  // store and load (policy/resolver.h TierUsage).
  std::vector<TierUsage> tier_usage;
  // Informational, not violations: swap-ins whose copy (h2d FIFO in
  // swap_in_op order, on the stall-free timeline) ends after their
  // first_use_op starts, and the summed waits.
  int32_t late_swap_ins = 0;
  double swap_in_wait_ns = 0;
  // Informational: items with release_waits_for_copy whose copy out (same
  // FIFO, stall-free timeline) ends after their release_op, and the total
  // time the ops after their release points wait for them on a timeline
  // stretched by those waits (each wait delays every later op and copy).
  int32_t release_waits = 0;
  double release_wait_ns = 0;
  // The basis the budget was checked on, and, when the allocator model ran
  // (budget on reserved bytes, or report_reserved): its reserved peak with
  // the budget as capacity (local op), the bytes cached but not allocated
  // then, its OOMs and the first op of one (-1: none).
  BudgetOn budget_on = BudgetOn::kAllocated;
  bool reserved_modelled = false;
  int64_t reserved_peak_bytes = 0;
  int32_t reserved_peak_op = -1;
  int64_t reserved_fragmentation_bytes = 0;
  int32_t reserved_ooms = 0;
  int32_t reserved_first_oom_op = -1;

  bool clean() const { return violations.empty(); }
};

// Checks `policy` against iteration policy.fingerprint.iteration of `trace`.
// The options a policy is checked with by default: the op-time model its
// planner recorded in its parameters ("op_time_model": "recorded",
// "estimated (Eq. 1)" with "iteration_time_ns", or "mixed (...)"; Chameleon
// records them), so it is checked on the timeline it was planned on; the
// defaults for a policy that records none. O(parameters).
CheckOptions CheckOptionsFor(const Policy& policy);

// Returns the report (violations are data, not errors); InvalidArgument for
// bad options or when the op timeline cannot be built for a policy that
// swaps.
absl::StatusOr<CheckReport> CheckPolicy(const Trace& trace, const Policy& policy,
                                        const CheckOptions& options = {});

// As CheckPolicy, reusing `resolver` (PolicyResolver::Create of the
// policy's trace) and `shared.recompute_analysis` / `shared.recipe_memo`
// (policy/resolver.h; its other fields are ignored) instead of building
// them: a planner that checks several policies of one iteration (the
// hybrid). The same report as CheckPolicy(resolver.trace(), policy,
// options) when the analysis was built for that iteration with the checked
// device's compute_time_scale and the memo is used only with it; a policy
// whose fingerprint is not the resolver's iteration's is checked by
// CheckPolicy itself. O(resolution + check), no trace-wide preparation.
absl::StatusOr<CheckReport> CheckPolicyShared(const PolicyResolver& resolver,
                                              const Policy& policy, const CheckOptions& options,
                                              const ResolveOptions& shared);

// CheckPolicy, after marking every item the checker finds released before
// its copy out completes as a planned wait (release_waits_for_copy: the
// simulator charges the wait either way). For planners whose releases come
// from the simulator rather than the checker's stall-free timeline (the
// optimum, the Advisor's local search). Returns the report of the marked
// policy; the other violations are left as they are.
absl::StatusOr<CheckReport> CheckMarkingReleaseWaits(const Trace& trace, Policy* policy,
                                                     const CheckOptions& options = {});

}  // namespace swapplan

#endif  // SWAPPLAN_SIM_CHECKER_H_
