// The fake vendor runtimes' device and their control API. See
// fake_device.h and fake_control.h.
#include "fake_device.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime::fake {

namespace {

constexpr size_t kMaxLogLines = 2'000'000;

const char* Dir(Direction d) { return d == Direction::kDeviceToHost ? "D2H" : "H2D"; }

bool Overlap(uintptr_t a, int64_t an, uintptr_t b, int64_t bn) {
  return an > 0 && bn > 0 && a < b + static_cast<uint64_t>(bn) && b < a + static_cast<uint64_t>(an);
}

HostBackendOptions HostOptions(const swapplan_fake_config& c) {
  HostBackendOptions o;
  o.device.name = "fake";
  o.device.capacity_bytes = c.capacity_bytes;
  o.device.h2d_bandwidth_bytes_per_s = c.h2d_bytes_per_s;
  o.device.d2h_bandwidth_bytes_per_s = c.d2h_bytes_per_s;
  o.device.copy_latency_ns = c.copy_latency_ns;
  o.device.copy_engines = c.copy_engines;
  o.timed_copies = c.timed_copies != 0;
  o.compute = c.worker_compute != 0 ? ComputeStreamKind::kWorker : ComputeStreamKind::kInline;
  o.copy_log = true;
  return o;
}

size_t CopyOut(const std::string& text, char* buf, size_t capacity) {
  if (buf != nullptr && capacity > 0) {
    const size_t n = std::min(text.size(), capacity - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return text.size() + 1;
}

thread_local std::string g_control_error;

}  // namespace

std::string Hex(const void* p) {
  return absl::StrCat("0x", absl::Hex(reinterpret_cast<uintptr_t>(p)));
}

FakeDevice& FakeDevice::Get() {
  static FakeDevice device;
  return device;
}

HostBackend& FakeDevice::Host() {
  if (host_ == nullptr) {
    if (!configured_) {
      swapplan_fake_default_config(&config_);
      configured_ = true;
    }
    absl::StatusOr<std::unique_ptr<HostBackend>> h = HostBackend::Create(HostOptions(config_));
    if (!h.ok()) {
      swapplan_fake_default_config(&config_);
      h = HostBackend::Create(HostOptions(config_));
    }
    host_ = std::move(*h);
  }
  return *host_;
}

absl::Status FakeDevice::Reset(const swapplan_fake_config& config) {
  if (config.max_events < 0) {
    return absl::InvalidArgumentError(absl::StrCat("fake device: max_events is ", config.max_events));
  }
  SWAPPLAN_RETURN_IF_ERROR(HostOptions(config).Validate());
  std::unique_ptr<HostBackend> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!streams_.empty() || !events_.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("fake device: reset while ", streams_.size(), " streams and ",
                       events_.size(), " events of the previous device are alive"));
    }
    old = std::move(host_);
  }
  if (old != nullptr) (void)old->SynchronizeStream(old->ComputeStream());
  old.reset();
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<HostBackend> fresh,
                            HostBackend::Create(HostOptions(config)));
  std::lock_guard<std::mutex> lock(mu_);
  config_ = config;
  configured_ = true;
  host_ = std::move(fresh);
  recorded_.clear();
  next_stream_ = next_event_ = 1;
  allocs_.clear();
  pinned_.clear();
  inflight_.clear();
  issued_.clear();
  violations_.clear();
  log_.clear();
  seq_ = 0;
  counts_.clear();
  return absl::OkStatus();
}

bool FakeDevice::IsDefault(void* stream) const {
  const auto v = reinterpret_cast<uintptr_t>(stream);
  return v == 0 || v == 1 || v == 2;  // 0, cudaStreamLegacy, cudaStreamPerThread
}

absl::StatusOr<Stream> FakeDevice::StreamOfLocked(void* stream) {
  if (IsDefault(stream)) return Host().ComputeStream();
  if (!streams_.contains(stream)) {
    return absl::NotFoundError(absl::StrCat("fake device: unknown stream ", Hex(stream)));
  }
  return Stream{stream};
}

