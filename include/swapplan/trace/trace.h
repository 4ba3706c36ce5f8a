// Trace: the validated, read-only in-memory model of a recorded (or
// synthesized) training trace. Every later stage — memory curve, planners,
// checker, simulator — reads this and nothing else.
//
// Built for speed rather than fidelity to the file: flat arrays, dense integer
// ids, one array of tensor uses shared by all ops, op names interned to
// integers, and per-tensor lifetimes (allocation, free, first/last use overall
// and per phase) resolved once at build time. Ops of all iterations share one
// global index space; an iteration is a contiguous range of ops.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadTrace("step.trace"));
//   for (int it = 0; it < trace.num_iterations(); ++it) {
//     const IterationInfo& iter = trace.iteration(it);
//     for (OpIndex op = iter.op_begin; op < iter.op_end; ++op) {
//       for (TensorId t : trace.inputs(op)) bytes += trace.tensor(t).size_bytes;
//     }
//   }
//
// Lifetime semantics (the rules every producer and consumer follows):
//   * A tensor occupies the device from `alloc_op` to `free_op`, both
//     inclusive ("live during op i" means alloc_op <= i <= free_op).
//   * ALLOC at op i takes effect at the start of op i; FREE at op i after it.
//     Without an ALLOC event a tensor is allocated at its first use, or — when
//     persistent — before the first op (alloc_op == -1). Without a FREE event
//     it is freed after its last use, or — when persistent — never
//     (free_op == num_ops()).
//   * SWAP_OUT at op i releases the device copy after op i; SWAP_IN at op j
//     brings it back at the start of op j. The tensor is off the device for
//     ops i+1 .. j-1 and must not be used there. Swaps never change alloc_op /
//     free_op: the unswapped curve counts the tensor throughout.
#ifndef SWAPPLAN_TRACE_TRACE_H_
#define SWAPPLAN_TRACE_TRACE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/trace/types.h"

namespace swapplan {

struct TraceMetadata {
  std::string device_name;
  // Device memory capacity; 0 when unknown.
  int64_t device_memory_bytes = 0;
  // Measured copy bandwidth per direction; 0 when unknown.
  double h2d_bandwidth_bytes_per_s = 0;
  double d2h_bandwidth_bytes_per_s = 0;
  std::string framework;
  std::string recorder;
  std::string recorder_version;
  std::string model_name;
  // Repeated-layer count of the model (logical-layer default); 0 unknown.
  int32_t model_layers = 0;
  // Everything else the producer knew, sorted by key.
  std::vector<std::pair<std::string, std::string>> attributes;
};

struct TensorInfo {
  // Device bytes of the storage (> 0).
  int64_t size_bytes = 0;
  // The id the file used for this tensor.
  uint64_t trace_id = 0;
  // Storage id as recorded; -1 when absent.
  int64_t storage_id = -1;
  // Device address as recorded; 0 when absent.
  uint64_t device_address = 0;
  DType dtype = DType::kUnknown;
  TensorKind kind = TensorKind::kOther;
  // Resident from the start of the trace unless an ALLOC says otherwise,
  // never freed unless a FREE says otherwise.
  bool persistent = false;
};

struct TensorLifetime {
  // First op during which the tensor occupies the device; -1 when resident
  // from before the first op.
  OpIndex alloc_op = kNoOp;
  // Last op during which it occupies the device; Trace::num_ops() when never
  // freed. A tensor that is declared but never used nor allocated has
  // alloc_op == free_op == kNoOp and occupies nothing.
  OpIndex free_op = kNoOp;
  // First and last op using it (as input or output); kNoOp when unused.
  OpIndex first_use = kNoOp;
  OpIndex last_use = kNoOp;
  // The same per phase, indexed by static_cast<int>(Phase).
  OpIndex first_use_in_phase[kNumPhases] = {kNoOp, kNoOp, kNoOp, kNoOp};
  OpIndex last_use_in_phase[kNumPhases] = {kNoOp, kNoOp, kNoOp, kNoOp};

