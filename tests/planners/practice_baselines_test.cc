// The practice baselines (selective, te-offload, save-on-cpu): exact
// policies, simulated times and peaks on tiny hand-built traces with every
// value worked out in a comment, the attention matcher, and error messages.
// Round numbers: 100 ns ops, 100-byte tensors, 1 byte/ns links (a copy takes
// 100 ns). Every policy is also run through the checker.
#include "swapplan/planners/baselines/practice.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/oversubscription.h"
#include "swapplan/planners/registry.h"
#include "swapplan/trace/io.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

using testing::OneBytePerNsProblem;
using testing::OpWindow;
using testing::OpWindows;

SimulationResult Sim(const Trace& t, const Policy& p, int64_t capacity) {
  absl::StatusOr<SimulationResult> r = Simulate(
      t, p, {.device = {.capacity_bytes = capacity, .h2d_bandwidth_bytes_per_s = 1e9,
                        .d2h_bandwidth_bytes_per_s = 1e9}});
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

void RequireClean(const Trace& t, const Policy& p) {
  absl::StatusOr<CheckReport> r = CheckPolicy(t, p, CheckOptionsFor(p));
  REQUIRE(r.ok());
  INFO(testing::ViolationMessages(*r));
  CHECK(r->violations.empty());
}

absl::StatusOr<Policy> PlanWith(const char* planner, const PlanningProblem& problem,
                                std::vector<std::pair<std::string, std::string>> options = {}) {
  absl::StatusOr<std::unique_ptr<Planner>> p = CreatePlanner(planner);
  REQUIRE(p.ok());
  for (const auto& [name, value] : options) REQUIRE((*p)->SetOption(name, value).ok());
  return (*p)->Plan(problem);
}

// Two layers, three 100 ns ops each way (the baselines_test trace):
//
//   op  name  phase  layer  in          out   bytes during the op
//    0  f00   F      0      x0          a00   200
//    1  f01   F      0      a00         a01   300
//    2  f02   F      0      a01         x1    400
//    3  f10   F      1      x1          a10   500
//    4  f11   F      1      a10         a11   600
//    5  f12   F      1      a11         x2    700
//    6  b12   B      1      x2 a11      g0    800   <- peak
//    7  b11   B      1      g0 a10      g1    700
//    8  b10   B      1      g1 x1       g2    600
//    9  b02   B      0      g2 a01      g3    500
//   10  b01   B      0      g3 a00      g4    400
//   11  b00   B      0      g4 x0       g5    300
//
// Windows: a00 (1→10), a01 (2→9), x1 (3→8), a10 (4→7). Ideal time 1200 ns.
Trace TwoLayers() {
  std::string ops;
  const char* rows[] = {
      R"("f00", "phase": "FORWARD", "layer": 0, "inputs": [0], "outputs": [1])",
      R"("f01", "phase": "FORWARD", "layer": 0, "inputs": [1], "outputs": [2])",
      R"("f02", "phase": "FORWARD", "layer": 0, "inputs": [2], "outputs": [3])",
      R"("f10", "phase": "FORWARD", "layer": 1, "inputs": [3], "outputs": [4])",
      R"("f11", "phase": "FORWARD", "layer": 1, "inputs": [4], "outputs": [5])",
      R"("f12", "phase": "FORWARD", "layer": 1, "inputs": [5], "outputs": [6])",
      R"("b12", "phase": "BACKWARD", "layer": 1, "inputs": [6, 5], "outputs": [10])",
      R"("b11", "phase": "BACKWARD", "layer": 1, "inputs": [10, 4], "outputs": [11])",
      R"("b10", "phase": "BACKWARD", "layer": 1, "inputs": [11, 3], "outputs": [12])",
      R"("b02", "phase": "BACKWARD", "layer": 0, "inputs": [12, 2], "outputs": [13])",
      R"("b01", "phase": "BACKWARD", "layer": 0, "inputs": [13, 1], "outputs": [14])",
      R"("b00", "phase": "BACKWARD", "layer": 0, "inputs": [14, 0], "outputs": [15])"};
  for (const char* r : rows) {
    absl::StrAppend(&ops, ops.empty() ? "" : ",", R"({"name": )", r, R"(, "duration_ns": 100})");
  }
  std::string tensors = R"({"id": 0, "size_bytes": 100, "kind": "INPUT"})";
  for (int id = 1; id <= 6; ++id) {
    absl::StrAppend(&tensors, R"(, {"id": )", id, R"(, "size_bytes": 100, "kind": "ACTIVATION"})");
  }
  for (int id = 10; id <= 15; ++id) {
    absl::StrAppend(&tensors, R"(, {"id": )", id, R"(, "size_bytes": 100, "kind": "GRADIENT"})");
  }
  return testing::TraceFromJson(
      absl::StrCat(R"({"metadata": {"device_name": "toy"}, "tensors": [)", tensors,
                   R"(], "iterations": [{"ops": [)", ops, "]}]}"),
      "two_layers.json");
}

// L layers of two forward ops (f_l0: x_l → a_l, f_l1: a_l → x_{l+1}) and two
// backward ops (b_l1 reads a_l, b_l0 reads x_l), 100 ns and 100 B each.
// Forward op of layer l: 2l, 2l+1; backward b_l1 at 2L + 2(L−1−l), b_l0 one
// later. Tensor ids: x0 = 0 (INPUT), a_l = 1 + 2l, x_{l+1} = 2 + 2l,
// gradients from 100.
Trace Chain(int L) {
  std::string ops, tensors = R"({"id": 0, "size_bytes": 100, "kind": "INPUT"})";
  for (int l = 0; l < L; ++l) {
    absl::StrAppend(&ops, ops.empty() ? "" : ",", R"({"name": "f", "phase": "FORWARD", "layer": )",
                    l, R"(, "inputs": [)", 2 * l, R"(], "outputs": [)", 1 + 2 * l,
                    R"(], "duration_ns": 100}, {"name": "f", "phase": "FORWARD", "layer": )", l,
                    R"(, "inputs": [)", 1 + 2 * l, R"(], "outputs": [)", 2 + 2 * l,
                    R"(], "duration_ns": 100})");
    absl::StrAppend(&tensors, R"(, {"id": )", 1 + 2 * l,
                    R"(, "size_bytes": 100, "kind": "ACTIVATION"}, {"id": )", 2 + 2 * l,
                    R"(, "size_bytes": 100, "kind": "ACTIVATION"})");
  }
  int g = 100;
  int prev = 2 * L;  // x_L stands for the loss gradient
  for (int l = L - 1; l >= 0; --l) {
    absl::StrAppend(&ops, R"(, {"name": "b", "phase": "BACKWARD", "layer": )", l,
                    R"(, "inputs": [)", prev, ", ", 1 + 2 * l, R"(], "outputs": [)", g,
                    R"(], "duration_ns": 100}, {"name": "b", "phase": "BACKWARD", "layer": )", l,
                    R"(, "inputs": [)", g, ", ", 2 * l, R"(], "outputs": [)", g + 1,
                    R"(], "duration_ns": 100})");
    absl::StrAppend(&tensors, R"(, {"id": )", g, R"(, "size_bytes": 100, "kind": "GRADIENT"}, )",
                    R"({"id": )", g + 1, R"(, "size_bytes": 100, "kind": "GRADIENT"})");
    prev = g + 1;
    g += 2;
  }
  return testing::TraceFromJson(
      absl::StrCat(R"({"metadata": {"device_name": "toy"}, "tensors": [)", tensors,
                   R"(], "iterations": [{"ops": [)", ops, "]}]}"),
      "chain.json");
}

TEST_CASE("save-on-cpu: every saved activation out at its save, back at its use", "[baselines]") {
  Trace t = TwoLayers();
  // Items: out = release = last forward use, in = first backward use.
  // Off the device from release + 1 to in − 1: a00 2..9, a01 3..8, x1 4..7,
  // a10 5..6, so ops 2..11 hold 300 300 300 300 400 400 400 400 400 300:
  // peak 400 at op 6 (b12), first at op 6 (op 0 200, op 1 300).
  absl::StatusOr<Policy> p = PlanWith("save-on-cpu", OneBytePerNsProblem(t, 400));
  REQUIRE(p.ok());
  CHECK(OpWindows(*p) == std::vector<OpWindow>{{1, 1, 1, 10, 10}, {2, 2, 2, 9, 9}, {3, 3, 3, 8, 8},
                                       {4, 4, 4, 7, 7}});
  for (const PolicyItem& it : p->items) CHECK(it.release_waits_for_copy);
  CHECK(p->expected_peak_bytes == 400);
  RequireClean(t, *p);
  // Timeline: op0 0-100, op1 100-200, out a00 200-300, op2 300-400, out a01
  // 400-500, op3 500-600, out x1 600-700, op4 700-800, out a10 800-900, op5
  // 900-1000, op6 1000-1100; each backward use waits for its copy in,
  // issued when it is reached: in a10 1100-1200, op7 1200-1300, in x1
  // 1300-1400, op8 1400-1500, in a01 1500-1600, op9 1600-1700, in a00
  // 1700-1800, op10 1800-1900, op11 1900-2000. 800 ns of stalls.
  SimulationResult r = Sim(t, *p, 400);
  CHECK_FALSE(r.oom.occurred);
  CHECK(r.peak_bytes == 400);
  CHECK(r.iteration_time_ns == 2000);
  CHECK(r.stall_ns == 800);

  absl::StatusOr<Policy> tight = PlanWith("save-on-cpu", OneBytePerNsProblem(t, 399));
  REQUIRE(tight.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(tight.status().message()) ==
        "save-on-cpu: saving 4 activations on the host peaks at 400 B at op 6 (b12), 1 B over "
        "the budget of 399 B");
  // min_bytes leaves every 100-byte tensor alone: the unswapped peak, 800.
  absl::StatusOr<Policy> none =
      PlanWith("save-on-cpu", OneBytePerNsProblem(t, 800), {{"min_bytes", "101"}});
  REQUIRE(none.ok());
  CHECK(none->items.empty());
}

TEST_CASE("te-offload: TE's release and reload layers on a four-layer chain", "[baselines]") {
  Trace t = Chain(4);
  // Windows (last forward use → first backward use): a0 1→14, x1 2→13,
  // a1 3→12, x2 4→11, a2 5→10, x3 6→9 (a3 7→8 and x4 7→8 have none).
  // Owner = layer of the last forward use: a0 → 0, x1 a1 → 1, x2 a2 → 2,
  // x3 → 3. Forward layer l starts at op 2l; backward layer l at
  // 8 + 2(3 − l): layer 3 at 8, 2 at 10, 1 at 12, 0 at 14.
  const std::vector<std::pair<std::string, std::string>> all = {{"min_elements", "0"}};
  auto plan = [&](const char* k) {
    std::vector<std::pair<std::string, std::string>> o = all;
    o.push_back({"offload_layers", k});
    absl::StatusOr<Policy> p = PlanWith("te-offload", OneBytePerNsProblem(t, kUnlimitedBytes), o);
    REQUIRE(p.ok());
    RequireClean(t, *p);
    return OpWindows(*p);
  };
  // k = 2: layer i out after its forward (op 2i + 1), released before the
  // forward of layer 4 − 2 + i (op 2(2 + i) − 1), reloaded before the
  // backward of layer 4 − 1 − 2 + i = 1 + i: a0 out 1, release 3, in 12;
  // x1 and a1: out 3, release 5, in 10.
  CHECK(plan("2") ==
        std::vector<OpWindow>{{1, 1, 3, 12, 14}, {2, 3, 5, 10, 13}, {3, 3, 5, 10, 12}});
  // k = 1: a0 released before layer 3's forward (op 5), back before layer
  // 2's backward (op 10).
  CHECK(plan("1") == std::vector<OpWindow>{{1, 1, 5, 10, 14}});
  // k = 3 = L − 1 (no overlap, TE warns): release right after the owner's
  // forward, reload at the owner's own backward: a0 out 1 release 1 in 14;
  // x1 a1 out 3 release 3 in 12; x2 a2 out 5 release 5 in 10.
  CHECK(plan("3") == std::vector<OpWindow>{{1, 1, 1, 14, 14},
                                       {2, 3, 3, 12, 13},
                                       {3, 3, 3, 12, 12},
                                       {4, 5, 5, 10, 11},
                                       {5, 5, 5, 10, 10}});
  absl::StatusOr<std::unique_ptr<Planner>> p = CreatePlanner("te-offload");
  REQUIRE(p.ok());
  REQUIRE((*p)->SetOption("offload_layers", "4").ok());
  absl::StatusOr<Policy> bad = (*p)->Plan(OneBytePerNsProblem(t, kUnlimitedBytes));
  CHECK(KindOf(bad.status()) == ErrorKind::kUsage);
  CHECK(std::string(bad.status().message()) ==
        "te-offload: offload_layers is 4; iteration 0 has 4 layers and TE offloads at most L - 1 "
        "of them");
}

TEST_CASE("te-offload: the smallest k that fits, times and peaks", "[baselines]") {
  Trace t = TwoLayers();
  // L = 2, so k <= 1. k = 1 offloads layer 0's saved tensors a00 and a01
  // (x1's last forward use is in layer 1): out after layer 0's forward (op
  // 2), released before layer 1's forward (after op 2, waiting for both
  // copies), reloaded before layer 0's backward (op 9). Off during ops 3..8:
  // ops hold 200 300 400 300 400 500 600 500 400 500 400 300, peak 600 at
  // op 6. k = 0 is the unswapped 800.
  const std::vector<std::pair<std::string, std::string>> all = {{"min_elements", "0"}};
  absl::StatusOr<Policy> p = PlanWith("te-offload", OneBytePerNsProblem(t, 600), all);
  REQUIRE(p.ok());
  CHECK(OpWindows(*p) == std::vector<OpWindow>{{1, 2, 2, 9, 10}, {2, 2, 2, 9, 9}});
  CHECK(p->expected_peak_bytes == 600);
  // The chosen k is recorded as the option's value.
  CHECK(std::find(p->parameters.begin(), p->parameters.end(),
                  std::pair<std::string, std::string>{"offload_layers", "1"}) !=
        p->parameters.end());
  RequireClean(t, *p);
  // Timeline: ops 0-2 end at 300; out a00 300-400, a01 400-500 (one FIFO);
  // op3 waits for both: 500-600; ops 4-8 end at 1100; op 9 reached at 1100:
  // in a00 1100-1200, a01 1200-1300; op9 (reads a01) 1300-1400, op10
  // 1400-1500, op11 1500-1600. Stalls: 200 (op 3) + 200 (op 9) = 400.
  SimulationResult r = Sim(t, *p, 600);
  CHECK_FALSE(r.oom.occurred);
  CHECK(r.peak_bytes == 600);
  CHECK(r.iteration_time_ns == 1600);
  CHECK(r.stall_ns == 400);
  // 800 fits without offloading: k = 0, no items.
  absl::StatusOr<Policy> none = PlanWith("te-offload", OneBytePerNsProblem(t, 800), all);
  REQUIRE(none.ok());
  CHECK(none->items.empty());
  // Below 600 even k = L − 1 does not fit.
  absl::StatusOr<Policy> tight = PlanWith("te-offload", OneBytePerNsProblem(t, 599), all);
  REQUIRE(tight.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(tight.status().message()) ==
        "te-offload: offloading 2 activations of 1 of 2 layers (the most TE allows) peaks at "
        "600 B at op 6 (b12), 1 B over the budget of 599 B");
  // TE's default threshold (262144 elements) skips these 100-element
  // tensors: nothing leaves, still 800.
  absl::StatusOr<Policy> big = PlanWith("te-offload", OneBytePerNsProblem(t, 700));
  CHECK(big.status().code() == absl::StatusCode::kResourceExhausted);
}

// One classic attention layer:
//   op  name                            phase  in        out
//    0  aten::mm          (qkv)         F      x         q
//    1  aten::bmm         (QKᵀ)         F      q         s (TEMPORARY)
//    2  aten::_softmax                  F      s         p
//    3  aten::native_dropout            F      p         d m
//    4  aten::bmm         (× V)         F      d q       o
//    5  aten::mm          (proj)        F      o         y
//    6  aten::mm          (proj bwd)    B      y o       go
//    7  aten::bmm         (× V bwd)     B      go d q    gd
//    8  aten::native_dropout_backward   B      gd m      gp
//    9  aten::_softmax_backward_data    B      gp p      gs
//   10  aten::bmm         (QKᵀ bwd)     B      gs q      gq
//   11  aten::mm          (qkv bwd)     B      gq x      gx
// Tensor ids: x 0, q 1, s 2, p 3, d 4, m 5, o 6, y 7, gradients 10-15.
// With rng_restorable the trace's metadata says the recorder restores the
// RNG state (as Megatron's checkpointed core does), so the dropout can run
// again (trace/recompute.h).
Trace ClassicAttention(bool rng_restorable = true) {
  const std::string meta =
      rng_restorable
          ? R"({"metadata": {"device_name": "toy", "attributes": {"rng_state_restorable": "true"}},)"
          : R"({"metadata": {"device_name": "toy"},)";
  return testing::TraceFromJson(meta + R"(
    "tensors": [
      {"id": 0, "size_bytes": 100, "kind": "INPUT"},
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"}, {"id": 2, "size_bytes": 100, "kind": "TEMPORARY"},
      {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"}, {"id": 4, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 5, "size_bytes": 100, "kind": "ACTIVATION"}, {"id": 6, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 7, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 10, "size_bytes": 100, "kind": "GRADIENT"}, {"id": 11, "size_bytes": 100, "kind": "GRADIENT"},
      {"id": 12, "size_bytes": 100, "kind": "GRADIENT"}, {"id": 13, "size_bytes": 100, "kind": "GRADIENT"},
      {"id": 14, "size_bytes": 100, "kind": "GRADIENT"}, {"id": 15, "size_bytes": 100, "kind": "GRADIENT"}],
    "iterations": [{"ops": [
      {"name": "aten::mm", "phase": "FORWARD", "inputs": [0], "outputs": [1], "duration_ns": 100},
      {"name": "aten::bmm", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 100},
      {"name": "aten::_softmax", "phase": "FORWARD", "inputs": [2], "outputs": [3], "duration_ns": 100},
      {"name": "aten::native_dropout", "phase": "FORWARD", "inputs": [3], "outputs": [4, 5], "duration_ns": 100},
      {"name": "aten::bmm", "phase": "FORWARD", "inputs": [4, 1], "outputs": [6], "duration_ns": 100},
      {"name": "aten::mm", "phase": "FORWARD", "inputs": [6], "outputs": [7], "duration_ns": 100},
      {"name": "aten::mm", "phase": "BACKWARD", "inputs": [7, 6], "outputs": [10], "duration_ns": 100},
      {"name": "aten::bmm", "phase": "BACKWARD", "inputs": [10, 4, 1], "outputs": [11], "duration_ns": 100},
      {"name": "aten::native_dropout_backward", "phase": "BACKWARD", "inputs": [11, 5], "outputs": [12], "duration_ns": 100},
      {"name": "aten::_softmax_backward_data", "phase": "BACKWARD", "inputs": [12, 3], "outputs": [13], "duration_ns": 100},
      {"name": "aten::bmm", "phase": "BACKWARD", "inputs": [13, 1], "outputs": [14], "duration_ns": 100},
      {"name": "aten::mm", "phase": "BACKWARD", "inputs": [14, 0], "outputs": [15], "duration_ns": 100}
    ]}]})",
                                "attention.json");
}

