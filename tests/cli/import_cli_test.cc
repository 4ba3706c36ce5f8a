// Golden tests of `swapplan import` and of other commands reading imported
// formats directly (every command loads its trace through ReadAnyTrace).
// Regenerate the goldens with SWAPPLAN_UPDATE_GOLDEN=1 meson test -C build cli_import
#include <string>

#include <catch2/catch.hpp>

#include "support/cli_runner.h"
#include "support/test_traces.h"

namespace {

using swapplan::testing::CheckGolden;
using swapplan::testing::CliRun;
using swapplan::testing::Swapplan;
using swapplan::testing::TempDir;

TEST_CASE("import: an execution trace with the roofline, then inspect the result", "[cli][import]") {
  const std::string out = TempDir() + "/small_et.trace.gz";
  CliRun r = Swapplan("import import/small_et.json -o " + out +
                      " --peak-flops 1e12 --memory-bandwidth 1GB/s");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  // The output path is a temporary: drop it from the golden.
  std::string text = r.out;
  size_t at = text.find(out);
  REQUIRE(at != std::string::npos);
  text.replace(at, out.size(), "OUT");
  CheckGolden("import_small_et.txt", text);
  CliRun i = Swapplan("inspect " + out);
  CHECK(i.exit_code == 0);
  at = i.out.find(out);
  REQUIRE(at != std::string::npos);
  i.out.replace(at, out.size(), "OUT");
  CheckGolden("import_small_et_inspect.txt", i.out);
}

TEST_CASE("inspect reads a Kineto trace directly and reports the source's own peak",
          "[cli][import]") {
  CliRun r = Swapplan("inspect import/small_kineto.json");
  CHECK(r.exit_code == 0);
  CheckGolden("import_small_kineto_inspect.txt", r.out);
}

TEST_CASE("compare and curve read imported formats directly", "[cli][import]") {
  CliRun c = Swapplan("curve import/snapshot_v2.pickle --iteration 1");
  CHECK(c.exit_code == 0);
  CheckGolden("import_snapshot_curve.csv", c.out);
  CliRun p = Swapplan("compare import/small_et.json --device-memory 600B --h2d-bandwidth 1GB/s "
                      "--d2h-bandwidth 1GB/s "
                      "--planners noswap,recompute --json");
  CHECK(p.exit_code == 0);
  CHECK(p.out.find("\"feasible\"") != std::string::npos);
}

TEST_CASE("--trace-format forces a format for any command, before or after it", "[cli][import]") {
  CliRun a = Swapplan("inspect --trace-format et-json import/small_kineto.json");
  CHECK(a.exit_code == 2);
  CHECK(a.err ==
        "swapplan: import/small_kineto.json: no \"nodes\" array: not an execution trace "
        "[et-schema]\n");
  CliRun b = Swapplan("--trace-format kineto inspect import/small_kineto.json");
  CHECK(b.exit_code == 0);
}

TEST_CASE("import errors: one line, exit 2", "[cli][import]") {
  CliRun unknown = Swapplan("import traces/toy_valid.json import/small_et.json -o x.trace");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err ==
        "swapplan: import converts one trace (optionally with the Kineto trace of the same "
        "run); got 2 traces: traces/toy_valid.json, import/small_et.json\n");
  CliRun pickle = Swapplan("inspect import/pickle_global.pickle");
  CHECK(pickle.exit_code == 2);
  CHECK(pickle.err ==
        "swapplan: import/pickle_global.pickle: pickle byte 2: opcode 0x63 (GLOBAL) is "
        "refused: snapshot pickles hold plain data only, and this unpickler never imports or "
        "calls anything [pickle-opcode]\n");
  CliRun notrace = Swapplan("import import/make_nothing.json -o x.trace");
  CHECK(notrace.exit_code == 2);
}

TEST_CASE("import pairs an execution trace with the Kineto trace given beside it",
          "[cli][import]") {
  // small_kineto.json does not describe small_et.json's run: refused.
  CliRun r = Swapplan("import import/small_et.json import/small_kineto.json -o " + TempDir() +
                      "/p.trace");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("[kineto-pairing]") != std::string::npos);
}

}  // namespace
