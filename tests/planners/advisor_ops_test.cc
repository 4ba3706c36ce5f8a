// The Advisor's dataflow graph and genetic operators: the paper's worked
// examples (seed 002 Fig. 4 and Fig. 5), and random graphs checked against a
// naive reference (every pair of ops sharing a tensor that one of them
// writes keeps its recorded order; so do optimizer ops and ops without
// outputs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

#include "planners/advisor_support.h"
#include "support/test_traces.h"
#include "swapplan/planners/advisor/chromosome.h"
#include "swapplan/trace/dataflow.h"

namespace swapplan {
namespace {

std::vector<int32_t> Identity(int32_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<int32_t> Succ(const DataflowGraph& g, int32_t op) {
  absl::Span<const int32_t> s = g.successors(op);
  return {s.begin(), s.end()};
}

// Naive reference: true when `schedule` keeps in recorded order every pair
// of ops that use one tensor with at least one of them writing it, every
// pair of OPTIMIZER ops and every pair of ops without outputs. O(n^2 u).
bool NaiveRespects(const Trace& t, const std::vector<int32_t>& schedule) {
  const int32_t n = t.iteration(0).num_ops();
  std::vector<int32_t> pos(n);
  for (int32_t p = 0; p < n; ++p) pos[schedule[p]] = p;
  auto has = [](absl::Span<const TensorId> v, TensorId x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (int32_t u = 0; u < n; ++u) {
    for (int32_t v = u + 1; v < n; ++v) {
      bool ordered = (t.op(u).phase == Phase::kOptimizer && t.op(v).phase == Phase::kOptimizer) ||
                     (t.op(u).num_outputs == 0 && t.op(v).num_outputs == 0);
      for (TensorId x = 0; x < t.num_tensors() && !ordered; ++x) {
        ordered = has(t.uses(u), x) && has(t.uses(v), x) &&
                  (has(t.outputs(u), x) || has(t.outputs(v), x));
      }
      if (ordered && pos[u] > pos[v]) return false;
    }
  }
  return true;
}

TEST_CASE("dataflow: producer, readers, in-place write, side effects", "[advisor][dataflow]") {
  // op 0 makes X; ops 1 and 2 read it; op 3 updates X in place; op 4 reads
  // the new X; op 5 is independent of all of them; ops 6 and 7 are an
  // all-reduce and an optimizer step (chained: 6 -> 7 also by the data).
  Trace t = testing::TraceFromJson(R"({"tensors": [
      {"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 3, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 4, "size_bytes": 100, "kind": "ACTIVATION"},
      {"id": 5, "size_bytes": 100, "kind": "GRADIENT", "persistent": true},
      {"id": 6, "size_bytes": 100, "kind": "PARAMETER"}],
    "iterations": [{"ops": [
      {"name": "make", "phase": "FORWARD", "outputs": [1]},
      {"name": "read1", "phase": "FORWARD", "inputs": [1], "outputs": [2]},
      {"name": "read2", "phase": "FORWARD", "inputs": [1], "outputs": [3]},
      {"name": "relu_", "phase": "FORWARD", "inputs": [1], "outputs": [1]},
      {"name": "read3", "phase": "FORWARD", "inputs": [1, 2, 3], "outputs": [5]},
      {"name": "other", "phase": "FORWARD", "outputs": [4]},
      {"name": "c10d::allreduce_", "phase": "BACKWARD", "inputs": [5], "outputs": [5]},
      {"name": "sgd_", "phase": "OPTIMIZER", "inputs": [5, 6], "outputs": [6]}]}]})",
                                   "inplace.json");
  absl::StatusOr<DataflowGraph> g = DataflowGraph::Build(t, 0);
  REQUIRE(g.ok());
  CHECK(Succ(*g, 0) == std::vector<int32_t>{1, 2, 3});  // RAW 0->1, 0->2; WAW 0->3
  CHECK(Succ(*g, 1) == std::vector<int32_t>{3, 4});     // WAR 1->3; RAW (tensor 2) 1->4
  CHECK(Succ(*g, 2) == std::vector<int32_t>{3, 4});
  CHECK(Succ(*g, 3) == std::vector<int32_t>{4});        // the new X
  CHECK(Succ(*g, 4) == std::vector<int32_t>{6});        // tensor 5
  CHECK(Succ(*g, 5).empty());                           // free to move anywhere
  CHECK(Succ(*g, 6) == std::vector<int32_t>{7});
  CHECK(g->in_degree(5) == 0);
  CHECK(g->stats().data == 10);
  CHECK(g->ValidateSchedule(Identity(8)).ok());
  // "other" may run first; relu_ may not run before read2.
  CHECK(g->ValidateSchedule({5, 0, 1, 2, 3, 4, 6, 7}).ok());
  absl::Status bad = g->ValidateSchedule({0, 1, 3, 2, 4, 5, 6, 7});
  CHECK(std::string(bad.message()) ==
        "schedule is not a topological order of the dataflow graph: op 3 runs at position 2, "
        "before its predecessor op 2 at position 3");
  CHECK(std::string(g->ValidateSchedule({0, 1, 1, 2, 3, 4, 5, 6}).message()) ==
        "schedule is not a permutation of the iteration's ops: entry 2 is 1 (repeated)");
}

TEST_CASE("dataflow: optimizer ops and outputless ops keep their order", "[advisor][dataflow]") {
  Trace t = testing::TraceFromJson(R"({"tensors": [
      {"id": 1, "size_bytes": 100, "kind": "PARAMETER"},
      {"id": 2, "size_bytes": 100, "kind": "PARAMETER"}],
    "iterations": [{"ops": [
      {"name": "aten::_local_scalar_dense", "phase": "FORWARD", "inputs": [1]},
      {"name": "print", "phase": "FORWARD", "inputs": [2]},
      {"name": "step1", "phase": "OPTIMIZER", "inputs": [1], "outputs": [1]},
      {"name": "step2", "phase": "OPTIMIZER", "inputs": [2], "outputs": [2]}]}]})",
                                   "chain.json");
  absl::StatusOr<DataflowGraph> g = DataflowGraph::Build(t, 0);
  REQUIRE(g.ok());
  // One chain through the ordered ops 0, 1 (no outputs), 2, 3 (optimizer):
  // 0->1, 1->2, 2->3; the data adds 0->2 and 1->3 (write after read).
  CHECK(Succ(*g, 0) == std::vector<int32_t>{1, 2});
  CHECK(Succ(*g, 1) == std::vector<int32_t>{2, 3});
  CHECK(Succ(*g, 2) == std::vector<int32_t>{3});
  CHECK(g->stats().side_effect == 3);
  CHECK(g->stats().data == 2);
  DataflowOptions loose;
  loose.order_optimizer_ops = false;
  loose.order_side_effects = false;
  absl::StatusOr<DataflowGraph> h = DataflowGraph::Build(t, 0, loose);
  REQUIRE(h.ok());
  CHECK(h->num_edges() == 2);  // only the data: 0->2, 1->3
  CHECK(IsCommunicationOpName("c10d::_allgather_base"));
  CHECK(IsCommunicationOpName("HcclAllReduce"));
  CHECK_FALSE(IsCommunicationOpName("aten::add_"));
}

