// `--server ADDR`: plan and check run on a `swapplan serve` child process
// and print exactly what the local run prints (tests/golden/plan_toy.*).
#include <fstream>
#include <string>

#include "service/service_fixture.h"

namespace swapplan::testing {
namespace {

const char* kToy = "traces/chameleon_toy.json --reserve 100B --min-tensor-bytes 0";

TEST_CASE("remote: plan and check print the local output", "[service][cli]") {
  const std::string token_file = TempDir() + "/token";
  {
    std::ofstream(token_file) << "t0ken\n";
  }
  ServeProcess serve({"--token-file", token_file}, "serve_remote");
  const std::string remote = " --server " + serve.Address() + " --token-file " + token_file;
  for (const std::string format : {"", " --json"}) {
    CliRun local = Swapplan(std::string("plan ") + kToy + format);
    CliRun far = Swapplan(std::string("plan ") + kToy + format + remote);
    INFO(far.err);
    CHECK(far.exit_code == 0);
    CHECK(far.out == local.out);
  }
  // The policy written remotely checks clean, locally and remotely alike.
  const std::string policy = TempDir() + "/remote_policy.json";
  REQUIRE(Swapplan(std::string("plan ") + kToy + remote + " -o " + policy).exit_code == 0);
  for (const std::string format : {"", " --json"}) {
    CliRun local = Swapplan("check traces/chameleon_toy.json " + policy + format);
    CliRun far = Swapplan("check traces/chameleon_toy.json " + policy + format + remote);
    INFO(far.err);
    CHECK(far.exit_code == 0);
    CHECK(far.out == local.out);
  }
  // Infeasible: the same message and exit status 3.
  CliRun local = Swapplan("plan traces/chameleon_toy.json --reserve 300B --min-tensor-bytes 0 --release-wait never");
  CliRun far = Swapplan("plan traces/chameleon_toy.json --reserve 300B --min-tensor-bytes 0 --release-wait never" + remote);
  CHECK(local.exit_code == 3);
  CHECK(far.exit_code == 3);
  // The first line (a sanitizer build appends its own report after it).
  CHECK(far.err.substr(0, far.err.find('\n')) == local.err.substr(0, local.err.find('\n')));
  // Without the token: refused.
  CliRun denied = Swapplan(std::string("plan ") + kToy + " --server " + serve.Address());
  CHECK(denied.exit_code == 2);
  CHECK(denied.err.find("UNAUTHENTICATED") == std::string::npos);
  CHECK(denied.err.find("missing or wrong token") != std::string::npos);
  CHECK(serve.Stop() == 0);
}

}  // namespace
}  // namespace swapplan::testing