  bool occupies_device() const { return free_op != kNoOp; }
  // True when the tensor is live during op `op`.
  bool LiveAt(OpIndex op) const { return alloc_op <= op && op <= free_op && free_op != kNoOp; }
};

struct OpInfo {
  NameId name = 0;
  Phase phase = Phase::kOther;
  // Inputs are uses[uses_begin, +num_inputs), outputs follow them.
  uint32_t uses_begin = 0;
  uint16_t num_inputs = 0;
  uint16_t num_outputs = 0;
  // Optional hints; -1 when absent.
  int32_t micro_batch = -1;
  int32_t layer = -1;
  // Measured device duration; -1 when not recorded.
  int64_t duration_ns = -1;
  // Allocator's bytes in use after the op; -1 when not recorded.
  int64_t allocator_bytes_in_use = -1;
  // Call-site id; -1 when absent.
  int64_t stack_id = -1;
};

struct MemoryEvent {
  OpIndex op = 0;  // global op index
  TensorId tensor = 0;
  MemoryEventKind kind = MemoryEventKind::kAlloc;
  bool passive = false;
};

// An autograd saved-tensor event (torch.autograd.graph.saved_tensors_hooks):
// the pack hook saving `tensor` for backward, or the unpack hook handing a
// saved tensor back, recorded between ops: after `position` ops of its
// iteration completed (0 .. the iteration's op count). These are the only
// moments a saved-tensor clock can act at (the runtime's
// stable_clock="hooks"; policy/saved_tensor_clock.h).
struct SavedTensorEvent {
  int32_t position = 0;
  // The saved tensor; kNoTensor when it is not one of the trace's (a
  // storage on another device, or none recorded).
  TensorId tensor = kNoTensor;
  bool unpack = false;
};

struct IterationInfo {
  // Ops [op_begin, op_end) in global op indices; never empty.
  OpIndex op_begin = 0;
  OpIndex op_end = 0;
  // Memory events [event_begin, event_end) of Trace::events().
  uint32_t event_begin = 0;
  uint32_t event_end = 0;
  // Saved-tensor events [saved_begin, saved_end) of
  // Trace::saved_tensor_events(); saved_recorded: the recorder watched them
  // (an iteration may have none), false: not recorded.
  uint32_t saved_begin = 0;
  uint32_t saved_end = 0;
  bool saved_recorded = false;
  // Measured wall time (>= 0; 0 when unknown).
  int64_t wall_time_ns = 0;

  int32_t num_ops() const { return op_end - op_begin; }
};

class Trace {
 public:
  Trace() = default;
  Trace(Trace&&) = default;
  Trace& operator=(Trace&&) = default;
  Trace& operator=(const Trace&) = delete;

  // Where the trace came from (file name), for messages.
  const std::string& source() const { return source_; }
  const TraceMetadata& metadata() const { return metadata_; }

  // --- op names ---
  int32_t num_op_names() const { return static_cast<int32_t>(op_names_.size()); }
  const std::string& op_name(NameId id) const { return op_names_[id]; }
  const std::vector<std::string>& op_names() const { return op_names_; }
  // Name of the op at global index `op`.
  const std::string& op_name_at(OpIndex op) const { return op_names_[ops_[op].name]; }

  // --- tensors ---
  int32_t num_tensors() const { return static_cast<int32_t>(tensors_.size()); }
  const TensorInfo& tensor(TensorId t) const { return tensors_[t]; }
  absl::Span<const int64_t> shape(TensorId t) const {
    return absl::MakeConstSpan(shapes_).subspan(shape_begin_[t],
                                                shape_begin_[t + 1] - shape_begin_[t]);
  }
  // Optional human-readable name ("" when none was recorded).
  absl::string_view tensor_name(TensorId t) const {
    return absl::string_view(names_).substr(name_begin_[t], name_begin_[t + 1] - name_begin_[t]);
  }
  const TensorLifetime& lifetime(TensorId t) const { return lifetimes_[t]; }
  // Ops using tensor `t`, ascending (an op using it twice appears once).
  absl::Span<const OpIndex> tensor_uses(TensorId t) const {
    return absl::MakeConstSpan(uses_by_tensor_)
        .subspan(uses_by_tensor_begin_[t], uses_by_tensor_begin_[t + 1] - uses_by_tensor_begin_[t]);
  }

