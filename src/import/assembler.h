// TraceAssembler: what every importer shares after parsing its format. An
// importer adds ops in trace order (each with its iteration and a phase
// hint), tensors (kind known or to be inferred), uses and memory events in
// any order; Finish() assigns phases, micro-batches and the missing tensor
// kinds with the rules below, and builds the Trace through TraceBuilder (so
// every model rule is validated in one place).
//
//   TraceAssembler a("run.json");
//   uint64_t t = a.AddTensor(100, DType::kFloat32, {}, "");
//   int32_t op = a.AddOp(/*iteration=*/0, a.Name("aten::mm"), PhaseHint::kNone);
//   a.AddUse(op, t, /*output=*/true);
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, std::move(a).Finish());
//
// Phase rules, per iteration: an explicit hint (an annotation such as
// `## forward ##`, `Optimizer.step#...`, a memory category) gives the phase;
// kAutograd (an autograd node, a backward thread) gives BACKWARD; an op
// without a hint is FORWARD before the iteration's first BACKWARD op,
// BACKWARD between it and the first OPTIMIZER op, OTHER after that. Once the
// OPTIMIZER phase began, FORWARD and BACKWARD ops become OTHER (counted in
// import.note.phase_demoted). A FORWARD op after a BACKWARD op starts a new
// micro-batch; micro_batch hints are set when an iteration has several.
//
// Kind rules for tensors whose kind the format did not give (a = phase of
// the allocation or first use, f = phase of the free or last use):
//   resident before the trace and freed in it -> OTHER; resident before the
//   trace and never freed (persistent): used in FORWARD and OPTIMIZER ->
//     PARAMETER; only in OPTIMIZER -> OPTIMIZER_STATE; in FORWARD while the
//     trace has an optimizer phase -> INPUT; in FORWARD without one ->
//     PARAMETER; otherwise OTHER.
//   a = FORWARD:   f = BACKWARD -> ACTIVATION; f = FORWARD -> TEMPORARY;
//                  alive past the iteration -> OTHER.
//   a = BACKWARD:  f in OPTIMIZER or past the iteration -> GRADIENT;
//                  otherwise TEMPORARY.
//   a = OPTIMIZER: alive past the iteration -> OPTIMIZER_STATE; otherwise
//                  TEMPORARY.
//   otherwise OTHER.
//
// Complexity of Finish(): O(ops + tensors + uses + events) plus a sort of
// the uses and events by op.
#ifndef SWAPPLAN_SRC_IMPORT_ASSEMBLER_H_
#define SWAPPLAN_SRC_IMPORT_ASSEMBLER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/trace/trace.h"

namespace swapplan::import_internal {

// Saturating arithmetic for figures derived from input values (durations,
// byte totals): an absurd input gives an absurd figure, never overflow.
inline int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
inline int64_t SatSub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

enum class PhaseHint : uint8_t { kNone, kForward, kBackward, kOptimizer, kOther, kAutograd };

class TraceAssembler {
 public:
  explicit TraceAssembler(std::string source);

  const std::string& source() const { return source_; }
  TraceMetadata& metadata() { return metadata_; }
  // Sets (or replaces) a metadata attribute.
  void SetAttribute(absl::string_view key, absl::string_view value);

  NameId Name(absl::string_view name);

  // Tensors get file ids 0, 1, 2, ... in order of addition.
  uint64_t AddTensor(int64_t size_bytes, DType dtype, absl::Span<const int64_t> shape,
                     absl::string_view name);
  int64_t tensor_size(uint64_t t) const { return tensors_[t].size_bytes; }
  void SetSize(uint64_t t, int64_t size_bytes) { tensors_[t].size_bytes = size_bytes; }
  void SetKind(uint64_t t, TensorKind kind) {
    tensors_[t].kind = kind;
    tensors_[t].kind_known = true;
  }
  bool kind_known(uint64_t t) const { return tensors_[t].kind_known; }
  // Resident from before the trace (no ALLOC event) or until its end (no
  // FREE event).
  void SetPersistent(uint64_t t, bool persistent) { tensors_[t].persistent = persistent; }
  size_t num_tensors() const { return tensors_.size(); }

  // Appends an op; iterations must not decrease. Returns its global index.
  int32_t AddOp(int32_t iteration, NameId name, PhaseHint hint);
  int32_t num_ops() const { return static_cast<int32_t>(ops_.size()); }
  void SetDuration(int32_t op, int64_t ns) { ops_[op].duration_ns = ns; }
  void SetAllocatorBytes(int32_t op, int64_t bytes) { ops_[op].allocator_bytes = bytes; }
  void SetStack(int32_t op, int64_t stack_id) { ops_[op].stack_id = stack_id; }
  int32_t iteration_of(int32_t op) const { return ops_[op].iteration; }

  void AddUse(int32_t op, uint64_t tensor, bool output);
  void AddEvent(int32_t op, MemoryEventKind kind, uint64_t tensor);
  void SetWallTime(int32_t iteration, int64_t ns);

  // Counts something the importer approximated or dropped; reported as
  // attribute import.note.<key>.
  void Note(absl::string_view key, int64_t count = 1);

  // Phases, kinds, validation. InvalidArgument [no-ops] without ops.
  absl::StatusOr<Trace> Finish() &&;

 private:
  struct Tensor {
    int64_t size_bytes = 0;
    DType dtype = DType::kUnknown;
    uint32_t shape_begin = 0;
    uint32_t shape_len = 0;
    uint32_t name_begin = 0;
    uint32_t name_len = 0;
    TensorKind kind = TensorKind::kOther;
    bool kind_known = false;
    bool persistent = false;
  };
  struct Op {
    int32_t iteration = 0;
    NameId name = 0;
    PhaseHint hint = PhaseHint::kNone;
    Phase phase = Phase::kOther;
    int32_t micro_batch = -1;
    int64_t duration_ns = -1;
    int64_t allocator_bytes = -1;
    int64_t stack_id = -1;
  };
  struct Use {
    int32_t op;
    uint32_t tensor;
    bool output;
  };
  struct Event {
    int32_t op;
    uint32_t tensor;
    MemoryEventKind kind;
  };

  void AssignPhases();
  void InferKinds(const std::vector<uint32_t>& use_begin);

  std::string source_;
  TraceMetadata metadata_;
  std::vector<std::pair<std::string, std::string>> attributes_;
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, NameId> name_index_;
  std::vector<Tensor> tensors_;
  std::vector<int64_t> shapes_;
  std::string tensor_names_;
  std::vector<Op> ops_;
  std::vector<Use> uses_;
  std::vector<Event> events_;
  std::vector<int64_t> wall_ns_;  // per iteration, -1 unknown
  std::vector<std::pair<std::string, int64_t>> notes_;
};

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_ASSEMBLER_H_
