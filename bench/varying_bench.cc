// Runtime-grade costs of issue 8 (targets on this 2-core machine: under
// 50 ns per key update and per lookup, under 1 ms of stage tracking per
// iteration of 100,000 ops):
//
//   BM_KeyUpdate        RuntimeTensorTable::Update: one use of a tensor
//   BM_FuzzyOnOp/...    FuzzyMatcher::OnOp per use against a policy of 1,000
//                       items: key update + bucket hash + hash-map probe
//                       (+ the match when it hits); "hits" replays the very
//                       op stream the items were taken from, so all 1,000
//                       match; "misses" a stream with other tensors
//   BM_NaiveOnOp        NaiveMatcher::OnOp per use, same stream
//   BM_StageTracker/... Observe on 100,000-op iterations (300 op names,
//                       Zipf-like frequencies), histogram and op-id cosine
//
//   ninja -C build bench/varying_bench && build/bench/varying_bench
//
// The op stream: 100,000 ops, half FORWARD then half BACKWARD, 1-4 tensors
// per op drawn from the 64 most recent ones or new (70,000 tensors).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "swapplan/varying/matcher.h"
#include "swapplan/varying/stage_tracker.h"

namespace swapplan::bench {
namespace {

constexpr int32_t kNames = 300;
constexpr int32_t kOps = 100000;

struct Stream {
  std::vector<NameId> name;
  std::vector<Phase> phase;
  std::vector<uint32_t> begin;  // ops' uses: slots[begin[i] .. begin[i+1])
  std::vector<int32_t> slots;
  int32_t num_slots = 0;
  std::vector<OpKeyCode> codes;
};

Stream MakeStream(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Stream s;
  // Zipf-like name frequencies: name n with weight 1 / (n + 1).
  std::vector<double> w(kNames);
  for (int32_t n = 0; n < kNames; ++n) w[n] = 1.0 / (n + 1);
  std::discrete_distribution<int32_t> pick_name(w.begin(), w.end());
  s.codes.resize(kNames);
  for (int32_t n = 0; n < kNames; ++n) {
    s.codes[n].rank_byte = static_cast<uint8_t>(std::min(n, 255));
    s.codes[n].one_hot = n < 32 ? (uint64_t{1} << n) : 0;
  }
  std::vector<int32_t> recent;
  s.begin.push_back(0);
  for (int32_t i = 0; i < kOps; ++i) {
    s.name.push_back(pick_name(rng));
    s.phase.push_back(i < kOps / 2 ? Phase::kForward : Phase::kBackward);
    const int32_t uses = 1 + static_cast<int32_t>(rng() % 4);
    for (int32_t u = 0; u < uses; ++u) {
      int32_t slot;
      if (recent.empty() || rng() % 10 < 3) {
        slot = s.num_slots++;
        recent.push_back(slot);
        if (recent.size() > 64) recent.erase(recent.begin());
      } else {
        slot = recent[rng() % recent.size()];
      }
      s.slots.push_back(slot);
    }
    s.begin.push_back(static_cast<uint32_t>(s.slots.size()));
  }
  return s;
}

const Stream& TheStream() {
  static const Stream s = MakeStream(1);
  return s;
}
const Stream& OtherStream() {
  static const Stream s = MakeStream(2);
  return s;
}

// 1,000 items: tensors of the stream at their last use (their key then),
// decision points at those ops.
const MatchablePolicy& ThePolicy() {
  static const MatchablePolicy mp = [] {
    const Stream& s = TheStream();
    RuntimeTensorTable table;
    table.Reset(s.num_slots);
    std::vector<int32_t> last_op(s.num_slots, -1);
    for (int32_t i = 0; i < kOps; ++i) {
      for (uint32_t k = s.begin[i]; k < s.begin[i + 1]; ++k) last_op[s.slots[k]] = i;
    }
    std::vector<int32_t> phase_ordinal(kOps);
    int32_t counts[kNumPhases] = {0, 0, 0, 0};
    for (int32_t i = 0; i < kOps; ++i) phase_ordinal[i] = counts[static_cast<int>(s.phase[i])]++;
    MatchablePolicy p;
    p.codes = s.codes;
    p.source_ops = kOps;
    std::mt19937_64 rng(7);
    std::vector<uint8_t> chosen(s.num_slots, 0);
    for (int32_t n = 0; n < 1000;) {
      uint8_t& c = chosen[rng() % s.num_slots];
      if (c == 0) {
        c = 1;
        ++n;
      }
    }
    for (int32_t i = 0; i < kOps; ++i) {
      for (uint32_t k = s.begin[i]; k < s.begin[i + 1]; ++k) {
        const int32_t slot = s.slots[k];
        if (!table.Update(slot, i, s.codes[s.name[i]])) continue;
        if (chosen[slot] && last_op[slot] == i) {
          MatchableItem m;
          m.item = static_cast<int32_t>(p.items.size());
          m.decision = {s.phase[i], phase_ordinal[i], i};
          m.use_index = static_cast<int32_t>(k - s.begin[i]);
          m.key = table[slot].key;
          m.dtype = DType::kBFloat16;
          m.size_bytes = 1 << 20;
          p.items.push_back(m);
          p.policy.items.emplace_back();
        }
      }
    }
    return p;
  }();
  return mp;
}

void BM_KeyUpdate(benchmark::State& state) {
  const Stream& s = TheStream();
  RuntimeTensorTable table;
  table.Reset(s.num_slots);
  int32_t op = 0;
  int64_t uses = 0;
  for (auto _ : state) {
    for (int32_t i = 0; i < kOps; ++i) {
      const OpKeyCode& code = s.codes[s.name[i]];
      for (uint32_t k = s.begin[i]; k < s.begin[i + 1]; ++k) table.Update(s.slots[k], op, code);
      ++op;
    }
    uses += static_cast<int64_t>(s.slots.size());
    benchmark::DoNotOptimize(table[0].key.op_history);
  }
  state.counters["ns_per_update"] = benchmark::Counter(
      static_cast<double>(uses), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_KeyUpdate)->Unit(benchmark::kMillisecond);

void RunMatcher(benchmark::State& state, MatcherKind kind, const Stream& s) {
  const MatchablePolicy& p = ThePolicy();
  std::unique_ptr<TensorMatcher> m = *CreateMatcher(kind, p, {});
  RuntimeTensorTable table;
  std::vector<MatchDecision> out;
  out.reserve(p.items.size());
  int64_t uses = 0;
  size_t matched = 0;
  for (auto _ : state) {
    state.PauseTiming();
    table.Reset(s.num_slots);
    for (int32_t slot = 0; slot < s.num_slots; ++slot) {
      table.Describe(slot, DType::kBFloat16, 1 << 20, 0);
    }
    m->BeginIteration();
    out.clear();
    state.ResumeTiming();
    for (int32_t i = 0; i < kOps; ++i) {
      m->OnOp(s.name[i], s.phase[i],
              absl::MakeConstSpan(s.slots).subspan(s.begin[i], s.begin[i + 1] - s.begin[i]), table,
              &out);
    }
    uses += static_cast<int64_t>(s.slots.size());
    matched = out.size();
  }
  state.counters["items"] = static_cast<double>(p.items.size());
  state.counters["matched"] = static_cast<double>(matched);
  state.counters["ns_per_use"] = benchmark::Counter(
      static_cast<double>(uses), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_FuzzyOnOp_Hits(benchmark::State& state) {
  RunMatcher(state, MatcherKind::kFuzzy, TheStream());
}
void BM_FuzzyOnOp_Misses(benchmark::State& state) {
  RunMatcher(state, MatcherKind::kFuzzy, OtherStream());
}
void BM_NaiveOnOp(benchmark::State& state) { RunMatcher(state, MatcherKind::kNaive, TheStream()); }
BENCHMARK(BM_FuzzyOnOp_Hits)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FuzzyOnOp_Misses)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NaiveOnOp)->Unit(benchmark::kMillisecond);

void BM_StageTracker(benchmark::State& state) {
  StageTrackerOptions o;
  o.similarity = state.range(0) == 0 ? SequenceSimilarity::kCosineHistogram
                                     : SequenceSimilarity::kCosineOpIds;
  StageTracker t = *StageTracker::Create(o);
  const Stream& a = TheStream();
  const Stream& b = OtherStream();
  bool flip = false;
  for (auto _ : state) {
    // Alternate two different 100,000-op sequences (each Observe compares
    // with the previous one and stores the new one).
    benchmark::DoNotOptimize(t.Observe(flip ? a.name : b.name));
    flip = !flip;
  }
  state.SetLabel(std::string(SequenceSimilarityName(o.similarity)));
}
BENCHMARK(BM_StageTracker)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace swapplan::bench

BENCHMARK_MAIN();
