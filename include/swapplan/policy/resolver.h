// Policy resolver: the one place where a policy is held against a trace
// iteration. It turns (trace, policy, device model) into a resolved schedule
// — every item's swap-out, release, swap-in / recompute and first use in
// schedule positions, the copy each one makes and how long it takes on the
// device, and the bytes the trace's tensors allocate and free at every
// position — or names precisely why it cannot: the item, its tensor, the op
// and a rule tag. The checker (sim/checker.h: every issue, plus budget and
// timing) and the evaluation simulator (sim/simulator.h: the first issue is
// its error) both consume it, so the legality rules live only here.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(PolicyResolver r, PolicyResolver::Create(trace, iteration));
//   // The simulator: the first issue is the error (rule tag: RuleOf(status)).
//   SWAPPLAN_ASSIGN_OR_RETURN(ResolvedPolicy rp, r.Resolve(policy, device));
//   // The checker: every issue, items with structural problems left out.
//   SWAPPLAN_ASSIGN_OR_RETURN(ResolvedPolicy all,
//       r.Resolve(policy, device, {.all_issues = true, .check_dependencies = true}));
//   for (const ResolveIssue& i : all.issues) ... i.message ... ;
//
// The rules, each with its tag (the checker's, sim/checker.h; a message ends
// in " [tag]"):
//   fingerprint-mismatch     the policy's op sequence is not the iteration's;
//                            nothing else is resolved
//   bad-schedule             the schedule is not a permutation of the ops;
//                            nothing else is resolved
//   schedule-breaks-dependency  (check_dependencies) the schedule runs an op
//                            before one it depends on (trace/dataflow.h)
//   unknown-tensor           the item's tensor id is not in the trace
//   op-out-of-range          an op index outside the iteration
//   bad-op-order             not swap_out <= release < swap_in <= first_use
//                            (wrapping items: swap_in <= first_use <=
//                            swap_out <= release), in schedule positions;
//                            wraps or clean on a RECOMPUTE item
//   swap-in-before-swap-out  swap_in_op at or before swap_out_op
//   bad-action               an unknown action, recompute_ns negative or set
//                            on a SWAP item, release_waits_for_copy on a
//                            RECOMPUTE item
//   size-mismatch            size_bytes differs from the trace's (the item is
//                            resolved with the trace's size)
//   not-resident             the tensor is not on the device from swap_out_op
//                            through first_use_op
//   wrap-not-persistent      a wrapping item's tensor is not resident before
//                            and after the iteration
//   use-while-off-device     a use while the tensor is off the device (one
//                            issue per use)
//   duplicate-item           two items with the same tensor and ops
//   overlapping-items        two windows of one tensor overlap (touching at
//                            one op is fine)
//   clean-not-on-host        a clean item's tensor never came back from the
//                            host before its swap-out
//   clean-but-written        a clean item's tensor was written after it came
//                            back from its tier
//   unknown-tier             the item names a tier the device model does
//                            not have (tier >= DeviceModel::num_tiers())
//   clean-other-tier         a clean item's tensor last came back from
//                            another tier than the one it names: that tier
//                            holds no copy to detach against
//   tier-over-capacity       the items' tensors need more of a tier than
//                            this rank has of it (TierCapacityBytes), at the
//                            worst position; one issue per tier
//   not-recomputable         the RECOMPUTE items at a position cannot be
//                            produced again (trace/recompute.h: the tensor
//                            in the chain and the reason, e.g. random-state)
//   recompute-understated    the recompute_ns summed over the items at a
//                            position is below their recipe's cost (the
//                            re-run ops' scaled durations)
// Items with an unknown tensor, an op out of range, a bad op order or
// action, an unknown tier, a tensor not resident or not persistent, or that
// duplicate or overlap an earlier item are left out of `items` (not
// accounted).
//
// Tiers (device/device_model.h). A SWAP item's copies go to and come from
// its tier (0 = host); their durations are the tier's TierCopyNs. A tensor
// holds space in a tier from the first position one of its accounted items
// on that tier copies it out (swap_out_op; for a clean item, its swap_out)
// through the last first_use_op of its items on the tier (the last
// Prefetch has completed): the copy stays in the tier between windows, so
// clean items can detach against it. A wrapping item holds its tensor in
// the tier for the whole iteration (the copy lives there across the
// boundary). `tier_usage` gives each tier's peak; over the per-rank
// capacity is the issue tier-over-capacity:
//
//   position        0 .. out_A .. use_A .. out_B .. use_B .. n-1
//   item A (store)        |=====tier copy=====================|
//   item B (clean)                         detach    prefetch
//   the tier holds t from out_A through use_B (one copy, A's)
//
// Memory: a tensor occupies the device from its allocation to its free,
// both inclusive (trace lifetimes clamped to the iteration; under a
// schedule from the earliest to the latest position of its ALLOC op, FREE
// op and uses: trace/dataflow.h ScheduleLifetime). Items do not change
// these arrays; what an item does to them is its consumers' rule:
//
//   position    out     release  release+1 ...  in-1    in     use
//   SWAP        copy out after `out`; block counted through `release`, off
//               from release+1, back (allocated) from `in`; `use` waits for
//               the copy in
//   RECOMPUTE   no copies; dropped after `release`; recompute_ns of compute
//               at `in` before the op runs; back from `in`. The items
//               re-run at one position form one recipe (ResolvedRecompute,
//               trace/recompute.h): its transient bytes count at `in` on
//               top of the bytes in use before the op's own allocations,
//               its cost bounds the stated recompute_ns from below.
//   wrapping    off before `in` and after `release`; copy out after `out`
//
// Complexity: Create O(ops + tensors of the trace); Resolve O(ops × tiers
// used + items log items + uses of the items' tensors) in the recorded order, plus O(uses of the
// iteration) under a schedule and the dataflow graph with
// check_dependencies. Resolve is const and thread-safe.
#ifndef SWAPPLAN_POLICY_RESOLVER_H_
#define SWAPPLAN_POLICY_RESOLVER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/device/device_model.h"
#include "swapplan/policy/policy.h"
#include "swapplan/trace/recompute.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class ResolveRule : uint8_t {
  kFingerprintMismatch,
  kBadSchedule,
  kScheduleBreaksDependency,
  kUnknownTensor,
  kOpOutOfRange,
  kBadOpOrder,
  kSwapInBeforeSwapOut,
  kBadAction,
  kSizeMismatch,
  kNotResident,
  kWrapNotPersistent,
  kUseWhileOffDevice,
  kDuplicateItem,
  kOverlappingItems,
  kCleanNotOnHost,
  kCleanWritten,
  kUnknownTier,
  kCleanOtherTier,
  kTierOverCapacity,
  kNotRecomputable,
  kRecomputeUnderstated,
};