TEST_CASE("schedule crossover: seed 002 Fig. 4", "[advisor][ga]") {
  // Nodes 1..5 as 0..4. SCH1 = [1 2 3 4 5], SCH2 = [2 3 4 1 5], CR = 3:
  // child 1 = SCH2[1..3] = [2 3 4], then 1 and 5 in SCH1's order.
  auto [c1, c2] = CrossoverSchedules({0, 1, 2, 3, 4}, {1, 2, 3, 0, 4}, 3);
  CHECK(c1 == std::vector<int32_t>{1, 2, 3, 0, 4});
  CHECK(c2 == std::vector<int32_t>{0, 1, 2, 3, 4});  // SCH1[1..3], then 4, 5 in SCH2's order
}

TEST_CASE("allocation crossover and repair: seed 002 Fig. 5", "[advisor][ga]") {
  // TS = 1, 2, 3, 4 MB (100..400 bytes); 12 MB (1200 bytes).
  const std::vector<int64_t> sizes = {100, 200, 300, 400};
  const Allocation a1 = {{0, 0, 0, 0}, {4}};     // four 4 MB objects
  const Allocation a2 = {{0, 1, 1, 1}, {8, 1}};  // eight 1 MB, one 4 MB
  CHECK(ExpandCounts(a1) == std::vector<int32_t>{4, 4, 4, 4});
  CHECK(ExpandCounts(a2) == std::vector<int32_t>{8, 1, 1, 1});
  auto [c1, c2] = CrossoverAllocations(a1, a2, 2);
  // CLS_C1 = [1 2 | 1 1] -> repaired [1 2 2 2]; CNTEXT_C1 = [8 1 | 4 4] ->
  // class 2 averages (1 + 4 + 4) / 3 = 3: CNT_C1 = [8 3].
  CHECK(c1.cls == std::vector<int32_t>{0, 1, 1, 1});
  CHECK(c1.cnt == std::vector<int32_t>{8, 3});
  // CLS_C2 = [1 1 | 2 2]; CNTEXT_C2 = [4 4 | 1 1]: CNT_C2 = [4 1].
  CHECK(c2.cls == std::vector<int32_t>{0, 0, 1, 1});
  CHECK(c2.cnt == std::vector<int32_t>{4, 1});
  // C1 uses 8 x 1 + 3 x 4 = 20 MB > 12: each class gives up ceil(8 / (2 x
  // size)) objects: 4 of 1 MB, 1 of 4 MB -> [4 2], exactly 12 MB.
  CHECK(*AllocationBytes(c1, sizes) == 2000);
  REQUIRE(RepairCounts(sizes, {0, 0}, 1200, &c1));
  CHECK(c1.cnt == std::vector<int32_t>{4, 2});
  CHECK(*AllocationBytes(c1, sizes) == 1200);
  // Minimums are kept, and an impossible budget is reported.
  Allocation m = {{0, 1, 1, 1}, {8, 3}};
  REQUIRE(RepairCounts(sizes, {7, 0}, 1200, &m));
  CHECK(m.cnt[0] >= 7);
  CHECK(*AllocationBytes(m, sizes) <= 1200);
  // The minimums alone take 2 x 100 + 2 x 400 = 1000 bytes.
  Allocation tight = {{0, 1, 1, 1}, {1, 1}};
  CHECK_FALSE(RepairCounts(sizes, {2, 2}, 999, &tight));
  CHECK(RepairCounts(sizes, {2, 2}, 1000, &tight));
}

