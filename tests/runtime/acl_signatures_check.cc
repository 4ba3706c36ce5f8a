// Compile-only: the Ascend backend's vendor table (src/runtime/acl_api.h)
// against CANN's headers (acl/acl_rt.h, acl/acl_base.h,
// acl/error_codes/rt_error_codes.h) — every function type and value the
// backend uses. Built when meson is given check_acl_include_dir; a mismatch fails
// the build. Nothing here runs or links ACL.
#include <acl/acl_base.h>
#include <acl/acl_rt.h>
#include <acl/error_codes/rt_error_codes.h>

#include "runtime/acl_api.h"
#include "signature_traits.h"

namespace swapplan::runtime::testing {
namespace {

#define SWAPPLAN_SAME_SIGNATURE(fn, Table)                                \
  static_assert(kSameSignature<decltype(&::fn), acl::Table>,              \
                #fn " is declared differently from acl::" #Table)

SWAPPLAN_SAME_SIGNATURE(aclInit, InitFn);
SWAPPLAN_SAME_SIGNATURE(aclrtSetDevice, SetDeviceFn);
SWAPPLAN_SAME_SIGNATURE(aclrtCreateStreamWithConfig, CreateStreamWithConfigFn);
SWAPPLAN_SAME_SIGNATURE(aclrtDestroyStream, DestroyStreamFn);
SWAPPLAN_SAME_SIGNATURE(aclrtSynchronizeStream, SynchronizeStreamFn);
SWAPPLAN_SAME_SIGNATURE(aclrtCreateEventExWithFlag, CreateEventExWithFlagFn);
SWAPPLAN_SAME_SIGNATURE(aclrtDestroyEvent, DestroyEventFn);
SWAPPLAN_SAME_SIGNATURE(aclrtRecordEvent, RecordEventFn);
SWAPPLAN_SAME_SIGNATURE(aclrtStreamWaitEvent, StreamWaitEventFn);
SWAPPLAN_SAME_SIGNATURE(aclrtQueryEventStatus, QueryEventStatusFn);
SWAPPLAN_SAME_SIGNATURE(aclrtSynchronizeEvent, SynchronizeEventFn);
SWAPPLAN_SAME_SIGNATURE(aclrtMalloc, MallocFn);
SWAPPLAN_SAME_SIGNATURE(aclrtFree, FreeFn);
SWAPPLAN_SAME_SIGNATURE(aclrtMallocHost, MallocHostFn);
SWAPPLAN_SAME_SIGNATURE(aclrtFreeHost, FreeHostFn);
SWAPPLAN_SAME_SIGNATURE(aclrtMemcpyAsync, MemcpyAsyncFn);
SWAPPLAN_SAME_SIGNATURE(aclrtGetMemInfo, GetMemInfoFn);
SWAPPLAN_SAME_SIGNATURE(aclrtDeviceGetStreamPriorityRange, DeviceGetStreamPriorityRangeFn);
SWAPPLAN_SAME_SIGNATURE(aclGetRecentErrMsg, GetRecentErrMsgFn);
#undef SWAPPLAN_SAME_SIGNATURE

static_assert(std::is_same_v<acl::Stream, ::aclrtStream>);
static_assert(std::is_same_v<acl::Event, ::aclrtEvent>);
static_assert(std::is_same_v<acl::Error, ::aclError>);
static_assert(acl::kSuccess == ACL_SUCCESS);
static_assert(acl::kErrorInvalidParam == ACL_ERROR_INVALID_PARAM);
static_assert(acl::kErrorUninitialize == ACL_ERROR_UNINITIALIZE);
static_assert(acl::kErrorRepeatInitialize == ACL_ERROR_REPEAT_INITIALIZE);
static_assert(acl::kErrorBadAlloc == ACL_ERROR_BAD_ALLOC);
static_assert(acl::kErrorRtParamInvalid == ACL_ERROR_RT_PARAM_INVALID);
static_assert(acl::kErrorRtInvalidDeviceId == ACL_ERROR_RT_INVALID_DEVICEID);
static_assert(acl::kErrorRtInvalidHandle == ACL_ERROR_RT_INVALID_HANDLE);
static_assert(acl::kErrorRtFeatureNotSupport == ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
static_assert(acl::kErrorRtMemoryAllocation == ACL_ERROR_RT_MEMORY_ALLOCATION);
static_assert(acl::kErrorRtNoEventResource == ACL_ERROR_RT_NO_EVENT_RESOURCE);
static_assert(acl::kErrorRtNoStreamResource == ACL_ERROR_RT_NO_STREAM_RESOURCE);
static_assert(acl::kErrorRtInternalError == ACL_ERROR_RT_INTERNAL_ERROR);
static_assert(acl::kMemcpyHostToDevice == ACL_MEMCPY_HOST_TO_DEVICE);
static_assert(acl::kMemcpyDeviceToHost == ACL_MEMCPY_DEVICE_TO_HOST);
static_assert(acl::kMemMallocHugeFirst == ACL_MEM_MALLOC_HUGE_FIRST);
static_assert(acl::kHbmMem == ACL_HBM_MEM);
static_assert(acl::kEventRecordedStatusNotReady == ACL_EVENT_RECORDED_STATUS_NOT_READY);
static_assert(acl::kEventRecordedStatusComplete == ACL_EVENT_RECORDED_STATUS_COMPLETE);
static_assert(acl::kEventSync == ACL_EVENT_SYNC);

}  // namespace
}  // namespace swapplan::runtime::testing
