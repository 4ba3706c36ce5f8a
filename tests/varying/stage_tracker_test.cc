// Stage tracker (Algorithm 1): stage sequences for hand-made op sequences,
// the two similarity measures on the examples the header names, and the
// tracker's incremental histogram against a plain one on random input.
#include "swapplan/varying/stage_tracker.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

namespace swapplan {
namespace {

std::vector<int32_t> Repeat(int32_t lo, int32_t hi, int32_t times) {
  std::vector<int32_t> v;
  for (int32_t r = 0; r < times; ++r) {
    for (int32_t t = lo; t < hi; ++t) v.push_back(t);
  }
  return v;
}

// Observes each sequence in turn; returns the stage letters (W, G, S).
std::string Stages(StageTracker& tracker, const std::vector<std::vector<int32_t>>& seqs) {
  std::string out;
  for (const std::vector<int32_t>& s : seqs) out += StageName(tracker.Observe(s).stage)[0];
  return out;
}

TEST_CASE("Algorithm 1 on a constant sequence", "[varying][tracker]") {
  // m = 2, n = 5. StableStep counts from 1 (the first iteration compares
  // with itself):
  //   it 0: step 1            -> W
  //   it 1: step 2            -> W
  //   it 2: step 3 > 2        -> G, step 0
  //   it 3..7: steps 1..5     -> G
  //   it 8: step 6 > 5        -> S
  //   it 9: step 7            -> S
  StageTracker t = *StageTracker::Create({});
  const std::vector<int32_t> s = Repeat(0, 10, 10);
  CHECK(Stages(t, std::vector<std::vector<int32_t>>(10, s)) == "WWGGGGGGSS");
}

TEST_CASE("Algorithm 1: a change sends every stage back to WarmUp", "[varying][tracker]") {
  // m = 1, n = 2. S = [0..9] x 10 (100 ops), T = S + 20 more ops (+20%).
  //   S: step 1 -> W;  S: step 2 > 1 -> G (0);  S: 1 -> G;  S: 2 -> G;
  //   S: 3 > 2 -> S;   S: S;
  //   T: unstable -> W (0);  T: 1 -> W;  T: 2 -> G (0);  T: 1 -> G;
  //   S: unstable -> W;  S: 1 -> W;  S: 2 -> G
  StageTrackerOptions o;
  o.warmup_iterations = 1;
  o.genpolicy_iterations = 2;
  StageTracker t = *StageTracker::Create(o);
  const std::vector<int32_t> s = Repeat(0, 10, 10);
  std::vector<int32_t> longer = s;
  for (int32_t i = 0; i < 20; ++i) longer.push_back(i % 10);
  CHECK(Stages(t, {s, s, s, s, s, s, longer, longer, longer, longer, s, s, s}) ==
        "WGGGSSWWGGWWG");
}

TEST_CASE("Algorithm 1: thresholds are strict", "[varying][tracker]") {
  // 100 ops then 105 (+5%): |105 - 100| / 100 = 0.05 is not < 0.05 ->
  // unstable. 100 then 104 (+4%, the extra ops are repeats of ops already
  // there, histogram cosine 0.9992) -> stable.
  const std::vector<int32_t> s = Repeat(0, 10, 10);
  std::vector<int32_t> plus5 = s, plus4 = s;
  for (int32_t i = 0; i < 5; ++i) plus5.push_back(i);
  for (int32_t i = 0; i < 4; ++i) plus4.push_back(i);
  {
    StageTracker t = *StageTracker::Create({});
    t.Observe(s);
    StageDecision d = t.Observe(plus5);
    CHECK(d.length_change == Approx(0.05));
    CHECK_FALSE(d.sequence_stable);
    CHECK(d.stable_steps == 0);
    CHECK(d.stage == Stage::kWarmUp);
  }
  {
    StageTracker t = *StageTracker::Create({});
    t.Observe(s);
    StageDecision d = t.Observe(plus4);
    CHECK(d.length_change == Approx(0.04));
    // Histograms: ten counts of 10 vs four of 11 and six of 10:
    // dot = 4*110 + 6*100 = 1040, |a|^2 = 1000, |b|^2 = 4*121 + 600 = 1084.
    CHECK(d.similarity == Approx(1040.0 / std::sqrt(1000.0 * 1084.0)));
    CHECK(d.sequence_stable);
    CHECK(d.stable_steps == 2);
  }
  {
    // A similarity threshold of 1 can never be passed ("> 100%").
    StageTrackerOptions o;
    o.min_similarity = 1.0;
    StageTracker t = *StageTracker::Create(o);
    CHECK_FALSE(t.Observe(s).sequence_stable);
  }
}

TEST_CASE("Similarity measures on the header's examples", "[varying][tracker]") {
  const std::vector<int32_t> base = Repeat(0, 40, 25);  // 1,000 ops
  // Disjoint: no op in common, yet the paper's measure says 0.951.
  const std::vector<int32_t> low = Repeat(0, 20, 50), high = Repeat(20, 40, 50);
  CHECK(CosineOfOpIds(low, high) == Approx(0.95069).epsilon(1e-4));
  CHECK(CosineOfOpIds(low, high) > 0.95);
  CHECK(CosineOfHistograms(low, high) == 0.0);
  // Reversal: the same ops in the opposite order.
  const std::vector<int32_t> reversed(base.rbegin(), base.rend());
  CHECK(CosineOfOpIds(base, reversed) == Approx(0.51852).epsilon(1e-4));
  CHECK(CosineOfHistograms(base, reversed) == Approx(1.0));
  // The same change judged by the labels' values: op 1 -> op 2 or op 39.
  std::vector<int32_t> to2 = base, to39 = base;
  for (int32_t& x : to2) x = x == 1 ? 2 : x;
  for (int32_t& x : to39) x = x == 1 ? 39 : x;
  CHECK(CosineOfOpIds(base, to2) == Approx(0.99998).epsilon(1e-5));
  CHECK(CosineOfOpIds(base, to39) == Approx(0.96911).epsilon(1e-4));
  // Histograms: 38 counts of 25 stay, op 1 (25) moves onto op 2 or 39 (50):
  // dot = 38*625 + 25*50 = 25000, |a|^2 = 40*625 = 25000,
  // |b|^2 = 38*625 + 2500 = 26250 -> 25000 / sqrt(25000 * 26250) = 0.9759.
  CHECK(CosineOfHistograms(base, to2) == Approx(25000.0 / std::sqrt(25000.0 * 26250.0)));
  CHECK(CosineOfHistograms(base, to39) == CosineOfHistograms(base, to2));
  // One op inserted at the front: 0.9647 by ids (every position shifted),
  // 0.99998 by histogram.
  std::vector<int32_t> inserted = base;
  inserted.insert(inserted.begin(), 0);
  CHECK(CosineOfOpIds(base, inserted) == Approx(0.96470).epsilon(1e-4));
  CHECK(CosineOfHistograms(base, inserted) > 0.9999);
  // Identity, empties, zero padding: [0 1] vs [0 1 2] = (1+4) / sqrt(5 * 14).
  CHECK(CosineOfOpIds(base, base) == Approx(1.0));
  CHECK(CosineOfOpIds({}, {}) == 1.0);
  CHECK(CosineOfOpIds({}, base) == 0.0);
  CHECK(CosineOfHistograms(base, {}) == 0.0);
  CHECK(CosineOfOpIds({0, 1}, {0, 1, 2}) == Approx(5.0 / std::sqrt(5.0 * 14.0)));
}

TEST_CASE("The paper's measure calls disjoint sequences stable", "[varying][tracker]") {
  // Same lengths, no op in common: op-ids keeps going (W W G), the
  // histogram measure resets.
  StageTrackerOptions o;
  o.similarity = SequenceSimilarity::kCosineOpIds;
  StageTracker paper = *StageTracker::Create(o);
  StageTracker hist = *StageTracker::Create({});
  const std::vector<int32_t> low = Repeat(0, 20, 50), high = Repeat(20, 40, 50);
  CHECK(Stages(paper, {low, high, low}) == "WWG");
  CHECK(Stages(hist, {low, high, low}) == "WWW");
}

TEST_CASE("Tracker histogram equals the plain one on random sequences", "[varying][tracker]") {
  // The tracker keeps the previous histogram and clears only touched
  // entries; compare with CosineOfHistograms recomputed from scratch.
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    StageTracker t = *StageTracker::Create({});
    std::vector<int32_t> prev;
    for (int it = 0; it < 8; ++it) {
      std::vector<int32_t> s(1 + rng() % 300);
      const int32_t alphabet = 1 + static_cast<int32_t>(rng() % 60);
      for (int32_t& x : s) x = static_cast<int32_t>(rng() % alphabet);
      StageDecision d = t.Observe(s);
      const std::vector<int32_t>& ref_prev = it == 0 ? s : prev;
      CHECK(d.similarity == Approx(CosineOfHistograms(s, ref_prev)).epsilon(1e-12));
      prev = s;
    }
  }
}

TEST_CASE("Stage tracker options are validated", "[varying][tracker]") {
  StageTrackerOptions o;
  o.max_length_change = 1.5;
  CHECK(StageTracker::Create(o).status().message() ==
        "stage tracker options: max_length_change is 1.5; must be in [0, 1]");
  o = {};
  o.min_similarity = -0.1;
  CHECK(StageTracker::Create(o).status().message() ==
        "stage tracker options: min_similarity is -0.1; must be in [0, 1]");
  o = {};
  o.warmup_iterations = -1;
  CHECK(StageTracker::Create(o).status().message() ==
        "stage tracker options: warmup_iterations (m) is -1; must be >= 0");
  o = {};
  o.genpolicy_iterations = -2;
  CHECK(StageTracker::Create(o).status().message() ==
        "stage tracker options: genpolicy_iterations (n) is -2; must be >= 0");
  SequenceSimilarity s;
  CHECK(ParseSequenceSimilarity("op-ids", &s));
  CHECK(s == SequenceSimilarity::kCosineOpIds);
  CHECK_FALSE(ParseSequenceSimilarity("jaccard", &s));
}

TEST_CASE("OpTokenizer numbers names once, in order of first appearance", "[varying][tracker]") {
  OpTokenizer tok;
  CHECK(tok.Token("aten::mm") == 0);
  CHECK(tok.Token("aten::add") == 1);
  CHECK(tok.Token("aten::mm") == 0);
  CHECK(tok.size() == 2);
  CHECK(tok.names()[1] == "aten::add");
}

}  // namespace
}  // namespace swapplan
