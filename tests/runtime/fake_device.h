// FakeDevice: the device behind the fake vendor runtimes (fake_cudart.cc,
// fake_ascendcl.cc), test-only shared libraries that export the symbols the
// CUDA and Ascend backends bind (src/runtime/cuda_api.h, acl_api.h). The
// calls execute for real on host memory through a HostBackend
// (host_backend.h: the arena is the device memory, each stream a worker
// thread, copies timed on copy engines, events with CUDA's capture rule,
// faults), and the fake checks the rules real devices enforce — or corrupt
// memory silently when broken:
//
//   rule                                    checked                  on a GPU / NPU
//   async copy from pageable host memory    at the call              synchronous copy (CUDA),
//                                                                    refused (ACL)
//   device pointer not allocated / freed    at the call and when     garbage or a fault
//   (use after free, double free)           the copy runs
//   a copy into memory a copy still reads,  when the copy starts     silent corruption
//   a copy reading memory being written     on its stream
//   a free of memory a copy still reads     when the free runs       silent corruption
//                                           (the caller's default    (torchtune#1867)
//                                           stream: at the call)
//   a stream waits on an event never        at the call              the wait waits for nothing
//   recorded                                                         (CUDA), Megatron-LM#7398
//   ACL copy address not 64-byte aligned    at the call              ACL_ERROR_INVALID_PARAM
//   more events than the device allows      at the call              ACL_ERROR_RT_NO_EVENT_RESOURCE
//
// A broken rule is recorded (swapplan_fake_violations) and, when seen at the
// call, the call fails with the vendor's code and a message naming the
// rule; the test harness fails every test that leaves a violation
// (runtime_test_support.cc). Every call is logged ("<seq> <function>
// key=value ... -> <code>") and counted.
//
// The default stream (vendor handle 0; CUDA's cudaStreamLegacy and
// cudaStreamPerThread too) is the host backend's compute stream: the calling
// thread (a CPU "kernel" runs when issued, a wait blocks the caller and
// returns the waited work's error) unless the config asks for a worker.
//
//   FakeDevice& d = FakeDevice::Get();
//   SWAPPLAN_ASSIGN_OR_RETURN(void* s, d.NewStream(StreamPriority::kHigh));
//   SWAPPLAN_RETURN_IF_ERROR(d.Copy(host, dev, 100, Direction::kDeviceToHost, s, false));
//
// Threading: calls from any thread (one device per process, internally
// locked); copies' checks run on the streams' worker threads.
#ifndef SWAPPLAN_TESTS_RUNTIME_FAKE_DEVICE_H_
#define SWAPPLAN_TESTS_RUNTIME_FAKE_DEVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fake_control.h"
#include "swapplan/runtime/host_backend.h"

namespace swapplan::runtime::fake {

// Status categories the vendor wrappers turn into their codes:
//   InvalidArgument                     a bad value (cudaErrorInvalidValue)
//   FailedPrecondition, rule "rule-broken"  a broken rule (cudaErrorIllegalState)
//   NotFound                            an unknown handle
//   ResourceExhausted, rule "out-of-memory" / "event-limit"
//   Unavailable                         failed work (an injected copy error)
inline constexpr char kRuleBroken[] = "rule-broken";

class FakeDevice {
 public:
  // The process's device (created with the default config on first use).
  static FakeDevice& Get();

  absl::Status Reset(const swapplan_fake_config& config);
  const swapplan_fake_config& config() const { return config_; }

  // --- streams (vendor handles; nullptr and the special CUDA handles are
  // the default stream) ---
  absl::StatusOr<void*> NewStream(StreamPriority priority);
  absl::Status DeleteStream(void* stream);
  absl::Status SyncStream(void* stream);
  // Fake id of a stream handle (0 = default; -1 unknown).
  int32_t StreamId(void* stream);

  // --- events ---
  absl::StatusOr<void*> NewEvent();
  absl::Status DeleteEvent(void* event);
  absl::Status Record(void* event, void* stream);
  absl::Status Wait(void* stream, void* event);
  absl::StatusOr<bool> Query(void* event);
  absl::Status SyncEvent(void* event);
  int32_t EventId(void* event);

  // --- memory ---
  // Stream-ordered (the free runs in `stream`'s order); `stream` nullptr:
  // the default stream.
  absl::StatusOr<void*> Malloc(int64_t bytes, void* stream);
  absl::Status Free(void* ptr, void* stream);
  absl::StatusOr<void*> MallocHost(int64_t bytes);
  absl::Status FreeHost(void* ptr);
  absl::Status Copy(void* dst, const void* src, int64_t bytes, Direction direction, void* stream,
                    bool align64);
  absl::StatusOr<MemInfo> Info();

  // --- control (fake_control.h) ---
  absl::Status InjectFault(const FaultSpec& fault);
  void ClearFaults();
  std::string Violations() const;
  std::string CallLog() const;
  int64_t CallCount(const std::string& name) const;
  HostBackendCounters Counters();
  std::vector<CopyLogEntry> CopyLog();

  // Logs a vendor call (and counts it); returns its sequence number.
  int64_t LogCall(const char* name, const std::string& args, int32_t code);

 private:
  struct InflightCopy {
    int64_t seq;
    int32_t stream;
    Direction direction;
    uintptr_t dst, src;
    int64_t bytes;
  };
  struct Alloc {
    int64_t bytes;
    bool free_pending = false;
  };

  FakeDevice() = default;
  HostBackend& Host();  // requires mu_
  absl::StatusOr<Stream> StreamOfLocked(void* stream);
  bool IsDefault(void* stream) const;
  // The live allocation holding [p, p + n) (nullptr: none). Requires mu_.
  const Alloc* AllocationOf(uintptr_t p, int64_t n, uintptr_t* start) const;
  bool InPinned(uintptr_t p, int64_t n) const;
  // Conflicts of a copy about to run with the copies in flight ("" none).
  std::string CopyConflict(const InflightCopy& c) const;
  // Forgets the copies of a drained stream (fake id). Requires mu_.
  void DropIssuedLocked(int32_t stream);
  // The copies of `copies` that touch [p, p + n), for a message ("" none).
  std::string ReadersOf(uintptr_t p, int64_t n, const std::vector<InflightCopy>& copies) const;

  mutable std::mutex mu_;
  swapplan_fake_config config_{};
  bool configured_ = false;
  std::unique_ptr<HostBackend> host_;
  absl::flat_hash_map<void*, int32_t> streams_;  // handle -> id
  absl::flat_hash_map<void*, int32_t> events_;   // handle -> id
  absl::flat_hash_map<void*, bool> recorded_;    // event -> recorded at least once
  int32_t next_stream_ = 1, next_event_ = 1;
  std::map<uintptr_t, Alloc> allocs_;            // device allocations
  std::map<uintptr_t, int64_t> pinned_;          // pinned host blocks
  std::vector<InflightCopy> inflight_;  // started on their stream, not finished
  std::vector<InflightCopy> issued_;    // issued, not finished (a superset)
  std::vector<std::string> violations_;
  std::vector<std::string> log_;
  int64_t seq_ = 0;
  absl::flat_hash_map<std::string, int64_t> counts_;
};

// Formats a pointer as the log writes it.
std::string Hex(const void* p);

}  // namespace swapplan::runtime::fake

#endif  // SWAPPLAN_TESTS_RUNTIME_FAKE_DEVICE_H_
