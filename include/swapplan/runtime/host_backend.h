// HostBackend: a Backend (backend.h) whose "device" is host memory, for tests
// and for frameworks computing on the CPU. It behaves like a device where it
// matters to the shim:
//
//   * device memory is an arena with a hard capacity (DeviceModel::
//     capacity_bytes, counted in exact bytes as the planners count them, or
//     in the reserved bytes of PyTorch's caching allocator model:
//     HostBackendOptions::allocator): an allocation beyond it fails with
//     ResourceExhausted tagged "out-of-memory", exactly as a device OOM does. The arena is one
//     reserved address range (mmap, committed on touch) with best-fit,
//     lowest-address reuse, so a freed block is handed out again
//     deterministically — a release that came too early gets its bytes
//     overwritten, and tests see it.
//   * each stream created by CreateStream is a worker thread running its
//     work in issue order. A copy holds its direction's copy engine for
//     latency + bytes / bandwidth (DeviceModel: h2d/d2h bandwidth,
//     copy_latency_ns; copy_engines 1 = one engine for both directions),
//     so overlap and stalls are real and timed. Streams of one direction
//     compete for the engine; at every copy boundary a kHigh stream's copy
//     goes first:
//
//       d2h engine   |== out A (normal) ==|== out B (normal) ==|
//       h2d engine   |== in C (normal) ==|== in D (high) ==|== in E (normal) ==|
//                                         ^ D was issued after E, served first
//
//   * the compute stream (ComputeStream) is, by default, the calling thread
//     itself (ComputeStreamKind::kInline): a CPU framework computes on the
//     thread that calls the shim, so work "on the compute stream" runs when
//     it is issued — StreamWaitEvent blocks the caller until the event's
//     work is done (that is the compute engine stalling, in stream order;
//     the stall is the measured wait) and FreeAsync frees at once.
//     kWorker makes it a worker stream like the others (tests of stream
//     order with LaunchHostFunc "kernels").
//   * events: RecordEvent captures a generation; a wait captures the
//     generation current at the call (CUDA semantics).
//   * pinned host memory: HostAlloc is an aligned heap block (a CPU has no
//     pinning to do); CopyAsync refuses a host pointer outside every
//     HostAlloc block (pageable memory on a real device).
//   * faults, for tests (InjectFault): a copy that fails (it copies half the
//     bytes and reports Unavailable through the events recorded after it),
//     an allocation that fails like an OOM, a copy slowed by a factor.
//
// Failures: the call that observes one returns it. A worker stream that
// waits on a failed event fails for good (later work on it is skipped and
// its later events carry the error, as a CUDA context's sticky error); the
// inline compute stream returns the error from StreamWaitEvent and goes on
// (the caller decides: the runtime keeps the tensor's device block).
//
//   HostBackendOptions o;
//   o.device.capacity_bytes = 1000;
//   o.device.h2d_bandwidth_bytes_per_s = o.device.d2h_bandwidth_bytes_per_s = 1e9;  // 1 B/ns
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<HostBackend> b, HostBackend::Create(o));
//   SWAPPLAN_ASSIGN_OR_RETURN(void* dev, b->AllocAsync(100, b->ComputeStream()));
//
// Threading: Backend calls from one thread at a time (the runtime's); the
// workers are internal. InjectFault, CopyLog and counters may be called from
// any thread. Complexity: allocation O(log blocks); a copy O(log host
// blocks) to validate plus the copy itself.
#ifndef SWAPPLAN_RUNTIME_HOST_BACKEND_H_
#define SWAPPLAN_RUNTIME_HOST_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/alloc/allocator_model.h"
#include "swapplan/device/device_model.h"
#include "swapplan/runtime/backend.h"

namespace swapplan::runtime {

enum class ComputeStreamKind : uint8_t {
  kInline = 0,  // the calling thread (CPU frameworks)
  kWorker = 1,  // a worker thread (tests of device-style stream order)
};

enum class FaultKind : uint8_t {
  kCopyError = 0,     // the copy fails
  kAllocFailure = 1,  // AllocAsync fails as an OOM
  kSlowCopy = 2,      // the copy takes slow_factor times as long
};

struct FaultSpec {
  FaultKind kind = FaultKind::kCopyError;
  // Copies only: restrict to one direction.
  bool any_direction = true;
  Direction direction = Direction::kDeviceToHost;
  // Matching operations that pass before the fault first fires.
  int32_t skip = 0;
  // Matching operations it fires on after that; -1 = all of them.
  int32_t count = 1;
  // kSlowCopy: duration multiplier (> 1).
  double slow_factor = 10;