int32_t FakeDevice::StreamId(void* stream) {
  if (IsDefault(stream)) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(stream);
  return it == streams_.end() ? -1 : it->second;
}

int32_t FakeDevice::EventId(void* event) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event);
  return it == events_.end() ? -1 : it->second;
}

absl::StatusOr<void*> FakeDevice::NewStream(StreamPriority priority) {
  std::lock_guard<std::mutex> lock(mu_);
  SWAPPLAN_ASSIGN_OR_RETURN(Stream s, Host().CreateStream(priority));
  streams_[s.handle] = next_stream_++;
  return s.handle;
}

absl::Status FakeDevice::DeleteStream(void* stream) {
  HostBackend* host;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (IsDefault(stream)) {
      return absl::InvalidArgumentError("fake device: the default stream cannot be destroyed");
    }
    if (!streams_.contains(stream)) {
      return absl::NotFoundError(absl::StrCat("fake device: unknown stream ", Hex(stream)));
    }
    host = &Host();
  }
  absl::Status st = host->DestroyStream(Stream{stream});  // drains it first
  std::lock_guard<std::mutex> lock(mu_);
  DropIssuedLocked(streams_[stream]);
  streams_.erase(stream);
  return st;
}

absl::Status FakeDevice::SyncStream(void* stream) {
  HostBackend* host;
  Stream s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    SWAPPLAN_ASSIGN_OR_RETURN(s, StreamOfLocked(stream));
    host = &Host();
  }
  absl::Status st = host->SynchronizeStream(s);
  std::lock_guard<std::mutex> lock(mu_);
  DropIssuedLocked(IsDefault(stream) ? 0 : streams_[stream]);
  return st;
}

void FakeDevice::DropIssuedLocked(int32_t stream) {
  // A drained stream has nothing in flight; a copy skipped on a failed
  // stream (host_backend.h: sticky errors) never ran its completion.
  std::erase_if(issued_, [stream](const InflightCopy& x) { return x.stream == stream; });
  std::erase_if(inflight_, [stream](const InflightCopy& x) { return x.stream == stream; });
}

absl::StatusOr<void*> FakeDevice::NewEvent() {
  std::lock_guard<std::mutex> lock(mu_);
  if (config_.max_events > 0 && static_cast<int32_t>(events_.size()) >= config_.max_events) {
    return WithRule(absl::ResourceExhaustedError(absl::StrCat(
                        "fake device: ", events_.size(), " events exist; the device allows ",
                        config_.max_events)),
                    "event-limit");
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Event e, Host().CreateEvent());
  events_[e.handle] = next_event_++;
  recorded_[e.handle] = false;
  return e.handle;
}

absl::Status FakeDevice::DeleteEvent(void* event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!events_.contains(event)) {
    return absl::NotFoundError(absl::StrCat("fake device: unknown event ", Hex(event)));
  }
  SWAPPLAN_RETURN_IF_ERROR(Host().DestroyEvent(Event{event}));
  events_.erase(event);
  recorded_.erase(event);
  return absl::OkStatus();
}

absl::Status FakeDevice::Record(void* event, void* stream) {
  HostBackend* host;
  Stream s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!events_.contains(event)) {
      return absl::NotFoundError(absl::StrCat("fake device: unknown event ", Hex(event)));
    }
    SWAPPLAN_ASSIGN_OR_RETURN(s, StreamOfLocked(stream));
    recorded_[event] = true;
    host = &Host();
  }
  return host->RecordEvent(Event{event}, s);
}

absl::Status FakeDevice::Wait(void* stream, void* event) {
  HostBackend* host;
  Stream s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!events_.contains(event)) {
      return absl::NotFoundError(absl::StrCat("fake device: unknown event ", Hex(event)));
    }
    SWAPPLAN_ASSIGN_OR_RETURN(s, StreamOfLocked(stream));
    host = &Host();
    if (!recorded_[event]) {
      const std::string what = absl::StrCat(
          "stream ", IsDefault(stream) ? 0 : streams_[stream], " waits on event ", events_[event],
          ", which was never recorded: the wait orders nothing");
      violations_.push_back(what);
      return WithRule(absl::FailedPreconditionError(what), kRuleBroken);
    }
  }
  return host->StreamWaitEvent(s, Event{event});
}

