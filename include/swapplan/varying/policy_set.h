// Policy sets keyed by input signature: several policies for one op
// sequence, and the runtime picks the one made for iterations like the one
// it is running.
//
// Some variation is invisible in the op sequence. Sequence lengths that
// change from iteration to iteration (SPEC §2: a data loader with buckets,
// packing, curriculum) change every activation's size, not the ops: the
// stage tracker (Algorithm 1) calls such iterations stable, and a policy
// planned on a 512-token iteration frees an eighth of what a 4096-token one
// needs. A runtime knows the size of what it is about to run as soon as the
// iteration's first FORWARD op is dispatched (the batch it reads): the
// *input signature* is a hash of the dtypes and shapes of that op's tensors
// (inputs then outputs), with their total bytes as a measure of how large
// the iteration is. A policy set holds one policy per signature and
// answers, for a signature, the policy made for it — or, for a signature
// never planned for, the nearest one by bytes, larger first (activations
// grow with the batch, so a policy for a larger input frees at least as
// large a share of a smaller one's memory).
//
//   InputSignature sig;                                  // at the first forward op
//   for (tensor : op inputs then outputs) sig.Add(dtype, shape, bytes);
//   PolicySet set;  set.Insert(policy_sig, index);       // once per policy
//   PolicySet::Choice c = set.Select(sig);               // c.index, c.exact
//
// Complexity: Add O(dims); Insert and Select O(policies) (sets are small:
// one policy per distinct input seen in GenPolicy).
#ifndef SWAPPLAN_VARYING_POLICY_SET_H_
#define SWAPPLAN_VARYING_POLICY_SET_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct InputSignature {
  // FNV-1a 64 over (dtype, rank, dims) of each tensor, in order; 0 = none.
  uint64_t hash = 0;
  // Total bytes of those tensors.
  int64_t bytes = 0;

  // Adds one tensor. O(dims).
  void Add(DType dtype, absl::Span<const int64_t> shape, int64_t size_bytes);
  bool operator==(const InputSignature& o) const { return hash == o.hash && bytes == o.bytes; }
};

// The signature of iteration `iteration` of `trace`: the tensors used by its
// first FORWARD op (its first op when it has none). O(uses of that op +
// ops before it).
InputSignature ComputeInputSignature(const Trace& trace, int32_t iteration);

class PolicySet {
 public:
  struct Choice {
    int32_t index = -1;  // the caller's index of the chosen policy; -1: empty set
    bool exact = false;  // made for this signature
  };
  // Adds (or replaces) the policy for `sig`, under the caller's `index`.
  void Insert(const InputSignature& sig, int32_t index);
  // The policy for `sig`: the one with the same signature, else the one with
  // the fewest bytes >= sig.bytes, else the one with the most bytes (ties:
  // the earliest inserted).
  Choice Select(const InputSignature& sig) const;
  int32_t size() const { return static_cast<int32_t>(entries_.size()); }
  bool empty() const { return entries_.empty(); }
  void Clear() { entries_.clear(); }

 private:
  struct Entry {
    InputSignature sig;
    int32_t index = -1;
  };
  std::vector<Entry> entries_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_VARYING_POLICY_SET_H_
