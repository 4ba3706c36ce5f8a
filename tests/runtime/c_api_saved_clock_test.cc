// The C API's saved-tensor clock rule (swapplan_rt_snap_saved_window),
// through the shared library and its header only, like c_api_test.cc.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "swapplan/runtime/swapplan_runtime.h"

namespace {

std::string LastError() { return swapplan_rt_last_error(); }

TEST_CASE("C API: the saved-tensor clock's rule needs no environment") {
  // Events at positions 1 2 4 4 7 8 9 (python/runtime_tests/test_hookclock.py):
  // released after 3 ops -> event 2 (pos 4); restored before op 7 -> event 4.
  const int32_t events[] = {1, 2, 4, 4, 7, 8, 9};
  int32_t out = 9, in = 9;
  REQUIRE(swapplan_rt_snap_saved_window(events, 7, 0, 3, 7, &out, &in) == SWAPPLAN_RT_OK);
  CHECK(out == 2);
  CHECK(in == 4);
  // No event between 5 and 6: resident.
  REQUIRE(swapplan_rt_snap_saved_window(events, 7, 0, 5, 6, &out, &in) == SWAPPLAN_RT_OK);
  CHECK(out == -1);
  CHECK(in == -1);
  CHECK(swapplan_rt_snap_saved_window(events, 7, 7, 3, 7, &out, &in) ==
        SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(LastError().find("first pack event 7 is not one of the 7 events") != std::string::npos);
  CHECK(swapplan_rt_snap_saved_window(nullptr, 7, 0, 3, 7, &out, &in) ==
        SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(swapplan_rt_snap_saved_window(events, 7, 0, 3, 7, nullptr, &in) ==
        SWAPPLAN_RT_INVALID_ARGUMENT);
}

}  // namespace