TEST_CASE("selective: the classic attention core is dropped and re-run", "[baselines]") {
  Trace t = ClassicAttention();
  // The softmax (op 2) reads s, made by the bmm at op 1 (QKᵀ); its
  // probabilities go to the dropout (op 3), whose output the bmm at op 4
  // reads (× V): the core is ops 1..4.
  std::vector<AttentionCore> cores = AttentionCores(t, 0);
  REQUIRE(cores.size() == 1);
  CHECK(cores[0].ops == std::vector<int32_t>{1, 2, 3, 4});
  CHECK_FALSE(cores[0].fused);
  // Windows: q 4→7 (made at op 0, outside: kept), p 3→9, m 3→8, d 4→7 (made
  // inside, used only inside in forward: dropped); o 5→6 and y 5→6 have no
  // window. Trigger: d's first backward use, op 7, where all three come
  // back; the core's four ops (400 ns) are on d's item.
  absl::StatusOr<Policy> p = PlanWith("selective", OneBytePerNsProblem(t, kUnlimitedBytes));
  REQUIRE(p.ok());
  CHECK(OpWindows(*p) == std::vector<OpWindow>{{3, 3, 3, 7, 9}, {5, 3, 3, 7, 8}, {4, 4, 4, 7, 7}});
  for (const PolicyItem& it : p->items) {
    CHECK(it.action == ItemAction::kRecompute);
    CHECK(it.recompute_ns == (it.tensor_id == 4 ? 400 : 0));
  }
  CHECK(p->expected_overhead_ns == 400);
  RequireClean(t, *p);
  // 12 ops of 100 ns plus 400 ns of recomputation before op 7.
  SimulationResult r = Sim(t, *p, kUnlimitedBytes);
  CHECK(r.iteration_time_ns == 1600);
}

