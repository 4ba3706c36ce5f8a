// ExecutionRecord: what the runtime actually did, kept as it happens and
// turned into a swapplan trace (SPEC §2) on demand — for the policy provider
// (one iteration to plan) and for `swapplan inspect / check / simulate` (the
// executed run next to the plan).
//
// Contents per iteration: the ops as dispatched (name, phase, micro-batch,
// input and output tensors, wall time from this op's begin to the next one's,
// the runtime's bytes in use after it), and the memory events at op
// positions: ALLOC (a tensor registered; between two ops it belongs to the
// next one), FREE (after the op it died after), SWAP_OUT (the block was
// released after the op), SWAP_IN (the block was allocated for a copy in
// before the op), each swap flagged passive when Algorithm 3 or a use while
// off device caused it; and, where the framework reports them (the PyTorch
// integration under stable_clock="hooks"), autograd's saved-tensor events
// after the ops completed when each fired (trace.h SavedTensorEvent: what
// `swapplan simulate --clock saved-tensors` replays). Wall-clock times of
// every copy are not part of the trace format; the per-op wall times and
// these positions are.
//
// A window of iterations [first, last] becomes a valid trace:
//   * tensors alive when `first` begins are resident from the start
//     (persistent, with a FREE if they die in the window); tensors still
//     alive when `last` ends are persistent (never freed) — so a single
//     iteration's trace counts every byte the device held during it;
//   * a tensor off the device when `first` begins gets a SWAP_OUT at op 0
//     (unless it comes back at op 0), so the trace starts consistent;
//   * events placed after the last op of an iteration move to op 0 of the
//     next one.
// Tensor ids are the record's (stable across windows).
//
//   ExecutionRecord rec(/*keep_all=*/false);
//   int64_t t = rec.AddTensor({.size_bytes = 100, .dtype = DType::kFloat32});
//   rec.BeginIteration();
//   rec.AddEvent(0, MemoryEventKind::kAlloc, t, /*passive=*/false);
//   rec.AddOp({.name = 0, .phase = Phase::kForward, .outputs = {t}});
//   rec.EndIteration(1000);
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, rec.BuildTrace(op_names, metadata, 0, 0));
//
// Not thread-safe. AddOp/AddEvent/AddSavedTensorEvent O(1) amortised;
// BuildTrace O(tensors alive in the window + ops + uses + events of the
// window) plus the TraceBuilder.
#ifndef SWAPPLAN_RUNTIME_EXECUTION_RECORD_H_
#define SWAPPLAN_RUNTIME_EXECUTION_RECORD_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/trace/trace.h"

namespace swapplan::runtime {

struct RecordTensor {
  int64_t size_bytes = 0;
  DType dtype = DType::kUnknown;
  std::vector<int64_t> shape;
  TensorKind kind = TensorKind::kActivation;
  // Never to be swapped (the runtime's persistent tensors: parameters,
  // storages the framework cannot free): persistent in every trace.
  bool pinned = false;
};

struct RecordOp {
  int32_t name = 0;
  Phase phase = Phase::kOther;
  // -1 when the phase has no micro-batch (OPTIMIZER, OTHER).
  int32_t micro_batch = -1;
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
  int64_t duration_ns = 0;
  int64_t bytes_in_use = 0;
};

class ExecutionRecord {
 public:
  // keep_all: every iteration stays; otherwise only the last two (and the
  // one in progress) — enough for the provider.
  explicit ExecutionRecord(bool keep_all) : keep_all_(keep_all) {}

  // A new tensor; returns its record id (1, 2, ...). It is alive from
  // before the record began (`resident_from_start`) or from its ALLOC event
  // (AddEvent).
  int64_t AddTensor(const RecordTensor& tensor, bool resident_from_start);