absl::StatusOr<bool> FakeDevice::Query(void* event) {
  HostBackend* host;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!events_.contains(event)) {
      return absl::NotFoundError(absl::StrCat("fake device: unknown event ", Hex(event)));
    }
    host = &Host();
  }
  return host->QueryEvent(Event{event});
}

absl::Status FakeDevice::SyncEvent(void* event) {
  HostBackend* host;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!events_.contains(event)) {
      return absl::NotFoundError(absl::StrCat("fake device: unknown event ", Hex(event)));
    }
    host = &Host();
  }
  return host->SynchronizeEvent(Event{event});
}

const FakeDevice::Alloc* FakeDevice::AllocationOf(uintptr_t p, int64_t n, uintptr_t* start) const {
  auto it = allocs_.upper_bound(p);
  if (it == allocs_.begin()) return nullptr;
  --it;
  if (p + static_cast<uint64_t>(n) > it->first + static_cast<uint64_t>(it->second.bytes) ||
      (n == 0 && p >= it->first + static_cast<uint64_t>(it->second.bytes))) {
    return nullptr;
  }
  if (start != nullptr) *start = it->first;
  return &it->second;
}

bool FakeDevice::InPinned(uintptr_t p, int64_t n) const {
  auto it = pinned_.upper_bound(p);
  if (it == pinned_.begin()) return false;
  --it;
  return p + static_cast<uint64_t>(n) <= it->first + static_cast<uint64_t>(it->second);
}

absl::StatusOr<void*> FakeDevice::Malloc(int64_t bytes, void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  SWAPPLAN_ASSIGN_OR_RETURN(Stream s, StreamOfLocked(stream));
  SWAPPLAN_ASSIGN_OR_RETURN(void* p, Host().AllocAsync(bytes, s));
  allocs_[reinterpret_cast<uintptr_t>(p)] = Alloc{bytes};
  return p;
}

std::string FakeDevice::ReadersOf(uintptr_t p, int64_t n,
                                  const std::vector<InflightCopy>& copies) const {
  std::vector<std::string> who;
  for (const InflightCopy& c : copies) {
    if (Overlap(p, n, c.src, c.bytes) || Overlap(p, n, c.dst, c.bytes)) {
      who.push_back(absl::StrCat("copy #", c.seq, " (", Dir(c.direction), " of ", c.bytes,
                                 " bytes on stream ", c.stream, ")"));
    }
  }
  return absl::StrJoin(who, ", ");
}

absl::Status FakeDevice::Free(void* ptr, void* stream) {
  HostBackend* host;
  Stream s;
  int64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = allocs_.find(p);
    if (it == allocs_.end()) {
      const std::string what = absl::StrCat(
          "free of ", Hex(ptr), ", which is not a live device allocation (a double free or a "
          "use after free)");
      violations_.push_back(what);
      return WithRule(absl::InvalidArgumentError(what), kRuleBroken);
    }
    if (it->second.free_pending) {
      const std::string what = absl::StrCat("double free of ", Hex(ptr),
                                            ": its free is already queued on a stream");
      violations_.push_back(what);
      return WithRule(absl::InvalidArgumentError(what), kRuleBroken);
    }
    SWAPPLAN_ASSIGN_OR_RETURN(s, StreamOfLocked(stream));
    bytes = it->second.bytes;
    host = &Host();
    if (IsDefault(stream) && config_.worker_compute == 0) {
      // The caller's stream: the free runs now.
      const std::string readers = ReadersOf(p, bytes, issued_);
      if (!readers.empty()) {
        const std::string what = absl::StrCat(
            "free of device memory ", Hex(ptr), " (", bytes, " bytes) on the default stream while ",
            readers, " still uses it: its bytes can be handed out and overwritten under the copy");
        violations_.push_back(what);
        return WithRule(absl::FailedPreconditionError(what), kRuleBroken);
      }
      allocs_.erase(it);
    } else {
      it->second.free_pending = true;
    }
  }
  if (!(IsDefault(stream) && config_.worker_compute == 0)) {
    const int32_t sid = IsDefault(stream) ? 0 : StreamId(stream);
    SWAPPLAN_RETURN_IF_ERROR(host->LaunchHostFunc(s, [this, ptr, bytes, sid] {
      std::lock_guard<std::mutex> lock(mu_);
      const auto p = reinterpret_cast<uintptr_t>(ptr);
      const std::string readers = ReadersOf(p, bytes, inflight_);
      if (!readers.empty()) {
        violations_.push_back(absl::StrCat("free of device memory ", Hex(ptr), " (", bytes,
                                           " bytes) runs on stream ", sid, " while ", readers,
                                           " still uses it"));
      }
      allocs_.erase(p);
    }));
  }
  return host->FreeAsync(ptr, s);
}

