// `--server ADDR`: plan, check, simulate, compare and search run on a
// `swapplan serve` child process and print exactly what the local run
// prints (the goldens of tests/cli: plan_toy.*, simulate_*.*,
// compare_two_layers*.*; plan times masked as there).
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

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

// A token file for the servers below.
std::string TokenFile() {
  const std::string path = TempDir() + "/token2";
  std::ofstream(path) << "t0ken\n";
  return path;
}

// A `swapplan serve` child with a token, and the flags that reach it.
struct TokenServe {
  std::string token_file;
  ServeProcess serve;
  std::string flags;
  explicit TokenServe(const std::string& name)
      : token_file(TokenFile()),
        serve({"--token-file", token_file}, name),
        flags(" --server " + serve.Address() + " --token-file " + token_file) {}
};

// `args` run locally and with `remote` appended: the same exit status, and
// each output as `mask` leaves it equal to the golden `golden` ("" = no
// golden, equal to each other).
void ExpectSameOutput(const std::string& args, const std::string& remote,
                      const std::string& golden,
                      std::string (*mask)(const std::string&) = nullptr) {
  CliRun local = Swapplan(args);
  CliRun far = Swapplan(args + remote);
  INFO(args);
  INFO(far.err);
  CHECK(far.exit_code == local.exit_code);
  const std::string want = mask ? mask(local.out) : local.out;
  const std::string got = mask ? mask(far.out) : far.out;
  CHECK(got == want);
  if (!golden.empty()) CheckGolden(golden, got);
}

std::string PlanTimesMasked(const std::string& text) { return MaskPlanTimes(text); }

// compare --json: plan_time_ns differs from run to run (0 here).
std::string PlanTimesMaskedJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  for (auto& row : j["rows"]) row["plan_time_ns"] = 0;
  return j.dump(2) + "\n";
}

TEST_CASE("remote: simulate prints the local output", "[service][cli]") {
  TokenServe s("serve_remote_simulate");
  const std::string vdnn = "simulate traces/two_layers.json policies/two_layers/vdnn.json";
  ExpectSameOutput(vdnn, s.flags, "simulate_vdnn.txt");
  ExpectSameOutput(vdnn + " --json", s.flags, "simulate_vdnn.json");
  ExpectSameOutput("simulate traces/two_layers.json policies/two_layers/recompute.json", s.flags,
                   "simulate_recompute.txt");
  // The simulator's settings travel: link, half duplex, naive record stream.
  ExpectSameOutput(vdnn + " --copy-latency 10ns --half-duplex --naive-record-stream "
                          "--launch-queue-depth 3",
                   s.flags, "simulate_vdnn_naive.txt");
  // An OOM: printed, then exit 3 with the local message.
  ExpectSameOutput("simulate traces/two_layers.json policies/two_layers/lru.json "
                   "--device-memory 550B",
                   s.flags, "simulate_lru_oom.txt");
  ExpectSameOutput("simulate traces/two_layers.json policies/two_layers/lru.json "
                   "--device-memory 550B --oom-handling algorithm3",
                   s.flags, "simulate_lru_algorithm3.txt");
  ExpectSameOutput(vdnn + " --top-stalls 1 --host-dispatch 10ns --json", s.flags, "");
  // The timeline is local only.
  CliRun timeline = Swapplan(vdnn + " --timeline " + TempDir() + "/t.json" + s.flags);
  CHECK(timeline.exit_code == 2);
  CHECK(timeline.err.find("--timeline needs the simulator in this process") != std::string::npos);
  CHECK(s.serve.Stop() == 0);
  // Every simulation ran on the server.
  CHECK(s.serve.Err().find("method=Simulate") != std::string::npos);
}

