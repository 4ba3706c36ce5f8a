// RunReplay on runs whose sizes vary while the op sequence does not (issue
// 16): per-iteration sequence lengths and MoE routing. The paper's runtime
// (one policy, planned on one iteration, Algorithm 3 in WarmUp only) crashes
// on them; the defaults (policies keyed by input signature, planned on the
// observed iteration and verified on the other observed iterations of its
// key, Algorithm 3 in every stage) do not, and stay close to the oracle.
// The same runs through the CLI:
//   swapplan synth --model gpt2 --layers 4 --hidden 256 --ffn 1024 --heads 4 --kv-heads 4
//       --vocab 1024 --seq-lengths 256,512,1024 --iterations 24 --flops-efficiency 0.01
//       --hbm-efficiency 0.01 --no-names -o sl.trace
//   swapplan replay sl.trace --device-memory 83MiB --min-tensor-bytes 0 --warmup-iterations 1
//       --genpolicy-iterations 2 --oracle [--policies single --plan-on iteration
//       --oom-handling warmup --remember 0 --max-policy-misses 0]
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "swapplan/eval/replay.h"
#include "swapplan/synth/synth.h"

namespace swapplan {
namespace {

// A device at 1% of the a100-80g roofline (op times dominate the copies);
// 24 iterations, seed 1.
SynthOptions Small(const char* preset) {
  SynthOptions o;
  o.model = *ModelPreset(preset);
  o.model.hidden_size = 256;
  o.model.num_heads = 4;
  o.model.num_kv_heads = 4;
  o.model.vocab_size = 1024;
  o.seq_length_tokens = 1024;
  REQUIRE(UseDevicePreset("a100-80g", &o).ok());
  o.flops_efficiency = 0.01;
  o.hbm_efficiency = 0.01;
  o.iterations = 24;
  o.seed = 1;
  o.tensor_names = false;
  return o;
}

Trace Synth(const SynthOptions& o) {
  absl::StatusOr<Trace> t = SynthesizeTrace(o);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return *std::move(t);
}

ReplayOptions Defaults(int64_t capacity_bytes) {
  ReplayOptions o;
  o.simulator.device.capacity_bytes = capacity_bytes;
  o.chameleon.min_tensor_bytes = 0;
  o.tracker.warmup_iterations = 1;
  o.tracker.genpolicy_iterations = 2;
  o.oracle = true;
  return o;
}

ReplayOptions Paper(int64_t capacity_bytes) {
  ReplayOptions o = Defaults(capacity_bytes);
  o.keying = PolicyKeying::kSingle;
  o.plan_on = PlanningInput::kIteration;
  o.oom_handling_in_all_stages = false;
  o.remembered_sequences = 0;
  o.tracker.max_policy_misses = 0;
  return o;
}

ReplaySummary Replay(const Trace& t, const ReplayOptions& o, std::vector<ReplayRow>* rows) {
  absl::StatusOr<ReplaySummary> s =
      RunReplay(t, o, [&](const ReplayRow& r) { rows->push_back(r); });
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return *s;
}

constexpr int kStable = static_cast<int>(Stage::kStable);

TEST_CASE("Replay: per-iteration sequence lengths — keyed policies hold, one policy crashes",
          "[varying][replay][variation]") {
  // GPT-2 shape, 4 layers, lengths 256 / 512 / 1024 drawn per iteration:
  // unswapped peak 97.62 MiB (a 1024-token iteration), persistent 56.22 MiB;
  // 83 MiB needs swapping only for the 1024-token iterations' activations.
  SynthOptions so = Small("gpt2");
  so.model.layers = 4;
  so.model.ffn_hidden_size = 1024;
  so.seq_lengths = *ParseSeqLengths("256,512,1024");
  Trace t = Synth(so);
  const int64_t capacity = 83LL << 20;

  // The op sequence is the same in every iteration: m = 1, n = 2 gives
  // W W G G G and Stable from row 5 on, whatever the lengths.
  std::vector<ReplayRow> paper_rows;
  const ReplaySummary paper = Replay(t, Paper(capacity), &paper_rows);
  CHECK(paper.iterations_by_stage[kStable] == 19);
  // One policy, planned on whichever length row 4 had, applied to every
  // length: the 1024-token iterations run out of memory (70 failures, none
  // resolved outside WarmUp); the first is row 4, in GenPolicy.
  CHECK(paper.unresolved_ooms == 70);
  CHECK(paper.first_unresolved_oom_iteration == 4);
  CHECK(paper.uses_while_off_device == 0);

  std::vector<ReplayRow> rows;
  const ReplaySummary keyed = Replay(t, Defaults(capacity), &rows);
  CHECK(keyed.iterations_by_stage[kStable] == 19);
  // Three lengths -> three input signatures (the tokens' shape [1, s]).
  CHECK(keyed.input_signatures == 3);
  std::set<uint64_t> signatures;
  for (const ReplayRow& r : rows) signatures.insert(r.input.hash);
  CHECK(signatures.size() == 3);
  // Nothing crashes, nothing is used off device, Stable needs no passive
  // swap and no allocation failure comes after warm-up.
  CHECK(keyed.unresolved_ooms == 0);
  CHECK(keyed.uses_while_off_device == 0);
  CHECK(keyed.ooms_after_warmup == 0);
  CHECK(keyed.passive_swaps_by_stage[kStable] == 0);
  CHECK(keyed.policy_swaps_by_stage[kStable] > 0);
  // A length no policy was planned for yet (in GenPolicy, before its first
  // observation) runs the nearest larger input's policy (twice in this
  // draw), and still fits.
  CHECK(keyed.policy_of_other_input == 2);
  int32_t other = 0;
  for (const ReplayRow& r : rows) {
    if (!r.policy_of_other_input) continue;
    ++other;
    CHECK(r.stage == Stage::kGenPolicy);
    CHECK(r.policy >= 0);
    CHECK(r.unresolved_ooms == 0);
    CHECK(r.ooms == 0);
  }
  CHECK(other == 2);
  // Within 5% of the oracle (each iteration planned on itself), in total
  // and in Stable.
  REQUIRE(keyed.oracle_time_ns > 0);
  CHECK(keyed.oracle_plan_failures == 0);
  CHECK(static_cast<double>(keyed.time_ns) / keyed.oracle_time_ns < 1.05);
  CHECK(static_cast<double>(keyed.time_ns_by_stage[kStable]) /
            keyed.oracle_time_ns_by_stage[kStable] <
        1.05);
}

TEST_CASE("Replay: MoE routing — policy misses are handled in every stage and send the "
          "tracker back to GenPolicy",
          "[varying][replay][variation]") {
  // Mixtral shape, 2 layers, 8 experts top-2, σ = 0.5: every iteration
  // routes differently (resized items), the op sequence stays stable.
  // Unswapped peak 149.51 MiB, persistent 112.33 MiB; 140 MiB.
  SynthOptions so = Small("mixtral-8x7b");
  so.model.layers = 2;
  so.model.ffn_hidden_size = 512;
  so.moe_imbalance = 0.5;
  Trace t = Synth(so);
  const int64_t capacity = 140LL << 20;

  std::vector<ReplayRow> paper_rows;
  const ReplaySummary paper = Replay(t, Paper(capacity), &paper_rows);
  // A policy planned on one routing does not cover the next: after warm-up
  // every failure is a crash (107), the first in row 2.
  CHECK(paper.unresolved_ooms == 107);
  CHECK(paper.first_unresolved_oom_iteration == 2);
  CHECK(paper.passive_swaps_by_stage[kStable] == 0);

  std::vector<ReplayRow> rows;
  const ReplaySummary keyed = Replay(t, Defaults(capacity), &rows);
  CHECK(keyed.input_signatures == 1);  // routing does not change the input
  CHECK(keyed.unresolved_ooms == 0);
  CHECK(keyed.uses_while_off_device == 0);
  // The misses that remain (6 allocation failures after warm-up) go through
  // Algorithm 3 — counted, resolved — and two in Stable send the tracker
  // back to GenPolicy once.
  CHECK(keyed.ooms_after_warmup == 6);
  CHECK(keyed.policy_miss_returns == 1);
  bool saw_return = false;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    if (rows[i].change != StageChange::kPolicyMisses) continue;
    saw_return = true;
    CHECK(rows[i].stage == Stage::kStable);
    CHECK(rows[i].policy_misses == 2);
    CHECK(rows[i].next_stage == Stage::kGenPolicy);
    CHECK(rows[i + 1].stage == Stage::kGenPolicy);
  }
  CHECK(saw_return);
  // Resized items (MoE expert tensors larger or smaller than planned) still
  // apply.
  CHECK(keyed.resized_larger > 0);
  CHECK(keyed.resized_smaller > 0);
  CHECK(keyed.mismatched == 0);
  CHECK(keyed.missed == 0);
  CHECK(static_cast<double>(keyed.time_ns) / keyed.oracle_time_ns < 1.05);
}

TEST_CASE("Replay: options of keyed and verified planning are validated",
          "[varying][replay][variation]") {
  SynthOptions so = Small("gpt2");
  so.model.layers = 1;
  so.model.ffn_hidden_size = 1024;
  so.iterations = 2;
  Trace t = Synth(so);
  auto message = [&](const ReplayOptions& bad) {
    return std::string(RunReplay(t, bad, [](const ReplayRow&) {}).status().message());
  };
  ReplayOptions bad = Defaults(83LL << 20);
  bad.verify_margin = -0.5;
  CHECK(message(bad) == "replay options: verify_margin is -0.5; must be finite and >= 0");
  bad = Defaults(83LL << 20);
  bad.verify_rounds = 0;
  CHECK(message(bad) == "replay options: verify_rounds is 0; must be >= 1");
  bad = Defaults(83LL << 20);
  bad.verify_iterations = 0;
  CHECK(message(bad) == "replay options: verify_iterations is 0; must be >= 1");
  bad = Defaults(83LL << 20);
  bad.remembered_sequences = -1;
  CHECK(message(bad) == "replay options: remembered_sequences is -1; must be >= 0 (0: none)");
  bad = Defaults(83LL << 20);
  bad.envelope.spread_margin = -1;
  CHECK(message(bad) == "envelope options: spread_margin is -1; must be finite and >= 0");
  bad = Defaults(83LL << 20);
  bad.tracker.max_policy_misses = -1;
  CHECK(message(bad) == "stage tracker options: max_policy_misses is -1; must be >= 0 (0: never)");
  CHECK(RunReplay(t, bad, [](const ReplayRow&) {}).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace swapplan
