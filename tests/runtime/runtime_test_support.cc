#include "runtime_test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <cstring>
#include <utility>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/builder.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime::testing {

Program ToyProgram() {
  Program p;
  p.sizes = {100, 100, 100, 100, 100, 100};
  p.ops = {
      {"fwd.a", Phase::kForward, {}, {0}, {}},
      {"fwd.b", Phase::kForward, {0}, {1}, {}},
      {"fwd.c", Phase::kForward, {1}, {2}, {1}},
      {"bwd.d", Phase::kBackward, {2}, {3}, {2}},
      {"bwd.e", Phase::kBackward, {3}, {4}, {3}},
      {"bwd.f", Phase::kBackward, {0, 4}, {5}, {0, 4}},
      {"opt", Phase::kOptimizer, {5}, {}, {5}},
  };
  return p;
}

Program LayeredProgram(int layers, int64_t act_bytes, int64_t param_bytes) {
  Program p;
  // Tensors: params 0..L-1, x_0..x_L (L..2L), g_0..g_L (2L+1..3L+1), loss.
  const int x0 = layers, g0 = 2 * layers + 1, loss = 3 * layers + 2;
  p.sizes.assign(3 * layers + 3, act_bytes);
  for (int i = 0; i < layers; ++i) {
    p.sizes[i] = param_bytes;
    p.persistent.push_back(i);
  }
  p.sizes[loss] = 4;
  p.ops.push_back({"embed", Phase::kForward, {}, {x0}, {}});
  for (int i = 0; i < layers; ++i) {
    p.ops.push_back({"layer.fwd", Phase::kForward, {x0 + i, i}, {x0 + i + 1}, {}});
  }
  p.ops.push_back({"loss", Phase::kForward, {x0 + layers}, {loss}, {}});
  p.ops.push_back({"loss.bwd", Phase::kBackward, {loss, x0 + layers}, {g0 + layers},
                   {loss, x0 + layers}});
  for (int i = layers - 1; i >= 0; --i) {
    p.ops.push_back({"layer.bwd", Phase::kBackward, {g0 + i + 1, x0 + i, i}, {g0 + i},
                     {g0 + i + 1, x0 + i}});
  }
  p.ops.push_back({"opt", Phase::kOptimizer, {g0}, {}, {g0}});
  return p;
}

PolicyProvider ChameleonProvider(std::shared_ptr<std::vector<PlannedPolicy>> made) {
  return [made](const PolicyRequest& r) -> absl::StatusOr<std::string> {
    SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, ReadTrace(r.record_path));
    ChameleonOptions o;
    o.min_tensor_bytes = 1;
    ChameleonPlanner planner(o);
    PlanningProblem problem;
    problem.trace = &trace;
    problem.iteration = r.iteration;
    problem.device.capacity_bytes = r.device_budget_bytes;
    problem.device.h2d_bandwidth_bytes_per_s = trace.metadata().h2d_bandwidth_bytes_per_s;
    problem.device.d2h_bandwidth_bytes_per_s = trace.metadata().d2h_bandwidth_bytes_per_s;
    SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, planner.Plan(problem));
    const std::string path = absl::StrCat(r.work_dir, "/policy-", made->size(), ".pb");
    SWAPPLAN_RETURN_IF_ERROR(WritePolicy(policy, path));
    made->push_back({r.record_path, path});
    return path;
  };
}

std::string TempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("swapplan-", name, "-", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

Policy ToyPolicy() {
  Policy pol;
  pol.fingerprint.iteration_ops = 7;
  pol.device.capacity_bytes = 1000;
  pol.device.h2d_bandwidth_bytes_per_s = 1e9;
  pol.device.d2h_bandwidth_bytes_per_s = 1e9;
  pol.planner = "test";
  PolicyItem it;
  it.tensor_id = 1;  // A
  it.swap_out_op = 1;
  it.release_op = 2;
  it.swap_in_op = 4;
  it.first_use_op = 5;
  it.size_bytes = 100;
  pol.items.push_back(it);
  return pol;
}

absl::StatusOr<Trace> BuildTrace(const Program& p) {
  TraceBuilder b("program");
  b.metadata().device_memory_bytes = 1000;
  b.metadata().h2d_bandwidth_bytes_per_s = 1e9;
  b.metadata().d2h_bandwidth_bytes_per_s = 1e9;
  std::vector<std::vector<int64_t>> shapes(p.sizes.size());
  for (size_t t = 0; t < p.sizes.size(); ++t) {
    shapes[t] = {p.sizes[t] / 4};
    const bool persistent =
        std::find(p.persistent.begin(), p.persistent.end(), static_cast<int>(t)) != p.persistent.end();
    b.AddTensor({.id = t + 1,
                 .size_bytes = p.sizes[t],
                 .dtype = DType::kFloat32,
                 .shape = shapes[t],
                 .kind = persistent ? TensorKind::kParameter : TensorKind::kActivation,
                 .persistent = static_cast<int8_t>(persistent ? 1 : 0)});
  }
  b.BeginIteration();
  std::vector<bool> live(p.sizes.size(), false);
  for (int t : p.persistent) live[t] = true;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const ProgOp& op = p.ops[i];
    std::vector<uint64_t> in, out;
    for (int t : op.inputs) in.push_back(t + 1);
    for (int t : op.outputs) {
      if (live[t]) {
        in.push_back(t + 1);
      } else {
        b.AddMemoryEvent(static_cast<uint32_t>(i), MemoryEventKind::kAlloc, t + 1);
        live[t] = true;
      }
      out.push_back(t + 1);
    }
    b.AddOp({.name = b.InternOpName(op.name), .phase = op.phase, .inputs = in, .outputs = out,
             .duration_ns = 1000});
    for (int t : op.free_after) {
      b.AddMemoryEvent(static_cast<uint32_t>(i), MemoryEventKind::kFree, t + 1);
      live[t] = false;
    }
  }
  b.EndIteration(static_cast<int64_t>(p.ops.size()) * 1000);
  return std::move(b).Finish();
}

