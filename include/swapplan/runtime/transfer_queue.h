// TransferQueue: seed 004's data-transfer task queue (CudaEntityTransferQueue:
// enqueue, erase, dequeue, start_actions, wait_actions) with the device
// streams as the queue.
//
// Why streams and not a host worker thread. Seed 004 runs its tasks on a
// host "swap thread" fed by a FIFO. None of the systems that run swaps in
// production do (research/runtime.md §1–4): MindSpeed SmartSwap, Transformer
// Engine, Megatron-LM and DeepSpeed all issue the copy straight onto a device
// stream and order everything with events, because a host thread adds a
// hop, a lock and a host-side wait to every swap and still has to hand the
// copy to a stream in the end. A stream is already a FIFO executed by the
// device. What a plain stream cannot do is seed 004's "passive swap-in goes
// to the head": work cannot jump a stream. So:
//
//   lane         stream (priority)     what                          seed 004
//   kOut         d2h (normal)          policy / manual swap-outs     enqueue at the tail
//   kIn          h2d (normal)          prefetches                    need_prefetch, tail
//   kDemandOut   demand-out (high)     Algorithm 3 passive swap-outs head
//   kDemandIn    demand-in (high)      passive swap-ins (a tensor    head
//                                      touched while off device)
//
// A demand transfer is issued at once on a high-priority stream and served
// by the copy engine before any queued normal copy (CUDA stream priorities,
// ACL priority 0..7). The normal lanes keep a short host-side FIFO in front
// of their stream only to bound the copies in flight (Megatron's
// max_inflight_offloads) and to make erase possible: a transfer is "queued"
// until issued to its stream, and only a queued transfer can be erased (a
// stream cannot take work back). Pump() — called at every op — retires the
// oldest in-flight copy of each lane when its event has fired (a
// non-blocking query; one per lane with work in flight) and issues queued
// ones up to the bound. A transfer somebody waits for is issued at once,
// past the bound.
//
//   compute  |op 3|--E_c--|op 4|op 5|op 6| wait(E_out) free |op 7|
//   d2h              wait(E_c) |==== copy out T ====|E_out
//   h2d                                     ... later: wait(E_alloc) wait(E_out) |== copy in T ==|E_in
//
// Ordering rule 1 (a swap-in never starts before that tensor's swap-out
// finished) lives here: a request naming `after_transfer` makes its stream
// wait for that transfer's done event (issuing it first if it is still
// queued) — a device-side wait. The release (rule 2) and first-use (rule 3)
// waits are the runtime's (runtime.h), through WaitOn.
//
//   TransferQueue q(&backend, &events, streams, {.max_inflight_per_lane = 8});
//   SWAPPLAN_ASSIGN_OR_RETURN(TicketId out, q.Enqueue({.direction = Direction::kDeviceToHost,
//       .dst = host, .src = dev, .bytes = n, .after = produced}));
//   ...
//   SWAPPLAN_RETURN_IF_ERROR(q.WaitOn(out, compute));    // compute waits for the copy
//   q.Retire(out);
//
// Not thread-safe (the runtime's thread). Enqueue, Erase, WaitOn O(1) plus
// O(n) for Erase of the n-th queued transfer of a lane; Pump O(transfers it
// retires and issues).
#ifndef SWAPPLAN_RUNTIME_TRANSFER_QUEUE_H_
#define SWAPPLAN_RUNTIME_TRANSFER_QUEUE_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/runtime/backend.h"
#include "swapplan/runtime/event_pool.h"

