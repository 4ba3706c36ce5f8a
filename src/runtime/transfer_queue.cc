// The transfer queue: seed 004's task queue over device streams. See
// transfer_queue.h.
#include "swapplan/runtime/transfer_queue.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

absl::Status TransferQueueOptions::Validate() const {
  if (max_inflight_per_lane < 1) {
    return absl::InvalidArgumentError(absl::StrCat("transfer queue: max_inflight_per_lane is ",
                                                   max_inflight_per_lane, "; must be >= 1"));
  }
  return absl::OkStatus();
}

TransferQueue::TransferQueue(Backend* backend, EventPool* events, const Streams& streams,
                             const TransferQueueOptions& options)
    : backend_(backend), events_(events), streams_(streams), options_(options) {}

TransferQueue::~TransferQueue() {
  for (Transfer& t : transfers_) {
    if (t.state == kFree) continue;
    events_->Unref(t.request.after);
    events_->Unref(t.done);
  }
}

Stream TransferQueue::StreamOf(TransferLane lane) const {
  switch (lane) {
    case TransferLane::kOut:
      return streams_.out;
    case TransferLane::kIn:
      return streams_.in;
    case TransferLane::kDemandOut:
      return streams_.demand_out;
    case TransferLane::kDemandIn:
      return streams_.demand_in;
  }
  return streams_.out;
}

absl::StatusOr<TicketId> TransferQueue::Enqueue(const TransferRequest& request) {
  TicketId t;
  if (!free_.empty()) {
    t = free_.back();
    free_.pop_back();
  } else {
    t = static_cast<TicketId>(transfers_.size());
    transfers_.emplace_back();
  }
  Transfer& x = transfers_[t];
  x.request = request;
  x.state = kQueued;
  x.done = kNoEvent;
  const bool out = request.direction == Direction::kDeviceToHost;
  if (request.demand) {
    x.lane = out ? TransferLane::kDemandOut : TransferLane::kDemandIn;
    absl::Status st = Issue(t, /*forced=*/false);
    if (!st.ok()) {
      Retire(t);
      return st;
    }
    return t;
  }
  x.lane = out ? TransferLane::kOut : TransferLane::kIn;
  queued_[static_cast<int>(x.lane)].push_back(t);
  SWAPPLAN_RETURN_IF_ERROR(IssueWithinBound(x.lane));
  return t;
}

absl::Status TransferQueue::Issue(TicketId t, bool forced) {
  if (transfers_[t].state != kQueued) return absl::OkStatus();
  const TransferLane lane = transfers_[t].lane;
  std::deque<TicketId>& q = queued_[static_cast<int>(lane)];
  if (!q.empty() && q.front() == t) {
    q.pop_front();
  } else {
    auto it = std::find(q.begin(), q.end(), t);
    if (it != q.end()) q.erase(it);
  }
  // Rule 1: a transfer named as a predecessor goes first (issued now if it
  // is still queued), and this copy waits for its done event.
  const TicketId before = transfers_[t].request.after_transfer;
  if (before != kNoTicket && transfers_[before].state == kQueued) {
    SWAPPLAN_RETURN_IF_ERROR(Issue(before, /*forced=*/true));
  }
  Transfer& x = transfers_[t];
  const Stream s = StreamOf(lane);
  if (x.request.after != kNoEvent) {
    SWAPPLAN_RETURN_IF_ERROR(backend_->StreamWaitEvent(s, events_->event(x.request.after)));
    events_->Unref(x.request.after);
    x.request.after = kNoEvent;
  }
  if (before != kNoTicket && transfers_[before].done != kNoEvent) {
    SWAPPLAN_RETURN_IF_ERROR(
        backend_->StreamWaitEvent(s, events_->event(transfers_[before].done)));
  }
  SWAPPLAN_RETURN_IF_ERROR(
      backend_->CopyAsync(x.request.dst, x.request.src, x.request.bytes, x.request.direction, s));
  SWAPPLAN_ASSIGN_OR_RETURN(EventId done, events_->Acquire());
  absl::Status st = backend_->RecordEvent(events_->event(done), s);
  if (!st.ok()) {
    events_->Unref(done);
    return st;
  }
  x.done = done;
  x.state = kIssued;
  const int l = static_cast<int>(lane);
  inflight_[l].push_back(t);
  ++stats_.issued[l];
  stats_.bytes[l] += x.request.bytes;
  if (lane == TransferLane::kOut || lane == TransferLane::kIn) {
    const int32_t n = static_cast<int32_t>(inflight_[l].size());
    stats_.max_inflight_seen = std::max(stats_.max_inflight_seen, n);
    if (forced && n > options_.max_inflight_per_lane) ++stats_.forced;
  }
  return absl::OkStatus();
}

