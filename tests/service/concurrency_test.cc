// The planner service's own concurrency, without gRPC (so that it runs
// under ThreadSanitizer: .ci/run's tsan stage, suite service_concurrency):
// the computing pool (service/compute_pool.h) and the cache's single flight
// (service/cache.h). Worker threads only count into atomics; every CHECK
// runs on the test's thread after the joins (Catch2 is not thread-safe).
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "service/compute_pool.h"
#include "swapplan/service/cache.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

TEST_CASE("compute pool: every task runs once on a worker, its caller waits for it",
          "[service][concurrency]") {
  // 8 callers x 50 tasks on 3 workers: 400 tasks; each returns its own
  // index, so a caller that got another's answer is counted as wrong.
  service::ComputePool pool(3, /*nice_increment=*/10, /*sched_idle=*/false);
  std::atomic<int> ran{0}, wrong{0}, on_caller{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < 50; ++i) {
        const std::thread::id me = std::this_thread::get_id();
        const int got = pool.Run<int>([&, c, i] {
          ++ran;
          if (std::this_thread::get_id() == me) ++on_caller;
          return c * 1000 + i;
        });
        if (got != c * 1000 + i) ++wrong;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  CHECK(ran == 400);
  CHECK(pool.tasks_run() == 400);
  CHECK(wrong == 0);
  CHECK(on_caller == 0);
}

TEST_CASE("compute pool: workers run at nice +K, or under SCHED_IDLE", "[service][concurrency]") {
  // The caller's nice value N (getpriority of its own thread id): a nice
  // pool's worker runs at min(N + 10, 19) under SCHED_OTHER; an idle pool's
  // worker under SCHED_IDLE. Both are switches a thread may make without a
  // privilege, so neither may silently fail here.
  auto my_nice = [] {
    return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
  };
  const int caller_nice = my_nice();
  struct Seen {
    int policy = -1;
    int nice = 0;
  };
  {
    service::ComputePool pool(1, /*nice_increment=*/10, /*sched_idle=*/false);
    const Seen s = pool.Run<Seen>([&] { return Seen{::sched_getscheduler(0), my_nice()}; });
    CHECK(s.policy == SCHED_OTHER);
    CHECK(s.nice == std::min(caller_nice + 10, 19));
  }
  {
    service::ComputePool pool(1, /*nice_increment=*/10, /*sched_idle=*/true);
    const Seen s = pool.Run<Seen>([&] { return Seen{::sched_getscheduler(0), my_nice()}; });
    CHECK(s.policy == SCHED_IDLE);
  }
  CHECK(::sched_getscheduler(0) == SCHED_OTHER);  // the caller is untouched
}

TEST_CASE("cache: concurrent identical GetOrCompute calls compute once, without gRPC",
          "[service][concurrency]") {
  auto cache = BlobCache::Open({});
  REQUIRE(cache.ok());
  std::atomic<int> computed{0}, hits{0}, bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      bool hit = false;
      absl::StatusOr<std::string> v = (*cache)->GetOrCompute(
          "key",
          [&]() -> absl::StatusOr<BlobCache::Computed> {
            ++computed;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            return BlobCache::Computed{"value", true};
          },
          &hit);
      if (!v.ok() || *v != "value") ++bad;
      if (hit) ++hits;
    });
  }
  for (std::thread& t : threads) t.join();
  // One leader computed; the 7 others waited on it or found its entry.
  CHECK(computed == 1);
  CHECK(hits == 7);
  CHECK(bad == 0);
}

TEST_CASE("cache: a waiter stops waiting when give_up says so", "[service][concurrency]") {
  auto cache = BlobCache::Open({});
  REQUIRE(cache.ok());
  std::atomic<bool> leader_started{false};
  std::thread leader([&] {
    (*cache)->GetOrCompute("k", [&]() -> absl::StatusOr<BlobCache::Computed> {
      leader_started = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      return BlobCache::Computed{"v", true};
    }).IgnoreError();
  });
  while (!leader_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> asked{0};
  absl::StatusOr<std::string> waited = (*cache)->GetOrCompute(
      "k", []() -> absl::StatusOr<BlobCache::Computed> { return BlobCache::Computed{"x", true}; },
      nullptr, [&] { return ++asked >= 3; });  // gives up at its 3rd check (~60 ms)
  const double waited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  leader.join();
  CHECK(KindOf(waited.status()) == ErrorKind::kCancelled);
  CHECK(waited_s < 0.5);
  CHECK(asked == 3);
  // The leader's answer is cached all the same.
  CHECK((*cache)->Get("k") == std::optional<std::string>("v"));
}

}  // namespace
}  // namespace swapplan
