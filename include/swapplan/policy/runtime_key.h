// Runtime keys: the integer-only tensor features that let a runtime find a
// policy's tensor again in a later iteration without ids or strings (SPEC §8,
// seed 001 §6.1 and Appendix A).
//
// Per iteration, op names are ranked by how often they occur (most frequent
// first; ties by name, byte order, so every process ranks the same way). An
// op's code is its rank byte (the rank, saturated at 255) and, for the
// `mask_bits` (32 or 64) most frequent names, a one-hot bit. Per tensor, a
// TensorKeyState is updated once for every op that uses it:
//
//   op_count   += 1
//   op_mask    |= code.one_hot
//   op_history  = (op_history << 8) | code.rank_byte   // last 8 users
//
// Three integer operations, no allocation, no string: the runtime shim runs
// it on every op dispatch (Appendix A's Tensor::update). A policy item
// carries the key as of its swap-out decision point (after swap_out_op); the
// matcher compares op_count, op_mask, op_history and dtype, with size and
// shape as tie-breakers (RuntimeKey::FeaturesEqual).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(OpFrequencyRanking rank,
//                             OpFrequencyRanking::ForIteration(trace, 0, 32));
//   TensorKeyState s;
//   for (OpIndex op : uses_so_far) s.Update(rank.code(trace.op(op).name));
//   RuntimeKey key = MakeRuntimeKey(s, trace, tensor, rank.mask_bits());
//
// Complexity: ranking O(ops + names log names); Update O(1); KeyStateAt
// O(uses of the tensor up to the op).
#ifndef SWAPPLAN_POLICY_RUNTIME_KEY_H_
#define SWAPPLAN_POLICY_RUNTIME_KEY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/policy/policy.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// What one op contributes to the keys of the tensors it uses.
struct OpKeyCode {
  // Bit `rank` when rank < mask_bits, else 0.
  uint64_t one_hot = 0;
  // min(rank, 255); 255 also for names that did not occur when ranking.
  uint8_t rank_byte = 255;
};

// The code of an op name of frequency rank `rank` (-1: did not occur) with
// a `mask_bits`-wide mask: the one formula behind OpFrequencyRanking and a
// runtime section's op_ranks (policy_runtime.h).
inline OpKeyCode OpKeyCodeForRank(int32_t rank, int32_t mask_bits) {
  OpKeyCode c;
  if (rank < 0) return c;
  c.rank_byte = static_cast<uint8_t>(rank < 255 ? rank : 255);
  c.one_hot = rank < mask_bits ? (uint64_t{1} << rank) : 0;
  return c;
}

// Order-sensitive hash of a shape: FNV-1a 64 over the 8 little-endian bytes
// of each dimension, XOR the number of dimensions (a tie-breaker of the
// matcher; RuntimeItem::shape_hash).
uint64_t ShapeHash(absl::Span<const int64_t> shape);

class OpFrequencyRanking {
 public:
  OpFrequencyRanking() = default;

  // Ranks op names by their count (descending), ties by name (byte order).
  // `counts[n]` is the count of `names[n]`; names with count 0 get no rank.
  // InvalidArgument unless mask_bits is 32 or 64 and the spans have equal
  // length.
  static absl::StatusOr<OpFrequencyRanking> FromCounts(absl::Span<const int64_t> counts,
                                                       absl::Span<const std::string> names,
                                                       int32_t mask_bits);
  // Ranks the op names of iteration `iteration` of `trace` (which must
  // exist). Codes are indexed by the trace's NameId.
  static absl::StatusOr<OpFrequencyRanking> ForIteration(const Trace& trace, int32_t iteration,
                                                         int32_t mask_bits);

  int32_t mask_bits() const { return mask_bits_; }
  // Code of name `n` (an index into the names given / the trace's NameId).
  const OpKeyCode& code(NameId n) const { return codes_[n]; }
  // Rank of name `n` (0 = most frequent); -1 when it did not occur.
  int32_t rank(NameId n) const { return ranks_[n]; }
  // Names with a rank, most frequent first.
  const std::vector<NameId>& ranked() const { return ranked_; }

 private:
  int32_t mask_bits_ = 32;
  std::vector<OpKeyCode> codes_;
  std::vector<int32_t> ranks_;
  std::vector<NameId> ranked_;
};

// Per-tensor matching state, updated once per op that uses the tensor.
struct TensorKeyState {
  uint32_t op_count = 0;
  uint64_t op_mask = 0;
  uint64_t op_history = 0;

  void Update(const OpKeyCode& c) {
    ++op_count;
    op_mask |= c.one_hot;
    op_history = (op_history << 8) | c.rank_byte;
  }
};

// The state of tensor `t` after the uses of iteration `iteration` up to and
// including local op `local_op` (each using op counted once). Requires a
// ranking of the same trace, a valid iteration and 0 <= local_op < its ops.
TensorKeyState KeyStateAt(const Trace& trace, int32_t iteration,
                          const OpFrequencyRanking& ranking, TensorId t, int32_t local_op);

// The policy form: the state plus dtype, size and shape of tensor `t`.
RuntimeKey MakeRuntimeKey(const TensorKeyState& state, const Trace& trace, TensorId t,
                          int32_t mask_bits);

}  // namespace swapplan

#endif  // SWAPPLAN_POLICY_RUNTIME_KEY_H_
