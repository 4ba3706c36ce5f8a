// The command line made consistent (issue 13), golden-tested:
//  * a number without a unit is refused where a unit is expected, an empty
//    value is an error, units are accepted in every documented form;
//  * several wrong or missing inputs are reported at once, one line each,
//    exit 2;
//  * --iteration defaults to the last complete iteration in every command;
//  * JSON reports share one vocabulary (no key is a count in one report and
//    an array in another, units in names);
//  * `swapplan devices` lists the presets; --device and --compute-scale
//    rescale op durations, and a CPU-recorded trace is never planned with
//    CPU times silently;
//  * presets that cannot fit one device without parallelism are reported
//    infeasible, with the reason.
//
// Goldens live in tests/golden/; regenerate with
//   SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"

namespace {

using nlohmann::json;
using swapplan::testing::CheckGolden;
using swapplan::testing::CliRun;
using swapplan::testing::ReadFile;
using swapplan::testing::Swapplan;

// "$ swapplan ARGS", the exit status and stderr of every command, for a
// golden of error messages.
std::string Transcript(const std::vector<std::string>& commands) {
  std::string out;
  for (const std::string& c : commands) {
    CliRun r = Swapplan(c);
    out += "$ swapplan " + c + "\nexit " + std::to_string(r.exit_code) + "\n" + r.err + "\n";
  }
  return out;
}

TEST_CASE("units: bare numbers and empty values are refused, one line each", "[cli][units]") {
  const std::string plan = "plan traces/chameleon_toy.json ";
  CheckGolden("unit_errors.txt",
              Transcript({plan + "--device-memory 600",
                          plan + "--device-memory ''",
                          plan + "--reserve 100",
                          plan + "--h2d-bandwidth 25",
                          plan + "--copy-latency 10",
                          plan + "--compute-scale 0",
                          plan + "--compute-scale 2y",
                          "compare traces/chameleon_toy.json --oversubscription 0",
                          "compare traces/chameleon_toy.json --oversubscription ''",
                          "simulate traces/two_layers.json policies/two_layers/vdnn.json "
                          "--host-dispatch 5",
                          "regress --baseline quality/toy.json --tolerance ''",
                          "whatif --scale batch --device-memory 80"}));
  // Every documented form is accepted: 600B, 64GiB, 25GB/s, 10us, 1.5x,
  // and sizes whose flag names the unit (--min-tensor-bytes) as bytes.
  CliRun ok = Swapplan(plan +
                       "--device-memory 1000B --reserve 0.1KB --h2d-bandwidth 1GB/s "
                       "--d2h-bandwidth 2GB/s --copy-latency 0us --compute-scale 1.5x "
                       "--min-tensor-bytes 0");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("budget             900 B = device memory 1000 B (custom) - reserve 100 B") !=
        std::string::npos);
  CHECK(ok.out.find("op durations x1.5 (--compute-scale 1.5x)") != std::string::npos);
  CHECK(Swapplan("compare traces/chameleon_toy.json --oversubscription 1.5x").exit_code == 0);
  CHECK(Swapplan("compare traces/chameleon_toy.json --oversubscription 1.5").exit_code == 0);
}

TEST_CASE("several missing or wrong inputs are reported at once, exit 2", "[cli][errors]") {
  CheckGolden(
      "multi_errors.txt",
      Transcript({"plan --device-memory 600 --h2d-bandwidth 25 --device nope --layers two",
                  "compare traces/toy_valid.json --oversubscription 0.5 --reserve 10B "
                  "--planners lru,magic --iteration 7",
                  "replay ../../traces/loss_scale_validation.json.gz --rows some --window -1",
                  "simulate traces/two_layers.json",
                  "search traces/two_layers.json --device-memory 600B --population 1 "
                  "--mutation-probability 2 --max-generations x",
                  "synth --model llama5 --device tpu --peak-flops 0"}));
}

