#include "synthetic_trace.h"

#include <utility>
#include <vector>

#include "swapplan/trace/builder.h"

namespace swapplan::bench {

Trace SyntheticTrace(int64_t num_ops) {
  // Per layer: 10 forward ops (3 uses each), 7 saved activations whose
  // backward is two ops (4 and 2 uses), one optimizer op (3 uses): 25 ops and
  // about 3 uses per op.
  constexpr int kFwdPerLayer = 10;
  const int64_t layers = std::max<int64_t>(1, num_ops / 25);
  TraceBuilder b("synthetic");
  b.metadata().device_name = "synthetic";
  b.metadata().device_memory_bytes = 64LL << 30;
  b.metadata().h2d_bandwidth_bytes_per_s = 25e9;
  b.metadata().d2h_bandwidth_bytes_per_s = 25e9;
  b.metadata().model_layers = static_cast<int32_t>(layers);
  const NameId fwd_names[4] = {b.InternOpName("aten::mm"), b.InternOpName("aten::add"),
                               b.InternOpName("aten::silu"), b.InternOpName("aten::mul")};
  const NameId bwd_name = b.InternOpName("aten::mm_backward");
  const NameId bwd2_name = b.InternOpName("aten::add_backward");
  const NameId opt_name = b.InternOpName("aten::_foreach_add_");
  b.Reserve(layers * 34, layers * 34, layers * 100, layers * 60);

  uint64_t next = 0;
  auto tensor = [&](int64_t bytes, TensorKind kind) {
    uint64_t id = next++;
    b.AddTensor({.id = id, .size_bytes = bytes, .dtype = DType::kBFloat16, .kind = kind});
    return id;
  };
  std::vector<uint64_t> params;
  for (int64_t l = 0; l < layers; ++l) params.push_back(tensor(1 << 20, TensorKind::kParameter));

  b.BeginIteration();
  uint32_t op = 0;
  struct Saved {
    uint64_t id;
    uint32_t alloc_op;
  };
  std::vector<Saved> saved;
  uint64_t x = tensor(4 << 20, TensorKind::kInput);
  b.AddMemoryEvent(0, MemoryEventKind::kAlloc, x);
  uint32_t x_alloc = 0;
  for (int64_t l = 0; l < layers; ++l) {
    for (int k = 0; k < kFwdPerLayer; ++k) {
      bool temp = (k % 3) == 2;
      uint64_t y = tensor((2 + k % 4) << 20, temp ? TensorKind::kTemporary : TensorKind::kActivation);
      const uint64_t in[] = {x, params[l]};
      const uint64_t out[] = {y};
      b.AddOp({.name = fwd_names[k % 4], .phase = Phase::kForward, .inputs = in, .outputs = out,
               .layer = static_cast<int32_t>(l)});
      b.AddMemoryEvent(op, MemoryEventKind::kAlloc, y);
      if (temp) {
        // The previous activation is dropped when a temporary follows it.
        b.AddMemoryEvent(op, MemoryEventKind::kFree, x);
      } else {
        saved.push_back({x, x_alloc});
        // Autograd packs the input it saves when the op runs.
        b.AddSavedTensorEvent(op + 1, /*unpack=*/false, x);
      }
      x = y;
      x_alloc = op;
      ++op;
    }
  }
  uint64_t grad = tensor(4 << 20, TensorKind::kGradient);
  {
    const uint64_t in[] = {x};
    const uint64_t out[] = {grad};
    b.AddOp({.name = bwd_name, .phase = Phase::kBackward, .inputs = in, .outputs = out});
    b.AddMemoryEvent(op, MemoryEventKind::kAlloc, grad);
    b.AddMemoryEvent(op, MemoryEventKind::kFree, x);
    ++op;
  }
  std::vector<uint64_t> param_grads(layers);
  while (!saved.empty()) {
    Saved s = saved.back();
    saved.pop_back();
    // Saved activations are consumed in reverse; ~7 per layer.
    const int64_t l = std::min<int64_t>(layers - 1, static_cast<int64_t>(saved.size()) / 7);
    uint64_t g2 = tensor(4 << 20, TensorKind::kGradient);
    const uint64_t in[] = {grad, s.id, params[l]};
    const uint64_t out[] = {g2};
    b.AddSavedTensorEvent(op, /*unpack=*/true, s.id);  // before the op that reads it
    b.AddOp({.name = bwd_name, .phase = Phase::kBackward, .inputs = in, .outputs = out});
    b.AddMemoryEvent(op, MemoryEventKind::kAlloc, g2);
    b.AddMemoryEvent(op, MemoryEventKind::kFree, s.id);
    b.AddMemoryEvent(op, MemoryEventKind::kFree, grad);
    grad = g2;
    ++op;
    // A cheap elementwise backward op on the new gradient.
    uint64_t g3 = tensor(4 << 20, TensorKind::kGradient);
    const uint64_t in2[] = {grad};
    const uint64_t out2[] = {g3};
    b.AddOp({.name = bwd2_name, .phase = Phase::kBackward, .inputs = in2, .outputs = out2});
    b.AddMemoryEvent(op, MemoryEventKind::kAlloc, g3);
    b.AddMemoryEvent(op, MemoryEventKind::kFree, grad);
    grad = g3;
    ++op;
  }
  for (int64_t l = 0; l < layers; ++l) {
    uint64_t pg = tensor(1 << 20, TensorKind::kGradient);
    param_grads[l] = pg;
    const uint64_t in[] = {params[l], grad};
    const uint64_t out[] = {pg};
    b.AddOp({.name = opt_name, .phase = Phase::kOptimizer, .inputs = in, .outputs = out});
    b.AddMemoryEvent(op, MemoryEventKind::kAlloc, pg);
    b.AddMemoryEvent(op, MemoryEventKind::kFree, pg);
    ++op;
  }
  b.EndIteration(static_cast<int64_t>(op) * 50000);
  absl::StatusOr<Trace> t = std::move(b).Finish();
  if (!t.ok()) std::abort();  // a generator bug; benchmarks have no error path
  return std::move(t).value();
}

}  // namespace swapplan::bench
