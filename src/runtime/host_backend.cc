// The host backend: arena device memory, worker-thread streams, copy
// engines with a bandwidth model, events with generations, fault injection.
// See host_backend.h.
#include "swapplan/runtime/host_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/arena.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

namespace {

std::string Ptr(const void* p) {
  return absl::StrCat("0x", absl::Hex(reinterpret_cast<uintptr_t>(p)));
}

const char* DirName(Direction d) { return d == Direction::kDeviceToHost ? "D2H" : "H2D"; }

struct HostEvent {
  uint64_t recorded = 0;   // generation of the last RecordEvent call
  uint64_t completed = 0;  // generation of the last record executed
  absl::Status status;     // of the work the completed record captured
  int32_t pending = 0;     // queued records and waits naming it
  bool destroyed = false;
};

struct Command {
  enum Kind : uint8_t { kCopy, kRecord, kWait, kFree, kFn } kind = kCopy;
  void* dst = nullptr;
  const void* src = nullptr;
  int64_t bytes = 0;
  Direction direction = Direction::kDeviceToHost;
  int64_t issue_ns = 0;
  HostEvent* event = nullptr;
  uint64_t generation = 0;
  std::function<void()> fn;
};

struct HostStream {
  int32_t id = 0;
  StreamPriority priority = StreamPriority::kNormal;
  bool is_inline = false;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Command> queue;
  bool running = false;
  bool stop = false;
  // Worker state (touched by the worker, or by the caller for inline
  // streams; read by Synchronize after the queue drained).
  absl::Status sticky;   // waited on a failed event: everything after is skipped
  absl::Status segment;  // first failed copy since the last record
  std::thread thread;
};

// A copy engine: one copy at a time, kHigh streams first, then issue order.
struct Engine {
  std::mutex mu;
  std::condition_variable cv;
  bool busy = false;
  uint64_t next_ticket = 0;
  std::set<std::pair<int, uint64_t>> waiting;

  void Acquire(StreamPriority p) {
    std::unique_lock<std::mutex> lock(mu);
    const std::pair<int, uint64_t> key{-static_cast<int>(p), next_ticket++};
    waiting.insert(key);
    cv.wait(lock, [&] { return !busy && *waiting.begin() == key; });
    waiting.erase(key);
    busy = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      busy = false;
    }
    cv.notify_all();
  }
};

struct FaultState {
  FaultSpec spec;
  int32_t seen = 0;
};

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

}  // namespace

absl::Status FaultSpec::Validate() const {
  if (skip < 0) return absl::InvalidArgumentError(absl::StrCat("fault: skip is ", skip, "; must be >= 0"));
  if (count == 0 || count < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("fault: count is ", count, "; must be >= 1 or -1 (always)"));
  }
  if (kind == FaultKind::kSlowCopy && !(slow_factor > 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fault: slow_factor is ", slow_factor, "; must be > 1"));
  }
  return absl::OkStatus();
}

absl::Status HostBackendOptions::Validate() const {
  SWAPPLAN_RETURN_IF_ERROR(device.Validate());
  if (device.capacity_bytes > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("host backend: capacity_bytes is ",
                                                   device.capacity_bytes,
                                                   "; the host arena holds at most 1 TiB"));
  }
  if (allocator.kind == AllocatorKind::kCudaCaching) {
    AllocatorOptions a = allocator;
    a.capacity_bytes = device.capacity_bytes;
    if (absl::Status s = a.Validate(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("host backend: ", s.message()));
    }
  }
  return absl::OkStatus();
}

struct HostBackend::Impl {
  HostBackendOptions options;
  internal::Arena arena;
  mutable std::mutex arena_mu;  // arena (caller and workers free)

  HostStream compute;  // id 0
  std::unique_ptr<HostStream> compute_worker;
  absl::flat_hash_map<HostStream*, std::unique_ptr<HostStream>> streams;
  int32_t next_stream_id = 1;

