#include "routing.h"

#include <algorithm>

namespace swapplan::synth_internal {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 53 random bits.
double Uniform(uint64_t* state) {
  return static_cast<double>(SplitMix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace

std::vector<int64_t> ExpertTokenCounts(uint64_t seed, int32_t iteration, int32_t pass,
                                       int32_t layer, int32_t experts, int32_t top_k,
                                       int64_t tokens, double sigma) {
  uint64_t state = seed;
  for (uint64_t v : {static_cast<uint64_t>(iteration), static_cast<uint64_t>(pass),
                     static_cast<uint64_t>(layer)}) {
    state ^= v + 0x9e3779b97f4a7c15ULL + (state << 6) + (state >> 2);
    SplitMix64(&state);
  }
  std::vector<double> weight(experts);
  for (int32_t e = 0; e < experts; ++e) {
    double z = -6;
    for (int k = 0; k < 12; ++k) z += Uniform(&state);
    weight[e] = std::max(0.05, 1 + sigma * z);
  }
  const int64_t total = tokens * top_k;
  std::vector<int64_t> count(experts, 0);
  std::vector<bool> capped(experts, false);
  int64_t remaining = total;
  // Apportion `remaining` over the uncapped experts; cap and repeat. At most
  // `experts` rounds, since each round caps at least one expert or finishes.
  for (int32_t round = 0; round <= experts && remaining > 0; ++round) {
    double wsum = 0;
    for (int32_t e = 0; e < experts; ++e) {
      if (!capped[e]) wsum += weight[e];
    }
    std::vector<std::pair<double, int32_t>> remainder;
    int64_t assigned = 0;
    std::vector<int64_t> add(experts, 0);
    for (int32_t e = 0; e < experts; ++e) {
      if (capped[e]) continue;
      const double exact = static_cast<double>(remaining) * weight[e] / wsum;
      add[e] = static_cast<int64_t>(exact);
      assigned += add[e];
      remainder.push_back({exact - static_cast<double>(add[e]), e});
    }
    // Largest remainders first; ties to the lower expert index.
    std::sort(remainder.begin(), remainder.end(),
              [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first
                                                                           : a.second < b.second; });
    for (size_t i = 0; assigned < remaining && i < remainder.size(); ++i, ++assigned) {
      ++add[remainder[i].second];
    }
    remaining = 0;
    for (int32_t e = 0; e < experts; ++e) {
      count[e] += add[e];
      if (count[e] >= tokens) {
        remaining += count[e] - tokens;
        count[e] = tokens;
        capped[e] = true;
      }
    }
  }
  return count;
}

}  // namespace swapplan::synth_internal
