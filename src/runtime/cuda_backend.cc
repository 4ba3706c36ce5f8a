// The CUDA backend over the dlopen'ed vendor table. See cuda_backend.h.
#include "swapplan/runtime/cuda_backend.h"

#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/cuda_api.h"
#include "runtime/pinned_blocks.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

namespace {

using internal::CudaApi;
using internal::DirectionName;
using internal::Ptr;

cuda::Stream S(Stream s) { return static_cast<cuda::Stream>(s.handle); }
cuda::Event E(Event e) { return static_cast<cuda::Event>(e.handle); }

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::unique_ptr<CudaApi> api, int32_t device, int least, int greatest)
      : api_(std::move(api)), device_(device), least_(least), greatest_(greatest) {}

  absl::string_view name() const override { return "cuda"; }
  Stream ComputeStream() override { return Stream{nullptr}; }

  absl::StatusOr<Stream> CreateStream(StreamPriority priority) override {
    const int prio = priority == StreamPriority::kHigh ? greatest_ : least_;
    cuda::Stream s = nullptr;
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->StreamCreateWithPriority(&s, cuda::kStreamNonBlocking, prio),
                                   [&] {
                                     return absl::StrCat("cudaStreamCreateWithPriority(flags "
                                                         "cudaStreamNonBlocking, priority ",
                                                         prio, ")");
                                   }));
    return Stream{s};
  }

  absl::Status DestroyStream(Stream stream) override {
    if (stream.handle == nullptr) {
      return absl::InvalidArgumentError("CUDA backend: the default stream cannot be destroyed");
    }
    const absl::Status synced = Check(api_->StreamSynchronize(S(stream)), [&] {
      return absl::StrCat("cudaStreamSynchronize(stream ", Ptr(stream.handle), ")");
    });
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->StreamDestroy(S(stream)), [&] {
      return absl::StrCat("cudaStreamDestroy(stream ", Ptr(stream.handle), ")");
    }));
    return synced;
  }

  absl::StatusOr<Event> CreateEvent() override {
    cuda::Event e = nullptr;
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->EventCreateWithFlags(&e, cuda::kEventDisableTiming), [] {
      return std::string("cudaEventCreateWithFlags(cudaEventDisableTiming)");
    }));
    return Event{e};
  }

  absl::Status DestroyEvent(Event event) override {
    return Check(api_->EventDestroy(E(event)),
                 [&] { return absl::StrCat("cudaEventDestroy(event ", Ptr(event.handle), ")"); });
  }

  absl::Status RecordEvent(Event event, Stream stream) override {
    return Check(api_->EventRecord(E(event), S(stream)), [&] {
      return absl::StrCat("cudaEventRecord(event ", Ptr(event.handle), ", stream ",
                          Ptr(stream.handle), ")");
    });
  }

  absl::Status StreamWaitEvent(Stream stream, Event event) override {
    return Check(api_->StreamWaitEvent(S(stream), E(event), 0), [&] {
      return absl::StrCat("cudaStreamWaitEvent(stream ", Ptr(stream.handle), ", event ",
                          Ptr(event.handle), ")");
    });
  }

  absl::StatusOr<bool> QueryEvent(Event event) override {
    const cuda::Error e = api_->EventQuery(E(event));
    if (e == cuda::kSuccess) return true;
    if (e == cuda::kErrorNotReady) return false;
    return Fail(e, absl::StrCat("cudaEventQuery(event ", Ptr(event.handle), ")"));
  }

  absl::Status SynchronizeEvent(Event event) override {
    return Check(api_->EventSynchronize(E(event)), [&] {
      return absl::StrCat("cudaEventSynchronize(event ", Ptr(event.handle), ")");
    });
  }

  absl::Status SynchronizeStream(Stream stream) override {
    return Check(api_->StreamSynchronize(S(stream)), [&] {
      return absl::StrCat("cudaStreamSynchronize(stream ", Ptr(stream.handle), ")");
    });
  }

  absl::StatusOr<void*> AllocAsync(int64_t bytes, Stream stream) override {
    if (bytes < 0) {
      return absl::InvalidArgumentError(absl::StrCat("CUDA backend: allocation of ", bytes, " bytes"));
    }
    void* p = nullptr;
    const cuda::Error e = api_->MallocAsync(&p, static_cast<size_t>(bytes), S(stream));
    if (e == cuda::kErrorMemoryAllocation) {
      return WithRule(Error(ErrorKind::kResourceLimit,
                            absl::StrCat("device out of memory: cudaMallocAsync(", bytes,
                                         " bytes, stream ", Ptr(stream.handle), "): ",
                                         api_->Describe(e))),
                      "out-of-memory");
    }
    SWAPPLAN_RETURN_IF_ERROR(Check(e, [&] {
      return absl::StrCat("cudaMallocAsync(", bytes, " bytes, stream ", Ptr(stream.handle), ")");
    }));
    return p;
  }

  absl::Status FreeAsync(void* ptr, Stream stream) override {
    return Check(api_->FreeAsync(ptr, S(stream)), [&] {
      return absl::StrCat("cudaFreeAsync(", Ptr(ptr), ", stream ", Ptr(stream.handle), ")");
    });
  }

  absl::StatusOr<void*> HostAlloc(int64_t bytes) override {
    if (bytes <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("CUDA backend: pinned allocation of ", bytes, " bytes"));
    }
    void* p = nullptr;
    const cuda::Error e = api_->HostAlloc(&p, static_cast<size_t>(bytes), cuda::kHostAllocPortable);
    if (e != cuda::kSuccess) {
      const ErrorKind kind =
          e == cuda::kErrorMemoryAllocation ? ErrorKind::kResourceLimit : ErrorKind::kUnavailable;
      return Error(kind, absl::StrCat("cudaHostAlloc(", bytes, " bytes, cudaHostAllocPortable): ",
                                      api_->Describe(e)));
    }
    pinned_.Add(p, bytes);
    return p;
  }

  absl::Status HostFree(void* ptr) override {
    if (!pinned_.Remove(ptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("CUDA backend: cudaFreeHost of ", Ptr(ptr), ", which HostAlloc did not return"));
    }
    return Check(api_->FreeHost(ptr), [&] { return absl::StrCat("cudaFreeHost(", Ptr(ptr), ")"); });
  }

  absl::Status CopyAsync(void* dst, const void* src, int64_t bytes, Direction direction,
                         Stream stream) override {
    if (bytes < 0 || (bytes > 0 && (dst == nullptr || src == nullptr))) {
      return absl::InvalidArgumentError(absl::StrCat("CUDA backend: copy of ", bytes, " bytes from ",
                                                     Ptr(src), " to ", Ptr(dst)));
    }
    const void* host = direction == Direction::kDeviceToHost ? dst : src;
    if (!pinned_.Contains(host, bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CUDA backend: ", DirectionName(direction), " copy of ", bytes,
          " bytes uses host memory at ", Ptr(host),
          " outside every pinned block (cudaHostAlloc): pageable memory would make "
          "cudaMemcpyAsync synchronous"));
    }
    const int kind = direction == Direction::kDeviceToHost ? cuda::kMemcpyDeviceToHost
                                                           : cuda::kMemcpyHostToDevice;
    return Check(api_->MemcpyAsync(dst, src, static_cast<size_t>(bytes), kind, S(stream)), [&] {
      return absl::StrCat("cudaMemcpyAsync(dst ", Ptr(dst), ", src ", Ptr(src), ", ", bytes,
                          " bytes, ", DirectionName(direction), ", stream ", Ptr(stream.handle),
                          ")");
    });
  }

  absl::StatusOr<MemInfo> GetMemInfo() override {
    size_t free_bytes = 0, total = 0;
    SWAPPLAN_RETURN_IF_ERROR(Check(api_->MemGetInfo(&free_bytes, &total),
                                   [] { return std::string("cudaMemGetInfo()"); }));
    return MemInfo{static_cast<int64_t>(free_bytes), static_cast<int64_t>(total)};
  }

 private:
  absl::Status Fail(cuda::Error e, absl::string_view call) const {
    return Error(ErrorKind::kUnavailable,
                 absl::StrCat(call, " on device ", device_, ": ", api_->Describe(e)));
  }
  // OK for cudaSuccess; otherwise the status naming the call (built only
  // then: `call` returns its text).
  template <typename F>
  absl::Status Check(cuda::Error e, F&& call) const {
    if (e == cuda::kSuccess) return absl::OkStatus();
    return Fail(e, call());
  }

  std::unique_ptr<CudaApi> api_;
  int32_t device_;
  int least_, greatest_;
  internal::PinnedBlocks pinned_;
};

}  // namespace

