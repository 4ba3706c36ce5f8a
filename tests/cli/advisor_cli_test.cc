// Golden tests of `swapplan search` and of the advisor in `swapplan
// compare`, on the two-layer trace of tests/data/traces/two_layers.json
// (worked out by hand in tests/planners/baselines_test.cc). The search runs
// a fixed number of generations on one thread, so its output is exact
// except for the search time, which is masked.
// Regenerate the goldens with:  SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli_advisor
#include <algorithm>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"

namespace {

using swapplan::testing::CheckGolden;
using swapplan::testing::CliRun;
using swapplan::testing::MaskPlanTimes;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

// The search time in `search`'s summary.
std::string MaskSearchTime(const std::string& text) {
  return swapplan::testing::MaskDurations(text, " in ", ";", " in <time>;");
}

const char* kSearch =
    "search traces/two_layers.json --device-memory 600B --max-generations 5 --population 8 "
    "--seed 3";

TEST_CASE("search: summary golden, progress on stderr, policy checks clean", "[cli][advisor]") {
  CliRun r = Swapplan(std::string(kSearch) + " --threads 1 --log-generations");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CheckGolden("search_two_layers.txt", MaskSearchTime(r.out));
  // --log-generations: one line per generation: 0 (the first) .. 5.
  CHECK(r.err.find("gen    0  best ") != std::string::npos);
  CHECK(r.err.find("gen    5  best ") != std::string::npos);
  CHECK(r.err.find("gen    6 ") == std::string::npos);
  // The written policy carries the schedule and the pool, and passes the
  // checker and the simulator at its budget.
  // Without it, stderr (a pipe here, not a terminal) gets no progress at all.
  CliRun plain = Swapplan(std::string(kSearch) + " --threads 1");
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.err.empty());
  const std::string policy = swapplan::testing::TempDir() + "/advisor.json";
  REQUIRE(Swapplan(std::string(kSearch) + " --quiet -o " + policy).exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(ReadFile(policy));
  CHECK(j["planner"] == "advisor");
  CHECK(j["schedule"].size() == 12);
  CHECK(j["pool"]["classes"].size() >= 1);
  CliRun c = Swapplan("check traces/two_layers.json " + policy);
  CHECK(c.exit_code == 0);
  CliRun s = Swapplan("simulate traces/two_layers.json " + policy);
  CHECK(s.exit_code == 0);
  CHECK(s.out.find("pool            ") != std::string::npos);
  // Same seed, same summary (the JSON form, search time aside).
  CliRun a = Swapplan(std::string(kSearch) + " --json --quiet --threads 1");
  CliRun b = Swapplan(std::string(kSearch) + " --json --quiet --threads 2");
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(a.err.empty());
  ja.erase("search_time_ns");
  jb.erase("search_time_ns");
  CHECK(ja == jb);
}

TEST_CASE("search: infeasible budget exits 3, bad flags exit 2", "[cli][advisor]") {
  CliRun r = Swapplan("search traces/two_layers.json --device-memory 100B --max-generations 2 --quiet");
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("advisor: the budget of 100 B cannot hold the pool objects") !=
        std::string::npos);
  CHECK(Swapplan("search traces/two_layers.json --device-memory 600B --mutation-probability 2").exit_code == 2);
  CHECK(Swapplan("search traces/two_layers.json --device-memory 600B --initial best").exit_code ==
        2);
  CliRun none = Swapplan(
      "search traces/two_layers.json --device-memory 600B --time-limit-ns 0s --max-generations 0");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no stopping rule") != std::string::npos);
}

TEST_CASE("compare: advisor on request; planner options for advisor and chameleon",
          "[cli][advisor]") {
  CliRun r = Swapplan(
      "compare traces/two_layers.json --device-memory 600B "
      "--planners chameleon,lru,recompute,advisor --planner-option chameleon.min-tensor-bytes=0 "
      "--planner-option advisor.max-generations=5 --planner-option advisor.population=8 "
      "--planner-option advisor.threads=1 --planner-option advisor.seed=3");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CheckGolden("compare_two_layers_advisor.txt", MaskPlanTimes(r.out));
  CliRun bad = Swapplan(
      "compare traces/two_layers.json --device-memory 600B --planners advisor "
      "--planner-option advisor.gens=5");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("advisor has no option 'gens'") != std::string::npos);
  CliRun bad_value = Swapplan(
      "compare traces/two_layers.json --device-memory 600B --planners chameleon "
      "--planner-option chameleon.release-wait=sometimes");
  CHECK(bad_value.exit_code == 2);
  CHECK(bad_value.err.find(
            "chameleon option release-wait: 'sometimes' is not one of when-needed, never") !=
        std::string::npos);
  CHECK(Swapplan("compare traces/two_layers.json --device-memory 600B --planners lru "
                 "--planner-option advisor")
            .exit_code == 2);
}

// The parameters a policy records are the planner's options by the same
// names: every one of them is accepted back as a flag of the command that
// plans with that planner (`search` for the advisor, `plan` for chameleon)
// and as `compare --planner-option PLANNER.NAME=VALUE`, and planning again
// with them writes the same parameters.
TEST_CASE("recorded policy parameters are accepted back as flags", "[cli][advisor][options]") {
  const std::string dir = swapplan::testing::TempDir() + "/round_trip";
  CliRun saved = Swapplan(
      "compare traces/two_layers.json --device-memory 800B --planners "
      "chameleon,recompute,vdnn,bucket,lru,advisor --planner-option chameleon.min-tensor-bytes=0 "
      "--planner-option advisor.max-generations=2 "
      "--planner-option advisor.population=6 --planner-option advisor.threads=1 "
      "--save-policies '" + dir + "'");
  INFO(saved.err);
  REQUIRE(saved.exit_code == 0);
  for (const char* planner : {"chameleon", "recompute", "vdnn", "bucket", "lru", "advisor"}) {
    INFO("planner " << planner);
    const nlohmann::json policy =
        nlohmann::json::parse(ReadFile(dir + "/" + planner + ".json"));
    std::string flags, options;
    for (const nlohmann::json& p : policy["parameters"]) {
      const std::string name = p["name"], value = p["value"];
      // Flags spell the name with dashes (--min-tensor-bytes).
      std::string flag = name;
      std::replace(flag.begin(), flag.end(), '_', '-');
      flags += " --" + flag + " '" + value + "'";
      options += " --planner-option '" + std::string(planner) + "." + name + "=" + value + "'";
    }
    CliRun c = Swapplan("compare traces/two_layers.json --device-memory 800B --planners " +
                        std::string(planner) + options);
    INFO(c.err);
    CHECK(c.exit_code == 0);
    const std::string again = dir + "/" + planner + "_again.json";
    if (std::string(planner) == "chameleon" || std::string(planner) == "advisor") {
      const std::string command = std::string(planner) == "chameleon" ? "plan" : "search --quiet";
      CliRun r = Swapplan(command + " traces/two_layers.json --device-memory 800B" + flags +
                          " -o '" + again + "'");
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      CHECK(nlohmann::json::parse(ReadFile(again))["parameters"] == policy["parameters"]);
    }
  }
}

}  // namespace
