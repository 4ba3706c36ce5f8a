#include "swapplan/trace/builder.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace swapplan {

TraceBuilder::TraceBuilder(std::string source) {
  trace_.source_ = std::move(source);
  trace_.shape_begin_.push_back(0);
  trace_.name_begin_.push_back(0);
}

NameId TraceBuilder::AddOpName(absl::string_view name) {
  NameId id = static_cast<NameId>(trace_.op_names_.size());
  trace_.op_names_.emplace_back(name);
  name_index_.try_emplace(std::string(name), id);
  return id;
}

NameId TraceBuilder::InternOpName(absl::string_view name) {
  auto it = name_index_.find(name);
  if (it != name_index_.end()) return it->second;
  return AddOpName(name);
}

void TraceBuilder::Reserve(int64_t tensors, int64_t ops, int64_t uses, int64_t events) {
  trace_.tensors_.reserve(tensors);
  trace_.shape_begin_.reserve(tensors + 1);
  trace_.name_begin_.reserve(tensors + 1);
  persistent_.reserve(tensors);
  trace_.ops_.reserve(ops);
  raw_uses_.reserve(uses);
  raw_events_.reserve(events);
}

namespace {
// Dense ids are int32: at most INT32_MAX tensors / ops (the last id is
// INT32_MAX - 1, so that counts and "one past the end" indices fit too).
constexpr size_t kMaxRecords = static_cast<size_t>(std::numeric_limits<int32_t>::max());
}  // namespace

void TraceBuilder::AddTensor(const TensorSpec& spec) {
  if (trace_.tensors_.size() >= kMaxRecords ||
      trace_.shapes_.size() + spec.shape.size() > std::numeric_limits<uint32_t>::max() ||
      trace_.names_.size() + spec.name.size() > std::numeric_limits<uint32_t>::max()) {
    too_many_records_ = true;
    return;
  }
  TensorInfo info;
  info.size_bytes = spec.size_bytes;
  info.trace_id = spec.id;
  info.storage_id = spec.storage_id.value_or(-1);
  if (info.storage_id < 0 && spec.storage_id.has_value()) {
    if (!negative_storage_id_) {
      negative_storage_id_.emplace(static_cast<TensorId>(trace_.tensors_.size()), *spec.storage_id);
    }
    info.storage_id = -1;
  }
  info.device_address = spec.device_address;
  info.dtype = spec.dtype;
  info.kind = spec.kind;
  trace_.tensors_.push_back(info);
  persistent_.push_back(spec.persistent);
  trace_.shapes_.insert(trace_.shapes_.end(), spec.shape.begin(), spec.shape.end());
  trace_.shape_begin_.push_back(static_cast<uint32_t>(trace_.shapes_.size()));
  trace_.names_.append(spec.name.data(), spec.name.size());
  trace_.name_begin_.push_back(static_cast<uint32_t>(trace_.names_.size()));
}

void TraceBuilder::BeginIteration() {
  if (in_iteration_ && structure_error_.empty()) {
    structure_error_ = absl::StrCat("iteration ", trace_.iterations_.size() - 1,
                                    " begins before the previous one ended");
  }
  IterationInfo it;
  it.op_begin = static_cast<OpIndex>(trace_.ops_.size());
  it.op_end = it.op_begin;
  trace_.iterations_.push_back(it);
  iteration_wall_ns_.push_back(0);
  in_iteration_ = true;
}

int32_t TraceBuilder::ops_in_open_iteration() const {
  if (!in_iteration_) return 0;
  return static_cast<int32_t>(trace_.ops_.size()) - trace_.iterations_.back().op_begin;
}

