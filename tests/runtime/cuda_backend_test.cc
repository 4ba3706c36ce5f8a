// The CUDA backend (swapplan/runtime/cuda_backend.h) against the fake CUDA
// runtime (libfake_cudart.so, fake_device.h): the vendor calls it makes and
// their arguments, read from the fake's call log; its errors; the rules the
// fake enforces; the real libcudart's symbols where the toolkit is
// installed. Tag [cuda]: run by the backend-cuda suite. Round numbers: 100-
// byte tensors, 1 byte/ns links unless a slow link is the point.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_log.h"
#include "runtime/cuda_api.h"
#include "runtime_test_support.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/runtime/cuda_backend.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::testing {
namespace {

bool Has(absl::string_view text, absl::string_view part) {
  return text.find(part) != absl::string_view::npos;
}

TestBackend Cuda(const DeviceSpec& spec) {
  TestBackend tb = MakeTestBackend(spec, TestBackendKind::kCuda);
  INFO(tb.status.message());
  REQUIRE(tb.status.ok());
  return tb;
}

TEST_CASE("cuda backend: a missing library or symbol is a clear error naming it", "[cuda]") {
  absl::StatusOr<std::unique_ptr<Backend>> none =
      CreateCudaBackend({.library = "/nonexistent/libcudart.so.13"});
  REQUIRE_FALSE(none.ok());
  CHECK(absl::IsUnavailable(none.status()));
  CHECK(Has(none.status().message(), "cannot load the CUDA runtime (libcudart)"));
  CHECK(Has(none.status().message(), "/nonexistent/libcudart.so.13"));
  CHECK(Has(none.status().message(), "SWAPPLAN_RT_CUDA_LIBRARY"));
  // A library without the CUDA symbols (the fake ACL runtime).
  const std::string acl = FakeLibraryPath(TestBackendKind::kAscend);
  REQUIRE_FALSE(acl.empty());
  absl::StatusOr<std::unique_ptr<Backend>> wrong = CreateCudaBackend({.library = acl});
  REQUIRE_FALSE(wrong.ok());
  CHECK(Has(wrong.status().message(), "symbol cudaSetDevice not found"));
  CHECK(Has(wrong.status().message(), acl));
  // Bad options.
  CHECK(absl::IsInvalidArgument(CreateCudaBackend({.device = -1}).status()));
}

TEST_CASE("cuda backend: priorities, events without timing, one pinned block, release after "
          "the event wait",
          "[cuda]") {
  EnvOptions o;
  o.backend = TestBackendKind::kCuda;
  Env env = MakeEnv(o);
  REQUIRE(env.rt != nullptr);
  absl::StatusOr<Trace> trace = BuildTrace(ToyProgram());
  REQUIRE(trace.ok());
  Policy policy = ToyPolicy();
  policy.fingerprint = ComputeFingerprint(*trace, 0);
  REQUIRE(env.rt->LoadPolicyForTrace(policy, *trace, 0).ok());
  Runner run(env);
  REQUIRE(run.Iteration(ToyProgram()).ok());
  CHECK(run.mismatches().empty());
  const std::vector<Call> log = ParseCallLog(env.device->CallLog());

  // The device's range is [least 0, greatest -5]: copy lanes at 0, the two
  // demand lanes (Algorithm 3's swap-outs, passive swap-ins) at -5.
  REQUIRE(FindCall(log, 0, "cudaDeviceGetStreamPriorityRange") >= 0);
  std::vector<std::string> priorities;
  for (const Call& c : log) {
    if (c.name == "cudaStreamCreateWithPriority") {
      CHECK(c.arg("flags") == "1");  // cudaStreamNonBlocking
      priorities.push_back(c.arg("priority"));
    }
  }
  CHECK(priorities == std::vector<std::string>{"0", "0", "-5", "-5"});
  // Every event without timing; the pool's release threshold kept at all.
  int events = 0;
  for (const Call& c : log) {
    if (c.name == "cudaEventCreateWithFlags") {
      CHECK(c.arg("flags") == "2");  // cudaEventDisableTiming
      ++events;
    }
  }
  CHECK(events >= 2);
  CHECK(FindCall(log, 0, "cudaMemPoolSetAttribute",
                 {{"attr", "4"}, {"value", "18446744073709551615"}}) >= 0);
  // Pinned memory: one 64 MiB block for the whole run, not one per swap.
  CHECK(env.device->CallCount("cudaHostAlloc") == 1);
  CHECK(env.rt->Stats().pinned.host_allocs == 1);

  // A's copy out (100 bytes, DeviceToHost), the event recorded after it on
  // the same stream, the compute stream's wait for that event, then
  // cudaFreeAsync of A's block on the compute stream — no host poll between.
  const int64_t copy = FindCall(log, 0, "cudaMemcpyAsync", {{"kind", "2"}, {"bytes", "100"}});
  REQUIRE(copy >= 0);
  const std::string a = log[copy].arg("src");
  const std::string out_stream = log[copy].arg("stream");
  CHECK(out_stream == "1");
  const int64_t done = FindCall(log, copy + 1, "cudaEventRecord", {{"stream", out_stream}});
  REQUIRE(done > copy);
  const std::string event = log[done].arg("event");
  const int64_t wait =
      FindCall(log, done + 1, "cudaStreamWaitEvent", {{"stream", "0"}, {"event", event}});
  const int64_t free = FindCall(log, done + 1, "cudaFreeAsync", {{"ptr", a}, {"stream", "0"}});
  REQUIRE(wait > done);
  REQUIRE(free > wait);
  CHECK(FindCall(log, copy, "cudaFreeAsync", {{"ptr", a}}) == free);  // not freed earlier
  for (int64_t k = wait + 1; k < free; ++k) {
    CHECK(log[k].name != "cudaEventQuery");
    CHECK(log[k].name != "cudaEventSynchronize");
    CHECK(log[k].name != "cudaStreamSynchronize");
  }
}

TEST_CASE("cuda backend: every error names the call, its arguments and the CUDA code", "[cuda]") {
  TestBackend tb = Cuda({.capacity_bytes = 1000});
  Backend& b = *tb.backend;
  const Stream compute = b.ComputeStream();
  // Beyond the device: cudaErrorMemoryAllocation is the runtime's OOM.
  absl::StatusOr<void*> big = b.AllocAsync(2000, compute);
  REQUIRE_FALSE(big.ok());
  CHECK(RuleOf(big.status()) == "out-of-memory");
  CHECK(Has(big.status().message(), "cudaMallocAsync(2000 bytes, stream 0x0)"));
  CHECK(Has(big.status().message(), "cudaErrorMemoryAllocation (2)"));
  // Pageable host memory never reaches cudaMemcpyAsync.
  void* dev = *b.AllocAsync(100, compute);
  std::vector<char> pageable(100);
  absl::Status pg = b.CopyAsync(pageable.data(), dev, 100, Direction::kDeviceToHost, compute);
  CHECK(absl::IsInvalidArgument(pg));
  CHECK(Has(pg.message(), "outside every pinned block (cudaHostAlloc)"));
  CHECK(tb.device->CallCount("cudaMemcpyAsync") == 0);
  // A wait on an event never recorded: the fake refuses (on a GPU the wait
  // would order nothing); the status names the call, the code and why.
  absl::StatusOr<Event> e = b.CreateEvent();
  REQUIRE(e.ok());
  absl::Status w = b.StreamWaitEvent(compute, *e);
  CHECK(absl::IsUnavailable(w));
  CHECK(Has(w.message(), "cudaStreamWaitEvent(stream 0x0, event 0x"));
  CHECK(Has(w.message(), "cudaErrorIllegalState (401): fake cudart: stream 0 waits on event 1, "
                         "which was never recorded"));
  CHECK(Has(tb.device->Violations(), "which was never recorded"));
  // Unknown handles.
  absl::Status bad = b.RecordEvent(Event{&pageable}, compute);
  CHECK(Has(bad.message(), "cudaErrorInvalidResourceHandle (400)"));
  REQUIRE(b.DestroyEvent(*e).ok());
}

// [races]: the copy in reads the host buffer while the copy out writes it —
// the broken rule itself, a real data race that ThreadSanitizer reports, so
// the TSan build leaves this case out (tests/meson.build).
TEST_CASE("cuda fake: a free of memory a copy still reads, and a copy into memory being read, "
          "are caught",
          "[cuda][races]") {
  // 100 bytes at 400 bytes/s: 250 ms on the engine (the copy in starts
  // while it runs, even on a loaded machine).
  TestBackend tb = Cuda({.capacity_bytes = 1000, .h2d_bytes_per_s = 4e2, .d2h_bytes_per_s = 4e2});
  Backend& b = *tb.backend;
  const Stream compute = b.ComputeStream();
  absl::StatusOr<Stream> out = b.CreateStream(StreamPriority::kNormal);
  absl::StatusOr<Stream> in = b.CreateStream(StreamPriority::kNormal);
  REQUIRE((out.ok() && in.ok()));
  void* dev = *b.AllocAsync(100, compute);
  void* other = *b.AllocAsync(100, compute);
  char* host = static_cast<char*>(*b.HostAlloc(4096));
  REQUIRE(b.CopyAsync(host, dev, 100, Direction::kDeviceToHost, *out).ok());
  absl::StatusOr<Event> done = b.CreateEvent();
  REQUIRE(done.ok());
  REQUIRE(b.RecordEvent(*done, *out).ok());
  // Rule 2 broken: freed on the compute stream without waiting for the copy.
  absl::Status early = b.FreeAsync(dev, compute);
  CHECK(absl::IsUnavailable(early));
  CHECK(Has(early.message(), "cudaFreeAsync(0x"));
  CHECK(Has(early.message(), "cudaErrorIllegalState (401)"));
  CHECK(Has(early.message(), "while copy #"));
  CHECK(Has(early.message(), "(D2H of 100 bytes on stream 1) still uses it"));
  // Rule 1 broken: a copy in from the host buffer the copy out still fills.
  REQUIRE(b.CopyAsync(other, host, 100, Direction::kHostToDevice, *in).ok());
  REQUIRE(b.SynchronizeStream(*in).ok());
  // Whichever copy the fake's engines start second reports the conflict: the
  // copy in (it reads what the copy out still writes), or — when a loaded
  // machine schedules the copy-out worker late — the copy out (it writes
  // what the copy in still reads).
  const std::string broken = tb.device->Violations();
  INFO(broken);
  CHECK((Has(broken, "(H2D of 100 bytes on stream 2) reads 0x") ||
         (Has(broken, "(D2H of 100 bytes on stream 1) writes 0x") &&
          Has(broken, "(H2D of 100 bytes on stream 2) still reads"))));
  CHECK(Has(broken, "that copy #"));
  // Done right: wait for the copy's event, then free.
  REQUIRE(b.StreamWaitEvent(compute, *done).ok());
  CHECK(b.FreeAsync(dev, compute).ok());
  // Freed memory is not device memory any more.
  absl::Status uaf = b.CopyAsync(host, dev, 100, Direction::kDeviceToHost, *out);
  CHECK(Has(uaf.message(), "use after free"));
  REQUIRE(b.DestroyEvent(*done).ok());
  REQUIRE(b.DestroyStream(*out).ok());
  REQUIRE(b.DestroyStream(*in).ok());
  REQUIRE(b.HostFree(host).ok());
}

TEST_CASE("cuda backend: the real libcudart has every symbol of the table", "[cuda]") {
  const char* real = std::getenv("SWAPPLAN_REAL_CUDART");
  if (real == nullptr || real[0] == '\0') {
    WARN("no CUDA toolkit found at configure time: the real libcudart was not checked");
    return;
  }
  absl::StatusOr<std::unique_ptr<internal::CudaApi>> api = internal::CudaApi::Load({real});
  INFO(api.status().message());
  REQUIRE(api.ok());
  CHECK((*api)->GetErrorName != nullptr);
  CHECK(std::string((*api)->GetErrorName(cuda::kErrorMemoryAllocation)) ==
        "cudaErrorMemoryAllocation");
  CHECK(std::string((*api)->GetErrorName(cuda::kErrorNotReady)) == "cudaErrorNotReady");
  // On a machine without a GPU or driver, creating the backend fails at the
  // first call, naming it; with a GPU it works.
  absl::StatusOr<std::unique_ptr<Backend>> b = CreateCudaBackend({.library = real});
  if (!b.ok()) {
    CHECK(absl::IsUnavailable(b.status()));
    CHECK(Has(b.status().message(), "CUDA backend: cudaSetDevice(0) ("));
    CHECK(Has(b.status().message(), "cudaError"));
    WARN("real libcudart loaded; no usable GPU: " << b.status().message());
  }
}

}  // namespace
}  // namespace swapplan::runtime::testing