TEST_CASE("--iteration defaults to the last complete iteration in every command",
          "[cli][iteration]") {
  // validation_tail.json: iterations 0 and 1 train, 2 is a forward-only
  // validation pass; the default is 1 everywhere.
  const std::string t = "traces/validation_tail.json";
  std::string out;
  auto line = [&](const std::string& command, const std::string& text) {
    out += command + ": " + text + "\n";
  };
  auto field = [](const std::string& args) {
    CliRun r = Swapplan(args);
    INFO(args << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  };
  line("plan", std::to_string(field("plan " + t + " --min-tensor-bytes 0 --json")["iteration"].get<int>()));
  line("compare", std::to_string(field("compare " + t + " --planners noswap --json")["iteration"].get<int>()));
  line("search", std::to_string(field("search " + t +
                                      " --max-generations 1 --population 4 --threads 1 --quiet "
                                      "--json")["iteration"].get<int>()));
  line("curve", std::to_string(field("curve " + t + " --json")["iterations"][0]["iteration"].get<int>()));
  line("compare --iteration 0",
       std::to_string(field("compare " + t + " --planners noswap --iteration 0 --json")["iteration"].get<int>()));
  line("curve --all-iterations",
       std::to_string(field("curve " + t + " --all-iterations --json")["iterations"].size()) +
           " iterations");
  CliRun range = Swapplan("compare " + t + " --iteration 3");
  line("compare --iteration 3", "exit " + std::to_string(range.exit_code) + ": " + range.err);
  CheckGolden("iteration_default.txt", out);
}

// Every key of every golden JSON report and of a few live ones, by the type
// of its values: the vocabulary rules hold across reports.
void Collect(const json& v, std::map<std::string, std::set<std::string>>* types) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      const json& x = it.value();
      (*types)[it.key()].insert(x.is_array()     ? "array"
                                : x.is_object()  ? "object"
                                : x.is_number()  ? "number"
                                : x.is_string()  ? "string"
                                : x.is_boolean() ? "boolean"
                                                 : "null");
      Collect(x, types);
    }
  } else if (v.is_array()) {
    for (const json& x : v) Collect(x, types);
  }
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST_CASE("JSON reports use one vocabulary", "[cli][json]") {
  std::map<std::string, std::set<std::string>> types;
  for (const char* golden :
       {"inspect_toy.json", "curve_toy.json", "plan_toy.json", "check_toy_bad.json",
        "simulate_vdnn.json", "compare_two_layers.json", "whatif_tiny_layers.json",
        "replay_small_naive.json", "synth_tiny_inspect.json"}) {
    Collect(json::parse(ReadFile(std::string(SWAPPLAN_GOLDEN_DIR) + "/" + golden)), &types);
  }
  for (const char* live :
       {"devices --json", "regress --baseline quality/toy.json --json",
        "search traces/two_layers.json --device-memory 600B --max-generations 1 --population 4 "
        "--threads 1 --quiet --json"}) {
    Collect(json::parse(Swapplan(live).out), &types);
  }
  // Old names, each replaced by one of the vocabulary.
  for (const char* old :
       {"peak_before_bytes", "peak_after_bytes", "unswapped_peak_bytes", "peak_bytes",
        "bytes_out", "bytes_in", "bytes_d2h", "bytes_h2d", "ideal_time_ns", "overhead_vs_ideal",
        "durations", "tensors_swapped", "transfer_latency_ns", "half_duplex", "failures",
        "tolerance", "change", "oversubscription", "per_iteration", "live_tensors",
        "evaluations", "generations", "items_count"}) {
    INFO(old);
    CHECK(types.count(old) == 0);
  }
  for (const auto& [key, kinds] : types) {
    INFO(key);
    // A key is a count or an array, never both.
    CHECK_FALSE((kinds.count("array") && kinds.count("number")));
    if (key.rfind("num_", 0) == 0) CHECK((kinds == std::set<std::string>{"number"} ||
                                          kinds == std::set<std::string>{"object"}));
    if (kinds.count("array")) CHECK(key.rfind("num_", 0) != 0);
    for (const char* unit : {"_bytes", "_ns", "_bytes_per_s", "_fraction", "_ratio"}) {
      if (EndsWith(key, unit)) {
        CHECK_FALSE(kinds.count("array"));
        CHECK_FALSE(kinds.count("string"));
      }
    }
  }
  // The two peaks have one name each, in every report that states them.
  CHECK(types.count("peak_unswapped_bytes") == 1);
  CHECK(types.count("peak_with_policy_bytes") == 1);
}

