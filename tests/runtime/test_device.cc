#include "test_device.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "fake_control.h"
#include "swapplan/runtime/acl_backend.h"
#include "swapplan/runtime/cuda_backend.h"

namespace swapplan::runtime::testing {

namespace {

class HostTestDevice final : public TestDevice {
 public:
  explicit HostTestDevice(HostBackend* host) : host_(host) {}
  HostBackendCounters counters() const override { return host_->counters(); }
  std::vector<CopyLogEntry> CopyLog() const override { return host_->CopyLog(); }
  absl::Status InjectFault(const FaultSpec& f) override { return host_->InjectFault(f); }
  void ClearFaults() override { host_->ClearFaults(); }

 private:
  HostBackend* host_;  // owned by the runtime
};

// The control API of a fake vendor library (fake_control.h), resolved from
// a handle on the library the backend loads (dlopen hands out the same
// copy).
class FakeTestDevice final : public TestDevice {
 public:
  static absl::StatusOr<std::unique_ptr<FakeTestDevice>> Open(const std::string& path) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot load the fake ", path, ": ", dlerror()));
    }
    auto d = std::unique_ptr<FakeTestDevice>(new FakeTestDevice(h));
    if (!d->Bind("swapplan_fake_default_config", &d->default_config_) ||
        !d->Bind("swapplan_fake_reset", &d->reset_) ||
        !d->Bind("swapplan_fake_last_error", &d->last_error_) ||
        !d->Bind("swapplan_fake_inject_fault", &d->inject_) ||
        !d->Bind("swapplan_fake_clear_faults", &d->clear_) ||
        !d->Bind("swapplan_fake_violations", &d->violations_) ||
        !d->Bind("swapplan_fake_call_log", &d->call_log_) ||
        !d->Bind("swapplan_fake_call_count", &d->call_count_) ||
        !d->Bind("swapplan_fake_counters", &d->counters_) ||
        !d->Bind("swapplan_fake_copy_log", &d->copy_log_)) {
      return absl::UnavailableError(absl::StrCat(path, " lacks the fake control API"));
    }
    return d;
  }
  ~FakeTestDevice() override { dlclose(handle_); }

  absl::Status Reset(const DeviceSpec& spec, int32_t max_events) {
    swapplan_fake_config c;
    default_config_(&c);
    c.capacity_bytes = spec.capacity_bytes;
    c.h2d_bytes_per_s = spec.h2d_bytes_per_s;
    c.d2h_bytes_per_s = spec.d2h_bytes_per_s;
    c.copy_latency_ns = spec.copy_latency_ns;
    c.copy_engines = spec.copy_engines;
    c.worker_compute = spec.compute == ComputeStreamKind::kWorker ? 1 : 0;
    c.allow_foreign_device_memory = spec.allow_foreign_device_memory ? 1 : 0;
    c.max_events = max_events;
    if (reset_(&c) != 0) return absl::FailedPreconditionError(last_error_());
    return absl::OkStatus();
  }

  HostBackendCounters counters() const override {
    int64_t v[12];
    counters_(v);
    HostBackendCounters c;
    c.event_queries = v[0];
    c.event_synchronizes = v[1];
    c.stream_synchronizes = v[2];
    c.stream_waits = v[3];
    c.device_allocs = v[4];
    c.device_frees = v[5];
    c.host_allocs = v[6];
    c.host_frees = v[7];
    c.copies = v[8];
    c.failed_copies = v[9];
    c.arena_in_use_bytes = v[10];
    c.arena_peak_bytes = v[11];
    return c;
  }
  std::vector<CopyLogEntry> CopyLog() const override {
    std::vector<swapplan_fake_copy> raw(copy_log_(nullptr, 0));
    raw.resize(std::min(raw.size(), copy_log_(raw.data(), raw.size())));
    std::vector<CopyLogEntry> out;
    for (const swapplan_fake_copy& r : raw) {
      out.push_back({r.stream, static_cast<Direction>(r.direction), r.bytes, r.issue_ns,
                     r.start_ns, r.end_ns, r.ok != 0});
    }
    return out;
  }
  absl::Status InjectFault(const FaultSpec& f) override {
    const int32_t dir = f.any_direction ? -1 : static_cast<int32_t>(f.direction);
    if (inject_(static_cast<int32_t>(f.kind), dir, f.skip, f.count, f.slow_factor) != 0) {
      return absl::InvalidArgumentError(last_error_());
    }
    return absl::OkStatus();
  }
  void ClearFaults() override { clear_(); }
  std::string Violations() const override { return Text(violations_); }
  std::string CallLog() const override { return Text(call_log_); }
  int64_t CallCount(const std::string& name) const override { return call_count_(name.c_str()); }

