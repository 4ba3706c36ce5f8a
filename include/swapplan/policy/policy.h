// Policy: the output of every planner and the input of the checker, the
// evaluation simulator and the runtime shim (SPEC §7). One item per swap
// window of a tensor:
//
//   compute  ... [swap_out_op] ... [release_op] ......... [swap_in_op] ... [first_use_op]
//   d2h               |=== copy out ===|
//   h2d                                                       |== copy in ==|
//   device   |<------- resident ------>|<--- off device --->|<--- resident --->
//
//   * the device->host copy is enqueued after swap_out_op (the tensor's last
//     use before the idle window);
//   * the device block may be reused once release_op has been dispatched —
//     the op running when the copy completes (seed 001 §6.2); it is counted
//     on the device through release_op and off it from release_op + 1;
//   * the host->device copy is triggered when swap_in_op is dispatched and
//     the block is allocated then (counted from swap_in_op on);
//   * first_use_op waits for the copy to finish (a stall if it has not).
//   * release_waits_for_copy: the release point precedes the copy's
//     expected completion on purpose; op release_op + 1 waits for the copy
//     (the event wait every release is anyway), a planned stall.
//   * action RECOMPUTE (baselines such as full recomputation) moves no
//     bytes: the block is dropped after release_op (counted through it), and
//     when swap_in_op is dispatched the compute stream first spends
//     recompute_ns re-running the producing ops; the block is counted from
//     swap_in_op on. swap_out_op is then just the last use before the window.
//
// Op indices are local to the iteration named by `fingerprint.iteration`.
// Invariants (checked by Policy::Validate, the rest by the checker):
//   swap_out_op <= release_op < swap_in_op <= first_use_op < iteration_ops,
// compared as positions in the policy's schedule when it has one (an
// Advisor policy runs the ops in another order: `schedule` lists the local
// op indices in execution order).
//
// Wrapping items (`wraps`, Advisor policies): a tensor resident before and
// after the iteration (a parameter, an optimizer state) that lives on the
// host across the iteration boundary. In schedule positions
//   swap_in_op <= first_use_op <= swap_out_op <= release_op:
//
//   compute  |op 0| ... [swap_in_op] ... [first_use_op] ... [swap_out_op] ... [release_op] ... |
//   h2d                    |== copy in ==|
//   d2h                                                        |== copy out ==|
//   device   |<-- off -->|<------------------ resident ------------------->|<------ off ---->|
//
// The copy out writes the host copy the next iteration's copy in reads; it
// may still run when the last op ends (the iteration then ends with it).
//
// Clean items (`clean`): the item's tier already holds the bytes (the
// tensor came back from that tier and nothing wrote it since), so the
// swap-out frees the block without a copy — seed 002 Fig. 1's parameters.
//
// Memory tiers (`tier`, device/device_model.h): 0 = the host (the default,
// and the only tier of schema v1), i >= 1 = device.tiers[i - 1]. The copy
// out goes to the item's tier and the copy in comes from it, each on the
// tier's own stream with its bandwidth and latency.
//
// HyperOffload's cache operators (seed 003 §4.2) are these items read as
// operators on the computation graph:
//
//   Store(t -> tier)        the copy out after swap_out_op (none when clean)
//   Detach(t)               the release after release_op: the device copy
//                           is dropped; with `clean` a Detach without a
//                           Store (the tier's copy is still valid: a
//                           parameter, a KV block written once)
//   Prefetch(t, consumer)   the copy in triggered at swap_in_op, completed
//                           before first_use_op (its named consumer); a
//                           Load when swap_in_op == first_use_op
//   resident in a tier      `wraps`: off the device at the iteration
//   across iterations       boundary — Prefetch before the first use,
//                           Store after the last (an update), Detach
//
// Memory pool (`pool`, Advisor policies): the device memory is a set of size
// classes with a fixed number of objects each (seed 002 §4.1); every tensor
// takes one object of its class for as long as it is on the device.
//
//   Policy p;
//   p.planner = "chameleon";
//   p.device.capacity_bytes = 64LL << 30;   // budget = capacity - reserve
//   p.items.push_back({.tensor_id = 42, .swap_out_op = 10, .release_op = 12,
//                      .swap_in_op = 30, .first_use_op = 33, .size_bytes = 1 << 20});
//   SWAPPLAN_RETURN_IF_ERROR(WritePolicy(p, "policy.json"));
#ifndef SWAPPLAN_POLICY_POLICY_H_
#define SWAPPLAN_POLICY_POLICY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "swapplan/device/device_model.h"
#include "swapplan/trace/types.h"