  // InvalidArgument naming the field: skip < 0, count 0 or < -1,
  // slow_factor not > 1 for kSlowCopy.
  absl::Status Validate() const;
};

struct HostBackendOptions {
  // capacity_bytes (> 0, at most 1 TiB) is the arena's capacity; the
  // bandwidths, copy_latency_ns and copy_engines time the copies.
  DeviceModel device;
  ComputeStreamKind compute = ComputeStreamKind::kInline;
  // false: copies take only as long as the memcpy (no bandwidth model).
  bool timed_copies = true;
  // Keep a CopyLogEntry per copy (tests).
  bool copy_log = false;
  // What device.capacity_bytes holds: kBestFitArena (the default) the bytes
  // in use, placed best fit; kCudaCaching the reserved bytes of PyTorch's
  // caching allocator (alloc/allocator_model.h, these options' caching
  // fields; capacity_bytes is set from the device) fed the same allocations
  // and frees, so that an allocation fails where PyTorch's would and
  // HostBackendCounters::arena_reserved_bytes is that allocator's figure.
  // (The best-fit arena still places the bytes.)
  AllocatorOptions allocator = {.kind = AllocatorKind::kBestFitArena};

  // InvalidArgument naming the field (the device model's own rules, a
  // capacity above 1 TiB, caching allocator options that do not validate).
  absl::Status Validate() const;
};

struct CopyLogEntry {
  int32_t stream = 0;  // stream id (creation order, 1-based; 0 = compute)
  Direction direction = Direction::kDeviceToHost;
  int64_t bytes = 0;
  // Steady-clock ns: issued by the host, started on the engine, finished.
  int64_t issue_ns = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool ok = true;
};

struct HostBackendCounters {
  int64_t event_queries = 0;
  int64_t event_synchronizes = 0;
  int64_t stream_synchronizes = 0;
  int64_t stream_waits = 0;
  int64_t device_allocs = 0;
  int64_t device_frees = 0;
  int64_t host_allocs = 0;
  int64_t host_frees = 0;
  int64_t copies = 0;
  int64_t failed_copies = 0;
  // Arena bytes in use now and at most (exact bytes, as the capacity).
  int64_t arena_in_use_bytes = 0;
  int64_t arena_peak_bytes = 0;
  // Reserved bytes now and at most (after successful allocations): the
  // caching allocator model's with HostBackendOptions::allocator
  // kCudaCaching, else the best-fit arena's extent (the end of its highest
  // block in use).
  int64_t arena_reserved_bytes = 0;
  int64_t arena_peak_reserved_bytes = 0;
};

class HostBackend final : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<HostBackend>> Create(const HostBackendOptions& options);
  ~HostBackend() override;
  HostBackend(const HostBackend&) = delete;
  HostBackend& operator=(const HostBackend&) = delete;

  absl::string_view name() const override { return "host"; }
  Stream ComputeStream() override;
  absl::StatusOr<Stream> CreateStream(StreamPriority priority) override;
  absl::Status DestroyStream(Stream stream) override;
  absl::StatusOr<Event> CreateEvent() override;
  absl::Status DestroyEvent(Event event) override;
  absl::Status RecordEvent(Event event, Stream stream) override;
  absl::Status StreamWaitEvent(Stream stream, Event event) override;
  absl::StatusOr<bool> QueryEvent(Event event) override;
  absl::Status SynchronizeEvent(Event event) override;
  absl::Status SynchronizeStream(Stream stream) override;
  absl::StatusOr<void*> AllocAsync(int64_t bytes, Stream stream) override;
  absl::Status FreeAsync(void* ptr, Stream stream) override;
  absl::StatusOr<void*> HostAlloc(int64_t bytes) override;
  absl::Status HostFree(void* ptr) override;
  absl::Status CopyAsync(void* dst, const void* src, int64_t bytes, Direction direction,
                         Stream stream) override;
  absl::StatusOr<MemInfo> GetMemInfo() override;

  // --- for tests ---
  // Adds a fault (InvalidArgument for a bad spec).
  absl::Status InjectFault(const FaultSpec& fault);
  void ClearFaults();
  // Runs `fn` on the stream in issue order (a "kernel"; inline: now).
  absl::Status LaunchHostFunc(Stream stream, std::function<void()> fn);
  // The copies so far (empty unless HostBackendOptions::copy_log).
  std::vector<CopyLogEntry> CopyLog() const;
  HostBackendCounters counters() const;
  // Whether a copy holds the engine of `direction` now.
  bool CopyEngineBusy(Direction direction) const;
  // Steady-clock nanoseconds, the clock of CopyLogEntry.
  static int64_t NowNs();
  const HostBackendOptions& options() const;

  struct Impl;

 private:
  explicit HostBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_HOST_BACKEND_H_
