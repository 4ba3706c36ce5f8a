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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/synth_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/synth/synth.h"

namespace swapplan {
namespace {

// GPT-2 shape, 4 layers, 356 ops per training iteration (unswapped peak
// 97.62 MiB), a validation pass after step 6 (opening runtime iteration 7,
// 420 ops), on a device at 1% of the a100-80g roofline.
Trace SmallRun() {
  SynthOptions o = testing::SmallGpt2Options();
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

// Both runs with `o`; the per-iteration differences (none expected).
// same_inputs false: the input signatures are not compared (a trace whose
// first FORWARD op reads a tensor born at that op: the driver allocates it
// after OpBegin, so the runtime's signature lacks it).
void RunBoth(const Trace& trace, const ExecuteOptions& o, std::vector<ReplayRow>* simulated,
             std::vector<ReplayRow>* executed, ReplaySummary* sim_sum, ReplaySummary* exe_sum,
             bool same_inputs = true) {
  absl::StatusOr<ReplaySummary> s =
      RunReplay(trace, o.replay, [&](const ReplayRow& r) { simulated->push_back(r); });
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  absl::StatusOr<ReplaySummary> e =
      RunExecutedReplay(trace, o, [&](const ReplayRow& r) { executed->push_back(r); });
  INFO(e.status().ToString());
  REQUIRE(e.ok());
  *sim_sum = *s;
  *exe_sum = *e;
  REQUIRE(simulated->size() == executed->size());
  std::vector<RowDifference> diffs;
  for (size_t t = 0; t < executed->size(); ++t) {
    CompareReplayRows((*simulated)[t], (*executed)[t], &diffs);
    // Not compared by CompareReplayRows; the keyed rules' own figures.
    if (same_inputs) CHECK((*simulated)[t].input == (*executed)[t].input);
    CHECK((*simulated)[t].policy_of_other_input == (*executed)[t].policy_of_other_input);
    CHECK((*simulated)[t].change == (*executed)[t].change);
    CHECK((*simulated)[t].planned_on_iterations == (*executed)[t].planned_on_iterations);
  }
  for (const RowDifference& d : diffs) {
    UNSCOPED_INFO("iteration " << d.iteration << ": " << d.field << " simulated " << d.simulated
                               << ", executed " << d.executed);
  }
  CHECK(diffs.empty());
}

TEST_CASE("Execute: with the replay's defaults (keyed, observed, remembered) both runs agree",
          "[varying][replay][execute]") {
  // The small run with the issue-16 defaults: policies keyed by input,
  // planned on the observed iterations (the provider verifies on the key's
  // last records, as the replay does), remembered sequences. m = 1, n = 2:
  // WarmUp 0-1, GenPolicy 2-4 (plans at the ends of 1-4: the one entering
  // Stable too), Stable 5-6; the validation pass opening 7 sends the
  // tracker to WarmUp with the sequence remembered; iteration 8 is stable
  // against it: straight back to Stable (9-11) with its policy, no plan.
  const Trace trace = SmallRun();
  ExecuteOptions o;
  o.replay.simulator.device.capacity_bytes = 83LL << 20;
  o.replay.chameleon.min_tensor_bytes = 0;
  o.replay.tracker.warmup_iterations = 1;
  o.replay.tracker.genpolicy_iterations = 2;
  o.replay.model_runtime = true;
  REQUIRE(o.replay.keying == PolicyKeying::kByInput);
  REQUIRE(o.replay.plan_on == PlanningInput::kObserved);
  REQUIRE(o.replay.remembered_sequences == 4);
  std::vector<ReplayRow> simulated, executed;
  ReplaySummary s, e;
  RunBoth(trace, o, &simulated, &executed, &s, &e);
  REQUIRE(executed.size() == 12);
  CHECK(StageLetters(executed) == "WWGGGSSSWSSS");
  CHECK(executed[8].change == StageChange::kKnownSequence);
  CHECK(e.known_sequence_returns == 1);
  CHECK(e.known_sequence_returns == s.known_sequence_returns);
  CHECK(e.policies_generated == 4);
  CHECK(e.policies_generated == s.policies_generated);
  // Plans verified on the key's records so far: 1, 2, 3, 4.
  CHECK(executed[4].planned_on_iterations == 4);
  CHECK(e.passive_swaps == s.passive_swaps);
  CHECK(e.items > 0);
  CHECK(e.unresolved_ooms == 0);
}

TEST_CASE("Execute: the hybrid plans a record with the trace's logical layers",
          "[varying][replay][execute]") {
  // A record has no layer hints. When only Chameleon was given the trace's
  // layer count, the hybrid's swap part (Chameleon's logical layers) planned
  // a record with the default 12 where the simulated replay resolved the
  // trace's 2, and the two runs' policies parted: the MoE run of
  // docs/varying.md (bench/replay_execute.sh, here its first 6 iterations)
  // had 74 items simulated, 69 executed in runtime iteration 4, the first to
  // run a hybrid policy. The record's metadata now carries the count
  // (RuntimeOptions::model_layers) for every planner.
  SynthOptions so = testing::TwoLayerOptions("mixtral-8x7b", 2048);
  so.seq_length_tokens = 1024;
  so.iterations = 6;
  absl::StatusOr<Trace> trace = SynthesizeTrace(so);
  REQUIRE(trace.ok());
  REQUIRE(trace->metadata().model_layers == 2);
  ExecuteOptions o;
  o.replay.simulator.device.capacity_bytes = 2870LL << 20;
  o.replay.model_runtime = true;
  REQUIRE(o.replay.planner == "chain");
  std::vector<ReplayRow> simulated, executed;
  ReplaySummary s, e;
  RunBoth(*trace, o, &simulated, &executed, &s, &e);
  REQUIRE(executed.size() == 6);
  CHECK(executed[4].policy_planner == "hybrid");
  CHECK(executed[4].items == simulated[4].items);
  CHECK(e.items == s.items);
}

TEST_CASE("Execute: per-iteration sequence lengths, keyed policies and the nearest input agree",
          "[varying][replay][execute]") {
  // The small run's model with three sequence lengths, in order: 1024 until
  // Stable (iterations 0-5), then 512, 256, ... Each length is its own
  // input signature; a Stable iteration whose length no policy was made for
  // runs the nearest larger one's (1024's: counted) and has its own planned
  // at its end — in both runs.
  SynthOptions so = testing::SmallGpt2Options();
  so.seq_lengths.lengths = {1024, 1024, 1024, 1024, 1024, 1024, 512, 256,
                            512,  1024, 256,  512,  1024, 1024, 256, 512};
  so.seq_lengths.in_order = true;
  so.iterations = 16;
  so.tensor_names = false;
  absl::StatusOr<Trace> trace = SynthesizeTrace(so);
  REQUIRE(trace.ok());
  ExecuteOptions o;
  o.replay.simulator.device.capacity_bytes = 83LL << 20;
  o.replay.chameleon.min_tensor_bytes = 0;
  o.replay.tracker.warmup_iterations = 1;
  o.replay.tracker.genpolicy_iterations = 2;
  o.replay.model_runtime = true;
  std::vector<ReplayRow> simulated, executed;
  ReplaySummary s, e;
  RunBoth(*trace, o, &simulated, &executed, &s, &e);
  CHECK(e.input_signatures == 3);
  CHECK(e.input_signatures == s.input_signatures);
  CHECK(e.policy_of_other_input == s.policy_of_other_input);
  CHECK(e.policy_of_other_input == 2);  // the first 512 and the first 256
  CHECK(e.unresolved_ooms == 0);
}

// Round numbers: `iterations` copies of the two-layer toy (100-byte tensors,
// 100 ns ops, 1 byte/ns links), each with its own tensors and an optimizer
// op at the end. Per iteration: x -> f00 -> a1 -> f01 -> a2 -> f02 -> a3 ->
// f10 -> a4 -> f11 -> a5 -> f12 -> a6, then b12(a6, a5) -> g10, b11(g10, a4)
// -> g11, b10(g11, a3) -> g12, b02(g12, a2) -> g13, b01(g13, a1) -> g14,
// b00(g14, x) -> g15, opt(g15). Each tensor lives from its first to its last
// use. Unswapped: 100 B more per forward op (600 B during f11, 700 B during
// f12: x, a1..a6), the peak of 800 B during b12 (x, a1..a6, g10), then
// falling (a tensor dies after its last use). op_ns[k]: the op duration of
// iteration k instead of 100 ns.
Trace RoundRun(int32_t iterations, const std::vector<int64_t>& op_ns = {}) {
  nlohmann::json j;
  j["format"] = "swapplan-trace";
  j["metadata"] = {{"device_name", "toy"},
                   {"h2d_bandwidth_bytes_per_s", 1e9},
                   {"d2h_bandwidth_bytes_per_s", 1e9},
                   {"device_memory_bytes", 600},
                   {"model_layers", 2}};
  j["tensors"] = nlohmann::json::array();
  j["iterations"] = nlohmann::json::array();
  for (int32_t k = 0; k < iterations; ++k) {
    const int64_t duration = k < static_cast<int32_t>(op_ns.size()) ? op_ns[k] : 100;
    const int32_t base = 100 * k;  // ids: x = base, a1..a6 = base+1..6, g10..g15 = base+10..15
    j["tensors"].push_back({{"id", base}, {"size_bytes", 100}, {"kind", "INPUT"}});
    for (int32_t a = 1; a <= 6; ++a) {
      j["tensors"].push_back({{"id", base + a}, {"size_bytes", 100}, {"kind", "ACTIVATION"}});
    }
    for (int32_t g = 10; g <= 15; ++g) {
      j["tensors"].push_back({{"id", base + g}, {"size_bytes", 100}, {"kind", "GRADIENT"}});
    }
    nlohmann::json ops = nlohmann::json::array();
    auto op = [&](const char* name, const char* phase, int32_t layer,
                  std::vector<int32_t> in, std::vector<int32_t> out) {
      for (int32_t& t : in) t += base;
      for (int32_t& t : out) t += base;
      nlohmann::json o = {{"name", name}, {"phase", phase}, {"inputs", in},
                          {"outputs", out}, {"duration_ns", duration}};
      if (layer >= 0) o["layer"] = layer;
      ops.push_back(o);
    };
    op("f00", "FORWARD", 0, {0}, {1});
    op("f01", "FORWARD", 0, {1}, {2});
    op("f02", "FORWARD", 0, {2}, {3});
    op("f10", "FORWARD", 1, {3}, {4});
    op("f11", "FORWARD", 1, {4}, {5});
    op("f12", "FORWARD", 1, {5}, {6});
    op("b12", "BACKWARD", 1, {6, 5}, {10});
    op("b11", "BACKWARD", 1, {10, 4}, {11});
    op("b10", "BACKWARD", 1, {11, 3}, {12});
    op("b02", "BACKWARD", 0, {12, 2}, {13});
    op("b01", "BACKWARD", 0, {13, 1}, {14});
    op("b00", "BACKWARD", 0, {14, 0}, {15});
    op("opt", "OPTIMIZER", -1, {15}, {});
    j["iterations"].push_back({{"ops", ops}});
  }
  return testing::TraceFromJson(j.dump(), "round.json");
}

TEST_CASE("Execute: round sizes, Algorithm 3 and policies agree op for op",
          "[varying][replay][execute]") {
  const Trace trace = RoundRun(8);
  ExecuteOptions o;
  o.replay = RuntimeModel();  // one key, planning on one iteration, nothing remembered
  o.replay.simulator.device.capacity_bytes = 600;
  std::vector<ReplayRow> simulated, executed;
  absl::StatusOr<ReplaySummary> s =
      RunReplay(trace, o.replay, [&](const ReplayRow& r) { simulated.push_back(r); });
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  absl::StatusOr<ReplaySummary> e =
      RunExecutedReplay(trace, o, [&](const ReplayRow& r) { executed.push_back(r); });
  INFO(e.status().ToString());
  REQUIRE(e.ok());
  REQUIRE(executed.size() == 8);
  CHECK(StageLetters(executed) == "WWGGGSSS");
  std::vector<RowDifference> diffs;
  for (size_t t = 0; t < executed.size(); ++t) {
    CompareReplayRows(simulated[t], executed[t], &diffs);
  }
  for (const RowDifference& d : diffs) {
    UNSCOPED_INFO("iteration " << d.iteration << ": " << d.field << " simulated " << d.simulated
                               << ", executed " << d.executed);
  }
  CHECK(diffs.empty());
  // WarmUp at 600 B: f12 allocates a6 with x, a1..a5 resident (700 B):
  // Algorithm 3 swaps out the earliest 100-byte tensor not used by f12, x.
  // b12 allocates g10 with a1..a6 resident (700 B): it swaps out a1. Then
  // b01 and b00 bring a1 and x back (passive swap-ins; 300 B each time).
  // 2 ops with a failed allocation, 2 passive swap-outs, nothing
  // unresolved; the op clock gives 13 ops x 100 ns.
  for (int t : {0, 1}) {
    CHECK(executed[t].ooms == 2);
    CHECK(executed[t].passive_swaps == 2);
    CHECK(executed[t].unresolved_ooms == 0);
    CHECK(executed[t].time_ns == 1300);
  }
  // From GenPolicy on a policy runs and keeps the 600 B: no allocation
  // fails, every item is found.
  for (int t = 2; t < 8; ++t) {
    CHECK(executed[t].policy >= 0);
    CHECK(executed[t].items > 0);
    CHECK(executed[t].matched == executed[t].items);
    CHECK(executed[t].ooms == 0);
    CHECK(executed[t].passive_swaps == 0);
  }
}

TEST_CASE("Execute: the runtime and the replay make the same stage-machine decisions",
          "[varying][replay][execute][library]") {
  // One policy library (varying/policy_library.h) decides for both. m = 1,
  // n = 2: WarmUp 0-1, GenPolicy 2-4 running the policies planned at the
  // ends of 1, 2, 3 (ids 0, 1, 2), Stable 5-7. Iterations 2 and 4 take
  // 200 ns per op: policy 1's GenPolicy run (iteration 3) is 13 x 100 =
  // 1,300 ns on the op clock against 2,600 ns for policies 0 and 2, so the
  // Stable candidate is policy 1 — neither the first nor the latest — in
  // both runs. (One key: the input signature decides nothing; the toy's x
  // is born at f00, which reads it — not in the runtime's signature.)
  const Trace trace = RoundRun(8, {100, 100, 200, 100, 200, 100, 100, 100});
  ExecuteOptions o;
  o.replay = RuntimeModel();  // one key, planning on one iteration, nothing remembered
  o.replay.simulator.device.capacity_bytes = 600;
  std::vector<ReplayRow> simulated, executed;
  ReplaySummary s, e;
  RunBoth(trace, o, &simulated, &executed, &s, &e, /*same_inputs=*/false);
  REQUIRE(executed.size() == 8);
  CHECK(StageLetters(simulated) == "WWGGGSSS");
  CHECK(StageLetters(executed) == StageLetters(simulated));
  const std::vector<int32_t> chosen = {-1, -1, 0, 1, 2, 1, 1, 1};
  for (size_t t = 0; t < executed.size(); ++t) {
    INFO("iteration " << t);
    CHECK(simulated[t].policy == chosen[t]);
    CHECK(executed[t].policy == simulated[t].policy);
    CHECK(executed[t].next_stage == simulated[t].next_stage);
    CHECK(executed[t].generated_policy == simulated[t].generated_policy);
  }
  CHECK(executed[3].time_ns == 1300);
  CHECK(executed[2].time_ns == 2600);
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

  // The runtime's provider gets records, not an envelope.
  o.replay = RuntimeModel();
  o.replay.plan_on = PlanningInput::kEnvelope;
  st = run(o);
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("plan_on is envelope"));

  o.replay = RuntimeModel();
  o.arena_capacity_ratio = 0.5;
  st = run(o);
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("arena_capacity_ratio is 0.5"));

  // The simulated replay checks the same rule.
  ReplayOptions r = RuntimeModel();
  r.plan_on = PlanningInput::kEnvelope;
  st = RunReplay(trace, r, [](const ReplayRow&) {}).status();
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("plan_on is envelope"));
}

}  // namespace
}  // namespace swapplan
