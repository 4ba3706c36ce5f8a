// AclApi: the narrow table of Ascend ACL runtime calls (acl_rt.h, ACL 1.15
// and later) the Ascend backend makes (acl_backend.h), filled by
// dlopen/dlsym of libascendcl.so at run time. No CANN header is included:
// the types and values the calls need are declared here with the numbers of
// acl_base.h / acl_rt.h / rt_error_codes.h. tests/runtime/
// acl_signatures_check.cc compiles every function type and value against
// the real headers when they are given (meson option check_acl_include_dir). The
// fake runtime (tests/runtime/fake_ascendcl.cc) defines the same symbols.
//
// aclrtStream and aclrtEvent are `void*` in acl_base.h; aclError is int;
// enums are passed as int (4-byte enums in the headers).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<AclApi> api, AclApi::Load({"libascendcl.so"}));
//   acl::Stream s = nullptr;
//   acl::Error e = api->CreateStreamWithConfig(&s, /*priority=*/0, 0);
//
// Threading: immutable after Load; ACL is thread-safe per context.
#ifndef SWAPPLAN_SRC_RUNTIME_ACL_API_H_
#define SWAPPLAN_SRC_RUNTIME_ACL_API_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/vendor_library.h"

namespace swapplan::runtime::acl {

using Error = int;      // aclError
using Stream = void*;   // aclrtStream
using Event = void*;    // aclrtEvent

// Codes (acl_base.h, rt_error_codes.h).
inline constexpr Error kSuccess = 0;
inline constexpr Error kErrorInvalidParam = 100000;
inline constexpr Error kErrorUninitialize = 100001;
inline constexpr Error kErrorRepeatInitialize = 100002;
inline constexpr Error kErrorBadAlloc = 200000;
inline constexpr Error kErrorRtParamInvalid = 107000;
inline constexpr Error kErrorRtInvalidDeviceId = 107001;
inline constexpr Error kErrorRtInvalidHandle = 107017;
inline constexpr Error kErrorRtFeatureNotSupport = 207000;
inline constexpr Error kErrorRtMemoryAllocation = 207001;
inline constexpr Error kErrorRtNoEventResource = 207007;
inline constexpr Error kErrorRtNoStreamResource = 207008;
inline constexpr Error kErrorRtInternalError = 507000;
// aclrtMemcpyKind.
inline constexpr int kMemcpyHostToDevice = 1;
inline constexpr int kMemcpyDeviceToHost = 2;
// aclrtMemMallocPolicy.
inline constexpr int kMemMallocHugeFirst = 0;
// aclrtMemAttr.
inline constexpr int kHbmMem = 1;
// aclrtEventRecordedStatus.
inline constexpr int kEventRecordedStatusNotReady = 0;
inline constexpr int kEventRecordedStatusComplete = 1;
// aclrtCreateEventExWithFlag flag.
inline constexpr uint32_t kEventSync = 0x1;
// aclrtCreateStreamWithConfig: priority 0 (highest) .. 7 (lowest) unless
// aclrtDeviceGetStreamPriorityRange says otherwise.
inline constexpr int32_t kDefaultGreatestPriority = 0;
inline constexpr int32_t kDefaultLeastPriority = 7;
// Addresses of an asynchronous copy must be 64-byte aligned (acl_rt.h
// aclrtMemcpyAsync; older CANN documents it for every kind).
inline constexpr uintptr_t kCopyAlignment = 64;

// The name of a code from the list above ("ACL_ERROR_INVALID_PARAM"), or
// nullptr.
const char* KnownErrorName(Error e);

using InitFn = Error (*)(const char* config_path);
using SetDeviceFn = Error (*)(int32_t device_id);
using CreateStreamWithConfigFn = Error (*)(Stream* stream, uint32_t priority, uint32_t flag);
using DestroyStreamFn = Error (*)(Stream stream);
using SynchronizeStreamFn = Error (*)(Stream stream);
using CreateEventExWithFlagFn = Error (*)(Event* event, uint32_t flag);
using DestroyEventFn = Error (*)(Event event);
using RecordEventFn = Error (*)(Event event, Stream stream);
using StreamWaitEventFn = Error (*)(Stream stream, Event event);
using QueryEventStatusFn = Error (*)(Event event, int* status);
using SynchronizeEventFn = Error (*)(Event event);
using MallocFn = Error (*)(void** dev_ptr, size_t size, int policy);
using FreeFn = Error (*)(void* dev_ptr);
using MallocHostFn = Error (*)(void** host_ptr, size_t size);
using FreeHostFn = Error (*)(void* host_ptr);
using MemcpyAsyncFn = Error (*)(void* dst, size_t dest_max, const void* src, size_t count,
                                int kind, Stream stream);
using GetMemInfoFn = Error (*)(int attr, size_t* free_bytes, size_t* total_bytes);
using DeviceGetStreamPriorityRangeFn = Error (*)(int32_t* least_priority,
                                                 int32_t* greatest_priority);
using GetRecentErrMsgFn = const char* (*)();

}  // namespace swapplan::runtime::acl

namespace swapplan::runtime::internal {

struct AclApi {
  // Required.
  acl::InitFn Init = nullptr;                                   // aclInit
  acl::SetDeviceFn SetDevice = nullptr;                         // aclrtSetDevice
  acl::CreateStreamWithConfigFn CreateStreamWithConfig = nullptr;
  acl::DestroyStreamFn DestroyStream = nullptr;
  acl::SynchronizeStreamFn SynchronizeStream = nullptr;
  acl::CreateEventExWithFlagFn CreateEventExWithFlag = nullptr;
  acl::DestroyEventFn DestroyEvent = nullptr;
  acl::RecordEventFn RecordEvent = nullptr;
  acl::StreamWaitEventFn StreamWaitEvent = nullptr;
  acl::QueryEventStatusFn QueryEventStatus = nullptr;
  acl::SynchronizeEventFn SynchronizeEvent = nullptr;
  acl::MallocFn Malloc = nullptr;
  acl::FreeFn Free = nullptr;
  acl::MallocHostFn MallocHost = nullptr;
  acl::FreeHostFn FreeHost = nullptr;
  acl::MemcpyAsyncFn MemcpyAsync = nullptr;
  acl::GetMemInfoFn GetMemInfo = nullptr;
  // Optional: newer CANN (priority range), error texts.
  acl::DeviceGetStreamPriorityRangeFn DeviceGetStreamPriorityRange = nullptr;
  acl::GetRecentErrMsgFn GetRecentErrMsg = nullptr;

  VendorLibrary library;

  // As CudaApi::Load.
  static absl::StatusOr<std::unique_ptr<AclApi>> Load(const std::vector<std::string>& candidates);

  // "ACL_ERROR_INVALID_PARAM (100000): <aclGetRecentErrMsg>".
  std::string Describe(acl::Error e) const;

 private:
  explicit AclApi(VendorLibrary lib) : library(std::move(lib)) {}
};

}  // namespace swapplan::runtime::internal

#endif  // SWAPPLAN_SRC_RUNTIME_ACL_API_H_
