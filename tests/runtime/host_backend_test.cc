// The host backend (runtime/host_backend.h): device arena, streams, copy
// engines, events, faults. Round numbers: 1 byte/ns links, 100-byte blocks.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>
#include <memory>
#include <vector>

#include "swapplan/runtime/host_backend.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime {
namespace {

std::unique_ptr<HostBackend> Make(int64_t capacity, double bytes_per_s = 1e9,
                                  int64_t latency_ns = 0, int32_t engines = 2) {
  HostBackendOptions o;
  o.device.capacity_bytes = capacity;
  o.device.h2d_bandwidth_bytes_per_s = bytes_per_s;
  o.device.d2h_bandwidth_bytes_per_s = bytes_per_s;
  o.device.copy_latency_ns = latency_ns;
  o.device.copy_engines = engines;
  o.copy_log = true;
  absl::StatusOr<std::unique_ptr<HostBackend>> b = HostBackend::Create(o);
  REQUIRE(b.ok());
  return std::move(*b);
}

TEST_CASE("host arena: exact-byte capacity, an allocation beyond it fails as a device OOM",
          "[host-backend]") {
  auto b = Make(1000);
  const Stream c = b->ComputeStream();
  // 3 x 300 = 900 bytes fit; 100 more fit exactly; 1 more does not.
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<void*> p = b->AllocAsync(300, c);
    REQUIRE(p.ok());
    blocks.push_back(*p);
  }
  absl::StatusOr<void*> last = b->AllocAsync(100, c);
  REQUIRE(last.ok());
  absl::StatusOr<void*> over = b->AllocAsync(1, c);
  REQUIRE(absl::IsResourceExhausted(over.status()));
  CHECK(RuleOf(over.status()) == "out-of-memory");
  CHECK(over.status().message().find("1 bytes requested, 1000 of 1000 bytes in use") !=
        std::string::npos);
  // Freed on the inline compute stream: at once; the lowest-address best
  // fit hands the same block out again.
  REQUIRE(b->FreeAsync(blocks[1], c).ok());
  absl::StatusOr<void*> again = b->AllocAsync(300, c);
  REQUIRE(again.ok());
  CHECK(*again == blocks[1]);
  absl::StatusOr<MemInfo> info = b->GetMemInfo();
  REQUIRE(info.ok());
  CHECK(info->total_bytes == 1000);
  CHECK(info->free_bytes == 0);
  CHECK(b->counters().arena_peak_bytes == 1000);
}

TEST_CASE("host backend: a copy takes latency + bytes / bandwidth on its engine",
          "[host-backend]") {
  // 100 bytes at 1e3 bytes/s = 100 ms, plus 5 ms latency = 105 ms.
  auto b = Make(1000, 1e3, 5'000'000);
  absl::StatusOr<Stream> d2h = b->CreateStream(StreamPriority::kNormal);
  REQUIRE(d2h.ok());
  absl::StatusOr<void*> dev = b->AllocAsync(100, b->ComputeStream());
  absl::StatusOr<void*> host = b->HostAlloc(4096);
  REQUIRE((dev.ok() && host.ok()));
  std::memset(*dev, 7, 100);
  absl::StatusOr<Event> e = b->CreateEvent();
  REQUIRE(e.ok());
  REQUIRE(b->CopyAsync(*host, *dev, 100, Direction::kDeviceToHost, *d2h).ok());
  REQUIRE(b->RecordEvent(*e, *d2h).ok());
  absl::StatusOr<bool> done = b->QueryEvent(*e);
  REQUIRE(done.ok());
  CHECK_FALSE(*done);  // issued, not finished: QueryEvent never blocks
  REQUIRE(b->SynchronizeEvent(*e).ok());
  CHECK(static_cast<uint8_t*>(*host)[99] == 7);
  std::vector<CopyLogEntry> log = b->CopyLog();
  REQUIRE(log.size() == 1);
  CHECK(log[0].end_ns - log[0].start_ns >= 105'000'000);
}

