// TraceBuilder::Finish(): id resolution, validation and lifetime resolution.
//
// Passes, each linear:
//   1. metadata, op-name table, tensors (+ file id -> dense id index)
//   2. iterations and ops: names, enums, optional values, use resolution,
//      phase order
//   3. memory events: resolution, range check, stable counting sort by op
//   4. lifetime state machine over ops and events in trace order, which also
//      records first/last uses (overall and per phase)
//   5. per-tensor use lists (CSR)
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "swapplan/trace/builder.h"
#include "swapplan/util/checked.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/utf8.h"

namespace swapplan {

class TraceFinisher {
 public:
  explicit TraceFinisher(TraceBuilder& b) : b_(b), t_(b.trace_) {}

  absl::StatusOr<Trace> Run() {
    if (!b_.structure_error_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(t_.source_, ": ", b_.structure_error_, " [unclosed-iteration]"));
    }
    if (b_.in_iteration_) {
      return absl::InvalidArgumentError(absl::StrCat(t_.source_, ": iteration ",
                                                     t_.iterations_.size() - 1,
                                                     " was never ended [unclosed-iteration]"));
    }
    if (b_.too_many_uses_) {
      return absl::InvalidArgumentError(absl::StrCat(
          t_.source_, ": an op has more than 65535 inputs or outputs, or the trace more than "
                      "2^32 uses [too-many-uses]"));
    }
    if (b_.too_many_records_) {
      return absl::InvalidArgumentError(absl::StrCat(
          t_.source_, ": more than 2^31 - 1 tensors or ops, 2^32 - 1 memory events, or 2^32 "
                      "bytes of tensor names or shape dimensions [too-many-records]"));
    }
    if (t_.iterations_.empty()) {
      return Error(t_.source_, "the trace has no iterations (at least one is required)",
                   "no-iterations");
    }
    SWAPPLAN_RETURN_IF_ERROR(CheckMetadata());
    SWAPPLAN_RETURN_IF_ERROR(CheckOpNames());
    SWAPPLAN_RETURN_IF_ERROR(CheckTensors());
    SWAPPLAN_RETURN_IF_ERROR(CheckOps());
    SWAPPLAN_RETURN_IF_ERROR(ResolveEvents());
    SWAPPLAN_RETURN_IF_ERROR(ResolveSavedEvents());
    SWAPPLAN_RETURN_IF_ERROR(ResolveLifetimes());
    BuildUseIndex();
    return std::move(t_);
  }

 private:
  enum State : uint8_t { kUnseen, kResident, kOut, kFreed };

  absl::Status Error(absl::string_view where, absl::string_view what, absl::string_view rule) {
    return WithRule(absl::InvalidArgumentError(absl::StrCat(where, ": ", what, " [", rule, "]")),
                    rule);
  }

  int32_t IterationOfOp(OpIndex op) const {
    auto it = std::upper_bound(t_.iterations_.begin(), t_.iterations_.end(), op,
                               [](OpIndex o, const IterationInfo& i) { return o < i.op_begin; });
    return static_cast<int32_t>(it - t_.iterations_.begin()) - 1;
  }
  std::string NameOf(NameId n) const {
    return n >= 0 && n < static_cast<NameId>(t_.op_names_.size())
               ? EscapeForMessage(t_.op_names_[n])
               : absl::StrCat("#", n);
  }
  // "src: iteration 2, op 17 (aten::mm)"
  std::string OpWhere(OpIndex op) const {
    int32_t it = IterationOfOp(op);
    return absl::StrCat(t_.source_, ": iteration ", it, ", op ", op - t_.iterations_[it].op_begin,
                        " (", NameOf(t_.ops_[op].name), ")");
  }
  // "iteration 2, op 17 (aten::mm)" without the source, for back references.
  std::string OpRef(OpIndex op) const {
    if (op < 0) return "the start of the trace";
    int32_t it = IterationOfOp(op);
    return absl::StrCat("iteration ", it, ", op ", op - t_.iterations_[it].op_begin, " (",
                        NameOf(t_.ops_[op].name), ")");
  }
  std::string TensorWhere(TensorId t) const {
    return absl::StrCat(t_.source_, ": tensor ", t_.tensors_[t].trace_id);
  }
  uint64_t FileId(TensorId t) const { return t_.tensors_[t].trace_id; }

