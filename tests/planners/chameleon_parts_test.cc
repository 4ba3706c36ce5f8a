// The Chameleon planner's parts: the MRL and range-max trees against naive
// references on random inputs, logical layers (segments, OTHER ops,
// micro-batches), swap windows with several micro-batches, the layer
// count's sources, Eq. (2) normalisations and the d2h queue.
#include <random>

#include <catch2/catch.hpp>

#include "support/test_seed.h"
#include "support/test_traces.h"
#include "swapplan/planners/chameleon/candidates.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "planners/chameleon/layer_simulator.h"
#include "swapplan/planners/chameleon/logical_layers.h"
#include "swapplan/planners/chameleon/mrl.h"
#include "planners/chameleon/range_max_tree.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

TEST_CASE("MRL: against a naive array on random reductions", "[mrl]") {
  const uint64_t seed = testing::TestSeed("chameleon parts (windows)");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 50; ++round) {
    const int32_t n = static_cast<int32_t>(uni(1, 200));
    const int64_t budget = 500;
    std::vector<int64_t> bytes(n);
    for (int64_t& b : bytes) b = uni(0, 1000);
    MemoryReductionList mrl;
    mrl.Reset(bytes, budget);
    std::vector<int64_t> need(n);
    for (int32_t i = 0; i < n; ++i) need[i] = std::max<int64_t>(0, bytes[i] - budget);
    for (int step = 0; step < 60; ++step) {
      int32_t lo = static_cast<int32_t>(uni(-2, n + 1));
      int32_t hi = static_cast<int32_t>(uni(lo - 3, n + 2));
      const int64_t v = uni(1, 200);
      int32_t dropped = 0;
      for (int32_t i = std::max(lo, 0); i <= std::min(hi, n - 1); ++i) {
        if (need[i] > 0) {
          need[i] -= v;
          if (need[i] <= 0) {
            need[i] = 0;
            ++dropped;
          }
        }
      }
      CHECK(mrl.Reduce(lo, hi, v) == dropped);
      int32_t a = static_cast<int32_t>(uni(-1, n)), b = static_cast<int32_t>(uni(-1, n));
      int32_t count = 0, first = -1, last = -1;
      for (int32_t i = std::max(a, 0); i <= std::min(b, n - 1); ++i) {
        if (need[i] > 0) {
          ++count;
          if (first < 0) first = i;
          last = i;
        }
      }
      CHECK(mrl.CountIn(a, b) == count);
      CHECK(mrl.FirstIn(a, b) == first);
      CHECK(mrl.LastIn(a, b) == last);
    }
    int32_t active = 0;
    for (int32_t i = 0; i < n; ++i) {
      CHECK(mrl.need(i) == need[i]);
      active += need[i] > 0;
    }
    CHECK(mrl.size() == active);
    int32_t in_runs = 0;
    for (const MrlRange& r : mrl.Ranges()) {
      in_runs += r.last_op - r.first_op + 1;
      CHECK(need[r.max_op] == r.max_need_bytes);
      for (int32_t i = r.first_op; i <= r.last_op; ++i) {
        CHECK(need[i] > 0);
        CHECK(need[i] <= r.max_need_bytes);
      }
    }
    CHECK(in_runs == active);
  }
}

TEST_CASE("MRL: nothing above the budget", "[mrl]") {
  MemoryReductionList mrl;
  std::vector<int64_t> bytes = {10, 20, 30};
  mrl.Reset(bytes, 30);
  CHECK(mrl.empty());
  CHECK(mrl.CountIn(0, 2) == 0);
  CHECK(mrl.LastIn(0, 2) == -1);
  CHECK(mrl.Reduce(0, 2, 5) == 0);
  CHECK(mrl.Ranges().empty());
}

