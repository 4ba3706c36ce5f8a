// EventPool: backend events created once and reused, with a reference count
// per use. Devices cap the number of events (ACL's per-device limit) and
// creating one is a driver call; the shim records one or two events per
// swap, so it takes them from here. An event returns to the free list when
// its last holder lets go; re-recording it afterwards is safe because a
// stream wait captures the record current at the time of the wait
// (backend.h).
//
//   EventPool events(&backend);
//   SWAPPLAN_ASSIGN_OR_RETURN(EventId e, events.Acquire());   // 1 reference
//   SWAPPLAN_RETURN_IF_ERROR(backend.RecordEvent(events.event(e), stream));
//   events.Ref(e);  ...  events.Unref(e);  events.Unref(e);  // back in the pool
//
// Event limits. When the backend refuses a new event with the rule tag
// "event-limit" (a device's event cap: the Ascend backend), Acquire runs the
// reclaimer — the runtime's pinned pool drops the events its free buffers
// no longer need (pinned_pool.h ReclaimEvents) — and takes a freed one, so
// the events in existence stay bounded by those in use.
//
// Not thread-safe (the runtime's thread). O(1) per call; Acquire creates an
// event only when the free list is empty (and reclaims only at a limit).
#ifndef SWAPPLAN_RUNTIME_EVENT_POOL_H_
#define SWAPPLAN_RUNTIME_EVENT_POOL_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "swapplan/runtime/backend.h"

namespace swapplan::runtime {

using EventId = int32_t;
inline constexpr EventId kNoEvent = -1;

class EventPool {
 public:
  explicit EventPool(Backend* backend) : backend_(backend) {}
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // An event with one reference; the backend's error when it cannot create
  // one (at an "event-limit", after the reclaimer found none to free).
  absl::StatusOr<EventId> Acquire();
  // Called when the backend's event limit is reached; it should Unref
  // events it holds without needing them.
  void SetReclaimer(std::function<void()> reclaim) { reclaim_ = std::move(reclaim); }
  void Ref(EventId e) { ++entries_[e].refs; }
  // Drops a reference; at zero the event is free again. kNoEvent is ignored.
  void Unref(EventId e);
  Event event(EventId e) const { return entries_[e].event; }

  // Events created / in use now; times the reclaimer ran.
  int32_t created() const { return static_cast<int32_t>(entries_.size()); }
  int32_t in_use() const { return created() - static_cast<int32_t>(free_.size()); }
  int64_t reclaims() const { return reclaims_; }

 private:
  struct Entry {
    Event event;
    int32_t refs = 0;
  };
  Backend* backend_;
  std::vector<Entry> entries_;
  std::vector<EventId> free_;
  std::function<void()> reclaim_;
  int64_t reclaims_ = 0;
};

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_EVENT_POOL_H_
