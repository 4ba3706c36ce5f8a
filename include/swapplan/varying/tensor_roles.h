// Tensor roles: the offline ground truth that tells whether a matcher found
// the right tensor. A runtime cannot know it — that is the point of the
// matchers — but a replay over a trace can, with everything the trace holds.
//
// Every iteration has new tensors with new ids, so "the same tensor" across
// iterations means the same role: the tensor made (first used) by the same
// op — same name, phase, call site (stack_id), micro-batch and layer, and
// the same occurrence of that combination in the iteration — at the same
// position among its inputs then outputs. A tensor resident before the
// iteration (parameters, optimizer state) keeps its identity: its role is
// its file id. Inserting a validation pass (phase OTHER, its own call sites)
// or dropping optimizer ops does not change the roles of the training
// tensors; a trace without call-site or layer hints falls back to
// (name, phase) occurrences, which any insertion of the same op shifts.
//
//   std::vector<uint64_t> a = TensorRoles(trace_a, 0), b = TensorRoles(trace_b, 0);
//   bool right = a[item_tensor] == b[matched_tensor];
//
// OpRoles gives the ops the same kind of identity — (name, phase, call
// site, micro-batch, layer, occurrence) — so that what was observed at "the
// same op" of several iterations can be compared (envelope.h).
//
// O(ops + uses + tensors) time and memory.
#ifndef SWAPPLAN_VARYING_TENSOR_ROLES_H_
#define SWAPPLAN_VARYING_TENSOR_ROLES_H_

#include <cstdint>
#include <vector>

#include "swapplan/trace/trace.h"

namespace swapplan {

// Role of every tensor of `trace` (by dense id) in iteration `iteration`
// (which must exist); 0 for tensors not used in it.
std::vector<uint64_t> TensorRoles(const Trace& trace, int32_t iteration);

// Role of every op of iteration `iteration` (which must exist), in op order
// (index = local op): a hash of its name, phase, call site, micro-batch,
// layer and occurrence of that combination in the iteration; never 0.
// O(ops) time and memory.
std::vector<uint64_t> OpRoles(const Trace& trace, int32_t iteration);

}  // namespace swapplan

#endif  // SWAPPLAN_VARYING_TENSOR_ROLES_H_
