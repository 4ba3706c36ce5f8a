// Tensor matching at run time (SPEC §8, seeds 000/001 §5 / §6.1 and
// Appendix A): a policy made from iteration A names tensors of A; in a later
// iteration B the runtime must find "the same" tensors again, with no ids
// to go by, on every op dispatch, without strings or allocation.
//
// Runtime tensor table. Per iteration, every runtime tensor (a slot) holds
// its runtime key — op count, one-hot mask of the ops that used it among the
// 32 (or 64) most frequent, 8-bit shift register of its last 8 users'
// frequency ranks (policy/runtime_key.h, three integer operations per use)
// — and its dtype, size and shape hash. An op using a tensor twice updates
// it once (as the planner's keys count it).
//
// Fuzzy matcher (the default). Items are indexed by a hash of
// (phase, op count, mask, history, dtype): equal features land in one
// bucket, whose items are sorted by the position of their decision op (the
// op after which the tensor's key is complete — its last use before the
// swap-out) counted within its phase. After each op, every tensor it used
// gets its key updated and is looked up: it matches the bucket's first
// unmatched item whose decision op is within `window_ops` of the current op
// (same phase), so "a policy item matches the first runtime tensor whose key
// equals its own at the swap-out decision point". Positions count within
// the phase because that is what a runtime knows for sure (grad mode, the
// autograd engine, optimizer.step()): a validation pass (no_grad, phase
// OTHER) or a skipped optimizer step does not move the forward and backward
// positions. Tie-breakers among equal features (items in the window, tensors
// of the op): size, shape and the tensor's position among the op's inputs
// then outputs all equal first, then size and shape, then the first in use
// order (two same-shaped inputs of one op — q and k of an attention — keep
// their order). Items whose window passes unmatched are missed. A runtime
// tensor matches at most one item per iteration.
//
// Naive matcher (Capuchin's key, for comparison): an item is (ordinal of
// its decision op in the iteration, index of the tensor among that op's
// inputs then outputs); at that ordinal the tensor at that index is taken,
// whatever it is.
//
//   // The runtime shim: the policy alone (its runtime section, schema v2);
//   // tokens are indices into policy.runtime.op_names.
//   SWAPPLAN_ASSIGN_OR_RETURN(MatchablePolicy mp, MakeMatchablePolicy(policy));
//   // A trace-driven replay: tokens are the trace's NameIds.
//   SWAPPLAN_ASSIGN_OR_RETURN(MatchablePolicy mp, MakeMatchablePolicy(trace_a, 0, policy));
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<TensorMatcher> m,
//                             CreateMatcher(MatcherKind::kFuzzy, mp, {}));
//   RuntimeTensorTable table;
//   table.Reset(num_tensors);  m->BeginIteration();   // per iteration
//   table.Describe(slot, dtype, size, ShapeHash(shape)); // per new tensor
//   m->OnOp(name, phase, slots_used, table, &matches);  // per op dispatch
//
// Complexity: MakeMatchablePolicy O(items + names + ops) from the runtime
// section, plus AttachPolicyRuntime's O(ops + tensors of A + items × uses)
// from a trace;
// Create O(items log items); BeginIteration O(items); OnOp O(uses of the op)
// amortised — per use one key update, one hash and one probe of a flat hash
// map (no allocation), plus cursor steps that total O(items) per iteration.
// Measured in bench/varying_bench.cc.
#ifndef SWAPPLAN_VARYING_MATCHER_H_
#define SWAPPLAN_VARYING_MATCHER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/policy/policy.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/policy/runtime_key.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// ---------------------------------------------------------------------------
// Runtime tensor table.

struct RuntimeTensor {
  TensorKeyState key;
  DType dtype = DType::kUnknown;
  int64_t size_bytes = 0;
  uint64_t shape_hash = 0;
  // Ordinal of the last op that updated the key (dedupes an op's uses).
  int32_t last_op = -1;
  // The last item this tensor matched in this iteration, or -1; later it
  // takes only items of the same planned tensor (its next windows), one per
  // op.
  int32_t matched_item = -1;
};

class RuntimeTensorTable {
 public:
  // Starts an iteration with `slots` tensors, all keys empty. O(slots).
  void Reset(int32_t slots) { tensors_.assign(slots, RuntimeTensor{}); }
  // Grows the table to `slots` (the new ones empty), keeping the others; a
  // runtime adding tensors during an iteration. O(new slots) amortised.
  void Grow(int32_t slots) {
    if (slots > size()) tensors_.resize(slots);
  }
  // Static features of a slot (set when the tensor is created).
  void Describe(int32_t slot, DType dtype, int64_t size_bytes, uint64_t shape_hash) {
    RuntimeTensor& t = tensors_[slot];
    t.dtype = dtype;
    t.size_bytes = size_bytes;
    t.shape_hash = shape_hash;
  }
  // One use by the op with ordinal `op` (in the iteration): updates the key
  // unless this op already did. Returns whether it did.
  bool Update(int32_t slot, int32_t op, const OpKeyCode& code) {
    RuntimeTensor& t = tensors_[slot];
    if (t.last_op == op) return false;
    t.last_op = op;
    t.key.Update(code);
    return true;
  }
  RuntimeTensor& operator[](int32_t slot) { return tensors_[slot]; }
  const RuntimeTensor& operator[](int32_t slot) const { return tensors_[slot]; }
  int32_t size() const { return static_cast<int32_t>(tensors_.size()); }

