// Golden tests of `swapplan advise` and `swapplan report` (and the --html
// of compare and advise): exact stdout, exit statuses (SPEC §10: 0 advice
// given, 3 nothing fits, 2 bad input), and the data embedded in the report
// page (report/html_report.h) for the two-layer toy. The page's drawing is
// tested in headless Chromium (tests/report/browser_test.py). Regenerate
// the goldens with SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli_advise
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/report/html_report.h"

namespace {

using nlohmann::json;
using swapplan::testing::CheckGolden;
using swapplan::testing::CliRun;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

std::string Dir() {
  static const std::string d = [] {
    std::string p = swapplan::testing::TempDir() + "/advise_report";
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

// At 450 B only lru reaches the budget (the toy peaks at 800 B).
TEST_CASE("advise: verdict, best policy, what limits it, next steps", "[cli][advise]") {
  CliRun r = Swapplan("advise traces/two_layers.json --device-memory 450B");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CheckGolden("advise_two_layers.txt", r.out);

  // 600 B: lru best, recompute runner-up; JSON.
  CliRun j = Swapplan("advise traces/two_layers.json --json");
  CHECK(j.exit_code == 0);
  CheckGolden("advise_two_layers.json", j.out);
  const json doc = json::parse(j.out);
  CHECK(doc["fits_without_swapping"] == false);
  CHECK(doc["best"]["planner"] == "lru");
  CHECK(doc["runner_up"]["planner"] == "recompute");
  CHECK(doc["policy_file"].is_null());
}

TEST_CASE("advise: the peak fits, nothing to swap", "[cli][advise]") {
  CliRun r = Swapplan("advise traces/two_layers.json --device-memory 1KiB");
  CHECK(r.exit_code == 0);
  CheckGolden("advise_two_layers_fits.txt", r.out);
}

TEST_CASE("advise: nothing fits exits 3 after the advice", "[cli][advise]") {
  CliRun r = Swapplan("advise traces/two_layers.json --device-memory 250B");
  CHECK(r.exit_code == 3);
  CheckGolden("advise_two_layers_nothing.txt", r.out);
  CHECK(r.err == "swapplan: no planner reaches the budget of 250 B on traces/two_layers.json\n");
}

TEST_CASE("advise: -o writes the best policy, --html the page", "[cli][advise]") {
  const std::string policy = Dir() + "/best.json", html = Dir() + "/advise.html";
  CliRun r = Swapplan("advise traces/two_layers.json --device-memory 450B -o '" + policy +
                      "' --html '" + html + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("wrote      " + policy + " (lru)\n") != std::string::npos);
  absl::StatusOr<swapplan::Policy> p = swapplan::ReadPolicy(policy);
  REQUIRE(p.ok());
  CHECK(p->planner == "lru");
  CHECK(p->items.size() == 4);
  absl::StatusOr<json> data = swapplan::ExtractReportData(ReadFile(html));
  REQUIRE(data.ok());
  CHECK((*data)["advice"]["best"] == "lru");
  // The policy written is the one the report shows: check it simulates.
  CliRun check = Swapplan("check traces/two_layers.json '" + policy + "'");
  CHECK(check.exit_code == 0);
}

// The demo trace at 34 GiB: the best overall is hybrid, hyperoffload the
// runner-up; its parameter windows wrap around the iteration boundary, so
// for the runtime it is refused, named with the reason, and the policy
// written is one the runtime loads.
TEST_CASE("advise: --executor runtime keeps the policies the runtime can run", "[cli][advise]") {
  const std::string policy = Dir() + "/runtime.pb";
  CliRun j = Swapplan("advise ../../traces/llama2-7b-dp8-seq4096.trace.gz --device-memory 34GiB "
                      "--executor runtime --json -o '" + policy + "'");
  REQUIRE(j.exit_code == 0);
  const json doc = json::parse(j.out);
  CHECK(doc["executor"] == "runtime");
  bool hyperoffload_refused = false;
  for (const json& row : doc["rows"]) {
    if (row["not_executable_reason"].is_null()) continue;
    CHECK(row["feasible"] == true);
    CHECK(row["planner"] != doc["best"]["planner"]);
    if (row["planner"] == "hyperoffload") {
      hyperoffload_refused = row["not_executable_reason"].get<std::string>().find(
                                 "wraps around the iteration boundary") != std::string::npos;
    }
  }
  CHECK(hyperoffload_refused);
  bool search_skipped = false;
  for (const json& k : doc["planners_skipped"]) {
    if (k["planner"] == "advisor") {
      search_skipped = k["reason"].get<std::string>().find("reorder") != std::string::npos;
    }
  }
  CHECK(search_skipped);
  absl::StatusOr<swapplan::Policy> p = swapplan::ReadPolicy(policy);
  REQUIRE(p.ok());
  CHECK(p->planner == doc["best"]["planner"].get<std::string>());
  CHECK(swapplan::CheckRuntimeExecutable(*p).ok());
  // Without --executor: every row is a candidate, none refused.
  CliRun any = Swapplan("advise ../../traces/llama2-7b-dp8-seq4096.trace.gz --device-memory 34GiB "
                        "--json");
  REQUIRE(any.exit_code == 0);
  const json all = json::parse(any.out);
  CHECK(all["executor"] == "any");
  for (const json& row : all["rows"]) CHECK(row["not_executable_reason"].is_null());
}

TEST_CASE("advise: a model synthesized first", "[cli][advise]") {
  CliRun r = Swapplan(
      "advise --model llama2-7b --layers 2 --hidden 512 --heads 8 --ffn 1408 --vocab 1000 "
      "--seq 1024 --dp 2 --zero 1 --device a100-80gb --device-memory 100MiB");
  CHECK(r.exit_code == 0);
  CheckGolden("advise_tiny_model.txt", r.out);
}

TEST_CASE("advise: bad input exits 2 naming the problem", "[cli][advise]") {
  CliRun both = Swapplan("advise traces/two_layers.json --model llama2-7b --tp 2");
  CHECK(both.exit_code == 2);
  CHECK(both.err ==
        "swapplan: --model describes a model to synthesize: give TRACE or --model, not both\n"
        "swapplan: --tp describes a model to synthesize: give TRACE or --model, not both\n");
  CliRun none = Swapplan("advise");
  CHECK(none.exit_code == 2);
  CHECK(none.err == "swapplan: advise: give a TRACE, or a model to synthesize with --model NAME\n");
  CliRun model = Swapplan("advise --model gpt-9");
  CHECK(model.exit_code == 2);
  CHECK(model.err.find("gpt-9") != std::string::npos);
  CliRun scale = Swapplan("advise --model llama2-7b --compute-scale 0.5x");
  CHECK(scale.exit_code == 2);
  CHECK(scale.err ==
        "swapplan: --compute-scale: a synthesized trace has the device's own op durations\n");
}

TEST_CASE("report: the data embedded in the page", "[cli][report]") {
  const std::string html = Dir() + "/report.html";
  CliRun r = Swapplan("report traces/two_layers.json --device-memory 450B -o '" + html + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.empty());
  const std::string page = ReadFile(html);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  absl::StatusOr<json> data = swapplan::ExtractReportData(page);
  REQUIRE(data.ok());
  CheckGolden("report_two_layers.json", data->dump(1) + "\n");
}

TEST_CASE("report: given policies are shown, compare --html writes the same page",
          "[cli][report]") {
  const std::string dir = Dir() + "/policies";
  REQUIRE(Swapplan("compare traces/two_layers.json --save-policies '" + dir + "'").exit_code == 0);
  const std::string html = Dir() + "/given.html";
  CliRun r = Swapplan("report traces/two_layers.json --policy '" + dir +
                      "/recompute.json' --policy '" + dir + "/lru.json' -o '" + html + "'");
  REQUIRE(r.exit_code == 0);
  absl::StatusOr<json> data = swapplan::ExtractReportData(ReadFile(html));
  REQUIRE(data.ok());
  // The policies' budget (600 B, their device) is the budget; both are rows.
  CHECK((*data)["budget_bytes"] == 600);
  const json& compare = (*data)["compare"];
  CHECK(compare[compare.size() - 2]["planner"] == "recompute.json");
  CHECK(compare[compare.size() - 1]["planner"] == "lru.json");
  int featured = 0;
  for (const json& p : (*data)["policies"]) featured += p["featured"].get<bool>() ? 1 : 0;
  CHECK(featured == 2);

  const std::string from_compare = Dir() + "/compare.html";
  CliRun c = Swapplan("compare traces/two_layers.json --device-memory 450B --html '" +
                      from_compare + "'");
  CHECK(c.exit_code == 0);
  absl::StatusOr<json> same = swapplan::ExtractReportData(ReadFile(from_compare));
  REQUIRE(same.ok());
  // compare's default set: 7 planners, + selective, te-offload, save-on-cpu,
  // + hybrid and hyperoffload (they plan in milliseconds: issue 33).
  CHECK((*same)["compare"].size() == 7 + 3 + 2);
  CHECK((*same)["advice"]["best"] == "lru");
}

TEST_CASE("report: bad input exits 2", "[cli][report]") {
  CliRun none = Swapplan("report traces/two_layers.json");
  CHECK(none.exit_code == 2);
  CHECK(none.err == "swapplan: report: -o FILE is required (the HTML page to write)\n");
  CliRun missing = Swapplan("report traces/two_layers.json --policy nope.json -o '" + Dir() +
                            "/x.html'");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("--policy nope.json: ") != std::string::npos);
}

}  // namespace
