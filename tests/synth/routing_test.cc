// MoE routing counts (src/synth/routing.h).
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "routing.h"

namespace swapplan::synth_internal {
namespace {

TEST_CASE("routing: no imbalance splits tokens evenly", "[synth][routing]") {
  // σ = 0: every weight is 1. 100 tokens × top-2 = 200 copies over 8
  // experts = 25 each.
  std::vector<int64_t> c = ExpertTokenCounts(1, 0, 0, 0, 8, 2, 100, 0.0);
  CHECK(c == std::vector<int64_t>(8, 25));
  // 10 × 2 = 20 over 8: 2.5 each; the remainders (all 0.5) go to the lowest
  // indices: 3,3,3,3,2,2,2,2.
  c = ExpertTokenCounts(1, 0, 0, 0, 8, 2, 10, 0.0);
  CHECK(c == std::vector<int64_t>{3, 3, 3, 3, 2, 2, 2, 2});
}

TEST_CASE("routing: a token picks distinct experts", "[synth][routing]") {
  // top-k = experts: every expert gets every token.
  CHECK(ExpertTokenCounts(5, 1, 2, 3, 4, 4, 37, 3.0) == std::vector<int64_t>(4, 37));
}

TEST_CASE("routing: counts are reproducible and vary with every key", "[synth][routing]") {
  auto c = [](uint64_t seed, int it, int pass, int layer) {
    return ExpertTokenCounts(seed, it, pass, layer, 8, 2, 4096, 0.5);
  };
  CHECK(c(1, 0, 0, 0) == c(1, 0, 0, 0));
  CHECK(c(1, 0, 0, 0) != c(2, 0, 0, 0));
  CHECK(c(1, 0, 0, 0) != c(1, 1, 0, 0));
  CHECK(c(1, 0, 0, 0) != c(1, 0, 1, 0));
  CHECK(c(1, 0, 0, 0) != c(1, 0, 0, 1));
}

TEST_CASE("routing: property — sums, caps and spread", "[synth][routing][property]") {
  const uint64_t seed = 77;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 500; ++trial) {
    const int32_t experts = static_cast<int32_t>(rng() % 16) + 1;
    const int32_t k = static_cast<int32_t>(rng() % experts) + 1;
    const int64_t tokens = static_cast<int64_t>(rng() % 5000) + 1;
    const double sigma = static_cast<double>(rng() % 300) / 100.0;
    INFO("trial " << trial << " E " << experts << " k " << k << " T " << tokens << " σ " << sigma);
    std::vector<int64_t> c = ExpertTokenCounts(rng(), trial, 0, 0, experts, k, tokens, sigma);
    REQUIRE(static_cast<int32_t>(c.size()) == experts);
    CHECK(std::accumulate(c.begin(), c.end(), int64_t{0}) == tokens * k);
    for (int64_t n : c) {
      CHECK(n >= 0);
      CHECK(n <= tokens);
    }
  }
}

}  // namespace
}  // namespace swapplan::synth_internal