 private:
  explicit FakeTestDevice(void* h) : handle_(h) {}
  template <typename F>
  bool Bind(const char* name, F* fn) {
    *fn = reinterpret_cast<F>(dlsym(handle_, name));
    return *fn != nullptr;
  }
  static std::string Text(size_t (*fn)(char*, size_t)) {
    std::string s(fn(nullptr, 0), '\0');
    fn(s.data(), s.size());
    s.resize(s.size() - 1);  // the NUL
    return s;
  }

  void* handle_;
  void (*default_config_)(swapplan_fake_config*) = nullptr;
  int32_t (*reset_)(const swapplan_fake_config*) = nullptr;
  const char* (*last_error_)() = nullptr;
  int32_t (*inject_)(int32_t, int32_t, int32_t, int32_t, double) = nullptr;
  void (*clear_)() = nullptr;
  size_t (*violations_)(char*, size_t) = nullptr;
  size_t (*call_log_)(char*, size_t) = nullptr;
  int64_t (*call_count_)(const char*) = nullptr;
  void (*counters_)(int64_t*) = nullptr;
  size_t (*copy_log_)(swapplan_fake_copy*, size_t) = nullptr;
};

}  // namespace

TestBackendKind CurrentTestBackend() {
  const char* env = std::getenv("SWAPPLAN_TEST_BACKEND");
  const std::string name = env != nullptr ? env : "";
  if (name.empty() || name == "host") return TestBackendKind::kHost;
  if (name == "cuda") return TestBackendKind::kCuda;
  if (name == "ascend") return TestBackendKind::kAscend;
  std::fprintf(stderr, "SWAPPLAN_TEST_BACKEND is '%s'; must be host, cuda or ascend\n",
               name.c_str());
  std::abort();
}

const char* TestBackendName(TestBackendKind kind) {
  switch (kind) {
    case TestBackendKind::kHost:
      return "host";
    case TestBackendKind::kCuda:
      return "cuda";
    case TestBackendKind::kAscend:
      return "ascend";
  }
  return "?";
}

std::string FakeLibraryPath(TestBackendKind kind) {
  const char* env = std::getenv(kind == TestBackendKind::kCuda ? "SWAPPLAN_FAKE_CUDART"
                                                               : "SWAPPLAN_FAKE_ASCENDCL");
  return env != nullptr ? env : "";
}

TestBackend MakeTestBackend(const DeviceSpec& spec, TestBackendKind kind) {
  TestBackend tb;
  if (kind == TestBackendKind::kHost) {
    HostBackendOptions o;
    o.device.capacity_bytes = spec.capacity_bytes;
    o.device.h2d_bandwidth_bytes_per_s = spec.h2d_bytes_per_s;
    o.device.d2h_bandwidth_bytes_per_s = spec.d2h_bytes_per_s;
    o.device.copy_latency_ns = spec.copy_latency_ns;
    o.device.copy_engines = spec.copy_engines;
    o.compute = spec.compute;
    o.copy_log = true;
    absl::StatusOr<std::unique_ptr<HostBackend>> b = HostBackend::Create(o);
    if (!b.ok()) {
      tb.status = b.status();
      return tb;
    }
    tb.device = std::make_unique<HostTestDevice>(b->get());
    tb.backend = std::move(*b);
    return tb;
  }
  const std::string path = FakeLibraryPath(kind);
  if (path.empty()) {
    tb.status = absl::FailedPreconditionError(
        absl::StrCat("no fake library for the ", TestBackendName(kind),
                     " backend: set SWAPPLAN_FAKE_CUDART / SWAPPLAN_FAKE_ASCENDCL"));
    return tb;
  }
  absl::StatusOr<std::unique_ptr<FakeTestDevice>> fake = FakeTestDevice::Open(path);
  if (!fake.ok()) {
    tb.status = fake.status();
    return tb;
  }
  const int32_t max_events =
      kind == TestBackendKind::kAscend ? (spec.max_events < 0 ? kAscendSuiteEventLimit
                                                              : spec.max_events)
                                       : 0;
  tb.status = (*fake)->Reset(spec, max_events);
  if (!tb.status.ok()) return tb;
  absl::StatusOr<std::unique_ptr<Backend>> b =
      kind == TestBackendKind::kCuda ? CreateCudaBackend({.library = path})
                                     : CreateAclBackend({.library = path});
  if (!b.ok()) {
    tb.status = b.status();
    return tb;
  }
  tb.backend = std::move(*b);
  tb.device = std::move(*fake);
  return tb;
}

}  // namespace swapplan::runtime::testing