absl::StatusOr<void*> FakeDevice::MallocHost(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  SWAPPLAN_ASSIGN_OR_RETURN(void* p, Host().HostAlloc(bytes));
  pinned_[reinterpret_cast<uintptr_t>(p)] = bytes;
  return p;
}

absl::Status FakeDevice::FreeHost(void* ptr) {
  HostBackend* host;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = pinned_.find(p);
    if (it == pinned_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("fake device: ", Hex(ptr), " is not a pinned block"));
    }
    const std::string users = ReadersOf(p, it->second, issued_);
    if (!users.empty()) {
      const std::string what = absl::StrCat("free of pinned block ", Hex(ptr), " while ", users,
                                            " still uses it");
      violations_.push_back(what);
      return WithRule(absl::FailedPreconditionError(what), kRuleBroken);
    }
    pinned_.erase(it);
    host = &Host();
  }
  return host->HostFree(ptr);
}

std::string FakeDevice::CopyConflict(const InflightCopy& c) const {
  for (const InflightCopy& x : inflight_) {
    const std::string other = absl::StrCat("copy #", x.seq, " (", Dir(x.direction), " of ",
                                           x.bytes, " bytes on stream ", x.stream, ")");
    const std::string self = absl::StrCat("copy #", c.seq, " (", Dir(c.direction), " of ",
                                          c.bytes, " bytes on stream ", c.stream, ")");
    if (Overlap(c.dst, c.bytes, x.src, x.bytes)) {
      return absl::StrCat(self, " writes ", Hex(reinterpret_cast<void*>(c.dst)),
                          ", memory that ", other, " still reads");
    }
    if (Overlap(c.dst, c.bytes, x.dst, x.bytes)) {
      return absl::StrCat(self, " writes ", Hex(reinterpret_cast<void*>(c.dst)),
                          ", memory that ", other, " is still writing");
    }
    if (Overlap(c.src, c.bytes, x.dst, x.bytes)) {
      return absl::StrCat(self, " reads ", Hex(reinterpret_cast<void*>(c.src)),
                          ", memory that ", other, " is still writing");
    }
  }
  return "";
}

