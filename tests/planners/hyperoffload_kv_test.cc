// KV-cache offload in the hyperoffload planner (kv_cache.h, option
// kv_offload) on a hand-built inference request of two layers: a prefill
// (micro-batch 0) and two decode steps (micro-batches 1 and 2). Every op
// takes 100 ns; every tensor is 100 bytes; the host link moves 1 byte/ns
// both ways (a copy takes 100 ns, one op).
//
//   op  0   1   2   3   4   5   6   7   8   9   10  11
//   mb  0   0   0   0   1   1   1   1   2   2   2   2
//       W0  A0  W1  A1  E   A0  M   A1  E   A0  M   A1
//   K0  w   r               r               r            (layer 0's cache)
//   K1          w   r               r               r    (layer 1's cache)
//   T                           t               t        (a temporary at M)
//   bytes 100 100 200 200 200 200 300 200 200 200 200 100
//
// W = the cache write, A = attention reading it, E/M = the decode step's
// other ops (M holds a 100-byte temporary). K0 is freed after op 9, K1
// after op 11. Unswapped peak: 300 at op 6.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "support/planner_fixtures.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/hyperoffload/hyperoffload_planner.h"
#include "swapplan/planners/hyperoffload/kv_cache.h"
#include "swapplan/planners/registry.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/synth/synth.h"
#include "swapplan/trace/builder.h"

