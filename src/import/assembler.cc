#include "import/assembler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "swapplan/trace/builder.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {
namespace {

constexpr uint8_t Bit(Phase p) { return static_cast<uint8_t>(1u << static_cast<int>(p)); }

}  // namespace

TraceAssembler::TraceAssembler(std::string source) : source_(std::move(source)) {}

void TraceAssembler::SetAttribute(absl::string_view key, absl::string_view value) {
  for (auto& [k, v] : attributes_) {
    if (k == key) {
      v = std::string(value);
      return;
    }
  }
  attributes_.emplace_back(std::string(key), std::string(value));
}

NameId TraceAssembler::Name(absl::string_view name) {
  auto it = name_index_.find(name);
  if (it != name_index_.end()) return it->second;
  NameId id = static_cast<NameId>(names_.size());
  names_.emplace_back(name);
  name_index_.emplace(names_.back(), id);
  return id;
}

uint64_t TraceAssembler::AddTensor(int64_t size_bytes, DType dtype,
                                   absl::Span<const int64_t> shape, absl::string_view name) {
  Tensor t;
  t.size_bytes = size_bytes;
  t.dtype = dtype;
  t.shape_begin = static_cast<uint32_t>(shapes_.size());
  t.shape_len = static_cast<uint32_t>(shape.size());
  shapes_.insert(shapes_.end(), shape.begin(), shape.end());
  t.name_begin = static_cast<uint32_t>(tensor_names_.size());
  t.name_len = static_cast<uint32_t>(name.size());
  tensor_names_.append(name.data(), name.size());
  tensors_.push_back(t);
  return tensors_.size() - 1;
}

int32_t TraceAssembler::AddOp(int32_t iteration, NameId name, PhaseHint hint) {
  Op op;
  op.iteration = iteration;
  op.name = name;
  op.hint = hint;
  ops_.push_back(op);
  if (static_cast<size_t>(iteration) >= wall_ns_.size()) {
    wall_ns_.resize(static_cast<size_t>(iteration) + 1, -1);
  }
  return static_cast<int32_t>(ops_.size() - 1);
}

void TraceAssembler::AddUse(int32_t op, uint64_t tensor, bool output) {
  uses_.push_back(Use{op, static_cast<uint32_t>(tensor), output});
}

void TraceAssembler::AddEvent(int32_t op, MemoryEventKind kind, uint64_t tensor) {
  events_.push_back(Event{op, static_cast<uint32_t>(tensor), kind});
}

void TraceAssembler::SetWallTime(int32_t iteration, int64_t ns) {
  if (static_cast<size_t>(iteration) >= wall_ns_.size()) {
    wall_ns_.resize(static_cast<size_t>(iteration) + 1, -1);
  }
  wall_ns_[iteration] = ns;
}

void TraceAssembler::Note(absl::string_view key, int64_t count) {
  for (auto& [k, v] : notes_) {
    if (k == key) {
      v += count;
      return;
    }
  }
  notes_.emplace_back(std::string(key), count);
}

void TraceAssembler::AssignPhases() {
  size_t begin = 0;
  int64_t demoted = 0;
  while (begin < ops_.size()) {
    size_t end = begin;
    while (end < ops_.size() && ops_[end].iteration == ops_[begin].iteration) ++end;
    // First explicit backward and optimizer ops of the iteration.
    size_t first_bwd = end, first_opt = end;
    for (size_t i = begin; i < end; ++i) {
      PhaseHint h = ops_[i].hint;
      if ((h == PhaseHint::kBackward || h == PhaseHint::kAutograd) && first_bwd == end) first_bwd = i;
      if (h == PhaseHint::kOptimizer && first_opt == end) first_opt = i;
    }
    bool optimizer_started = false;
    bool in_backward = false;
    int32_t micro_batch = 0;
    for (size_t i = begin; i < end; ++i) {
      Op& op = ops_[i];
      switch (op.hint) {
        case PhaseHint::kForward: op.phase = Phase::kForward; break;
        case PhaseHint::kBackward:
        case PhaseHint::kAutograd: op.phase = Phase::kBackward; break;
        case PhaseHint::kOptimizer: op.phase = Phase::kOptimizer; break;
        case PhaseHint::kOther: op.phase = Phase::kOther; break;
        case PhaseHint::kNone:
          op.phase = i < first_bwd ? Phase::kForward
                     : i < first_opt ? Phase::kBackward
                                     : Phase::kOther;
          break;
      }
      if (op.phase == Phase::kOptimizer) optimizer_started = true;
      if (optimizer_started && (op.phase == Phase::kForward || op.phase == Phase::kBackward)) {
        op.phase = Phase::kOther;
        ++demoted;
      }
      if (op.phase == Phase::kBackward) in_backward = true;
      if (op.phase == Phase::kForward && in_backward) {
        ++micro_batch;
        in_backward = false;
      }
      if (op.phase == Phase::kForward || op.phase == Phase::kBackward) {
        op.micro_batch = micro_batch;
      }
    }
    if (micro_batch == 0) {
      for (size_t i = begin; i < end; ++i) ops_[i].micro_batch = -1;
    }
    begin = end;
  }
  if (demoted > 0) Note("phase_demoted", demoted);
}

