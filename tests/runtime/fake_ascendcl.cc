// libfake_ascendcl.so: the ACL calls the Ascend backend binds
// (src/runtime/acl_api.h), with the same signatures, executed by the fake
// device (fake_device.h). Test-only: the backend loads it in place of
// libascendcl.so (tests/meson.build, suite backend-ascend).
//
// ACL's rules on top of the device's: aclrtMemcpyAsync needs both addresses
// 64-byte aligned and destMax >= count; events are limited per device
// (swapplan_fake_config.max_events: ACL_ERROR_RT_NO_EVENT_RESOURCE);
// priorities are 0 (highest) .. 7 (lowest), aclrtDeviceGetStreamPriorityRange
// says so; aclrtQueryEventStatus reports failed work as "not ready" (acl_rt.h:
// only aclrtSynchronizeEvent returns the error); aclrtFree runs on the
// caller's stream (at once). Codes: a bad value or a misaligned copy
// ACL_ERROR_INVALID_PARAM, another broken rule ACL_ERROR_RT_INTERNAL_ERROR,
// an unknown handle ACL_ERROR_RT_INVALID_HANDLE, no memory
// ACL_ERROR_RT_MEMORY_ALLOCATION, failed work ACL_ERROR_RT_INTERNAL_ERROR.
// aclGetRecentErrMsg returns the fake's message for the thread's last
// failed call.
//
// Threading: any thread (the fake device locks).
#include <string>

#include "absl/strings/str_cat.h"
#include "fake_device.h"
#include "runtime/acl_api.h"
#include "swapplan/util/error.h"

namespace acl = swapplan::runtime::acl;
using swapplan::Direction;
using swapplan::RuleOf;
using swapplan::runtime::StreamPriority;
using swapplan::runtime::fake::FakeDevice;
using swapplan::runtime::fake::Hex;

