// TraceBuilder: the one way to construct a Trace. Readers (binary, JSON),
// the synthesizer and importers append metadata, op names, tensors and
// iterations in file order; Finish() resolves tensor ids, validates every rule
// of the trace format and precomputes lifetimes. Nothing is validated before
// Finish(), so producers stay simple and all messages come from one place.
//
//   TraceBuilder b("toy.json");
//   NameId mm = b.InternOpName("aten::mm");
//   const int64_t shape[] = {5, 5};
//   b.AddTensor({.id = 1, .size_bytes = 100, .dtype = DType::kFloat32, .shape = shape,
//                .kind = TensorKind::kActivation});
//   b.BeginIteration();
//   const uint64_t out[] = {1};
//   b.AddOp({.name = mm, .phase = Phase::kForward, .outputs = out});
//   b.EndIteration(/*wall_time_ns=*/1000);
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, std::move(b).Finish());
//
// Validation rules (the bracketed tag ends every message, so tests and tools
// can match on it): no-iterations (a trace has at least one iteration),
// unknown-tensor, duplicate-tensor, bad-size, bad-shape, bad-enum,
// duplicate-op-name, unknown-op-name, empty-iteration, negative-value,
// bad-metadata, op-index-out-of-range, phase-order, double-alloc,
// alloc-after-free, use-before-alloc, use-after-free, use-while-swapped-out,
// free-before-alloc, double-free, swap-in-without-swap-out,
// swap-out-not-resident, double-swap-out, too-many-uses, too-many-records
// (more than 2^31 - 1 tensors or ops, the range of the dense ids),
// unclosed-iteration, bad-text (text that is not UTF-8), overflow. Every
// message names the source, and the iteration, op (index and name) or tensor
// (file id) concerned.
//
// Size rules: size_bytes > 0 (bad-size); every shape dimension >= 0, and when
// both the shape (non-empty) and the dtype (not unknown) are given,
// numel × itemsize must not exceed size_bytes — a tensor's elements lie in
// its storage (bad-shape; a product that overflows int64 is bad-shape too).
// Total rules (overflow, checked with util/checked.h): the sizes of all
// tensors, the durations of all ops and the wall times of all iterations
// each sum to at most INT64_MAX, so every later sum of a subset of them
// (memory curve, statistics, op timelines) fits as well; Trace exposes the
// three totals.
//
// Complexity of Finish(): O(tensors + ops + uses + events) time and memory,
// plus a hash map from file ids to dense ids unless the ids are 0..N-1.
#ifndef SWAPPLAN_TRACE_BUILDER_H_
#define SWAPPLAN_TRACE_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct TensorSpec {
  uint64_t id = 0;
  int64_t size_bytes = 0;
  DType dtype = DType::kUnknown;
  absl::Span<const int64_t> shape;
  TensorKind kind = TensorKind::kOther;
  // Absent when std::nullopt; a present value must be >= 0 (negative-value).
  std::optional<int64_t> storage_id;
  uint64_t device_address = 0;
  // -1: default for the kind; 0: not persistent; 1: persistent.
  int8_t persistent = -1;
  absl::string_view name;
};

struct OpSpec {
  NameId name = 0;
  Phase phase = Phase::kOther;
  absl::Span<const uint64_t> inputs;
  absl::Span<const uint64_t> outputs;
  // Optional values: std::nullopt when absent; a present value must be >= 0
  // (Finish() reports a negative one, rule negative-value), so every int64 /
  // int32 value is representable and none doubles as an "absent" marker.
  std::optional<int64_t> duration_ns;
  std::optional<int64_t> allocator_bytes_in_use;
  std::optional<int64_t> stack_id;
  std::optional<int32_t> micro_batch;
  std::optional<int32_t> layer;
};

class TraceBuilder {
 public:
  // `source` names the input in every error message (usually the file name).
  explicit TraceBuilder(std::string source);

  TraceMetadata& metadata() { return trace_.metadata_; }
  const std::string& source() const { return trace_.source_; }

