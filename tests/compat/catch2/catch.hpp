// Catch2 v2's single header on Catch2 v3 (Debian 13 ships v3.7; Debian 12
// ships v2.13, whose own catch2/catch.hpp is used there): the tests include
// <catch2/catch.hpp> and use v2's names, which v3 spells differently.
// tests/meson.build puts this directory on the include path only when the
// Catch2 it finds is v3.
//
//   #include <catch2/catch.hpp>
//   CHECK_THAT(message, Catch::Contains("op 3"));   // v3: Matchers::ContainsSubstring
//   CHECK(x == Approx(0.5));                        // v3: Catch::Approx
#pragma once

#include <catch2/catch_all.hpp>

#include <string>

namespace Catch {
// v2's string matchers lived in namespace Catch as well as Catch::Matchers.
inline Matchers::StringContainsMatcher Contains(const std::string& str,
                                                CaseSensitive cs = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(str, cs);
}
using Matchers::EndsWith;
using Matchers::Matches;
using Matchers::StartsWith;
}  // namespace Catch

// v2 made Approx visible in the global namespace.
using Catch::Approx;
