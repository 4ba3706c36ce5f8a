#include "swapplan/varying/tensor_roles.h"

#include "absl/container/flat_hash_map.h"

namespace swapplan {
namespace {

inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

// The role of `o` given the occurrences of its signature so far.
uint64_t OpRole(const OpInfo& o, absl::flat_hash_map<uint64_t, int32_t>& occurrences) {
  uint64_t sig = Mix(1, static_cast<uint64_t>(o.name));
  sig = Mix(sig, static_cast<uint64_t>(o.phase));
  sig = Mix(sig, static_cast<uint64_t>(o.stack_id));
  sig = Mix(sig, static_cast<uint64_t>(static_cast<int64_t>(o.micro_batch)));
  sig = Mix(sig, static_cast<uint64_t>(static_cast<int64_t>(o.layer)));
  const uint64_t role = Mix(sig, static_cast<uint64_t>(occurrences[sig]++));
  return role == 0 ? 1 : role;
}

}  // namespace

std::vector<uint64_t> OpRoles(const Trace& trace, int32_t iteration) {
  const IterationInfo& iter = trace.iteration(iteration);
  std::vector<uint64_t> roles;
  roles.reserve(iter.num_ops());
  absl::flat_hash_map<uint64_t, int32_t> occurrences;
  occurrences.reserve(iter.num_ops());
  for (OpIndex op = iter.op_begin; op < iter.op_end; ++op) {
    roles.push_back(OpRole(trace.op(op), occurrences));
  }
  return roles;
}

std::vector<uint64_t> TensorRoles(const Trace& trace, int32_t iteration) {
  const IterationInfo& iter = trace.iteration(iteration);
  std::vector<uint64_t> roles(trace.num_tensors(), 0);
  absl::flat_hash_map<uint64_t, int32_t> occurrences;
  occurrences.reserve(iter.num_ops());
  for (OpIndex op = iter.op_begin; op < iter.op_end; ++op) {
    const uint64_t op_role = OpRole(trace.op(op), occurrences);
    absl::Span<const TensorId> uses = trace.uses(op);
    for (size_t i = 0; i < uses.size(); ++i) {
      const TensorId t = uses[i];
      if (roles[t] != 0) continue;
      roles[t] = trace.lifetime(t).alloc_op < iter.op_begin
                     ? Mix(2, trace.tensor(t).trace_id)
                     : Mix(op_role, static_cast<uint64_t>(i));
      if (roles[t] == 0) roles[t] = 1;
    }
  }
  return roles;
}

}  // namespace swapplan