  std::mutex ev_mu;
  std::condition_variable ev_cv;
  absl::flat_hash_map<HostEvent*, std::unique_ptr<HostEvent>> events;

  Engine engines[2];

  mutable std::mutex host_mu;
  std::map<uintptr_t, std::pair<int64_t, std::unique_ptr<std::byte, FreeDeleter>>> host_blocks;

  mutable std::mutex fault_mu;
  std::vector<FaultState> faults;

  mutable std::mutex log_mu;
  std::vector<CopyLogEntry> log;

  std::atomic<int64_t> event_queries{0}, event_synchronizes{0}, stream_synchronizes{0},
      stream_waits{0}, device_allocs{0}, device_frees{0}, host_allocs{0}, host_frees{0},
      copies{0}, failed_copies{0};

  ~Impl() {
    std::vector<HostStream*> all;
    for (auto& [p, s] : streams) all.push_back(p);
    if (compute_worker != nullptr) all.push_back(compute_worker.get());
    for (HostStream* s : all) StopWorker(*s);
  }

  // --- handles ---
  absl::StatusOr<HostStream*> StreamOf(Stream s) {
    auto* p = static_cast<HostStream*>(s.handle);
    if (p == &compute || (compute_worker != nullptr && p == compute_worker.get())) return p;
    if (streams.contains(p)) return p;
    return absl::InvalidArgumentError(absl::StrCat("host backend: unknown stream ", Ptr(s.handle)));
  }
  absl::StatusOr<HostEvent*> EventOf(Event e) {
    auto* p = static_cast<HostEvent*>(e.handle);
    std::lock_guard<std::mutex> lock(ev_mu);
    auto it = events.find(p);
    if (it == events.end() || it->second->destroyed) {
      return absl::InvalidArgumentError(absl::StrCat("host backend: unknown event ", Ptr(e.handle)));
    }
    return p;
  }

