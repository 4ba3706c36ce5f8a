#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "swapplan/util/checked.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST_CASE("checked: add, sub, mul at the int64 edges", "[util][checked]") {
  int64_t r = 0;
  CHECK(CheckedAdd<int64_t>(kMax - 1, 1, &r));
  CHECK(r == kMax);
  CHECK_FALSE(CheckedAdd<int64_t>(kMax, 1, &r));
  CHECK_FALSE(CheckedAdd<int64_t>(kMin, -1, &r));
  CHECK(CheckedAdd<int64_t>(kMin, kMax, &r));
  CHECK(r == -1);

  CHECK(CheckedSub<int64_t>(0, kMax, &r));
  CHECK(r == -kMax);
  CHECK_FALSE(CheckedSub<int64_t>(0, kMin, &r));  // -INT64_MIN does not exist
  CHECK_FALSE(CheckedSub<int64_t>(kMin, 1, &r));

  CHECK(CheckedMul<int64_t>(int64_t{1} << 31, int64_t{1} << 31, &r));
  CHECK(r == int64_t{1} << 62);
  CHECK_FALSE(CheckedMul<int64_t>(int64_t{1} << 32, int64_t{1} << 31, &r));  // 2^63
  CHECK_FALSE(CheckedMul<int64_t>(kMin, -1, &r));
  CHECK(CheckedMul<int64_t>(kMin, 1, &r));
  CHECK(r == kMin);

  uint32_t u = 0;
  CHECK_FALSE(CheckedAdd<uint32_t>(UINT32_MAX, 1u, &u));
  CHECK_FALSE(CheckedSub<uint32_t>(0u, 1u, &u));
  int32_t i = 0;
  CHECK_FALSE(CheckedMul<int32_t>(65536, 32768, &i));  // 2^31
  CHECK(CheckedMul<int32_t>(65536, -32768, &i));      // -2^31 fits
  CHECK(i == INT32_MIN);
}

TEST_CASE("checked: integer and floating conversions", "[util][checked]") {
  int32_t i = 0;
  CHECK(CheckedCast<int32_t>(int64_t{INT32_MAX}, &i));
  CHECK(i == INT32_MAX);
  CHECK_FALSE(CheckedCast<int32_t>(int64_t{INT32_MAX} + 1, &i));
  CHECK_FALSE(CheckedCast<int32_t>(uint64_t{1} << 32, &i));
  uint32_t u = 0;
  CHECK_FALSE(CheckedCast<uint32_t>(int64_t{-1}, &u));
  CHECK(CheckedCast<uint32_t>(uint64_t{UINT32_MAX}, &u));
  int64_t r = 0;
  CHECK_FALSE(CheckedCast<int64_t>(UINT64_MAX, &r));

  // Doubles truncate toward zero like static_cast; 2^63 itself does not fit.
  CHECK(CheckedCast<int64_t>(-2.9, &r));
  CHECK(r == -2);
  CHECK(CheckedCast<int64_t>(9223372036854774784.0, &r));  // largest double below 2^63
  CHECK(r == 9223372036854774784LL);
  CHECK_FALSE(CheckedCast<int64_t>(9223372036854775808.0, &r));  // 2^63
  CHECK(CheckedCast<int64_t>(-9223372036854775808.0, &r));      // -2^63 fits
  CHECK(r == kMin);
  CHECK_FALSE(CheckedCast<int64_t>(std::numeric_limits<double>::infinity(), &r));
  CHECK_FALSE(CheckedCast<int64_t>(std::numeric_limits<double>::quiet_NaN(), &r));
  CHECK_FALSE(CheckedCast<int64_t>(1e300, &r));
  CHECK(CheckedCast<int32_t>(2147483647.9, &i));  // truncates to INT32_MAX
  CHECK(i == INT32_MAX);
  CHECK_FALSE(CheckedCast<int32_t>(2147483648.0, &i));
  CHECK_FALSE(CheckedCast<uint32_t>(-1.0, &u));
  CHECK(CheckedCast<uint32_t>(-0.5, &u));  // truncates to 0
  CHECK(u == 0);
}

TEST_CASE("checked: sums report the overflowing element", "[util][checked]") {
  const std::vector<int64_t> fits = {kMax - 10, 4, 6};  // sums to kMax exactly
  int64_t r = 0;
  size_t at = 99;
  CHECK(CheckedSum<int64_t>(fits, &r, &at));
  CHECK(r == kMax);
  const std::vector<int64_t> over = {1, kMax - 1, 1, 5};  // 1 + (kMax-1) = kMax; + 1 overflows
  CHECK_FALSE(CheckedSum<int64_t>(over, &r, &at));
  CHECK(at == 2);

  // A negative element can bring the total back, and the sum is exact then.
  const std::vector<int64_t> back = {kMax, -kMax, kMax};
  CHECK(CheckedSum<int64_t>(back, &r));
  CHECK(r == kMax);

  CheckedAccumulator<int64_t> acc;
  CHECK(acc.Add(kMax / 2));
  CHECK(acc.Add(kMax / 2));      // kMax - 1
  CHECK(acc.Add(1));             // kMax
  CHECK_FALSE(acc.Add(1));       // overflows at the 4th Add (index 3)
  CHECK_FALSE(acc.Add(-kMax));   // stays failed
  CHECK_FALSE(acc.ok());
  CHECK(acc.failed_at() == 3);
}