  // Appends a name to the op-name table and returns its id. Duplicates are
  // reported by Finish() (duplicate-op-name).
  NameId AddOpName(absl::string_view name);
  // Returns the id of `name`, adding it when new.
  NameId InternOpName(absl::string_view name);
  int32_t num_op_names() const { return static_cast<int32_t>(trace_.op_names_.size()); }

  void AddTensor(const TensorSpec& spec);
  // Capacity hints for large producers.
  void Reserve(int64_t tensors, int64_t ops, int64_t uses, int64_t events);

  // Opens a new iteration; ops and memory events go to it until EndIteration.
  void BeginIteration();
  // Appends an op to the open iteration.
  void AddOp(const OpSpec& spec);
  // A memory event of the open iteration at its op `op_index` (local to the
  // iteration; the op may be added later).
  void AddMemoryEvent(uint32_t op_index, MemoryEventKind kind, uint64_t tensor_id,
                      bool passive = false);
  // An autograd saved-tensor event of the open iteration (trace.h
  // SavedTensorEvent) after `position` of its ops; it marks the iteration's
  // saved-tensor events as recorded. Finish() checks: position <= the
  // iteration's op count (op-index-out-of-range), positions in the order
  // given never decrease (saved-event-order), a tensor id given is known
  // (unknown-tensor); nullopt: the saved storage is not a trace tensor.
  void AddSavedTensorEvent(uint32_t position, bool unpack, std::optional<uint64_t> tensor_id);
  // Marks the open iteration's saved-tensor events as recorded (also when
  // it has none).
  void MarkSavedTensorEventsRecorded();
  void EndIteration(int64_t wall_time_ns);
  bool in_iteration() const { return in_iteration_; }
  // Ops added to the open iteration so far.
  int32_t ops_in_open_iteration() const;
  int32_t num_iterations() const { return static_cast<int32_t>(trace_.iterations_.size()); }
  // Tensors, ops and memory events added so far (for count checks such as
  // the binary form's end record).
  uint64_t num_tensors() const { return trace_.tensors_.size(); }
  uint64_t num_ops() const { return num_ops_added_; }
  uint64_t num_memory_events() const { return raw_events_.size(); }
  uint64_t num_saved_tensor_events() const { return raw_saved_.size(); }

  // Validates everything and returns the trace. See the rules above.
  absl::StatusOr<Trace> Finish() &&;

 private:
  friend class TraceFinisher;
  struct RawEvent {
    uint32_t iteration;
    uint32_t op_index;
    uint64_t tensor_id;
    MemoryEventKind kind;
    bool passive;
  };

  struct RawSaved {
    uint32_t iteration;
    uint32_t position;
    bool unpack;
    bool has_tensor;
    uint64_t tensor_id;
  };

  Trace trace_;
  std::vector<RawSaved> raw_saved_;
  std::vector<int8_t> persistent_;      // per tensor: -1 default, 0, 1
  std::vector<uint64_t> raw_uses_;      // file ids, resolved in Finish
  std::vector<RawEvent> raw_events_;
  std::vector<int64_t> iteration_wall_ns_;
  absl::flat_hash_map<std::string, NameId> name_index_;
  bool in_iteration_ = false;
  bool too_many_uses_ = false;
  // More tensors or ops than dense int32 ids can index; later ones dropped.
  bool too_many_records_ = false;
  // Ops passed to AddOp (including any dropped after too_many_uses_).
  uint64_t num_ops_added_ = 0;
  // The first tensor with a present negative storage_id (negative-value).
  std::optional<std::pair<TensorId, int64_t>> negative_storage_id_;
  // The first op with a present negative optional value (negative-value).
  struct NegativeValue {
    OpIndex op = kNoOp;
    const char* field = "";
    int64_t value = 0;
  };
  std::optional<NegativeValue> negative_value_;
  std::string structure_error_;  // first misuse of Begin/EndIteration
};

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_BUILDER_H_