  // --- workers ---
  void StartWorker(HostStream& s) {
    s.thread = std::thread([this, &s] { WorkerLoop(s); });
  }
  void StopWorker(HostStream& s) {
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.stop = true;
    }
    s.cv.notify_all();
    if (s.thread.joinable()) s.thread.join();
  }
  void WorkerLoop(HostStream& s) {
    std::unique_lock<std::mutex> lock(s.mu);
    for (;;) {
      s.cv.wait(lock, [&] { return s.stop || !s.queue.empty(); });
      if (s.queue.empty()) return;  // stop, drained
      Command c = std::move(s.queue.front());
      s.queue.pop_front();
      s.running = true;
      lock.unlock();
      (void)Execute(s, c);  // failures reach the events recorded after it
      lock.lock();
      s.running = false;
      s.cv.notify_all();
    }
  }
  void Enqueue(HostStream& s, Command c) {
    if (c.event != nullptr) {
      std::lock_guard<std::mutex> lock(ev_mu);
      ++c.event->pending;
    }
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.queue.push_back(std::move(c));
    }
    s.cv.notify_all();
  }
  // Drops one queued reference to `e`; deletes it when destroyed and
  // unreferenced. Requires ev_mu.
  void Unref(HostEvent* e) {
    if (--e->pending == 0 && e->destroyed) events.erase(e);
  }

  // Runs one command on stream `s` (worker thread, or the caller for the
  // inline stream). Returns the status an inline caller sees.
  absl::Status Execute(HostStream& s, Command& c) {
    switch (c.kind) {
      case Command::kCopy:
        if (!s.sticky.ok()) return s.sticky;
        return DoCopy(s, c);
      case Command::kRecord: {
        {
          std::lock_guard<std::mutex> lock(ev_mu);
          HostEvent* e = c.event;
          if (c.generation >= e->completed) {
            e->completed = c.generation;
            e->status = !s.sticky.ok() ? s.sticky : s.segment;
          }
          if (!s.is_inline) Unref(e);
        }
        s.segment = absl::OkStatus();
        ev_cv.notify_all();
        return absl::OkStatus();
      }
      case Command::kWait: {
        absl::Status st;
        {
          std::unique_lock<std::mutex> lock(ev_mu);
          HostEvent* e = c.event;
          ev_cv.wait(lock, [&] { return e->completed >= c.generation; });
          st = e->status;
          if (!s.is_inline) Unref(e);
        }
        if (!st.ok() && !s.is_inline && s.sticky.ok()) {
          s.sticky = absl::Status(st.code(), absl::StrCat("stream ", s.id,
                                                           " waited on a failed event: ",
                                                           st.message()));
        }
        return st;
      }
      case Command::kFree: {
        if (!s.sticky.ok()) return s.sticky;  // a failed stream frees nothing
        std::lock_guard<std::mutex> lock(arena_mu);
        absl::Status st = arena.Free(c.dst);
        if (st.ok()) ++device_frees;
        return st;
      }
      case Command::kFn:
        if (!s.sticky.ok()) return s.sticky;
        c.fn();
        return absl::OkStatus();
    }
    return absl::InternalError("host backend: unknown command");
  }

  // Fault decision for one copy: returns the slow factor, sets *fail.
  double CopyFault(Direction d, bool* fail) {
    *fail = false;
    double factor = 1;
    std::lock_guard<std::mutex> lock(fault_mu);
    for (FaultState& f : faults) {
      if (f.spec.kind == FaultKind::kAllocFailure) continue;
      if (!f.spec.any_direction && f.spec.direction != d) continue;
      const int32_t n = f.seen++;
      if (n < f.spec.skip || (f.spec.count >= 0 && n >= f.spec.skip + f.spec.count)) continue;
      if (f.spec.kind == FaultKind::kCopyError) *fail = true;
      if (f.spec.kind == FaultKind::kSlowCopy) factor *= f.spec.slow_factor;
    }
    return factor;
  }
  bool AllocFault() {
    std::lock_guard<std::mutex> lock(fault_mu);
    bool fail = false;
    for (FaultState& f : faults) {
      if (f.spec.kind != FaultKind::kAllocFailure) continue;
      const int32_t n = f.seen++;
      if (n >= f.spec.skip && (f.spec.count < 0 || n < f.spec.skip + f.spec.count)) fail = true;
    }
    return fail;
  }

  absl::Status DoCopy(HostStream& s, const Command& c) {
    bool fail = false;
    const double factor = CopyFault(c.direction, &fail);
    Engine& engine = engines[options.device.copy_engines == 1 ? 0 : static_cast<int>(c.direction)];
    engine.Acquire(s.priority);
    const int64_t start = HostBackend::NowNs();
    // The bytes move at the end of the copy's time on the engine: a DMA
    // reads its source and fills its destination throughout, so a source
    // overwritten, or a destination read, before the copy finished shows.
    if (options.timed_copies) {
      const int64_t ns = static_cast<int64_t>(
          std::min(static_cast<double>(options.device.CopyNs(c.direction, c.bytes)) * factor,
                   static_cast<double>(kMaxCopyNs)));
      std::this_thread::sleep_until(
          std::chrono::steady_clock::time_point(std::chrono::nanoseconds(start + ns)));
    }
    std::memcpy(c.dst, c.src, static_cast<size_t>(fail ? c.bytes / 2 : c.bytes));
    const int64_t end = HostBackend::NowNs();
    engine.Release();
    ++copies;
    absl::Status st;
    if (fail) {
      ++failed_copies;
      st = Error(ErrorKind::kUnavailable,
                 absl::StrCat("injected copy error: ", DirName(c.direction), " copy of ", c.bytes,
                              " bytes on stream ", s.id, " failed"));
      if (s.segment.ok()) s.segment = st;
    }
    if (options.copy_log) {
      std::lock_guard<std::mutex> lock(log_mu);
      log.push_back({s.id, c.direction, c.bytes, c.issue_ns, start, end, !fail});
    }
    return st;
  }

  // Issues `c` on `s`: inline streams run it now, workers queue it.
  absl::Status Issue(HostStream& s, Command c) {
    if (s.is_inline) return Execute(s, c);
    Enqueue(s, std::move(c));
    return absl::OkStatus();
  }

  absl::Status Drain(HostStream& s) {
    if (s.is_inline) return absl::OkStatus();
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait(lock, [&] { return s.queue.empty() && !s.running; });
    return s.sticky;
  }
};

