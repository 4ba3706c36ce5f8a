// RunReplay on small synthesized runs: the per-iteration stages and policies
// Algorithm 1 implies, best-of-n, the summary against the rows, the stage
// scoping of Algorithm 3, and option errors. (Golden rows of the same runs
// through the CLI: tests/cli/replay_cli_test.cc.)
#include "swapplan/eval/replay.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/synth_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/synth/synth.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

// The CLI test's model: GPT-2 shape, 4 layers, 360 ops per iteration,
// unswapped peak 97.62 MiB, a device at 1% of its roofline.
Trace SmallRun(int32_t iterations, int32_t skip_every, int32_t validation_every) {
  SynthOptions o = testing::SmallGpt2Options();
  o.iterations = iterations;
  o.loss_scale_skip_every = skip_every;
  o.validation_every = validation_every;
  o.tensor_names = false;
  absl::StatusOr<Trace> t = SynthesizeTrace(o);
  REQUIRE(t.ok());
  return *std::move(t);
}

// The paper's runtime: one policy at a time, planned on the iteration just
// seen, Algorithm 3 in WarmUp only, nothing remembered across WarmUp.
ReplayOptions SmallOptions() {
  ReplayOptions o;
  o.simulator.device.capacity_bytes = 83LL << 20;
  o.chameleon.min_tensor_bytes = 0;
  o.tracker.warmup_iterations = 1;
  o.tracker.genpolicy_iterations = 2;
  o.keying = PolicyKeying::kSingle;
  o.plan_on = PlanningInput::kIteration;
  o.oom_handling_in_all_stages = false;
  o.remembered_sequences = 0;
  return o;
}

std::vector<ReplayRow> Replay(const Trace& t, const ReplayOptions& o, ReplaySummary* sum) {
  std::vector<ReplayRow> rows;
  absl::StatusOr<ReplaySummary> s = RunReplay(t, o, [&](const ReplayRow& r) { rows.push_back(r); });
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  *sum = *s;
  return rows;
}

std::string StageLetters(const std::vector<ReplayRow>& rows) {
  std::string s;
  for (const ReplayRow& r : rows) s += StageName(r.stage)[0];
  return s;
}

TEST_CASE("Replay: stages, policies and matching on a validation run", "[varying][replay]") {
  // 12 iterations, a skipped step at trace iteration 9, validation after 6.
  // m = 1, n = 2 (Algorithm 1 as in stage_tracker_test.cc):
  //   row 0 W (step 1), 1 W (step 2 > 1: next G) -> policy 0 from row 1,
  //   rows 2-4 G running policies 0, 1, 2 (made at the end of rows 1-3),
  //   row 4: step 3 > 2 -> next S; rows 5-7 S with the best: all ran in
  //   29.1 ms, so the earliest, policy 0. Row 7 opens with the validation
  //   pass (424 ops): next W; row 8 differs from 7 (W), row 9 is the skip
  //   (201 ops), rows 10, 11 W.
  Trace t = SmallRun(12, 10, 7);
  for (MatcherKind kind : {MatcherKind::kFuzzy, MatcherKind::kNaive}) {
    INFO("matcher " << MatcherKindName(kind));
    ReplayOptions o = SmallOptions();
    o.matcher = kind;
    ReplaySummary sum;
    std::vector<ReplayRow> rows = Replay(t, o, &sum);
    REQUIRE(rows.size() == 12);
    CHECK(StageLetters(rows) == "WWGGGSSSWWWW");
    const std::vector<int32_t> policy = {-1, -1, 0, 1, 2, 0, 0, 0, -1, -1, -1, -1};
    const std::vector<int32_t> generated = {-1, 0, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1};
    const std::vector<int32_t> ops = {360, 360, 360, 360, 360, 360, 360, 424, 360, 201, 360, 360};
    for (size_t i = 0; i < rows.size(); ++i) {
      INFO("row " << i);
      CHECK(rows[i].iteration == static_cast<int32_t>(i));
      CHECK(rows[i].policy == policy[i]);
      CHECK(rows[i].generated_policy == generated[i]);
      CHECK(rows[i].ops == ops[i]);
      CHECK(rows[i].items == (policy[i] >= 0 ? 14 : 0));
      // WarmUp rows handle their failures with passive swaps.
      if (rows[i].stage == Stage::kWarmUp) {
        CHECK(rows[i].ooms == 14);
        CHECK(rows[i].passive_swaps == 33);
        CHECK(rows[i].unresolved_ooms == 0);
      }
    }
    CHECK(rows[7].trace_iteration == 6);
    for (int i : {2, 3, 4, 5, 6}) {
      CHECK(rows[i].matched == 14);
      CHECK(rows[i].ooms == 0);
    }
    if (kind == MatcherKind::kFuzzy) {
      CHECK(rows[7].matched == 14);
      CHECK(rows[7].ooms == 0);
      CHECK(sum.ooms_after_warmup == 0);
      CHECK(sum.first_unresolved_oom_iteration == -1);
    } else {
      CHECK(rows[7].matched == 0);
      CHECK(rows[7].mismatched == 14);
      CHECK(rows[7].unresolved_ooms > 0);
      CHECK(sum.first_unresolved_oom_iteration == 7);
    }
    CHECK(sum.uses_while_off_device == 0);
    // The summary is the rows' sum.
    int64_t ooms = 0, matched = 0, items = 0, time = 0;
    for (const ReplayRow& r : rows) {
      ooms += r.ooms;
      matched += r.matched;
      items += r.items;
      time += r.time_ns;
    }
    CHECK(sum.iterations == 12);
    CHECK(sum.runtime_iterations == 12);
    CHECK(sum.iterations_by_stage[0] == 6);
    CHECK(sum.iterations_by_stage[1] == 3);
    CHECK(sum.iterations_by_stage[2] == 3);
    CHECK(sum.policies_generated == 3);
    CHECK(sum.ooms == ooms);
    CHECK(sum.matched == matched);
    CHECK(sum.items == items);
    CHECK(sum.time_ns == time);
  }
}

