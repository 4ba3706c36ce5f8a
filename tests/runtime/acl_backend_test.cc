// The Ascend backend (swapplan/runtime/acl_backend.h) against the fake ACL
// runtime (libfake_ascendcl.so, fake_device.h): the 64-byte alignment rule,
// the device's event limit and the runtime's reuse of events, the
// stream-ordered block cache, failed copies as ACL reports them, the calls
// it makes. Tag [ascend]: run by the backend-ascend suite. Round numbers:
// 100-byte tensors, 1 byte/ns links.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "fake_log.h"
#include "absl/strings/str_join.h"
#include "runtime/acl_api.h"
#include "runtime_test_support.h"
#include "swapplan/runtime/acl_backend.h"
#include "swapplan/runtime/event_pool.h"
#include "swapplan/runtime/pinned_pool.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::testing {
namespace {

bool Has(absl::string_view text, absl::string_view part) {
  return text.find(part) != absl::string_view::npos;
}

TestBackend Ascend(const DeviceSpec& spec) {
  TestBackend tb = MakeTestBackend(spec, TestBackendKind::kAscend);
  INFO(tb.status.message());
  REQUIRE(tb.status.ok());
  return tb;
}

TEST_CASE("ascend backend: a missing library or symbol is a clear error naming it", "[ascend]") {
  absl::StatusOr<std::unique_ptr<Backend>> none =
      CreateAclBackend({.library = "/nonexistent/libascendcl.so"});
  REQUIRE_FALSE(none.ok());
  CHECK(absl::IsUnavailable(none.status()));
  CHECK(Has(none.status().message(), "cannot load the Ascend runtime (libascendcl)"));
  CHECK(Has(none.status().message(), "/nonexistent/libascendcl.so"));
  CHECK(Has(none.status().message(), "SWAPPLAN_RT_ASCEND_LIBRARY"));
  const std::string cuda = FakeLibraryPath(TestBackendKind::kCuda);
  absl::StatusOr<std::unique_ptr<Backend>> wrong = CreateAclBackend({.library = cuda});
  REQUIRE_FALSE(wrong.ok());
  CHECK(Has(wrong.status().message(), "symbol aclInit not found"));
  CHECK(absl::IsInvalidArgument(CreateAclBackend({.max_events = 1}).status()));
}

TEST_CASE("ascend backend: copies are 64-byte aligned, checked before ACL sees them", "[ascend]") {
  TestBackend tb = Ascend({.capacity_bytes = 1000});
  Backend& b = *tb.backend;
  void* dev = *b.AllocAsync(128, b.ComputeStream());
  char* host = static_cast<char*>(*b.HostAlloc(4096));
  absl::Status st = b.CopyAsync(host + 8, dev, 100, Direction::kDeviceToHost, b.ComputeStream());
  CHECK(absl::IsInvalidArgument(st));
  CHECK(Has(st.message(), "is not 64-byte aligned (aclrtMemcpyAsync's alignment rule)"));
  CHECK(tb.device->CallCount("aclrtMemcpyAsync") == 0);
  // The fake enforces the rule too: a misaligned call, as a driver sees it.
  const std::string path = FakeLibraryPath(TestBackendKind::kAscend);
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  auto memcpy_async = reinterpret_cast<acl::MemcpyAsyncFn>(dlsym(lib, "aclrtMemcpyAsync"));
  REQUIRE(memcpy_async != nullptr);
  CHECK(memcpy_async(host + 8, 100, dev, 100, acl::kMemcpyDeviceToHost, nullptr) ==
        acl::kErrorInvalidParam);
  CHECK(Has(tb.device->Violations(), "an address is not 64-byte aligned"));
  dlclose(lib);
  REQUIRE(b.HostFree(host).ok());
}

TEST_CASE("ascend backend: the device's event limit; the runtime reuses its events", "[ascend]") {
  SECTION("the backend reports the limit, tagged") {
    TestBackend tb = Ascend({.capacity_bytes = 1000, .max_events = 4});
    Backend& b = *tb.backend;  // holds 1 internal event
    std::vector<Event> events;
    for (int i = 0; i < 3; ++i) events.push_back(*b.CreateEvent());
    absl::StatusOr<Event> fifth = b.CreateEvent();
    REQUIRE_FALSE(fifth.ok());
    CHECK(RuleOf(fifth.status()) == "event-limit");
    CHECK(Has(fifth.status().message(), "aclrtCreateEventExWithFlag(ACL_EVENT_SYNC)"));
    CHECK(Has(fifth.status().message(), "ACL_ERROR_RT_NO_EVENT_RESOURCE (207007)"));
    for (Event e : events) REQUIRE(b.DestroyEvent(e).ok());
  }
  SECTION("free pinned buffers give their reuse events back at the limit") {
    // 4 events on the device, 1 the backend's: the runtime's pools get 3.
    TestBackend tb = Ascend({.capacity_bytes = 1000, .max_events = 4});
    Backend& b = *tb.backend;
    EventPool events(&b);
    PinnedPool pool(&b, &events, {.block_bytes = 1 << 16});
    events.SetReclaimer([&pool] { pool.ReclaimEvents(); });
    // Three 100-byte buffers released with a recorded event each: the three
    // events are held by free buffers (their reuse fences), none by a copy.
    std::vector<PinnedBuffer> buffers;
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<PinnedBuffer> buf = pool.Acquire(100, b.ComputeStream());
      REQUIRE(buf.ok());
      buffers.push_back(*buf);
    }
    for (const PinnedBuffer& buf : buffers) {
      absl::StatusOr<EventId> ev = events.Acquire();
      REQUIRE(ev.ok());
      REQUIRE(b.RecordEvent(events.event(*ev), b.ComputeStream()).ok());
      pool.Release(buf, *ev);
    }
    CHECK(events.in_use() == 3);
    CHECK(events.reclaims() == 0);
    // A fourth: ACL refuses (event-limit); the reclaimer drops the fences of
    // the finished records and the pool hands one of those events out.
    absl::StatusOr<EventId> more = events.Acquire();
    INFO(more.status().message());
    REQUIRE(more.ok());
    CHECK(events.reclaims() == 1);
    CHECK(events.created() == 3);
    CHECK(events.in_use() == 1);
    // The backend's, the pool's 3, the refused one.
    CHECK(tb.device->CallCount("aclrtCreateEventExWithFlag") == 5);
    events.Unref(*more);
  }
  SECTION("200 training iterations with policies and Algorithm 3 within the event limit") {
    // Layers of 1000-byte activations under a 6000-byte budget (the
    // randomized test's program): passive swaps in warm-up, then planned
    // swaps; every swap takes events from the pool and gives them back, so
    // the events in existence stay at the run's peak in use: 12 (one per
    // layer, measured without a limit) plus the backend's own fit in 13.
    EnvOptions o;
    o.backend = TestBackendKind::kAscend;
    o.capacity_bytes = 6000;
    o.max_events = 13;
    o.runtime.tracker.warmup_iterations = 1;
    o.runtime.tracker.genpolicy_iterations = 1;
    o.runtime.work_dir = TempDir("ascend-events");
    Env env = MakeEnv(o);
    REQUIRE(env.rt != nullptr);
    auto made = std::make_shared<std::vector<PlannedPolicy>>();
    env.rt->SetPolicyProvider(ChameleonProvider(made));
    Runner run(env);
    const Program p = LayeredProgram(12, 1000, 100);
    REQUIRE(run.AllocatePersistent(p).ok());
    for (int i = 0; i < 200; ++i) {
      absl::Status st = run.Iteration(p);
      INFO("iteration " << i << ": " << st.message());
      REQUIRE(st.ok());
    }
    INFO(absl::StrJoin(run.mismatches(), "\n"));
    CHECK(run.mismatches().empty());
    const RuntimeStats s = env.rt->Stats();
    CHECK(s.counts.policy_swap_outs + s.counts.passive_swap_outs > 200);
    INFO("events created " << s.events_created << ", reclaims " << s.event_reclaims);
    CHECK(s.events_created <= 12);
  }
}

