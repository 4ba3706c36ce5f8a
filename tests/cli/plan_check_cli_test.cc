// Golden tests of `swapplan plan` and `swapplan check` on the two-layer toy
// (tests/data/traces/chameleon_toy.json; the worked example of
// tests/planners/chameleon_test.cc): exact stdout per format, exit statuses
// (0 clean, 2 bad input or a policy with violations, 3 infeasible).
//
// Goldens live in tests/golden/; regenerate with
//   SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"

namespace {

using swapplan::testing::CheckGolden;
using swapplan::testing::CliRun;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

const char* kToy = "traces/chameleon_toy.json --reserve 100B --min-tensor-bytes 0";

TEST_CASE("plan: summary, JSON and explanation goldens", "[cli][plan]") {
  CliRun r = Swapplan(std::string("plan ") + kToy);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CheckGolden("plan_toy.txt", r.out);
  CliRun j = Swapplan(std::string("plan ") + kToy + " --json");
  CHECK(j.exit_code == 0);
  CheckGolden("plan_toy.json", j.out);
  CliRun x = Swapplan(std::string("plan ") + kToy + " --explain");
  CHECK(x.exit_code == 0);
  CheckGolden("plan_toy_explain.txt", x.out);
  CliRun s = Swapplan(std::string("plan ") + kToy + " --layers 1 --h2d-bandwidth 0.25GB/s --explain");
  CHECK(s.exit_code == 0);
  CheckGolden("plan_toy_stall_explain.txt", s.out);
}

TEST_CASE("plan -o writes a policy that check accepts", "[cli][plan]") {
  for (const char* name : {"/toy_policy.json", "/toy_policy.pb"}) {
    std::string path = swapplan::testing::TempDir() + name;
    CliRun r = Swapplan(std::string("plan ") + kToy + " -o '" + path + "'");
    CHECK(r.exit_code == 0);
    REQUIRE(std::filesystem::exists(path));
    CliRun c = Swapplan("check traces/chameleon_toy.json '" + path + "'");
    CHECK(c.exit_code == 0);
    CHECK(c.out.find("result         clean") != std::string::npos);
  }
}

TEST_CASE("plan: infeasible budget exits 3 with the bytes missing and where", "[cli][plan]") {
  std::string path = swapplan::testing::TempDir() + "/never_policy.json";
  // The papers' rule: no release before the copy out completes.
  CliRun r = Swapplan("plan traces/chameleon_toy.json --reserve 300B --min-tensor-bytes 0 "
                      "--release-wait never -o '" + path + "'");
  CHECK(r.exit_code == 3);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "swapplan: traces/chameleon_toy.json: iteration 0: 100 bytes (100 B) still missing at op "
        "3 (attn, FORWARD) to fit the budget of 700 bytes, even with every one of the 4 "
        "candidate tensors off the device from its release to its first backward use "
        "(candidates: non-persistent tensors of at least 0 B whose idle window covers an "
        "over-budget op)\n");
  CHECK_FALSE(std::filesystem::exists(path));
  // With --explain the reasoning still goes to stdout.
  CliRun x = Swapplan("plan traces/chameleon_toy.json --reserve 300B --min-tensor-bytes 0 "
                      "--release-wait never --explain");
  CHECK(x.exit_code == 3);
  CHECK(x.out.find("maximal-fallback") != std::string::npos);
  CHECK(x.out.find("] infeasible: ") != std::string::npos);
}

TEST_CASE("plan: release waits make the toy fit 700 bytes with a 100 ns stall", "[cli][plan]") {
  // chameleon_test.cc works this case out; here the CLI's report and the
  // policy file (the flag on the item) and check's count of planned waits.
  std::string path = swapplan::testing::TempDir() + "/release_wait_policy.json";
  CliRun r =
      Swapplan("plan traces/chameleon_toy.json --reserve 300B --min-tensor-bytes 0 --explain");
  CHECK(r.exit_code == 0);
  CheckGolden("plan_toy_release_wait_explain.txt", r.out);
  REQUIRE(Swapplan("plan traces/chameleon_toy.json --reserve 300B --min-tensor-bytes 0 -o '" +
                   path + "'").exit_code == 0);
  CliRun c = Swapplan("check traces/chameleon_toy.json '" + path + "'");
  CHECK(c.exit_code == 0);
  CHECK(c.out.find("release waits  1 planned (100 ns of waits, each delaying the ops after it)") !=
        std::string::npos);
  CHECK(ReadFile(path).find("\"release_waits_for_copy\": true") != std::string::npos);
}

TEST_CASE("plan: bad input exits 2", "[cli][plan]") {
  CliRun bw = Swapplan("plan traces/toy_valid.json");
  CHECK(bw.exit_code == 2);
  CHECK(bw.err ==
        "swapplan: no h2d bandwidth: give --h2d-bandwidth or --device (traces/toy_valid.json "
        "does not record it)\n"
        "swapplan: no d2h bandwidth: give --d2h-bandwidth or --device (traces/toy_valid.json "
        "does not record it)\n");
  CliRun mem = Swapplan("plan traces/toy_valid.json --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s "
                     "--reserve 8KiB");
  CHECK(mem.exit_code == 2);
  CHECK(mem.err ==
        "swapplan: --reserve 8.00 KiB leaves no budget out of 4.00 KiB of device memory\n");
  CHECK(Swapplan(std::string("plan ") + kToy + " --iteration 1").exit_code == 2);
  CHECK(Swapplan(std::string("plan ") + kToy + " --normalization l2").exit_code == 2);
  CHECK(Swapplan(std::string("plan ") + kToy + " --runtime-key-mask-bits 16").exit_code == 2);
  CHECK(Swapplan("plan --help").exit_code == 0);
}

TEST_CASE("check: violations listed, exit 2; JSON form", "[cli][check]") {
  CliRun r = Swapplan("check traces/chameleon_toy.json policies/chameleon_toy_bad.json");
  CHECK(r.exit_code == 2);
  CheckGolden("check_toy_bad.txt", r.out);
  CHECK(r.err ==
        "swapplan: policies/chameleon_toy_bad.json: 3 violations against "
        "traces/chameleon_toy.json\n");
  CliRun j = Swapplan("check traces/chameleon_toy.json policies/chameleon_toy_bad.json --json");
  CHECK(j.exit_code == 2);
  CheckGolden("check_toy_bad.json", j.out);
  // The same policy against another trace: fingerprint mismatch only.
  CliRun f = Swapplan("check traces/toy_valid.json policies/chameleon_toy_bad.json");
  CHECK(f.exit_code == 2);
  CHECK(f.out.find("[fingerprint-mismatch]") != std::string::npos);
  // Structural problems in a policy file are listed too, every one of them.
  CliRun d = Swapplan("check traces/chameleon_toy.json policies/chameleon_toy_disordered.json");
  CHECK(d.exit_code == 2);
  CheckGolden("check_toy_disordered.txt", d.out);
  CliRun missing = Swapplan("check traces/chameleon_toy.json nope.json");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "swapplan: nope.json: no such file\n");
}

}  // namespace