Env::~Env() {
  rt.reset();
  if (device == nullptr) return;
  const std::string broken = device->Violations();
  if (!broken.empty() && std::uncaught_exceptions() == 0) {
    FAIL_CHECK("the fake " << TestBackendName(kind)
                           << " runtime saw rules broken:\n" << broken);
  }
}

Env MakeEnv(const EnvOptions& o) {
  DeviceSpec spec;
  spec.capacity_bytes = o.capacity_bytes;
  spec.h2d_bytes_per_s = o.h2d_bytes_per_s;
  spec.d2h_bytes_per_s = o.d2h_bytes_per_s;
  spec.copy_latency_ns = o.copy_latency_ns;
  spec.compute = o.compute;
  spec.max_events = o.max_events;
  TestBackend tb = MakeTestBackend(spec, o.backend);
  Env env;
  env.kind = o.backend;
  if (!tb.status.ok()) {
    env.error = std::string(tb.status.message());
    UNSCOPED_INFO("MakeEnv: " << env.error);
    return env;
  }
  RuntimeOptions ro = o.runtime;
  ro.device.capacity_bytes = o.capacity_bytes;
  ro.device.h2d_bandwidth_bytes_per_s = o.h2d_bytes_per_s;
  ro.device.d2h_bandwidth_bytes_per_s = o.d2h_bytes_per_s;
  ro.device.copy_latency_ns = o.copy_latency_ns;
  env.device = std::move(tb.device);
  absl::StatusOr<std::unique_ptr<Runtime>> rt = Runtime::Create(ro, std::move(tb.backend));
  if (rt.ok()) {
    env.rt = std::move(*rt);
  } else {
    env.error = std::string(rt.status().message());
    UNSCOPED_INFO("MakeEnv: " << env.error);
  }
  return env;
}

Env ToyPolicyEnv(double d2h, double h2d, MatcherKind matcher) {
  EnvOptions o;
  o.capacity_bytes = 1000;
  o.d2h_bytes_per_s = d2h;
  o.h2d_bytes_per_s = h2d;
  o.runtime.matcher = matcher;
  Env env = MakeEnv(o);
  absl::StatusOr<Trace> trace = BuildTrace(ToyProgram());
  if (env.rt == nullptr || !trace.ok()) return Env{};
  Policy policy = ToyPolicy();
  policy.fingerprint = ComputeFingerprint(*trace, 0);
  if (!env.rt->LoadPolicyForTrace(policy, *trace, 0).ok()) return Env{};
  return env;
}

int32_t Runner::OpId(const std::string& name) { return env_.rt->InternOp(name); }

void Runner::Fill(int tensor) {
  seeds_[tensor] = next_seed_++;
  absl::StatusOr<void*> p = env_.rt->TensorData(handles_[tensor]);
  if (!p.ok()) {
    mismatches_.push_back(absl::StrCat("fill of tensor ", tensor, ": ", p.status().message()));
    return;
  }
  auto* bytes = static_cast<uint8_t*>(*p);
  for (int64_t k = 0; k < sizes_[tensor]; ++k) bytes[k] = PatternByte(seeds_[tensor], k);
}

bool Runner::Check(int tensor, std::string* why) {
  absl::StatusOr<void*> p = env_.rt->TensorData(handles_[tensor]);
  if (!p.ok()) {
    *why = absl::StrCat("tensor ", tensor, ": ", p.status().message());
    return false;
  }
  const auto* bytes = static_cast<const uint8_t*>(*p);
  for (int64_t k = 0; k < sizes_[tensor]; ++k) {
    if (bytes[k] != PatternByte(seeds_[tensor], k)) {
      *why = absl::StrCat("tensor ", tensor, " byte ", k, " is ", bytes[k], ", expected ",
                          PatternByte(seeds_[tensor], k));
      return false;
    }
  }
  return true;
}