TEST_CASE("range-max tree: against a naive array", "[range_max]") {
  const uint64_t seed = testing::TestSeed("chameleon parts (selection)");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 50; ++round) {
    const int32_t n = static_cast<int32_t>(uni(1, 100));
    std::vector<int64_t> v(n);
    for (int64_t& x : v) x = uni(-50, 50);
    RangeMaxTree<int64_t> t(v);
    for (int step = 0; step < 60; ++step) {
      int32_t lo = static_cast<int32_t>(uni(0, n - 1)), hi = static_cast<int32_t>(uni(0, n - 1));
      if (uni(0, 1) == 0) {
        const int64_t d = uni(-20, 20);
        t.Add(lo, hi, d);
        for (int32_t i = lo; i <= hi; ++i) v[i] += d;
      }
      const int64_t x = uni(-60, 60);
      int32_t last_ge = -1, last_gt = -1, first_ge = -1;
      int64_t mx = std::numeric_limits<int64_t>::lowest() / 4;
      for (int32_t i = lo; i <= hi; ++i) {
        if (v[i] >= x) last_ge = i;
        if (v[i] > x) last_gt = i;
        if (v[i] >= x && first_ge < 0) first_ge = i;
        mx = std::max(mx, v[i]);
      }
      CHECK(t.LastAtLeast(lo, hi, x) == last_ge);
      CHECK(t.LastAbove(lo, hi, x) == last_gt);
      CHECK(t.FirstAtLeast(lo, hi, x) == first_ge);
      CHECK(t.Max(lo, hi) == mx);
      const int32_t i = static_cast<int32_t>(uni(0, n - 1));
      CHECK(t.Get(i) == v[i]);
    }
  }
}

// Gradient accumulation over two micro-batches with an OTHER op inside the
// first forward pass, 12 ops of 10 ns:
//   op 0  F mb0   a0 = f(s)
//   op 1  OTHER   (comm: reads a0)
//   op 2  F mb0   reads a0
//   op 3  B mb0
//   op 4  B mb0
//   op 5  B mb0   reads a0
//   op 6  F mb1   a1 = f(s)
//   op 7  F mb1   reads a1
//   op 8  B mb1
//   op 9  B mb1   reads s
//   op 10 B mb1   reads a1
//   op 11 O
const char* kGradAccum = R"({"format": "swapplan-trace", "metadata": {},
  "tensors": [{"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
              {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"},
              {"id": 3, "size_bytes": 100, "kind": "INPUT"}],
  "iterations": [{"wall_time_ns": 120, "ops": [
    {"name": "f", "phase": "FORWARD", "micro_batch": 0, "inputs": [3], "outputs": [1]},
    {"name": "comm", "phase": "OTHER", "inputs": [1]},
    {"name": "f", "phase": "FORWARD", "micro_batch": 0, "inputs": [1]},
    {"name": "b", "phase": "BACKWARD", "micro_batch": 0},
    {"name": "b", "phase": "BACKWARD", "micro_batch": 0},
    {"name": "b", "phase": "BACKWARD", "micro_batch": 0, "inputs": [1]},
    {"name": "f", "phase": "FORWARD", "micro_batch": 1, "inputs": [3], "outputs": [2]},
    {"name": "f", "phase": "FORWARD", "micro_batch": 1, "inputs": [2]},
    {"name": "b", "phase": "BACKWARD", "micro_batch": 1},
    {"name": "b", "phase": "BACKWARD", "micro_batch": 1, "inputs": [3]},
    {"name": "b", "phase": "BACKWARD", "micro_batch": 1, "inputs": [2]},
    {"name": "opt", "phase": "OPTIMIZER"}]}]})";