TEST_CASE("ascend backend: stream-ordered block cache; emptied when the device is full",
          "[ascend]") {
  TestBackend tb = Ascend({.capacity_bytes = 1000});
  Backend& b = *tb.backend;
  const Stream compute = b.ComputeStream();
  // Freed on the compute stream, taken back by the next allocation there.
  void* a = *b.AllocAsync(400, compute);
  REQUIRE(b.FreeAsync(a, compute).ok());
  absl::StatusOr<void*> again = b.AllocAsync(400, compute);
  REQUIRE(again.ok());
  CHECK(*again == a);
  CHECK(tb.device->CallCount("aclrtMalloc") == 1);
  CHECK(b.GetMemInfo()->free_bytes == 600);
  // B (300) cached: the device holds 700. 500 more fit only once the cache
  // is emptied: the freeing stream is synchronised, B goes back (aclrtFree).
  void* bb = *b.AllocAsync(300, compute);
  REQUIRE(b.FreeAsync(bb, compute).ok());
  CHECK(b.GetMemInfo()->free_bytes == 600);  // 300 free + 300 cached
  const int64_t syncs = tb.device->CallCount("aclrtSynchronizeStream");
  absl::StatusOr<void*> c = b.AllocAsync(500, compute);
  REQUIRE(c.ok());
  CHECK(tb.device->CallCount("aclrtFree") == 1);
  CHECK(tb.device->CallCount("aclrtSynchronizeStream") == syncs + 1);
  // Beyond the device even then: the runtime's OOM, naming the call.
  absl::StatusOr<void*> over = b.AllocAsync(200, compute);
  REQUIRE_FALSE(over.ok());
  CHECK(RuleOf(over.status()) == "out-of-memory");
  CHECK(Has(over.status().message(), "aclrtMalloc(200 bytes, ACL_MEM_MALLOC_HUGE_FIRST)"));
  CHECK(Has(over.status().message(), "ACL_ERROR_RT_MEMORY_ALLOCATION (207001)"));
  // Freed on another stream: taken by the compute stream after a wait for an
  // event recorded on that stream.
  absl::StatusOr<Stream> side = b.CreateStream(StreamPriority::kNormal);
  REQUIRE(side.ok());
  REQUIRE(b.FreeAsync(*c, *side).ok());
  absl::StatusOr<void*> d = b.AllocAsync(500, compute);
  REQUIRE(d.ok());
  CHECK(*d == *c);
  const std::vector<Call> log = ParseCallLog(tb.device->CallLog());
  const int64_t rec = FindCall(log, 0, "aclrtRecordEvent", {{"stream", "1"}});
  REQUIRE(rec >= 0);
  CHECK(FindCall(log, rec, "aclrtStreamWaitEvent", {{"stream", "0"}, {"event", log[rec].arg("event")}}) >
        rec);
  REQUIRE(b.DestroyStream(*side).ok());
}