TEST_CASE("selective: without a restorable RNG state the dropout's outputs stay", "[baselines]") {
  // The dropout (op 3) draws random numbers and the trace records no
  // restorable RNG state: d (4) and m (5) cannot be produced again
  // (not-recomputable), so MakeRecomputeExact keeps them on the device. p (3)
  // is still dropped; its recipe re-runs QKᵀ (op 1, reading q, resident)
  // for s and the softmax (op 2): 2 ops x 100 ns = 200 ns, stated on p's item
  // (the core's 400 ns were on d's).
  Trace t = ClassicAttention(/*rng_restorable=*/false);
  absl::StatusOr<Policy> p = PlanWith("selective", OneBytePerNsProblem(t, kUnlimitedBytes));
  REQUIRE(p.ok());
  CHECK(OpWindows(*p) == std::vector<OpWindow>{{3, 3, 3, 7, 9}});
  REQUIRE(p->items.size() == 1);
  CHECK(p->items[0].action == ItemAction::kRecompute);
  CHECK(p->items[0].recompute_ns == 200);
  CHECK(p->expected_overhead_ns == 200);
  RequireClean(t, *p);
  // 12 ops of 100 ns plus 200 ns of recomputation before op 7.
  CHECK(Sim(t, *p, kUnlimitedBytes).iteration_time_ns == 1400);
}