int64_t HostBackend::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<HostBackend>> HostBackend::Create(const HostBackendOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  std::optional<AllocatorOptions> reserved_model;
  if (options.allocator.kind == AllocatorKind::kCudaCaching) reserved_model = options.allocator;
  SWAPPLAN_RETURN_IF_ERROR(impl->arena.Init(options.device.capacity_bytes, reserved_model));
  impl->compute.id = 0;
  impl->compute.is_inline = true;
  if (options.compute == ComputeStreamKind::kWorker) {
    impl->compute_worker = std::make_unique<HostStream>();
    impl->compute_worker->id = 0;
    impl->StartWorker(*impl->compute_worker);
  }
  return std::unique_ptr<HostBackend>(new HostBackend(std::move(impl)));
}

HostBackend::HostBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HostBackend::~HostBackend() = default;

const HostBackendOptions& HostBackend::options() const { return impl_->options; }

Stream HostBackend::ComputeStream() {
  return Stream{impl_->compute_worker != nullptr ? static_cast<void*>(impl_->compute_worker.get())
                                                 : static_cast<void*>(&impl_->compute)};
}

absl::StatusOr<Stream> HostBackend::CreateStream(StreamPriority priority) {
  auto s = std::make_unique<HostStream>();
  s->id = impl_->next_stream_id++;
  s->priority = priority;
  HostStream* p = s.get();
  impl_->streams.emplace(p, std::move(s));
  impl_->StartWorker(*p);
  return Stream{p};
}

absl::Status HostBackend::DestroyStream(Stream stream) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostStream * s, impl_->StreamOf(stream));
  if (s == &impl_->compute || s == impl_->compute_worker.get()) {
    return absl::InvalidArgumentError("host backend: the compute stream cannot be destroyed");
  }
  absl::Status st = impl_->Drain(*s);
  impl_->StopWorker(*s);
  impl_->streams.erase(s);
  return st;
}

absl::StatusOr<Event> HostBackend::CreateEvent() {
  auto e = std::make_unique<HostEvent>();
  HostEvent* p = e.get();
  std::lock_guard<std::mutex> lock(impl_->ev_mu);
  impl_->events.emplace(p, std::move(e));
  return Event{p};
}

absl::Status HostBackend::DestroyEvent(Event event) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostEvent * e, impl_->EventOf(event));
  std::lock_guard<std::mutex> lock(impl_->ev_mu);
  if (e->pending > 0) {
    e->destroyed = true;  // deleted by the last queued record or wait
  } else {
    impl_->events.erase(e);
  }
  return absl::OkStatus();
}

absl::Status HostBackend::RecordEvent(Event event, Stream stream) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostStream * s, impl_->StreamOf(stream));
  SWAPPLAN_ASSIGN_OR_RETURN(HostEvent * e, impl_->EventOf(event));
  Command c;
  c.kind = Command::kRecord;
  c.event = e;
  {
    std::lock_guard<std::mutex> lock(impl_->ev_mu);
    c.generation = ++e->recorded;
  }
  return impl_->Issue(*s, std::move(c));
}