  // --- ops (global indices over all iterations) ---
  OpIndex num_ops() const { return static_cast<OpIndex>(ops_.size()); }
  const OpInfo& op(OpIndex i) const { return ops_[i]; }
  absl::Span<const TensorId> inputs(OpIndex i) const {
    return absl::MakeConstSpan(uses_).subspan(ops_[i].uses_begin, ops_[i].num_inputs);
  }
  absl::Span<const TensorId> outputs(OpIndex i) const {
    return absl::MakeConstSpan(uses_).subspan(ops_[i].uses_begin + ops_[i].num_inputs,
                                              ops_[i].num_outputs);
  }
  // Inputs followed by outputs.
  absl::Span<const TensorId> uses(OpIndex i) const {
    return absl::MakeConstSpan(uses_).subspan(ops_[i].uses_begin,
                                              ops_[i].num_inputs + ops_[i].num_outputs);
  }
  // Total number of (op, tensor) uses.
  int64_t num_uses() const { return static_cast<int64_t>(uses_.size()); }

  // --- iterations ---
  int32_t num_iterations() const { return static_cast<int32_t>(iterations_.size()); }
  const IterationInfo& iteration(int32_t it) const { return iterations_[it]; }
  // Iteration containing global op `op`. O(log iterations).
  int32_t IterationOf(OpIndex op) const;

  // --- memory events, sorted by op (stable: file order within an op) ---
  absl::Span<const MemoryEvent> events() const { return events_; }
  absl::Span<const MemoryEvent> iteration_events(int32_t it) const {
    return absl::MakeConstSpan(events_).subspan(
        iterations_[it].event_begin, iterations_[it].event_end - iterations_[it].event_begin);
  }

  // --- saved-tensor events, in recorded order (positions non-decreasing) ---
  absl::Span<const SavedTensorEvent> iteration_saved_events(int32_t it) const {
    return absl::MakeConstSpan(saved_events_).subspan(
        iterations_[it].saved_begin, iterations_[it].saved_end - iterations_[it].saved_begin);
  }

  // True when every op of the trace has a recorded duration.
  bool has_op_durations() const { return has_op_durations_; }
  // True when some op has allocator_bytes_in_use.
  bool has_allocator_bytes() const { return has_allocator_bytes_; }

  // Totals that TraceBuilder::Finish() checked to fit in int64 (rule
  // overflow), so any sum over a subset of them fits too: the sizes of all
  // tensors, the recorded durations of all ops (absent ones count 0) and the
  // wall times of all iterations.
  int64_t total_tensor_bytes() const { return total_tensor_bytes_; }
  int64_t total_op_duration_ns() const { return total_op_duration_ns_; }
  int64_t total_wall_time_ns() const { return total_wall_time_ns_; }

  // Approximate bytes held by this object (for benchmarks and reports).
  int64_t ApproximateMemoryBytes() const;

 private:
  // No implicit copies: traces can be gigabytes (compute_time_scale is
  // applied when durations are computed, trace/op_times.h, not by copying).
  Trace(const Trace&) = default;

  friend class TraceBuilder;
  friend class TraceFinisher;

  std::string source_;
  TraceMetadata metadata_;
  std::vector<std::string> op_names_;

  std::vector<TensorInfo> tensors_;
  std::vector<uint32_t> shape_begin_;  // num_tensors + 1
  std::vector<int64_t> shapes_;
  std::vector<uint32_t> name_begin_;   // num_tensors + 1
  std::string names_;
  std::vector<TensorLifetime> lifetimes_;
  std::vector<uint32_t> uses_by_tensor_begin_;  // num_tensors + 1
  std::vector<OpIndex> uses_by_tensor_;

  std::vector<OpInfo> ops_;
  std::vector<TensorId> uses_;
  std::vector<IterationInfo> iterations_;
  std::vector<MemoryEvent> events_;
  std::vector<SavedTensorEvent> saved_events_;
  bool has_op_durations_ = false;
  bool has_allocator_bytes_ = false;
  int64_t total_tensor_bytes_ = 0;
  int64_t total_op_duration_ns_ = 0;
  int64_t total_wall_time_ns_ = 0;
};

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_TRACE_H_
