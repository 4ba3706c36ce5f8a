// Internal to varying/: appends one recorded op of a trace to a TraceBuilder
// that rebuilds (part of) that trace — the segmenter's segments and the
// envelope both do.
#ifndef SWAPPLAN_SRC_VARYING_RECORDED_OP_H_
#define SWAPPLAN_SRC_VARYING_RECORDED_OP_H_

#include <cstdint>
#include <vector>

#include "swapplan/trace/builder.h"
#include "swapplan/trace/trace.h"

namespace swapplan::internal {

// Appends op `op` of `t` to `b`: its name id (`b` must hold `t`'s op-name
// table), phase, inputs and outputs by their trace ids (`b` must hold those
// tensors), and its optional fields; allocator_bytes_in_use only when
// `keep_allocator_bytes` (an envelope adds blocks the recorded allocator
// never saw). `in` / `out` are scratch buffers reused across calls. O(uses).
inline void AppendRecordedOp(const Trace& t, OpIndex op, bool keep_allocator_bytes,
                             TraceBuilder& b, std::vector<uint64_t>& in,
                             std::vector<uint64_t>& out) {
  const OpInfo& o = t.op(op);
  in.clear();
  out.clear();
  for (TensorId x : t.inputs(op)) in.push_back(t.tensor(x).trace_id);
  for (TensorId x : t.outputs(op)) out.push_back(t.tensor(x).trace_id);
  OpSpec spec;
  spec.name = o.name;
  spec.phase = o.phase;
  spec.inputs = in;
  spec.outputs = out;
  if (o.duration_ns >= 0) spec.duration_ns = o.duration_ns;
  if (keep_allocator_bytes && o.allocator_bytes_in_use >= 0) {
    spec.allocator_bytes_in_use = o.allocator_bytes_in_use;
  }
  if (o.stack_id >= 0) spec.stack_id = o.stack_id;
  if (o.micro_batch >= 0) spec.micro_batch = o.micro_batch;
  if (o.layer >= 0) spec.layer = o.layer;
  b.AddOp(spec);
}

}  // namespace swapplan::internal

#endif  // SWAPPLAN_SRC_VARYING_RECORDED_OP_H_