TEST_CASE("pool bytes past int64 are an overflow error, and repair still works",
          "[advisor][ga][overflow]") {
  // Two sizes of 2^62 bytes, one class each: 4 objects of 2^62 = 2^64 bytes
  // do not fit in int64.
  const std::vector<int64_t> sizes = {int64_t{1} << 62, int64_t{1} << 62};
  Allocation a = {{0, 1}, {4, 1}};
  absl::StatusOr<int64_t> bytes = AllocationBytes(a, sizes);
  REQUIRE_FALSE(bytes.ok());
  CHECK(std::string(bytes.status().message()) ==
        "advisor: pool size class 0: 4 objects of 4611686018427387904 bytes bring the pool past "
        "a 64-bit byte count [overflow]");
  // The overflowing pool exceeds even a budget of INT64_MAX = 2^63 - 1: the
  // repair gives objects back one per class and round (every share 2 x 2^62
  // overflows, so each gives 1) until it fits: {4, 1} -> {3, 0} -> {2, 0}
  // -> {1, 0} = 2^62 bytes; class 0 never goes below its minimum of 1.
  REQUIRE(RepairCounts(sizes, {1, 0}, INT64_MAX, &a));
  CHECK(a.cnt == std::vector<int32_t>{1, 0});
  CHECK(*AllocationBytes(a, sizes) == int64_t{1} << 62);
  // Minimums that alone overflow cannot fit any budget.
  Allocation b = {{0, 1}, {0, 0}};
  CHECK_FALSE(RepairCounts(sizes, {2, 1}, INT64_MAX, &b));
  CHECK(b.cnt == std::vector<int32_t>{2, 1});
}