TEST_CASE("selective: a fused kernel keeps its output, drops the rest", "[baselines]") {
  // op 0 flash forward (q k v → o lse), op 1 proj (o → y), op 2 proj bwd,
  // op 3 flash backward (reads o and lse). o's forward uses include the
  // projection (outside the core): kept; lse (1→3... its last forward use is
  // op 0, first backward use op 3) is dropped and re-made by re-running
  // op 0 (300 ns) when op 3 is reached.
  Trace t = testing::TraceFromJson(R"({"metadata": {"device_name": "toy"},
    "tensors": [
      {"id": 0, "size_bytes": 100, "kind": "INPUT"},
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"}, {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 10, "size_bytes": 100, "kind": "GRADIENT"}, {"id": 11, "size_bytes": 100, "kind": "GRADIENT"}],
    "iterations": [{"ops": [
      {"name": "aten::_scaled_dot_product_flash_attention", "phase": "FORWARD", "inputs": [0], "outputs": [1, 2], "duration_ns": 300},
      {"name": "aten::mm", "phase": "FORWARD", "inputs": [1], "outputs": [3], "duration_ns": 100},
      {"name": "aten::mm", "phase": "BACKWARD", "inputs": [3, 1], "outputs": [10], "duration_ns": 100},
      {"name": "aten::_scaled_dot_product_flash_attention_backward", "phase": "BACKWARD", "inputs": [10, 0, 1, 2], "outputs": [11], "duration_ns": 100}
    ]}]})",
                                   "flash.json");
  std::vector<AttentionCore> cores = AttentionCores(t, 0);
  REQUIRE(cores.size() == 1);
  CHECK(cores[0].ops == std::vector<int32_t>{0});
  CHECK(cores[0].fused);
  absl::StatusOr<Policy> p = PlanWith("selective", OneBytePerNsProblem(t, kUnlimitedBytes));
  REQUIRE(p.ok());
  CHECK(OpWindows(*p) == std::vector<OpWindow>{{2, 0, 0, 3, 3}});
  CHECK(p->items[0].recompute_ns == 300);
  RequireClean(t, *p);
  // 600 ns of ops + 300 ns of recomputation.
  CHECK(Sim(t, *p, kUnlimitedBytes).iteration_time_ns == 900);
  // fused_cores=false: no core, nothing dropped.
  absl::StatusOr<Policy> off =
      PlanWith("selective", OneBytePerNsProblem(t, kUnlimitedBytes), {{"fused_cores", "false"}});
  REQUIRE(off.ok());
  CHECK(off->items.empty());
}