namespace {

thread_local std::string g_detail;
bool g_initialised = false;

acl::Error Code(const absl::Status& st) {
  switch (st.code()) {
    case absl::StatusCode::kOk:
      return acl::kSuccess;
    case absl::StatusCode::kInvalidArgument:
      return acl::kErrorInvalidParam;
    case absl::StatusCode::kNotFound:
      return acl::kErrorRtInvalidHandle;
    case absl::StatusCode::kResourceExhausted:
      return RuleOf(st) == "event-limit" ? acl::kErrorRtNoEventResource
                                         : acl::kErrorRtMemoryAllocation;
    default:
      return acl::kErrorRtInternalError;
  }
}

acl::Error Done(const char* name, const std::string& args, const absl::Status& st,
                acl::Error code) {
  if (code != acl::kSuccess) {
    g_detail = st.ok() ? std::string() : absl::StrCat("fake ascendcl: ", st.message());
  }
  FakeDevice::Get().LogCall(name, args, code);
  return code;
}
acl::Error Done(const char* name, const std::string& args, const absl::Status& st) {
  return Done(name, args, st, Code(st));
}

std::string S(void* s) { return absl::StrCat("stream=", FakeDevice::Get().StreamId(s)); }
std::string E(void* e) { return absl::StrCat("event=", FakeDevice::Get().EventId(e)); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) acl::Error aclInit(const char* config_path) {
  const bool again = g_initialised;
  g_initialised = true;
  return Done("aclInit", absl::StrCat("config=", config_path != nullptr ? config_path : "NULL"),
              absl::OkStatus(), again ? acl::kErrorRepeatInitialize : acl::kSuccess);
}

__attribute__((visibility("default"))) acl::Error aclrtSetDevice(int32_t device) {
  const absl::Status st = device == 0 ? absl::OkStatus()
                                      : absl::InvalidArgumentError(absl::StrCat("no device ", device));
  return Done("aclrtSetDevice", absl::StrCat("device=", device), st,
              device == 0 ? acl::kSuccess : acl::kErrorRtInvalidDeviceId);
}

__attribute__((visibility("default"))) acl::Error aclrtDeviceGetStreamPriorityRange(
    int32_t* least, int32_t* greatest) {
  if (least != nullptr) *least = acl::kDefaultLeastPriority;
  if (greatest != nullptr) *greatest = acl::kDefaultGreatestPriority;
  return Done("aclrtDeviceGetStreamPriorityRange", "", absl::OkStatus());
}

__attribute__((visibility("default"))) acl::Error aclrtCreateStreamWithConfig(acl::Stream* stream,
                                                                           uint32_t priority,
                                                                           uint32_t flag) {
  if (stream == nullptr || priority > static_cast<uint32_t>(acl::kDefaultLeastPriority)) {
    return Done("aclrtCreateStreamWithConfig", absl::StrCat("priority=", priority),
                absl::InvalidArgumentError("null stream or priority outside 0..7"));
  }
  absl::StatusOr<void*> s = FakeDevice::Get().NewStream(
      priority < static_cast<uint32_t>(acl::kDefaultLeastPriority) ? StreamPriority::kHigh
                                                                   : StreamPriority::kNormal);
  if (s.ok()) *stream = *s;
  return Done("aclrtCreateStreamWithConfig",
              absl::StrCat("priority=", priority, " flag=", flag, " ",
                           s.ok() ? S(*s) : std::string("stream=-1")),
              s.status());
}

__attribute__((visibility("default"))) acl::Error aclrtDestroyStream(acl::Stream stream) {
  const std::string args = S(stream);
  return Done("aclrtDestroyStream", args, FakeDevice::Get().DeleteStream(stream));
}

__attribute__((visibility("default"))) acl::Error aclrtSynchronizeStream(acl::Stream stream) {
  const std::string args = S(stream);
  return Done("aclrtSynchronizeStream", args, FakeDevice::Get().SyncStream(stream));
}

__attribute__((visibility("default"))) acl::Error aclrtCreateEventExWithFlag(acl::Event* event,
                                                                          uint32_t flag) {
  if (event == nullptr) {
    return Done("aclrtCreateEventExWithFlag", "", absl::InvalidArgumentError("null event"));
  }
  absl::StatusOr<void*> e = FakeDevice::Get().NewEvent();
  if (e.ok()) *event = *e;
  return Done("aclrtCreateEventExWithFlag",
              absl::StrCat("flag=", flag, " ", e.ok() ? E(*e) : std::string("event=-1")),
              e.status());
}

__attribute__((visibility("default"))) acl::Error aclrtDestroyEvent(acl::Event event) {
  const std::string args = E(event);
  return Done("aclrtDestroyEvent", args, FakeDevice::Get().DeleteEvent(event));
}

__attribute__((visibility("default"))) acl::Error aclrtRecordEvent(acl::Event event,
                                                                acl::Stream stream) {
  const std::string args = absl::StrCat(E(event), " ", S(stream));
  return Done("aclrtRecordEvent", args, FakeDevice::Get().Record(event, stream));
}

__attribute__((visibility("default"))) acl::Error aclrtStreamWaitEvent(acl::Stream stream,
                                                                    acl::Event event) {
  const std::string args = absl::StrCat(S(stream), " ", E(event));
  return Done("aclrtStreamWaitEvent", args, FakeDevice::Get().Wait(stream, event));
}

__attribute__((visibility("default"))) acl::Error aclrtQueryEventStatus(acl::Event event,
                                                                     int* status) {
  const std::string args = E(event);
  if (status == nullptr) {
    return Done("aclrtQueryEventStatus", args, absl::InvalidArgumentError("null status"));
  }
  absl::StatusOr<bool> done = FakeDevice::Get().Query(event);
  if (absl::IsNotFound(done.status())) return Done("aclrtQueryEventStatus", args, done.status());
  // Failed work is "not ready" (acl_rt.h), not an error.
  *status = done.ok() && *done ? acl::kEventRecordedStatusComplete
                               : acl::kEventRecordedStatusNotReady;
  return Done("aclrtQueryEventStatus", absl::StrCat(args, " status=", *status), absl::OkStatus());
}

__attribute__((visibility("default"))) acl::Error aclrtSynchronizeEvent(acl::Event event) {
  const std::string args = E(event);
  return Done("aclrtSynchronizeEvent", args, FakeDevice::Get().SyncEvent(event));
}

__attribute__((visibility("default"))) acl::Error aclrtMalloc(void** ptr, size_t size, int policy) {
  if (ptr == nullptr) return Done("aclrtMalloc", "", absl::InvalidArgumentError("null ptr"));
  absl::StatusOr<void*> p = FakeDevice::Get().Malloc(static_cast<int64_t>(size), nullptr);
  if (p.ok()) *ptr = *p;
  return Done("aclrtMalloc",
              absl::StrCat("bytes=", size, " policy=", policy, " ptr=", p.ok() ? Hex(*p) : "0"),
              p.status());
}

__attribute__((visibility("default"))) acl::Error aclrtFree(void* ptr) {
  return Done("aclrtFree", absl::StrCat("ptr=", Hex(ptr)), FakeDevice::Get().Free(ptr, nullptr));
}

__attribute__((visibility("default"))) acl::Error aclrtMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return Done("aclrtMallocHost", "", absl::InvalidArgumentError("null ptr"));
  absl::StatusOr<void*> p = FakeDevice::Get().MallocHost(static_cast<int64_t>(size));
  if (p.ok()) *ptr = *p;
  return Done("aclrtMallocHost", absl::StrCat("bytes=", size, " ptr=", p.ok() ? Hex(*p) : "0"),
              p.status());
}