namespace swapplan {
namespace {

const Trace& Request() {
  static const Trace t = [] {
    TraceBuilder b("kv_request");
    const NameId write = b.InternOpName("aten::index_copy_");
    const NameId attn = b.InternOpName("aten::_scaled_dot_product_flash_attention");
    const NameId other = b.InternOpName("aten::mm");
    const int64_t shape[] = {50};
    // K0 = 0, K1 = 1 (ACTIVATION), temporaries 2, 3.
    for (uint64_t id = 0; id < 4; ++id) {
      b.AddTensor({.id = id, .size_bytes = 100, .dtype = DType::kBFloat16, .shape = shape,
                   .kind = id < 2 ? TensorKind::kActivation : TensorKind::kTemporary,
                   .persistent = 0});
    }
    b.BeginIteration();
    struct O {
      NameId name;
      int32_t mb;
      std::vector<uint64_t> in, out;
    };
    const std::vector<O> ops = {
        {write, 0, {}, {0}}, {attn, 0, {0}, {}}, {write, 0, {}, {1}}, {attn, 0, {1}, {}},
        {other, 1, {}, {}},  {attn, 1, {0}, {}}, {other, 1, {}, {2}}, {attn, 1, {1}, {}},
        {other, 2, {}, {}},  {attn, 2, {0}, {}}, {other, 2, {}, {3}}, {attn, 2, {1}, {}},
    };
    for (const O& o : ops) {
      b.AddOp({.name = o.name, .phase = Phase::kForward, .inputs = o.in, .outputs = o.out,
               .duration_ns = 100, .micro_batch = o.mb});
    }
    b.AddMemoryEvent(0, MemoryEventKind::kAlloc, 0);
    b.AddMemoryEvent(9, MemoryEventKind::kFree, 0);
    b.AddMemoryEvent(2, MemoryEventKind::kAlloc, 1);
    b.AddMemoryEvent(11, MemoryEventKind::kFree, 1);
    b.AddMemoryEvent(6, MemoryEventKind::kAlloc, 2);
    b.AddMemoryEvent(6, MemoryEventKind::kFree, 2);
    b.AddMemoryEvent(10, MemoryEventKind::kAlloc, 3);
    b.AddMemoryEvent(10, MemoryEventKind::kFree, 3);
    b.EndIteration(1200);
    absl::StatusOr<Trace> t = std::move(b).Finish();
    if (!t.ok()) FAIL(t.status().ToString());
    return *std::move(t);
  }();
  return t;
}

PlanningProblem Problem(int64_t budget) {
  return {.trace = &Request(),
          .iteration = 0,
          .device = {.capacity_bytes = budget,
                     .h2d_bandwidth_bytes_per_s = 1e9,
                     .d2h_bandwidth_bytes_per_s = 1e9}};
}

struct Item {
  uint64_t tensor;
  int32_t out, release, in, use;
  bool clean;
  bool operator==(const Item&) const = default;
};

std::vector<Item> Items(const Policy& p) {
  std::vector<Item> w;
  for (const PolicyItem& it : p.items) {
    w.push_back({it.tensor_id, it.swap_out_op, it.release_op, it.swap_in_op, it.first_use_op,
                 it.clean});
  }
  return w;
}

absl::StatusOr<Policy> Plan(const PlanningProblem& problem, const char* kv) {
  absl::StatusOr<std::unique_ptr<Planner>> planner = CreatePlanner("hyperoffload");
  REQUIRE(planner.ok());
  REQUIRE((*planner)->SetOption("min_tensor_bytes", "0").ok());
  REQUIRE((*planner)->SetOption("kv_offload", kv).ok());
  return (*planner)->Plan(problem);
}

void CheckClean(const Policy& p) {
  absl::StatusOr<CheckReport> r = CheckPolicy(Request(), p, CheckOptionsFor(p));
  REQUIRE(r.ok());
  INFO(testing::ViolationMessages(*r));
  CHECK(r->clean());
}

TEST_CASE("kv cache: K0 and K1 are KV-cache tensors, the temporaries are not", "[hyperoffload][kv]") {
  CHECK(IsKvCacheTensor(Request(), 0, 0, 0));
  CHECK(IsKvCacheTensor(Request(), 0, 1, 0));
  CHECK_FALSE(IsKvCacheTensor(Request(), 0, 2, 0));  // temporary, one use
  CHECK_FALSE(IsKvCacheTensor(Request(), 0, 0, 101));  // below min_bytes
  // Gaps with at least one op between the uses: K0 1->5, 5->9; K1 3->7,
  // 7->11 (0->1 and 2->3 are adjacent).
  const std::vector<KvWindow> w = FindKvWindows(Request(), 0, 0);
  REQUIRE(w.size() == 4);
  CHECK((w[0].tensor == 0 && w[0].last_use == 1 && w[0].next_use == 5));
  CHECK((w[1].tensor == 0 && w[1].last_use == 5 && w[1].next_use == 9));
  CHECK((w[2].tensor == 1 && w[2].last_use == 3 && w[2].next_use == 7));
  CHECK((w[3].tensor == 1 && w[3].last_use == 7 && w[3].next_use == 11));
}

TEST_CASE("kv cache: offloading K0 lowers the peak by its 100 bytes", "[hyperoffload][kv]") {
  // Budget 200. Every gap has 300 ns of compute: scores tie, tensor order.
  // K0 1->5: Store after op 1 (200..300 ns) → Detach at op 2; Prefetch at
  //   the latest op starting by 500 - 100 = 400: op 4. Off during op 3.
  // K0 5->9: the tier's copy is valid (K0 is read-only): Detach after op 5
  //   without a Store (clean); Prefetch at op 8 (800..900 ns). Off during
  //   ops 6 and 7: op 6 holds 300 - 100 = 200 bytes, the budget; stop.
  const absl::StatusOr<Policy> p = Plan(Problem(200), "fit");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CheckClean(*p);
  CHECK(Items(*p) == std::vector<Item>{{0, 1, 2, 4, 5, false}, {0, 5, 5, 8, 9, true}});
  CHECK(p->expected_peak_bytes == 200);
  CHECK(p->expected_overhead_ns == 0);
  // Simulated: the Store runs 200..300 ns, the Prefetches 400..500 and
  // 800..900, each hidden by one op: 12 x 100 ns, no stall; one Store of
  // 100 bytes, two Prefetches of 100.
  absl::StatusOr<SimulationResult> s = Simulate(Request(), *p, {.device = Problem(200).device});
  REQUIRE(s.ok());
  CHECK(s->iteration_time_ns == 1200);
  CHECK(s->stall_ns == 0);
  CHECK(s->peak_bytes == 200);
  REQUIRE_FALSE(s->tiers.empty());
  CHECK(s->tiers[0].bytes_stored == 100);
  CHECK(s->tiers[0].bytes_loaded == 200);
  CHECK(s->tiers[0].store_busy_ns == 100);
  CHECK(s->tiers[0].load_busy_ns == 200);
}

TEST_CASE("kv cache: kv_offload=all offloads every gap of both caches", "[hyperoffload][kv]") {
  // Budget 1000 (everything fits), all four windows:
  //   K0 1->5: Detach at 2, Prefetch at 4 (off op 3)
  //   K0 5->9: clean, Detach at 5, Prefetch at 8 (off 6, 7)
  //   K1 3->7: Store after op 3 (400..500 ns) → Detach at op 4; Prefetch at
  //            the latest op starting by 700 - 100: op 6 (off op 5)
  //   K1 7->11: clean, Detach at 7, Prefetch at 10 (off 8, 9)
  // Bytes per op: 100 100 200 100 200 100 200 100 100 100 200 100: peak 200,
  // 100 below the unswapped 300.
  const absl::StatusOr<Policy> p = Plan(Problem(1000), "all");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CheckClean(*p);
  CHECK(Items(*p) == std::vector<Item>{{0, 1, 2, 4, 5, false},
                                       {1, 3, 4, 6, 7, false},
                                       {0, 5, 5, 8, 9, true},
                                       {1, 7, 7, 10, 11, true}});
  absl::StatusOr<SimulationResult> s = Simulate(Request(), *p, {.device = Problem(1000).device});
  REQUIRE(s.ok());
  CHECK(s->iteration_time_ns == 1200);
  CHECK(s->peak_bytes == 200);
  CHECK(s->tiers[0].bytes_stored == 200);  // one Store per cache
  CHECK(s->tiers[0].bytes_loaded == 400);  // one Prefetch per decode read
}

TEST_CASE("kv cache: a remote tier holds one cache, the host the other", "[hyperoffload][kv]") {
  // Remote tier: 2 B/ns both ways (a 100-byte copy takes 50 ns), room for
  // 100 bytes. kv_offload=all, tier auto: K0's first window takes the
  // remote room (its later window shares the tier without more room); K1
  // finds none and goes to the host. The ops are those of the host case:
  // K0 Store 200..250 ns (Detach at op 2), Prefetches 450..500 (issued at
  // op 4) and 850..900 (op 8); K1 Store 400..500 ns on the host, as before.
  PlanningProblem problem = Problem(1000);
  problem.device.tiers.push_back({.name = "remote", .capacity_bytes = 100,
                                  .store_bandwidth_bytes_per_s = 2e9,
                                  .load_bandwidth_bytes_per_s = 2e9});
  const absl::StatusOr<Policy> p = Plan(problem, "all");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CheckClean(*p);
  CHECK(Items(*p) == std::vector<Item>{{0, 1, 2, 4, 5, false},
                                       {1, 3, 4, 6, 7, false},
                                       {0, 5, 5, 8, 9, true},
                                       {1, 7, 7, 10, 11, true}});
  for (const PolicyItem& it : p->items) CHECK(it.tier == (it.tensor_id == 0 ? 1 : 0));
  absl::StatusOr<SimulationResult> s = Simulate(Request(), *p, {.device = problem.device});
  REQUIRE(s.ok());
  CHECK(s->iteration_time_ns == 1200);
  REQUIRE(s->tiers.size() == 2);
  CHECK(s->tiers[1].bytes_stored == 100);
  CHECK(s->tiers[1].bytes_loaded == 200);
  CHECK(s->tiers[1].store_busy_ns == 50);
  CHECK(s->tiers[1].load_busy_ns == 100);
  CHECK(s->tiers[1].peak_bytes == 100);
  CHECK(s->tiers[0].bytes_stored == 100);
  CHECK(s->tiers[0].bytes_loaded == 200);
}

TEST_CASE("kv cache: kv_offload=off judges the caches as activations", "[hyperoffload][kv]") {
  // As an activation, a 300 ns gap needs min_idle_ratio 2 x (Store 100 +
  // Prefetch 100) = 400 ns: no gap qualifies, the peak stays 300.
  const absl::StatusOr<Policy> p = Plan(Problem(200), "off");
  CHECK(p.status().code() == absl::StatusCode::kResourceExhausted);
  INFO(p.status().message());
  CHECK(std::string(p.status().message()).find("peaks at 300 B at op 6 (aten::mm), 100 B over the budget of 200 B") !=
        std::string::npos);
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

// Randomized cross-check on synthesized requests (synth --inference): with
// kv_offload=all and a link fast enough that every Store completes within
// an op, the policy holds exactly the naive count of windows — every layer's
// prompt K and V, G gaps each (prefill attention → step 0, step t → t + 1)
// — one Store per tensor and clean windows after it, passes the checker,
// and the simulated peak is at most the unswapped one.
TEST_CASE("kv cache: random requests, all windows, one Store per tensor", "[hyperoffload][kv]") {
  const uint64_t seed = 20261126;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 12; ++trial) {
    SynthOptions o;
    o.model = *ModelPreset("llama2-7b");
    o.model.layers = 1 + static_cast<int32_t>(rng() % 3);
    o.model.hidden_size = 64;
    o.model.num_heads = 4;
    o.model.num_kv_heads = rng() % 2 == 0 ? 4 : 2;
    o.model.ffn_hidden_size = 128;
    o.model.vocab_size = 256;
    o.device.h2d_bandwidth_bytes_per_s = 1e15;
    o.device.d2h_bandwidth_bytes_per_s = 1e15;
    o.inference = true;
    o.micro_batch_sequences = 1 + static_cast<int32_t>(rng() % 3);
    o.seq_length_tokens = 64 * (1 + static_cast<int64_t>(rng() % 8));
    o.generate_tokens = 1 + static_cast<int32_t>(rng() % 6);
    INFO("trial " << trial << ": layers " << o.model.layers << ", kv heads "
                  << o.model.num_kv_heads << ", batch " << o.micro_batch_sequences
                  << ", prompt " << o.seq_length_tokens << ", generate " << o.generate_tokens);
    absl::StatusOr<Trace> t = SynthesizeTrace(o);
    REQUIRE(t.ok());
    absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*t);
    REQUIRE(curve.ok());
    PlanningProblem problem{.trace = &*t,
                            .iteration = 0,
                            .device = {.capacity_bytes = int64_t{1} << 40,
                                       .h2d_bandwidth_bytes_per_s = 1e15,
                                       .d2h_bandwidth_bytes_per_s = 1e15},
                            .curve = &*curve};
    absl::StatusOr<std::unique_ptr<Planner>> planner = CreatePlanner("hyperoffload");
    REQUIRE(planner.ok());
    REQUIRE((*planner)->SetOption("min_tensor_bytes", "0").ok());
    REQUIRE((*planner)->SetOption("kv_offload", "all").ok());
    absl::StatusOr<Policy> p = (*planner)->Plan(problem);
    INFO(p.status().ToString());
    REQUIRE(p.ok());
    const size_t expected = 2 * static_cast<size_t>(o.model.layers) * o.generate_tokens;
    CHECK(p->items.size() == expected);
    std::map<uint64_t, int> stores;
    for (const PolicyItem& it : p->items) {
      CHECK(IsKvCacheTensor(*t, 0, static_cast<TensorId>(it.tensor_id), 0));
      stores[it.tensor_id] += it.clean ? 0 : 1;
    }
    CHECK(stores.size() == 2 * static_cast<size_t>(o.model.layers));
    for (const auto& [tensor, n] : stores) CHECK(n == 1);
    absl::StatusOr<CheckReport> r = CheckPolicy(*t, *p, CheckOptionsFor(*p));
    REQUIRE(r.ok());
    INFO(testing::ViolationMessages(*r));
    CHECK(r->clean());
    absl::StatusOr<SimulationResult> s = Simulate(*t, *p, {.device = problem.device});
    REQUIRE(s.ok());
    CHECK(s->peak_bytes <= curve->peak_unswapped().bytes);
  }
}

}  // namespace
}  // namespace swapplan
