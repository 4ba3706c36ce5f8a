// Compile-only: the CUDA backend's vendor table (src/runtime/cuda_api.h)
// against the real CUDA headers — every function type, handle type and
// value the backend uses. Built when meson finds a toolkit (option
// check_cuda_toolkit); a mismatch fails the build. Nothing here runs or links CUDA.
#include <cuda_runtime_api.h>

#include "runtime/cuda_api.h"
#include "signature_traits.h"

namespace swapplan::runtime::testing {
namespace {

#define SWAPPLAN_SAME_SIGNATURE(fn, Table)                                \
  static_assert(kSameSignature<decltype(&::fn), cuda::Table>,             \
                #fn " is declared differently from cuda::" #Table)

SWAPPLAN_SAME_SIGNATURE(cudaSetDevice, SetDeviceFn);
SWAPPLAN_SAME_SIGNATURE(cudaDeviceGetStreamPriorityRange, DeviceGetStreamPriorityRangeFn);
SWAPPLAN_SAME_SIGNATURE(cudaStreamCreateWithPriority, StreamCreateWithPriorityFn);
SWAPPLAN_SAME_SIGNATURE(cudaStreamDestroy, StreamDestroyFn);
SWAPPLAN_SAME_SIGNATURE(cudaStreamSynchronize, StreamSynchronizeFn);
SWAPPLAN_SAME_SIGNATURE(cudaEventCreateWithFlags, EventCreateWithFlagsFn);
SWAPPLAN_SAME_SIGNATURE(cudaEventDestroy, EventDestroyFn);
SWAPPLAN_SAME_SIGNATURE(cudaEventRecord, EventRecordFn);
SWAPPLAN_SAME_SIGNATURE(cudaStreamWaitEvent, StreamWaitEventFn);
SWAPPLAN_SAME_SIGNATURE(cudaEventQuery, EventQueryFn);
SWAPPLAN_SAME_SIGNATURE(cudaEventSynchronize, EventSynchronizeFn);
SWAPPLAN_SAME_SIGNATURE(cudaMallocAsync, MallocAsyncFn);
SWAPPLAN_SAME_SIGNATURE(cudaFreeAsync, FreeAsyncFn);
SWAPPLAN_SAME_SIGNATURE(cudaDeviceGetDefaultMemPool, DeviceGetDefaultMemPoolFn);
SWAPPLAN_SAME_SIGNATURE(cudaMemPoolSetAttribute, MemPoolSetAttributeFn);
SWAPPLAN_SAME_SIGNATURE(cudaHostAlloc, HostAllocFn);
SWAPPLAN_SAME_SIGNATURE(cudaFreeHost, FreeHostFn);
SWAPPLAN_SAME_SIGNATURE(cudaMemcpyAsync, MemcpyAsyncFn);
SWAPPLAN_SAME_SIGNATURE(cudaMemGetInfo, MemGetInfoFn);
SWAPPLAN_SAME_SIGNATURE(cudaGetErrorName, GetErrorNameFn);
SWAPPLAN_SAME_SIGNATURE(cudaGetErrorString, GetErrorStringFn);
#undef SWAPPLAN_SAME_SIGNATURE

static_assert(std::is_same_v<cuda::Stream, ::cudaStream_t>);
static_assert(std::is_same_v<cuda::Event, ::cudaEvent_t>);
static_assert(std::is_same_v<cuda::MemPool, ::cudaMemPool_t>);
static_assert(sizeof(cuda::Error) == sizeof(::cudaError_t));
static_assert(cuda::kSuccess == ::cudaSuccess);
static_assert(cuda::kErrorInvalidValue == ::cudaErrorInvalidValue);
static_assert(cuda::kErrorMemoryAllocation == ::cudaErrorMemoryAllocation);
static_assert(cuda::kErrorInitializationError == ::cudaErrorInitializationError);
static_assert(cuda::kErrorInsufficientDriver == ::cudaErrorInsufficientDriver);
static_assert(cuda::kErrorNoDevice == ::cudaErrorNoDevice);
static_assert(cuda::kErrorInvalidDevice == ::cudaErrorInvalidDevice);
static_assert(cuda::kErrorInvalidResourceHandle == ::cudaErrorInvalidResourceHandle);
static_assert(cuda::kErrorIllegalState == ::cudaErrorIllegalState);
static_assert(cuda::kErrorNotReady == ::cudaErrorNotReady);
static_assert(cuda::kErrorIllegalAddress == ::cudaErrorIllegalAddress);
static_assert(cuda::kErrorLaunchFailure == ::cudaErrorLaunchFailure);
static_assert(cuda::kErrorNotSupported == ::cudaErrorNotSupported);
static_assert(cuda::kErrorUnknown == ::cudaErrorUnknown);
static_assert(cuda::kMemcpyHostToDevice == ::cudaMemcpyHostToDevice);
static_assert(cuda::kMemcpyDeviceToHost == ::cudaMemcpyDeviceToHost);
static_assert(cuda::kMemPoolAttrReleaseThreshold == ::cudaMemPoolAttrReleaseThreshold);
static_assert(cuda::kStreamNonBlocking == cudaStreamNonBlocking);
static_assert(cuda::kEventDisableTiming == cudaEventDisableTiming);
static_assert(cuda::kHostAllocPortable == cudaHostAllocPortable);

}  // namespace
}  // namespace swapplan::runtime::testing