absl::Status HostBackend::StreamWaitEvent(Stream stream, Event event) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostStream * s, impl_->StreamOf(stream));
  SWAPPLAN_ASSIGN_OR_RETURN(HostEvent * e, impl_->EventOf(event));
  ++impl_->stream_waits;
  Command c;
  c.kind = Command::kWait;
  c.event = e;
  {
    std::lock_guard<std::mutex> lock(impl_->ev_mu);
    c.generation = e->recorded;
  }
  return impl_->Issue(*s, std::move(c));
}

absl::StatusOr<bool> HostBackend::QueryEvent(Event event) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostEvent * e, impl_->EventOf(event));
  ++impl_->event_queries;
  std::lock_guard<std::mutex> lock(impl_->ev_mu);
  if (e->completed < e->recorded) return false;
  if (!e->status.ok()) return e->status;
  return true;
}

absl::Status HostBackend::SynchronizeEvent(Event event) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostEvent * e, impl_->EventOf(event));
  ++impl_->event_synchronizes;
  std::unique_lock<std::mutex> lock(impl_->ev_mu);
  const uint64_t g = e->recorded;
  impl_->ev_cv.wait(lock, [&] { return e->completed >= g; });
  return e->status;
}

absl::Status HostBackend::SynchronizeStream(Stream stream) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostStream * s, impl_->StreamOf(stream));
  ++impl_->stream_synchronizes;
  return impl_->Drain(*s);
}

absl::StatusOr<void*> HostBackend::AllocAsync(int64_t bytes, Stream stream) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostStream * s, impl_->StreamOf(stream));
  (void)s;  // the arena's memory is usable by every stream at once
  if (impl_->AllocFault()) {
    return WithRule(Error(ErrorKind::kResourceLimit,
                          absl::StrCat("device out of memory: injected allocation failure (",
                                       bytes, " bytes requested)")),
                    "out-of-memory");
  }
  std::lock_guard<std::mutex> lock(impl_->arena_mu);
  SWAPPLAN_ASSIGN_OR_RETURN(void* p, impl_->arena.Allocate(bytes));
  ++impl_->device_allocs;
  return p;
}

absl::Status HostBackend::FreeAsync(void* ptr, Stream stream) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostStream * s, impl_->StreamOf(stream));
  {
    std::lock_guard<std::mutex> lock(impl_->arena_mu);
    if (!impl_->arena.ContainsAllocated(ptr, 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("host backend: free of ", Ptr(ptr), ", which is not a device block"));
    }
  }
  Command c;
  c.kind = Command::kFree;
  c.dst = ptr;
  return impl_->Issue(*s, std::move(c));
}

absl::StatusOr<void*> HostBackend::HostAlloc(int64_t bytes) {
  if (bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("host backend: host allocation of ", bytes,
                                                   " bytes"));
  }
  const size_t size = static_cast<size_t>((bytes + 4095) / 4096 * 4096);
  std::unique_ptr<std::byte, FreeDeleter> block(static_cast<std::byte*>(std::aligned_alloc(4096, size)));
  if (block == nullptr) {
    return Error(ErrorKind::kResourceLimit,
                 absl::StrCat("host backend: host allocation of ", bytes, " bytes failed"));
  }
  void* p = block.get();
  std::lock_guard<std::mutex> lock(impl_->host_mu);
  impl_->host_blocks.emplace(reinterpret_cast<uintptr_t>(p), std::make_pair(bytes, std::move(block)));
  ++impl_->host_allocs;
  return p;
}

absl::Status HostBackend::HostFree(void* ptr) {
  std::lock_guard<std::mutex> lock(impl_->host_mu);
  auto it = impl_->host_blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == impl_->host_blocks.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("host backend: HostFree of ", Ptr(ptr), ", which HostAlloc did not return"));
  }
  impl_->host_blocks.erase(it);
  ++impl_->host_frees;
  return absl::OkStatus();
}

