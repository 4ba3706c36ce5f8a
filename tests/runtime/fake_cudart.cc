// libfake_cudart.so: the CUDA runtime calls the CUDA backend binds
// (src/runtime/cuda_api.h), with the same signatures, executed by the fake
// device (fake_device.h: host memory, worker-thread streams, rule checks,
// faults, a log of every call). Test-only: the backend loads it in place of
// libcudart.so (tests/meson.build, suite backend-cuda).
//
// Codes: a bad value cudaErrorInvalidValue, a broken rule
// cudaErrorIllegalState (a bad address or pageable memory:
// cudaErrorInvalidValue), an unknown handle cudaErrorInvalidResourceHandle,
// no memory cudaErrorMemoryAllocation, failed work (an injected copy error)
// cudaErrorUnknown, a pending event cudaErrorNotReady. cudaGetErrorString
// returns the fake's message for the thread's last failed call. Stream
// priorities: cudaDeviceGetStreamPriorityRange says [0, -5] (least,
// greatest, as on current GPUs); a priority above the least is the host
// backend's kHigh.
//
// Threading: any thread (the fake device locks); see fake_device.h.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "fake_device.h"
#include "runtime/cuda_api.h"
#include "swapplan/util/error.h"

namespace cuda = swapplan::runtime::cuda;
using swapplan::Direction;
using swapplan::runtime::StreamPriority;
using swapplan::runtime::fake::FakeDevice;
using swapplan::runtime::fake::Hex;

