// Golden tests of `swapplan policy upgrade`: a schema v1 policy of the
// two-layer trace rewritten as v2 (device model from the v1 fields, runtime
// section rebuilt from the trace), idempotent on v2 input, and the errors
// (another trace: fingerprint mismatch, exit 2).
//
// Goldens live in tests/golden/; regenerate with
//   SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"

namespace {

using swapplan::testing::CheckGolden;
using swapplan::testing::CliRun;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

TEST_CASE("policy upgrade: v1 -> v2 golden, idempotent", "[cli][policy]") {
  CliRun r = Swapplan("policy upgrade policies/two_layers/recompute.json --trace "
                      "traces/two_layers.json");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CheckGolden("policy_upgrade_recompute.json", r.out);
  CHECK(r.out.find("\"format_version\": 2") != std::string::npos);
  const std::string out = swapplan::testing::TempDir() + "/upgraded.json";
  CliRun w = Swapplan("policy upgrade policies/two_layers/recompute.json --trace "
                      "traces/two_layers.json --iteration 0 -o '" + out + "'");
  CHECK(w.exit_code == 0);
  CHECK(w.out == "upgraded policies/two_layers/recompute.json (schema v1) -> " + out +
                     " (schema v2): 3 items, runtime section of 12 ops and 12 op names from "
                     "iteration 0 of traces/two_layers.json\n");
  CHECK(ReadFile(out) == r.out);
  // Upgrading a v2 policy rewrites the same policy.
  CliRun again = Swapplan("policy upgrade '" + out + "' --trace traces/two_layers.json");
  CHECK(again.exit_code == 0);
  CHECK(again.out == r.out);
}

TEST_CASE("policy upgrade: another trace is a fingerprint mismatch", "[cli][policy]") {
  CliRun r = Swapplan("policy upgrade policies/two_layers/vdnn.json --trace "
                      "traces/toy_valid.json -o x.json");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "swapplan: policy fingerprint (0xbd7b948aad142ec2, 12 ops) does not match iteration 0 "
        "of traces/toy_valid.json (0xdf15be0e82cbb750, 5 ops) [fingerprint-mismatch]\n");
  CliRun it = Swapplan("policy upgrade policies/two_layers/vdnn.json --trace "
                       "traces/two_layers.json --iteration 5");
  CHECK(it.exit_code == 2);
  CHECK(it.err ==
        "swapplan: --iteration 5 is out of range: traces/two_layers.json has 1 iterations\n");
}

}  // namespace

namespace {

TEST_CASE("compare --save-policies writes only policies that pass check", "[cli][policy]") {
  using swapplan::testing::Swapplan;
  const std::string dir = swapplan::testing::TempDir() + "/saved";
  std::filesystem::create_directories(dir);
  // The last: Chameleon on Eq. (1) op times with an explicit T_iter; check
  // takes the op-time model the policy recorded (CheckOptionsFor).
  for (const char* budget :
       {"--device-memory 700B --reserve 100B", "--oversubscription 1.5",
        "--device-memory 700B --reserve 100B --planner-option chameleon.op_time_model=eq1 "
        "--planner-option chameleon.iteration_time_ns=6000 "
        "--planner-option chameleon.min_tensor_bytes=0"}) {
    INFO(budget);
    for (const char* trace : {"traces/two_layers.json", "traces/chameleon_toy.json"}) {
      INFO(trace);
      std::filesystem::remove_all(dir);
      std::filesystem::create_directories(dir);
      swapplan::testing::CliRun c =
          Swapplan(std::string("compare ") + trace + " " + budget +
                   " --planners ideal,noswap,chameleon,recompute,vdnn,lru,bucket,advisor "
                   "--planner-option advisor.max_generations=2 --save-policies '" + dir + "'");
      CHECK((c.exit_code == 0 || c.exit_code == 3));
      CHECK(c.out.find("invalid") == std::string::npos);
      int written = 0;
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        ++written;
        INFO(entry.path().string());
        swapplan::testing::CliRun k =
            Swapplan(std::string("check ") + trace + " '" + entry.path().string() + "'");
        CHECK(k.exit_code == 0);
        CHECK(k.out.find("result         clean") != std::string::npos);
      }
      CHECK(written >= 1);  // ideal at least
    }
  }
}

}  // namespace

namespace {

TEST_CASE("check: a RECOMPUTE policy checks as it simulates", "[cli][policy]") {
  swapplan::testing::CliRun c = swapplan::testing::Swapplan(
      "check traces/two_layers.json policies/two_layers/recompute.json");
  CHECK(c.exit_code == 0);
  swapplan::testing::CheckGolden("check_two_layers_recompute.txt", c.out);
  swapplan::testing::CliRun s = swapplan::testing::Swapplan(
      "simulate traces/two_layers.json policies/two_layers/recompute.json");
  CHECK(s.exit_code == 0);
  // Same peak in both.
  CHECK(c.out.find("peak           500 B at op 6 (b12)") != std::string::npos);
  CHECK(s.out.find("peak            500 B at op 6 (b12)") != std::string::npos);
}

}  // namespace
