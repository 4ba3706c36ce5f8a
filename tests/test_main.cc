// The test executables' main, compiled once for all of them: Catch2 v2's
// CATCH_CONFIG_MAIN (Debian 12). With Catch2 v3 (Debian 13) main comes from
// its Catch2WithMain library (tests/meson.build) and this file is empty.
#if !__has_include(<catch2/catch_all.hpp>)
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#endif
