// Golden tests of `swapplan simulate` and `swapplan compare`: exact stdout,
// exit statuses per SPEC §10, the Chrome-trace timeline.
//
// The two-layer trace (tests/data/traces/two_layers.json) is the one worked
// out by hand in tests/planners/baselines_test.cc; the policies in
// tests/data/policies/two_layers/ were written by
//   swapplan compare traces/two_layers.json --device-memory 800 --planners vdnn
//       --save-policies policies/two_layers
//   swapplan compare traces/two_layers.json --device-memory 600
//       --planners lru,recompute --save-policies policies/two_layers
// Regenerate the goldens with:  SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli_sim

#include <cstdlib>
#include <fstream>
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

// Planning times differ from run to run: the table's last column becomes
// "<time>" (testing::MaskPlanTimes), and plan_time_ns 0 in JSON.
std::string MaskPlanTimesJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  for (auto& row : j["rows"]) {
    CHECK(row["plan_time_ns"].get<int64_t>() > 0);
    row["plan_time_ns"] = 0;
  }
  return j.dump(2) + "\n";
}

const char* kVdnn = "traces/two_layers.json policies/two_layers/vdnn.json";

TEST_CASE("simulate: text and JSON goldens", "[cli]") {
  CliRun r = Swapplan(std::string("simulate ") + kVdnn);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CheckGolden("simulate_vdnn.txt", r.out);
  CliRun j = Swapplan(std::string("simulate ") + kVdnn + " --json");
  CHECK(j.exit_code == 0);
  CheckGolden("simulate_vdnn.json", j.out);
  CliRun rc = Swapplan("simulate traces/two_layers.json policies/two_layers/recompute.json");
  CHECK(rc.exit_code == 0);
  CheckGolden("simulate_recompute.txt", rc.out);
}

// tests/sim/saved_clock_test.cc's six ops: A out after op 0, released
// after op 1, back at op 4; the saved-tensor clock releases it only after
// op 2 (B's pack), so op 2 holds A and B: 200 B, over a 150 B budget.
TEST_CASE("simulate --clock saved-tensors: the hook clock's later release", "[cli]") {
  const std::string run = "simulate traces/saved_events.json policies/saved_events/chameleon.json ";
  CliRun ops = Swapplan(run + "--device-memory 150B");
  CHECK(ops.exit_code == 0);
  CliRun r = Swapplan(run + "--device-memory 150B --clock saved-tensors");
  CHECK(r.exit_code == 3);
  CheckGolden("simulate_saved_clock_oom.txt", r.out);
  CliRun j = Swapplan(run + "--device-memory 200B --clock saved-tensors --json");
  CHECK(j.exit_code == 0);
  CheckGolden("simulate_saved_clock.json", j.out);
  // A trace without recorded saved-tensor events cannot model the clock.
  CliRun none = Swapplan(std::string("simulate ") + kVdnn + " --clock saved-tensors");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("iteration 0 has no recorded saved-tensor events") != std::string::npos);
}

TEST_CASE("simulate: link, half-duplex and naive record-stream options", "[cli]") {
  CliRun r = Swapplan(std::string("simulate ") + kVdnn +
                   " --copy-latency 10ns --half-duplex --naive-record-stream --launch-queue-depth 3");
  CHECK(r.exit_code == 0);
  CheckGolden("simulate_vdnn_naive.txt", r.out);
}

TEST_CASE("simulate: OOM prints the result and exits 3", "[cli]") {
  CliRun r = Swapplan("simulate traces/two_layers.json policies/two_layers/lru.json "
                   "--device-memory 550B");
  CHECK(r.exit_code == 3);
  CheckGolden("simulate_lru_oom.txt", r.out);
  CHECK(r.err ==
        "swapplan: policies/two_layers/lru.json does not fit in 550 B: at op 4 (f11) it requests "
        "100 B with 50 B free\n");
}