  void BeginIteration();
  // Closes the iteration; `wall_ns` is its measured wall time. Iterations
  // without ops are dropped (their events move on).
  void EndIteration(int64_t wall_ns);
  bool in_iteration() const { return in_iteration_; }
  // Ops recorded in the open iteration.
  int32_t ops_in_iteration() const;

  // A memory event at local op `op` of the open iteration. A FREE or
  // SWAP_OUT after an op already added lowers that op's bytes_in_use (its
  // "after the op" figure) by `device_bytes`, what the tensor held on the
  // device (0 for a tensor freed while off it). ALLOC and
  // SWAP_IN take effect before the op, FREE and SWAP_OUT after it: a FREE
  // or SWAP_OUT before the first op (op < 0, or between iterations) goes to
  // the last op of the previous iteration; an event at or past the last op
  // when the iteration ends, or an ALLOC / SWAP_IN between iterations, to op
  // 0 of the next one.
  void AddEvent(int32_t op, MemoryEventKind kind, int64_t tensor, bool passive,
                int64_t device_bytes = 0);
  void AddOp(RecordOp op);
  // An autograd saved-tensor event of the open iteration after the ops
  // added so far: a pack, or an unpack; `tensor` a record id, 0 when the
  // saved storage is not one of the record's. Marks the iteration's
  // saved-tensor events as recorded. Ignored between iterations.
  void AddSavedTensorEvent(bool unpack, int64_t tensor);
  // Marks the open iteration's saved-tensor events as recorded (also when
  // none fires). Ignored between iterations.
  void MarkSavedTensorEventsRecorded();
  // Sets the wall time of the open iteration's last op (known when the next
  // op begins).
  void SetLastOpDuration(int64_t ns);

  // Recorded iterations still kept: their indices run from first_kept() to
  // num_iterations() - 1.
  int32_t num_iterations() const { return first_kept_ + static_cast<int32_t>(iterations_.size()); }
  int32_t first_kept() const { return first_kept_; }

  // Iterations [first, last] (kept ones) as a trace. `op_names` indexes the
  // ops' names. The TraceBuilder's error when the record is inconsistent
  // (a runtime bug); InvalidArgument for a window outside the kept ones.
  absl::StatusOr<Trace> BuildTrace(absl::Span<const std::string> op_names,
                                   const TraceMetadata& metadata, int32_t first,
                                   int32_t last) const;

 private:
  struct Event {
    int32_t op;
    MemoryEventKind kind;
    int64_t tensor;
    bool passive;
  };
  struct SavedEvent {
    int32_t position;  // ops completed
    bool unpack;
    int64_t tensor;  // record id, 0: not one of the record's
  };
  struct Iteration {
    std::vector<RecordOp> ops;
    std::vector<Event> events;
    std::vector<SavedEvent> saved;
    bool saved_recorded = false;
    int64_t wall_ns = 0;
    // Tensors off the device when it began.
    std::vector<int64_t> off_at_start;
    // Global position of its first op.
    int64_t op_begin = 0;
  };
  struct TensorInfo {
    RecordTensor t;
    // Global op positions of the ALLOC (-1: before the record; kUnborn:
    // its ALLOC is not final yet) and FREE (-1: alive).
    int64_t birth = -1;
    int64_t death = -1;
    bool off = false;
  };
  void Prune();
  // Applies a finalised event (global op position) to its tensor.
  void Apply(const Event& e, int64_t pos);

  bool keep_all_;
  bool in_iteration_ = false;
  int64_t next_id_ = 1;
  int64_t ops_total_ = 0;  // global op positions so far (closed iterations)
  absl::flat_hash_map<int64_t, TensorInfo> tensors_;
  absl::flat_hash_set<int64_t> off_;  // off the device after the closed iterations
  std::deque<Iteration> iterations_;
  int32_t first_kept_ = 0;
  Iteration open_;
  std::vector<Event> carried_;  // events after the last op of an iteration
  int64_t dead_ = 0;             // tensors_ entries with a death
};

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_EXECUTION_RECORD_H_