__attribute__((visibility("default"))) acl::Error aclrtFreeHost(void* ptr) {
  return Done("aclrtFreeHost", absl::StrCat("ptr=", Hex(ptr)), FakeDevice::Get().FreeHost(ptr));
}

__attribute__((visibility("default"))) acl::Error aclrtMemcpyAsync(void* dst, size_t dest_max,
                                                                const void* src, size_t count,
                                                                int kind, acl::Stream stream) {
  const std::string args = absl::StrCat("dst=", Hex(dst), " destMax=", dest_max, " src=", Hex(src),
                                        " bytes=", count, " kind=", kind, " ", S(stream));
  if (dest_max < count ||
      (kind != acl::kMemcpyHostToDevice && kind != acl::kMemcpyDeviceToHost)) {
    return Done("aclrtMemcpyAsync", args,
                absl::InvalidArgumentError(absl::StrCat(
                    "destMax ", dest_max, " < count ", count, " or kind ", kind,
                    " not host<->device")));
  }
  const Direction d =
      kind == acl::kMemcpyDeviceToHost ? Direction::kDeviceToHost : Direction::kHostToDevice;
  return Done("aclrtMemcpyAsync", args,
              FakeDevice::Get().Copy(dst, src, static_cast<int64_t>(count), d, stream, true));
}

__attribute__((visibility("default"))) acl::Error aclrtGetMemInfo(int attr, size_t* free_bytes,
                                                               size_t* total_bytes) {
  if (attr != acl::kHbmMem && attr != 0) {
    return Done("aclrtGetMemInfo", absl::StrCat("attr=", attr),
                absl::InvalidArgumentError("attr is neither ACL_HBM_MEM nor ACL_DDR_MEM"));
  }
  absl::StatusOr<swapplan::runtime::MemInfo> info = FakeDevice::Get().Info();
  if (info.ok()) {
    if (free_bytes != nullptr) *free_bytes = static_cast<size_t>(info->free_bytes);
    if (total_bytes != nullptr) *total_bytes = static_cast<size_t>(info->total_bytes);
  }
  return Done("aclrtGetMemInfo", absl::StrCat("attr=", attr), info.status());
}

__attribute__((visibility("default"))) const char* aclGetRecentErrMsg() { return g_detail.c_str(); }

}  // extern "C"
