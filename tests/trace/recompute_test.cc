// Recompute recipes, costs, transients and blockers (trace/recompute.h) on an
// eleven-op SwiGLU-like trace with round numbers:
//
//   op  name                   phase      in           out  ns
//   0   aten::embedding        FORWARD    P            X    100
//   1   aten::mm               FORWARD    X P          A    400
//   2   aten::silu             FORWARD    A            S     50
//   3   aten::mul              FORWARD    S A          M     50
//   4   aten::native_dropout   FORWARD    M            D     20
//   5   aten::view             FORWARD    M            V     10
//   6   c10d::allreduce        FORWARD    D            G     30
//   7   aten::mul_backward     BACKWARD   M S A V G          100
//   8   aten::mul_             BACKWARD   A            A    100
//   9   aten::silu_backward    BACKWARD   A X               100
//   10  adam_step              OPTIMIZER  P            N    100
//
// Sizes: P X D G N 100 bytes; A S M V 200 bytes.
#include "swapplan/trace/recompute.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "support/test_traces.h"

namespace swapplan {
namespace {

enum : TensorId { P = 0, X, A, S, M, D, V, G, N };

std::string TraceText(bool rng_restorable) {
  auto t = [](int id, int size) {
    return "{\"id\": " + std::to_string(id) + ", \"size_bytes\": " + std::to_string(size) +
           ", \"kind\": \"" + (id == 0 ? "PARAMETER" : "ACTIVATION") + "\"}";
  };
  std::string tensors = t(P, 100) + "," + t(X, 100) + "," + t(A, 200) + "," + t(S, 200) + "," +
                        t(M, 200) + "," + t(D, 100) + "," + t(V, 200) + "," + t(G, 100) + "," +
                        t(N, 100);
  auto op = [](const char* name, const char* phase, const char* in, const char* out, int ns) {
    return std::string("{\"name\": \"") + name + "\", \"phase\": \"" + phase +
           "\", \"inputs\": [" + in + "], \"outputs\": [" + out +
           "], \"duration_ns\": " + std::to_string(ns) + "}";
  };
  std::string ops = op("aten::embedding", "FORWARD", "0", "1", 100) + "," +
                    op("aten::mm", "FORWARD", "1, 0", "2", 400) + "," +
                    op("aten::silu", "FORWARD", "2", "3", 50) + "," +
                    op("aten::mul", "FORWARD", "3, 2", "4", 50) + "," +
                    op("aten::native_dropout", "FORWARD", "4", "5", 20) + "," +
                    op("aten::view", "FORWARD", "4", "6", 10) + "," +
                    op("c10d::allreduce", "FORWARD", "5", "7", 30) + "," +
                    op("aten::mul_backward", "BACKWARD", "4, 3, 2, 6, 7", "", 100) + "," +
                    op("aten::mul_", "BACKWARD", "2", "2", 100) + "," +
                    op("aten::silu_backward", "BACKWARD", "2, 1", "", 100) + "," +
                    op("adam_step", "OPTIMIZER", "0", "8", 100);
  std::string meta = "{\"device_name\": \"toy\"";
  if (rng_restorable) meta += ", \"attributes\": {\"rng_state_restorable\": \"true\"}";
  meta += "}";
  return "{\"format\": \"swapplan-trace\", \"metadata\": " + meta + ", \"tensors\": [" + tensors +
         "], \"iterations\": [{\"wall_time_ns\": 1060, \"ops\": [" + ops +
         "], \"memory_events\": []}]}";
}

const Trace& Swiglu() {
  static const Trace t = testing::TraceFromJson(TraceText(false), "swiglu.json");
  return t;
}

RecomputeAnalysis Analyse(const Trace& trace, double scale = 1.0) {
  DeviceModel device;
  device.compute_time_scale = scale;
  absl::StatusOr<RecomputeAnalysis> a = RecomputeAnalysis::Build(trace, 0, device);
  REQUIRE(a.ok());
  return *std::move(a);
}

TEST_CASE("recompute: producers and blockers with their reasons", "[recompute]") {
  const RecomputeAnalysis a = Analyse(Swiglu());
  CHECK(a.has_costs());
  CHECK(a.producer(S) == 2);
  CHECK(a.producer(M) == 3);
  CHECK(a.producer(P) == -1);
  CHECK(a.blocker(X) == RecomputeBlocker::kNone);
  CHECK(a.blocker(S) == RecomputeBlocker::kNone);
  CHECK(a.blocker(M) == RecomputeBlocker::kNone);
  CHECK(a.blocker(P) == RecomputeBlocker::kNoProducer);   // a parameter nobody writes
  CHECK(a.blocker(D) == RecomputeBlocker::kRandomState);  // native_dropout, no RNG record
  CHECK(a.blocker(V) == RecomputeBlocker::kAliasing);     // a view of M
  CHECK(a.blocker(G) == RecomputeBlocker::kCollective);
  CHECK(a.blocker(A) == RecomputeBlocker::kInPlace);      // mm writes it, mul_ again
  CHECK(a.blocker(N) == RecomputeBlocker::kOptimizer);
  CHECK(RecomputeBlockerName(RecomputeBlocker::kRandomState) == "random-state");
  CHECK(ClassifyOpName("aten::copy_", false) == RecomputeBlocker::kInPlace);
  CHECK(ClassifyOpName("aten::_local_scalar_dense", false) == RecomputeBlocker::kSideEffect);
  CHECK(ClassifyOpName("aten::native_batch_norm", false) == RecomputeBlocker::kSideEffect);
  CHECK(ClassifyOpName("aten::rms_norm", false) == RecomputeBlocker::kNone);
  CHECK(ClassifyOpName("aten::bernoulli", true) == RecomputeBlocker::kNone);
}

TEST_CASE("recompute: the trace's rng_state_restorable lifts the random-state blocker",
          "[recompute]") {
  const Trace t = testing::TraceFromJson(TraceText(true), "swiglu_rng.json");
  const RecomputeAnalysis a = Analyse(t);
  CHECK(a.rng_state_restorable());
  CHECK(a.blocker(D) == RecomputeBlocker::kNone);
}

TEST_CASE("recompute: one op re-run, its inputs read in place", "[recompute]") {
  const RecomputeAnalysis a = Analyse(Swiglu());
  // S = silu(A) before op 7 with everything else resident: op 2 only,
  // 50 ns, reads A, holds nothing beyond S.
  const RecomputeRecipe r = a.Plan({S}, 7, [](TensorId) { return true; });
  REQUIRE(r.ok());
  CHECK(r.ops == std::vector<int32_t>{2});
  CHECK(r.cost_ns == 50);
  CHECK(r.leaves == std::vector<TensorId>{A});
  CHECK(r.intermediates.empty());
  CHECK(r.transient_peak_bytes == 0);
  // The device model's compute_time_scale 2 doubles the cost: 100 ns.
  CHECK(Analyse(Swiglu(), 2.0).Plan({S}, 7, [](TensorId) { return true; }).cost_ns == 100);
}

TEST_CASE("recompute: a chain through a dropped input holds it as a transient",
          "[recompute]") {
  const RecomputeAnalysis a = Analyse(Swiglu());
  // M = mul(S, A) with S off the device: silu (op 2) then mul (op 3),
  // 50 + 50 = 100 ns; S (200 bytes) is held from op 2 through op 3.
  const RecomputeRecipe r = a.Plan({M}, 7, [](TensorId x) { return x != S; });
  REQUIRE(r.ok());
  CHECK(r.ops == std::vector<int32_t>{2, 3});
  CHECK(r.cost_ns == 100);
  CHECK(r.intermediates == std::vector<TensorId>{S});
  CHECK(r.leaves == std::vector<TensorId>{A});
  CHECK(r.transient_peak_bytes == 200);
  // Both as targets: the same two ops once each, no transient (S is kept).
  const RecomputeRecipe both = a.Plan({M, S}, 7, [](TensorId x) { return x != S && x != M; });
  REQUIRE(both.ok());
  CHECK(both.ops == std::vector<int32_t>{2, 3});
  CHECK(both.cost_ns == 100);
  CHECK(both.transient_peak_bytes == 0);
}

TEST_CASE("recompute: resident inputs are leaves, read in place", "[recompute]") {
  // M = mul(S, A) with S and A resident: op 3 alone (50 ns), no transient,
  // leaves A and S.
  const RecomputeAnalysis a = Analyse(Swiglu());
  const RecomputeRecipe r = a.Plan({M}, 7, [](TensorId) { return true; });
  REQUIRE(r.ok());
  CHECK(r.ops == std::vector<int32_t>{3});
  CHECK(r.cost_ns == 50);
  CHECK(r.transient_peak_bytes == 0);
  CHECK(r.leaves == std::vector<TensorId>{A, S});
}

TEST_CASE("recompute: blocked recipes name the tensor and the reason", "[recompute]") {
  const RecomputeAnalysis a = Analyse(Swiglu());
  // Needed at op 2, produced by op 2: not before.
  RecomputeRecipe r = a.Plan({S}, 2, [](TensorId) { return true; });
  CHECK(r.blocker == RecomputeBlocker::kNotBefore);
  CHECK(r.blocked_tensor == S);
  // Before op 9, A was rewritten by mul_ at op 8: silu would read the new A.
  r = a.Plan({S}, 9, [](TensorId) { return true; });
  CHECK(r.blocker == RecomputeBlocker::kInPlace);
  CHECK(r.blocked_tensor == S);
  // M's chain with A off the device reaches A, which mm and mul_ write.
  r = a.Plan({M}, 7, [](TensorId x) { return x != A; });
  CHECK(r.blocker == RecomputeBlocker::kInPlace);
  CHECK(r.blocked_tensor == A);
  // The dropout mask cannot be produced again without the RNG state.
  r = a.Plan({D}, 7, [](TensorId) { return true; });
  CHECK(r.blocker == RecomputeBlocker::kRandomState);
}

}  // namespace
}  // namespace swapplan