TEST_CASE("logical layers: one set per micro-batch pass, OTHER ops absorbed", "[layers]") {
  Trace t = testing::TraceFromJson(kGradAccum);
  OpTimeline tl = *OpTimeline::Build(t, 0, OpTimeModel::kEq1);
  LogicalLayers ll = BuildLogicalLayers(t, 0, tl, 2, 1);
  // Segments: F mb0 ops 0..2 (the OTHER op joins it), B mb0 3..5, F mb1
  // 6..7, B mb1 8..10, OPT 11. Three ops in two layers: [0, 1), [1, 3).
  CHECK(ll.num_segments == 5);
  REQUIRE(ll.layers.size() == 9);
  struct L {
    int32_t begin, end;
    LayerType type;
    int32_t mb;
  };
  const std::vector<L> want = {{0, 1, LayerType::kForward, 0},   {1, 3, LayerType::kForward, 0},
                               {3, 4, LayerType::kBackward, 0},  {4, 6, LayerType::kBackward, 0},
                               {6, 7, LayerType::kForward, 1},   {7, 8, LayerType::kForward, 1},
                               {8, 9, LayerType::kBackward, 1},  {9, 11, LayerType::kBackward, 1},
                               {11, 12, LayerType::kOptimizer, -1}};
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("layer " << i);
    CHECK(ll.layers[i].begin_op == want[i].begin);
    CHECK(ll.layers[i].end_op == want[i].end);
    CHECK(ll.layers[i].type == want[i].type);
    CHECK(ll.layers[i].micro_batch == want[i].mb);
  }
  CHECK(ll.op_type[1] == LayerType::kForward);
  CHECK(ll.layer_of_op[2] == 1);
  // Eq. (1): 100 ns / 10 ops = 10 ns per op; layer 1 has two.
  CHECK(ll.layers[1].time_ns == 20.0);
  CHECK(ll.layers[1].start_ns == 10.0);
}

TEST_CASE("swap windows: each micro-batch's forward to its own backward", "[candidates]") {
  Trace t = testing::TraceFromJson(kGradAccum);
  OpTimeline tl = *OpTimeline::Build(t, 0, OpTimeModel::kEq1);
  LogicalLayers ll = BuildLogicalLayers(t, 0, tl, 2, 1);
  // 100 bytes at 100 B/ns: 1 ns copies, completing during the op after the
  // last forward use.
  std::vector<SwapWindow> w =
      FindSwapWindows(t, 0, ll, tl, 1e11, 1e11, 0, IdleWindowStart::kEarliestRelease);
  // a0: uses 0, 1 (OTHER, counted as forward), 2, 5 -> window 2->5; copy
  // 30..31 ns -> earliest release op 3, coverage 4..4.
  // a1: uses 6, 7, 10 -> window 7->10 (across nothing of mb0).
  // s: uses 0, 6, 9 -> only the gap 6->9 is forward->backward.
  REQUIRE(w.size() == 3);
  CHECK(t.tensor(w[0].tensor).trace_id == 1);
  CHECK(w[0].last_fwd_op == 2);
  CHECK(w[0].first_bwd_op == 5);
  CHECK(w[0].earliest_release_op == 3);
  CHECK(w[0].cover_begin == 4);
  CHECK(w[0].cover_end() == 4);
  CHECK(t.tensor(w[1].tensor).trace_id == 2);
  CHECK(w[1].last_fwd_op == 7);
  CHECK(w[1].first_bwd_op == 10);
  CHECK(t.tensor(w[2].tensor).trace_id == 3);
  CHECK(w[2].last_fwd_op == 6);
  CHECK(w[2].first_bwd_op == 9);
  // With 1 B/ns the copies take 100 ns: every copy would complete after
  // its tensor's next use (a0: at 130 ns, past op 5's end at 60): no
  // window at all.
  CHECK(FindSwapWindows(t, 0, ll, tl, 1e9, 1e9, 0, IdleWindowStart::kEarliestRelease).empty());
}