TEST_CASE("selective: traces without attention", "[baselines]") {
  Trace t = TwoLayers();
  CHECK(AttentionCores(t, 0).empty());
  // Fits without dropping anything: an empty policy.
  absl::StatusOr<Policy> fits = PlanWith("selective", OneBytePerNsProblem(t, 800));
  REQUIRE(fits.ok());
  CHECK(fits->items.empty());
  // Does not fit: infeasible, and the message says why.
  absl::StatusOr<Policy> p = PlanWith("selective", OneBytePerNsProblem(t, 700));
  REQUIRE(p.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(p.status().message()) ==
        "selective: no attention core found in iteration 0 (no softmax fed by a batched matmul, "
        "no fused attention kernel: docs/baselines.md), nothing to recompute; the unswapped "
        "iteration peaks at 800 B at op 6 (b12), 100 B over the budget of 700 B");
  // A softmax fed by a plain mm (an MoE router) is not an attention core.
  Trace router = testing::TraceFromJson(R"({"metadata": {"device_name": "toy"},
    "tensors": [{"id": 0, "size_bytes": 100, "kind": "INPUT"},
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"}, {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"}],
    "iterations": [{"ops": [
      {"name": "aten::mm", "phase": "FORWARD", "inputs": [0], "outputs": [1], "duration_ns": 100},
      {"name": "aten::_softmax", "phase": "FORWARD", "inputs": [1], "outputs": [2], "duration_ns": 100},
      {"name": "aten::bmm", "phase": "FORWARD", "inputs": [2], "outputs": [3], "duration_ns": 100},
      {"name": "aten::_softmax_backward_data", "phase": "BACKWARD", "inputs": [3, 2], "duration_ns": 100}
    ]}]})",
                                        "router.json");
  CHECK(AttentionCores(router, 0).empty());
}

