// Per-op cost of the runtime shim's hooks (OpBegin + OpEnd) with 100,000
// live tensors, on the host backend: the framework-side price of the shim on
// every op dispatch (issue 14's target: median < 1 us).
//
//   ninja -C build bench/runtime_bench && build/bench/runtime_bench [ops]
//
// Each op uses two inputs and one output picked among the live tensors
// (strided, so that no cache locality is handed to it). Scenarios:
//   no policy          the op clock, handle checks, residency checks, record
//   fuzzy policy       plus runtime-key updates and matcher probes per use
//                      (a 256-item policy whose keys never match: all cost,
//                      no swaps)
//   alloc + free       plus registering the output and freeing it after
// Ops are timed in batches of 64 (steady_clock around each batch); the
// median, 90th percentile and mean of the per-op cost over the batches are
// printed, and the cost of an iteration boundary (IterationEnd +
// IterationBegin: resetting 100,000 runtime keys, the stage tracker).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "swapplan/policy/policy.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/runtime/host_backend.h"
#include "swapplan/runtime/runtime.h"
#include "swapplan/trace/builder.h"

namespace swapplan::runtime {
namespace {

constexpr int kTensors = 100000;
constexpr int kOpsPerIteration = 2000;
constexpr int kBatch = 64;

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<Runtime> Make() {
  HostBackendOptions ho;
  ho.device.capacity_bytes = int64_t{1} << 30;
  ho.device.h2d_bandwidth_bytes_per_s = ho.device.d2h_bandwidth_bytes_per_s = 1e10;
  ho.timed_copies = false;
  auto b = HostBackend::Create(ho);
  if (!b.ok()) std::abort();
  RuntimeOptions ro;
  ro.device = ho.device;
  auto rt = Runtime::Create(ro, std::move(*b));
  if (!rt.ok()) std::abort();
  return std::move(*rt);
}

// A trace of one iteration of `ops` ops over 300 float32 tensors and a
// policy of 256 items on it: matched by float32 keys, never by the
// benchmark's float16 tensors.
void LoadUnmatchablePolicy(Runtime& rt, const std::vector<int32_t>& names) {
  TraceBuilder b("bench");
  const int64_t shape[] = {16};
  for (uint64_t t = 1; t <= 300; ++t) {
    b.AddTensor({.id = t, .size_bytes = 64, .dtype = DType::kFloat32, .shape = shape,
                 .kind = TensorKind::kActivation});
  }
  for (size_t n = 0; n < names.size(); ++n) b.AddOpName("op" + std::to_string(n));
  b.BeginIteration();
  for (int i = 0; i < 600; ++i) {
    const uint64_t in[] = {static_cast<uint64_t>(i % 300 + 1)};
    const uint64_t out[] = {static_cast<uint64_t>((i * 7 + 1) % 300 + 1)};
    b.AddOp({.name = i % static_cast<int>(names.size()),
             .phase = i < 300 ? Phase::kForward : Phase::kBackward, .inputs = in,
             .outputs = out, .duration_ns = 1000});
  }
  b.EndIteration(600000);
  auto trace = std::move(b).Finish();
  if (!trace.ok()) {
    std::fprintf(stderr, "%s\n", std::string(trace.status().message()).c_str());
    std::abort();
  }
  Policy p;
  p.fingerprint = ComputeFingerprint(*trace, 0);
  p.device.capacity_bytes = 1 << 30;
  p.device.h2d_bandwidth_bytes_per_s = p.device.d2h_bandwidth_bytes_per_s = 1e10;
  p.planner = "bench";
  for (int k = 0; k < 256; ++k) {
    PolicyItem it;
    it.tensor_id = static_cast<uint64_t>(k + 1);
    const int32_t use = k;  // op k uses tensor k + 1 as its input
    it.swap_out_op = use;
    it.release_op = use;
    it.swap_in_op = 400 + k % 150;
    it.first_use_op = 599;
    it.size_bytes = 64;
    p.items.push_back(it);
  }
  auto idx = rt.LoadPolicyForTrace(p, *trace, 0);
  if (!idx.ok()) {
    std::fprintf(stderr, "policy: %s\n", std::string(idx.status().message()).c_str());
    std::abort();
  }
}

struct Result {
  double median_ns, p90_ns, mean_ns, boundary_us;
};

Result Run(Runtime& rt, const std::vector<TensorHandle>& live, const std::vector<int32_t>& ops,
           int64_t total_ops, bool alloc_free) {
  std::vector<double> per_op;
  std::vector<double> boundaries;
  const int64_t shape[] = {16};
  const TensorDesc out_desc{.size_bytes = 64, .dtype = DType::kFloat16, .shape = shape};
  int64_t op = 0;
  if (!rt.IterationBegin().ok()) std::abort();
  while (op < total_ops) {
    const int64_t t0 = Now();
    for (int k = 0; k < kBatch; ++k, ++op) {
      const size_t i = static_cast<size_t>(op * 7919 % kTensors);
      const size_t j = static_cast<size_t>(op * 104729 % kTensors);
      const TensorHandle in[] = {live[i], live[j]};
      const Phase phase = op % kOpsPerIteration < kOpsPerIteration / 2 ? Phase::kForward
                                                                         : Phase::kBackward;
      if (!rt.OpBegin(ops[op % ops.size()], phase, in).ok()) std::abort();
      if (alloc_free) {
        auto t = rt.AllocTensor(out_desc, nullptr);
        if (!t.ok()) std::abort();
        const TensorHandle out[] = {*t};
        if (!rt.OpEnd(out).ok() || !rt.FreeTensor(*t).ok()) std::abort();
      } else {
        const TensorHandle out[] = {live[(i + j) % kTensors]};
        if (!rt.OpEnd(out).ok()) std::abort();
      }
    }
    per_op.push_back(static_cast<double>(Now() - t0) / kBatch);
    if (op % kOpsPerIteration == 0) {
      const int64_t b0 = Now();
      if (!rt.IterationEnd().ok() || !rt.IterationBegin().ok()) std::abort();
      boundaries.push_back(static_cast<double>(Now() - b0) / 1e3);
    }
  }
  if (!rt.IterationEnd().ok()) std::abort();
  std::sort(per_op.begin(), per_op.end());
  std::sort(boundaries.begin(), boundaries.end());
  double mean = 0;
  for (double v : per_op) mean += v;
  mean /= static_cast<double>(per_op.size());
  return {per_op[per_op.size() / 2], per_op[per_op.size() * 9 / 10], mean,
          boundaries.empty() ? 0 : boundaries[boundaries.size() / 2]};
}

int Main(int argc, char** argv) {
  const int64_t total = argc > 1 ? std::atoll(argv[1]) : 200000;
  std::printf("runtime per-op hook cost, %d live tensors, %lld ops per scenario, "
              "2 inputs + 1 output per op\n",
              kTensors, static_cast<long long>(total));
  std::printf("%-14s %10s %10s %10s %22s\n", "scenario", "median ns", "p90 ns", "mean ns",
              "iteration boundary us");
  for (int scenario = 0; scenario < 3; ++scenario) {
    std::unique_ptr<Runtime> rt = Make();
    std::vector<int32_t> ops;
    for (int n = 0; n < 40; ++n) ops.push_back(rt->InternOp("op" + std::to_string(n)));
    if (scenario == 1) LoadUnmatchablePolicy(*rt, ops);
    std::vector<TensorHandle> live;
    live.reserve(kTensors);
    const int64_t shape[] = {16};
    for (int t = 0; t < kTensors; ++t) {
      auto h = rt->AllocTensor({.size_bytes = 64, .dtype = DType::kFloat16, .shape = shape},
                               nullptr);
      if (!h.ok()) std::abort();
      live.push_back(*h);
    }
    const Result r = Run(*rt, live, ops, total, scenario == 2);
    const char* name[] = {"no policy", "fuzzy policy", "alloc + free"};
    std::printf("%-14s %10.0f %10.0f %10.0f %22.1f\n", name[scenario], r.median_ns, r.p90_ns,
                r.mean_ns, r.boundary_us);
  }
  return 0;
}

}  // namespace
}  // namespace swapplan::runtime

int main(int argc, char** argv) { return swapplan::runtime::Main(argc, argv); }
