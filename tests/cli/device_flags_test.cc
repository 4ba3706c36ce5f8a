// How --device-memory, --reserve and --oversubscription become the one
// DeviceModel a command plans for (cli/device_flags.h, then
// curve/oversubscription.h's OversubscribedDevice), in worked numbers, and
// the one --oversubscription check with its specific problems.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "device_flags.h"
#include "flags.h"
#include "swapplan/curve/oversubscription.h"

namespace swapplan::cli {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// A trace that records 1000 B of device memory and 1 GB/s each way.
DeviceDefaults TraceDefaults() {
  DeviceDefaults d;
  d.source = "t.json";
  d.capacity_bytes = 1000;
  d.h2d_bandwidth_bytes_per_s = 1e9;
  d.d2h_bandwidth_bytes_per_s = 1e9;
  return d;
}

// Its iteration: 200 B persistent, unswapped peak 1200 B.
IterationCurve Curve() {
  IterationCurve c;
  c.persistent_bytes = 200;
  c.peak_unswapped.bytes = 1200;
  return c;
}

struct Resolved {
  DeviceModel model;  // with --oversubscription: OversubscribedDevice's
  double ratio = 0;
  std::vector<std::string> problems;
};

// `line` as a command parses it: CheckOversubscription, then ResolveDevice
// (no capacity needed with a ratio), then the ratio over Curve().
Resolved Resolve(const std::string& line) {
  CLI::App app;
  FlagSet flags;
  DeviceFlags f;
  std::optional<double> ratio;
  AddDeviceFlags(&app, &flags, &f, {});
  AddOversubscriptionFlag(&app, &flags, &ratio);
  app.parse(line, /*program_name_included=*/false);
  flags.Parse();
  Resolved r;
  r.ratio = CheckOversubscription(ratio, f, &flags);
  r.model = ResolveDevice(f, TraceDefaults(), {.capacity = !ratio}, &flags).model;
  r.problems = flags.problems();
  if (r.problems.empty() && r.ratio > 0) {
    absl::StatusOr<DeviceModel> m = OversubscribedDevice(r.model, Curve(), r.ratio);
    REQUIRE(m.ok());
    r.model = *std::move(m);
  }
  return r;
}

TEST_CASE("device flags: capacity, reserve or a ratio give the budget", "[cli][budget]") {
  struct Case {
    std::string line;
    double ratio;
    int64_t capacity_bytes;
    int64_t reserve_bytes;
    int64_t budget_bytes;
    double h2d_bandwidth_bytes_per_s;
  };
  const std::vector<Case> cases = {
      // Nothing given: the trace's 1000 B, no reserve.
      {"", 0, 1000, 0, 1000, 1e9},
      // 800 B - 100 B = 700 B.
      {"--device-memory 800B --reserve 100B", 0, 800, 100, 700, 1e9},
      // The trace's 1000 B - 300 B = 700 B.
      {"--reserve 300B", 0, 1000, 300, 700, 1e9},
      // The preset's 80 GiB (over the trace's 1000 B) - 2 GiB = 78 GiB, its
      // 52 GB/s link.
      {"--device h100-80gb --reserve 2GiB", 0, 80 * kGiB, 2 * kGiB, 78 * kGiB, 52e9},
      // 200 + (1200 - 200) / 2 = 700 B, nothing reserved, the trace's link.
      {"--oversubscription 2x", 2, 700, 0, 700, 1e9},
      // 200 + 1000 / 4 = 450 B: the ratio replaces the preset's capacity,
      // not its link.
      {"--device h100-80gb --oversubscription 4", 4, 450, 0, 450, 52e9},
      // 1x: the unswapped peak.
      {"--oversubscription 1x", 1, 1200, 0, 1200, 1e9},
  };
  for (const Case& c : cases) {
    INFO(c.line);
    const Resolved r = Resolve(c.line);
    REQUIRE(r.problems.empty());
    CHECK(r.ratio == c.ratio);
    CHECK(r.model.capacity_bytes == c.capacity_bytes);
    CHECK(r.model.reserve_bytes == c.reserve_bytes);
    CHECK(r.model.BudgetBytes() == c.budget_bytes);
    CHECK(r.model.h2d_bandwidth_bytes_per_s == c.h2d_bandwidth_bytes_per_s);
  }
}

TEST_CASE("device flags: the --oversubscription check names its problem", "[cli][budget]") {
  const std::string both =
      "--oversubscription replaces --device-memory and --reserve: give one or the other";
  CHECK(Resolve("--oversubscription 2x --reserve 10B").problems ==
        std::vector<std::string>{both});
  CHECK(Resolve("--oversubscription 2x --device-memory 1GiB").problems ==
        std::vector<std::string>{both});
  CHECK(Resolve("--oversubscription 0.5").problems ==
        std::vector<std::string>{"--oversubscription: 0.5x must be >= 1x (1x = the peak fits)"});
  // Both at once, in that order.
  CHECK(Resolve("--oversubscription 0.5 --device-memory 1GiB").problems ==
        std::vector<std::string>{
            both, "--oversubscription: 0.5x must be >= 1x (1x = the peak fits)"});
  // Without a ratio the same flags are no problem of its.
  CHECK(Resolve("--device-memory 1GiB --reserve 10B").problems.empty());
}

TEST_CASE("device flags: a reserve that leaves nothing", "[cli][budget]") {
  CHECK(Resolve("--reserve 1000B").problems ==
        std::vector<std::string>{
            "--reserve 1000 B leaves no budget out of 1000 B of device memory"});
}

}  // namespace
}  // namespace swapplan::cli
