// The seed of a randomized test: random per run, printed, and fixed by
// SWAPPLAN_TEST_SEED so that a failure seen once (in CI, in a loop) reruns
// exactly.
//
//   const uint64_t seed = testing::TestSeed("chameleon property");
//   std::mt19937_64 rng(seed);
//   // stdout: "chameleon property: seed 1234 (SWAPPLAN_TEST_SEED=1234 reruns it)"
//
// Also INFO(...) the seed in the test case, so a failing assertion names it.
#ifndef SWAPPLAN_TESTS_SUPPORT_TEST_SEED_H_
#define SWAPPLAN_TESTS_SUPPORT_TEST_SEED_H_

#include <cstdint>

namespace swapplan::testing {

// Returns SWAPPLAN_TEST_SEED when set (decimal), else a fresh random seed;
// prints which to stdout, prefixed by `what`.
uint64_t TestSeed(const char* what);

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_SUPPORT_TEST_SEED_H_