absl::Status FakeDevice::Copy(void* dst, const void* src, int64_t bytes, Direction direction,
                              void* stream, bool align64) {
  HostBackend* host;
  Stream s;
  InflightCopy c;
  bool foreign = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    SWAPPLAN_ASSIGN_OR_RETURN(s, StreamOfLocked(stream));
    host = &Host();
    auto broken = [&](absl::Status st) {
      violations_.push_back(std::string(st.message()));
      return WithRule(std::move(st), kRuleBroken);
    };
    if (align64 && (reinterpret_cast<uintptr_t>(dst) % 64 != 0 ||
                    reinterpret_cast<uintptr_t>(src) % 64 != 0)) {
      return broken(absl::InvalidArgumentError(absl::StrCat(
          Dir(direction), " copy of ", bytes, " bytes from ", Hex(src), " to ", Hex(dst),
          ": an address is not 64-byte aligned")));
    }
    const auto h = reinterpret_cast<uintptr_t>(direction == Direction::kDeviceToHost ? dst : src);
    const auto d = reinterpret_cast<uintptr_t>(direction == Direction::kDeviceToHost ? src : dst);
    if (!InPinned(h, bytes)) {
      return broken(absl::InvalidArgumentError(absl::StrCat(
          "pageable host memory given to an async copy: ", Dir(direction), " copy of ", bytes,
          " bytes uses host memory ", Hex(reinterpret_cast<void*>(h)),
          " outside every pinned block")));
    }
    if (InPinned(d, bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fake device: the device side ", Hex(reinterpret_cast<void*>(d)), " of a ",
          Dir(direction), " copy is pinned host memory"));
    }
    if (AllocationOf(d, bytes, nullptr) == nullptr) {
      if (config_.allow_foreign_device_memory == 0) {
        return broken(absl::InvalidArgumentError(absl::StrCat(
            "use after free: ", Dir(direction), " copy of ", bytes, " bytes uses device memory ",
            Hex(reinterpret_cast<void*>(d)), ", which is not inside a live device allocation")));
      }
      foreign = true;
    }
    c = InflightCopy{seq_ + 1, IsDefault(stream) ? 0 : streams_[stream], direction,
                     reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), bytes};
    issued_.push_back(c);
  }
  auto drop_issued = [this, seq = c.seq] {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(issued_, [seq](const InflightCopy& x) { return x.seq == seq; });
  };
  const uintptr_t dev = direction == Direction::kDeviceToHost ? c.src : c.dst;
  absl::Status launched = host->LaunchHostFunc(s, [this, c, dev, foreign] {
    std::lock_guard<std::mutex> lock(mu_);
    if (!foreign && AllocationOf(dev, c.bytes, nullptr) == nullptr) {
      violations_.push_back(absl::StrCat("use after free: copy #", c.seq, " (", Dir(c.direction),
                                         " on stream ", c.stream, ") runs after its device memory ",
                                         Hex(reinterpret_cast<void*>(dev)), " was freed"));
    }
    if (std::string conflict = CopyConflict(c); !conflict.empty()) {
      violations_.push_back(conflict);
    }
    inflight_.push_back(c);
  });
  if (!launched.ok()) {
    drop_issued();
    return launched;
  }
  absl::Status st = host->CopyAsync(dst, src, bytes, direction, s);
  absl::Status done = host->LaunchHostFunc(s, [this, seq = c.seq] {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(inflight_, [seq](const InflightCopy& x) { return x.seq == seq; });
    std::erase_if(issued_, [seq](const InflightCopy& x) { return x.seq == seq; });
  });
  if (!done.ok()) drop_issued();
  return st.ok() ? done : st;
}

absl::StatusOr<MemInfo> FakeDevice::Info() {
  std::lock_guard<std::mutex> lock(mu_);
  return Host().GetMemInfo();
}

absl::Status FakeDevice::InjectFault(const FaultSpec& fault) {
  std::lock_guard<std::mutex> lock(mu_);
  return Host().InjectFault(fault);
}

void FakeDevice::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  Host().ClearFaults();
}

std::string FakeDevice::Violations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return absl::StrJoin(violations_, "\n");
}

std::string FakeDevice::CallLog() const {
  std::lock_guard<std::mutex> lock(mu_);
  return absl::StrJoin(log_, "\n");
}

int64_t FakeDevice::CallCount(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(name);
  return it == counts_.end() ? 0 : it->second;
}

HostBackendCounters FakeDevice::Counters() {
  std::lock_guard<std::mutex> lock(mu_);
  return Host().counters();
}

std::vector<CopyLogEntry> FakeDevice::CopyLog() {
  std::lock_guard<std::mutex> lock(mu_);
  return Host().CopyLog();
}

