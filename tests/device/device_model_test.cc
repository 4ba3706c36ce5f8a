// DeviceModel: the one copy-time formula, budgets, tiers and validation.
#include "swapplan/device/device_model.h"

#include <catch2/catch.hpp>
#include <string>

namespace swapplan {
namespace {

// Round numbers: 1 byte/ns each way (1e9 B/s), 10 ns per copy.
DeviceModel OneBytePerNs() {
  DeviceModel d;
  d.capacity_bytes = 1000;
  d.reserve_bytes = 100;
  d.h2d_bandwidth_bytes_per_s = 1e9;
  d.d2h_bandwidth_bytes_per_s = 2e9;  // 2 bytes/ns out
  d.copy_latency_ns = 10;
  return d;
}

TEST_CASE("TransferNs: latency plus the bytes at the bandwidth, rounded up", "[device]") {
  CHECK(TransferNs(100, 1e9, 0) == 100);     // 100 B at 1 B/ns
  CHECK(TransferNs(100, 1e9, 7) == 107);     // + latency
  CHECK(TransferNs(101, 2e9, 0) == 51);      // 50.5 ns -> 51
  CHECK(TransferNs(0, 1e9, 5) == 5);         // an empty copy costs the latency
  // Absurdly slow links saturate instead of overflowing the clock.
  CHECK(TransferNs(int64_t{1} << 62, 1e-9, 3) == kMaxCopyNs + 3);
}

TEST_CASE("CopyNs uses the bandwidth of the direction; tiers their own", "[device]") {
  DeviceModel d = OneBytePerNs();
  CHECK(d.CopyNs(Direction::kHostToDevice, 100) == 110);  // 100 ns + 10 ns
  CHECK(d.CopyNs(Direction::kDeviceToHost, 100) == 60);   // 50 ns + 10 ns
  MemoryTier t;
  t.name = "remote";
  t.store_bandwidth_bytes_per_s = 1e8;  // 0.1 B/ns: 100 B in 1000 ns
  t.load_bandwidth_bytes_per_s = 5e8;   // 0.5 B/ns: 100 B in 200 ns
  t.latency_ns = 1;
  d.tiers.push_back(t);
  CHECK(d.TierCopyNs(0, Direction::kDeviceToHost, 100) == 60);
  CHECK(d.TierCopyNs(1, Direction::kDeviceToHost, 100) == 1001);
  CHECK(d.TierCopyNs(1, Direction::kHostToDevice, 100) == 201);
}

TEST_CASE("BudgetBytes is capacity minus reserve", "[device]") {
  DeviceModel d = OneBytePerNs();  // 1000 B - 100 B reserve
  CHECK(d.BudgetBytes() == 900);
  CHECK(d.ValidateBudget().ok());
  d.capacity_bytes = kUnlimitedCapacityBytes;
  CHECK(d.BudgetBytes() == kUnlimitedCapacityBytes);
  CHECK(d.ValidateBudget().ok());
  d.capacity_bytes = 100;
  CHECK(d.BudgetBytes() == 0);  // 100 - 100: nothing left
  CHECK(d.ValidateBudget().message() ==
        "device model: reserve_bytes 100 leaves no memory of capacity_bytes 100");
  d.reserve_bytes = -1;
  CHECK(d.ValidateBudget().message() == "device model: reserve_bytes -1 is negative");
}

TEST_CASE("Validate names the field and the rule", "[device]") {
  CHECK(OneBytePerNs().Validate().ok());
  auto message = [](auto change) {
    DeviceModel d = OneBytePerNs();
    change(d);
    absl::Status st = d.Validate();
    CHECK(st.code() == absl::StatusCode::kInvalidArgument);
    return std::string(st.message());
  };
  CHECK(message([](DeviceModel& d) { d.capacity_bytes = 0; }) ==
        "device model \"custom\": capacity_bytes must be positive");
  CHECK(message([](DeviceModel& d) { d.reserve_bytes = 1000; }) ==
        "device model \"custom\": reserve_bytes must be below capacity_bytes");
  CHECK(message([](DeviceModel& d) { d.h2d_bandwidth_bytes_per_s = 0; }) ==
        "device model \"custom\": h2d_bandwidth_bytes_per_s must be positive and finite");
  CHECK(message([](DeviceModel& d) { d.copy_latency_ns = -1; }) ==
        "device model \"custom\": copy_latency_ns must be in [0, 1e17]");
  CHECK(message([](DeviceModel& d) { d.copy_engines = 3; }) ==
        "device model \"custom\": copy_engines must be 1 (half duplex) or 2 (duplex)");
  CHECK(message([](DeviceModel& d) { d.compute_time_scale = 0; }) ==
        "device model \"custom\": compute_time_scale must be positive and finite");
  CHECK(message([](DeviceModel& d) { d.peak_flops_per_s = -1; }) ==
        "device model \"custom\": peak_flops_per_s must be finite and not negative");
  MemoryTier t;
  t.name = "remote";
  t.store_bandwidth_bytes_per_s = t.load_bandwidth_bytes_per_s = 1e9;
  CHECK(message([&](DeviceModel& d) { d.tiers = {t, t}; }) ==
        "device model \"custom\": tier \"remote\" appears twice");
  t.name = "host";
  CHECK(message([&](DeviceModel& d) { d.tiers = {t}; }) ==
        "device model \"custom\": memory tier \"host\": name is reserved (the host tier is "
        "always tier 0)");
  t.name = "pool";
  t.shared_by_ranks = 0;
  CHECK(message([&](DeviceModel& d) { d.tiers = {t}; }) ==
        "device model \"custom\": memory tier \"pool\": shared_by_ranks must be at least 1");
}

TEST_CASE("operator== compares every field, tiers included", "[device]") {
  DeviceModel a = OneBytePerNs(), b = OneBytePerNs();
  CHECK(a == b);
  b.compute_time_scale = 0.5;
  CHECK_FALSE(a == b);
  b = a;
  MemoryTier t;
  t.name = "remote";
  b.tiers.push_back(t);
  CHECK_FALSE(a == b);
  a.tiers.push_back(t);
  CHECK(a == b);
  a.tiers[0].latency_ns = 1;
  CHECK_FALSE(a == b);
}

}  // namespace
}  // namespace swapplan
