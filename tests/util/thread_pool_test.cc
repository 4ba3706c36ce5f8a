// ThreadPool (util/thread_pool.h): every index runs exactly once, on a worker
// id in range, with per-worker scratch never shared; the pool is reusable
// and destructible at any point. This suite also runs under
// ThreadSanitizer in CI (.ci/run, TSAN_SUITES), which checks the
// handoff between ParallelFor and the workers for data races.
#include <atomic>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "swapplan/util/thread_pool.h"

namespace swapplan {
namespace {

TEST_CASE("thread pool: every index exactly once, worker ids in range", "[util][thread_pool]") {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    REQUIRE(pool.size() == threads);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_worker{0};
      pool.ParallelFor(n, [&](int64_t i, int worker) {
        hits[static_cast<size_t>(i)].fetch_add(1);
        if (worker < 0 || worker >= threads) bad_worker.fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) {
        INFO("threads " << threads << ", n " << n << ", index " << i);
        CHECK(hits[static_cast<size_t>(i)].load() == 1);
      }
      CHECK(bad_worker.load() == 0);
    }
  }
}

TEST_CASE("thread pool: per-worker scratch needs no locks", "[util][thread_pool]") {
  // Each worker sums into its own slot; the slots add up to 0 + 1 + ... +
  // (n - 1) = n (n - 1) / 2. A data race on a slot (two workers with one
  // id) would lose updates, and TSan would report it.
  ThreadPool pool(4);
  const int64_t n = 20000;
  std::vector<int64_t> per_worker(pool.size(), 0);
  pool.ParallelFor(n, [&](int64_t i, int worker) { per_worker[worker] += i; });
  CHECK(std::accumulate(per_worker.begin(), per_worker.end(), int64_t{0}) == n * (n - 1) / 2);
}

TEST_CASE("thread pool: many rounds reuse the workers; results are deterministic",
          "[util][thread_pool]") {
  // Every index's work is a pure function of the index, so the output is
  // the same whatever worker ran it (the pool's determinism contract).
  const uint64_t seed = 19;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  ThreadPool pool(3);
  for (int round = 0; round < 200; ++round) {
    const int64_t n = static_cast<int64_t>(rng() % 300);
    std::vector<uint64_t> out(static_cast<size_t>(n), 0);
    pool.ParallelFor(n, [&](int64_t i, int) {
      uint64_t x = static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(round);
      x ^= x >> 31;
      out[static_cast<size_t>(i)] = x;
    });
    for (int64_t i = 0; i < n; ++i) {
      uint64_t x = static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(round);
      x ^= x >> 31;
      REQUIRE(out[static_cast<size_t>(i)] == x);
    }
  }
}

TEST_CASE("thread pool: created and destroyed without work, or right after it",
          "[util][thread_pool]") {
  for (int k = 0; k < 50; ++k) {
    ThreadPool idle(4);  // workers start and are stopped before any work
  }
  for (int k = 0; k < 50; ++k) {
    ThreadPool pool(4);
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(64, [&](int64_t i, int) { sum.fetch_add(i); });
    CHECK(sum.load() == 64 * 63 / 2);
  }  // destroyed while workers may still be returning to their wait
}

TEST_CASE("thread pool: 0 threads means the hardware concurrency", "[util][thread_pool]") {
  ThreadPool pool(0);
  CHECK(pool.size() >= 1);
  std::atomic<int> count{0};
  pool.ParallelFor(10, [&](int64_t, int) { count.fetch_add(1); });
  CHECK(count.load() == 10);
}

}  // namespace
}  // namespace swapplan
