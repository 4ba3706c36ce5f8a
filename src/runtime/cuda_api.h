// CudaApi: the narrow table of CUDA runtime calls the CUDA backend makes
// (cuda_backend.h), filled by dlopen/dlsym of libcudart at run time. No
// CUDA header is included: the few types and values the calls need are
// declared here with the numbers of the CUDA 13 headers (driver_types.h,
// cuda_runtime_api.h). tests/runtime/cuda_signatures_check.cc compiles every
// function type and value below against the real headers where they are
// installed (meson option check_cuda_toolkit), so a mismatch fails the build.
// The fake runtime (tests/runtime/fake_cudart.cc) defines the same symbols
// with these types.
//
// Handles are the CUDA ones: the struct tags are the global names the CUDA
// headers use (struct CUstream_st, CUevent_st, CUmemPoolHandle_st), so the
// pointer types are the very same types. Enums are passed as int: the CUDA
// enums are 4-byte integers (the signature check compares them by size and
// position), and every value used is listed here.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<CudaApi> api, CudaApi::Load("libcudart.so.13"));
//   cuda::Stream s = nullptr;
//   cuda::Error e = api->StreamCreateWithPriority(&s, cuda::kStreamNonBlocking, -1);
//
// Threading: the table is immutable after Load; the CUDA runtime is
// thread-safe.
#ifndef SWAPPLAN_SRC_RUNTIME_CUDA_API_H_
#define SWAPPLAN_SRC_RUNTIME_CUDA_API_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/vendor_library.h"

struct CUstream_st;
struct CUevent_st;
struct CUmemPoolHandle_st;

namespace swapplan::runtime::cuda {

using Error = int;                       // cudaError_t (enum cudaError)
using Stream = CUstream_st*;             // cudaStream_t
using Event = CUevent_st*;               // cudaEvent_t
using MemPool = CUmemPoolHandle_st*;     // cudaMemPool_t

// enum cudaError (driver_types.h).
inline constexpr Error kSuccess = 0;
inline constexpr Error kErrorInvalidValue = 1;
inline constexpr Error kErrorMemoryAllocation = 2;
inline constexpr Error kErrorInitializationError = 3;
inline constexpr Error kErrorInsufficientDriver = 35;
inline constexpr Error kErrorNoDevice = 100;
inline constexpr Error kErrorInvalidDevice = 101;
inline constexpr Error kErrorInvalidResourceHandle = 400;
inline constexpr Error kErrorIllegalState = 401;
inline constexpr Error kErrorNotReady = 600;
inline constexpr Error kErrorIllegalAddress = 700;
inline constexpr Error kErrorLaunchFailure = 719;
inline constexpr Error kErrorNotSupported = 801;
inline constexpr Error kErrorUnknown = 999;
// enum cudaMemcpyKind.
inline constexpr int kMemcpyHostToDevice = 1;
inline constexpr int kMemcpyDeviceToHost = 2;
// enum cudaMemPoolAttr.
inline constexpr int kMemPoolAttrReleaseThreshold = 0x4;
// Flags (#defines in driver_types.h).
inline constexpr unsigned kStreamNonBlocking = 0x01;
inline constexpr unsigned kEventDisableTiming = 0x02;
inline constexpr unsigned kHostAllocPortable = 0x01;
// The special stream handles: 0 is the legacy default stream.
inline const Stream kStreamLegacy = reinterpret_cast<Stream>(0x1);
inline const Stream kStreamPerThread = reinterpret_cast<Stream>(0x2);

// The name of a code from the list above ("cudaErrorInvalidValue"), or
// nullptr for another code.
const char* KnownErrorName(Error e);

// Function types, one per call (the real declarations, enums as int).
using SetDeviceFn = Error (*)(int device);
using DeviceGetStreamPriorityRangeFn = Error (*)(int* least_priority, int* greatest_priority);
using StreamCreateWithPriorityFn = Error (*)(Stream* stream, unsigned int flags, int priority);
using StreamDestroyFn = Error (*)(Stream stream);
using StreamSynchronizeFn = Error (*)(Stream stream);
using EventCreateWithFlagsFn = Error (*)(Event* event, unsigned int flags);
using EventDestroyFn = Error (*)(Event event);
using EventRecordFn = Error (*)(Event event, Stream stream);
using StreamWaitEventFn = Error (*)(Stream stream, Event event, unsigned int flags);
using EventQueryFn = Error (*)(Event event);
using EventSynchronizeFn = Error (*)(Event event);
using MallocAsyncFn = Error (*)(void** dev_ptr, size_t size, Stream stream);
using FreeAsyncFn = Error (*)(void* dev_ptr, Stream stream);
using DeviceGetDefaultMemPoolFn = Error (*)(MemPool* pool, int device);
using MemPoolSetAttributeFn = Error (*)(MemPool pool, int attr, void* value);
using HostAllocFn = Error (*)(void** host_ptr, size_t size, unsigned int flags);
using FreeHostFn = Error (*)(void* ptr);
using MemcpyAsyncFn = Error (*)(void* dst, const void* src, size_t count, int kind, Stream stream);
using MemGetInfoFn = Error (*)(size_t* free_bytes, size_t* total_bytes);
using GetErrorNameFn = const char* (*)(Error error);
using GetErrorStringFn = const char* (*)(Error error);

}  // namespace swapplan::runtime::cuda