// The same OOM handled by Algorithm 3: at op 4 (f11) 100 B are requested
// with 50 B free and no swap-out in flight, so step (ii) copies out the
// resident tensor closest in size not used by f11 — the 100-byte input 0 —
// and f11 waits for that copy (100 ns at 1 byte/ns); input 0 comes back at
// its next use, b00 (op 11), which waits 100 ns for the copy in. With lru's
// own 200 ns of release waits: 1.2 us + 400 ns = 1.6 us, no OOM, exit 0.
TEST_CASE("simulate --oom-handling algorithm3 resolves the OOM with a passive swap", "[cli]") {
  CliRun r = Swapplan("simulate traces/two_layers.json policies/two_layers/lru.json "
                      "--device-memory 550B --oom-handling algorithm3");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CheckGolden("simulate_lru_algorithm3.txt", r.out);
  CliRun j = Swapplan("simulate traces/two_layers.json policies/two_layers/lru.json "
                      "--device-memory 550B --oom-handling algorithm3 --json");
  REQUIRE(j.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc["feasible"] == true);
  CHECK(doc["iteration_time_ns"] == 1600);
  CHECK(doc["oom_handling"]["num_allocation_failures"] == 1);
  CHECK(doc["oom_handling"]["num_passive_swap_outs"] == 1);
  CHECK(doc["oom_handling"]["passive_d2h_bytes"] == 100);
  CHECK(doc["oom_handling"]["passive_stall_ns"] == 200);
  CHECK(doc["oom_handling"]["num_unresolved"] == 0);
  // Too little memory for passive swaps to help everywhere: at 250 B, b10
  // needs 300 B of its own inputs and outputs at once. Still an OOM, exit 3,
  // and the line says where.
  CliRun u = Swapplan("simulate traces/two_layers.json policies/two_layers/lru.json "
                      "--device-memory 250B --oom-handling algorithm3");
  CHECK(u.exit_code == 3);
  CHECK(u.out.find("OOM handling    Algorithm 3: ") != std::string::npos);
  CHECK(u.out.find(" unresolved (first at op 8 (b10), 50 B missing)") != std::string::npos);
  CHECK(Swapplan("simulate traces/two_layers.json policies/two_layers/lru.json "
                 "--oom-handling sometimes")
            .exit_code == 2);
}

TEST_CASE("simulate --timeline writes Chrome trace JSON", "[cli]") {
  std::string path = swapplan::testing::TempDir() + "/timeline.json";
  CliRun r = Swapplan(std::string("simulate ") + kVdnn + " --timeline '" + path + "'");
  CHECK(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(ReadFile(path));
  int ops = 0, d2h = 0, h2d = 0, stalls = 0, counters = 0, tracks = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") ++tracks;
    if (ph == "C") ++counters;
    if (ph != "X") continue;
    const std::string cat = e["cat"];
    ops += cat == "op";
    d2h += cat == "d2h";
    h2d += cat == "h2d";
    stalls += cat == "stall";
  }
  // 12 ops, 4 copies each way, 2 stalls (ops 3 and 7), one memory sample per
  // op, and host / compute / d2h / h2d tracks.
  CHECK(ops == 12);
  CHECK(d2h == 4);
  CHECK(h2d == 4);
  CHECK(stalls == 2);
  CHECK(counters == 12);
  CHECK(tracks == 4);
  // Op 7 (b11) starts at 1100 ns = 1.1 us after its 300 ns stall.
  bool found = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "b11") {
      CHECK(e["ts"].get<double>() == Approx(1.1));
      CHECK(e["dur"].get<double>() == Approx(0.1));
      found = true;
    }
  }
  CHECK(found);
}

TEST_CASE("simulate: bad inputs exit 2", "[cli]") {
  CliRun r = Swapplan("simulate traces/toy_valid.json policies/two_layers/vdnn.json");
  CHECK(r.exit_code == 2);
  // The policy first (the mismatch names the trace inside), as check does.
  CHECK_THAT(r.err,
             Catch::StartsWith("swapplan: policies/two_layers/vdnn.json: policy fingerprint (") &&
                 Catch::EndsWith("[fingerprint-mismatch]\n"));
  r = Swapplan(std::string("simulate ") + kVdnn + " --copy-latency fast");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --copy-latency: invalid duration 'fast'\n");
  CHECK(Swapplan(std::string("simulate ") + kVdnn + " --launch-queue-depth 0").exit_code == 2);
  r = Swapplan("simulate traces/two_layers.json nope.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: nope.json: no such file\n");
}

TEST_CASE("compare: text and JSON goldens", "[cli]") {
  CliRun r = Swapplan("compare traces/two_layers.json --device-memory 700B --reserve 100B");
  CHECK(r.exit_code == 0);
  CheckGolden("compare_two_layers.txt", MaskPlanTimes(r.out));
  CliRun j = Swapplan("compare traces/two_layers.json --device-memory 700B --reserve 100B --json");
  CHECK(j.exit_code == 0);
  CheckGolden("compare_two_layers.json", MaskPlanTimesJson(j.out));
  // A roomier budget where every planner fits, on a half-duplex link.
  CliRun h = Swapplan("compare traces/two_layers.json --device-memory 800B --half-duplex "
                   "--copy-latency 10ns --planners vdnn,bucket,lru,recompute");
  CHECK(h.exit_code == 0);
  CheckGolden("compare_two_layers_800.txt", MaskPlanTimes(h.out));
}