TEST_CASE("Replay: Stable keeps the policy whose iteration ran fastest", "[varying][replay]") {
  // The same run without changes, but trace iteration 3 recorded 10% faster
  // ops. Policy 1 (made from row 2) runs in row 3: it scores best, and
  // Stable (rows 5-7) runs it.
  Trace base = SmallRun(8, 0, 0);
  nlohmann::json j = nlohmann::json::parse(TraceToJson(base));
  for (auto& op : j["iterations"][3]["ops"]) {
    op["duration_ns"] = op["duration_ns"].get<int64_t>() * 9 / 10;
  }
  Trace t = testing::TraceFromJson(j.dump());
  ReplaySummary sum;
  std::vector<ReplayRow> rows = Replay(t, SmallOptions(), &sum);
  CHECK(StageLetters(rows) == "WWGGGSSS");
  CHECK(rows[3].policy == 1);
  CHECK(rows[3].time_ns < rows[2].time_ns);
  CHECK(rows[3].time_ns < rows[4].time_ns);
  CHECK(rows[5].policy == 1);
  CHECK(rows[7].policy == 1);
}

TEST_CASE("Replay: Algorithm 3 in WarmUp only unless asked", "[varying][replay]") {
  // Naive matcher, first 8 rows: row 7 fails outside warm-up. By default
  // that is a crash (unresolved, no passive swaps); with Algorithm 3 in all
  // stages the passive swaps resolve it.
  Trace t = SmallRun(8, 0, 7);
  ReplayOptions o = SmallOptions();
  o.matcher = MatcherKind::kNaive;
  ReplaySummary plain, handled;
  std::vector<ReplayRow> a = Replay(t, o, &plain);
  o.oom_handling_in_all_stages = true;
  std::vector<ReplayRow> b = Replay(t, o, &handled);
  REQUIRE(a.size() == 8);
  CHECK(a[7].unresolved_ooms > 0);
  CHECK(a[7].passive_swaps == 0);
  CHECK(a[7].first_oom_op >= 0);
  CHECK(b[7].ooms > 0);
  CHECK(b[7].passive_swaps > 0);
  CHECK(b[7].unresolved_ooms == 0);
  CHECK(handled.unresolved_ooms == 0);
}

TEST_CASE("Replay: explained iteration and option errors", "[varying][replay]") {
  Trace t = SmallRun(8, 0, 7);
  ReplayOptions o = SmallOptions();
  o.matcher = MatcherKind::kNaive;
  o.explain_iteration = 7;
  ReplaySummary sum;
  std::vector<ReplayRow> rows = Replay(t, o, &sum);
  REQUIRE(rows[7].reports.size() == 14);
  for (const ItemReport& r : rows[7].reports) {
    CHECK(r.outcome == ItemOutcome::kMismatched);
    CHECK(r.expected_tensor_id != r.tensor_id);
  }
  CHECK(rows[6].reports.empty());

  auto message = [&](const ReplayOptions& bad) {
    return std::string(RunReplay(t, bad, [](const ReplayRow&) {}).status().message());
  };
  ReplayOptions bad = SmallOptions();
  bad.simulator.device.capacity_bytes = 0;
  CHECK(message(bad) ==
        "replay options: simulator.device.capacity_bytes is 0; must be > 0 and not unlimited");
  bad = SmallOptions();
  bad.simulator.device.reserve_bytes = bad.simulator.device.capacity_bytes;
  CHECK(message(bad) == "replay options: simulator.device.reserve_bytes is 87031808; must be >= 0 "
                        "and below the capacity");
  bad = SmallOptions();
  bad.runtime_key_bits = 16;
  CHECK(message(bad) == "replay options: runtime_key_bits is 16; must be 32 or 64");
  bad = SmallOptions();
  bad.planner = "magic";
  CHECK(message(bad).find("unknown planner 'magic'") != std::string::npos);
  bad = SmallOptions();
  bad.max_iterations = 3;
  ReplaySummary three;
  CHECK(Replay(t, bad, &three).size() == 3);
  CHECK(three.runtime_iterations == 8);
}

}  // namespace
}  // namespace swapplan