namespace swapplan::runtime::internal {

struct CudaApi {
  // Required: Load fails naming the first one the library lacks.
  cuda::SetDeviceFn SetDevice = nullptr;
  cuda::DeviceGetStreamPriorityRangeFn DeviceGetStreamPriorityRange = nullptr;
  cuda::StreamCreateWithPriorityFn StreamCreateWithPriority = nullptr;
  cuda::StreamDestroyFn StreamDestroy = nullptr;
  cuda::StreamSynchronizeFn StreamSynchronize = nullptr;
  cuda::EventCreateWithFlagsFn EventCreateWithFlags = nullptr;
  cuda::EventDestroyFn EventDestroy = nullptr;
  cuda::EventRecordFn EventRecord = nullptr;
  cuda::StreamWaitEventFn StreamWaitEvent = nullptr;
  cuda::EventQueryFn EventQuery = nullptr;
  cuda::EventSynchronizeFn EventSynchronize = nullptr;
  cuda::MallocAsyncFn MallocAsync = nullptr;
  cuda::FreeAsyncFn FreeAsync = nullptr;
  cuda::DeviceGetDefaultMemPoolFn DeviceGetDefaultMemPool = nullptr;
  cuda::MemPoolSetAttributeFn MemPoolSetAttribute = nullptr;
  cuda::HostAllocFn HostAlloc = nullptr;
  cuda::FreeHostFn FreeHost = nullptr;
  cuda::MemcpyAsyncFn MemcpyAsync = nullptr;
  cuda::MemGetInfoFn MemGetInfo = nullptr;
  // Optional (error texts).
  cuda::GetErrorNameFn GetErrorName = nullptr;
  cuda::GetErrorStringFn GetErrorString = nullptr;

  // The library the table points into.
  VendorLibrary library;

  // Opens the first of `candidates` that loads and binds every call.
  // Unavailable naming the candidates (none loads) or the library and the
  // first missing symbol.
  static absl::StatusOr<std::unique_ptr<CudaApi>> Load(const std::vector<std::string>& candidates);

  // "cudaErrorInvalidValue (1): invalid argument" — the name from the
  // library (or KnownErrorName, or "cudaError"), the code, the library's
  // description when it has one.
  std::string Describe(cuda::Error e) const;

 private:
  explicit CudaApi(VendorLibrary lib) : library(std::move(lib)) {}
};

}  // namespace swapplan::runtime::internal

#endif  // SWAPPLAN_SRC_RUNTIME_CUDA_API_H_