namespace {

constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

thread_local std::string g_detail;
thread_local cuda::Error g_detail_code = cuda::kSuccess;
int g_pool_tag = 0;  // the default memory pool's handle points here

cuda::Error Code(const absl::Status& st) {
  switch (st.code()) {
    case absl::StatusCode::kOk:
      return cuda::kSuccess;
    case absl::StatusCode::kInvalidArgument:
      return cuda::kErrorInvalidValue;
    case absl::StatusCode::kFailedPrecondition:
      return cuda::kErrorIllegalState;
    case absl::StatusCode::kNotFound:
      return cuda::kErrorInvalidResourceHandle;
    case absl::StatusCode::kResourceExhausted:
      return cuda::kErrorMemoryAllocation;
    default:
      return cuda::kErrorUnknown;
  }
}

// Logs the call and returns its code; a failure's message becomes the
// thread's cudaGetErrorString text.
cuda::Error Done(const char* name, const std::string& args, const absl::Status& st,
                 cuda::Error code) {
  if (code != cuda::kSuccess) {
    g_detail = st.ok() ? std::string() : absl::StrCat("fake cudart: ", st.message());
    g_detail_code = code;
  }
  FakeDevice::Get().LogCall(name, args, code);
  return code;
}
cuda::Error Done(const char* name, const std::string& args, const absl::Status& st) {
  return Done(name, args, st, Code(st));
}

std::string S(void* s) { return absl::StrCat("stream=", FakeDevice::Get().StreamId(s)); }
std::string E(void* e) { return absl::StrCat("event=", FakeDevice::Get().EventId(e)); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) cuda::Error cudaSetDevice(int device) {
  return Done("cudaSetDevice", absl::StrCat("device=", device),
              device == 0 ? absl::OkStatus()
                          : absl::InvalidArgumentError(absl::StrCat("no device ", device)),
              device == 0 ? cuda::kSuccess : cuda::kErrorInvalidDevice);
}

__attribute__((visibility("default"))) cuda::Error cudaDeviceGetStreamPriorityRange(int* least,
                                                                                  int* greatest) {
  if (least != nullptr) *least = kLeastPriority;
  if (greatest != nullptr) *greatest = kGreatestPriority;
  return Done("cudaDeviceGetStreamPriorityRange", "", absl::OkStatus());
}

__attribute__((visibility("default"))) cuda::Error cudaStreamCreateWithPriority(
    cuda::Stream* stream, unsigned int flags, int priority) {
  if (stream == nullptr) {
    return Done("cudaStreamCreateWithPriority", "", absl::InvalidArgumentError("null stream"));
  }
  // CUDA clamps a priority outside the range.
  const int p = std::max(kGreatestPriority, std::min(kLeastPriority, priority));
  absl::StatusOr<void*> s = FakeDevice::Get().NewStream(p < kLeastPriority ? StreamPriority::kHigh
                                                                           : StreamPriority::kNormal);
  if (s.ok()) *stream = static_cast<cuda::Stream>(*s);
  return Done("cudaStreamCreateWithPriority",
              absl::StrCat("flags=", flags, " priority=", priority, " ",
                           s.ok() ? S(*s) : std::string("stream=-1")),
              s.status());
}

__attribute__((visibility("default"))) cuda::Error cudaStreamDestroy(cuda::Stream stream) {
  const std::string args = S(stream);
  return Done("cudaStreamDestroy", args, FakeDevice::Get().DeleteStream(stream));
}

__attribute__((visibility("default"))) cuda::Error cudaStreamSynchronize(cuda::Stream stream) {
  const std::string args = S(stream);
  return Done("cudaStreamSynchronize", args, FakeDevice::Get().SyncStream(stream));
}

__attribute__((visibility("default"))) cuda::Error cudaEventCreateWithFlags(cuda::Event* event,
                                                                          unsigned int flags) {
  if (event == nullptr) {
    return Done("cudaEventCreateWithFlags", "", absl::InvalidArgumentError("null event"));
  }
  absl::StatusOr<void*> e = FakeDevice::Get().NewEvent();
  if (e.ok()) *event = static_cast<cuda::Event>(*e);
  return Done("cudaEventCreateWithFlags",
              absl::StrCat("flags=", flags, " ", e.ok() ? E(*e) : std::string("event=-1")),
              e.status());
}

__attribute__((visibility("default"))) cuda::Error cudaEventDestroy(cuda::Event event) {
  const std::string args = E(event);
  return Done("cudaEventDestroy", args, FakeDevice::Get().DeleteEvent(event));
}

__attribute__((visibility("default"))) cuda::Error cudaEventRecord(cuda::Event event,
                                                                 cuda::Stream stream) {
  const std::string args = absl::StrCat(E(event), " ", S(stream));
  return Done("cudaEventRecord", args, FakeDevice::Get().Record(event, stream));
}

__attribute__((visibility("default"))) cuda::Error cudaStreamWaitEvent(cuda::Stream stream,
                                                                     cuda::Event event,
                                                                     unsigned int flags) {
  const std::string args = absl::StrCat(S(stream), " ", E(event), " flags=", flags);
  return Done("cudaStreamWaitEvent", args, FakeDevice::Get().Wait(stream, event));
}

__attribute__((visibility("default"))) cuda::Error cudaEventQuery(cuda::Event event) {
  const std::string args = E(event);
  absl::StatusOr<bool> done = FakeDevice::Get().Query(event);
  if (done.ok() && !*done) return Done("cudaEventQuery", args, absl::OkStatus(), cuda::kErrorNotReady);
  return Done("cudaEventQuery", args, done.status());
}

__attribute__((visibility("default"))) cuda::Error cudaEventSynchronize(cuda::Event event) {
  const std::string args = E(event);
  return Done("cudaEventSynchronize", args, FakeDevice::Get().SyncEvent(event));
}

__attribute__((visibility("default"))) cuda::Error cudaMallocAsync(void** ptr, size_t size,
                                                                 cuda::Stream stream) {
  if (ptr == nullptr) return Done("cudaMallocAsync", "", absl::InvalidArgumentError("null ptr"));
  absl::StatusOr<void*> p = FakeDevice::Get().Malloc(static_cast<int64_t>(size), stream);
  if (p.ok()) *ptr = *p;
  return Done("cudaMallocAsync",
              absl::StrCat("bytes=", size, " ", S(stream), " ptr=", p.ok() ? Hex(*p) : "0"),
              p.status());
}

__attribute__((visibility("default"))) cuda::Error cudaFreeAsync(void* ptr, cuda::Stream stream) {
  const std::string args = absl::StrCat("ptr=", Hex(ptr), " ", S(stream));
  return Done("cudaFreeAsync", args, FakeDevice::Get().Free(ptr, stream));
}

__attribute__((visibility("default"))) cuda::Error cudaDeviceGetDefaultMemPool(cuda::MemPool* pool,
                                                                             int device) {
  if (pool == nullptr || device != 0) {
    return Done("cudaDeviceGetDefaultMemPool", absl::StrCat("device=", device),
                absl::InvalidArgumentError("null pool or no such device"));
  }
  *pool = reinterpret_cast<cuda::MemPool>(&g_pool_tag);
  return Done("cudaDeviceGetDefaultMemPool", absl::StrCat("device=", device), absl::OkStatus());
}

__attribute__((visibility("default"))) cuda::Error cudaMemPoolSetAttribute(cuda::MemPool pool,
                                                                         int attr, void* value) {
  absl::Status st;
  if (pool != reinterpret_cast<cuda::MemPool>(&g_pool_tag) || value == nullptr ||
      attr != cuda::kMemPoolAttrReleaseThreshold) {
    st = absl::InvalidArgumentError("unknown pool, attribute or null value");
  }
  const std::string args =
      absl::StrCat("attr=", attr, st.ok() ? absl::StrCat(" value=", *static_cast<uint64_t*>(value))
                                          : std::string());
  return Done("cudaMemPoolSetAttribute", args, st);
}

__attribute__((visibility("default"))) cuda::Error cudaHostAlloc(void** ptr, size_t size,
                                                               unsigned int flags) {
  if (ptr == nullptr) return Done("cudaHostAlloc", "", absl::InvalidArgumentError("null ptr"));
  absl::StatusOr<void*> p = FakeDevice::Get().MallocHost(static_cast<int64_t>(size));
  if (p.ok()) *ptr = *p;
  return Done("cudaHostAlloc",
              absl::StrCat("bytes=", size, " flags=", flags, " ptr=", p.ok() ? Hex(*p) : "0"),
              p.status());
}

__attribute__((visibility("default"))) cuda::Error cudaFreeHost(void* ptr) {
  return Done("cudaFreeHost", absl::StrCat("ptr=", Hex(ptr)), FakeDevice::Get().FreeHost(ptr));
}

__attribute__((visibility("default"))) cuda::Error cudaMemcpyAsync(void* dst, const void* src,
                                                                 size_t count, int kind,
                                                                 cuda::Stream stream) {
  const std::string args = absl::StrCat("dst=", Hex(dst), " src=", Hex(src), " bytes=", count,
                                        " kind=", kind, " ", S(stream));
  if (kind != cuda::kMemcpyHostToDevice && kind != cuda::kMemcpyDeviceToHost) {
    return Done("cudaMemcpyAsync", args,
                absl::InvalidArgumentError(absl::StrCat(
                    "kind ", kind, ": the fake copies between device and host only")));
  }
  const Direction d =
      kind == cuda::kMemcpyDeviceToHost ? Direction::kDeviceToHost : Direction::kHostToDevice;
  return Done("cudaMemcpyAsync", args,
              FakeDevice::Get().Copy(dst, src, static_cast<int64_t>(count), d, stream, false));
}

__attribute__((visibility("default"))) cuda::Error cudaMemGetInfo(size_t* free_bytes,
                                                                 size_t* total_bytes) {
  absl::StatusOr<swapplan::runtime::MemInfo> info = FakeDevice::Get().Info();
  if (info.ok()) {
    if (free_bytes != nullptr) *free_bytes = static_cast<size_t>(info->free_bytes);
    if (total_bytes != nullptr) *total_bytes = static_cast<size_t>(info->total_bytes);
  }
  return Done("cudaMemGetInfo", "", info.status());
}

__attribute__((visibility("default"))) const char* cudaGetErrorName(cuda::Error error) {
  const char* name = cuda::KnownErrorName(error);
  return name != nullptr ? name : "cudaErrorUnknown";
}

__attribute__((visibility("default"))) const char* cudaGetErrorString(cuda::Error error) {
  if (error == g_detail_code && !g_detail.empty()) return g_detail.c_str();
  return error == cuda::kSuccess ? "no error" : "fake cudart error";
}

}  // extern "C"