void TraceAssembler::InferKinds(const std::vector<uint32_t>& use_begin) {
  const size_t nt = tensors_.size();
  std::vector<int32_t> first(nt, -1), last(nt, -1);
  std::vector<uint8_t> mask(nt, 0), has_alloc(nt, 0), has_free(nt, 0);
  auto touch = [&](uint32_t t, int32_t op) {
    if (first[t] < 0 || op < first[t]) first[t] = op;
    if (op > last[t]) last[t] = op;
    mask[t] |= Bit(ops_[op].phase);
  };
  for (size_t op = 0; op + 1 < use_begin.size(); ++op) {
    for (uint32_t u = use_begin[op]; u < use_begin[op + 1]; ++u) {
      touch(uses_[u].tensor, static_cast<int32_t>(op));
    }
  }
  for (const Event& e : events_) {
    touch(e.tensor, e.op);
    if (e.kind == MemoryEventKind::kAlloc) has_alloc[e.tensor] = 1;
    if (e.kind == MemoryEventKind::kFree) has_free[e.tensor] = 1;
  }
  bool trace_has_optimizer = false;
  for (const Op& op : ops_) trace_has_optimizer |= op.phase == Phase::kOptimizer;
  for (size_t t = 0; t < nt; ++t) {
    Tensor& info = tensors_[t];
    if (info.kind_known) continue;
    info.kind = TensorKind::kOther;
    if (first[t] < 0) continue;
    const uint8_t m = mask[t];
    const bool pre_existing = info.persistent && !has_alloc[t];
    if (pre_existing && has_free[t]) continue;  // freed in the trace: not lasting state
    if (pre_existing) {
      const bool fwd = m & Bit(Phase::kForward);
      const bool opt = m & Bit(Phase::kOptimizer);
      const bool bwd = m & Bit(Phase::kBackward);
      if (fwd && opt) {
        info.kind = TensorKind::kParameter;
      } else if (opt && !fwd && !bwd) {
        info.kind = TensorKind::kOptimizerState;
      } else if (fwd) {
        info.kind = trace_has_optimizer ? TensorKind::kInput : TensorKind::kParameter;
      }
      continue;
    }
    const bool crosses = (info.persistent && !has_free[t]) ||
                         ops_[last[t]].iteration > ops_[first[t]].iteration;
    switch (ops_[first[t]].phase) {
      case Phase::kForward:
        info.kind = (m & Bit(Phase::kBackward)) ? TensorKind::kActivation
                    : crosses                   ? TensorKind::kOther
                                                : TensorKind::kTemporary;
        break;
      case Phase::kBackward:
        info.kind = ((m & Bit(Phase::kOptimizer)) || crosses) ? TensorKind::kGradient
                                                              : TensorKind::kTemporary;
        break;
      case Phase::kOptimizer:
        info.kind = crosses ? TensorKind::kOptimizerState : TensorKind::kTemporary;
        break;
      case Phase::kOther:
        break;
    }
  }
}