void TraceBuilder::AddOp(const OpSpec& spec) {
  if (!in_iteration_) {
    if (structure_error_.empty()) {
      structure_error_ = absl::StrCat("op ", trace_.ops_.size(), " is outside any iteration");
    }
    return;
  }
  ++num_ops_added_;
  if (trace_.ops_.size() >= kMaxRecords) {
    too_many_records_ = true;
    return;
  }
  OpInfo op;
  op.name = spec.name;
  op.phase = spec.phase;
  op.uses_begin = static_cast<uint32_t>(raw_uses_.size());
  constexpr size_t kMaxUses = std::numeric_limits<uint16_t>::max();
  if (spec.inputs.size() > kMaxUses || spec.outputs.size() > kMaxUses ||
      raw_uses_.size() + spec.inputs.size() + spec.outputs.size() >
          std::numeric_limits<uint32_t>::max()) {
    too_many_uses_ = true;
    return;
  }
  op.num_inputs = static_cast<uint16_t>(spec.inputs.size());
  op.num_outputs = static_cast<uint16_t>(spec.outputs.size());
  // Absent values become -1 in the model; a present negative one is kept
  // aside for Finish() (negative-value) so it is never mistaken for absent.
  const OpIndex index = static_cast<OpIndex>(trace_.ops_.size());
  auto optional = [&](const auto& v, const char* field) -> int64_t {
    if (!v.has_value()) return -1;
    if (*v < 0) {
      if (!negative_value_) negative_value_ = NegativeValue{index, field, int64_t{*v}};
      return -1;
    }
    return int64_t{*v};
  };
  op.micro_batch = static_cast<int32_t>(optional(spec.micro_batch, "micro_batch"));
  op.layer = static_cast<int32_t>(optional(spec.layer, "layer"));
  op.duration_ns = optional(spec.duration_ns, "duration_ns");
  op.allocator_bytes_in_use = optional(spec.allocator_bytes_in_use, "allocator_bytes_in_use");
  op.stack_id = optional(spec.stack_id, "stack_id");
  raw_uses_.insert(raw_uses_.end(), spec.inputs.begin(), spec.inputs.end());
  raw_uses_.insert(raw_uses_.end(), spec.outputs.begin(), spec.outputs.end());
  trace_.ops_.push_back(op);
  trace_.iterations_.back().op_end = static_cast<OpIndex>(trace_.ops_.size());
}

void TraceBuilder::AddMemoryEvent(uint32_t op_index, MemoryEventKind kind, uint64_t tensor_id,
                                  bool passive) {
  if (!in_iteration_) {
    if (structure_error_.empty()) {
      structure_error_ = absl::StrCat("a memory event (tensor ", tensor_id,
                                      ") is outside any iteration");
    }
    return;
  }
  if (raw_events_.size() >= std::numeric_limits<uint32_t>::max()) {
    too_many_records_ = true;
    return;
  }
  raw_events_.push_back({static_cast<uint32_t>(trace_.iterations_.size() - 1), op_index, tensor_id,
                         kind, passive});
}

void TraceBuilder::AddSavedTensorEvent(uint32_t position, bool unpack,
                                       std::optional<uint64_t> tensor_id) {
  if (!in_iteration_) {
    if (structure_error_.empty()) {
      structure_error_ = absl::StrCat("a saved-tensor event (position ", position,
                                      ") is outside any iteration");
    }
    return;
  }
  if (raw_saved_.size() >= std::numeric_limits<uint32_t>::max()) {
    too_many_records_ = true;
    return;
  }
  trace_.iterations_.back().saved_recorded = true;
  raw_saved_.push_back({static_cast<uint32_t>(trace_.iterations_.size() - 1), position, unpack,
                        tensor_id.has_value(), tensor_id.value_or(0)});
}

void TraceBuilder::MarkSavedTensorEventsRecorded() {
  if (!in_iteration_) {
    if (structure_error_.empty()) {
      structure_error_ = "saved-tensor events are marked recorded outside any iteration";
    }
    return;
  }
  trace_.iterations_.back().saved_recorded = true;
}

void TraceBuilder::EndIteration(int64_t wall_time_ns) {
  if (!in_iteration_) {
    if (structure_error_.empty()) {
      structure_error_ = "an iteration ends that never began";
    }
    return;
  }
  iteration_wall_ns_.back() = wall_time_ns;
  in_iteration_ = false;
}

}  // namespace swapplan