absl::Status HostBackend::CopyAsync(void* dst, const void* src, int64_t bytes, Direction direction,
                                    Stream stream) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostStream * s, impl_->StreamOf(stream));
  if (bytes < 0 || (bytes > 0 && (dst == nullptr || src == nullptr))) {
    return absl::InvalidArgumentError(absl::StrCat("host backend: copy of ", bytes, " bytes from ",
                                                   Ptr(src), " to ", Ptr(dst)));
  }
  const void* host = direction == Direction::kDeviceToHost ? dst : src;
  {
    std::lock_guard<std::mutex> lock(impl_->host_mu);
    const auto h = reinterpret_cast<uintptr_t>(host);
    auto it = impl_->host_blocks.upper_bound(h);
    bool inside = false;
    if (it != impl_->host_blocks.begin()) {
      --it;
      inside = h + static_cast<uint64_t>(bytes) <= it->first + static_cast<uint64_t>(it->second.first);
    }
    if (!inside) {
      return absl::InvalidArgumentError(
          absl::StrCat("host backend: ", DirName(direction), " copy of ", bytes,
                       " bytes uses host memory at ", Ptr(host),
                       " outside every pinned block (HostAlloc): pageable memory"));
    }
  }
  Command c;
  c.kind = Command::kCopy;
  c.dst = dst;
  c.src = src;
  c.bytes = bytes;
  c.direction = direction;
  c.issue_ns = NowNs();
  return impl_->Issue(*s, std::move(c));
}

absl::StatusOr<MemInfo> HostBackend::GetMemInfo() {
  std::lock_guard<std::mutex> lock(impl_->arena_mu);
  return MemInfo{impl_->arena.capacity_bytes() - impl_->arena.in_use_bytes(),
                 impl_->arena.capacity_bytes()};
}

absl::Status HostBackend::InjectFault(const FaultSpec& fault) {
  SWAPPLAN_RETURN_IF_ERROR(fault.Validate());
  std::lock_guard<std::mutex> lock(impl_->fault_mu);
  impl_->faults.push_back({fault, 0});
  return absl::OkStatus();
}

void HostBackend::ClearFaults() {
  std::lock_guard<std::mutex> lock(impl_->fault_mu);
  impl_->faults.clear();
}

absl::Status HostBackend::LaunchHostFunc(Stream stream, std::function<void()> fn) {
  SWAPPLAN_ASSIGN_OR_RETURN(HostStream * s, impl_->StreamOf(stream));
  Command c;
  c.kind = Command::kFn;
  c.fn = std::move(fn);
  return impl_->Issue(*s, std::move(c));
}

std::vector<CopyLogEntry> HostBackend::CopyLog() const {
  std::lock_guard<std::mutex> lock(impl_->log_mu);
  return impl_->log;
}

bool HostBackend::CopyEngineBusy(Direction direction) const {
  Engine& e = impl_->engines[impl_->options.device.copy_engines == 1 ? 0
                                                                     : static_cast<int>(direction)];
  std::lock_guard<std::mutex> lock(e.mu);
  return e.busy;
}

HostBackendCounters HostBackend::counters() const {
  HostBackendCounters c;
  c.event_queries = impl_->event_queries;
  c.event_synchronizes = impl_->event_synchronizes;
  c.stream_synchronizes = impl_->stream_synchronizes;
  c.stream_waits = impl_->stream_waits;
  c.device_allocs = impl_->device_allocs;
  c.device_frees = impl_->device_frees;
  c.host_allocs = impl_->host_allocs;
  c.host_frees = impl_->host_frees;
  c.copies = impl_->copies;
  c.failed_copies = impl_->failed_copies;
  std::lock_guard<std::mutex> lock(impl_->arena_mu);
  c.arena_in_use_bytes = impl_->arena.in_use_bytes();
  c.arena_peak_bytes = impl_->arena.peak_bytes();
  c.arena_reserved_bytes = impl_->arena.reserved_bytes();
  c.arena_peak_reserved_bytes = impl_->arena.peak_reserved_bytes();
  return c;
}

}  // namespace swapplan::runtime