TEST_CASE("class repair clamps every step to 0 or +1", "[advisor][ga]") {
  std::vector<int32_t> cls = {1, 2, 1, 1};  // Fig. 5: the paper's repair
  RepairClasses(&cls);
  CHECK(cls == std::vector<int32_t>{0, 1, 1, 1});
  cls = {0, 0, 2, 3};  // a jump by 2 at the crossover point
  RepairClasses(&cls);
  CHECK(cls == std::vector<int32_t>{0, 0, 1, 2});
}

TEST_CASE("allocation mutation keeps CLS monotone with +0/+1 steps; repair meets the budget",
          "[advisor][ga]") {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    INFO("seed " << seed);
    Rng rng(seed);
    const int32_t n = 1 + static_cast<int32_t>(rng.Uniform(12));
    std::vector<int64_t> sizes(n);
    for (int32_t i = 0; i < n; ++i) sizes[i] = 100 * (i + 1) + static_cast<int64_t>(rng.Uniform(50));
    Allocation a;
    a.cls.resize(n);
    for (int32_t i = 0; i < n; ++i) a.cls[i] = i == 0 ? 0 : a.cls[i - 1] + rng.Bernoulli(0.5);
    a.cnt.resize(a.num_classes());
    for (int32_t& c : a.cnt) c = static_cast<int32_t>(rng.Uniform(20));
    Allocation b = a;
    MutateAllocation(0.3, 0.2, &rng, &b);
    REQUIRE(IsValidAllocation(b));
    for (int32_t c : b.cnt) CHECK(c >= 0);
    auto [c1, c2] = CrossoverAllocations(a, b, 1 + static_cast<int32_t>(rng.Uniform(n)));
    REQUIRE(IsValidAllocation(c1));
    REQUIRE(IsValidAllocation(c2));
    std::vector<int32_t> min(c1.num_classes());
    for (int32_t& m : min) m = static_cast<int32_t>(rng.Uniform(3));
    const int64_t budget = 500 + static_cast<int64_t>(rng.Uniform(20000));
    Allocation r = c1;
    if (RepairCounts(sizes, min, budget, &r)) {
      CHECK(*AllocationBytes(r, sizes) <= budget);
      for (int32_t c = 0; c < r.num_classes(); ++c) CHECK(r.cnt[c] >= min[c]);
    } else {
      // Only when the minimums alone exceed the budget.
      Allocation floor = c1;
      floor.cnt = min;
      CHECK(*AllocationBytes(floor, sizes) > budget);
    }
  }
}

TEST_CASE("schedule crossover and mutation keep every dependency (random graphs)",
          "[advisor][ga]") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);
    testing::RandomDagOptions o;
    o.ops = 6 + static_cast<int32_t>(seed % 20);
    o.params = static_cast<int32_t>(seed % 3);
    Trace t = testing::RandomDag(seed, o);
    absl::StatusOr<DataflowGraph> g = DataflowGraph::Build(t, 0);
    REQUIRE(g.ok());
    const int32_t n = g->num_ops();
    const std::vector<int32_t> recorded = Identity(n);
    REQUIRE(g->ValidateSchedule(recorded).ok());
    Rng rng(seed * 7919);
    std::vector<int32_t> a, b, same;
    MutateSchedule(*g, recorded, 1.0, &rng, &a);  // a random topological order
    MutateSchedule(*g, recorded, 0.5, &rng, &b);
    MutateSchedule(*g, recorded, 0.0, &rng, &same);
    CHECK(same == recorded);  // P = 0 follows the parent exactly
    for (const std::vector<int32_t>* s : {&a, &b}) {
      CHECK(g->ValidateSchedule(*s).ok());
      CHECK(NaiveRespects(t, *s));
    }
    for (int32_t cr = 0; cr <= n; ++cr) {
      auto [c1, c2] = CrossoverSchedules(a, b, cr);
      CHECK(g->ValidateSchedule(c1).ok());
      CHECK(g->ValidateSchedule(c2).ok());
      CHECK(NaiveRespects(t, c1));
    }
  }
}

}  // namespace
}  // namespace swapplan
