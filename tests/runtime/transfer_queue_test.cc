// The transfer queue (runtime/transfer_queue.h): seed 004's semantics over
// streams, ordering rule 1, the in-flight bound, erase — on the run's
// backend (test_device.h).
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include "swapplan/runtime/event_pool.h"
#include "swapplan/runtime/transfer_queue.h"
#include "test_device.h"

namespace swapplan::runtime {
namespace {

using testing::DeviceSpec;
using testing::MakeTestBackend;
using testing::TestBackend;

struct Fixture {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<testing::TestDevice> device;
  std::unique_ptr<EventPool> events;
  std::unique_ptr<TransferQueue> queue;
  char* host = nullptr;
  TransferQueue::Streams streams;

  // d2h / h2d bandwidth in bytes per second.
  Fixture(double d2h, double h2d, int32_t max_inflight = 8) {
    TestBackend tb = MakeTestBackend(
        {.capacity_bytes = 10000, .h2d_bytes_per_s = h2d, .d2h_bytes_per_s = d2h});
    INFO(tb.status.message());
    REQUIRE(tb.status.ok());
    backend = std::move(tb.backend);
    device = std::move(tb.device);
    events = std::make_unique<EventPool>(backend.get());
    TransferQueue::Streams& s = streams;
    s.out = *backend->CreateStream(StreamPriority::kNormal);
    s.in = *backend->CreateStream(StreamPriority::kNormal);
    s.demand_out = *backend->CreateStream(StreamPriority::kHigh);
    s.demand_in = *backend->CreateStream(StreamPriority::kHigh);
    queue = std::make_unique<TransferQueue>(backend.get(), events.get(), s,
                                            TransferQueueOptions{max_inflight});
    host = static_cast<char*>(*backend->HostAlloc(1 << 16));
    std::memset(host, 0, 1 << 16);
  }
  ~Fixture() {
    queue.reset();
    events.reset();
    (void)backend->HostFree(host);
    for (Stream s : {streams.out, streams.in, streams.demand_out, streams.demand_in}) {
      CHECK(backend->DestroyStream(s).ok());
    }
    backend.reset();
    CHECK(device->Violations() == "");
  }
  void* Device(int fill) {
    void* p = *backend->AllocAsync(100, backend->ComputeStream());
    std::memset(p, fill, 100);
    return p;
  }
};

TEST_CASE("rule 1: a swap-in never starts before that tensor's swap-out finished") {
  // Copy out 100 bytes at 2000 bytes/s = 50 ms; copy in at 1 byte/ns.
  Fixture f(2e3, 1e9);
  void* a = f.Device(0x5a);
  void* b = f.Device(0x00);
  absl::StatusOr<TicketId> out =
      f.queue->Enqueue({.direction = Direction::kDeviceToHost, .dst = f.host, .src = a, .bytes = 100});
  REQUIRE(out.ok());
  // The swap-in is asked for at once (as a passive swap-in right after a
  // release may be); it must wait for the copy out.
  absl::StatusOr<TicketId> in = f.queue->Enqueue({.direction = Direction::kHostToDevice,
                                                  .dst = b, .src = f.host, .bytes = 100,
                                                  .after_transfer = *out});
  REQUIRE(in.ok());
  REQUIRE(f.queue->WaitOn(*in, f.backend->ComputeStream()).ok());
  CHECK(static_cast<uint8_t*>(b)[0] == 0x5a);
  CHECK(static_cast<uint8_t*>(b)[99] == 0x5a);
  std::vector<CopyLogEntry> log = f.device->CopyLog();
  REQUIRE(log.size() == 2);
  CHECK(log[0].direction == Direction::kDeviceToHost);
  CHECK(log[1].start_ns >= log[0].end_ns);
  f.queue->Retire(*in);
  f.queue->Retire(*out);
}

TEST_CASE("transfer queue: copies in flight per lane are bounded; erase takes back queued ones") {
  // 100 bytes at 1e4 bytes/s = 10 ms each; at most 2 issued at a time.
  Fixture f(1e4, 1e4, /*max_inflight=*/2);
  std::vector<TicketId> t;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<TicketId> k = f.queue->Enqueue({.direction = Direction::kDeviceToHost,
                                                   .dst = f.host + 128 * i, .src = f.Device(i),
                                                   .bytes = 100});
    REQUIRE(k.ok());
    t.push_back(*k);
  }
  CHECK(f.queue->inflight(TransferLane::kOut) == 2);
  CHECK(f.queue->QueuedOn(TransferLane::kOut) == std::vector<TicketId>{t[2], t[3], t[4]});
  // Erase: a queued transfer goes; an issued one cannot.
  CHECK(f.queue->Erase(t[3]));
  CHECK_FALSE(f.queue->Erase(t[0]));
  CHECK(f.queue->QueuedOn(TransferLane::kOut) == std::vector<TicketId>{t[2], t[4]});
  // Waiting for a queued transfer issues it at once (past the bound).
  REQUIRE(f.queue->WaitOn(t[4], f.backend->ComputeStream()).ok());
  CHECK(f.queue->stats().forced == 1);
  CHECK(f.queue->stats().max_inflight_seen == 3);  // two, plus the forced one
  // Waiting for all issues the rest at once too.
  REQUIRE(f.queue->WaitAll(/*all=*/true).ok());
  CHECK(f.queue->inflight(TransferLane::kOut) == 0);
  CHECK(f.queue->stats().issued[0] == 4);
  CHECK(f.queue->stats().erased == 1);
  for (TicketId k : {t[0], t[1], t[2], t[4]}) f.queue->Retire(k);
}

TEST_CASE("transfer queue: a demand transfer goes at once on the high-priority lane") {
  Fixture f(1e4, 1e4, /*max_inflight=*/1);
  void* a = f.Device(1);
  void* b = f.Device(2);
  absl::StatusOr<TicketId> p1 = f.queue->Enqueue(
      {.direction = Direction::kHostToDevice, .dst = a, .src = f.host, .bytes = 100});
  absl::StatusOr<TicketId> p2 = f.queue->Enqueue(
      {.direction = Direction::kHostToDevice, .dst = a, .src = f.host, .bytes = 100});
  absl::StatusOr<TicketId> d = f.queue->Enqueue(
      {.direction = Direction::kHostToDevice, .dst = b, .src = f.host + 256, .bytes = 100,
       .demand = true});
  REQUIRE((p1.ok() && p2.ok() && d.ok()));
  CHECK(f.queue->lane(*d) == TransferLane::kDemandIn);
  CHECK(f.queue->issued(*d));
  CHECK(f.queue->queued(*p2));  // behind the bound
  REQUIRE(f.queue->WaitAll(true).ok());
  for (TicketId k : {*p1, *p2, *d}) f.queue->Retire(k);
}

TEST_CASE("transfer queue: a held lane issues nothing until released (prefetch_init / prefetch_all)") {
  Fixture f(1e9, 1e9);
  REQUIRE(f.queue->SetHold(TransferLane::kIn, true).ok());
  absl::StatusOr<TicketId> p = f.queue->Enqueue(
      {.direction = Direction::kHostToDevice, .dst = f.Device(0), .src = f.host, .bytes = 100});
  REQUIRE(p.ok());
  CHECK(f.queue->queued(*p));
  REQUIRE(f.queue->SetHold(TransferLane::kIn, false).ok());
  CHECK(f.queue->issued(*p));
  REQUIRE(f.queue->WaitAll(true).ok());
  f.queue->Retire(*p);
}

}  // namespace
}  // namespace swapplan::runtime