absl::StatusOr<Trace> TraceAssembler::Finish() && {
  if (ops_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": no operators found to build a trace from [no-ops]"));
  }
  AssignPhases();
  // Uses grouped by op (stable: file order within an op), duplicates of the
  // same (tensor, direction) dropped.
  const size_t nops = ops_.size();
  std::vector<uint32_t> use_begin(nops + 1, 0);
  for (const Use& u : uses_) ++use_begin[u.op + 1];
  for (size_t i = 1; i <= nops; ++i) use_begin[i] += use_begin[i - 1];
  {
    std::vector<Use> sorted(uses_.size());
    std::vector<uint32_t> cursor(use_begin.begin(), use_begin.end() - 1);
    for (const Use& u : uses_) sorted[cursor[u.op]++] = u;
    uses_.swap(sorted);
  }
  InferKinds(use_begin);
  std::stable_sort(events_.begin(), events_.end(),
                   [](const Event& a, const Event& b) { return a.op < b.op; });

  TraceBuilder b(source_);
  b.metadata() = metadata_;
  std::vector<std::pair<std::string, std::string>> attrs = attributes_;
  for (const auto& [k, v] : notes_) attrs.emplace_back(absl::StrCat("import.note.", k), absl::StrCat(v));
  std::sort(attrs.begin(), attrs.end());
  b.metadata().attributes = std::move(attrs);
  for (const std::string& n : names_) b.AddOpName(n);
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const Tensor& info = tensors_[t];
    TensorSpec s;
    s.id = t;
    s.size_bytes = info.size_bytes;
    s.dtype = info.dtype;
    s.shape = absl::MakeConstSpan(shapes_).subspan(info.shape_begin, info.shape_len);
    s.kind = info.kind;
    s.persistent = info.persistent ? 1 : 0;
    s.name = absl::string_view(tensor_names_).substr(info.name_begin, info.name_len);
    b.AddTensor(s);
  }
  b.Reserve(static_cast<int64_t>(tensors_.size()), static_cast<int64_t>(nops),
            static_cast<int64_t>(uses_.size()), static_cast<int64_t>(events_.size()));
  std::vector<uint64_t> in, out;
  std::vector<uint32_t> seen_in(tensors_.size(), UINT32_MAX), seen_out(tensors_.size(), UINT32_MAX);
  size_t e = 0;
  int64_t dropped_uses = 0;
  size_t begin = 0;
  while (begin < nops) {
    size_t end = begin;
    while (end < nops && ops_[end].iteration == ops_[begin].iteration) ++end;
    b.BeginIteration();
    bool all_durations = true;
    int64_t sum_ns = 0;
    for (size_t i = begin; i < end; ++i) {
      const Op& op = ops_[i];
      in.clear();
      out.clear();
      for (uint32_t u = use_begin[i]; u < use_begin[i + 1]; ++u) {
        const Use& use = uses_[u];
        std::vector<uint32_t>& seen = use.output ? seen_out : seen_in;
        if (seen[use.tensor] == i) continue;
        seen[use.tensor] = static_cast<uint32_t>(i);
        std::vector<uint64_t>& dst = use.output ? out : in;
        if (dst.size() >= 65535) {
          ++dropped_uses;
          continue;
        }
        dst.push_back(use.tensor);
      }
      OpSpec s;
      s.name = op.name;
      s.phase = op.phase;
      s.inputs = in;
      s.outputs = out;
      if (op.duration_ns >= 0) s.duration_ns = op.duration_ns;
      if (op.allocator_bytes >= 0) s.allocator_bytes_in_use = op.allocator_bytes;
      if (op.stack_id >= 0) s.stack_id = op.stack_id;
      if (op.micro_batch >= 0) s.micro_batch = op.micro_batch;
      b.AddOp(s);
      all_durations = all_durations && op.duration_ns >= 0;
      if (op.duration_ns > 0) sum_ns = sum_ns > INT64_MAX - op.duration_ns ? INT64_MAX : sum_ns + op.duration_ns;
    }
    for (; e < events_.size() && events_[e].op < static_cast<int32_t>(end); ++e) {
      b.AddMemoryEvent(static_cast<uint32_t>(events_[e].op - static_cast<int32_t>(begin)),
                       events_[e].kind, events_[e].tensor);
    }
    int64_t wall = wall_ns_[ops_[begin].iteration];
    b.EndIteration(wall >= 0 ? wall : (all_durations ? sum_ns : 0));
    begin = end;
  }
  if (dropped_uses > 0) {
    b.metadata().attributes.emplace_back("import.note.uses_dropped_over_65535",
                                         absl::StrCat(dropped_uses));
    std::sort(b.metadata().attributes.begin(), b.metadata().attributes.end());
  }
  return std::move(b).Finish();
}

}  // namespace swapplan::import_internal