absl::Status Runner::AllocatePersistent(const Program& p) {
  handles_.resize(p.sizes.size(), kNoTensorHandle);
  seeds_.resize(p.sizes.size(), 0);
  sizes_ = p.sizes;
  for (int t : p.persistent) {
    const int64_t shape[] = {p.sizes[t] / 4};
    TensorDesc d{.size_bytes = p.sizes[t], .dtype = DType::kFloat32, .shape = shape,
                 .kind = TensorKind::kParameter, .persistent = 1};
    SWAPPLAN_ASSIGN_OR_RETURN(handles_[t], env_.rt->AllocTensor(d, nullptr));
    Fill(t);
  }
  return absl::OkStatus();
}

absl::Status Runner::Iteration(const Program& p) {
  if (handles_.size() < p.sizes.size()) {
    handles_.resize(p.sizes.size(), kNoTensorHandle);
    seeds_.resize(p.sizes.size(), 0);
  }
  sizes_ = p.sizes;
  SWAPPLAN_RETURN_IF_ERROR(env_.rt->IterationBegin());
  absl::Status first;
  for (size_t i = 0; i < p.ops.size() && first.ok(); ++i) {
    const ProgOp& op = p.ops[i];
    if (before_op) before_op(static_cast<int>(i));
    std::vector<TensorHandle> in, out;
    for (int t : op.inputs) in.push_back(handles_[t]);
    for (int t : op.outputs) {
      if (handles_[t] != kNoTensorHandle) in.push_back(handles_[t]);  // written
    }
    absl::Status st = env_.rt->OpBegin(OpId(op.name), op.phase, in);
    if (!st.ok()) {
      first = st;
      break;
    }
    for (int t : op.inputs) {
      std::string why;
      if (!Check(t, &why)) mismatches_.push_back(absl::StrCat("op ", i, " (", op.name, "): ", why));
    }
    if (during_op) during_op(static_cast<int>(i));
    for (int t : op.outputs) {
      if (handles_[t] == kNoTensorHandle) {
        const int64_t shape[] = {p.sizes[t] / 4};
        TensorDesc d{.size_bytes = p.sizes[t], .dtype = DType::kFloat32, .shape = shape};
        d.framework_id = static_cast<uint64_t>(t) + 1;  // recompute callbacks name it
        absl::StatusOr<TensorHandle> h = env_.rt->AllocTensor(d, nullptr);
        if (!h.ok()) {
          st = h.status();
          break;
        }
        handles_[t] = *h;
      }
      Fill(t);
      out.push_back(handles_[t]);
    }
    absl::Status end = env_.rt->OpEnd(out);
    if (st.ok()) st = end;
    if (!st.ok()) {
      first = st;
      break;
    }
    if (env_.device != nullptr) {
      // A rule the fake vendor runtime saw broken during this op.
      const std::string broken = env_.device->Violations();
      if (broken.size() > violations_seen_) {
        mismatches_.push_back(absl::StrCat("op ", i, " (", op.name, "): the fake vendor runtime "
                                           "saw a rule broken: ", broken.substr(violations_seen_)));
        violations_seen_ = broken.size();
      }
    }
    if (after_op) after_op(static_cast<int>(i));
    for (int t : op.free_after) {
      st = env_.rt->FreeTensor(handles_[t]);
      handles_[t] = kNoTensorHandle;
      if (!st.ok() && first.ok()) first = st;
    }
  }
  if (!first.ok()) {
    if (on_failure) on_failure(first);
    // The step failed: the framework drops the step's tensors.
    for (size_t t = 0; t < handles_.size(); ++t) {
      if (handles_[t] == kNoTensorHandle) continue;
      if (std::find(p.persistent.begin(), p.persistent.end(), static_cast<int>(t)) !=
          p.persistent.end()) {
        continue;
      }
      (void)env_.rt->FreeTensor(handles_[t]);
      handles_[t] = kNoTensorHandle;
    }
  }
  absl::Status st = env_.rt->IterationEnd();
  return first.ok() ? st : first;
}

std::string Runner::CheckAll(const Program& p) {
  (void)p;
  std::vector<TensorHandle> live;
  std::vector<int> idx;
  for (size_t t = 0; t < handles_.size(); ++t) {
    if (handles_[t] != kNoTensorHandle) {
      live.push_back(handles_[t]);
      idx.push_back(static_cast<int>(t));
    }
  }
  absl::Status st = env_.rt->IterationBegin();
  if (st.ok()) st = env_.rt->OpBegin(OpId("check"), Phase::kOther, live);
  std::string first;
  if (!st.ok()) first = absl::StrCat("touching every tensor: ", st.message());
  for (int t : idx) {
    std::string why;
    if (first.empty() && !Check(t, &why)) first = why;
  }
  if (st.ok()) (void)env_.rt->OpEnd({});
  (void)env_.rt->IterationEnd();
  return first;
}

absl::Status Runner::FreeAll() {
  absl::Status first;
  for (TensorHandle& h : handles_) {
    if (h == kNoTensorHandle) continue;
    absl::Status st = env_.rt->FreeTensor(h);
    if (!st.ok() && first.ok()) first = st;
    h = kNoTensorHandle;
  }
  return first;
}

}  // namespace swapplan::runtime::testing