TEST_CASE("checked: errors name the record, the operation and the rule", "[util][checked]") {
  absl::StatusOr<int64_t> r = AddOrError<int64_t>(kMax, 2, "toy.json: iteration 0");
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()) ==
        "toy.json: iteration 0: 9223372036854775807 + 2 overflows a 64-bit integer [overflow]");
  CHECK(KindOf(r.status()) == ErrorKind::kMalformedInput);
  CHECK(ExitCode(r.status()) == 2);
  CHECK(RuleOf(r.status()) == std::optional<std::string>("overflow"));

  // The callable form builds the message only on failure.
  int calls = 0;
  auto where = [&] {
    ++calls;
    return std::string("run.trace: tensor 7");
  };
  CHECK(*MulOrError<int64_t>(100, 4, where) == 400);
  CHECK(calls == 0);
  absl::StatusOr<int64_t> m = MulOrError<int64_t>(int64_t{1} << 62, 4, where);
  REQUIRE_FALSE(m.ok());
  CHECK(calls == 1);
  CHECK(std::string(m.status().message()) ==
        "run.trace: tensor 7: 4611686018427387904 * 4 overflows a 64-bit integer [overflow]");

  absl::StatusOr<int64_t> s = SubOrError<int64_t>(kMin, 1, "curve: op 3");
  CHECK(std::string(s.status().message()) ==
        "curve: op 3: -9223372036854775808 - 1 overflows a 64-bit integer [overflow]");

  const std::vector<int64_t> d = {kMax, 1};
  absl::StatusOr<int64_t> sum =
      SumOrError<int64_t>(d, [](size_t i) { return "iteration 0, op " + std::to_string(i); });
  CHECK(std::string(sum.status().message()) ==
        "iteration 0, op 1: the running sum 9223372036854775807 + 1 overflows a 64-bit "
        "integer [overflow]");
  const std::vector<int64_t> ok = {100, 200};
  CHECK(*SumOrError<int64_t>(ok, [](size_t) { return std::string(); }) == 300);

  absl::StatusOr<int32_t> c = CastOrError<int32_t>(int64_t{1} << 40, "policy: op 2");
  CHECK(std::string(c.status().message()) ==
        "policy: op 2: 1099511627776 does not fit in a 32-bit integer [overflow]");
  absl::StatusOr<int64_t> nan =
      CastOrError<int64_t>(std::numeric_limits<double>::quiet_NaN(), "flag --x");
  CHECK(std::string(nan.status().message()) == "flag --x: nan is not a finite number [overflow]");
  absl::StatusOr<uint8_t> u8 = CastOrError<uint8_t>(300, "byte");
  CHECK(std::string(u8.status().message()) ==
        "byte: 300 does not fit in an 8-bit unsigned integer [overflow]");
}

// Randomized cross-check against __int128 arithmetic (the naive reference).
TEST_CASE("checked: random operands agree with 128-bit arithmetic", "[util][checked]") {
  const uint64_t seed = 20240519;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&]() -> int64_t {
    switch (rng() % 4) {
      case 0: return static_cast<int64_t>(rng());                       // anything
      case 1: return static_cast<int64_t>(rng() % 2001) - 1000;          // small
      case 2: return kMax - static_cast<int64_t>(rng() % 3);             // near the top
      default: return kMin + static_cast<int64_t>(rng() % 3);            // near the bottom
    }
  };
  auto fits = [](__int128 v) { return v >= kMin && v <= kMax; };
  for (int k = 0; k < 100000; ++k) {
    const int64_t a = pick(), b = pick();
    int64_t r = 0;
    const __int128 sum = static_cast<__int128>(a) + b;
    const __int128 diff = static_cast<__int128>(a) - b;
    const __int128 prod = static_cast<__int128>(a) * b;
    REQUIRE(CheckedAdd(a, b, &r) == fits(sum));
    if (fits(sum)) REQUIRE(r == static_cast<int64_t>(sum));
    REQUIRE(CheckedSub(a, b, &r) == fits(diff));
    if (fits(diff)) REQUIRE(r == static_cast<int64_t>(diff));
    REQUIRE(CheckedMul(a, b, &r) == fits(prod));
    if (fits(prod)) REQUIRE(r == static_cast<int64_t>(prod));
  }
}

}  // namespace
}  // namespace swapplan