// The tag of each rule, e.g. "use-while-off-device".
absl::string_view ResolveRuleTag(ResolveRule rule);

struct ResolveIssue {
  ResolveRule rule = ResolveRule::kBadOpOrder;
  // Index of the item in Policy::items; -1 for policy-wide issues.
  int32_t item = -1;
  // Local op concerned (the use while off device, the writing op); -1 when
  // none.
  int32_t op = -1;
  // Full message, ending in " [tag]".
  std::string message;
};

// A tensor occupying the device during the iteration, by position: alloc -1
// = resident before the first position, free == num_ops = not freed within
// the iteration.
struct ResolvedTensor {
  TensorId id = kNoTensor;
  int32_t alloc = -1;
  int32_t free = 0;
};

struct ResolvedItem {
  // Index in Policy::items.
  int32_t item = 0;
  // Index into ResolvedPolicy::tensors and the trace's tensor.
  int32_t slot = 0;
  TensorId tensor = kNoTensor;
  // The trace's size.
  int64_t size_bytes = 0;
  ItemAction action = ItemAction::kSwap;
  int64_t recompute_ns = 0;
  bool wraps = false;
  bool clean = false;
  bool release_waits_for_copy = false;
  // The item's tier (0 = host; DeviceModel::TierName).
  int32_t tier = 0;
  // Schedule positions.
  int32_t out = 0, release = 0, in = 0, use = 0;
  // Copy durations on the device (DeviceModel::TierCopyNs of the item's
  // tier): out_ns for a SWAP item that is not clean, in_ns for every SWAP
  // item; 0 otherwise, and 0 when the bandwidth for the direction is
  // unknown (0: a host link nobody recorded).
  int64_t out_ns = 0, in_ns = 0;

  bool swap() const { return action == ItemAction::kSwap; }
  // Whether the swap-out makes a device->host copy.
  bool copies_out() const { return action == ItemAction::kSwap && !clean; }
};

