// Backend: the narrow interface between the runtime shim and a device
// runtime (SPEC §9). Everything the shim does to move a tensor goes through
// these calls; nothing else of the device is used. Implementations: the host
// backend (host_backend.h: "device" memory is a host arena, streams are
// worker threads; tests and CPU frameworks) and, later, CUDA and Ascend ACL
// backends that call the vendor runtime through a table of function pointers
// filled by dlopen/dlsym. Every call maps to one vendor call or a short
// fixed sequence of them:
//
//   Backend call          CUDA runtime                       ACL (acl_rt.h)
//   CreateStream(prio)    cudaStreamCreateWithPriority        aclrtCreateStreamWithConfig
//   DestroyStream         cudaStreamDestroy                   aclrtDestroyStream
//   CreateEvent           cudaEventCreateWithFlags(DisableTiming)  aclrtCreateEventExWithFlag
//   DestroyEvent          cudaEventDestroy                    aclrtDestroyEvent
//   RecordEvent(e, s)     cudaEventRecord                     aclrtRecordEvent
//   StreamWaitEvent(s, e) cudaStreamWaitEvent                 aclrtStreamWaitEvent
//   QueryEvent            cudaEventQuery                      aclrtQueryEventStatus
//   SynchronizeEvent      cudaEventSynchronize                aclrtSynchronizeEvent
//   SynchronizeStream     cudaStreamSynchronize               aclrtSynchronizeStream
//   AllocAsync(n, s)      cudaMallocAsync                     aclrtMalloc (+ stream-ordered cache)
//   FreeAsync(p, s)       cudaFreeAsync                       stream-ordered cache, aclrtFree
//   HostAlloc / HostFree  cudaHostAlloc / cudaFreeHost        aclrtMallocHost / aclrtFreeHost
//   CopyAsync(d, s, n)    cudaMemcpyAsync(D2H | H2D)          aclrtMemcpyAsync (64-byte aligned)
//   GetMemInfo            cudaMemGetInfo                      aclrtGetMemInfo(ACL_HBM_MEM)
//
// Semantics every backend honours (the CUDA ones):
//   * work on one stream runs in issue order; streams run concurrently;
//   * RecordEvent captures the work issued to the stream so far;
//     StreamWaitEvent(s, e) makes later work on s wait for what e captured
//     *at the time of the call* (re-recording e afterwards does not move the
//     wait), without blocking the host; QueryEvent never blocks;
//     SynchronizeEvent/SynchronizeStream block the host;
//   * AllocAsync returns memory usable by work issued to `stream` after the
//     call; FreeAsync returns it once the work issued to `stream` before the
//     call has finished — the release point of a swapped-out block is
//     "compute stream waits for the copy-out event, then FreeAsync on the
//     compute stream" (seed 001 §6.2), never a host poll;
//   * CopyAsync is between device memory and host memory from HostAlloc
//     (pinned: an async copy from pageable memory is not asynchronous on
//     CUDA); the host pointer may be anywhere inside a HostAlloc block.
//   * A failed asynchronous operation is reported by the events recorded
//     after it (QueryEvent / SynchronizeEvent return its status); an
//     allocation beyond the device's memory fails with ResourceExhausted and
//     the rule tag "out-of-memory" (util/error.h WithRule).
//
// Handles are opaque pointers (cudaStream_t, aclrtStream, ...), so a vendor
// table needs no wrapping objects. The compute stream is the one the
// framework runs its kernels on (CUDA: the current stream); ComputeStream()
// is the backend's default for it.
//
//   std::unique_ptr<Backend> b = ...;
//   SWAPPLAN_ASSIGN_OR_RETURN(Stream d2h, b->CreateStream(StreamPriority::kNormal));
//   SWAPPLAN_ASSIGN_OR_RETURN(Event done, b->CreateEvent());
//   SWAPPLAN_RETURN_IF_ERROR(b->CopyAsync(host, dev, n, Direction::kDeviceToHost, d2h));
//   SWAPPLAN_RETURN_IF_ERROR(b->RecordEvent(done, d2h));
//   SWAPPLAN_RETURN_IF_ERROR(b->StreamWaitEvent(b->ComputeStream(), done));
//   SWAPPLAN_RETURN_IF_ERROR(b->FreeAsync(dev, b->ComputeStream()));  // after the copy
//
// Threading: a backend is called from one thread at a time (the runtime
// serialises its callers); its own workers never call back into the runtime.
#ifndef SWAPPLAN_RUNTIME_BACKEND_H_
#define SWAPPLAN_RUNTIME_BACKEND_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/device/device_model.h"

namespace swapplan::runtime {

struct Stream {
  void* handle = nullptr;
  bool operator==(const Stream& o) const { return handle == o.handle; }
  bool operator!=(const Stream& o) const { return handle != o.handle; }
};

struct Event {
  void* handle = nullptr;
  bool operator==(const Event& o) const { return handle == o.handle; }
  bool valid() const { return handle != nullptr; }
};

// kHigh streams are served first where streams compete for a copy engine
// (CUDA: the greatest priority of cudaDeviceGetStreamPriorityRange; ACL:
// priority 0). Demand loads — a tensor touched while off the device — go
// there so that they overtake queued prefetches (seed 004's "passive
// swap-in at the head of the queue").
enum class StreamPriority : uint8_t { kNormal = 0, kHigh = 1 };

struct MemInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "host", "cuda", "ascend".
  virtual absl::string_view name() const = 0;

  // The stream the framework computes on unless the runtime is told
  // another one.
  virtual Stream ComputeStream() = 0;

  virtual absl::StatusOr<Stream> CreateStream(StreamPriority priority) = 0;
  // Waits for the stream's work, then destroys it.
  virtual absl::Status DestroyStream(Stream stream) = 0;

  virtual absl::StatusOr<Event> CreateEvent() = 0;
  virtual absl::Status DestroyEvent(Event event) = 0;
  virtual absl::Status RecordEvent(Event event, Stream stream) = 0;
  virtual absl::Status StreamWaitEvent(Stream stream, Event event) = 0;
  // True when the work the event captured has finished; its error when
  // that work failed. Never blocks.
  virtual absl::StatusOr<bool> QueryEvent(Event event) = 0;
  virtual absl::Status SynchronizeEvent(Event event) = 0;
  virtual absl::Status SynchronizeStream(Stream stream) = 0;

  // Stream-ordered device memory (see above). ResourceExhausted tagged
  // "out-of-memory" when the device cannot hold `bytes` more.
  virtual absl::StatusOr<void*> AllocAsync(int64_t bytes, Stream stream) = 0;
  virtual absl::Status FreeAsync(void* ptr, Stream stream) = 0;

  // Pinned host memory, in large blocks (the runtime's pool sub-allocates:
  // pinned allocation is slow and never on the per-swap path).
  virtual absl::StatusOr<void*> HostAlloc(int64_t bytes) = 0;
  virtual absl::Status HostFree(void* ptr) = 0;

  // One copy between device memory and pinned host memory; `direction`
  // says which pointer is which.
  virtual absl::Status CopyAsync(void* dst, const void* src, int64_t bytes, Direction direction,
                                 Stream stream) = 0;

  virtual absl::StatusOr<MemInfo> GetMemInfo() = 0;
};

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_BACKEND_H_