TEST_CASE("compare: --oversubscription states the budget above the persistent bytes", "[cli]") {
  // chameleon_toy: peak 1200, persistent 200 -> r = 2 gives 200 + 1000 / 2.
  CliRun r = Swapplan("compare traces/chameleon_toy.json --oversubscription 2");
  CHECK(r.exit_code == 0);
  CheckGolden("compare_toy_oversubscription_2.txt", MaskPlanTimes(r.out));
  CliRun j = Swapplan("compare traces/chameleon_toy.json --oversubscription 2 --json");
  REQUIRE(j.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc["budget_bytes"] == 700);
  CHECK(doc["oversubscription_ratio"] == 2.0);
  CHECK(doc["persistent_bytes"] == 200);
  CHECK(doc["device"]["capacity_bytes"] == 1000);  // the trace's, not used for the budget
  CliRun both = Swapplan("compare traces/chameleon_toy.json --oversubscription 2x --reserve 10B");
  CHECK(both.exit_code == 2);
  CHECK(both.err == "swapplan: --oversubscription replaces --device-memory and --reserve: give "
                    "one or the other\n");
  CliRun low = Swapplan("compare traces/chameleon_toy.json --oversubscription 0.5");
  CHECK(low.exit_code == 2);
  CHECK(low.err == "swapplan: --oversubscription: 0.5x must be >= 1x (1x = the peak fits)\n");
}

TEST_CASE("compare: no planner fits -> exit 3 with the table printed", "[cli]") {
  CliRun r = Swapplan("compare traces/two_layers.json --device-memory 300B --planners ideal,noswap,lru");
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.out, Catch::Contains("\nnoswap   no ") && Catch::Contains("\nlru      no "));
  CHECK(r.err == "swapplan: no planner reaches the budget of 300 B on traces/two_layers.json\n");
}

TEST_CASE("compare: usage errors exit 2", "[cli]") {
  CliRun r = Swapplan("compare traces/two_layers.json --planners vdnn,chameleon9");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --planners: unknown planner 'chameleon9' (known: ideal, noswap, chameleon, "
                 "recompute, vdnn, lru, bucket, hybrid, advisor"
                 ", selective, te-offload, save-on-cpu, hyperoffload, chain)\n");
  r = Swapplan("compare traces/toy_valid.json");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "swapplan: no h2d bandwidth: give --h2d-bandwidth or --device (traces/toy_valid.json "
        "does not record it)\n"
        "swapplan: no d2h bandwidth: give --d2h-bandwidth or --device (traces/toy_valid.json "
        "does not record it)\n");
  r = Swapplan("compare traces/two_layers.json --reserve 1KiB");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --reserve 1.00 KiB leaves no budget out of 600 B of device memory\n");
  r = Swapplan("compare traces/two_layers.json --iteration 2");
  CHECK(r.exit_code == 2);
  for (const char* sub : {"simulate", "compare"}) {
    CliRun h = Swapplan(std::string(sub) + " --help");
    CHECK(h.exit_code == 0);
    CHECK(h.out.find("Usage") != std::string::npos);
  }
}

}  // namespace

// A remote tier (docs/hyperoffload.md): the hyperoffload planner on the
// chameleon toy (tests/planners/hyperoffload_planner_test.cc) puts A (200
// bytes) on the 300-byte remote tier and B on the host; compare's note
// names the tier's traffic, and the --save-policies policy simulates with
// one "tier remote" line and a "tiers" array in JSON.
TEST_CASE("compare and simulate with a remote tier", "[cli]") {
  const std::string dir = swapplan::testing::TempDir() + "/remote_tier";
  const std::string device =
      " --device-memory 900B --h2d-bandwidth 2GB/s --d2h-bandwidth 2GB/s --remote-memory 300B "
      "--remote-bandwidth 4GB/s";
  CliRun r = Swapplan("compare traces/chameleon_toy.json" + device +
                      " --planners hyperoffload --planner-option hyperoffload.min-tensor-bytes=0"
                      " --save-policies " + dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("tier remote: 200 B stored, 200 B loaded, holds 200 B at most") !=
        std::string::npos);
  CliRun s = Swapplan("simulate traces/chameleon_toy.json " + dir + "/hyperoffload.json" + device);
  INFO(s.err);
  CHECK(s.exit_code == 0);
  CHECK(s.out.find("tier remote     stored 200 B in 1 copies (busy 50 ns), loaded 200 B in 1 "
                   "copies (busy 50 ns), holds at most 200 B of 300 B\n") != std::string::npos);
  CliRun j = Swapplan("simulate traces/chameleon_toy.json " + dir + "/hyperoffload.json" + device +
                      " --json");
  REQUIRE(j.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc["tiers"][1]["name"] == "remote");
  CHECK(doc["tiers"][1]["stored_bytes"] == 200);
  CHECK(doc["device"]["tiers"][0]["capacity_bytes"] == 300);
  // The remote figures need --remote-memory, and it needs a bandwidth.
  CliRun e = Swapplan("compare traces/chameleon_toy.json --device-memory 900B --remote-bandwidth "
                      "4GB/s");
  CHECK(e.exit_code == 2);
  CHECK(e.err.find("the --remote-* figures need --remote-memory") != std::string::npos);
  CliRun f = Swapplan("compare traces/chameleon_toy.json --device-memory 900B --remote-memory 1GiB");
  CHECK(f.exit_code == 2);
  CHECK(f.err.find("--remote-memory: give --remote-bandwidth") != std::string::npos);
}