TEST_CASE("swap windows: a 1F1B stage keeps micro-batch 0's window across F1", "[candidates]") {
  // F0 (ops 0, 1) F1 (2, 3) B0 (4, 5) B1 (6, 7).
  Trace t = testing::TraceFromJson(R"({"format": "swapplan-trace", "metadata": {},
    "tensors": [{"id": 1, "size_bytes": 100, "kind": "ACTIVATION"},
                {"id": 2, "size_bytes": 100, "kind": "ACTIVATION"}],
    "iterations": [{"wall_time_ns": 80, "ops": [
      {"name": "f", "phase": "FORWARD", "micro_batch": 0, "outputs": [1]},
      {"name": "f", "phase": "FORWARD", "micro_batch": 0, "inputs": [1]},
      {"name": "f", "phase": "FORWARD", "micro_batch": 1, "outputs": [2]},
      {"name": "f", "phase": "FORWARD", "micro_batch": 1, "inputs": [2]},
      {"name": "b", "phase": "BACKWARD", "micro_batch": 0},
      {"name": "b", "phase": "BACKWARD", "micro_batch": 0, "inputs": [1]},
      {"name": "b", "phase": "BACKWARD", "micro_batch": 1, "inputs": [2]},
      {"name": "b", "phase": "BACKWARD", "micro_batch": 1}]}]})");
  OpTimeline tl = *OpTimeline::Build(t, 0, OpTimeModel::kEq1);
  LogicalLayers ll = BuildLogicalLayers(t, 0, tl, 1, 1);
  CHECK(ll.layers.size() == 4);  // F0, F1, B0, B1
  CHECK(ll.layers[1].micro_batch == 1);
  std::vector<SwapWindow> w =
      FindSwapWindows(t, 0, ll, tl, 1e12, 1e12, 0, IdleWindowStart::kEarliestRelease);
  REQUIRE(w.size() == 2);
  CHECK(w[0].last_fwd_op == 1);  // mb 0: across F1 to B0
  CHECK(w[0].first_bwd_op == 5);
  CHECK(w[1].last_fwd_op == 3);  // mb 1: across B0 to B1
  CHECK(w[1].first_bwd_op == 6);
}

TEST_CASE("layer count: option, layer hints, metadata, default", "[layers]") {
  Trace hints = testing::TraceFromJson(R"({"format": "swapplan-trace",
    "metadata": {"model_layers": 32},
    "tensors": [],
    "iterations": [{"wall_time_ns": 10, "ops": [
      {"name": "f", "phase": "FORWARD", "layer": 4}, {"name": "f", "phase": "FORWARD", "layer": 5},
      {"name": "f", "phase": "FORWARD", "layer": 5}, {"name": "b", "phase": "BACKWARD", "layer": 9}]}]})");
  LayerCountSource src;
  CHECK(ResolveLayerCount(hints, 0, 7, &src) == 7);
  CHECK(src == LayerCountSource::kOption);
  CHECK(ResolveLayerCount(hints, 0, 0, &src) == 2);  // forward hints 4, 5
  CHECK(src == LayerCountSource::kLayerHints);
  Trace meta = testing::TraceFromJson(R"({"format": "swapplan-trace",
    "metadata": {"model_layers": 32}, "tensors": [],
    "iterations": [{"wall_time_ns": 10, "ops": [{"name": "f", "phase": "FORWARD"}]}]})");
  CHECK(ResolveLayerCount(meta, 0, 0, &src) == 32);
  CHECK(src == LayerCountSource::kMetadata);
  Trace none = testing::TraceFromJson(R"({"format": "swapplan-trace", "metadata": {},
    "tensors": [], "iterations": [{"wall_time_ns": 10, "ops": [{"name": "f", "phase": "FORWARD"}]}]})");
  CHECK(ResolveLayerCount(none, 0, 0, &src) == kDefaultLogicalLayers);
  CHECK(src == LayerCountSource::kDefault);
  CHECK(LayerCountSourceName(src) == "default");
}

