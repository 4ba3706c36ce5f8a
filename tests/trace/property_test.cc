// Robustness: validation never crashes, however the input is damaged. Random
// byte flips, truncations and insertions on valid binary and JSON traces must
// each give either a valid trace or an error status that names the source
// (run under -Db_sanitize=address,undefined in CI's sanitizer build).
#include <random>

#include <catch2/catch.hpp>

#include "support/test_seed.h"
#include "support/test_traces.h"
#include "swapplan/trace/io.h"

namespace swapplan {
namespace {

std::string Mutate(std::string s, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<int> byte(0, 255);
  auto pos = [&s](std::mt19937_64& r) { return static_cast<size_t>(r() % s.size()); };
  int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n && !s.empty(); ++i) {
    switch (kind(rng)) {
      case 0:
        s[pos(rng)] = static_cast<char>(byte(rng));
        break;
      case 1:
        s.resize(pos(rng));
        break;
      case 2:
        s.insert(pos(rng), 1, static_cast<char>(byte(rng)));
        break;
      default:
        s.erase(pos(rng), 1 + rng() % 8);
        break;
    }
  }
  return s;
}

TEST_CASE("damaged traces never crash the reader", "[trace][property]") {
  const uint64_t seed = testing::TestSeed("trace property");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  int ok = 0, rejected = 0;
  for (int round = 0; round < 300; ++round) {
    testing::RandomTraceOptions o;
    o.ops_per_iteration = 20;
    std::string json = testing::RandomTraceJson(rng(), o);
    Trace valid = testing::TraceFromJson(json);
    std::string bin = TraceToBinary(valid);
    for (const std::string& input : {Mutate(bin, rng), Mutate(json, rng)}) {
      absl::StatusOr<Trace> t =
          input.rfind(std::string(kTraceMagic).substr(0, 1), 0) == 0 ? ParseTraceBinary(input, "m")
                                                                     : ParseTraceJson(input, "m");
      if (t.ok()) {
        ++ok;
      } else {
        ++rejected;
        CHECK(std::string(t.status().message()).rfind("m", 0) == 0);
        CHECK(std::string(t.status().message()).back() == ']');
      }
    }
  }
  CHECK(rejected > 0);
  CHECK(ok + rejected == 600);
}

}  // namespace
}  // namespace swapplan
