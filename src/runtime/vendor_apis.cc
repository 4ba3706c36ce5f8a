// The CUDA and ACL vendor tables: binding every call, naming error codes.
// See cuda_api.h and acl_api.h.
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/acl_api.h"
#include "runtime/cuda_api.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

const char* cuda::KnownErrorName(Error e) {
  switch (e) {
    case kSuccess: return "cudaSuccess";
    case kErrorInvalidValue: return "cudaErrorInvalidValue";
    case kErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case kErrorInitializationError: return "cudaErrorInitializationError";
    case kErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case kErrorNoDevice: return "cudaErrorNoDevice";
    case kErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case kErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case kErrorIllegalState: return "cudaErrorIllegalState";
    case kErrorNotReady: return "cudaErrorNotReady";
    case kErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case kErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case kErrorNotSupported: return "cudaErrorNotSupported";
    case kErrorUnknown: return "cudaErrorUnknown";
    default: return nullptr;
  }
}

const char* acl::KnownErrorName(Error e) {
  switch (e) {
    case kSuccess: return "ACL_SUCCESS";
    case kErrorInvalidParam: return "ACL_ERROR_INVALID_PARAM";
    case kErrorUninitialize: return "ACL_ERROR_UNINITIALIZE";
    case kErrorRepeatInitialize: return "ACL_ERROR_REPEAT_INITIALIZE";
    case kErrorBadAlloc: return "ACL_ERROR_BAD_ALLOC";
    case kErrorRtParamInvalid: return "ACL_ERROR_RT_PARAM_INVALID";
    case kErrorRtInvalidDeviceId: return "ACL_ERROR_RT_INVALID_DEVICEID";
    case kErrorRtInvalidHandle: return "ACL_ERROR_RT_INVALID_HANDLE";
    case kErrorRtFeatureNotSupport: return "ACL_ERROR_RT_FEATURE_NOT_SUPPORT";
    case kErrorRtMemoryAllocation: return "ACL_ERROR_RT_MEMORY_ALLOCATION";
    case kErrorRtNoEventResource: return "ACL_ERROR_RT_NO_EVENT_RESOURCE";
    case kErrorRtNoStreamResource: return "ACL_ERROR_RT_NO_STREAM_RESOURCE";
    case kErrorRtInternalError: return "ACL_ERROR_RT_INTERNAL_ERROR";
    default: return nullptr;
  }
}

namespace internal {

absl::StatusOr<std::unique_ptr<CudaApi>> CudaApi::Load(const std::vector<std::string>& candidates) {
  SWAPPLAN_ASSIGN_OR_RETURN(VendorLibrary lib,
                            VendorLibrary::Open(candidates, "the CUDA runtime (libcudart)"));
  std::unique_ptr<CudaApi> api(new CudaApi(std::move(lib)));
  const VendorLibrary& l = api->library;
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaSetDevice", &api->SetDevice));
  SWAPPLAN_RETURN_IF_ERROR(
      l.Bind("cudaDeviceGetStreamPriorityRange", &api->DeviceGetStreamPriorityRange));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaStreamCreateWithPriority", &api->StreamCreateWithPriority));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaStreamDestroy", &api->StreamDestroy));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaStreamSynchronize", &api->StreamSynchronize));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaEventCreateWithFlags", &api->EventCreateWithFlags));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaEventDestroy", &api->EventDestroy));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaEventRecord", &api->EventRecord));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaStreamWaitEvent", &api->StreamWaitEvent));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaEventQuery", &api->EventQuery));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaEventSynchronize", &api->EventSynchronize));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaMallocAsync", &api->MallocAsync));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaFreeAsync", &api->FreeAsync));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaDeviceGetDefaultMemPool", &api->DeviceGetDefaultMemPool));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaMemPoolSetAttribute", &api->MemPoolSetAttribute));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaHostAlloc", &api->HostAlloc));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaFreeHost", &api->FreeHost));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaMemcpyAsync", &api->MemcpyAsync));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("cudaMemGetInfo", &api->MemGetInfo));
  l.BindOptional("cudaGetErrorName", &api->GetErrorName);
  l.BindOptional("cudaGetErrorString", &api->GetErrorString);
  return api;
}

std::string CudaApi::Describe(cuda::Error e) const {
  const char* name = GetErrorName != nullptr ? GetErrorName(e) : nullptr;
  if (name == nullptr) name = cuda::KnownErrorName(e);
  const char* text = GetErrorString != nullptr ? GetErrorString(e) : nullptr;
  return absl::StrCat(name != nullptr ? name : "cudaError", " (", e, ")",
                      text != nullptr && text[0] != '\0' ? absl::StrCat(": ", text) : "");
}

absl::StatusOr<std::unique_ptr<AclApi>> AclApi::Load(const std::vector<std::string>& candidates) {
  SWAPPLAN_ASSIGN_OR_RETURN(VendorLibrary lib,
                            VendorLibrary::Open(candidates, "the Ascend runtime (libascendcl)"));
  std::unique_ptr<AclApi> api(new AclApi(std::move(lib)));
  const VendorLibrary& l = api->library;
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclInit", &api->Init));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtSetDevice", &api->SetDevice));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtCreateStreamWithConfig", &api->CreateStreamWithConfig));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtDestroyStream", &api->DestroyStream));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtSynchronizeStream", &api->SynchronizeStream));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtCreateEventExWithFlag", &api->CreateEventExWithFlag));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtDestroyEvent", &api->DestroyEvent));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtRecordEvent", &api->RecordEvent));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtStreamWaitEvent", &api->StreamWaitEvent));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtQueryEventStatus", &api->QueryEventStatus));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtSynchronizeEvent", &api->SynchronizeEvent));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtMalloc", &api->Malloc));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtFree", &api->Free));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtMallocHost", &api->MallocHost));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtFreeHost", &api->FreeHost));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtMemcpyAsync", &api->MemcpyAsync));
  SWAPPLAN_RETURN_IF_ERROR(l.Bind("aclrtGetMemInfo", &api->GetMemInfo));
  l.BindOptional("aclrtDeviceGetStreamPriorityRange", &api->DeviceGetStreamPriorityRange);
  l.BindOptional("aclGetRecentErrMsg", &api->GetRecentErrMsg);
  return api;
}

std::string AclApi::Describe(acl::Error e) const {
  const char* name = acl::KnownErrorName(e);
  const char* text = GetRecentErrMsg != nullptr ? GetRecentErrMsg() : nullptr;
  return absl::StrCat(name != nullptr ? name : "aclError", " (", e, ")",
                      text != nullptr && text[0] != '\0' ? absl::StrCat(": ", text) : "");
}

}  // namespace internal
}  // namespace swapplan::runtime
