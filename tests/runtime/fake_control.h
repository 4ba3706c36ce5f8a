/* The test-only control API of the fake vendor runtimes (libfake_cudart.so,
 * libfake_ascendcl.so; tests/runtime/fake_device.h). Each fake exports the
 * vendor's symbols (the ones the backend's table binds) and these functions;
 * a test dlopens the same library the backend loaded (dlopen returns the
 * same copy) and resolves them with dlsym, or loads it with ctypes.
 *
 *   swapplan_fake_config c;
 *   swapplan_fake_default_config(&c);
 *   c.capacity_bytes = 1000;
 *   if (swapplan_fake_reset(&c) != 0) puts(swapplan_fake_last_error());
 *   ... create the backend on the library, run ...
 *   char buf[4096];
 *   swapplan_fake_violations(buf, sizeof buf);      // "" when every rule held
 *
 * Threading: any thread; the fake serialises internally. */
#ifndef SWAPPLAN_TESTS_RUNTIME_FAKE_CONTROL_H_
#define SWAPPLAN_TESTS_RUNTIME_FAKE_CONTROL_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define SWAPPLAN_FAKE_API __attribute__((visibility("default")))
#else
#define SWAPPLAN_FAKE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swapplan_fake_config {
  int64_t capacity_bytes;     /* device memory (the host backend's arena) */
  double h2d_bytes_per_s;     /* copy model (host_backend.h) */
  double d2h_bytes_per_s;
  int64_t copy_latency_ns;
  int32_t copy_engines;       /* 1 or 2 */
  int32_t timed_copies;       /* 0: copies at memcpy speed */
  int32_t worker_compute;     /* 1: the default stream is a worker, not the caller */
  /* 1: a device pointer outside every allocation of the fake is memory a
   * framework allocated elsewhere (the CPU tests of the PyTorch integration,
   * whose "device" tensors are CPU storages); 0: it is a use after free. */
  int32_t allow_foreign_device_memory;
  int32_t max_events;         /* events alive at most, 0 = no limit */
} swapplan_fake_config;

typedef struct swapplan_fake_copy {
  int32_t stream;             /* 0 = the default stream, then creation order */
  int32_t direction;          /* 0 device->host, 1 host->device */
  int64_t bytes;
  int64_t issue_ns, start_ns, end_ns;  /* steady clock */
  int32_t ok;
} swapplan_fake_copy;

/* Defaults: 1 GiB, 10 GB/s both ways, 10 us, 2 engines, timed, the caller
 * computes, no foreign memory, no event limit. */
SWAPPLAN_FAKE_API void swapplan_fake_default_config(swapplan_fake_config* config);
/* A fresh device with `config`: empty memory, logs, violations and faults.
 * Non-zero (message in swapplan_fake_last_error) while streams or events of
 * the previous device are alive, or for a bad config. */
SWAPPLAN_FAKE_API int32_t swapplan_fake_reset(const swapplan_fake_config* config);
SWAPPLAN_FAKE_API const char* swapplan_fake_last_error(void);
/* host_backend.h FaultSpec: kind 0 copy error, 1 allocation failure, 2 slow
 * copy; direction 0 D2H, 1 H2D, -1 any. Non-zero for a bad spec. */
SWAPPLAN_FAKE_API int32_t swapplan_fake_inject_fault(int32_t kind, int32_t direction,
                                                     int32_t skip, int32_t count,
                                                     double slow_factor);
SWAPPLAN_FAKE_API void swapplan_fake_clear_faults(void);
/* Text of every broken rule so far, one per line ("" = none). Writes at most
 * capacity bytes (NUL-terminated); returns the bytes the whole text needs. */
SWAPPLAN_FAKE_API size_t swapplan_fake_violations(char* buf, size_t capacity);
/* Every call so far, one per line: "<seq> <function> key=value ... -> <code>". */
SWAPPLAN_FAKE_API size_t swapplan_fake_call_log(char* buf, size_t capacity);
/* Calls of the vendor function `name` so far. */
SWAPPLAN_FAKE_API int64_t swapplan_fake_call_count(const char* name);
/* The device's counters (host_backend.h HostBackendCounters, in its order):
 * 12 values. */
SWAPPLAN_FAKE_API void swapplan_fake_counters(int64_t* out);
/* The copies so far (up to capacity); returns how many there are. */
SWAPPLAN_FAKE_API size_t swapplan_fake_copy_log(swapplan_fake_copy* out, size_t capacity);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SWAPPLAN_TESTS_RUNTIME_FAKE_CONTROL_H_ */
