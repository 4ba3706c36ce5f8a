// Latency of the service over loopback (hidden: not part of `meson test`).
//   ./build/tests/service_test "[.bench]"
// prints the latency of cached Plans from one client, then from 16 clients
// at once, and of uncached Plans of the toy (planning it is microseconds:
// what is measured is the service's own overhead).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "service/service_fixture.h"

namespace swapplan::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct Percentiles {
  double p50_us = 0;
  double p99_us = 0;
};

Percentiles Of(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)]};
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

TEST_CASE("bench: Plan latency over loopback", "[.bench]") {
  TestServer t;  // --threads 64: the 16 clients never exhaust it
  const std::string id = t.UploadToy();
  {
    grpc::ClientContext ctx;
    v1::PlanResponse r;
    REQUIRE(t.rpc->Plan(&ctx, ToyPlan(id), &r).ok());  // fills the cache
  }
  constexpr int kCalls = 2000;
  std::vector<double> one;
  for (int i = 0; i < kCalls; ++i) {
    grpc::ClientContext ctx;
    v1::PlanResponse r;
    const auto start = Clock::now();
    REQUIRE(t.rpc->Plan(&ctx, ToyPlan(id), &r).ok());
    one.push_back(Since(start));
    REQUIRE(r.cache_hit());
  }
  const Percentiles p1 = Of(one);
  std::printf("cached Plan, 1 client, %d calls: p50 %.0f us, p99 %.0f us\n", kCalls, p1.p50_us,
              p1.p99_us);

  constexpr int kClients = 16;
  constexpr int kEach = 200;
  std::vector<std::vector<double>> per(kClients);
  std::atomic<int> failures{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      // One channel per client, as separate processes would have.
      auto rpc = NewPlannerGrpcClient(grpc::CreateChannel(
          absl::StrCat("127.0.0.1:", t.server->port()), grpc::InsecureChannelCredentials()));
      for (int i = 0; i < kEach; ++i) {
        grpc::ClientContext ctx;
        v1::PlanResponse r;
        const auto s = Clock::now();
        const grpc::Status st = rpc->Plan(&ctx, ToyPlan(id), &r);
        if (!st.ok()) {
          ++failures;
          std::printf("failed: %d %s\n", static_cast<int>(st.error_code()),
                      st.error_message().c_str());
        }
        per[c].push_back(Since(s));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const double seconds = Since(start) / 1e6;
  std::vector<double> all;
  for (const auto& v : per) all.insert(all.end(), v.begin(), v.end());
  const Percentiles p16 = Of(all);
  std::printf("cached Plan, %d clients x %d calls: %.0f calls/s, p50 %.0f us, p99 %.0f us, "
              "%d failed\n",
              kClients, kEach, kClients * kEach / seconds, p16.p50_us, p16.p99_us,
              failures.load());
  CHECK(failures == 0);

  std::vector<double> miss;
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext ctx;
    v1::PlanRequest req = ToyPlan(id);
    req.set_skip_cache(true);
    v1::PlanResponse r;
    const auto s = Clock::now();
    REQUIRE(t.rpc->Plan(&ctx, req, &r).ok());
    miss.push_back(Since(s));
  }
  const Percentiles pm = Of(miss);
  std::printf("uncached Plan of the 13-op toy (plan + check + simulate + cache write), 200 "
              "calls: p50 %.0f us, p99 %.0f us\n",
              pm.p50_us, pm.p99_us);
}

}  // namespace
}  // namespace swapplan::testing