TEST_CASE("remote: compare prints the local output", "[service][cli]") {
  TokenServe s("serve_remote_compare");
  const std::string two = "compare traces/two_layers.json --device-memory 700B --reserve 100B";
  ExpectSameOutput(two, s.flags, "compare_two_layers.txt", PlanTimesMasked);
  ExpectSameOutput(two + " --json", s.flags, "compare_two_layers.json", PlanTimesMaskedJson);
  ExpectSameOutput("compare traces/two_layers.json --device-memory 800B --half-duplex "
                   "--copy-latency 10ns --planners vdnn,bucket,lru,recompute",
                   s.flags, "compare_two_layers_800.txt", PlanTimesMasked);
  // Planner options reach the server's planners.
  ExpectSameOutput("compare traces/chameleon_toy.json --reserve 100B --planners chameleon "
                   "--planner-option chameleon.min-tensor-bytes=0 --json",
                   s.flags, "", PlanTimesMaskedJson);
  // The advisor searches from the other rows' policies: local only.
  CliRun advisor = Swapplan(two + " --planners lru,advisor" + s.flags);
  CHECK(advisor.exit_code == 2);
  CHECK(advisor.err.find("--planners advisor: it searches from the other rows' policies") !=
        std::string::npos);
  CHECK(s.serve.Stop() == 0);
  CHECK(s.serve.Err().find("method=Plan") != std::string::npos);
}

// A device with a memory tier (--remote-*, docs/hyperoffload.md) travels to
// the server whole (DeviceSpec.tiers, the policy schema's MemoryTier): the
// hyperoffload planner on the chameleon toy (as tests/cli/sim_cli_test.cc)
// puts A (200 bytes) on the 300-byte remote tier remotely as locally, and
// every command's output and policy file are the local ones byte for byte.
TEST_CASE("remote: a device with a memory tier plans as locally", "[service][cli]") {
  TokenServe s("serve_remote_tiers");
  const std::string device =
      " --device-memory 900B --h2d-bandwidth 2GB/s --d2h-bandwidth 2GB/s --remote-memory 300B "
      "--remote-bandwidth 4GB/s";
  const std::string compare = "compare traces/chameleon_toy.json" + device +
                              " --planners hyperoffload,chameleon"
                              " --planner-option hyperoffload.min-tensor-bytes=0"
                              " --planner-option chameleon.min-tensor-bytes=0";
  ExpectSameOutput(compare, s.flags, "", PlanTimesMasked);
  ExpectSameOutput(compare + " --json", s.flags, "", PlanTimesMaskedJson);
  // The remote tier was planned for: its traffic is in the remote output.
  CliRun far = Swapplan(compare + s.flags);
  CHECK(far.out.find("tier remote: 200 B stored, 200 B loaded, holds 200 B at most") !=
        std::string::npos);
  // The policies planned remotely (--save-policies) are the local files.
  const std::string local_dir = TempDir() + "/tiers_local";
  const std::string far_dir = TempDir() + "/tiers_far";
  REQUIRE(Swapplan(compare + " --save-policies " + local_dir).exit_code == 0);
  REQUIRE(Swapplan(compare + " --save-policies " + far_dir + s.flags).exit_code == 0);
  const std::string hyper = ReadFile(local_dir + "/hyperoffload.json");
  CHECK(ReadFile(far_dir + "/hyperoffload.json") == hyper);
  CHECK(ReadFile(far_dir + "/chameleon.json") == ReadFile(local_dir + "/chameleon.json"));
  CHECK(hyper.find("\"tiers\"") != std::string::npos);
  // simulate: the tier's traffic line (SimulationDetail.tiers) as locally.
  const std::string simulate =
      "simulate traces/chameleon_toy.json " + local_dir + "/hyperoffload.json" + device;
  ExpectSameOutput(simulate, s.flags, "");
  ExpectSameOutput(simulate + " --json", s.flags, "");
  CliRun sim = Swapplan(simulate + s.flags);
  CHECK(sim.out.find("tier remote     stored 200 B in 1 copies (busy 50 ns), loaded 200 B in 1 "
                     "copies (busy 50 ns), holds at most 200 B of 300 B\n") != std::string::npos);
  // plan (chameleon) and search (the advisor) plan for the host only, with
  // the tier in the device: the remote policy file is the local one, tier
  // in its device included (that the server plans with the tier is what the
  // hyperoffload rows above show).
  for (const std::string& cmd :
       {std::string("plan traces/chameleon_toy.json --min-tensor-bytes 0") + device,
        std::string("search traces/chameleon_toy.json --max-generations 2 --population 8 "
                    "--threads 1 --seed 3 --quiet") + device}) {
    INFO(cmd);
    const std::string local_policy = TempDir() + "/tiers_local_policy.json";
    const std::string far_policy = TempDir() + "/tiers_far_policy.json";
    CliRun l = Swapplan(cmd + " -o " + local_policy);
    CliRun r = Swapplan(cmd + " -o " + far_policy + s.flags);
    INFO(r.err);
    REQUIRE(l.exit_code == 0);
    REQUIRE(r.exit_code == 0);
    const std::string want = ReadFile(local_policy);
    CHECK(ReadFile(far_policy) == want);
    CHECK(want.find("\"tiers\"") != std::string::npos);
  }
  CHECK(s.serve.Stop() == 0);
  CHECK(s.serve.Err().find("method=Simulate") != std::string::npos);
}