TEST_CASE("ascend backend: a failed copy is 'not ready' to a query, an error to a synchronize",
          "[ascend]") {
  TestBackend tb = Ascend({.capacity_bytes = 1000});
  Backend& b = *tb.backend;
  REQUIRE(tb.device->InjectFault({.kind = FaultKind::kCopyError}).ok());
  absl::StatusOr<Stream> out = b.CreateStream(StreamPriority::kNormal);
  REQUIRE(out.ok());
  void* dev = *b.AllocAsync(100, b.ComputeStream());
  char* host = static_cast<char*>(*b.HostAlloc(4096));
  REQUIRE(b.CopyAsync(host, dev, 100, Direction::kDeviceToHost, *out).ok());
  absl::StatusOr<Event> done = b.CreateEvent();
  REQUIRE(b.RecordEvent(*done, *out).ok());
  absl::Status sync = b.SynchronizeEvent(*done);
  CHECK(absl::IsUnavailable(sync));
  CHECK(Has(sync.message(), "aclrtSynchronizeEvent(event 0x"));
  CHECK(Has(sync.message(), "ACL_ERROR_RT_INTERNAL_ERROR (507000): fake ascendcl: injected copy "
                            "error: D2H copy of 100 bytes"));
  absl::StatusOr<bool> q = b.QueryEvent(*done);
  REQUIRE(q.ok());
  CHECK_FALSE(*q);
  REQUIRE(b.DestroyEvent(*done).ok());
  REQUIRE(b.DestroyStream(*out).ok());
  REQUIRE(b.HostFree(host).ok());
}

}  // namespace
}  // namespace swapplan::runtime::testing