TEST_CASE("Eq. (2): max and min-max normalisation", "[candidates]") {
  // Three windows of 100, 200, 400 bytes covering 1, 2 and 4 MREs of ops
  // 0..3 (all need 1 byte).
  std::vector<SwapWindow> w(3);
  w[0].size_bytes = 100, w[0].cover_begin = 0, w[0].first_bwd_op = 1;  // covers op 0
  w[1].size_bytes = 200, w[1].cover_begin = 0, w[1].first_bwd_op = 2;  // ops 0..1
  w[2].size_bytes = 400, w[2].cover_begin = 0, w[2].first_bwd_op = 4;  // ops 0..3
  MemoryReductionList mrl;
  std::vector<int64_t> bytes = {11, 11, 11, 11, 0};
  mrl.Reset(bytes, 10);
  std::vector<int32_t> all = {0, 1, 2};
  // max: N^ = 1/4, 2/4, 1; S^ = 1/4, 1/2, 1; C = 2 -> 0.75, 1.5, 3.
  std::vector<ScoredCandidate> m = ScoreCandidates(w, all, mrl, 2.0, ScoreNormalization::kMax);
  REQUIRE(m.size() == 3);
  CHECK(m[0].window == 2);
  CHECK(m[0].score == Approx(3.0));
  CHECK(m[1].score == Approx(1.5));
  CHECK(m[2].score == Approx(0.75));
  // min-max: N^ = 0, 1/3, 1; S^ = 0, 1/3, 1 -> 0, 1, 3.
  std::vector<ScoredCandidate> mm =
      ScoreCandidates(w, all, mrl, 2.0, ScoreNormalization::kMinMax);
  CHECK(mm[0].score == Approx(3.0));
  CHECK(mm[1].score == Approx(1.0));
  CHECK(mm[2].score == Approx(0.0));
  // One candidate: min-max gives 1 for both terms.
  std::vector<int32_t> one = {1};
  CHECK(ScoreCandidates(w, one, mrl, 2.0, ScoreNormalization::kMinMax)[0].score == Approx(3.0));
}

TEST_CASE("d2h queue estimate: against a naive FIFO", "[simulator]") {
  const uint64_t seed = testing::TestSeed("chameleon parts (timing)");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto real = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  for (int round = 0; round < 30; ++round) {
    const int n = 1 + static_cast<int>(rng() % 60);
    std::vector<double> ready(n), copy(n);
    double t = 0;
    for (int i = 0; i < n; ++i) {
      t += real(0, 10);  // FIFO slots: ready times non-decreasing
      ready[i] = t;
      copy[i] = real(0.5, 30);
    }
    D2hQueue q(ready, copy);
    std::vector<bool> active(n, false);
    for (int step = 0; step < 80; ++step) {
      const int slot = static_cast<int>(rng() % n);
      if (rng() % 2) {
        active[slot] = !active[slot];
        q.SetActive(slot, active[slot]);
      }
      double free_at = -1e300, done = 0;
      for (int i = 0; i <= slot; ++i) {
        if (!active[i] && i != slot) continue;
        done = std::max(ready[i], free_at) + copy[i];
        free_at = done;
      }
      CHECK(q.CompletionIfActive(slot) == Approx(done));
    }
  }
}