// The search time in `search`'s summary (as tests/cli/advisor_cli_test.cc).
std::string SearchTimeMasked(const std::string& text) {
  return MaskDurations(text, " in ", ";", " in <time>;");
}

// search --json: the search time aside.
std::string SearchTimeMaskedJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  j.erase("search_time_ns");
  return j.dump(2) + "\n";
}

TEST_CASE("remote: search prints the local output", "[service][cli]") {
  TokenServe s("serve_remote_search");
  const std::string base =
      "search traces/two_layers.json --device-memory 600B --max-generations 5 --population 8 "
      "--threads 1";
  const std::string search = base + " --seed 3";
  ExpectSameOutput(search, s.flags, "search_two_layers.txt", SearchTimeMasked);
  // Again: now a cache hit on the server, the same report (the figures of
  // the search that made the policy travel with it).
  ExpectSameOutput(search + " --json", s.flags, "", SearchTimeMaskedJson);
  ExpectSameOutput(search, s.flags, "search_two_layers.txt", SearchTimeMasked);
  // Progress streams: one line per generation, 0 .. 5, on a fresh search.
  CliRun logged = Swapplan(base + " --seed 4 --log-generations" + s.flags);
  INFO(logged.err);
  CHECK(logged.exit_code == 0);
  CHECK(logged.err.find("gen    0  best ") != std::string::npos);
  CHECK(logged.err.find("gen    5  best ") != std::string::npos);
  // The history CSV is the same from the cache as from the search.
  const std::string local_csv = TempDir() + "/history_local.csv";
  const std::string far_csv = TempDir() + "/history_far.csv";
  REQUIRE(Swapplan(search + " --quiet --history " + local_csv).exit_code == 0);
  REQUIRE(Swapplan(search + " --quiet --history " + far_csv + s.flags).exit_code == 0);
  auto generations = [](const std::string& csv) {  // the elapsed column aside
    std::string out;
    std::istringstream in(ReadFile(csv));
    for (std::string line; std::getline(in, line);) {
      const size_t a = line.find(','), b = line.find(',', a + 1);
      out += line.substr(0, a) + line.substr(b) + "\n";
    }
    return out;
  };
  CHECK(generations(far_csv) == generations(local_csv));
  // Infeasible: the same message and exit 3; --islands is local only.
  ExpectSameOutput("search traces/two_layers.json --device-memory 100B --max-generations 2 "
                   "--quiet",
                   s.flags, "");
  CliRun islands = Swapplan(search + " --islands" + s.flags);
  CHECK(islands.exit_code == 2);
  CHECK(islands.err.find("--islands runs over MPI in this process") != std::string::npos);
  CHECK(s.serve.Stop() == 0);
  CHECK(s.serve.Err().find("method=Search") != std::string::npos);
}

TEST_CASE("serve: --compute-nice with --compute-sched idle is refused", "[service][cli]") {
  // Refused before anything binds: exit 2, the flags named. (--compute-nice
  // alone selects the nice policy.)
  CliRun both = Swapplan("serve --listen 127.0.0.1:0 --compute-sched idle --compute-nice 3");
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("--compute-nice applies to --compute-sched nice, not idle") !=
        std::string::npos);
}

}  // namespace
}  // namespace swapplan::testing
