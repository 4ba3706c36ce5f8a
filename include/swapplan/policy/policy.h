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
// Clean items (`clean`): the host already holds the bytes (the tensor came
// from the host and nothing wrote it since), so the swap-out frees the block
// without a device->host copy — seed 002 Fig. 1's parameters.
//
// Memory pool (`pool`, Advisor policies): the device memory is a set of size
// classes with a fixed number of objects each (seed 002 §4.1); every tensor
// takes one object of its class for as long as it is on the device.
//
//   Policy p;
//   p.planner = "chameleon";
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
#include "swapplan/trace/types.h"

namespace swapplan {

struct PolicyFingerprint {
  // FNV-1a 64 over the iteration's (op name, phase) sequence.
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
  // No device->host copy: the host copy is current (see above).
  bool clean = false;
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
  PolicyFingerprint fingerprint;
  // Budget the policy must stay under (capacity minus reserve).
  int64_t device_budget_bytes = 0;
  double h2d_bandwidth_bytes_per_s = 0;
  double d2h_bandwidth_bytes_per_s = 0;
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

  // Structural checks: the schedule is a permutation of the iteration's ops,
  // op order within each item in schedule positions (wrapping items in their
  // own order), indices inside the fingerprint's iteration, positive sizes
  // and bandwidths, budget >= 0, wrapping and clean items are SWAP items, a
  // valid pool. InvalidArgument naming the item (index and tensor id)
  // otherwise. O(items + schedule + pool).
  absl::Status Validate() const;

  // Position of every local op in the schedule (identity when there is
  // none). Requires a valid schedule.
  std::vector<int32_t> SchedulePositions() const;

  // Total bytes of all items.
  int64_t TotalItemBytes() const;
};

}  // namespace swapplan

#endif  // SWAPPLAN_POLICY_POLICY_H_
