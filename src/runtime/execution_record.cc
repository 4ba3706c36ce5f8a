// The runtime's execution record. See execution_record.h.
#include "swapplan/runtime/execution_record.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "swapplan/trace/builder.h"

namespace swapplan::runtime {

namespace {
constexpr int64_t kUnborn = std::numeric_limits<int64_t>::max();
}  // namespace

int64_t ExecutionRecord::AddTensor(const RecordTensor& tensor, bool resident_from_start) {
  const int64_t id = next_id_++;
  TensorInfo& info = tensors_[id];
  info.t = tensor;
  info.birth = resident_from_start ? -1 : kUnborn;
  return id;
}

void ExecutionRecord::Apply(const Event& e, int64_t pos) {
  auto it = tensors_.find(e.tensor);
  if (it == tensors_.end()) return;
  TensorInfo& info = it->second;
  switch (e.kind) {
    case MemoryEventKind::kAlloc:
      info.birth = pos;
      break;
    case MemoryEventKind::kFree:
      info.death = pos;
      off_.erase(e.tensor);
      ++dead_;
      break;
    case MemoryEventKind::kSwapOut:
      info.off = true;
      off_.insert(e.tensor);
      break;
    case MemoryEventKind::kSwapIn:
      info.off = false;
      off_.erase(e.tensor);
      break;
  }
}

int32_t ExecutionRecord::ops_in_iteration() const {
  return in_iteration_ ? static_cast<int32_t>(open_.ops.size()) : 0;
}

void ExecutionRecord::BeginIteration() {
  open_ = Iteration{};
  open_.op_begin = ops_total_;
  open_.off_at_start.assign(off_.begin(), off_.end());
  std::sort(open_.off_at_start.begin(), open_.off_at_start.end());
  for (const Event& e : carried_) open_.events.push_back({0, e.kind, e.tensor, e.passive});
  carried_.clear();
  in_iteration_ = true;
}

void ExecutionRecord::AddEvent(int32_t op, MemoryEventKind kind, int64_t tensor, bool passive,
                               int64_t device_bytes) {
  const bool after_op = kind == MemoryEventKind::kFree || kind == MemoryEventKind::kSwapOut;
  if (after_op && (!in_iteration_ || op < 0) && !iterations_.empty()) {
    // After the previous iteration's last op (it is closed: apply now).
    Iteration& prev = iterations_.back();
    const Event e{static_cast<int32_t>(prev.ops.size()) - 1, kind, tensor, passive};
    prev.events.push_back(e);
    prev.ops.back().bytes_in_use -= device_bytes;
    Apply(e, prev.op_begin + e.op);
    if (in_iteration_) {
      // The open iteration starts after this event: keep its "off the
      // device at the start" list in step (a tensor swapped out before it,
      // or one that died before it and so is not in it at all).
      std::vector<int64_t>& off = open_.off_at_start;
      auto at = std::lower_bound(off.begin(), off.end(), tensor);
      if (kind == MemoryEventKind::kSwapOut) {
        if (at == off.end() || *at != tensor) off.insert(at, tensor);
      } else if (at != off.end() && *at == tensor) {
        off.erase(at);
      }
    }
    return;
  }
  if (!in_iteration_) {
    carried_.push_back({0, kind, tensor, passive});
    return;
  }
  open_.events.push_back({std::max(op, 0), kind, tensor, passive});
  // An event after an op already recorded changes its bytes after it.
  if (after_op && op >= 0 && op + 1 == static_cast<int32_t>(open_.ops.size())) {
    open_.ops.back().bytes_in_use -= device_bytes;
  }
}

void ExecutionRecord::AddOp(RecordOp op) {
  if (!in_iteration_) return;
  open_.ops.push_back(std::move(op));
}

void ExecutionRecord::AddSavedTensorEvent(bool unpack, int64_t tensor) {
  if (!in_iteration_) return;
  open_.saved.push_back({static_cast<int32_t>(open_.ops.size()), unpack, tensor});
  open_.saved_recorded = true;
}

void ExecutionRecord::MarkSavedTensorEventsRecorded() {
  if (in_iteration_) open_.saved_recorded = true;
}

void ExecutionRecord::SetLastOpDuration(int64_t ns) {
  if (in_iteration_ && !open_.ops.empty()) open_.ops.back().duration_ns = std::max<int64_t>(ns, 0);
}

void ExecutionRecord::EndIteration(int64_t wall_ns) {
  if (!in_iteration_) return;
  in_iteration_ = false;
  const int32_t n = static_cast<int32_t>(open_.ops.size());
  std::vector<Event> kept;
  kept.reserve(open_.events.size());
  for (const Event& e : open_.events) {
    if (e.op >= n) {
      carried_.push_back(e);
      continue;
    }
    kept.push_back(e);
  }
  if (n == 0) return;  // nothing ran: the events moved on
  // Stable sort by op: the file order within an op is the order of events.
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Event& a, const Event& b) { return a.op < b.op; });
  for (const Event& e : kept) Apply(e, open_.op_begin + e.op);
  open_.events = std::move(kept);
  open_.wall_ns = wall_ns;
  ops_total_ += n;
  iterations_.push_back(std::move(open_));
  open_ = Iteration{};
  if (!keep_all_) Prune();
}

