// Golden tests of `swapplan replay`: per-iteration rows and the summary on a
// small synthesized run (a validation pass while Stable: the fuzzy matcher
// keeps going, the naive one crashes) and on the bundled recorded trace;
// JSON totals; the compact --rows modes; --explain; usage errors.
//
// The synthesized trace is written by the test into a temporary directory:
//   swapplan synth --model gpt2 --layers 4 --hidden 256 --ffn 1024 --heads 4
//       --vocab 1024 --seq 1024 --device a100-80g --flops-efficiency 0.01
//       --hbm-efficiency 0.01 --iterations 12 --loss-scale-skip-every 10
//       --validation-every 7 --no-names -q -o small.trace
// (4 layers, 360 ops per iteration, unswapped peak 97.62 MiB; a device slowed
// to 1% of its roofline so the link can move what the budget needs.) With
// m = 1 and n = 2 the stages are W W G G G S S S ...: the validation pass
// after trace iteration 6 opens runtime iteration 7, in Stable.
// Regenerate the goldens with:  SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli_replay

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"
#include "swapplan/report/html_report.h"

namespace {

using swapplan::testing::CheckGolden;
using swapplan::testing::CliRun;
using swapplan::testing::Swapplan;

const std::string& SmallTrace() {
  static const std::string path = [] {
    const std::string p = swapplan::testing::TempDir() + "/replay_small.trace";
    CliRun r = Swapplan(
        "synth --model gpt2 --layers 4 --hidden 256 --ffn 1024 --heads 4 --vocab 1024 --seq 1024 "
        "--device a100-80g --flops-efficiency 0.01 --hbm-efficiency 0.01 --iterations 12 "
        "--loss-scale-skip-every 10 --validation-every 7 --no-names -q -o '" +
        p + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return p;
  }();
  return path;
}

// The paper's runtime (one policy at a time, planned on one iteration,
// Algorithm 3 in WarmUp only, nothing remembered across WarmUp).
const std::string kPaperFlags =
    " --policies single --plan-on iteration --oom-handling warmup --remember 0";
const std::string kSmallFlags =
    " --device-memory 83MiB --min-tensor-bytes 0 --warmup-iterations 1 --genpolicy-iterations 2" +
    kPaperFlags;

TEST_CASE("replay: fuzzy matcher through a validation pass in Stable", "[cli][replay]") {
  // Rows 0-1 WarmUp (passive swaps), 2-4 GenPolicy (policies 0, 1, 2, each
  // run in the next iteration), 5-7 Stable with policy 0 (all ran equally
  // fast: the earliest wins). Row 7 starts with the validation pass: every
  // item found, no OOM; the tracker sees the change and row 8 is WarmUp
  // again. Row 9 is the skipped optimizer step.
  CliRun r = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags + " -q");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CheckGolden("replay_small_fuzzy.txt", r.out);
}

TEST_CASE("replay: naive matcher crashes at the first validation pass", "[cli][replay]") {
  // Row 7: the validation pass (64 ops) comes first, so every item's (op
  // ordinal, i-th tensor) lands in it: each swaps a validation tensor about
  // to die (no use after the swap-out, so no use while off device) and the
  // intended tensors stay: an OOM outside warm-up, a crash. --explain lists
  // the tensor each item took and the one it should have.
  CliRun r = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags +
                      " --matcher naive --explain 7 -q");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CheckGolden("replay_small_naive.txt", r.out);
}

TEST_CASE("replay: JSON rows and totals", "[cli][replay]") {
  CliRun r = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags +
                      " --matcher naive --json --rows changes -q");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["trace"] == SmallTrace());
  j["trace"] = "small.trace";
  const nlohmann::json& t = j["totals"];
  CHECK(t["num_iterations"] == 12);
  CHECK(t["first_unresolved_oom_iteration"] == 7);
  CHECK(t["num_ooms_after_warmup"].get<int64_t>() > 0);
  CHECK(t["num_uses_while_off_device"] == 0);
  CHECK(t["num_policies_generated"].get<int64_t>() > 0);
  CheckGolden("replay_small_naive.json", j.dump(2) + "\n");
}