  absl::Status CheckMetadata() {
    const TraceMetadata& m = t_.metadata_;
    std::string where = absl::StrCat(t_.source_, ": metadata");
    if (m.device_memory_bytes < 0) {
      return Error(where, absl::StrCat("device_memory_bytes is ", m.device_memory_bytes,
                                       "; must be >= 0"), "bad-metadata");
    }
    for (auto [name, v] : {std::pair<const char*, double>{"h2d_bandwidth_bytes_per_s",
                                                          m.h2d_bandwidth_bytes_per_s},
                           {"d2h_bandwidth_bytes_per_s", m.d2h_bandwidth_bytes_per_s}}) {
      if (!(v >= 0) || !std::isfinite(v)) {
        return Error(where, absl::StrCat(name, " is ", v, "; must be a finite value >= 0"),
                     "bad-metadata");
      }
    }
    for (auto [name, v] : {std::pair<const char*, const std::string*>{"device_name", &m.device_name},
                           {"framework", &m.framework},
                           {"recorder", &m.recorder},
                           {"recorder_version", &m.recorder_version},
                           {"model_name", &m.model_name}}) {
      if (!IsValidUtf8(*v)) return Error(where, absl::StrCat(name, " is not valid UTF-8"), "bad-text");
    }
    for (const auto& [k, v] : m.attributes) {
      if (!IsValidUtf8(k) || !IsValidUtf8(v)) {
        return Error(where, "an attribute is not valid UTF-8", "bad-text");
      }
    }
    if (m.model_layers < 0) {
      return Error(where, absl::StrCat("model_layers is ", m.model_layers, "; must be >= 0"),
                   "bad-metadata");
    }
    return absl::OkStatus();
  }

