// The C API tests' environment options: a host device of `device_bytes`,
// 1 byte/ns links each way, no copy latency (round numbers for worked
// values). Header-only: the C API test executables link nothing of swapplan
// but libswapplan_runtime.
#ifndef SWAPPLAN_TESTS_RUNTIME_C_API_OPTIONS_H_
#define SWAPPLAN_TESTS_RUNTIME_C_API_OPTIONS_H_

#include <cstdint>

#include "swapplan/runtime/swapplan_runtime.h"

inline swapplan_rt_options CApiTestOptions(int64_t device_bytes) {
  swapplan_rt_options o;
  swapplan_rt_options_init(&o);
  o.device_memory_bytes = device_bytes;
  o.h2d_bandwidth_bytes_per_s = 1e9;
  o.d2h_bandwidth_bytes_per_s = 1e9;
  o.copy_latency_ns = 0;
  return o;
}

#endif  // SWAPPLAN_TESTS_RUNTIME_C_API_OPTIONS_H_