TEST_CASE("replay --html: the page of the naive matcher's crash", "[cli][replay][report]") {
  // The run of "naive matcher crashes at the first validation pass" with
  // --html: the page's data (report/replay_report.h) has --json's totals
  // — 12 iterations, the unresolved OOM in row 7 — and is golden.
  const std::string page = swapplan::testing::TempDir() + "/replay_naive.html";
  CliRun r = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags +
                      " --matcher naive --rows none -q --html '" + page + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CliRun j = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags +
                      " --matcher naive --rows none -q --json");
  REQUIRE(j.exit_code == 0);
  const nlohmann::json totals = nlohmann::json::parse(j.out)["totals"];
  absl::StatusOr<nlohmann::json> data =
      swapplan::ExtractReportData(swapplan::testing::ReadFile(page));
  REQUIRE(data.ok());
  nlohmann::json& d = *data;
  CHECK(d["schema"] == "swapplan-replay-report/1");
  CHECK(d["trace"] == SmallTrace());
  CHECK(d["iterations"].size() == 12);
  // One writer (ReplayTotalsJson): the page's totals are --json's.
  CHECK(d["totals"] == totals);
  CHECK(d["totals"]["num_iterations"] == 12);
  CHECK(d["totals"]["num_unresolved_ooms"].get<int64_t>() > 0);
  CHECK(d["iterations"][7]["num_unresolved_ooms"].get<int64_t>() > 0);
  CHECK(d["capacity_bytes"] == int64_t{83} << 20);  // --device-memory 83MiB, no reserve
  CHECK(d["budget_bytes"] == d["capacity_bytes"]);
  // Every policy a row ran was generated by an earlier row.
  for (const nlohmann::json& row : d["iterations"]) {
    if (row["policy_id"].is_null()) continue;
    bool found = false;
    for (const nlohmann::json& p : d["policies"]) {
      if (p["id"] == row["policy_id"]) found = p["generated_after_iteration"] < row["iteration"];
    }
    CHECK(found);
  }
  d["trace"] = "small.trace";
  d["title"] = "swapplan replay: small.trace on custom";
  CheckGolden("replay_report_small_naive.json", d.dump(1) + "\n");
}

TEST_CASE("replay: compact rows", "[cli][replay]") {
  // --rows changes prints a row when anything but the iteration numbers
  // (and the tracker's figures) differs from the previous one, with the row
  // before it, and the last row. With m = 20 every row is WarmUp: rows 1-5
  // are like row 0 and left out; 6 is printed as the row before the change
  // at 7. --rows none prints only the summary.
  CliRun r = Swapplan("replay '" + SmallTrace() +
                      "' --device-memory 83MiB --min-tensor-bytes 0 --warmup-iterations 20 "
                      "--rows changes -q" + kPaperFlags);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CheckGolden("replay_small_changes.txt", r.out);
  CliRun none = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags + " --rows none -q");
  CHECK(none.exit_code == 0);
  CHECK(none.out.rfind("\nsummary", 0) == 0);
}

TEST_CASE("replay: naive and fuzzy keys side by side", "[cli][replay]") {
  // The paper's runtime on the small run: the fuzzy replay's rows and
  // summary (as replay_small_fuzzy.txt) and a table of both matchers'
  // totals. Naive: the validation pass in row 7 moves every ordinal, its 14
  // items take validation tensors (mismatched) and the step runs out of
  // memory after warm-up (as replay_small_naive.txt's totals).
  CliRun r = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags +
                      " --rows none --compare-matchers -q");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CheckGolden("replay_small_compare.txt", r.out);
  CliRun fuzzy = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags + " --json -q");
  CliRun naive =
      Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags + " --matcher naive --json -q");
  CliRun both = Swapplan("replay '" + SmallTrace() + "'" + kSmallFlags +
                         " --compare-matchers --rows none --json -q");
  REQUIRE(both.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(both.out);
  // Each column equals the replay with that matcher alone.
  CHECK(j["totals_by_matcher"]["fuzzy"] == nlohmann::json::parse(fuzzy.out)["totals"]);
  CHECK(j["totals_by_matcher"]["naive"] == nlohmann::json::parse(naive.out)["totals"]);
  CHECK(j["totals"] == j["totals_by_matcher"]["fuzzy"]);
  CHECK(j["totals_by_matcher"]["naive"]["num_mismatched"].get<int64_t>() > 0);
  CHECK(j["totals_by_matcher"]["fuzzy"]["num_mismatched"] == 0);
}

TEST_CASE("replay: the recorded loss-scale / validation trace", "[cli][replay]") {
  // Four recorded iterations: the first overflows (no optimizer op), a
  // validation pass after iterations 1 and 3. With m = n = 0 policies are
  // made at once.
  CliRun r = Swapplan(
      "replay ../../traces/loss_scale_validation.json.gz --device-memory 2.6MB "
      "--h2d-bandwidth 10GB/s --d2h-bandwidth 10GB/s --min-tensor-bytes 0 --warmup-iterations 0 "
      "--genpolicy-iterations 0 -q" +
      kPaperFlags);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CheckGolden("replay_loss_scale_validation.txt", r.out);
}