// How much of one tier the accounted items hold (see "Tiers" above).
struct TierUsage {
  // Bytes held at the worst position, and the first such position (-1 when
  // no item uses the tier).
  int64_t peak_bytes = 0;
  int32_t peak_position = -1;
  // This rank's capacity of the tier (DeviceModel::TierCapacityBytes).
  int64_t capacity_bytes = kUnlimitedCapacityBytes;
  // Accounted items on the tier, and the bytes their copies move.
  int32_t items = 0;
  int64_t store_bytes = 0;
  int64_t load_bytes = 0;
};

// The RECOMPUTE items re-run at one position, as one recipe
// (trace/recompute.h): their tensors are the targets, every input not on the
// device then (freed by the trace, or off under an item whose window covers
// the position, or still being copied in) is produced again in a chain.
struct ResolvedRecompute {
  int32_t position = 0;
  // Indices into ResolvedPolicy::items.
  std::vector<int32_t> items;
  // Sum of the items' recompute_ns (what the compute stream spends).
  int64_t stated_ns = 0;
  // The recipe's cost (scaled durations of the re-run ops) and transient
  // peak (bytes held beyond the targets while it runs); 0 when blocked.
  int64_t cost_ns = 0;
  int64_t transient_bytes = 0;
  // Inputs the recipe reads on the device (must be resident then), and the
  // ones it produces again on the way (a chain).
  std::vector<TensorId> leaves, intermediates;
  // Why the recipe cannot run (kNone: it can).
  RecomputeBlocker blocker = RecomputeBlocker::kNone;
};

// Move-only: the spans point into the resolver (recorded order) or into the
// own_* vectors below (under a schedule); it must not outlive the resolver.
struct ResolvedPolicy {
  ResolvedPolicy() = default;
  ResolvedPolicy(ResolvedPolicy&&) = default;
  ResolvedPolicy& operator=(ResolvedPolicy&&) = default;
  ResolvedPolicy(const ResolvedPolicy&) = delete;
  ResolvedPolicy& operator=(const ResolvedPolicy&) = delete;

  int32_t iteration = 0;
  int32_t num_ops = 0;
  // Under a schedule: position of each local op (pos) and op at each
  // position (order); both empty in the recorded order.
  std::vector<int32_t> pos, order;
  // Tensors occupying the device, with their positions under the schedule
  // (the resolver's own list in the recorded order).
  absl::Span<const ResolvedTensor> tensors;
  // Bytes resident before the first position, allocated at the start of and
  // freed after each position (trace tensors only).
  int64_t initial_bytes = 0;
  absl::Span<const int64_t> alloc_at, free_after;
  // Accounted items, in policy order; accounted[k] is the index of policy
  // item k in `items`, or -1.
  std::vector<ResolvedItem> items;
  std::vector<int32_t> accounted;
  // Per tier of the device (index: tier, 0 = host); empty when resolution
  // stopped early.
  std::vector<TierUsage> tier_usage;
  // Recomputations by ascending position (accounted RECOMPUTE items only).
  std::vector<ResolvedRecompute> recomputes;
  // Every issue found (all_issues), else at most the first.
  std::vector<ResolveIssue> issues;
  // True when the fingerprint or the schedule stopped the resolution.
  bool stopped = false;

  bool scheduled() const { return !pos.empty(); }
  int32_t Pos(int32_t local_op) const { return pos.empty() ? local_op : pos[local_op]; }
  int32_t OpAt(int32_t position) const { return order.empty() ? position : order[position]; }
  // Bytes of the trace's tensors on the device during each position.
  std::vector<int64_t> UnswappedBytes() const;

  // Storage behind tensors / alloc_at / free_after under a schedule.
  std::vector<ResolvedTensor> own_tensors;
  std::vector<int64_t> own_alloc_at, own_free_after;
};

