// The Ascend ACL backend over the dlopen'ed vendor table, with its
// stream-ordered block cache. See acl_backend.h.
#include "swapplan/runtime/acl_backend.h"

#include <cstdlib>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "runtime/acl_api.h"
#include "runtime/pinned_blocks.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

namespace {

using internal::AclApi;
using internal::DirectionName;
using internal::Ptr;

class AclBackend final : public Backend {
 public:
  AclBackend(std::unique_ptr<AclApi> api, const AclBackendOptions& o, int32_t least,
             int32_t greatest)
      : api_(std::move(api)), device_(o.device), max_events_(o.max_events), least_(least),
        greatest_(greatest) {}

  ~AclBackend() override {
    (void)Trim();
    for (const auto& [p, size] : sizes_) (void)api_->Free(p);
    if (scratch_.valid()) (void)api_->DestroyEvent(scratch_.handle);
  }

  // The internal event (cross-stream reuse of cached blocks).
  absl::Status Init() {
    SWAPPLAN_ASSIGN_OR_RETURN(scratch_, CreateEvent());
    return absl::OkStatus();
  }

  absl::string_view name() const override { return "ascend"; }
  Stream ComputeStream() override { return Stream{nullptr}; }

  absl::StatusOr<Stream> CreateStream(StreamPriority priority) override {
    const int32_t prio = priority == StreamPriority::kHigh ? greatest_ : least_;
    acl::Stream s = nullptr;
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->CreateStreamWithConfig(&s, static_cast<uint32_t>(prio), 0),
                                   [&] {
                                     return absl::StrCat("aclrtCreateStreamWithConfig(priority ",
                                                         prio, ", flag 0)");
                                   }));
    return Stream{s};
  }

  absl::Status DestroyStream(Stream stream) override {
    if (stream.handle == nullptr) {
      return absl::InvalidArgumentError("Ascend backend: the default stream cannot be destroyed");
    }
    const absl::Status synced = SynchronizeStream(stream);
    // Cached blocks freed on it stay ordered: they were freed before the
    // synchronisation; they keep their tag, which nothing waits on again.
    for (auto& [size, bin] : bins_) {
      for (Cached& c : bin) {
        if (c.stream == stream) c.stream = Stream{nullptr};
      }
    }
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->DestroyStream(stream.handle), [&] {
      return absl::StrCat("aclrtDestroyStream(stream ", Ptr(stream.handle), ")");
    }));
    return synced;
  }

  absl::StatusOr<Event> CreateEvent() override {
    if (max_events_ > 0 && events_ >= max_events_) {
      return WithRule(Error(ErrorKind::kResourceLimit,
                            absl::StrCat("Ascend backend: event limit reached: ", events_, " of ",
                                         max_events_, " events exist (max_events)")),
                      "event-limit");
    }
    acl::Event e = nullptr;
    const acl::Error rc = api_->CreateEventExWithFlag(&e, acl::kEventSync);
    if (rc == acl::kErrorRtNoEventResource) {
      return WithRule(Error(ErrorKind::kResourceLimit,
                            absl::StrCat("aclrtCreateEventExWithFlag(ACL_EVENT_SYNC) with ", events_,
                                         " events of this backend alive: ", api_->Describe(rc))),
                      "event-limit");
    }
    SWAPPLAN_RETURN_IF_ERROR(
        Check(rc, [] { return std::string("aclrtCreateEventExWithFlag(ACL_EVENT_SYNC)"); }));
    ++events_;
    return Event{e};
  }

  absl::Status DestroyEvent(Event event) override {
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->DestroyEvent(event.handle), [&] {
      return absl::StrCat("aclrtDestroyEvent(event ", Ptr(event.handle), ")");
    }));
    --events_;
    return absl::OkStatus();
  }

  absl::Status RecordEvent(Event event, Stream stream) override {
    return Check(api_->RecordEvent(event.handle, stream.handle), [&] {
      return absl::StrCat("aclrtRecordEvent(event ", Ptr(event.handle), ", stream ",
                          Ptr(stream.handle), ")");
    });
  }

  absl::Status StreamWaitEvent(Stream stream, Event event) override {
    return Check(api_->StreamWaitEvent(stream.handle, event.handle), [&] {
      return absl::StrCat("aclrtStreamWaitEvent(stream ", Ptr(stream.handle), ", event ",
                          Ptr(event.handle), ")");
    });
  }

  absl::StatusOr<bool> QueryEvent(Event event) override {
    int status = acl::kEventRecordedStatusNotReady;
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->QueryEventStatus(event.handle, &status), [&] {
      return absl::StrCat("aclrtQueryEventStatus(event ", Ptr(event.handle), ")");
    }));
    return status == acl::kEventRecordedStatusComplete;
  }

  absl::Status SynchronizeEvent(Event event) override {
    return Check(api_->SynchronizeEvent(event.handle), [&] {
      return absl::StrCat("aclrtSynchronizeEvent(event ", Ptr(event.handle), ")");
    });
  }

  absl::Status SynchronizeStream(Stream stream) override {
    return Check(api_->SynchronizeStream(stream.handle), [&] {
      return absl::StrCat("aclrtSynchronizeStream(stream ", Ptr(stream.handle), ")");
    });
  }

  absl::StatusOr<void*> AllocAsync(int64_t bytes, Stream stream) override {
    if (bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Ascend backend: allocation of ", bytes, " bytes"));
    }
    const int64_t size = bytes == 0 ? 1 : bytes;
    if (auto it = bins_.find(size); it != bins_.end() && !it->second.empty()) {
      std::vector<Cached>& bin = it->second;
      // Freed on this stream: ordered already. Else the newest one, after
      // a wait for its stream's work so far (which includes the free).
      size_t pick = bin.size() - 1;
      for (size_t k = bin.size(); k-- > 0;) {
        if (bin[k].stream == stream) {
          pick = k;
          break;
        }
      }
      const Cached c = bin[pick];
      if (c.stream != stream) {
        SWAPPLAN_RETURN_IF_ERROR(RecordEvent(scratch_, c.stream));
        SWAPPLAN_RETURN_IF_ERROR(StreamWaitEvent(stream, scratch_));
      }
      bin.erase(bin.begin() + static_cast<std::ptrdiff_t>(pick));
      cached_bytes_ -= size;
      return c.ptr;
    }
    void* p = nullptr;
    acl::Error rc = api_->Malloc(&p, static_cast<size_t>(size), acl::kMemMallocHugeFirst);
    if (IsOom(rc) && cached_bytes_ > 0) {
      SWAPPLAN_RETURN_IF_ERROR(Trim());
      rc = api_->Malloc(&p, static_cast<size_t>(size), acl::kMemMallocHugeFirst);
    }
    if (IsOom(rc)) {
      return WithRule(Error(ErrorKind::kResourceLimit,
                            absl::StrCat("device out of memory: aclrtMalloc(", size,
                                         " bytes, ACL_MEM_MALLOC_HUGE_FIRST): ",
                                         api_->Describe(rc))),
                      "out-of-memory");
    }
    SWAPPLAN_RETURN_IF_ERROR(Check(rc, [&] {
      return absl::StrCat("aclrtMalloc(", size, " bytes, ACL_MEM_MALLOC_HUGE_FIRST)");
    }));
    sizes_[p] = size;
    return p;
  }

  absl::Status FreeAsync(void* ptr, Stream stream) override {
    auto it = sizes_.find(ptr);
    if (it == sizes_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Ascend backend: free of ", Ptr(ptr), ", which AllocAsync did not return"));
    }
    bins_[it->second].push_back({ptr, stream});
    cached_bytes_ += it->second;
    return absl::OkStatus();
  }

  absl::StatusOr<void*> HostAlloc(int64_t bytes) override {
    if (bytes <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Ascend backend: pinned allocation of ", bytes, " bytes"));
    }
    void* p = nullptr;
    const acl::Error rc = api_->MallocHost(&p, static_cast<size_t>(bytes));
    if (rc != acl::kSuccess) {
      return Error(IsOom(rc) ? ErrorKind::kResourceLimit : ErrorKind::kUnavailable,
                   absl::StrCat("aclrtMallocHost(", bytes, " bytes): ", api_->Describe(rc)));
    }
    pinned_.Add(p, bytes);
    return p;
  }

  absl::Status HostFree(void* ptr) override {
    if (!pinned_.Remove(ptr)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Ascend backend: aclrtFreeHost of ", Ptr(ptr), ", which HostAlloc did not return"));
    }
    return Check(api_->FreeHost(ptr), [&] { return absl::StrCat("aclrtFreeHost(", Ptr(ptr), ")"); });
  }

  absl::Status CopyAsync(void* dst, const void* src, int64_t bytes, Direction direction,
                         Stream stream) override {
    if (bytes < 0 || (bytes > 0 && (dst == nullptr || src == nullptr))) {
      return absl::InvalidArgumentError(absl::StrCat("Ascend backend: copy of ", bytes,
                                                     " bytes from ", Ptr(src), " to ", Ptr(dst)));
    }
    const void* host = direction == Direction::kDeviceToHost ? dst : src;
    if (!pinned_.Contains(host, bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Ascend backend: ", DirectionName(direction), " copy of ", bytes,
          " bytes uses host memory at ", Ptr(host),
          " outside every pinned block (aclrtMallocHost)"));
    }
    for (const void* p : {static_cast<const void*>(dst), src}) {
      if (reinterpret_cast<uintptr_t>(p) % acl::kCopyAlignment != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Ascend backend: ", DirectionName(direction), " copy of ", bytes, " bytes from ",
            Ptr(src), " to ", Ptr(dst), ": ", Ptr(p),
            " is not 64-byte aligned (aclrtMemcpyAsync's alignment rule)"));
      }
    }
    const int kind = direction == Direction::kDeviceToHost ? acl::kMemcpyDeviceToHost
                                                           : acl::kMemcpyHostToDevice;
    const auto n = static_cast<size_t>(bytes);
    return Check(api_->MemcpyAsync(dst, n, src, n, kind, stream.handle), [&] {
      return absl::StrCat("aclrtMemcpyAsync(dst ", Ptr(dst), ", destMax ", bytes, ", src ",
                          Ptr(src), ", ", bytes, " bytes, ",
                          direction == Direction::kDeviceToHost ? "ACL_MEMCPY_DEVICE_TO_HOST"
                                                                : "ACL_MEMCPY_HOST_TO_DEVICE",
                          ", stream ", Ptr(stream.handle), ")");
    });
  }

  absl::StatusOr<MemInfo> GetMemInfo() override {
    size_t free_bytes = 0, total = 0;
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->GetMemInfo(acl::kHbmMem, &free_bytes, &total),
                                   [] { return std::string("aclrtGetMemInfo(ACL_HBM_MEM)"); }));
    return MemInfo{static_cast<int64_t>(free_bytes) + cached_bytes_, static_cast<int64_t>(total)};
  }

 private:
  struct Cached {
    void* ptr;
    Stream stream;
  };

  static bool IsOom(acl::Error rc) {
    return rc == acl::kErrorRtMemoryAllocation || rc == acl::kErrorBadAlloc;
  }

  // Returns every cached block with aclrtFree after synchronising the
  // streams that freed them (their frees may still be pending there).
  absl::Status Trim() {
    absl::flat_hash_set<void*> streams;
    for (const auto& [size, bin] : bins_) {
      for (const Cached& c : bin) streams.insert(c.stream.handle);
    }
    for (void* s : streams) SWAPPLAN_RETURN_IF_ERROR(SynchronizeStream(Stream{s}));
    for (auto& [size, bin] : bins_) {
      for (const Cached& c : bin) {
        sizes_.erase(c.ptr);
        SWAPPLAN_RETURN_IF_ERROR(
            Check(api_->Free(c.ptr), [&] { return absl::StrCat("aclrtFree(", Ptr(c.ptr), ")"); }));
      }
    }
    bins_.clear();
    cached_bytes_ = 0;
    return absl::OkStatus();
  }

  template <typename F>
  absl::Status Check(acl::Error rc, F&& call) const {
    if (rc == acl::kSuccess) return absl::OkStatus();
    return Error(ErrorKind::kUnavailable,
                 absl::StrCat(call(), " on device ", device_, ": ", api_->Describe(rc)));
  }

  std::unique_ptr<AclApi> api_;
  int32_t device_;
  int32_t max_events_;
  int32_t least_, greatest_;
  int32_t events_ = 0;
  Event scratch_;
  internal::PinnedBlocks pinned_;
  // Every block from aclrtMalloc (in use or cached) -> its size.
  absl::flat_hash_map<void*, int64_t> sizes_;
  // Cached blocks by exact size, oldest first.
  absl::flat_hash_map<int64_t, std::vector<Cached>> bins_;
  int64_t cached_bytes_ = 0;
};

}  // namespace