namespace swapplan {

// Streaming op-sequence fingerprint: FNV-1a 64 over, for every op, the 8
// little-endian bytes of NameHash(name) ^ (phase << 56). A runtime interns
// each op name once (NameHash) and then updates the state in O(1) per op
// with integers only; ComputeFingerprint (policy_io.h) gives the same value
// for a trace iteration.
//
//   FingerprintState fp;
//   for (op : ops) fp.AddOp(name_hash[op.name], op.phase);
//   fp.value() == policy.fingerprint.op_sequence_hash
inline constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
inline constexpr uint64_t kFnvPrime = 1099511628211ULL;

// FNV-1a 64 of the name's bytes.
inline uint64_t NameHash(absl::string_view name) {
  uint64_t h = kFnvOffset;
  for (unsigned char c : name) h = (h ^ c) * kFnvPrime;
  return h;
}

class FingerprintState {
 public:
  void AddOp(uint64_t name_hash, Phase phase) {
    const uint64_t v = name_hash ^ (static_cast<uint64_t>(phase) << 56);
    for (int b = 0; b < 8; ++b) h_ = (h_ ^ ((v >> (8 * b)) & 0xff)) * kFnvPrime;
    ++ops_;
  }
  uint64_t value() const { return h_; }
  int64_t ops() const { return ops_; }
  void Reset() { *this = FingerprintState(); }

 private:
  uint64_t h_ = kFnvOffset;
  int64_t ops_ = 0;
};

struct PolicyFingerprint {
  // FingerprintState over the iteration's (op name, phase) sequence.
  uint64_t op_sequence_hash = 0;
  int32_t iteration_ops = 0;
  int32_t iteration = 0;

  bool operator==(const PolicyFingerprint& o) const {
    return op_sequence_hash == o.op_sequence_hash && iteration_ops == o.iteration_ops;
  }
};

// Integer-only tensor features for runtime matching (SPEC §8); see
// proto/policy.proto for the exact encoding.
struct RuntimeKey {
  uint32_t op_count = 0;
  uint64_t op_mask = 0;
  uint64_t op_history = 0;
  DType dtype = DType::kUnknown;
  int64_t size_bytes = 0;
  std::vector<int64_t> shape;
  uint32_t mask_bits = 32;

