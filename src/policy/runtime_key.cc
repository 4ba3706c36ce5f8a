#include "swapplan/policy/runtime_key.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace swapplan {

uint64_t ShapeHash(absl::Span<const int64_t> shape) {
  uint64_t h = kFnvOffset;
  for (int64_t d : shape) {
    uint64_t v;
    std::memcpy(&v, &d, sizeof v);
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * kFnvPrime;
  }
  return h ^ shape.size();
}

absl::StatusOr<OpFrequencyRanking> OpFrequencyRanking::FromCounts(
    absl::Span<const int64_t> counts, absl::Span<const std::string> names, int32_t mask_bits) {
  if (mask_bits != 32 && mask_bits != 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime keys: mask bits must be 32 or 64, got ", mask_bits));
  }
  if (counts.size() != names.size()) {
    return absl::InvalidArgumentError(absl::StrCat("runtime keys: ", counts.size(),
                                                   " counts for ", names.size(), " names"));
  }
  OpFrequencyRanking r;
  r.mask_bits_ = mask_bits;
  const NameId n = static_cast<NameId>(names.size());
  r.codes_.assign(n, OpKeyCode{});
  r.ranks_.assign(n, -1);
  for (NameId i = 0; i < n; ++i) {
    if (counts[i] > 0) r.ranked_.push_back(i);
  }
  std::sort(r.ranked_.begin(), r.ranked_.end(), [&](NameId a, NameId b) {
    if (counts[a] != counts[b]) return counts[a] > counts[b];
    return names[a] < names[b];
  });
  for (int32_t rank = 0; rank < static_cast<int32_t>(r.ranked_.size()); ++rank) {
    const NameId id = r.ranked_[rank];
    r.ranks_[id] = rank;
    r.codes_[id] = OpKeyCodeForRank(rank, mask_bits);
  }
  return r;
}

absl::StatusOr<OpFrequencyRanking> OpFrequencyRanking::ForIteration(const Trace& trace,
                                                                    int32_t iteration,
                                                                    int32_t mask_bits) {
  std::vector<int64_t> counts(trace.num_op_names(), 0);
  const IterationInfo& iter = trace.iteration(iteration);
  for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) ++counts[trace.op(i).name];
  return FromCounts(counts, trace.op_names(), mask_bits);
}

TensorKeyState KeyStateAt(const Trace& trace, int32_t iteration,
                          const OpFrequencyRanking& ranking, TensorId t, int32_t local_op) {
  const IterationInfo& iter = trace.iteration(iteration);
  const OpIndex last = iter.op_begin + local_op;
  absl::Span<const OpIndex> uses = trace.tensor_uses(t);
  auto it = std::lower_bound(uses.begin(), uses.end(), iter.op_begin);
  TensorKeyState s;
  for (; it != uses.end() && *it <= last; ++it) s.Update(ranking.code(trace.op(*it).name));
  return s;
}

RuntimeKey MakeRuntimeKey(const TensorKeyState& state, const Trace& trace, TensorId t,
                          int32_t mask_bits) {
  RuntimeKey k;
  k.op_count = state.op_count;
  k.op_mask = state.op_mask;
  k.op_history = state.op_history;
  k.dtype = trace.tensor(t).dtype;
  k.size_bytes = trace.tensor(t).size_bytes;
  absl::Span<const int64_t> shape = trace.shape(t);
  k.shape.assign(shape.begin(), shape.end());
  k.mask_bits = static_cast<uint32_t>(mask_bits);
  return k;
}

}  // namespace swapplan