TEST_CASE("d2h queue: copies wait for each other; late ones are dropped", "[simulator]") {
  // Four FORWARD ops of 100 ns; L = 4 gives one layer per op.
  Trace t = testing::TraceFromJson(R"({"format": "swapplan-trace", "metadata": {},
    "tensors": [], "iterations": [{"wall_time_ns": 400, "ops": [
      {"name": "f", "phase": "FORWARD"}, {"name": "f", "phase": "FORWARD"},
      {"name": "f", "phase": "FORWARD"}, {"name": "f", "phase": "FORWARD"}]}]})");
  OpTimeline tl = *OpTimeline::Build(t, 0, OpTimeModel::kEq1);
  LogicalLayers ll = BuildLogicalLayers(t, 0, tl, 4, 1);
  LayerBudgets budgets(ll, LinkBudget::kPerDirection);
  // Two copies ready after op 0 (100 ns): 50 ns and 100 ns. The first ends
  // at 150 (op 1), the second waits: 150..250 -> op 2. A third of 100 ns,
  // ready at 100, would end at 350 (op 3) >= swap-in 4 - 1: dropped, and the
  // stream stays free for nothing after it.
  std::vector<SwapOutRequest> req = {{0, 3, 50, 50.0}, {0, 4, 100, 100.0}, {0, 4, 100, 100.0}};
  std::vector<SwapOutResult> r =
      CompleteSwapOuts(req, SwapOutCompletion::kD2hQueue, ll, tl, &budgets);
  CHECK(r[0].release_op == 1);
  CHECK(r[1].release_op == 2);
  CHECK(r[1].start_ns == 150.0);
  CHECK(r[2].dropped);
  // Busy time charged per layer (layer i = op i, [100 i, 100 i + 100)):
  // 100..150 and 150..250 -> layer 1: 50 + 50, layer 2: 50.
  CHECK(budgets.d2h_used_ns(0) == 0.0);
  CHECK(budgets.d2h_used_ns(1) == 100.0);
  CHECK(budgets.d2h_used_ns(2) == 50.0);
}

TEST_CASE("options: every recorded parameter can be set again; bad names and values",
          "[options]") {
  // A non-default value for every option, so the round trip cannot pass by
  // leaving the defaults alone.
  ChameleonOptions o;
  o.layers = 7;
  o.optimizer_layers = 2;
  o.score_c = 2.5;
  o.min_tensor_bytes = 4096;
  o.normalization = ScoreNormalization::kMinMax;
  o.link_budget = LinkBudget::kShared;
  o.swap_out_completion = SwapOutCompletion::kLayerSearch;
  o.idle_window_start = IdleWindowStart::kLastForwardUse;
  o.candidate_rebuild = CandidateRebuild::kPerSelection;
  o.stall_fallback = StallFallback::kOnePerPass;
  o.op_time_model = OpTimeModel::kEq1;
  o.iteration_time_ns = 1500;
  o.runtime_key_mask_bits = 64;
  o.max_rounds = 3;
  o.maximal_fallback = false;
  o.release_wait = ReleaseWait::kNever;
  ChameleonOptions copy;
  for (const auto& [name, value] : o.ToParameters()) {
    INFO(name << "=" << value);
    REQUIRE(copy.Set(name, value).ok());
  }
  CHECK(copy.ToParameters() == o.ToParameters());

  // CLI spellings: dashes for underscores, units for sizes and durations.
  ChameleonOptions d;
  REQUIRE(d.Set("min-tensor-bytes", "512KiB").ok());
  CHECK(d.min_tensor_bytes == 524288);  // 512 * 1024
  REQUIRE(d.Set("iteration-time-ns", "2ms").ok());
  CHECK(d.iteration_time_ns == 2000000);

  const absl::Status unknown = d.Set("layer", "3");
  CHECK(unknown.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(unknown.message()),
             Catch::StartsWith("chameleon has no option 'layer' (known: layers, "));
  const absl::Status bad = d.Set("normalization", "mean");
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK(KindOf(bad) == ErrorKind::kUsage);
  CHECK(bad.message() == "chameleon option normalization: 'mean' is not one of max, minmax");
  CHECK(d.normalization == ScoreNormalization::kMax);  // unchanged

  // The planner validates before it keeps a value: a range error leaves the
  // options as they were.
  ChameleonPlanner planner;
  REQUIRE(planner.SetOption("min-tensor-bytes", "0").ok());
  CHECK(planner.options().min_tensor_bytes == 0);
  const absl::Status range = planner.SetOption("max-rounds", "0");
  CHECK(range.code() == absl::StatusCode::kInvalidArgument);
  CHECK(range.message() == "chameleon options: max_rounds is 0; must be >= 1");
  CHECK(planner.options().max_rounds == 8);
}

}  // namespace
}  // namespace swapplan
