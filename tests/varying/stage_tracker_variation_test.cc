// The stage tracker on each kind of variation a training run has, from
// synthesized runs: which keep it Stable (MoE routing, per-iteration
// sequence lengths — sizes change, the op sequence does not) and which send
// it back (loss-scale skips and validation passes change the sequence;
// repeated policy misses send a Stable run back to GenPolicy), and
// ResumeStable for a sequence the runtime recognises.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "swapplan/synth/synth.h"
#include "swapplan/varying/segment.h"
#include "swapplan/varying/stage_tracker.h"

namespace swapplan {
namespace {

SynthOptions Tiny(const char* preset) {
  SynthOptions o;
  o.model = *ModelPreset(preset);
  o.model.layers = 2;
  o.model.hidden_size = 256;
  o.model.ffn_hidden_size = 512;
  o.model.num_heads = 4;
  o.model.num_kv_heads = 4;
  o.model.vocab_size = 1024;
  o.seq_length_tokens = 256;
  o.tensor_names = false;
  return o;
}

Trace Synth(const SynthOptions& o) {
  absl::StatusOr<Trace> t = SynthesizeTrace(o);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return *std::move(t);
}

// The op tokens of every runtime iteration.
std::vector<std::vector<int32_t>> Sequences(const Trace& t, IterationBoundary b) {
  std::vector<std::vector<int32_t>> out;
  for (const OpRange& r : RuntimeIterations(t, b)) {
    std::vector<int32_t> s;
    for (OpIndex op = r.begin; op < r.end; ++op) s.push_back(t.op(op).name);
    out.push_back(std::move(s));
  }
  return out;
}

// Observes each sequence; `missed` lists the iterations whose policy
// missed. Returns the stage each Observe set (W, G, S) and the decisions.
std::string Stages(StageTracker& tracker, const std::vector<std::vector<int32_t>>& seqs,
                   const std::set<int>& missed, std::vector<StageDecision>* decisions) {
  std::string out;
  for (size_t i = 0; i < seqs.size(); ++i) {
    PolicyOutcome outcome;
    outcome.missed = missed.count(static_cast<int>(i)) > 0;
    const StageDecision d = tracker.Observe(seqs[i], outcome);
    decisions->push_back(d);
    out += StageName(d.stage)[0];
  }
  return out;
}

// Sizes of the tensors first used in each trace iteration, sorted.
std::multiset<int64_t> IterationSizes(const Trace& t, int32_t it) {
  std::multiset<int64_t> s;
  const IterationInfo& info = t.iteration(it);
  for (TensorId x = 0; x < t.num_tensors(); ++x) {
    const OpIndex f = t.lifetime(x).first_use;
    if (f >= info.op_begin && f < info.op_end) s.insert(t.tensor(x).size_bytes);
  }
  return s;
}

TEST_CASE("Tracker: MoE routing changes sizes, not the sequence — Stable",
          "[varying][tracker][variation]") {
  // 8 experts, top-2, σ = 0.5: every iteration routes differently (the
  // expert tensors' sizes differ), the op sequence stays within the
  // thresholds. m = 2, n = 5: W W, six G, then S for good.
  SynthOptions o = Tiny("mixtral-8x7b");
  o.model.num_experts = 8;
  o.model.experts_top_k = 2;
  o.moe_imbalance = 0.5;
  o.iterations = 12;
  Trace t = Synth(o);
  CHECK(IterationSizes(t, 3) != IterationSizes(t, 4));
  StageTracker tracker = *StageTracker::Create({});
  std::vector<StageDecision> d;
  CHECK(Stages(tracker, Sequences(t, IterationBoundary::kOptimizerEnd), {}, &d) ==
        "WWGGGGGGSSSS");
  for (const StageDecision& x : d) CHECK(x.sequence_stable);
  CHECK(d[1].change == StageChange::kNone);
  CHECK(d[2].change == StageChange::kSequenceStable);  // -> GenPolicy
  CHECK(d[8].change == StageChange::kSequenceStable);  // -> Stable
  CHECK(d[9].change == StageChange::kNone);
}

TEST_CASE("Tracker: sequence lengths change every size, not the sequence — Stable; repeated "
          "policy misses send it back to GenPolicy",
          "[varying][tracker][variation]") {
  SynthOptions o = Tiny("llama2-7b");
  o.seq_lengths = *ParseSeqLengths("64,128,256");
  o.iterations = 16;
  Trace t = Synth(o);
  const std::vector<std::vector<int32_t>> seqs = Sequences(t, IterationBoundary::kOptimizerEnd);
  for (const std::vector<int32_t>& s : seqs) CHECK(s == seqs[0]);
  std::set<int64_t> lengths;
  for (int32_t it = 0; it < o.iterations; ++it) lengths.insert(o.SeqLengthOf(it));
  CHECK(lengths.size() == 3);
  {
    StageTracker tracker = *StageTracker::Create({});
    std::vector<StageDecision> d;
    CHECK(Stages(tracker, seqs, {}, &d) == "WWGGGGGGSSSSSSSS");
  }
  // The policy of a Stable iteration misses (an allocation failure: a
  // policy for one length does not cover another) at iterations 9 and 11
  // (the first two that run in Stable are 9 and 10):
  // the second miss (max_policy_misses 2) sends it back to GenPolicy, which
  // runs n + 1 = 6 iterations again (12..16 G, then S). Misses in WarmUp
  // and GenPolicy (0, 4) are not counted.
  StageTracker tracker = *StageTracker::Create({});
  std::vector<StageDecision> d;
  CHECK(Stages(tracker, seqs, {0, 4, 9, 11}, &d) == "WWGGGGGGSSSGGGGG");
  CHECK(d[9].policy_misses == 1);
  CHECK(d[9].change == StageChange::kNone);
  CHECK(d[11].change == StageChange::kPolicyMisses);
  CHECK(d[11].policy_misses == 2);
  CHECK(d[12].policy_misses == 0);
  // max_policy_misses 0: misses never send it back (iteration 8 still ran
  // in GenPolicy: four Stable misses counted).
  StageTrackerOptions never;
  never.max_policy_misses = 0;
  StageTracker patient = *StageTracker::Create(never);
  std::vector<StageDecision> d2;
  CHECK(Stages(patient, seqs, {8, 9, 10, 11, 12}, &d2) == "WWGGGGGGSSSSSSSS");
  CHECK(d2[12].policy_misses == 4);
}

TEST_CASE("Tracker: a skipped optimizer step and a validation pass change the sequence — "
          "WarmUp",
          "[varying][tracker][variation]") {
  // GPT-2 shape, 12 iterations, a loss-scale skip in trace iteration 9
  // (every 10th), a validation pass after trace iteration 6 (every 7th);
  // runtime iterations end after the optimizer step, so runtime iteration 7
  // opens with the validation pass. m = 1, n = 2.
  SynthOptions o = Tiny("gpt2");
  o.iterations = 12;
  o.loss_scale_skip_every = 10;
  o.validation_every = 7;
  Trace t = Synth(o);
  const std::vector<std::vector<int32_t>> seqs = Sequences(t, IterationBoundary::kOptimizerEnd);
  REQUIRE(seqs.size() == 12);
  StageTrackerOptions to;
  to.warmup_iterations = 1;
  to.genpolicy_iterations = 2;
  StageTracker tracker = *StageTracker::Create(to);
  std::vector<StageDecision> d;
  // 0 W; 1 G (step 2 > 1); 2, 3 G; 4 S (3 > 2); 5, 6 S; 7 (validation
  // first) W; 8 (back to normal: another change) W; 9 (the skip) W; 10
  // (normal again) W; 11 stable, step 1: W.
  CHECK(Stages(tracker, seqs, {}, &d) == "WGGGSSSWWWWW");
  CHECK(d[7].change == StageChange::kSequenceChanged);
  CHECK_FALSE(d[7].sequence_stable);
  CHECK(d[9].change == StageChange::kSequenceChanged);
  CHECK(d[9].length_change > 0.05);
  CHECK(d[11].sequence_stable);
  // With the trace's own boundary the validation pass ends iteration 6
  // instead: the change comes one iteration earlier.
  StageTracker by_trace = *StageTracker::Create(to);
  std::vector<StageDecision> d3;
  CHECK(Stages(by_trace, Sequences(t, IterationBoundary::kTrace), {}, &d3).substr(0, 8) ==
        "WGGGSSWW");
}

TEST_CASE("Tracker: ResumeStable for a recognised sequence", "[varying][tracker][variation]") {
  // S, S (G), S, S (S), T: changed -> W; ResumeStable -> Stable at once, and
  // the next S (compared with T: a change) is W again unless resumed.
  StageTrackerOptions to;
  to.warmup_iterations = 0;
  to.genpolicy_iterations = 1;
  StageTracker t = *StageTracker::Create(to);
  std::vector<int32_t> s(100, 1), longer(120, 1);
  CHECK(t.Observe(s).stage == Stage::kGenPolicy);
  CHECK(t.Observe(s).stage == Stage::kGenPolicy);
  CHECK(t.Observe(s).stage == Stage::kStable);
  CHECK(t.Observe(longer).stage == Stage::kWarmUp);
  t.ResumeStable();
  CHECK(t.stage() == Stage::kStable);
  CHECK(t.Observe(longer).stage == Stage::kStable);
  const StageDecision d = t.Observe(s);
  CHECK(d.stage == Stage::kWarmUp);
  CHECK(d.change == StageChange::kSequenceChanged);
  CHECK(StageChangeName(StageChange::kKnownSequence) == "known sequence");
  CHECK(StageChangeName(StageChange::kPolicyMisses) == "policy misses");
}

TEST_CASE("Tracker: max_policy_misses is validated", "[varying][tracker][variation]") {
  StageTrackerOptions o;
  o.max_policy_misses = -1;
  CHECK(StageTracker::Create(o).status().message() ==
        "stage tracker options: max_policy_misses is -1; must be >= 0 (0: never)");
}

}  // namespace
}  // namespace swapplan
