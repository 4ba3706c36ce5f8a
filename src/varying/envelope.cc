// The iteration envelope (envelope.h).
#include "swapplan/varying/envelope.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "recorded_op.h"
#include "swapplan/trace/builder.h"
#include "swapplan/varying/segment.h"
#include "swapplan/varying/tensor_roles.h"

namespace swapplan {

absl::Status EnvelopeOptions::Validate() const {
  if (!std::isfinite(spread_margin) || spread_margin < 0) {
    return absl::InvalidArgumentError(absl::StrCat("envelope options: spread_margin is ",
                                                   spread_margin, "; must be finite and >= 0"));
  }
  return absl::OkStatus();
}

namespace {

// Bytes in use per local op of `iteration`, with `size(t)` per tensor.
template <typename SizeFn>
std::vector<int64_t> BytesPerOp(const Trace& trace, int32_t iteration, SizeFn size) {
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  std::vector<int64_t> delta(static_cast<size_t>(n) + 1, 0);
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (!lt.occupies_device()) continue;
    const OpIndex lo = std::max(lt.alloc_op, iter.op_begin);
    const OpIndex hi = std::min(lt.free_op, iter.op_end - 1);
    if (lo > hi) continue;
    const int64_t b = size(t);
    delta[lo - iter.op_begin] += b;
    delta[hi - iter.op_begin + 1] -= b;
  }
  std::vector<int64_t> bytes(n);
  int64_t run = 0;
  for (int32_t j = 0; j < n; ++j) {
    run += delta[j];
    bytes[j] = run;
  }
  return bytes;
}

int64_t Extrapolate(int64_t value, int64_t spread, double margin) {
  return static_cast<int64_t>(std::llround(static_cast<double>(value) +
                                           margin * static_cast<double>(spread)));
}

}  // namespace

std::vector<int64_t> BytesInUsePerOp(const Trace& trace, int32_t iteration) {
  return BytesPerOp(trace, iteration, [&](TensorId t) { return trace.tensor(t).size_bytes; });
}

void IterationEnvelope::Clear() {
  observations_ = 0;
  tensor_bytes_.clear();
  op_bytes_.clear();
}

void IterationEnvelope::Observe(const Trace& trace, int32_t iteration) {
  const std::vector<uint64_t> roles = TensorRoles(trace, iteration);
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    if (roles[t] == 0) continue;
    const int64_t b = trace.tensor(t).size_bytes;
    auto [it, inserted] = tensor_bytes_.try_emplace(roles[t], Range{b, b});
    if (!inserted) {
      it->second.lo = std::min(it->second.lo, b);
      it->second.hi = std::max(it->second.hi, b);
    }
  }
  const std::vector<uint64_t> ops = OpRoles(trace, iteration);
  const std::vector<int64_t> bytes = BytesInUsePerOp(trace, iteration);
  for (size_t j = 0; j < ops.size(); ++j) {
    auto [it, inserted] = op_bytes_.try_emplace(ops[j], Range{bytes[j], bytes[j]});
    if (!inserted) {
      it->second.lo = std::min(it->second.lo, bytes[j]);
      it->second.hi = std::max(it->second.hi, bytes[j]);
    }
  }
  ++observations_;
}