  // Equality of the matching features (count, mask, history, dtype).
  bool FeaturesEqual(const RuntimeKey& o) const {
    return op_count == o.op_count && op_mask == o.op_mask && op_history == o.op_history &&
           dtype == o.dtype;
  }
};

// What a policy item does with its tensor during the window.
enum class ItemAction : uint8_t {
  kSwap = 0,       // copy out to host memory and back
  kRecompute = 1,  // drop, then re-run the producing ops before swap_in_op
};

// "SWAP" / "RECOMPUTE"; ParseItemAction returns false for anything else.
absl::string_view ItemActionName(ItemAction a);
bool ParseItemAction(absl::string_view name, ItemAction* out);

struct PolicyItem {
  // Exact key: the tensor's id in the trace file.
  uint64_t tensor_id = 0;
  RuntimeKey runtime_key;
  int32_t swap_out_op = 0;
  int32_t release_op = 0;
  int32_t swap_in_op = 0;
  int32_t first_use_op = 0;
  int64_t size_bytes = 0;
  ItemAction action = ItemAction::kSwap;
  // Compute time re-running the producing ops (RECOMPUTE only, else 0).
  int64_t recompute_ns = 0;
  // SWAP only: release_op was chosen before the copy out is expected to
  // complete, on purpose — op release_op + 1 waits for the copy (a planned
  // stall that buys memory the link could not free in time). The checker
  // reports it instead of flagging release-before-copy-done.
  bool release_waits_for_copy = false;
  // The window wraps around the iteration boundary (see above).
  bool wraps = false;
  // No copy out: the item's tier holds a current copy (see above).
  bool clean = false;
  // Where the tensor is while off the device: 0 = the host, i >= 1 =
  // device.tiers[i - 1] (DeviceModel::TierName). SWAP items only.
  int32_t tier = 0;
};

// Where a runtime finds an op of the planned iteration again without the
// trace: its phase, its position among the iteration's ops of that phase
// (what a runtime knows for sure: grad mode, the autograd engine,
// optimizer.step()), and its position in the iteration.
struct OpAnchor {
  Phase phase = Phase::kOther;
  int32_t phase_ordinal = 0;
  int32_t ordinal = 0;
  bool operator==(const OpAnchor& o) const {
    return phase == o.phase && phase_ordinal == o.phase_ordinal && ordinal == o.ordinal;
  }
};

// Per policy item: what the runtime needs to match and trigger it with
// nothing but the policy (seed 001 §6.1; varying/matcher.h).
struct RuntimeItem {
  // The op after which the tensor's runtime key is complete: its last use
  // at or before swap_out_op (the swap-out decision point).
  OpAnchor decision;
  // Position of the tensor among the decision op's inputs then outputs
  // (the naive matcher's key; a tie-breaker for the fuzzy one).
  int32_t use_index = 0;
  // ShapeHash (policy/runtime_key.h) of the tensor's shape.
  uint64_t shape_hash = 0;
  // The item's other trigger points.
  OpAnchor release, swap_in, first_use;
  bool operator==(const RuntimeItem& o) const {
    return decision == o.decision && use_index == o.use_index && shape_hash == o.shape_hash &&
           release == o.release && swap_in == o.swap_in && first_use == o.first_use;
  }
};

// The runtime section of a policy (schema v2): everything the runtime shim
// needs to apply the policy without the trace. Empty in policies read from
// v1 files (their runtime section can be rebuilt from the trace:
// `swapplan policy upgrade`).
struct PolicyRuntime {
  // Op-name table of the planned iteration; the runtime interns the
  // framework's op names against it (an unknown name is a name that did not
  // occur). Indices below are into this table.
  std::vector<std::string> op_names;
  // Frequency rank of every name in the planned iteration (0 = most
  // frequent, ties by name; -1 = did not occur) and the width of the
  // runtime key's op mask (32 or 64): the runtime key codes
  // (policy/runtime_key.h).
  std::vector<int32_t> op_ranks;
  int32_t mask_bits = 32;
  // The planned iteration's op sequence, one entry per op:
  // (index into op_names) << 2 | phase. The runtime checks its streaming
  // fingerprint against it op by op and knows the first op that differs.
  std::vector<uint32_t> op_sequence;
  // One per policy item, same order.
  std::vector<RuntimeItem> items;

  bool empty() const { return op_names.empty(); }
};

// One size class: `count` objects of `object_bytes`.
struct PoolClass {
  int64_t object_bytes = 0;
  int32_t count = 0;
  bool operator==(const PoolClass& o) const {
    return object_bytes == o.object_bytes && count == o.count;
  }
};

// Size-class memory pool (seed 002 §5.3 encoding): TS, CLS and CNT.
struct MemoryPool {
  // TS: distinct tensor sizes, strictly ascending, > 0.
  std::vector<int64_t> tensor_sizes;
  // CLS: class of each size; size_class[0] == 0, steps of 0 or +1.
  std::vector<int32_t> size_class;
  // Per class (classes.size() == size_class.back() + 1): object size = the
  // largest tensor size of the class, and the object count.
  std::vector<PoolClass> classes;