void ExecutionRecord::Prune() {
  while (iterations_.size() > 2) {
    iterations_.pop_front();
    ++first_kept_;
  }
  const int64_t window_begin = iterations_.empty() ? ops_total_ : iterations_.front().op_begin;
  // Dead tensors before the kept window: dropped once the dead are half of
  // them (amortised O(1) per tensor).
  if (dead_ * 2 < static_cast<int64_t>(tensors_.size())) return;
  absl::erase_if(tensors_, [&](const auto& kv) {
    return kv.second.death >= 0 && kv.second.death < window_begin;
  });
  dead_ = 0;
  for (const auto& [id, info] : tensors_) dead_ += info.death >= 0;
}

absl::StatusOr<Trace> ExecutionRecord::BuildTrace(absl::Span<const std::string> op_names,
                                                   const TraceMetadata& metadata, int32_t first,
                                                   int32_t last) const {
  if (first < first_kept_ || last < first || last >= num_iterations()) {
    return absl::InvalidArgumentError(
        absl::StrCat("execution record: iterations ", first, "..", last,
                     " are not kept (kept: ", first_kept_, "..", num_iterations() - 1, ")"));
  }
  const Iteration& a = iterations_[first - first_kept_];
  const Iteration& b = iterations_[last - first_kept_];
  const int64_t begin = a.op_begin;
  const int64_t end = b.op_begin + static_cast<int64_t>(b.ops.size());

  TraceBuilder builder("swapplan runtime record");
  builder.metadata() = metadata;
  for (const std::string& name : op_names) builder.AddOpName(name);

  std::vector<int64_t> ids;
  for (const auto& [id, info] : tensors_) {
    if (info.birth < end && (info.death < 0 || info.death >= begin)) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  auto in_window = [&](int64_t id) { return std::binary_search(ids.begin(), ids.end(), id); };
  int64_t uses = 0, events = 0;
  for (int32_t i = first; i <= last; ++i) {
    const Iteration& it = iterations_[i - first_kept_];
    events += static_cast<int64_t>(it.events.size());
    for (const RecordOp& op : it.ops) uses += static_cast<int64_t>(op.inputs.size() + op.outputs.size());
  }
  builder.Reserve(static_cast<int64_t>(ids.size()), end - begin, uses, events);
  for (int64_t id : ids) {
    const TensorInfo& info = tensors_.at(id);
    const bool born_in = info.birth >= begin;
    const bool dies_in = info.death >= 0 && info.death < end;
    TensorSpec spec;
    spec.id = static_cast<uint64_t>(id);
    spec.size_bytes = info.t.size_bytes;
    spec.dtype = info.t.dtype;
    spec.shape = info.t.shape;
    spec.kind = info.t.kind;
    spec.persistent = info.t.pinned || !(born_in && dies_in) ? 1 : 0;
    builder.AddTensor(spec);
  }

  std::vector<uint64_t> in, out;
  for (int32_t i = first; i <= last; ++i) {
    const Iteration& it = iterations_[i - first_kept_];
    builder.BeginIteration();
    // Off the device when the window begins: a SWAP_OUT at op 0, unless it
    // came back before op 0 ran.
    absl::flat_hash_set<int64_t> back_at_zero;
    if (i == first) {
      for (int64_t t : it.off_at_start) {
        bool first_is_in_at_zero = false;
        for (const Event& e : it.events) {
          if (e.tensor != t) continue;
          first_is_in_at_zero = e.op == 0 && e.kind == MemoryEventKind::kSwapIn;
          break;
        }
        if (first_is_in_at_zero) {
          back_at_zero.insert(t);
        } else {
          builder.AddMemoryEvent(0, MemoryEventKind::kSwapOut, static_cast<uint64_t>(t), false);
        }
      }
    }
    for (const Event& e : it.events) {
      if (e.op == 0 && e.kind == MemoryEventKind::kSwapIn && back_at_zero.erase(e.tensor) > 0) {
        continue;
      }
      builder.AddMemoryEvent(static_cast<uint32_t>(e.op), e.kind, static_cast<uint64_t>(e.tensor),
                             e.passive);
    }
    for (const RecordOp& op : it.ops) {
      in.assign(op.inputs.begin(), op.inputs.end());
      out.assign(op.outputs.begin(), op.outputs.end());
      OpSpec spec;
      spec.name = op.name;
      spec.phase = op.phase;
      spec.inputs = in;
      spec.outputs = out;
      spec.duration_ns = op.duration_ns;
      spec.allocator_bytes_in_use = op.bytes_in_use;
      if (op.micro_batch >= 0) spec.micro_batch = op.micro_batch;
      builder.AddOp(spec);
    }
    if (it.saved_recorded) builder.MarkSavedTensorEventsRecorded();
    for (const SavedEvent& e : it.saved) {
      builder.AddSavedTensorEvent(static_cast<uint32_t>(e.position), e.unpack,
                                  e.tensor > 0 && in_window(e.tensor)
                                      ? std::optional<uint64_t>(static_cast<uint64_t>(e.tensor))
                                      : std::nullopt);
    }
    builder.EndIteration(it.wall_ns);
  }
  return std::move(builder).Finish();
}

}  // namespace swapplan::runtime