absl::StatusOr<Trace> IterationEnvelope::Build(const Trace& source, int32_t iteration,
                                               EnvelopeStats* stats) const {
  // Work on a one-iteration trace (a runtime iteration already is one).
  Trace extracted;
  const Trace* tr = &source;
  if (source.num_iterations() != 1) {
    const IterationInfo& info = source.iteration(iteration);
    SegmentExtractor x(source, {OpRange{info.op_begin, info.op_end}});
    absl::StatusOr<Trace> one = x.Extract(0);
    if (!one.ok()) return one.status();
    extracted = *std::move(one);
    tr = &extracted;
  }
  const Trace& t = *tr;
  const double margin = options_.spread_margin;
  const int32_t n = t.iteration(0).num_ops();

  // Sizes: the least each role was seen to free.
  const std::vector<uint64_t> roles = TensorRoles(t, 0);
  std::vector<int64_t> size(t.num_tensors());
  EnvelopeStats st;
  uint64_t max_id = 0;
  for (TensorId i = 0; i < t.num_tensors(); ++i) {
    const int64_t own = t.tensor(i).size_bytes;
    max_id = std::max(max_id, t.tensor(i).trace_id);
    size[i] = own;
    if (roles[i] == 0) continue;
    auto f = tensor_bytes_.find(roles[i]);
    if (f == tensor_bytes_.end()) continue;
    const int64_t lo = std::min(own, f->second.lo);
    const int64_t hi = std::max(own, f->second.hi);
    size[i] = std::max<int64_t>(1, Extrapolate(lo, -(hi - lo), margin));
    if (size[i] < own) {
      ++st.tensors_shrunk;
      st.bytes_shrunk += own - size[i];
    }
  }
  // Headroom: the most each op was seen to need.
  const std::vector<uint64_t> op_roles = OpRoles(t, 0);
  const std::vector<int64_t> own_bytes = BytesInUsePerOp(t, 0);
  const std::vector<int64_t> env_bytes = BytesPerOp(t, 0, [&](TensorId i) { return size[i]; });
  std::vector<int64_t> headroom(n, 0);
  for (int32_t j = 0; j < n; ++j) {
    int64_t target = own_bytes[j];
    auto f = op_bytes_.find(op_roles[j]);
    if (f != op_bytes_.end()) {
      const int64_t lo = std::min(own_bytes[j], f->second.lo);
      const int64_t hi = std::max(own_bytes[j], f->second.hi);
      target = Extrapolate(hi, hi - lo, margin);
    }
    headroom[j] = std::max<int64_t>(0, target - env_bytes[j]);
    if (headroom[j] > 0) {
      ++st.ops_with_headroom;
      st.max_headroom_bytes = std::max(st.max_headroom_bytes, headroom[j]);
    }
    st.peak_bytes = std::max(st.peak_bytes, env_bytes[j] + headroom[j]);
  }

  TraceBuilder b(absl::StrCat(t.source(), " (envelope of ", observations_, " iterations)"));
  b.metadata() = t.metadata();
  for (const std::string& name : t.op_names()) b.AddOpName(name);
  b.Reserve(t.num_tensors() + st.ops_with_headroom, n, t.num_uses(),
            static_cast<int64_t>(t.events().size()) + 2 * st.ops_with_headroom);
  for (TensorId i = 0; i < t.num_tensors(); ++i) {
    const TensorInfo& info = t.tensor(i);
    TensorSpec spec;
    spec.id = info.trace_id;
    spec.size_bytes = size[i];
    spec.dtype = info.dtype;
    spec.shape = t.shape(i);
    spec.kind = info.kind;
    if (info.storage_id >= 0) spec.storage_id = info.storage_id;
    spec.device_address = info.device_address;
    spec.persistent = info.persistent ? 1 : 0;
    spec.name = t.tensor_name(i);
    b.AddTensor(spec);
  }
  for (int32_t j = 0; j < n; ++j) {
    if (headroom[j] == 0) continue;
    const int64_t shape[] = {headroom[j]};
    TensorSpec spec;
    spec.id = max_id + 1 + static_cast<uint64_t>(j);
    spec.size_bytes = headroom[j];
    spec.dtype = DType::kUInt8;
    spec.shape = shape;
    spec.kind = TensorKind::kTemporary;
    spec.persistent = 0;
    b.AddTensor(spec);
  }
  const IterationInfo& iter = t.iteration(0);
  b.BeginIteration();
  std::vector<uint64_t> in, out;
  for (OpIndex op = iter.op_begin; op < iter.op_end; ++op) {
    internal::AppendRecordedOp(t, op, /*keep_allocator_bytes=*/false, b, in, out);
  }
  // ALLOC / FREE as recorded (swaps dropped: the envelope is unswapped),
  // then the headroom blocks, each allocated and freed at its op.
  for (const MemoryEvent& e : t.iteration_events(0)) {
    if (e.kind != MemoryEventKind::kAlloc && e.kind != MemoryEventKind::kFree) continue;
    b.AddMemoryEvent(static_cast<uint32_t>(e.op - iter.op_begin), e.kind,
                     t.tensor(e.tensor).trace_id);
  }
  for (int32_t j = 0; j < n; ++j) {
    if (headroom[j] == 0) continue;
    const uint64_t id = max_id + 1 + static_cast<uint64_t>(j);
    b.AddMemoryEvent(static_cast<uint32_t>(j), MemoryEventKind::kAlloc, id);
    b.AddMemoryEvent(static_cast<uint32_t>(j), MemoryEventKind::kFree, id);
  }
  b.EndIteration(iter.wall_time_ns);
  if (stats != nullptr) *stats = st;
  return std::move(b).Finish();
}

}  // namespace swapplan
