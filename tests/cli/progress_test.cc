// The CLI's progress bar (cli/progress.h): the pure line formatting with
// worked values, and silence when stderr is not a terminal.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <thread>

#include "progress.h"
#include "support/cli_runner.h"

namespace swapplan::cli {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST_CASE("progress line: bar, percentage, count, elapsed and ETA", "[cli][progress]") {
  // 3 of 12 after 10 s: 3·20/12 = 5 cells done, 25%; ETA = 10 s · 9 / 3 = 30 s.
  CHECK(FormatProgress("compare", 3, 12, 10 * kSecond) ==
        "compare [#####...............]  25%  3/12  00:10 ETA 00:30");
  // 1 of 3 after 1 s: 20/3 = 6.67 -> 6 cells (a cell is done when all of its
  // share is), 33%; ETA = 1 s · 2 / 1 = 2 s.
  CHECK(FormatProgress("x", 1, 3, kSecond) == "x [######..............]  33%  1/3  00:01 ETA 00:02");
  // Nothing done yet: no ETA.
  CHECK(FormatProgress("synth", 0, 4, 2 * kSecond, ProgressUnit::kCount, 4) ==
        "synth [....]   0%  0/4  00:02 ETA --:--");
  // Done: full bar, ETA 0.
  CHECK(FormatProgress("s", 4, 4, 90 * kSecond, ProgressUnit::kCount, 4) ==
        "s [####] 100%  4/4  01:30 ETA 00:00");
  // Bytes: 1 MiB of 4 MiB after 1 h 1 min 1 s; ETA = 3661 s · 3 = 10983 s = 3:03:03.
  CHECK(FormatProgress("read t.json", 1 << 20, 4 << 20, 3661 * kSecond, ProgressUnit::kBytes,
                       4) == "read t.json [#...]  25%  1.00 MiB/4.00 MiB  1:01:01 ETA 3:03:03");
  // Fraction: no count. 500/1000 after 4 s: ETA 4 s.
  CHECK(FormatProgress("search", 500, 1000, 4 * kSecond, ProgressUnit::kFraction, 2) ==
        "search [#.]  50%  00:04 ETA 00:04");
  // Out of range: clamped to 0 <= done <= total.
  CHECK(FormatProgress("c", 7, 5, kSecond, ProgressUnit::kCount, 1) ==
        "c [#] 100%  5/5  00:01 ETA 00:00");
}

TEST_CASE("clock: MM:SS below an hour, H:MM:SS from it", "[cli][progress]") {
  CHECK(FormatClock(0) == "00:00");
  CHECK(FormatClock(59 * kSecond + kSecond / 2) == "00:59");  // floored
  CHECK(FormatClock(3599 * kSecond) == "59:59");
  CHECK(FormatClock(3600 * kSecond) == "1:00:00");
  CHECK(FormatClock(-5) == "00:00");
}

TEST_CASE("no progress on a stream that is not a terminal, nor with --quiet", "[cli][progress]") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  CHECK_FALSE(ProgressEnabled(f));
  {
    // Enabled per ProgressEnabled(f): off. Past the one-second threshold,
    // updates still write nothing.
    ProgressBar bar("t", ProgressEnabled(f), ProgressUnit::kCount, f);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    bar.Update(1, 2);
    bar.Update(2, 2);
  }
  CHECK(std::ftell(f) == 0);
  {
    // Forced on (as on a terminal): after a second, the line is drawn with
    // \r and erase-to-end-of-line, and cleared at the end.
    ProgressBar bar("t", true, ProgressUnit::kCount, f);
    bar.Update(1, 2);  // within the first second: nothing
    CHECK(std::ftell(f) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    bar.Update(1, 2);
  }
  CHECK(std::ftell(f) > 0);
  std::fclose(f);
  GlobalQuiet() = true;
  CHECK_FALSE(ProgressEnabled(stderr));
  GlobalQuiet() = false;
}

TEST_CASE("the CLI writes no progress when stderr is a pipe", "[cli][progress]") {
  // compare runs every default planner (over a second under load is not
  // guaranteed, but whatever it takes, stderr, a pipe, stays empty).
  testing::CliRun r = testing::Swapplan("compare traces/two_layers.json --device-memory 600B");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find('\r') == std::string::npos);
  CHECK(r.err.find("ETA") == std::string::npos);
}

}  // namespace
}  // namespace swapplan::cli
