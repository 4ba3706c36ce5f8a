// The Ascend backend: a Backend (backend.h) over the Ascend ACL runtime
// (acl_rt.h), called only through a table of function pointers filled by
// dlopen/dlsym of libascendcl.so at run time (src/runtime/acl_api.h). No
// CANN header is included and no CANN library linked.
//
//   CreateStream(kNormal|kHigh)  aclrtCreateStreamWithConfig(priority least | greatest:
//                                7 | 0, or aclrtDeviceGetStreamPriorityRange where present)
//   DestroyStream                aclrtSynchronizeStream + aclrtDestroyStream
//   CreateEvent / DestroyEvent   aclrtCreateEventExWithFlag(ACL_EVENT_SYNC) (reusable
//                                without aclrtResetEvent) / aclrtDestroyEvent
//   RecordEvent, StreamWaitEvent aclrtRecordEvent, aclrtStreamWaitEvent
//   QueryEvent                   aclrtQueryEventStatus (non-blocking)
//   SynchronizeEvent / Stream    aclrtSynchronizeEvent / aclrtSynchronizeStream
//   AllocAsync / FreeAsync       aclrtMalloc + a stream-ordered cache (below), aclrtFree
//   HostAlloc / HostFree         aclrtMallocHost / aclrtFreeHost
//   CopyAsync                    aclrtMemcpyAsync(DEVICE_TO_HOST | HOST_TO_DEVICE), both
//                                addresses 64-byte aligned (checked before the call)
//   GetMemInfo                   aclrtGetMemInfo(ACL_HBM_MEM) (+ cached bytes as free)
//
// Stream-ordered memory. ACL has no cudaFreeAsync, and aclrtFree is not a
// stream operation. FreeAsync(p, s) puts the block into a cache bin of its
// exact size, tagged with s: work issued to s after the call is ordered
// after the free, so AllocAsync on s takes the block back at once (the
// runtime allocates and frees on the compute stream; this is PyTorch's
// caching-allocator rule). AllocAsync on another stream t first makes t
// wait for an event recorded on s at that moment (it captures the free).
// When aclrtMalloc fails, the cache is emptied — each stream that freed a
// cached block is synchronised (a host wait: off the hot path, only when
// the device is full), the blocks go back with aclrtFree — and the
// allocation is retried once; ACL_ERROR_RT_MEMORY_ALLOCATION after that is
// ResourceExhausted tagged "out-of-memory".
//
//   compute  |op 5|--wait(E_out)--FreeAsync(A): A's block -> bin(size, compute)--|op 6: AllocAsync
//            takes it back|
//
// Events. A device has a limited number of events. The runtime takes its
// events from a pool and reuses them (event_pool.h); this backend creates
// one internal event (cross-stream reuse of cached blocks) and, with
// max_events > 0, refuses to create more than that many: ResourceExhausted
// tagged "event-limit" — as it reports ACL_ERROR_RT_NO_EVENT_RESOURCE —
// after which the pool takes back events its pinned buffers no longer need
// and tries again.
//
// Errors: a status naming the call, its arguments and the ACL code (with
// aclGetRecentErrMsg's text where the library has it). A failed asynchronous
// copy is reported by aclrtSynchronizeEvent / aclrtStreamWaitEvent;
// aclrtQueryEventStatus reports it only as "not ready" (acl_rt.h), so the
// runtime finds it where it waits.
//
//   AclBackendOptions o;
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, CreateAclBackend(o));
//
// Threading: calls from one thread at a time (the runtime serialises
// them); aclInit (ACL_ERROR_REPEAT_INITIALIZE is fine: torch_npu initialises
// first) and aclrtSetDevice are called on the creating thread.
#ifndef SWAPPLAN_RUNTIME_ACL_BACKEND_H_
#define SWAPPLAN_RUNTIME_ACL_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/runtime/backend.h"

namespace swapplan::runtime {

inline constexpr char kAclLibraryEnv[] = "SWAPPLAN_RT_ASCEND_LIBRARY";

struct AclBackendOptions {
  // The ACL library: a path or a soname. "" = $SWAPPLAN_RT_ASCEND_LIBRARY,
  // else libascendcl.so (found through LD_LIBRARY_PATH, which CANN's
  // set_env.sh sets).
  std::string library;
  // The device (aclrtSetDevice), >= 0.
  int32_t device = 0;
  // Events this backend creates at most (its internal one included); 0 =
  // no cap of its own (the device's limit still applies).
  int32_t max_events = 0;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

std::vector<std::string> AclLibraryCandidates(const AclBackendOptions& options);

// Loads the library, aclInit, aclrtSetDevice, reads the priority range and
// creates the internal event. Unavailable naming the library / symbol /
// call and code otherwise.
absl::StatusOr<std::unique_ptr<Backend>> CreateAclBackend(const AclBackendOptions& options);

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_ACL_BACKEND_H_