TEST_CASE("replay: usage errors", "[cli][replay]") {
  CliRun r = Swapplan("replay '" + SmallTrace() + "' --device-memory 83MiB --matcher exact");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --matcher: 'exact' is not one of fuzzy, naive\n");
  r = Swapplan("replay '" + SmallTrace() + "' --device-memory 83MiB --planner magic");
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("swapplan: --planner: unknown planner 'magic' (known: ", 0) == 0);
  r = Swapplan("replay '" + SmallTrace() + "' --device-memory 83MiB --rows some");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --rows: 'some' is not one of all, changes, none\n");
  r = Swapplan("replay ../../traces/loss_scale_validation.json.gz");
  CHECK(r.exit_code == 2);
  // Every missing input at once, one line each.
  CHECK(r.err ==
        "swapplan: no device memory: give --device-memory or --device "
        "(../../traces/loss_scale_validation.json.gz does not record it)\n"
        "swapplan: no h2d bandwidth: give --h2d-bandwidth or --device "
        "(../../traces/loss_scale_validation.json.gz does not record it)\n"
        "swapplan: no d2h bandwidth: give --d2h-bandwidth or --device "
        "(../../traces/loss_scale_validation.json.gz does not record it)\n");
  r = Swapplan("replay ../../traces/loss_scale_validation.json.gz --device-memory 1MB");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: no h2d bandwidth: give --h2d-bandwidth or --device "
        "(../../traces/loss_scale_validation.json.gz does not record it)\n"
        "swapplan: no d2h bandwidth: give --d2h-bandwidth or --device "
        "(../../traces/loss_scale_validation.json.gz does not record it)\n");
  r = Swapplan("replay '" + SmallTrace() + "' --device-memory 83MiB --reserve 90MiB");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: --reserve 90.00 MiB leaves no budget out of 83.00 MiB of device memory\n");
  r = Swapplan("replay '" + SmallTrace() + "' --device-memory 83MiB --max-length-change 2");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: stage tracker options: max_length_change is 2; must be in [0, 1]\n");
  // The keyed-policy flags: every problem at once, one line each.
  r = Swapplan("replay '" + SmallTrace() +
               "' --device-memory 83MiB --policies many --plan-on future --spread-margin -1 "
               "--remember -2");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: --policies: 'many' is not one of input, single\n"
        "swapplan: --plan-on: 'future' is not one of observed, envelope, iteration\n"
        "swapplan: --spread-margin: -1 is out of range [0, 100]\n"
        "swapplan: --remember: -2 is out of range [0, 2147483647]\n");
}

TEST_CASE("replay: executed on the runtime's host backend, side by side", "[cli][replay]") {
  // The rows and totals are the executed run's (the trace through the
  // runtime shim; time on the op clock), then the totals of the simulated
  // replay of what the runtime does next to them, with the iterations that
  // differ: none (the defaults: WarmUp with Algorithm 3, policies found in
  // GenPolicy and Stable, the one entering Stable planned too; the
  // validation pass and the skipped step sending the tracker back to WarmUp
  // and the next iteration straight back to Stable on the remembered
  // sequence). Algorithm 3's victims among tensors of one size are the
  // earliest registered in the runtime, the earliest in trace order in the
  // simulator: with the runtime's slot order instead, iteration 11 (the
  // second after the skipped step, whose slots were reused in another order)
  // had one more passive swap executed than simulated.
  CliRun r = Swapplan("replay '" + SmallTrace() +
                      "' --device-memory 83MiB --min-tensor-bytes 0 --warmup-iterations 1 "
                      "--genpolicy-iterations 2 --execute host -q");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("iterations differing   0 of 12") != std::string::npos);
  CheckGolden("replay_small_execute.txt", r.out);
  // What the runtime cannot do: usage errors, every one at once.
  r = Swapplan("replay '" + SmallTrace() +
               "' --device-memory 83MiB --execute host --plan-on envelope --oracle");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: --execute needs --plan-on observed or iteration (the runtime's provider gets "
        "a key's last records, not an envelope)\n"
        "swapplan: --execute: --oracle is not available (run it without)\n");
  r = Swapplan("replay '" + SmallTrace() + "' --device-memory 83MiB --execute cuda");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --execute: 'cuda' is not one of host\n");
}

}  // namespace
