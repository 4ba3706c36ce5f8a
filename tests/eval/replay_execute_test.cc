// The executed replay (eval/replay_execute.h): a synthesized run through the
// runtime shim on the host backend agrees, iteration by iteration, with the
// simulated replay of what the runtime does (ReplayOptions::model_runtime).
// The same run through the CLI:
//   swapplan synth --model gpt2 --layers 4 --hidden 256 --ffn 1024 --heads 4 --kv-heads 4
//       --vocab 1024 --seq 1024 --device a100-80g --flops-efficiency 0.01
//       --hbm-efficiency 0.01 --iterations 12 --validation-every 7 --no-names -o small.trace
//   swapplan replay small.trace --device-memory 83MiB --min-tensor-bytes 0
//       --warmup-iterations 1 --genpolicy-iterations 2 --execute host
#include "swapplan/eval/replay_execute.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "swapplan/synth/synth.h"

namespace swapplan {
namespace {

// GPT-2 shape, 4 layers, 356 ops per training iteration (unswapped peak
// 97.62 MiB), a validation pass after step 6 (opening runtime iteration 7,
// 420 ops), on a device at 1% of the a100-80g roofline.
Trace SmallRun() {
  SynthOptions o;
  o.model = *ModelPreset("gpt2");
  o.model.layers = 4;
  o.model.hidden_size = 256;
  o.model.ffn_hidden_size = 1024;
  o.model.num_heads = 4;
  o.model.num_kv_heads = 4;
  o.model.vocab_size = 1024;
  o.seq_length_tokens = 1024;
  REQUIRE(UseDevicePreset("a100-80g", &o).ok());
  o.flops_efficiency = 0.01;
  o.hbm_efficiency = 0.01;
  o.iterations = 12;
  o.validation_every = 7;
  o.tensor_names = false;
  absl::StatusOr<Trace> t = SynthesizeTrace(o);
  REQUIRE(t.ok());
  return *std::move(t);
}

// 83 MiB: warm-up needs Algorithm 3 (passive swaps), the policies do not.
ReplayOptions RuntimeModel() {
  ReplayOptions o;
  o.simulator.device.capacity_bytes = 83LL << 20;
  o.chameleon.min_tensor_bytes = 0;
  o.tracker.warmup_iterations = 1;
  o.tracker.genpolicy_iterations = 2;
  o.model_runtime = true;
  o.keying = PolicyKeying::kSingle;
  o.plan_on = PlanningInput::kIteration;
  o.remembered_sequences = 0;
  return o;
}

std::string StageLetters(const std::vector<ReplayRow>& rows) {
  std::string s;
  for (const ReplayRow& r : rows) s += StageName(r.stage)[0];
  return s;
}

TEST_CASE("Execute: the executed run agrees with the simulated replay per iteration",
          "[varying][replay][execute]") {
  const Trace trace = SmallRun();
  ExecuteOptions o;
  o.replay = RuntimeModel();
  std::vector<ReplayRow> simulated, executed;
  absl::StatusOr<ReplaySummary> s =
      RunReplay(trace, o.replay, [&](const ReplayRow& r) { simulated.push_back(r); });
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  absl::StatusOr<ReplaySummary> e =
      RunExecutedReplay(trace, o, [&](const ReplayRow& r) { executed.push_back(r); });
  INFO(e.status().ToString());
  REQUIRE(e.ok());
  REQUIRE(simulated.size() == 12);
  REQUIRE(executed.size() == 12);
  // m = 1, n = 2: WarmUp 0-1, GenPolicy 2-4, Stable 5-7; the validation
  // pass opening 7 sends it back to WarmUp (8-10), GenPolicy again at 11.
  CHECK(StageLetters(executed) == "WWGGGSSSWWWG");
  std::vector<RowDifference> diffs;
  for (size_t t = 0; t < executed.size(); ++t) {
    CompareReplayRows(simulated[t], executed[t], &diffs);
  }
  for (const RowDifference& d : diffs) {
    UNSCOPED_INFO("iteration " << d.iteration << ": " << d.field << " simulated " << d.simulated
                               << ", executed " << d.executed);
  }
  CHECK(diffs.empty());
  // What was compared is not nothing: every WarmUp iteration needs
  // Algorithm 3 (14 ops whose allocations failed, 32 passive swap-outs),
  // every policy iteration applies and finds 14 items.
  for (const ReplayRow& r : executed) {
    if (r.stage == Stage::kWarmUp) {
      CHECK(r.ooms == 14);
      CHECK(r.passive_swaps == 32);
      CHECK(r.items == 0);
    } else {
      CHECK(r.items == 14);
      CHECK(r.matched == 14);
      CHECK(r.passive_swaps == 0);
    }
    CHECK(r.unresolved_ooms == 0);
    CHECK(r.uses_while_off_device == 0);
  }
  // Totals: 5 WarmUp iterations x 32 passive swaps; 7 policy iterations x
  // 14 items; policies made at the end of 1-4 and 10 (5).
  CHECK(e->passive_swaps == 160);
  CHECK(e->passive_swaps == s->passive_swaps);
  CHECK(e->ooms == s->ooms);
  CHECK(e->items == 98);
  CHECK(e->matched == s->matched + s->mismatched);
  CHECK(e->policies_generated == 5);
  CHECK(e->policies_generated == s->policies_generated);
  // The op clock: the trace's op times, so a row's time is its compute time.
  for (size_t t = 0; t < executed.size(); ++t) {
    CHECK(executed[t].time_ns > 0);
  }
}

TEST_CASE("Execute: row comparison names each differing figure", "[varying][replay][execute]") {
  ReplayRow a, b;
  a.iteration = b.iteration = 3;
  a.stage = b.stage = Stage::kStable;
  a.policy = b.policy = 1;
  a.items = b.items = 10;
  a.matched = 9;
  a.mismatched = 1;  // found = 10
  b.matched = 10;    // the runtime cannot tell: found = 10
  a.passive_swaps = 4;
  b.passive_swaps = 0;  // e.g. passive swaps not counted
  a.generated_policy = 2;
  std::vector<RowDifference> d;
  CompareReplayRows(a, b, &d);
  REQUIRE(d.size() == 2);
  CHECK(d[0].iteration == 3);
  CHECK(d[0].field == "passive swaps");
  CHECK(d[0].simulated == 4);
  CHECK(d[0].executed == 0);
  CHECK(d[1].field == "policy made");
  CHECK(ComparedReplayFields().size() == 12);
}

TEST_CASE("Execute: option errors", "[varying][replay][execute]") {
  const Trace trace = SmallRun();
  auto run = [&](const ExecuteOptions& o) {
    return RunExecutedReplay(trace, o, [](const ReplayRow&) {}).status();
  };
  ExecuteOptions o;
  o.replay = RuntimeModel();
  o.replay.model_runtime = false;
  absl::Status st = run(o);
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("model_runtime is false"));

  o.replay = RuntimeModel();
  o.replay.keying = PolicyKeying::kByInput;
  st = run(o);
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("keying is input"));

  o.replay = RuntimeModel();
  o.replay.plan_on = PlanningInput::kObserved;
  st = run(o);
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("plan_on is observed"));

  o.replay = RuntimeModel();
  o.arena_capacity_ratio = 0.5;
  st = run(o);
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("arena_capacity_ratio is 0.5"));

  // The simulated replay checks the same rules.
  ReplayOptions r = RuntimeModel();
  r.remembered_sequences = 4;
  st = RunReplay(trace, r, [](const ReplayRow&) {}).status();
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("remembered_sequences is 4"));
}

}  // namespace
}  // namespace swapplan
