// The CUDA backend: a Backend (backend.h) over the CUDA runtime, called
// only through a table of function pointers filled by dlopen/dlsym of
// libcudart at run time (src/runtime/cuda_api.h). The shim links no CUDA
// library and includes no CUDA header, so it builds and loads anywhere; a
// machine without the CUDA runtime gets a clear error naming the library
// (and the symbol, when the library lacks one) from CreateCudaBackend.
//
// Each Backend call is one CUDA call (or a fixed pair):
//
//   CreateStream(kNormal|kHigh)  cudaStreamCreateWithPriority(cudaStreamNonBlocking,
//                                least | greatest of cudaDeviceGetStreamPriorityRange)
//   DestroyStream                cudaStreamSynchronize + cudaStreamDestroy
//   CreateEvent / DestroyEvent   cudaEventCreateWithFlags(cudaEventDisableTiming) / cudaEventDestroy
//   RecordEvent, StreamWaitEvent cudaEventRecord, cudaStreamWaitEvent(flags 0)
//   QueryEvent                   cudaEventQuery (cudaErrorNotReady: false)
//   SynchronizeEvent / Stream    cudaEventSynchronize / cudaStreamSynchronize
//   AllocAsync / FreeAsync       cudaMallocAsync / cudaFreeAsync (the device's default
//                                memory pool, release threshold set at creation)
//   HostAlloc / HostFree         cudaHostAlloc(cudaHostAllocPortable) / cudaFreeHost
//   CopyAsync                    cudaMemcpyAsync(DeviceToHost | HostToDevice)
//   GetMemInfo                   cudaMemGetInfo
//
// Release in stream order (seed 001 §6.2, research/runtime.md "Design
// lessons"): the runtime makes the compute stream wait for the copy-out
// event, then calls FreeAsync on the compute stream — cudaFreeAsync returns
// the block to the pool in stream order, with no host poll:
//
//   compute  |op 5|--wait(E_out)--cudaFreeAsync(A)--|op 6 (may reuse A's block)|
//   d2h      |======== copy out A ========|E_out
//
// A framework tensor (PyTorch's caching allocator) is released by the
// framework's callback after the same wait (python/swapplan_runtime).
//
// Copies: CopyAsync refuses a host pointer outside every HostAlloc block
// (pageable memory makes cudaMemcpyAsync synchronous); the runtime's pinned
// pool (pinned_pool.h) allocates those blocks once and grows by large ones.
//
// Errors: every CUDA error becomes a status naming the call, its arguments,
// the error's name and code and the library's text ("cudaMemcpyAsync(dst
// 0x.., src 0x.., 4096 bytes, DeviceToHost, stream 0x..): cudaErrorInvalidValue
// (1): invalid argument"); cudaErrorMemoryAllocation from cudaMallocAsync is
// ResourceExhausted tagged "out-of-memory" (Algorithm 3 runs), everything
// else Unavailable. On a GPU a failed asynchronous copy is a sticky context
// error: every later call fails with it and the step fails at the first.
//
// The compute stream defaults to the legacy default stream (handle 0); a
// framework computing on another stream passes it to the runtime
// (Runtime::SetComputeStream, swapplan_rt_set_compute_stream).
//
//   CudaBackendOptions o;                 // libcudart from the loader's path
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, CreateCudaBackend(o));
//
// Threading: calls from one thread at a time (the runtime serialises them);
// cudaSetDevice(device) is called once, on the creating thread: calls from
// other threads must have that device current (PyTorch's threads do).
#ifndef SWAPPLAN_RUNTIME_CUDA_BACKEND_H_
#define SWAPPLAN_RUNTIME_CUDA_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/runtime/backend.h"

namespace swapplan::runtime {

// The environment variable naming the CUDA runtime library when
// CudaBackendOptions::library is empty.
inline constexpr char kCudaLibraryEnv[] = "SWAPPLAN_RT_CUDA_LIBRARY";

struct CudaBackendOptions {
  // The CUDA runtime library: a path or a soname. "" = $SWAPPLAN_RT_CUDA_LIBRARY,
  // else the first of libcudart.so, libcudart.so.13, libcudart.so.12,
  // libcudart.so.11.0 that loads (a process that already loaded one, such
  // as PyTorch's, gets that copy back by its soname).
  std::string library;
  // The device (cudaSetDevice), >= 0.
  int32_t device = 0;
  // cudaMemPoolAttrReleaseThreshold of the device's default pool: bytes it
  // keeps reserved at synchronisation points; -1 = all of them (UINT64_MAX).
  int64_t pool_release_threshold_bytes = -1;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

// The libraries CudaBackendOptions::library resolves to, in the order tried.
std::vector<std::string> CudaLibraryCandidates(const CudaBackendOptions& options);

// Loads the library, sets the device, reads the stream priority range and
// configures the default memory pool. Unavailable naming the library and
// symbol when it cannot be loaded, or the call and CUDA error when one
// fails (no driver, no device).
absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const CudaBackendOptions& options);

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_CUDA_BACKEND_H_