namespace swapplan::runtime {

using TicketId = int32_t;
inline constexpr TicketId kNoTicket = -1;

enum class TransferLane : uint8_t { kOut = 0, kIn = 1, kDemandOut = 2, kDemandIn = 3 };
inline constexpr int kNumLanes = 4;

struct TransferQueueOptions {
  // Copies issued to each normal lane's stream and not yet seen finished
  // (>= 1).
  int32_t max_inflight_per_lane = 8;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

struct TransferRequest {
  Direction direction = Direction::kDeviceToHost;
  void* dst = nullptr;
  const void* src = nullptr;
  int64_t bytes = 0;
  // The copy starts after this event (kNoEvent: no wait); its reference
  // passes to the queue. A swap-out names the compute event after the
  // producing op; a swap-in the compute event after its block's allocation.
  EventId after = kNoEvent;
  // The copy starts after this transfer's copy finished (rule 1: a swap-in
  // names the tensor's swap-out). It must not be retired before this
  // request is issued.
  TicketId after_transfer = kNoTicket;
  // Head of the queue: issued at once on the lane's high-priority stream.
  bool demand = false;
};

struct TransferQueueStats {
  int64_t issued[kNumLanes] = {0, 0, 0, 0};
  int64_t bytes[kNumLanes] = {0, 0, 0, 0};
  int64_t erased = 0;
  // Most copies of a normal lane in flight at once.
  int32_t max_inflight_seen = 0;
  // Transfers issued past the bound because somebody waited for them.
  int64_t forced = 0;
};

class TransferQueue {
 public:
  struct Streams {
    Stream out, in, demand_out, demand_in;
  };

  TransferQueue(Backend* backend, EventPool* events, const Streams& streams,
                const TransferQueueOptions& options);
  ~TransferQueue();
  TransferQueue(const TransferQueue&) = delete;
  TransferQueue& operator=(const TransferQueue&) = delete;

  // Seed 004 enqueue: a demand request is issued now on its high-priority
  // lane; any other goes to the tail of its lane (kOut for device->host,
  // kIn for host->device) and is issued within the in-flight bound unless
  // the lane is held. The backend's error when issuing fails.
  absl::StatusOr<TicketId> Enqueue(const TransferRequest& request);
  // Seed 004 erase: removes a transfer that is still queued (and retires
  // the ticket); false when it was already issued or unknown.
  bool Erase(TicketId ticket);
  // Makes `stream` wait for the transfer's copy (issuing it first if it is
  // queued). Device-side; on an inline compute stream the caller blocks
  // until the copy is done and gets its error, if it failed.
  absl::Status WaitOn(TicketId ticket, Stream stream);
  // Seed 004 start_actions: retires finished copies and issues queued ones
  // within the bound. Never blocks.
  absl::Status Pump();
  // Holds a lane (queued transfers are not issued until released; seed 004
  // prefetch_init / prefetch_all). Releasing issues within the bound.
  absl::Status SetHold(TransferLane lane, bool hold);
  // Seed 004 wait_actions: issues every queued transfer of the lanes in
  // `direction` (both when `all`) and blocks the host until their copies
  // are done. The first copy error, if any.
  absl::Status WaitAll(bool all, Direction direction = Direction::kDeviceToHost);
  // The caller is done with the ticket: its events go back to the pool.
  void Retire(TicketId ticket);

  bool queued(TicketId t) const { return transfers_[t].state == kQueued; }
  bool issued(TicketId t) const { return transfers_[t].state != kQueued; }
  TransferLane lane(TicketId t) const { return transfers_[t].lane; }
  // The done event of an issued transfer (no reference taken).
  EventId done_event(TicketId t) const { return transfers_[t].done; }
  // Queued transfers of a lane, in order (tests).
  std::vector<TicketId> QueuedOn(TransferLane lane) const;
  int32_t inflight(TransferLane lane) const {
    return static_cast<int32_t>(inflight_[static_cast<int>(lane)].size());
  }
  const TransferQueueStats& stats() const { return stats_; }

 private:
  enum State : uint8_t { kFree, kQueued, kIssued, kDone };
  struct Transfer {
    TransferRequest request;
    TransferLane lane = TransferLane::kOut;
    State state = kFree;
    EventId done = kNoEvent;
  };

  Stream StreamOf(TransferLane lane) const;
  absl::Status Issue(TicketId t, bool forced);
  absl::Status IssueWithinBound(TransferLane lane);

  Backend* backend_;
  EventPool* events_;
  Streams streams_;
  TransferQueueOptions options_;
  std::vector<Transfer> transfers_;
  std::vector<TicketId> free_;
  std::deque<TicketId> queued_[kNumLanes];
  std::deque<TicketId> inflight_[kNumLanes];
  bool hold_[kNumLanes] = {false, false, false, false};
  TransferQueueStats stats_;
};

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_TRANSFER_QUEUE_H_