absl::Status TransferQueue::IssueWithinBound(TransferLane lane) {
  const int l = static_cast<int>(lane);
  if (hold_[l]) return absl::OkStatus();
  while (!queued_[l].empty() &&
         static_cast<int32_t>(inflight_[l].size()) < options_.max_inflight_per_lane) {
    SWAPPLAN_RETURN_IF_ERROR(Issue(queued_[l].front(), /*forced=*/false));
  }
  return absl::OkStatus();
}

bool TransferQueue::Erase(TicketId ticket) {
  if (ticket < 0 || ticket >= static_cast<TicketId>(transfers_.size()) ||
      transfers_[ticket].state != kQueued) {
    return false;
  }
  Retire(ticket);
  ++stats_.erased;
  return true;
}

absl::Status TransferQueue::WaitOn(TicketId ticket, Stream stream) {
  if (transfers_[ticket].state == kQueued) {
    SWAPPLAN_RETURN_IF_ERROR(Issue(ticket, /*forced=*/true));
  }
  return backend_->StreamWaitEvent(stream, events_->event(transfers_[ticket].done));
}

absl::Status TransferQueue::Pump() {
  for (int l = 0; l < kNumLanes; ++l) {
    std::deque<TicketId>& f = inflight_[l];
    while (!f.empty()) {
      Transfer& x = transfers_[f.front()];
      absl::StatusOr<bool> done = backend_->QueryEvent(events_->event(x.done));
      if (done.ok() && !*done) break;
      x.state = kDone;  // finished (an error surfaces where it is waited on)
      f.pop_front();
    }
  }
  SWAPPLAN_RETURN_IF_ERROR(IssueWithinBound(TransferLane::kOut));
  return IssueWithinBound(TransferLane::kIn);
}

absl::Status TransferQueue::SetHold(TransferLane lane, bool hold) {
  hold_[static_cast<int>(lane)] = hold;
  if (!hold) return IssueWithinBound(lane);
  return absl::OkStatus();
}

absl::Status TransferQueue::WaitAll(bool all, Direction direction) {
  absl::Status first;
  for (int l = 0; l < kNumLanes; ++l) {
    const bool out = l == static_cast<int>(TransferLane::kOut) ||
                     l == static_cast<int>(TransferLane::kDemandOut);
    if (!all && out != (direction == Direction::kDeviceToHost)) continue;
    if (!hold_[l]) {
      while (!queued_[l].empty()) {
        SWAPPLAN_RETURN_IF_ERROR(Issue(queued_[l].front(), /*forced=*/true));
      }
    }
    std::deque<TicketId>& f = inflight_[l];
    while (!f.empty()) {
      Transfer& x = transfers_[f.front()];
      absl::Status st = backend_->SynchronizeEvent(events_->event(x.done));
      if (!st.ok() && first.ok()) first = st;
      x.state = kDone;
      f.pop_front();
    }
  }
  return first;
}

void TransferQueue::Retire(TicketId ticket) {
  if (ticket == kNoTicket) return;
  Transfer& x = transfers_[ticket];
  const int l = static_cast<int>(x.lane);
  if (x.state == kQueued) {
    auto it = std::find(queued_[l].begin(), queued_[l].end(), ticket);
    if (it != queued_[l].end()) queued_[l].erase(it);
  } else if (x.state == kIssued) {
    auto it = std::find(inflight_[l].begin(), inflight_[l].end(), ticket);
    if (it != inflight_[l].end()) inflight_[l].erase(it);
  }
  events_->Unref(x.request.after);
  events_->Unref(x.done);
  x = Transfer{};
  free_.push_back(ticket);
}

std::vector<TicketId> TransferQueue::QueuedOn(TransferLane lane) const {
  const std::deque<TicketId>& q = queued_[static_cast<int>(lane)];
  return std::vector<TicketId>(q.begin(), q.end());
}

}  // namespace swapplan::runtime