  bool empty() const { return classes.empty(); }
  // Sum of count * object_bytes.
  int64_t TotalBytes() const;
  // The class a tensor of `bytes` uses: its TS entry's class, else the
  // smallest class whose objects hold it; -1 when none does. O(log sizes).
  int32_t ClassOf(int64_t bytes) const;
  // InvalidArgument naming the rule broken (sizes not ascending, CLS not
  // starting at 0 or stepping by more than 1, class count or object size
  // inconsistent with TS/CLS, negative count). An empty pool is valid.
  absl::Status Validate() const;
  bool operator==(const MemoryPool& o) const {
    return tensor_sizes == o.tensor_sizes && size_class == o.size_class && classes == o.classes;
  }
};

struct Policy {
  // Schema version the policy was read from (1 or 2); written as the
  // current version (policy_io.h kPolicyFormatVersion).
  int32_t format_version = 2;
  PolicyFingerprint fingerprint;
  // The device model the policy was planned for (device/device_model.h):
  // the one source of its budget (BudgetBytes), bandwidths, copy latency and
  // duplex mode. In v1 files: capacity = the recorded budget, the two
  // bandwidths, defaults otherwise (0 = not recorded).
  DeviceModel device;
  // What the runtime needs to apply the policy without the trace (v2).
  PolicyRuntime runtime;
  // Planner name and every parameter it ran with, in its order.
  std::string planner;
  std::vector<std::pair<std::string, std::string>> parameters;
  // Peak the planner expects with the policy applied.
  int64_t expected_peak_bytes = 0;
  // Stall time the planner's own model had to accept.
  int64_t expected_overhead_ns = 0;
  // Iteration time from the evaluation simulator; 0 when not simulated.
  int64_t simulated_iteration_time_ns = 0;
  std::vector<PolicyItem> items;
  // Execution order (local op indices); empty = the recorded order.
  std::vector<int32_t> schedule;
  // Size-class pool; empty = byte-granular memory.
  MemoryPool pool;

  // Structural checks: a valid device model (DeviceModel::Validate, where a
  // zero capacity or bandwidth means "not recorded"), the schedule is a
  // permutation of the iteration's ops, op order within each item in
  // schedule positions (wrapping items in their own order), indices inside
  // the fingerprint's iteration, positive sizes, budget >= 0, wrapping and
  // clean items are SWAP items, every item's tier is one of the device
  // model's (a tier other than the host only on SWAP items), a valid pool,
  // and a runtime section that
  // belongs to the policy (ValidatePolicyRuntime, policy/policy_runtime.h).
  // InvalidArgument naming the item (index and tensor id) or field
  // otherwise. O(items + schedule + pool + ops of the runtime section).
  // Starts with ValidateHeader.
  absl::Status Validate() const;

  // What every policy reader checks, the checker's (ReadPolicyForCheck)
  // included, so that `check` and `simulate` refuse the same policies: the
  // device model (DeviceModel::ValidatePartial: no negative or non-finite
  // bandwidth, no negative budget; rule `bad-device`) and a fingerprint
  // without negative values (`bad-fingerprint`). InvalidArgument with the
  // rule tag. O(tiers).
  absl::Status ValidateHeader() const;

  // The budget the policy must stay under: device capacity minus reserve
  // (unlimited for an unlimited capacity; 0 when no capacity is recorded).
  int64_t BudgetBytes() const;

  // Position of every local op in the schedule (identity when there is
  // none). Requires a valid schedule.
  std::vector<int32_t> SchedulePositions() const;

  // Total bytes of all items.
  int64_t TotalItemBytes() const;
};

}  // namespace swapplan

#endif  // SWAPPLAN_POLICY_POLICY_H_
