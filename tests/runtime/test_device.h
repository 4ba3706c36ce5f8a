// The device under the runtime tests, whichever backend runs them. The
// runtime's test matrix (ordering rules, faults, policies and stages, the
// randomized 1,000 iterations, the transfer queue) is written once against
// a Backend and a TestDevice; the backend is chosen per run by
// $SWAPPLAN_TEST_BACKEND (tests/meson.build):
//
//   host    the HostBackend itself (suite runtime)
//   cuda    the CUDA backend over libfake_cudart.so ($SWAPPLAN_FAKE_CUDART; suite backend-cuda)
//   ascend  the Ascend backend over libfake_ascendcl.so ($SWAPPLAN_FAKE_ASCENDCL; suite
//           backend-ascend)
//
// A fake vendor runtime executes the calls on a HostBackend of its own
// (fake_device.h), so a TestDevice gives the same view in every case: the
// device's counters and copy log, fault injection, and — with a fake — the
// rules it saw broken and the log of vendor calls.
//
//   TestBackend tb = MakeTestBackend({.capacity_bytes = 1000});
//   REQUIRE(tb.status.ok());
//   ... Runtime::Create(options, std::move(tb.backend)) ...
//   CHECK(tb.device->counters().stream_waits == 1);
//
// Threading: as the backends (one test thread).
#ifndef SWAPPLAN_TESTS_RUNTIME_TEST_DEVICE_H_
#define SWAPPLAN_TESTS_RUNTIME_TEST_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "swapplan/runtime/backend.h"
#include "swapplan/runtime/host_backend.h"

namespace swapplan::runtime::testing {

enum class TestBackendKind : uint8_t { kHost, kCuda, kAscend };

// $SWAPPLAN_TEST_BACKEND ("host" when unset; an unknown name aborts the run
// with a message).
TestBackendKind CurrentTestBackend();
const char* TestBackendName(TestBackendKind kind);
// The fake library of a vendor kind ($SWAPPLAN_FAKE_CUDART /
// $SWAPPLAN_FAKE_ASCENDCL, set by tests/meson.build); "" when unset.
std::string FakeLibraryPath(TestBackendKind kind);

class TestDevice {
 public:
  virtual ~TestDevice() = default;
  virtual HostBackendCounters counters() const = 0;
  virtual std::vector<CopyLogEntry> CopyLog() const = 0;
  virtual absl::Status InjectFault(const FaultSpec& fault) = 0;
  virtual void ClearFaults() = 0;
  // Rules a fake vendor runtime saw broken, one per line ("" = none; the
  // host backend checks its own rules by failing the call).
  virtual std::string Violations() const { return ""; }
  // The fake's log of vendor calls and how often `name` was called (empty /
  // 0 on the host backend).
  virtual std::string CallLog() const { return ""; }
  virtual int64_t CallCount(const std::string& name) const { return 0; }
};

struct DeviceSpec {
  int64_t capacity_bytes = 1000;
  double h2d_bytes_per_s = 1e9;  // 1 byte/ns
  double d2h_bytes_per_s = 1e9;
  int64_t copy_latency_ns = 0;
  int32_t copy_engines = 2;
  ComputeStreamKind compute = ComputeStreamKind::kInline;
  // Fake ACL device: events it allows (-1: the suite's default, 64; 0: no
  // limit). Ignored elsewhere.
  int32_t max_events = -1;
  // Fake: device pointers outside its allocations are a framework's memory.
  bool allow_foreign_device_memory = false;
};

struct TestBackend {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<TestDevice> device;
  absl::Status status;  // why backend is null
};

// A fresh device of `kind` (a fake is reset to `spec`) and a backend on it.
TestBackend MakeTestBackend(const DeviceSpec& spec, TestBackendKind kind = CurrentTestBackend());

// The events a fake ACL device allows in the backend-ascend suite: the
// runtime must reuse its events (event_pool.h) to stay under it.
inline constexpr int32_t kAscendSuiteEventLimit = 64;

}  // namespace swapplan::runtime::testing

#endif  // SWAPPLAN_TESTS_RUNTIME_TEST_DEVICE_H_
