// Golden tests of the swapplan binary: exact stdout for each output format,
// exit statuses per SPEC §10, no partial output on failure.
//
// Goldens live in tests/golden/. After an intended output change, regenerate
// them with:  SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli

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

TEST_CASE("inspect: text and JSON goldens", "[cli]") {
  CliRun r = Swapplan("inspect traces/toy_valid.json");
  CHECK(r.exit_code == 0);
  CheckGolden("inspect_toy.txt", r.out);
  CliRun j = Swapplan("inspect traces/toy_valid.json --json");
  CHECK(j.exit_code == 0);
  CheckGolden("inspect_toy.json", j.out);
}

TEST_CASE("curve: CSV and JSON goldens", "[cli]") {
  CliRun r = Swapplan("curve traces/toy_valid.json");
  CHECK(r.exit_code == 0);
  CheckGolden("curve_toy.csv", r.out);
  CliRun j = Swapplan("curve traces/toy_valid.json --format json --iteration 0");
  CHECK(j.exit_code == 0);
  CheckGolden("curve_toy.json", j.out);
}

TEST_CASE("curve -o writes the file", "[cli]") {
  std::string path = swapplan::testing::TempDir() + "/curve.csv";
  CliRun r = Swapplan("curve traces/toy_valid.json -o '" + path + "'");
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());
  CHECK(ReadFile(path) == Swapplan("curve traces/toy_valid.json").out);
}

TEST_CASE("bad input exits 2 with the validation message and writes nothing", "[cli]") {
  std::string path = swapplan::testing::TempDir() + "/never.csv";
  CliRun r = Swapplan("curve malformed/double_free.json -o '" + path + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "swapplan: malformed/double_free.json: iteration 0, op 2 (loss_backward): FREE of tensor "
        "4: it was already freed after iteration 0, op 2 (loss_backward) [double-free]\n");
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("usage errors exit 2; --help exits 0", "[cli]") {
  CHECK(Swapplan("inspect").exit_code == 2);
  CHECK(Swapplan("nonsense").exit_code == 2);
  CHECK(Swapplan("curve traces/toy_valid.json --format xml").exit_code == 2);
  CliRun r = Swapplan("curve traces/toy_valid.json --iteration 3");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: --iteration 3 is out of range: traces/toy_valid.json has 1 iterations\n");
  CliRun h = Swapplan("--help");
  CHECK(h.exit_code == 0);
  CHECK(h.out.find("inspect") != std::string::npos);
  for (const char* sub : {"inspect", "curve"}) {
    CliRun s = Swapplan(std::string(sub) + " --help");
    CHECK(s.exit_code == 0);
    CHECK(s.out.find("Usage") != std::string::npos);
  }
}

TEST_CASE("missing trace exits 2", "[cli]") {
  CliRun r = Swapplan("inspect nope.trace");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "swapplan: nope.trace: no such file\n");
}

}  // namespace

// --- synth (issue 3) ---

namespace {

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

// A 2-layer GQA llama on an A100 preset: small enough to read, every part of
// the step present.
constexpr const char* kTinySynth =
    "synth --model llama2-7b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128 "
    "--vocab 256 --seq 16 --micro-batches 2 --iterations 2 --loss-scale-skip-every 2 "
    "--validation-every 2";

TEST_CASE("synth: tiny config, summary and inspect --json goldens", "[cli][synth]") {
  const std::string dir = swapplan::testing::TempDir();
  const std::string path = dir + "/synth_tiny.json";
  CliRun r = Swapplan(std::string(kTinySynth) + " -o '" + path + "'");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CheckGolden("synth_tiny.txt", ReplaceAll(r.out, dir, "$TMP"));
  CliRun j = Swapplan("inspect '" + path + "' --json");
  CHECK(j.exit_code == 0);
  CheckGolden("synth_tiny_inspect.json", ReplaceAll(j.out, dir, "$TMP"));
  // The binary form (gzip) holds the same trace.
  const std::string bin = dir + "/synth_tiny.trace.gz";
  CHECK(Swapplan(std::string(kTinySynth) + " -q -o '" + bin + "'").exit_code == 0);
  CliRun jb = Swapplan("inspect '" + bin + "' --json");
  CHECK(ReplaceAll(jb.out, bin, path) == j.out);
}

TEST_CASE("synth: tiny inference request, summary and JSON goldens", "[cli][synth]") {
  // 2 layers, batch 2, prompt 16, 4 decode steps: KV cache at the end =
  // 2 (K, V) x 2 layers x 2 x 20 positions x 2 KV heads x 16 x 2 B = 10 KiB.
  const std::string dir = swapplan::testing::TempDir();
  const std::string path = dir + "/synth_request.json";
  const std::string cmd =
      "synth --model llama2-7b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128 "
      "--vocab 256 --inference --batch 2 --prompt 16 --generate 4 -o '" + path + "'";
  CliRun r = Swapplan(cmd);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CheckGolden("synth_tiny_request.txt", ReplaceAll(r.out, dir, "$TMP"));
  CliRun j = Swapplan(cmd + " --json");
  CHECK(j.exit_code == 0);
  CheckGolden("synth_tiny_request.json", ReplaceAll(j.out, dir, "$TMP"));
  CHECK(j.out.find("\"kv_cache_bytes\": 10240") != std::string::npos);
}

TEST_CASE("synth: invalid configurations exit 2 and write nothing", "[cli][synth]") {
  const std::string path = swapplan::testing::TempDir() + "/never.trace";
  CliRun r = Swapplan("synth --heads 32 --tp 3 -o '" + path + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "swapplan: synth: --heads 32 is not divisible by --tp 3\n");
  CHECK_FALSE(std::filesystem::exists(path));
  CliRun m = Swapplan("synth --model llama5 -o '" + path + "'");
  CHECK(m.exit_code == 2);
  CHECK(m.err ==
        "swapplan: synth: unknown model preset 'llama5' (known: llama2-7b, llama2-13b, "
        "llama2-70b, llama3-8b, mixtral-8x7b, gpt2)\n");
  CliRun p = Swapplan("synth --pp 4 --pp-stage 4 -o '" + path + "'");
  CHECK(p.exit_code == 2);
  CHECK(p.err == "swapplan: synth: --pp-stage is 4; must be in 0..3 (--pp 4)\n");
  CliRun d = Swapplan("synth --dtype int8 -o '" + path + "'");
  CHECK(d.exit_code == 2);
  CHECK(d.err == "swapplan: synth: --dtype 'int8' is not bf16, fp16 or fp32\n");
  CliRun o = Swapplan("synth --model gpt2");
  CHECK(o.exit_code == 2);
  CHECK(o.err == "swapplan: synth: -o FILE is required (or --list-presets)\n");
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("synth: --list-presets and --help", "[cli][synth]") {
  CliRun r = Swapplan("synth --list-presets");
  CHECK(r.exit_code == 0);
  CheckGolden("synth_presets.txt", r.out);
  CliRun h = Swapplan("synth --help");
  CHECK(h.exit_code == 0);
  CHECK(h.out.find("--loss-scale-skip-every") != std::string::npos);
}

}  // namespace