absl::Status AclBackendOptions::Validate() const {
  if (device < 0) {
    return absl::InvalidArgumentError(absl::StrCat("Ascend backend: device is ", device,
                                                   "; must be >= 0"));
  }
  if (max_events < 0 || max_events == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Ascend backend: max_events is ", max_events,
        "; must be 0 (no cap) or >= 2 (the backend keeps one event of its own)"));
  }
  return absl::OkStatus();
}

std::vector<std::string> AclLibraryCandidates(const AclBackendOptions& options) {
  if (!options.library.empty()) return {options.library};
  if (const char* env = std::getenv(kAclLibraryEnv); env != nullptr && env[0] != '\0') {
    return {env};
  }
  return {"libascendcl.so"};
}

absl::StatusOr<std::unique_ptr<Backend>> CreateAclBackend(const AclBackendOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  absl::StatusOr<std::unique_ptr<AclApi>> loaded = AclApi::Load(AclLibraryCandidates(options));
  if (!loaded.ok()) {
    return Error(ErrorKind::kUnavailable,
                 absl::StrCat("Ascend backend: ", loaded.status().message(), " (set ",
                              kAclLibraryEnv, " or the vendor_library option; CANN's set_env.sh "
                              "puts libascendcl.so on LD_LIBRARY_PATH)"));
  }
  std::unique_ptr<AclApi> api = std::move(*loaded);
  const std::string lib = absl::StrCat(" (", api->library.path(), ")");
  auto fail = [&](acl::Error rc, absl::string_view call) {
    return Error(ErrorKind::kUnavailable,
                 absl::StrCat("Ascend backend: ", call, lib, ": ", api->Describe(rc)));
  };
  if (acl::Error rc = api->Init(nullptr); rc != acl::kSuccess && rc != acl::kErrorRepeatInitialize) {
    return fail(rc, "aclInit(NULL)");
  }
  if (acl::Error rc = api->SetDevice(options.device); rc != acl::kSuccess) {
    return fail(rc, absl::StrCat("aclrtSetDevice(", options.device, ")"));
  }
  int32_t least = acl::kDefaultLeastPriority, greatest = acl::kDefaultGreatestPriority;
  if (api->DeviceGetStreamPriorityRange != nullptr) {
    if (acl::Error rc = api->DeviceGetStreamPriorityRange(&least, &greatest); rc != acl::kSuccess) {
      return fail(rc, "aclrtDeviceGetStreamPriorityRange()");
    }
  }
  auto backend = std::make_unique<AclBackend>(std::move(api), options, least, greatest);
  SWAPPLAN_RETURN_IF_ERROR(backend->Init());
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace swapplan::runtime
