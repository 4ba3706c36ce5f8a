// Input signatures and policy sets (policy_set.h).
#include "swapplan/varying/policy_set.h"

#include "swapplan/policy/policy.h"

namespace swapplan {
namespace {

uint64_t Fnv(uint64_t h, uint64_t v) {
  for (int b = 0; b < 8; ++b) h = (h ^ ((v >> (8 * b)) & 0xff)) * kFnvPrime;
  return h;
}

}  // namespace

void InputSignature::Add(DType dtype, absl::Span<const int64_t> shape, int64_t size_bytes) {
  uint64_t h = hash == 0 ? kFnvOffset : hash;
  h = Fnv(h, static_cast<uint64_t>(dtype));
  h = Fnv(h, shape.size());
  for (int64_t d : shape) h = Fnv(h, static_cast<uint64_t>(d));
  hash = h == 0 ? 1 : h;
  bytes += size_bytes;
}

InputSignature ComputeInputSignature(const Trace& trace, int32_t iteration) {
  const IterationInfo& iter = trace.iteration(iteration);
  OpIndex first = iter.op_begin;
  for (OpIndex op = iter.op_begin; op < iter.op_end; ++op) {
    if (trace.op(op).phase == Phase::kForward) {
      first = op;
      break;
    }
  }
  InputSignature sig;
  for (TensorId t : trace.uses(first)) {
    sig.Add(trace.tensor(t).dtype, trace.shape(t), trace.tensor(t).size_bytes);
  }
  return sig;
}

void PolicySet::Insert(const InputSignature& sig, int32_t index) {
  for (Entry& e : entries_) {
    if (e.sig == sig) {
      e.index = index;
      return;
    }
  }
  entries_.push_back({sig, index});
}

PolicySet::Choice PolicySet::Select(const InputSignature& sig) const {
  Choice c;
  const Entry* above = nullptr;  // fewest bytes >= sig.bytes
  const Entry* largest = nullptr;
  for (const Entry& e : entries_) {
    if (e.sig == sig) return {e.index, true};
    if (e.sig.bytes >= sig.bytes && (above == nullptr || e.sig.bytes < above->sig.bytes)) {
      above = &e;
    }
    if (largest == nullptr || e.sig.bytes > largest->sig.bytes) largest = &e;
  }
  const Entry* pick = above != nullptr ? above : largest;
  if (pick != nullptr) c.index = pick->index;
  return c;
}

}  // namespace swapplan