// The bundled traces: each planner's policy passes check, and the checker and
// the simulator agree on its peak, where it fits. Expected outcomes are the
// ones docs/baselines.md explains (table there), with exact recompute
// accounting (docs/hybrid.md): selective no longer fits gpt2_small's
// iteration 1 at r = 1.1 — the trace records no restorable RNG state, so
// no recipe through a core's dropout can run and none of the 12 tensors of
// its 4 classic cores is dropped — nor the flash-attention llama trace at
// r = 2 (only the 64 log-sum-exps go).
TEST_CASE("practice baselines on bundled traces pass check", "[baselines][check]") {
  struct Case {
    const char* trace;
    int32_t iteration;
    double ratio;
    const char* planner;
    bool feasible;
    size_t items;  // exact item count when feasible
  };
  const Case cases[] = {
      {"gpt2_small.json.gz", 1, 1.1, "selective", false, 0},
      {"gpt2_small.json.gz", 1, 1.1, "save-on-cpu", true, 0},
      {"llama2-7b-dp8-seq4096.trace.gz", 0, 2, "selective", false, 0},
      {"llama2-7b-dp8-seq4096.trace.gz", 0, 2, "te-offload", true, 0},
      {"llama2-7b-dp8-seq4096.trace.gz", 0, 12, "save-on-cpu", true, 0},
      {"llama2-7b-4layers-dp8-seq4096.trace.gz", 0, 2, "te-offload", true, 0},
  };
  for (const Case& c : cases) {
    INFO(c.trace << " r=" << c.ratio << " " << c.planner);
    absl::StatusOr<Trace> t = ReadTrace(std::string(SWAPPLAN_SOURCE_ROOT) + "/traces/" + c.trace);
    REQUIRE(t.ok());
    absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*t);
    REQUIRE(curve.ok());
    absl::StatusOr<int64_t> budget =
        OversubscriptionBudget(curve->iterations()[c.iteration], c.ratio);
    REQUIRE(budget.ok());
    PlanningProblem problem{.trace = &*t, .iteration = c.iteration, .curve = &*curve};
    problem.device.capacity_bytes = *budget;
    problem.device.h2d_bandwidth_bytes_per_s = 16e9;
    problem.device.d2h_bandwidth_bytes_per_s = 16e9;
    absl::StatusOr<Policy> p = PlanWith(c.planner, problem);
    if (!c.feasible) {
      CHECK(p.status().code() == absl::StatusCode::kResourceExhausted);
      continue;
    }
    INFO(p.status());
    REQUIRE(p.ok());
    CHECK_FALSE(p->items.empty());
    if (c.items > 0) CHECK(p->items.size() == c.items);
    RequireClean(*t, *p);
    absl::StatusOr<CheckReport> check = CheckPolicy(*t, *p, CheckOptionsFor(*p));
    REQUIRE(check.ok());
    CHECK(check->peak_bytes <= *budget);
    absl::StatusOr<SimulationResult> r =
        Simulate(*t, *p, {.device = problem.device});
    REQUIRE(r.ok());
    CHECK_FALSE(r->oom.occurred);
    CHECK(r->peak_bytes == check->peak_bytes);
  }
}

}  // namespace
}  // namespace swapplan
