#include <catch2/catch.hpp>

#include "swapplan/util/units.h"

namespace swapplan {
namespace {

TEST_CASE("sizes: decimal and binary prefixes", "[util][units]") {
  CHECK(*ParseBytes("64GiB") == 68719476736LL);       // 64 * 2^30
  CHECK(*ParseBytes("512MiB") == 536870912LL);        // 512 * 2^20
  CHECK(*ParseBytes("1.5GB") == 1500000000LL);        // 1.5 * 10^9
  CHECK(*ParseBytes("100") == 100);
  CHECK(*ParseBytes(" 2 KiB ") == 2048);
  CHECK(*ParseBytes("3kB") == 3000);
  CHECK(*ParseBytes("1TiB") == 1099511627776LL);
  CHECK(*ParseBytes("0.5gib") == 536870912LL);        // units are case-insensitive
}

TEST_CASE("sizes: errors", "[util][units]") {
  absl::StatusOr<int64_t> r = ParseBytes("64 GiBs");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(r.status().message()) ==
        "invalid size '64 GiBs': unknown unit 'GiBs' (use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)");
  CHECK(std::string(ParseBytes("-5MB").status().message()) == "size '-5MB' is negative");
  CHECK(std::string(ParseBytes("abc").status().message()) == "invalid size 'abc'");
  CHECK(std::string(ParseBytes("").status().message()) == "empty size");
  CHECK(std::string(ParseBytes("1e30TB").status().message()) == "size '1e30TB' is too large");
}

TEST_CASE("bandwidths", "[util][units]") {
  CHECK(*ParseBandwidth("25GB/s") == 25e9);
  CHECK(*ParseBandwidth("25GB") == 25e9);
  CHECK(*ParseBandwidth("1GiB/s") == 1073741824.0);
  CHECK(std::string(ParseBandwidth("0GB/s").status().message()) == "bandwidth '0GB/s' must be > 0");
  CHECK(std::string(ParseBandwidth("fast").status().message()) ==
        "invalid bandwidth 'fast' (e.g. 25GB/s, 12GiB/s)");
}

TEST_CASE("durations", "[util][units]") {
  CHECK(*ParseDurationNs("60s") == 60000000000LL);
  CHECK(*ParseDurationNs("1.5ms") == 1500000);
  CHECK(*ParseDurationNs("250") == 250);
  CHECK(*ParseDurationNs("2min") == 120000000000LL);
  CHECK(std::string(ParseDurationNs("3 days").status().message()) ==
        "invalid duration '3 days': unknown unit 'days' (use ns, us, ms, s, min or h)");
}

TEST_CASE("fractions", "[util][units]") {
  CHECK(*ParseFraction("1%") == 0.01);
  CHECK(*ParseFraction("0.25") == 0.25);
  CHECK(*ParseFraction("150 %") == 1.5);
  CHECK(*ParseFraction("0") == 0.0);
  CHECK(std::string(ParseFraction("fast").status().message()) == "invalid fraction 'fast'");
  CHECK(std::string(ParseFraction("5pc").status().message()) ==
        "invalid fraction '5pc': unknown unit 'pc' (use % or none)");
  CHECK(std::string(ParseFraction("-1%").status().message()) == "fraction '-1%' is negative");
}

TEST_CASE("formatting", "[util][units]") {
  CHECK(FormatBytes(100) == "100 B");
  CHECK(FormatBytes(1536) == "1.50 KiB");
  CHECK(FormatBytes(68719476736LL) == "64.00 GiB");
  CHECK(FormatBandwidth(25e9) == "25.0 GB/s");
  CHECK(FormatDurationNs(1234567890) == "1.235 s");
  CHECK(FormatDurationNs(56700000) == "56.7 ms");
  CHECK(FormatDurationNs(890) == "890 ns");
}

}  // namespace
}  // namespace swapplan

#include "swapplan/util/utf8.h"