 private:
  std::vector<RuntimeTensor> tensors_;
};

// The bucket hash of the matching features.
uint64_t KeyHash(Phase phase, const TensorKeyState& key, DType dtype);

// ---------------------------------------------------------------------------
// A policy prepared for matching.

struct MatchableItem {
  // Index into MatchablePolicy::policy.items.
  int32_t item = 0;
  // The op after which the key is complete: the tensor's last use at or
  // before swap_out_op (swap_out_op itself for Chameleon's items).
  OpAnchor decision;
  // Position of the tensor among the decision op's inputs then outputs.
  int32_t use_index = 0;
  // The key at the decision point and the static features.
  TensorKeyState key;
  DType dtype = DType::kUnknown;
  int64_t size_bytes = 0;
  uint64_t shape_hash = 0;
  OpAnchor release, swap_in, first_use;
};

struct MatchablePolicy {
  // The policy, with its runtime section (schema v2).
  Policy policy;
  // The code of every op token the matcher's OnOp is given: by default the
  // token is an index into policy.runtime.op_names (what the runtime shim
  // interns names against); after BindOpNames, a NameId of the caller's
  // name table. Tokens past the end code as "not ranked".
  std::vector<OpKeyCode> codes;
  std::vector<MatchableItem> items;  // one per policy item, same order
  // Ops of the planned iteration.
  int32_t source_ops = 0;
};

// Prepares `policy` for matching from its runtime section alone (no trace):
// the codes from op_ranks and mask_bits, each item's key, dtype and size from
// its runtime_key, its anchors, use index and shape hash from the runtime
// item. InvalidArgument (ErrorKind::kMalformedInput) when the policy has no
// runtime section (a v1 policy: `swapplan policy upgrade` adds one) or the
// section is invalid (ValidatePolicyRuntime). O(items + names + ops).
absl::StatusOr<MatchablePolicy> MakeMatchablePolicy(Policy policy);

// Re-indexes mp->codes by `names` (a trace's op-name table, NameId order), so
// that a trace-driven replay can hand the matcher its own NameIds: names
// the policy's table lacks code as "not ranked". Idempotent (the codes are
// recomputed from the policy's runtime section). O(names + table).
void BindOpNames(absl::Span<const std::string> names, MatchablePolicy* mp);

// Prepares `policy`, made for iteration `iteration` of `trace` (its op
// indices local to it), for matching by that trace's NameIds: its runtime
// section is rebuilt with `mask_bits` (32 or 64) bits (AttachPolicyRuntime,
// policy/policy_runtime.h: so policies without one, or with other keys, can
// be matched too) and its fingerprint set to that iteration's, then
// MakeMatchablePolicy(policy) and BindOpNames(trace's names). Errors as
// AttachPolicyRuntime.
absl::StatusOr<MatchablePolicy> MakeMatchablePolicy(const Trace& trace, int32_t iteration,
                                                    Policy policy, int32_t mask_bits = 32);

// ---------------------------------------------------------------------------
// Matchers.

enum class MatcherKind : uint8_t {
  kFuzzy = 0,  // runtime keys + phase positions (default)
  kNaive = 1,  // (op ordinal, i-th tensor), as Capuchin
};
// "fuzzy", "naive"; the parser returns false for anything else.
absl::string_view MatcherKindName(MatcherKind k);
bool ParseMatcherKind(absl::string_view name, MatcherKind* out);

struct MatcherOptions {
  // Fuzzy: how far (in ops of the same phase) a tensor's decision op may be
  // from the item's and still match. 0 = the same position; larger values
  // tolerate ops inserted or removed within a phase (MoE routing) but let a
  // tensor with equal features that many ops away take the item.
  int32_t window_ops = 0;

  // InvalidArgument when window_ops < 0.
  absl::Status Validate() const;
};

struct MatchDecision {
  int32_t item = 0;  // index into the policy's items
  int32_t slot = 0;  // runtime tensor
};

class TensorMatcher {
 public:
  virtual ~TensorMatcher() = default;
  virtual MatcherKind kind() const = 0;
  // Starts an iteration (the table must have been Reset). O(items).
  virtual void BeginIteration() = 0;
  // After op dispatch: `name` (its token), `phase`, the slots it used
  // (inputs then outputs, duplicates allowed). Updates keys in `table` and
  // appends the items matched at this op to `out` (the swap-out decision:
  // copy out after this op). No allocation unless `out` grows.
  virtual void OnOp(NameId name, Phase phase, absl::Span<const int32_t> slots,
                    RuntimeTensorTable& table, std::vector<MatchDecision>* out) = 0;
};

// A matcher over `policy` (which must outlive it). InvalidArgument for bad
// options.
absl::StatusOr<std::unique_ptr<TensorMatcher>> CreateMatcher(MatcherKind kind,
                                                             const MatchablePolicy& policy,
                                                             const MatcherOptions& options);

}  // namespace swapplan

#endif  // SWAPPLAN_VARYING_MATCHER_H_