TEST_CASE("devices: the presets, text and JSON", "[cli][devices]") {
  CliRun r = Swapplan("devices");
  CHECK(r.exit_code == 0);
  CheckGolden("devices.txt", r.out);
  CliRun j = Swapplan("devices --json");
  CHECK(j.exit_code == 0);
  CheckGolden("devices.json", j.out);
  const json doc = json::parse(j.out);
  std::set<std::string> names;
  for (const json& d : doc["devices"]) names.insert(d["name"].get<std::string>());
  for (const char* required :
       {"a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "b200", "mi300x", "910b-64gb"}) {
    CHECK(names.count(required) == 1);
  }
}

TEST_CASE("--device and --compute-scale rescale op durations; CPU traces warn",
          "[cli][device]") {
  // two_layers: 12 ops of 100 ns, 1.2 us ideal; x0.5 -> 600 ns.
  CliRun half = Swapplan("compare traces/two_layers.json --device-memory 800B --planners ideal "
                         "--compute-scale 0.5x --json");
  REQUIRE(half.exit_code == 0);
  const json h = json::parse(half.out);
  CHECK(h["ideal_iteration_time_ns"] == 600);
  CHECK(h["device"]["compute_time_scale"] == 0.5);
  CHECK(h["device"]["compute_time_scale_source"] == "--compute-scale 0.5x");
  // The bundled Llama trace was synthesized for the 910B (313 TFLOP/s);
  // planned for an H100 (989 TFLOP/s) its op durations scale by 313/989.
  CliRun h100 = Swapplan("compare ../../traces/llama2-7b-4layers-dp8-seq4096.trace.gz "
                         "--device h100-80gb --planners ideal --json");
  REQUIRE(h100.exit_code == 0);
  const json d = json::parse(h100.out);
  CHECK(d["device"]["compute_time_scale"].get<double>() == Approx(313.0 / 989.0));
  CHECK(d["device"]["name"] == "h100-80gb");
  CHECK(d["device"]["capacity_bytes"] == int64_t{80} << 30);
  CHECK(d["warnings"].empty());
  CliRun as_recorded = Swapplan("compare ../../traces/llama2-7b-4layers-dp8-seq4096.trace.gz "
                                "--device 910b-64gb --planners ideal --json");
  REQUIRE(as_recorded.exit_code == 0);
  const json a = json::parse(as_recorded.out);
  CHECK(a["device"]["compute_time_scale"] == 1.0);
  CHECK(d["ideal_iteration_time_ns"].get<double>() ==
        Approx(a["ideal_iteration_time_ns"].get<double>() * 313.0 / 989.0).epsilon(1e-3));
  // A CPU-recorded trace: a one-line warning on stderr and in the report,
  // also with --device (no CPU-to-GPU factor is known); none with
  // --compute-scale.
  const std::string cpu = "compare ../../traces/gpt2_small.json.gz --device-memory 64MiB "
                          "--h2d-bandwidth 10GB/s --d2h-bandwidth 10GB/s --planners noswap";
  CliRun w = Swapplan(cpu);
  CHECK(w.exit_code == 0);
  CHECK(w.err ==
        "swapplan: warning: ../../traces/gpt2_small.json.gz was recorded on a CPU: its op "
        "durations are CPU times; give --compute-scale F to plan with device times\n");
  CHECK(w.out.find("compute   op durations as recorded (CPU times)") != std::string::npos);
  CliRun wj = Swapplan(cpu + " --json");
  CHECK(json::parse(wj.out)["warnings"].size() == 1);
  CliRun dev = Swapplan("compare ../../traces/gpt2_small.json.gz --device h100-80gb "
                        "--planners noswap");
  CHECK(dev.err.find("no CPU-to-h100-80gb factor is known") != std::string::npos);
  CliRun scaled = Swapplan(cpu + " --compute-scale 0.01x");
  CHECK(scaled.err.empty());
  CHECK(scaled.out.find("compute   op durations x0.01 (--compute-scale 0.01x)") !=
        std::string::npos);
}

TEST_CASE("presets that need parallelism are infeasible, with the reason", "[cli][synth]") {
  const std::string dir = swapplan::testing::TempDir();
  CliRun s = Swapplan("synth --model llama2-70b --no-names --json -o '" + dir + "/70b.trace'");
  REQUIRE(s.exit_code == 0);
  const json j = json::parse(s.out);
  CHECK(j["feasible"] == false);
  CHECK(j["fits_without_swapping"] == false);
  CHECK(j["verdict"].get<std::string>().rfind("no: the persistent state alone (1.00 TiB", 0) == 0);
  CliRun text = Swapplan("synth --model llama2-70b --no-names -o '" + dir + "/70b.trace'");
  CHECK(text.out.find("  fits         no: the persistent state alone (1.00 TiB: parameters, "
                      "gradients, optimizer states) exceeds the device memory (80.00 GiB)") !=
        std::string::npos);
  CliRun w = Swapplan("whatif --model llama2-70b --scale batch --max-value 2");
  CHECK(w.exit_code == 3);
  CHECK(w.out.find("\ninfeasible: at batch 1 the persistent state alone (1.00 TiB") !=
        std::string::npos);
  CHECK(w.err.find("it needs parallelism (--tp, --pp, --zero with --dp), not swapping\n") !=
        std::string::npos);
  // Sharded over 8 ranks with ZeRO-3 and TP 8 it fits.
  CliRun fits = Swapplan("synth --model llama2-70b --tp 8 --dp 8 --zero 3 --no-names --json -o '" +
                         dir + "/70b_tp8.trace'");
  REQUIRE(fits.exit_code == 0);
  CHECK(json::parse(fits.out)["feasible"] == true);
}

}  // namespace