namespace swapplan {
namespace {

TEST_CASE("UTF-8 validation", "[util][utf8]") {
  CHECK(IsValidUtf8("aten::mm"));
  CHECK(IsValidUtf8("\xc3\xa9"));          // é
  CHECK(IsValidUtf8("\xe6\x97\xa5"));      // 日
  CHECK(IsValidUtf8("\xf0\x9f\x98\x80"));  // U+1F600
  CHECK_FALSE(IsValidUtf8("\xc3"));        // truncated
  CHECK_FALSE(IsValidUtf8("\xc0\xaf"));    // overlong '/'
  CHECK_FALSE(IsValidUtf8("\xed\xa0\x80"));  // surrogate U+D800
  CHECK_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(IsValidUtf8("\xff"));
}

TEST_CASE("units required where a unit is expected", "[util][units]") {
  // The same values as ParseBytes & co. once a unit is there...
  CHECK(*ParseBytesWithUnit("600B") == 600);
  CHECK(*ParseBytesWithUnit("64GiB") == 68719476736LL);  // 64 * 2^30
  CHECK(*ParseBandwidthWithUnit("25GB/s") == 25e9);
  CHECK(*ParseDurationWithUnit("10us") == 10000);
  // ...a bare number is refused with the units it could have meant.
  CHECK(ParseBytesWithUnit("600").status().message() == "'600' needs a unit, e.g. 600B or 600GiB");
  CHECK(ParseBandwidthWithUnit("25").status().message() == "'25' needs a unit, e.g. 25GB/s");
  // A size where a rate is due (mutation campaign, issue 19): refused, not
  // read as 25 GB/s.
  CHECK(ParseBandwidthWithUnit("25GB").status().message() ==
        "bandwidth '25GB' is a size: a rate needs /s, e.g. 25GB/s");
  CHECK(*ParseBandwidthWithUnit(" 12.5GiB/s ") == 12.5 * 1073741824.0);
  CHECK(ParseDurationWithUnit("10").status().message() == "'10' needs a unit, e.g. 10us or 10ms");
  CHECK(ParseBytesWithUnit("").status().message() == "empty value");
  CHECK(ParseBytesWithUnit(" ").status().message() == "empty value");
  CHECK(ParseBytesWithUnit("lots").status().message() == "invalid size 'lots'");
  CHECK(ParseBytesWithUnit("6 parsecs").status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("ratios", "[util][units]") {
  CHECK(*ParseRatio("1.5x") == 1.5);
  CHECK(*ParseRatio("2") == 2.0);  // dimensionless: no unit to forget
  CHECK(*ParseRatio("0.25x") == 0.25);
  CHECK(ParseRatio("0").status().message() == "ratio '0' must be > 0");
  CHECK(ParseRatio("-1x").status().message() == "ratio '-1x' must be > 0");
  CHECK(ParseRatio("2y").status().message() ==
        "invalid ratio '2y': unknown unit 'y' (use x or none)");
  CHECK(ParseRatio("").status().message() == "empty ratio");
}

// Issue 19 (libFuzzer findings in tests/data/fuzz_findings/): the largest
// int64 is exactly 2^63 - 1 = 9223372036854775807; as a double it rounds up
// to 2^63, which does not fit, so it is refused (before: cast to int64,
// undefined behaviour). 2^63 - 1024 is the largest double below 2^63 and is
// accepted exactly.
TEST_CASE("sizes and durations at the int64 limit", "[util][units][issue19]") {
  CHECK(ParseBytes("9223372036854775807").status().message() ==
        "size '9223372036854775807' is too large");
  CHECK(ParseDurationNs("9223372036854775807ns").status().message() ==
        "duration '9223372036854775807ns' is too large");
  CHECK(*ParseBytes("9223372036854774784") == 9223372036854774784LL);  // 2^63 - 1024
  CHECK(ParseBytes("8EiB").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseBytes("nan").status().message() == "invalid size 'nan'");
  CHECK(ParseBytes("inf").status().message() == "invalid size 'inf'");
}

// Values quoted in messages are escaped: a control character never makes a
// message span two lines (issue 19).
TEST_CASE("flag values with control characters: one-line messages", "[util][units][issue19]") {
  CHECK(ParseFraction("5\nGiB").status().message() ==
        "invalid fraction '5\\nGiB': unknown unit 'GiB' (use % or none)");
  CHECK(ParseBytes("1\tparsec").status().message() ==
        "invalid size '1\\tparsec': unknown unit 'parsec' (use B, kB, MB, GB, TB, KiB, MiB, "
        "GiB or TiB)");
  CHECK(ParseBytesWithUnit("7\n").status().message() ==
        "'7' needs a unit, e.g. 7B or 7GiB");  // surrounding whitespace is trimmed
  CHECK(ParseRatio("x\ny").status().message() == "invalid ratio 'x\\ny'");
  // libFuzzer finding (tests/data/fuzz_findings/units_newline_in_duration.txt):
  // the duration message quoted the text unescaped.
  CHECK(ParseDurationNs("1e30TF\nx").status().message() ==
        "invalid duration '1e30TF\\nx': unknown unit 'TF\\nx' (use ns, us, ms, s, min or h)");
}

}  // namespace
}  // namespace swapplan
