// Golden tests of `swapplan whatif` and `swapplan regress`: exact stdout,
// exit statuses (SPEC §10; regress: 1 when a planner regressed).
//
// whatif runs on a tiny Llama-shaped configuration (2 layers, hidden 512,
// seq 1024) on a 300 MiB device — milliseconds per search; the library
// test (tests/eval/whatif_test.cc) checks the search against a scan of
// every value. Regenerate the goldens with
//   SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli_eval
#include <filesystem>
#include <sstream>
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
  return swapplan::testing::MaskDurations(text, " values in ", "", " values");
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

// The request of tests/eval/whatif_test.cc's "longest prompt" case: noswap
// fits prompt 5120, hyperoffload with its KV windows 6144 (worked out
// there).
const char* kTinyRequest =
    "whatif --model llama2-7b --layers 1 --hidden 8 --heads 2 --kv-heads 2 --ffn 16 --vocab 16 "
    "--inference --batch 1 --prompt 1024 --generate 1 --device-memory 988580B "
    "--memory-bandwidth 1GB/s --peak-flops 1e12 --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s "
    "--copy-latency 0ns --planner-option hyperoffload.min_tensor_bytes=0B";

TEST_CASE("whatif: --max sequence of an inference request", "[cli][whatif]") {
  CliRun r = Swapplan(std::string(kTinyRequest) + " --max sequence");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CheckGolden("whatif_tiny_request.txt", MaskSeconds(r.out));
  // --max is --scale's alias.
  CliRun s = Swapplan(std::string(kTinyRequest) + " --scale seq");
  CHECK(s.out == r.out);
  CliRun j = Swapplan(std::string(kTinyRequest) + " --max sequence --json");
  REQUIRE(j.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc["max"]["noswap"]["value"] == 5120);
  CHECK(doc["max"]["hyperoffload"]["value"] == 6144);
  CliRun both = Swapplan(std::string(kTinyRequest) + " --max sequence --scale seq");
  CHECK(both.exit_code == 2);
  CHECK(both.err == "swapplan: --scale and --max name the dimension twice: give one\n");
}

TEST_CASE("synth: inference-only flags need --inference", "[cli][synth]") {
  CliRun r = Swapplan("synth --prompt 8192 --generate 4 -o x.trace");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: --prompt needs --inference (training: --seq)\n"
        "swapplan: --generate needs --inference\n");
  r = Swapplan("synth --inference --seq 100 -o x.trace");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: --seq is for training traces; with --inference the prompt length is "
        "--prompt\n");
  r = Swapplan("synth --inference --recompute -o x.trace");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: synth: --recompute (nothing is saved for a backward pass) is not supported "
        "with --inference\n");
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

TEST_CASE("bundled synthesized traces are what traces/README.md's commands write",
          "[cli][traces]") {
  // Every "`swapplan synth ... -o traces/X`" command of the table, run with
  // the output redirected, must reproduce traces/X byte for byte.
  const std::string root = SWAPPLAN_SOURCE_ROOT;
  std::istringstream readme(ReadFile(root + "/traces/README.md"));
  int checked = 0;
  for (std::string line; std::getline(readme, line);) {
    // `swapplan ARGS -o traces/NAME` with ARGS starting with "synth ".
    const size_t begin = line.find("`swapplan synth ");
    if (begin == std::string::npos) continue;
    const size_t end = line.find('`', begin + 1);
    const std::string command = line.substr(begin + 10, end - begin - 10);  // "synth ..."
    const size_t o = command.rfind(" -o traces/");
    if (end == std::string::npos || o == std::string::npos) continue;
    const std::string args = command.substr(0, o);
    const std::string name = command.substr(o + 11);
    if (name.empty() || name.find(' ') != std::string::npos) continue;
    INFO(line);
    const std::string out = swapplan::testing::TempDir() + "/" + name;
    CliRun r = Swapplan(args + " -q -o '" + out + "'");
    REQUIRE(r.exit_code == 0);
    const std::string bundled = ReadFile(root + "/traces/" + name);
    CHECK_FALSE(bundled.empty());
    CHECK(ReadFile(out) == bundled);
    ++checked;
  }
  CHECK(checked == 3);
}

// tests/data/quality/toy.json: the two toys at r = 2 and 700 - 100 bytes,
// recorded with `regress --update`; toy_doctored.json is the same file
// claiming lru ran the first toy in 1400 ns instead of 1550.
TEST_CASE("regress: a recorded baseline passes, per-row report", "[cli][regress]") {
  CliRun r = Swapplan("regress --baseline quality/toy.json");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CheckGolden("regress_toy.txt", r.out);
}

TEST_CASE("regress: a doctored faster baseline fails with the row named", "[cli][regress]") {
  CliRun r = Swapplan("regress --baseline quality/toy_doctored.json");
  CHECK(r.exit_code == 4);  // SPEC §10: a quality regression
  CheckGolden("regress_toy_doctored.txt", r.out);
  CHECK(r.err == "swapplan: regress: 1 of 5 rows fail against quality/toy_doctored.json\n");
  // +10.71% passes an 11% tolerance, not 10%.
  CHECK(Swapplan("regress --baseline quality/toy_doctored.json --tolerance 11%").exit_code == 0);
  CHECK(Swapplan("regress --baseline quality/toy_doctored.json --tolerance 0.1").exit_code == 4);
  CliRun j = Swapplan("regress --baseline quality/toy_doctored.json --json");
  CHECK(j.exit_code == 4);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc["num_failures"] == 1);
  CHECK(doc["rows"][2]["planner"] == "lru");
  CHECK(doc["rows"][2]["verdict"] == "slower");
  CHECK(doc["rows"][2]["baseline"]["iteration_time_ns"] == 1400);
  CHECK(doc["rows"][2]["current"]["iteration_time_ns"] == 1550);
}

TEST_CASE("regress: --update rewrites the baseline, which then passes", "[cli][regress]") {
  // A copy of the doctored file next to a copy of the traces, so the
  // relative paths resolve.
  const std::string dir = swapplan::testing::TempDir() + "/regress_update";
  std::filesystem::create_directories(dir + "/quality");
  std::filesystem::create_directories(dir + "/traces");
  for (const char* t : {"chameleon_toy.json", "two_layers.json"}) {
    std::filesystem::copy_file(swapplan::testing::DataPath(std::string("traces/") + t),
                               dir + "/traces/" + t,
                               std::filesystem::copy_options::overwrite_existing);
  }
  const std::string copy = dir + "/quality/q.json";
  std::filesystem::copy_file(swapplan::testing::DataPath("quality/toy_doctored.json"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  CHECK(Swapplan("regress --baseline '" + copy + "'").exit_code == 4);
  CliRun u = Swapplan("regress --baseline '" + copy + "' --update");
  CHECK(u.exit_code == 0);
  CHECK(u.out.find("updated   " + copy) != std::string::npos);
  CHECK(Swapplan("regress --baseline '" + copy + "' --tolerance 0").exit_code == 0);
  // What --update wrote is what the recorded baseline holds.
  CHECK(ReadFile(copy) == ReadFile(swapplan::testing::DataPath("quality/toy.json")));
}

TEST_CASE("regress: bad baselines exit 2", "[cli][regress]") {
  CliRun r = Swapplan("regress --baseline quality/missing.json");
  CHECK(r.exit_code == 2);
  r = Swapplan("regress --baseline quality/toy.json --tolerance fast");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --tolerance: invalid fraction 'fast'\n");
  CHECK(Swapplan("regress").exit_code == 2);  // --baseline is required
  CHECK(Swapplan("regress --help").exit_code == 0);
}

}  // namespace