// Recipes a caller lets several resolutions share (ResolveOptions::
// recipe_memo): per (position, targets) the recipes planned so far, each
// with the availability answers RecomputeAnalysis::Plan asked for. A later
// resolution whose answers to those same questions are the same gets the
// same recipe without walking it again (Plan is deterministic in its
// targets, position and answers), so the result is identical to a fresh
// resolution's. Recorded order only (a resolution under a schedule plans
// afresh). Use one memo with one resolver and one device model; it is not
// thread-safe (one resolution at a time). At most kMaxPerKey recipes per
// key (the oldest is replaced).
//
//   RecipeMemo memo;
//   ResolveOptions o{.all_issues = true, .recipe_memo = &memo};
//   resolver.Resolve(p1, device, o);  resolver.Resolve(p2, device, o);  // p2 reuses p1's walks
//
// Lookup O(entries of the key × questions asked); a hit replaces a walk.
class RecipeMemo {
 public:
  static constexpr size_t kMaxPerKey = 8;
  struct Entry {
    // Tensors Plan asked about, in order, with the answers.
    std::vector<std::pair<TensorId, bool>> asked;
    RecomputeRecipe recipe;
  };
  // The recipe for `targets` before `position` whose recorded questions
  // `available` answers the same way, or nullptr.
  template <typename Available>
  const RecomputeRecipe* Find(int32_t position, const std::vector<TensorId>& targets,
                              const Available& available) const {
    auto f = entries_.find(std::make_pair(position, targets));
    if (f == entries_.end()) return nullptr;
    for (const Entry& e : f->second) {
      bool same = true;
      for (const auto& [t, answer] : e.asked) {
        if (available(t) != answer) {
          same = false;
          break;
        }
      }
      if (same) return &e.recipe;
    }
    return nullptr;
  }
  // Remembers `entry` for (position, targets).
  void Add(int32_t position, const std::vector<TensorId>& targets, Entry entry);
  // Recipes planned (misses) and reused (hits) so far.
  int64_t misses = 0, hits = 0;

 private:
  absl::flat_hash_map<std::pair<int32_t, std::vector<TensorId>>, std::vector<Entry>> entries_;
};

struct ResolveOptions {
  // Execution order (a permutation of the iteration's local ops); empty =
  // the policy's schedule, or the recorded order when it has none. Must
  // outlive the call.
  absl::Span<const int32_t> schedule;
  // Collect every issue (the checker) instead of stopping at the first.
  bool all_issues = false;
  // Check the schedule against the iteration's dataflow graph.
  bool check_dependencies = false;
  // Optional: the RecomputeAnalysis of this trace, iteration and device
  // (RecomputeAnalysis::Build), reused instead of built per resolution; and
  // a memo of recipes shared by resolutions (see RecipeMemo). Both must
  // outlive the call; null: built / planned afresh.
  const RecomputeAnalysis* recompute_analysis = nullptr;
  RecipeMemo* recipe_memo = nullptr;
};

class PolicyResolver {
 public:
  // Prepares iteration `iteration` of `trace` (which must outlive the
  // resolver). InvalidArgument when the iteration does not exist.
  static absl::StatusOr<PolicyResolver> Create(const Trace& trace, int32_t iteration);

  // Resolves `policy` (its op indices local to this iteration) on `device`
  // (bandwidths of 0 leave copy durations at 0; its tiers are the tiers the
  // items may name). With all_issues: the
  // resolution with every issue. Otherwise: the first issue as the error —
  // FailedPrecondition (ErrorKind::kFingerprintMismatch) for a fingerprint
  // mismatch, InvalidArgument (kMalformedInput) for anything else, the
  // issue's message, the rule tag attached (util/error.h WithRule).
  // not-recomputable and recompute-understated never fail a resolution:
  // they stay in `issues` (the checker reports them), and the simulator
  // runs what the policy states (recompute_ns; no transient for a recipe
  // that cannot run).
  absl::StatusOr<ResolvedPolicy> Resolve(const Policy& policy, const DeviceModel& device,
                                         const ResolveOptions& options = {}) const;
  // What Resolve without all_issues returns for a resolution made with it:
  // OK, or the error of its first issue other than not-recomputable and
  // recompute-understated. O(issues).
  static absl::Status FirstFatalIssue(const ResolvedPolicy& resolved);

  const Trace& trace() const { return *trace_; }
  int32_t iteration() const { return iteration_; }
  int32_t num_ops() const { return n_; }
  const PolicyFingerprint& fingerprint() const { return fingerprint_; }
  // Tensors occupying the device during the iteration, recorded order.
  const std::vector<ResolvedTensor>& tensors() const { return tensors_; }
  // The slot of the tensor with trace file id `id` among tensors(), or -1.
  int32_t SlotOf(uint64_t id) const;

 private:
  PolicyResolver() = default;
  friend class ResolveRun;

  const Trace* trace_ = nullptr;
  int32_t iteration_ = 0;
  int32_t n_ = 0;
  PolicyFingerprint fingerprint_;
  std::vector<ResolvedTensor> tensors_;
  int64_t initial_bytes_ = 0;
  std::vector<int64_t> alloc_at_, free_after_;
  // Trace file id -> dense id (empty when they are equal) and dense id ->
  // slot (-1: does not occupy the device during the iteration).
  absl::flat_hash_map<uint64_t, TensorId> dense_of_id_;
  std::vector<int32_t> slot_of_tensor_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_POLICY_RESOLVER_H_
