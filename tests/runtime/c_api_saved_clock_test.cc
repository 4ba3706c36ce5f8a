// The C API's saved-tensor clock: its rule (swapplan_rt_snap_saved_window)
// and the events of the execution record (swapplan_rt_saved_tensor_event),
// through the shared library and its header only, like c_api_test.cc.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "c_api_options.h"
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

TEST_CASE("C API: saved-tensor events go into the execution record") {
  swapplan_rt_options o = CApiTestOptions(1000);
  o.keep_record = 1;
  swapplan_rt_env* env = nullptr;
  REQUIRE(swapplan_rt_create_swap_env(&o, &env) == SWAPPLAN_RT_OK);
  int32_t op = -1;
  REQUIRE(swapplan_rt_intern_op(env, "aten::tanh", &op) == SWAPPLAN_RT_OK);
  // Iteration 0: op 0 makes A (400 bytes) and saves it; after op 1 a pack
  // the runtime holds no tensor of; after op 1 A's unpack. Iteration 1:
  // watched, nothing fires.
  REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) == SWAPPLAN_RT_OK);
  const int64_t shape[] = {100};
  swapplan_rt_tensor a = 0;
  void* p = nullptr;
  REQUIRE(swapplan_rt_tensor_alloc(env, 400, 1, shape, 1, SWAPPLAN_RT_KIND_ACTIVATION, -1, &a,
                                   &p) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_end(env, &a, 1) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_saved_tensor_event(env, 0, a) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_BACKWARD, &a, 1) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_end(env, nullptr, 0) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_saved_tensor_event(env, 0, 0) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_saved_tensor_event(env, 1, a) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_tensor_free(env, a) == SWAPPLAN_RT_OK);
  CHECK(swapplan_rt_saved_tensor_event(env, 0, a) == SWAPPLAN_RT_INVALID_ARGUMENT);
  CHECK(LastError().find("does not name a live tensor") != std::string::npos);
  REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_begin(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_saved_tensor_events_recorded(env) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_begin(env, op, SWAPPLAN_RT_PHASE_FORWARD, nullptr, 0) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_op_end(env, nullptr, 0) == SWAPPLAN_RT_OK);
  REQUIRE(swapplan_rt_iteration_end(env) == SWAPPLAN_RT_OK);

  const std::string path = "/tmp/swapplan-capi-saved-" + std::to_string(getpid()) + ".json";
  REQUIRE(swapplan_rt_write_record(env, path.c_str()) == SWAPPLAN_RT_OK);
  std::string json(1 << 16, '\0');
  FILE* f = std::fopen(path.c_str(), "r");
  REQUIRE(f != nullptr);
  json.resize(std::fread(json.data(), 1, json.size(), f));
  std::fclose(f);
  std::remove(path.c_str());
  // A is the record's tensor 1; positions are ops completed.
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = json.find(what); at != std::string::npos; at = json.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("\"saved_tensor_events\"") == 2);  // both iterations: recorded
  CHECK(count("\"kind\": \"PACK\"") == 2);
  CHECK(count("\"kind\": \"UNPACK\"") == 1);
  INFO(json);
  CHECK(json.find("{\"position\": 1, \"kind\": \"PACK\", \"tensor\": 1}") != std::string::npos);
  CHECK(json.find("{\"position\": 2, \"kind\": \"PACK\"}") != std::string::npos);
  CHECK(json.find("{\"position\": 2, \"kind\": \"UNPACK\", \"tensor\": 1}") !=
        std::string::npos);
  CHECK(json.find("\"saved_tensor_events\": []") != std::string::npos);
  REQUIRE(swapplan_rt_close_swap_env(env) == SWAPPLAN_RT_OK);
}

}  // namespace