  absl::Status CheckOpNames() {
    absl::flat_hash_map<absl::string_view, NameId> seen;
    seen.reserve(t_.op_names_.size());
    for (NameId i = 0; i < static_cast<NameId>(t_.op_names_.size()); ++i) {
      if (!IsValidUtf8(t_.op_names_[i])) {
        return Error(absl::StrCat(t_.source_, ": op name ", i), "is not valid UTF-8", "bad-text");
      }
      auto [it, inserted] = seen.try_emplace(t_.op_names_[i], i);
      if (!inserted) {
        return Error(absl::StrCat(t_.source_, ": op name ", i),
                     absl::StrCat("'", EscapeForMessage(t_.op_names_[i]), "' duplicates op name ",
                                  it->second),
                     "duplicate-op-name");
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckTensors() {
    const int32_t n = static_cast<int32_t>(t_.tensors_.size());
    dense_ids_ = true;
    CheckedAccumulator<int64_t> total_bytes;
    for (TensorId t = 0; t < n; ++t) {
      TensorInfo& info = t_.tensors_[t];
      if (info.trace_id != static_cast<uint64_t>(t)) dense_ids_ = false;
      if (info.size_bytes <= 0) {
        return Error(TensorWhere(t),
                     absl::StrCat("size_bytes is ", info.size_bytes, "; must be > 0"), "bad-size");
      }
      if (!total_bytes.Add(info.size_bytes)) {
        return OverflowError(TensorWhere(t),
                             absl::StrCat("size_bytes ", info.size_bytes,
                                          " makes the sizes of all tensors overflow a 64-bit "
                                          "integer"));
      }
      if (static_cast<int>(info.dtype) >= kNumDTypes) {
        return Error(TensorWhere(t), absl::StrCat("dtype ", static_cast<int>(info.dtype),
                                                  " is not a known dtype"), "bad-enum");
      }
      if (static_cast<int>(info.kind) >= kNumTensorKinds) {
        return Error(TensorWhere(t), absl::StrCat("kind ", static_cast<int>(info.kind),
                                                  " is not a known tensor kind"), "bad-enum");
      }
      SWAPPLAN_RETURN_IF_ERROR(CheckShape(t));
      if (b_.negative_storage_id_ && b_.negative_storage_id_->first == t) {
        return Error(TensorWhere(t),
                     absl::StrCat("storage_id is ", b_.negative_storage_id_->second,
                                  "; must be >= 0"),
                     "negative-value");
      }
      if (!IsValidUtf8(t_.tensor_name(t))) {
        return Error(TensorWhere(t), "name is not valid UTF-8", "bad-text");
      }
      int8_t p = b_.persistent_[t];
      info.persistent = p < 0 ? KindIsPersistentByDefault(info.kind) : p != 0;
    }
    t_.total_tensor_bytes_ = total_bytes.value();
    if (!dense_ids_) {
      index_.reserve(n);
      for (TensorId t = 0; t < n; ++t) {
        auto [it, inserted] = index_.try_emplace(t_.tensors_[t].trace_id, t);
        if (!inserted) {
          return Error(TensorWhere(t),
                       absl::StrCat("id is declared twice (tensor #", it->second, " and #", t,
                                    " in declaration order)"),
                       "duplicate-tensor");
        }
      }
    }
    return absl::OkStatus();
  }

  // Dimensions >= 0; numel × itemsize <= size_bytes when the shape is given
  // (non-empty) and the dtype known: the elements lie in the storage.
  absl::Status CheckShape(TensorId t) {
    const TensorInfo& info = t_.tensors_[t];
    int64_t numel = 1;
    bool overflow = false;
    for (int64_t d : t_.shape(t)) {
      if (d < 0) {
        return Error(TensorWhere(t), absl::StrCat("shape has negative dimension ", d),
                     "bad-shape");
      }
      overflow = overflow || !CheckedMul(numel, d, &numel);
    }
    const absl::Span<const int64_t> shape = t_.shape(t);
    const int64_t itemsize = DTypeBytes(info.dtype);
    if (shape.empty() || itemsize == 0) return absl::OkStatus();
    int64_t bytes = 0;
    if (overflow || !CheckedMul(numel, itemsize, &bytes)) {
      return Error(TensorWhere(t),
                   absl::StrCat("shape [", absl::StrJoin(shape, ", "),
                                "] of ", DTypeName(info.dtype),
                                " elements overflows a 64-bit byte count"),
                   "bad-shape");
    }
    if (bytes > info.size_bytes) {
      return Error(TensorWhere(t),
                   absl::StrCat("shape [", absl::StrJoin(shape, ", "), "] of ",
                                DTypeName(info.dtype), " needs ", bytes,
                                " bytes, more than its size_bytes ", info.size_bytes),
                   "bad-shape");
    }
    return absl::OkStatus();
  }

  TensorId Lookup(uint64_t id) const {
    if (dense_ids_) {
      return id < t_.tensors_.size() ? static_cast<TensorId>(id) : kNoTensor;
    }
    auto it = index_.find(id);
    return it == index_.end() ? kNoTensor : it->second;
  }

  absl::Status CheckOps() {
    const int32_t num_names = static_cast<int32_t>(t_.op_names_.size());
    t_.uses_.resize(b_.raw_uses_.size());
    bool all_durations = !t_.ops_.empty();
    bool any_allocator = false;
    CheckedAccumulator<int64_t> total_duration, total_wall;
    absl::flat_hash_set<int32_t> backward_seen;  // micro-batches with a BACKWARD op
    for (int32_t it = 0; it < static_cast<int32_t>(t_.iterations_.size()); ++it) {
      IterationInfo& iter = t_.iterations_[it];
      iter.wall_time_ns = b_.iteration_wall_ns_[it];
      std::string iter_where = absl::StrCat(t_.source_, ": iteration ", it);
      if (iter.op_begin == iter.op_end) {
        return Error(iter_where, "has no ops", "empty-iteration");
      }
      if (iter.wall_time_ns < 0) {
        return Error(iter_where, absl::StrCat("wall_time_ns is ", iter.wall_time_ns,
                                              "; must be >= 0"), "negative-value");
      }
      if (!total_wall.Add(iter.wall_time_ns)) {
        return OverflowError(iter_where,
                             absl::StrCat("wall_time_ns ", iter.wall_time_ns,
                                          " makes the wall times of all iterations overflow a "
                                          "64-bit integer"));
      }
      backward_seen.clear();
      OpIndex optimizer_start = kNoOp;
      for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
        OpInfo& op = t_.ops_[i];
        if (op.name < 0 || op.name >= num_names) {
          return Error(absl::StrCat(iter_where, ", op ", i - iter.op_begin),
                       absl::StrCat("op name id ", op.name, " is out of range (the table has ",
                                    num_names, " names)"), "unknown-op-name");
        }
        if (static_cast<int>(op.phase) >= kNumPhases) {
          return Error(OpWhere(i), absl::StrCat("phase ", static_cast<int>(op.phase),
                                                " is not a known phase"), "bad-enum");
        }
        if (b_.negative_value_ && b_.negative_value_->op == i) {
          return Error(OpWhere(i),
                       absl::StrCat(b_.negative_value_->field, " is ", b_.negative_value_->value,
                                    "; must be >= 0"),
                       "negative-value");
        }
        if (op.duration_ns > 0 && !total_duration.Add(op.duration_ns)) {
          return OverflowError(OpWhere(i),
                               absl::StrCat("duration_ns ", op.duration_ns,
                                            " makes the durations of all ops overflow a 64-bit "
                                            "integer"));
        }
        all_durations = all_durations && op.duration_ns >= 0;
        any_allocator = any_allocator || op.allocator_bytes_in_use >= 0;

        // Phase order: per micro-batch FORWARD before BACKWARD; OPTIMIZER last.
        if (op.phase == Phase::kOptimizer && optimizer_start == kNoOp) optimizer_start = i;
        if ((op.phase == Phase::kForward || op.phase == Phase::kBackward) &&
            optimizer_start != kNoOp) {
          return Error(OpWhere(i),
                       absl::StrCat(PhaseName(op.phase), " op after the OPTIMIZER phase began at ",
                                    OpRef(optimizer_start)),
                       "phase-order");
        }
        if (op.phase == Phase::kBackward) backward_seen.insert(op.micro_batch);
        if (op.phase == Phase::kForward && backward_seen.contains(op.micro_batch)) {
          return Error(
              OpWhere(i),
              absl::StrCat("FORWARD op after a BACKWARD op of the same micro-batch (",
                           op.micro_batch < 0 ? std::string("none given")
                                              : absl::StrCat(op.micro_batch),
                           "); an iteration with several forward/backward passes needs "
                           "micro_batch hints"),
              "phase-order");
        }

        const uint32_t n = op.num_inputs + op.num_outputs;
        for (uint32_t k = 0; k < n; ++k) {
          uint64_t id = b_.raw_uses_[op.uses_begin + k];
          TensorId t = Lookup(id);
          if (t == kNoTensor) {
            return Error(OpWhere(i),
                         absl::StrCat(k < op.num_inputs ? "input " : "output ",
                                      k < op.num_inputs ? k : k - op.num_inputs,
                                      " refers to unknown tensor id ", id),
                         "unknown-tensor");
          }
          t_.uses_[op.uses_begin + k] = t;
        }
      }
    }
    t_.has_op_durations_ = all_durations;
    t_.has_allocator_bytes_ = any_allocator;
    t_.total_op_duration_ns_ = total_duration.value();
    t_.total_wall_time_ns_ = total_wall.value();
    std::vector<uint64_t>().swap(b_.raw_uses_);
    return absl::OkStatus();
  }

  absl::Status ResolveEvents() {
    const size_t n = b_.raw_events_.size();
    std::vector<MemoryEvent> resolved(n);
    std::vector<uint32_t> per_op(t_.ops_.size() + 1, 0);
    // Count per iteration to give each event its index within the iteration
    // for messages.
    std::vector<uint32_t> index_in_iteration(t_.iterations_.size(), 0);
    for (size_t e = 0; e < n; ++e) {
      const TraceBuilder::RawEvent& raw = b_.raw_events_[e];
      const IterationInfo& iter = t_.iterations_[raw.iteration];
      uint32_t local_index = index_in_iteration[raw.iteration]++;
      auto where = [&] {
        return absl::StrCat(t_.source_, ": iteration ", raw.iteration, ", memory event ",
                            local_index);
      };
      if (static_cast<int>(raw.kind) >= kNumMemoryEventKinds) {
        return Error(where(), absl::StrCat("kind ", static_cast<int>(raw.kind),
                                           " is not a known memory event kind"), "bad-enum");
      }
      if (raw.op_index >= static_cast<uint32_t>(iter.num_ops())) {
        return Error(where(),
                     absl::StrCat(MemoryEventKindName(raw.kind), " of tensor ", raw.tensor_id,
                                  " at op index ", raw.op_index,
                                  ", but the iteration has ", iter.num_ops(), " ops"),
                     "op-index-out-of-range");
      }
      TensorId t = Lookup(raw.tensor_id);
      if (t == kNoTensor) {
        return Error(where(),
                     absl::StrCat(MemoryEventKindName(raw.kind), " at op ", raw.op_index,
                                  " refers to unknown tensor id ", raw.tensor_id),
                     "unknown-tensor");
      }
      OpIndex op = iter.op_begin + static_cast<OpIndex>(raw.op_index);
      resolved[e] = MemoryEvent{op, t, raw.kind, raw.passive};
      ++per_op[op + 1];
    }
    for (size_t i = 1; i < per_op.size(); ++i) per_op[i] += per_op[i - 1];
    t_.events_.resize(n);
    std::vector<uint32_t> cursor(per_op.begin(), per_op.end() - 1);
    for (size_t e = 0; e < n; ++e) t_.events_[cursor[resolved[e].op]++] = resolved[e];
    for (IterationInfo& iter : t_.iterations_) {
      iter.event_begin = per_op[iter.op_begin];
      iter.event_end = per_op[iter.op_end];
    }
    std::vector<TraceBuilder::RawEvent>().swap(b_.raw_events_);
    return absl::OkStatus();
  }

  // Saved-tensor events (builder.h AddSavedTensorEvent): kept in the order
  // given, which is per iteration (the builder only adds to the open one).
  // O(events).
  absl::Status ResolveSavedEvents() {
    const size_t n = b_.raw_saved_.size();
    t_.saved_events_.resize(n);
    std::vector<uint32_t> index_in_iteration(t_.iterations_.size(), 0);
    int32_t last_position = -1;
    for (size_t e = 0; e < n; ++e) {
      const TraceBuilder::RawSaved& raw = b_.raw_saved_[e];
      const IterationInfo& iter = t_.iterations_[raw.iteration];
      const uint32_t local_index = index_in_iteration[raw.iteration]++;
      if (local_index == 0) last_position = -1;
      auto where = [&] {
        return absl::StrCat(t_.source_, ": iteration ", raw.iteration, ", saved-tensor event ",
                            local_index);
      };
      const char* what = raw.unpack ? "an unpack" : "a pack";
      if (raw.position > static_cast<uint32_t>(iter.num_ops())) {
        return Error(where(),
                     absl::StrCat(what, " after ", raw.position, " ops, but the iteration has ",
                                  iter.num_ops(), " ops"),
                     "op-index-out-of-range");
      }
      const int32_t position = static_cast<int32_t>(raw.position);
      if (position < last_position) {
        return Error(where(),
                     absl::StrCat(what, " after ", position, " ops follows an event after ",
                                  last_position, " ops (positions must not decrease)"),
                     "saved-event-order");
      }
      last_position = position;
      TensorId t = kNoTensor;
      if (raw.has_tensor) {
        t = Lookup(raw.tensor_id);
        if (t == kNoTensor) {
          return Error(where(), absl::StrCat(what, " refers to unknown tensor id ", raw.tensor_id),
                       "unknown-tensor");
        }
      }
      t_.saved_events_[e] = SavedTensorEvent{position, t, raw.unpack};
    }
    uint32_t cursor = 0;
    for (size_t it = 0; it < t_.iterations_.size(); ++it) {
      t_.iterations_[it].saved_begin = cursor;
      cursor += index_in_iteration[it];
      t_.iterations_[it].saved_end = cursor;
    }
    std::vector<TraceBuilder::RawSaved>().swap(b_.raw_saved_);
    return absl::OkStatus();
  }

  absl::Status ApplyEvent(const MemoryEvent& e) {
    TensorId t = e.tensor;
    TensorLifetime& life = t_.lifetimes_[t];
    uint8_t& s = state_[t];
    auto fail = [&](absl::string_view what, absl::string_view rule) {
      return Error(OpWhere(e.op),
                   absl::StrCat(MemoryEventKindName(e.kind), " of tensor ", FileId(t), ": ", what),
                   rule);
    };
    switch (e.kind) {
      case MemoryEventKind::kAlloc:
        if (s == kFreed) {
          return fail(absl::StrCat("it was freed after ", OpRef(life.free_op),
                                   " (tensor ids are not reused)"), "alloc-after-free");
        }
        if (s != kUnseen) {
          return fail(absl::StrCat("it is already allocated (since ", OpRef(life.alloc_op), ")"),
                      "double-alloc");
        }
        s = kResident;
        life.alloc_op = e.op;
        break;
      case MemoryEventKind::kSwapIn:
        if (s != kOut) {
          return fail(s == kFreed ? "it was freed" : "it was never swapped out",
                      "swap-in-without-swap-out");
        }
        s = kResident;
        break;
      case MemoryEventKind::kSwapOut:
        if (s == kOut) {
          return fail(absl::StrCat("it is already swapped out (since ", OpRef(swapped_out_at_[t]),
                                   ")"), "double-swap-out");
        }
        if (s != kResident) {
          return fail(s == kFreed ? "it was already freed" : "it is not allocated yet",
                      "swap-out-not-resident");
        }
        s = kOut;
        swapped_out_at_[t] = e.op;
        break;
      case MemoryEventKind::kFree:
        if (s == kFreed) {
          return fail(absl::StrCat("it was already freed after ", OpRef(life.free_op)),
                      "double-free");
        }
        if (s == kUnseen) return fail("it was never allocated", "free-before-alloc");
        s = kFreed;
        life.free_op = e.op;
        break;
    }
    last_event_op_[t] = e.op;
    return absl::OkStatus();
  }

  absl::Status ResolveLifetimes() {
    const int32_t nt = static_cast<int32_t>(t_.tensors_.size());
    const OpIndex num_ops = static_cast<OpIndex>(t_.ops_.size());
    t_.lifetimes_.assign(nt, TensorLifetime{});
    state_.assign(nt, kUnseen);
    swapped_out_at_.assign(nt, kNoOp);
    last_event_op_.assign(nt, kNoOp);
    std::vector<uint8_t> has_alloc_event(nt, 0);
    for (const MemoryEvent& e : t_.events_) {
      if (e.kind == MemoryEventKind::kAlloc) has_alloc_event[e.tensor] = 1;
    }
    for (TensorId t = 0; t < nt; ++t) {
      if (t_.tensors_[t].persistent && !has_alloc_event[t]) {
        state_[t] = kResident;
        t_.lifetimes_[t].alloc_op = -1;
      }
    }
    use_count_.assign(nt, 0);
    size_t e = 0;
    const size_t ne = t_.events_.size();
    for (OpIndex i = 0; i < num_ops; ++i) {
      size_t e_end = e;
      while (e_end < ne && t_.events_[e_end].op == i) ++e_end;
      // ALLOC and SWAP_IN take effect before the op runs.
      for (size_t k = e; k < e_end; ++k) {
        MemoryEventKind kind = t_.events_[k].kind;
        if (kind == MemoryEventKind::kAlloc || kind == MemoryEventKind::kSwapIn) {
          SWAPPLAN_RETURN_IF_ERROR(ApplyEvent(t_.events_[k]));
        }
      }
      SWAPPLAN_RETURN_IF_ERROR(ApplyUses(i, has_alloc_event));
      // SWAP_OUT and FREE take effect after it.
      for (size_t k = e; k < e_end; ++k) {
        MemoryEventKind kind = t_.events_[k].kind;
        if (kind == MemoryEventKind::kSwapOut || kind == MemoryEventKind::kFree) {
          SWAPPLAN_RETURN_IF_ERROR(ApplyEvent(t_.events_[k]));
        }
      }
      e = e_end;
    }
    for (TensorId t = 0; t < nt; ++t) {
      TensorLifetime& life = t_.lifetimes_[t];
      if (state_[t] == kResident || state_[t] == kOut) {
        // Never freed explicitly: persistent tensors stay, others die after
        // their last use (or last memory event, if later).
        life.free_op = t_.tensors_[t].persistent
                           ? num_ops
                           : std::max({life.last_use, life.alloc_op, last_event_op_[t]});
      }
    }
    return absl::OkStatus();
  }

  absl::Status ApplyUses(OpIndex i, const std::vector<uint8_t>& has_alloc_event) {
    const OpInfo& op = t_.ops_[i];
    const int phase = static_cast<int>(op.phase);
    const uint32_t n = op.num_inputs + op.num_outputs;
    for (uint32_t k = 0; k < n; ++k) {
      TensorId t = t_.uses_[op.uses_begin + k];
      TensorLifetime& life = t_.lifetimes_[t];
      uint8_t& s = state_[t];
      if (s != kResident) {
        auto fail = [&](absl::string_view what, absl::string_view rule) {
          return Error(OpWhere(i),
                       absl::StrCat(k < op.num_inputs ? "input " : "output ",
                                    k < op.num_inputs ? k : k - op.num_inputs, " (tensor ",
                                    FileId(t), "): ", what),
                       rule);
        };
        switch (s) {
          case kUnseen:
            if (has_alloc_event[t]) {
              return fail("used before its ALLOC event", "use-before-alloc");
            }
            s = kResident;
            life.alloc_op = i;
            break;
          case kOut:
            return fail(absl::StrCat("used while swapped out (since ", OpRef(swapped_out_at_[t]),
                                     ")"), "use-while-swapped-out");
          case kFreed:
            return fail(absl::StrCat("used after it was freed after ", OpRef(life.free_op)),
                        "use-after-free");
          default:
            break;
        }
      }
      if (life.last_use != i) {
        ++use_count_[t];
        if (life.first_use == kNoOp) life.first_use = i;
        life.last_use = i;
        if (life.first_use_in_phase[phase] == kNoOp) life.first_use_in_phase[phase] = i;
        life.last_use_in_phase[phase] = i;
      }
    }
    return absl::OkStatus();
  }

  void BuildUseIndex() {
    const int32_t nt = static_cast<int32_t>(t_.tensors_.size());
    t_.uses_by_tensor_begin_.assign(nt + 1, 0);
    for (TensorId t = 0; t < nt; ++t) {
      t_.uses_by_tensor_begin_[t + 1] = t_.uses_by_tensor_begin_[t] + use_count_[t];
    }
    t_.uses_by_tensor_.resize(t_.uses_by_tensor_begin_[nt]);
    std::vector<uint32_t> cursor(t_.uses_by_tensor_begin_.begin(),
                                 t_.uses_by_tensor_begin_.end() - 1);
    std::vector<OpIndex>& last = last_event_op_;  // reused as "last op recorded"
    std::fill(last.begin(), last.end(), kNoOp);
    for (OpIndex i = 0; i < static_cast<OpIndex>(t_.ops_.size()); ++i) {
      for (TensorId t : t_.uses(i)) {
        if (last[t] == i) continue;
        last[t] = i;
        t_.uses_by_tensor_[cursor[t]++] = i;
      }
    }
  }

  TraceBuilder& b_;
  Trace& t_;
  bool dense_ids_ = true;
  absl::flat_hash_map<uint64_t, TensorId> index_;
  std::vector<uint8_t> state_;
  std::vector<OpIndex> swapped_out_at_;
  std::vector<OpIndex> last_event_op_;
  std::vector<uint32_t> use_count_;
};

absl::StatusOr<Trace> TraceBuilder::Finish() && { return TraceFinisher(*this).Run(); }

}  // namespace swapplan
