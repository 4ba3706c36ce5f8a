// Rng: a small, fast, portable pseudo-random generator (xoshiro256**,
// seeded through SplitMix64) with the few distributions swapplan needs.
// Unlike std::uniform_int_distribution / std::normal_distribution, whose
// algorithms differ between standard libraries, every draw here is defined
// by this file, so a seed gives the same sequence everywhere — what the
// Advisor's "same seed, same result" promise rests on.
//
//   Rng rng(42);
//   int64_t i = rng.Uniform(10);        // 0..9
//   double u = rng.UniformDouble();     // [0, 1)
//   double z = rng.Normal(5.0, 1.0);    // Box–Muller
//   Rng child(rng.Next());              // an independent stream
#ifndef SWAPPLAN_UTIL_RANDOM_H_
#define SWAPPLAN_UTIL_RANDOM_H_

#include <cmath>
#include <cstdint>

namespace swapplan {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) w = SplitMix(&seed);
  }

  // 64 random bits.
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n); requires n > 0. Lemire's multiply-shift with
  // rejection: exactly uniform.
  uint64_t Uniform(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Uniform in [0, 1), 53 bits.
  double UniformDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // True with probability p.
  bool Bernoulli(double p) { return UniformDouble() < p; }
  // Normal(mean, stddev) by Box–Muller (one draw per call; no cached pair).
  double Normal(double mean, double stddev) {
    const double u1 = 1.0 - UniformDouble();  // (0, 1]
    const double u2 = UniformDouble();
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix(uint64_t* x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_RANDOM_H_