TEST_CASE("host backend: a high-priority stream's copy goes before queued normal copies",
          "[host-backend]") {
  // One engine for both directions; each 100-byte copy takes 50 ms.
  auto b = Make(4000, 2e3, 0, /*engines=*/1);
  absl::StatusOr<Stream> n1 = b->CreateStream(StreamPriority::kNormal);
  absl::StatusOr<Stream> n2 = b->CreateStream(StreamPriority::kNormal);
  absl::StatusOr<Stream> hi = b->CreateStream(StreamPriority::kHigh);
  REQUIRE((n1.ok() && n2.ok() && hi.ok()));
  absl::StatusOr<void*> host = b->HostAlloc(4096);
  REQUIRE(host.ok());
  std::vector<void*> dev;
  for (int i = 0; i < 4; ++i) dev.push_back(*b->AllocAsync(200, b->ComputeStream()));
  char* h = static_cast<char*>(*host);
  // n1's first copy takes the engine (200 bytes: 100 ms); then n1's second,
  // n2's and, last, a high-priority one queue up behind it.
  REQUIRE(b->CopyAsync(h, dev[0], 200, Direction::kDeviceToHost, *n1).ok());
  for (int i = 0; i < 2000 && !b->CopyEngineBusy(Direction::kDeviceToHost); ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  REQUIRE(b->CopyEngineBusy(Direction::kDeviceToHost));
  REQUIRE(b->CopyAsync(h + 200, dev[1], 100, Direction::kDeviceToHost, *n1).ok());
  REQUIRE(b->CopyAsync(h + 400, dev[2], 100, Direction::kDeviceToHost, *n2).ok());
  REQUIRE(b->CopyAsync(dev[3], h + 600, 100, Direction::kHostToDevice, *hi).ok());
  for (Stream s : {*n1, *n2, *hi}) REQUIRE(b->SynchronizeStream(s).ok());
  std::vector<CopyLogEntry> log = b->CopyLog();
  REQUIRE(log.size() == 4);
  // Served: n1's first (under way), the high-priority copy, then the normal
  // ones in the order they asked for the engine (n2's before n1's second,
  // which could only ask once n1's first was done).
  CHECK(log[0].stream == 1);
  CHECK(log[1].stream == 3);
  CHECK(log[2].stream == 2);
  CHECK(log[3].stream == 1);
}

TEST_CASE("host backend: a stream wait captures the record current at the call", "[host-backend]") {
  auto b = Make(1000, 1e4);  // 100 bytes = 10 ms
  absl::StatusOr<Stream> s1 = b->CreateStream(StreamPriority::kNormal);
  absl::StatusOr<Stream> s2 = b->CreateStream(StreamPriority::kNormal);
  REQUIRE((s1.ok() && s2.ok()));
  absl::StatusOr<Event> e = b->CreateEvent();
  absl::StatusOr<void*> host = b->HostAlloc(4096);
  void* dev = *b->AllocAsync(100, b->ComputeStream());
  std::memset(dev, 3, 100);
  REQUIRE(b->CopyAsync(*host, dev, 100, Direction::kDeviceToHost, *s1).ok());
  REQUIRE(b->RecordEvent(*e, *s1).ok());
  // s2 waits for the copy (10 ms), then copies the host buffer back.
  void* dev2 = *b->AllocAsync(100, b->ComputeStream());
  REQUIRE(b->StreamWaitEvent(*s2, *e).ok());
  REQUIRE(b->CopyAsync(dev2, *host, 100, Direction::kHostToDevice, *s2).ok());
  // Re-recording the event afterwards does not move s2's wait.
  REQUIRE(b->RecordEvent(*e, *s1).ok());
  REQUIRE(b->SynchronizeStream(*s2).ok());
  CHECK(static_cast<uint8_t*>(dev2)[0] == 3);
}

TEST_CASE("host backend: copies from pageable host memory are refused", "[host-backend]") {
  auto b = Make(1000);
  absl::StatusOr<Stream> s = b->CreateStream(StreamPriority::kNormal);
  void* dev = *b->AllocAsync(100, b->ComputeStream());
  std::vector<char> pageable(100);
  absl::Status st = b->CopyAsync(pageable.data(), dev, 100, Direction::kDeviceToHost, *s);
  CHECK(absl::IsInvalidArgument(st));
  CHECK(st.message().find("outside every pinned block") != std::string::npos);
}

TEST_CASE("host backend faults: copy error through the events, allocation failure, slow copy",
          "[host-backend]") {
  auto b = Make(1000, 1e5);  // 100 bytes = 1 ms
  absl::StatusOr<Stream> s = b->CreateStream(StreamPriority::kNormal);
  absl::StatusOr<Event> e = b->CreateEvent();
  absl::StatusOr<void*> host = b->HostAlloc(4096);
  void* dev = *b->AllocAsync(100, b->ComputeStream());
  REQUIRE(b->InjectFault({.kind = FaultKind::kCopyError, .skip = 1, .count = 1}).ok());
  // The first copy passes (skip 1), the second fails, the third passes.
  for (int i = 0; i < 3; ++i) {
    REQUIRE(b->CopyAsync(*host, dev, 100, Direction::kDeviceToHost, *s).ok());
    REQUIRE(b->RecordEvent(*e, *s).ok());
    absl::Status st = b->SynchronizeEvent(*e);
    if (i == 1) {
      CHECK(absl::IsUnavailable(st));
      CHECK(st.message().find("injected copy error: D2H copy of 100 bytes") != std::string::npos);
    } else {
      CHECK(st.ok());
    }
  }
  REQUIRE(b->InjectFault({.kind = FaultKind::kAllocFailure, .count = 1}).ok());
  absl::StatusOr<void*> p = b->AllocAsync(10, b->ComputeStream());
  CHECK(RuleOf(p.status()) == "out-of-memory");
  CHECK(b->AllocAsync(10, b->ComputeStream()).ok());
  b->ClearFaults();
  REQUIRE(b->InjectFault({.kind = FaultKind::kSlowCopy, .count = 1, .slow_factor = 20}).ok());
  REQUIRE(b->CopyAsync(*host, dev, 100, Direction::kDeviceToHost, *s).ok());
  REQUIRE(b->SynchronizeStream(*s).ok());
  std::vector<CopyLogEntry> log = b->CopyLog();
  CHECK(log.back().end_ns - log.back().start_ns >= 20'000'000);  // 1 ms x 20
  CHECK(absl::IsInvalidArgument(b->InjectFault({.kind = FaultKind::kSlowCopy, .slow_factor = 1})));
}

TEST_CASE("host backend: a worker stream that waits on a failed event fails for good",
          "[host-backend]") {
  HostBackendOptions o;
  o.device.capacity_bytes = 1000;
  o.device.h2d_bandwidth_bytes_per_s = o.device.d2h_bandwidth_bytes_per_s = 1e9;
  o.compute = ComputeStreamKind::kWorker;
  auto b = *HostBackend::Create(o);
  absl::StatusOr<Stream> d2h = b->CreateStream(StreamPriority::kNormal);
  absl::StatusOr<Event> e = b->CreateEvent();
  absl::StatusOr<void*> host = b->HostAlloc(4096);
  void* dev = *b->AllocAsync(100, b->ComputeStream());
  REQUIRE(b->InjectFault({.kind = FaultKind::kCopyError}).ok());
  REQUIRE(b->CopyAsync(*host, dev, 100, Direction::kDeviceToHost, *d2h).ok());
  REQUIRE(b->RecordEvent(*e, *d2h).ok());
  // Compute waits for the failed copy, then would free the block: the free
  // is skipped (the block stays allocated) and the stream reports the error.
  REQUIRE(b->StreamWaitEvent(b->ComputeStream(), *e).ok());
  REQUIRE(b->FreeAsync(dev, b->ComputeStream()).ok());
  absl::Status st = b->SynchronizeStream(b->ComputeStream());
  CHECK(absl::IsUnavailable(st));
  CHECK(st.message().find("waited on a failed event") != std::string::npos);
  CHECK(b->counters().arena_in_use_bytes == 100);
}

}  // namespace
}  // namespace swapplan::runtime
