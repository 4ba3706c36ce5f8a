#include "support/test_seed.h"

#include <cstdlib>
#include <iostream>
#include <random>

namespace swapplan::testing {

uint64_t TestSeed(const char* what) {
  uint64_t seed = 0;
  if (const char* s = std::getenv("SWAPPLAN_TEST_SEED"); s != nullptr && *s != '\0') {
    seed = std::strtoull(s, nullptr, 10);
  } else {
    seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  std::cout << what << ": seed " << seed << " (SWAPPLAN_TEST_SEED=" << seed << " reruns it)"
            << std::endl;
  return seed;
}

}  // namespace swapplan::testing
