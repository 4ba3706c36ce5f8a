// Step anatomy (curve/step_anatomy.h) on a hand-built first step:
//
//   op  phase      what                          live during the op (B)
//   0   FORWARD    a = mm(W)          a 400       W 100 + a 400        = 500
//   1   BACKWARD   g = mm(a)          g 100, a freed after: 100 + 400 + 100 = 600
//   2   OPTIMIZER  m = zeros_like(W)  m 100       W + g + m            = 300
//   3   OPTIMIZER  v = zeros_like(W)  v 100       W + g + m + v        = 400
//   4   OPTIMIZER  W.add_(g, m, v)                400 (g freed after)
//
// m and v (OPTIMIZER_STATE) are allocated at ops 2 and 3 and never freed: a
// first step. Steady state: at ops 0..1 both are resident (+200), at op 2
// v is (+100): 700, 800, 400, 400, 400 -> peak 800 at op 1 (BACKWARD).
#include <catch2/catch.hpp>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/step_anatomy.h"
#include "swapplan/trace/builder.h"

namespace swapplan {
namespace {

Trace FirstStep(bool state_freed) {
  TraceBuilder b("first_step");
  const NameId mm = b.InternOpName("aten::mm");
  const NameId zeros = b.InternOpName("aten::zeros_like");
  const NameId add = b.InternOpName("aten::add_");
  b.AddTensor({.id = 1, .size_bytes = 100, .kind = TensorKind::kParameter, .persistent = 1});
  b.AddTensor({.id = 2, .size_bytes = 400, .kind = TensorKind::kActivation});
  b.AddTensor({.id = 3, .size_bytes = 100, .kind = TensorKind::kGradient});
  b.AddTensor({.id = 4, .size_bytes = 100, .kind = TensorKind::kOptimizerState,
               .persistent = state_freed ? 0 : 1});
  b.AddTensor({.id = 5, .size_bytes = 100, .kind = TensorKind::kOptimizerState,
               .persistent = state_freed ? 0 : 1});
  b.BeginIteration();
  const uint64_t w[] = {1}, a[] = {2}, g[] = {3}, m[] = {4}, v[] = {5}, all[] = {1, 3, 4, 5};
  b.AddOp({.name = mm, .phase = Phase::kForward, .inputs = w, .outputs = a});
  b.AddOp({.name = mm, .phase = Phase::kBackward, .inputs = a, .outputs = g});
  b.AddOp({.name = zeros, .phase = Phase::kOptimizer, .inputs = w, .outputs = m});
  b.AddOp({.name = zeros, .phase = Phase::kOptimizer, .inputs = w, .outputs = v});
  b.AddOp({.name = add, .phase = Phase::kOptimizer, .inputs = all, .outputs = w});
  b.AddMemoryEvent(2, MemoryEventKind::kAlloc, 4);
  b.AddMemoryEvent(3, MemoryEventKind::kAlloc, 5);
  if (state_freed) {  // scratch of the step, not state
    b.AddMemoryEvent(4, MemoryEventKind::kFree, 4);
    b.AddMemoryEvent(4, MemoryEventKind::kFree, 5);
  }
  b.EndIteration(1000);
  auto t = std::move(b).Finish();
  REQUIRE(t.ok());
  return std::move(*t);
}

TEST_CASE("step anatomy: a first step, its state and the steady-state estimate") {
  Trace t = FirstStep(/*state_freed=*/false);
  auto c = ComputeMemoryCurve(t);
  REQUIRE(c.ok());
  auto a = AnalyzeStep(t, *c, 0);
  REQUIRE(a.ok());
  CHECK(a->peak.bytes == 600);
  CHECK(a->peak.local_op == 1);
  CHECK(a->peak.phase == Phase::kBackward);
  // At op 1: W 100 PARAMETER, a 400 ACTIVATION, g 100 GRADIENT.
  CHECK(a->peak_bytes_by_kind[static_cast<int>(TensorKind::kParameter)] == 100);
  CHECK(a->peak_bytes_by_kind[static_cast<int>(TensorKind::kActivation)] == 400);
  CHECK(a->peak_bytes_by_kind[static_cast<int>(TensorKind::kGradient)] == 100);
  CHECK(a->peak_bytes_by_kind[static_cast<int>(TensorKind::kOptimizerState)] == 0);
  CHECK(a->first_step);
  CHECK(a->num_state_tensors_created == 2);
  CHECK(a->state_bytes_created == 200);
  CHECK(a->state_created_at == 2);
  CHECK(a->steady_peak_bytes == 800);
  CHECK(a->steady_peak_local_op == 1);
  CHECK(a->steady_peak_phase == Phase::kBackward);
}

TEST_CASE("step anatomy: optimizer scratch freed in the step is no state") {
  Trace t = FirstStep(/*state_freed=*/true);
  auto c = ComputeMemoryCurve(t);
  REQUIRE(c.ok());
  auto a = AnalyzeStep(t, *c, 0);
  REQUIRE(a.ok());
  CHECK_FALSE(a->first_step);
  CHECK(a->state_bytes_created == 0);
  CHECK(a->steady_peak_bytes == a->peak.bytes);  // 600: nothing to add
  CHECK(a->steady_peak_local_op == 1);
}

TEST_CASE("step anatomy: an iteration out of range is refused") {
  Trace t = FirstStep(false);
  auto c = ComputeMemoryCurve(t);
  REQUIRE(c.ok());
  auto a = AnalyzeStep(t, *c, 1);
  CHECK(a.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(a.status().message().find("iteration 1 is out of range") != std::string::npos);
}

}  // namespace
}  // namespace swapplan