int64_t FakeDevice::LogCall(const char* name, const std::string& args, int32_t code) {
  std::lock_guard<std::mutex> lock(mu_);
  ++seq_;
  ++counts_[name];
  if (log_.size() < kMaxLogLines) {
    log_.push_back(absl::StrCat(seq_, " ", name, args.empty() ? "" : " ", args, " -> ", code));
  }
  return seq_;
}

}  // namespace swapplan::runtime::fake

using swapplan::runtime::fake::FakeDevice;

extern "C" {

void swapplan_fake_default_config(swapplan_fake_config* c) {
  if (c == nullptr) return;
  *c = swapplan_fake_config{};
  c->capacity_bytes = int64_t{1} << 30;
  c->h2d_bytes_per_s = 10e9;
  c->d2h_bytes_per_s = 10e9;
  c->copy_latency_ns = 10'000;
  c->copy_engines = 2;
  c->timed_copies = 1;
}

int32_t swapplan_fake_reset(const swapplan_fake_config* config) {
  swapplan_fake_config c;
  swapplan_fake_default_config(&c);
  if (config != nullptr) c = *config;
  absl::Status st = FakeDevice::Get().Reset(c);
  if (st.ok()) return 0;
  swapplan::runtime::fake::g_control_error = std::string(st.message());
  return 1;
}

const char* swapplan_fake_last_error(void) {
  return swapplan::runtime::fake::g_control_error.c_str();
}

int32_t swapplan_fake_inject_fault(int32_t kind, int32_t direction, int32_t skip, int32_t count,
                                   double slow_factor) {
  using swapplan::runtime::FaultKind;
  if (kind < 0 || kind > 2 || direction < -1 || direction > 1) {
    swapplan::runtime::fake::g_control_error = "inject_fault: unknown kind or direction";
    return 1;
  }
  swapplan::runtime::FaultSpec f;
  f.kind = static_cast<FaultKind>(kind);
  f.any_direction = direction < 0;
  f.direction = direction == 1 ? swapplan::Direction::kHostToDevice
                               : swapplan::Direction::kDeviceToHost;
  f.skip = skip;
  f.count = count;
  f.slow_factor = slow_factor;
  absl::Status st = FakeDevice::Get().InjectFault(f);
  if (st.ok()) return 0;
  swapplan::runtime::fake::g_control_error = std::string(st.message());
  return 1;
}

void swapplan_fake_clear_faults(void) { FakeDevice::Get().ClearFaults(); }

size_t swapplan_fake_violations(char* buf, size_t capacity) {
  return swapplan::runtime::fake::CopyOut(FakeDevice::Get().Violations(), buf, capacity);
}

size_t swapplan_fake_call_log(char* buf, size_t capacity) {
  return swapplan::runtime::fake::CopyOut(FakeDevice::Get().CallLog(), buf, capacity);
}

int64_t swapplan_fake_call_count(const char* name) {
  return name == nullptr ? 0 : FakeDevice::Get().CallCount(name);
}

void swapplan_fake_counters(int64_t* out) {
  if (out == nullptr) return;
  const swapplan::runtime::HostBackendCounters c = FakeDevice::Get().Counters();
  const int64_t v[12] = {c.event_queries, c.event_synchronizes, c.stream_synchronizes,
                         c.stream_waits, c.device_allocs, c.device_frees, c.host_allocs,
                         c.host_frees, c.copies, c.failed_copies, c.arena_in_use_bytes,
                         c.arena_peak_bytes};
  std::memcpy(out, v, sizeof(v));
}

size_t swapplan_fake_copy_log(swapplan_fake_copy* out, size_t capacity) {
  const std::vector<swapplan::runtime::CopyLogEntry> log = FakeDevice::Get().CopyLog();
  for (size_t k = 0; k < log.size() && k < capacity && out != nullptr; ++k) {
    const swapplan::runtime::CopyLogEntry& e = log[k];
    out[k] = swapplan_fake_copy{e.stream, static_cast<int32_t>(e.direction), e.bytes, e.issue_ns,
                                e.start_ns, e.end_ns, e.ok ? 1 : 0};
  }
  return log.size();
}

}  // extern "C"