absl::Status CudaBackendOptions::Validate() const {
  if (device < 0) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA backend: device is ", device,
                                                   "; must be >= 0"));
  }
  if (pool_release_threshold_bytes < -1) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA backend: pool_release_threshold_bytes is ",
                                                   pool_release_threshold_bytes,
                                                   "; must be >= 0 or -1 (all)"));
  }
  return absl::OkStatus();
}

std::vector<std::string> CudaLibraryCandidates(const CudaBackendOptions& options) {
  if (!options.library.empty()) return {options.library};
  if (const char* env = std::getenv(kCudaLibraryEnv); env != nullptr && env[0] != '\0') {
    return {env};
  }
  return {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const CudaBackendOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  absl::StatusOr<std::unique_ptr<CudaApi>> loaded = CudaApi::Load(CudaLibraryCandidates(options));
  if (!loaded.ok()) {
    return Error(ErrorKind::kUnavailable,
                 absl::StrCat("CUDA backend: ", loaded.status().message(), " (set ",
                              kCudaLibraryEnv, " or the vendor_library option)"));
  }
  std::unique_ptr<CudaApi> api = std::move(*loaded);
  const std::string lib = absl::StrCat(" (", api->library.path(), ")");
  auto fail = [&](cuda::Error e, absl::string_view call) {
    return Error(ErrorKind::kUnavailable,
                 absl::StrCat("CUDA backend: ", call, lib, ": ", api->Describe(e)));
  };
  if (cuda::Error e = api->SetDevice(options.device); e != cuda::kSuccess) {
    return fail(e, absl::StrCat("cudaSetDevice(", options.device, ")"));
  }
  int least = 0, greatest = 0;
  if (cuda::Error e = api->DeviceGetStreamPriorityRange(&least, &greatest); e != cuda::kSuccess) {
    return fail(e, "cudaDeviceGetStreamPriorityRange()");
  }
  cuda::MemPool pool = nullptr;
  if (cuda::Error e = api->DeviceGetDefaultMemPool(&pool, options.device); e != cuda::kSuccess) {
    return fail(e, absl::StrCat("cudaDeviceGetDefaultMemPool(device ", options.device, ")"));
  }
  uint64_t threshold = options.pool_release_threshold_bytes < 0
                           ? std::numeric_limits<uint64_t>::max()
                           : static_cast<uint64_t>(options.pool_release_threshold_bytes);
  if (cuda::Error e = api->MemPoolSetAttribute(pool, cuda::kMemPoolAttrReleaseThreshold, &threshold);
      e != cuda::kSuccess) {
    return fail(e, absl::StrCat("cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold, ",
                                threshold, ")"));
  }
  return std::unique_ptr<Backend>(
      std::make_unique<CudaBackend>(std::move(api), options.device, least, greatest));
}

}  // namespace swapplan::runtime
