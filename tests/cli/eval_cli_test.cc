// Golden tests of `swapplan whatif` and `swapplan regress`: exact stdout,
// exit statuses (SPEC §10; regress: 1 when a planner regressed).
//
// whatif runs on a tiny Llama-shaped configuration (2 layers, hidden 512,
// seq 1024) on a 300 MiB device — milliseconds per search; the library
// test (tests/eval/whatif_test.cc) checks the search against a scan of
// every value. Regenerate the goldens with
//   SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli_eval
#include <regex>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"

namespace {

using swapplan::testing::CheckGolden;
using swapplan::testing::CliRun;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

const char* kTiny =
    "whatif --model llama2-7b --layers 2 --hidden 512 --heads 8 --ffn 1408 --vocab 1000 "
    "--seq 1024 --device a100-80g --device-memory 300MiB";

// The search time appears only when it exceeds a second (slow builds).
std::string MaskSeconds(const std::string& text) {
  return std::regex_replace(text, std::regex(R"((searched +[0-9]+ values) in [0-9.]+ s)"), "$1");
}

TEST_CASE("whatif: batch scaling table and summary", "[cli][whatif]") {
  CliRun r = Swapplan(std::string(kTiny) + " --scale batch");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CheckGolden("whatif_tiny_batch.txt", MaskSeconds(r.out));
}

TEST_CASE("whatif: layers with a slowdown limit and a chosen extrapolation, JSON", "[cli][whatif]") {
  CliRun r = Swapplan(std::string(kTiny) +
                      " --scale layers --max-overhead 50% --extrapolate-from 2,3 "
                      "--planners noswap,chameleon,recompute");
  CHECK(r.exit_code == 0);
  CheckGolden("whatif_tiny_layers.txt", MaskSeconds(r.out));
  CliRun j = Swapplan(std::string(kTiny) +
                      " --scale layers --max-overhead 50% --extrapolate-from 2,3 "
                      "--planners noswap,chameleon,recompute --json");
  REQUIRE(j.exit_code == 0);
  CheckGolden("whatif_tiny_layers.json", j.out);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc["dimension"] == "layers");
  CHECK(doc["max"]["noswap"]["value"] == 3);
  CHECK(doc["extrapolation_from"] == 2);
}

TEST_CASE("whatif: usage errors exit 2", "[cli][whatif]") {
  CliRun r = Swapplan(std::string(kTiny) + " --scale width");
  CHECK(r.exit_code == 2);
  r = Swapplan(std::string(kTiny));  // --scale is required
  CHECK(r.exit_code == 2);
  r = Swapplan(std::string(kTiny) + " --scale hidden --step 100");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: synth: --hidden 612 is not divisible by --heads 8 (hidden 512 + step 100)\n");
  r = Swapplan(std::string(kTiny) + " --scale batch --max-overhead fast");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --max-overhead: invalid fraction 'fast'\n");
  r = Swapplan(std::string(kTiny) + " --scale batch --planners lru,magic");
  CHECK(r.exit_code == 2);
  CHECK(Swapplan("whatif --help").exit_code == 0);
}

}  // namespace
