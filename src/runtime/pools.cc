// EventPool and PinnedPool. See event_pool.h and pinned_pool.h.
#include <algorithm>
#include <bit>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/runtime/event_pool.h"
#include "swapplan/runtime/pinned_pool.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

// ---------------------------------------------------------------------------
// EventPool

EventPool::~EventPool() {
  for (Entry& e : entries_) (void)backend_->DestroyEvent(e.event);
}

absl::StatusOr<EventId> EventPool::Acquire() {
  EventId id;
  if (free_.empty()) {
    absl::StatusOr<Event> ev = backend_->CreateEvent();
    if (ev.ok()) {
      free_.push_back(static_cast<EventId>(entries_.size()));
      entries_.push_back({*ev, 0});
    } else {
      if (RuleOf(ev.status()) != "event-limit" || !reclaim_) return ev.status();
      ++reclaims_;
      reclaim_();
      if (free_.empty()) {
        return WithRule(Error(ErrorKind::kResourceLimit,
                              absl::StrCat(ev.status().message(), "; all ", created(),
                                           " events of the runtime's pool are in use")),
                        "event-limit");
      }
    }
  }
  id = free_.back();
  free_.pop_back();
  entries_[id].refs = 1;
  return id;
}

void EventPool::Unref(EventId e) {
  if (e == kNoEvent) return;
  if (--entries_[e].refs == 0) free_.push_back(e);
}

// ---------------------------------------------------------------------------
// PinnedPool

namespace {
constexpr int64_t kSmallest = 4096;
}  // namespace

absl::Status PinnedPoolOptions::Validate() const {
  if (block_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinned pool: block_bytes is ", block_bytes, "; must be > 0"));
  }
  if (initial_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinned pool: initial_bytes is ", initial_bytes, "; must be >= 0"));
  }
  return absl::OkStatus();
}

int32_t PinnedPool::ClassOf(int64_t bytes) {
  if (bytes <= kSmallest) return 0;
  const int k = 63 - std::countl_zero(static_cast<uint64_t>(bytes - 1));  // 2^k < bytes <= 2^(k+1)
  const int64_t quarter = int64_t{1} << (k - 2);
  const int64_t j = (bytes - (int64_t{1} << k) + quarter - 1) / quarter;  // 1..4
  return 1 + 4 * (k - 12) + static_cast<int32_t>(j - 1);
}

int64_t PinnedPool::ClassBytes(int32_t size_class) {
  if (size_class == 0) return kSmallest;
  const int k = 12 + (size_class - 1) / 4;
  const int64_t j = (size_class - 1) % 4 + 1;
  return (int64_t{1} << k) + j * (int64_t{1} << (k - 2));
}

PinnedPool::PinnedPool(Backend* backend, EventPool* events, const PinnedPoolOptions& options)
    : backend_(backend), events_(events), options_(options) {}

PinnedPool::~PinnedPool() {
  for (auto& list : free_) {
    for (const FreeBuffer& f : list) events_->Unref(f.ready);
  }
  for (void* b : blocks_) (void)backend_->HostFree(b);
}

absl::Status PinnedPool::Init() {
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  if (options_.initial_bytes > 0) return Grow(options_.initial_bytes);
  return absl::OkStatus();
}

absl::Status PinnedPool::Grow(int64_t at_least) {
  const int64_t bytes = std::max(options_.block_bytes, at_least);
  SWAPPLAN_ASSIGN_OR_RETURN(void* block, backend_->HostAlloc(bytes));
  blocks_.push_back(block);
  cursor_ = static_cast<char*>(block);
  left_ = bytes;
  stats_.reserved_bytes += bytes;
  ++stats_.host_allocs;
  return absl::OkStatus();
}

absl::StatusOr<PinnedBuffer> PinnedPool::Acquire(int64_t bytes, Stream user) {
  const int32_t c = ClassOf(std::max<int64_t>(bytes, 1));
  const int64_t size = ClassBytes(c);
  if (static_cast<int32_t>(free_.size()) <= c) free_.resize(c + 1);
  PinnedBuffer b;
  b.size_class = c;
  b.capacity_bytes = size;
  std::vector<FreeBuffer>& list = free_[c];
  if (!list.empty()) {
    const FreeBuffer f = list.back();
    if (f.ready != kNoEvent) {
      SWAPPLAN_RETURN_IF_ERROR(backend_->StreamWaitEvent(user, events_->event(f.ready)));
      events_->Unref(f.ready);
    }
    list.pop_back();
    b.ptr = f.ptr;
    ++stats_.reuses;
  } else {
    if (left_ < size) SWAPPLAN_RETURN_IF_ERROR(Grow(size));
    b.ptr = cursor_;
    cursor_ += size;
    left_ -= size;
  }
  stats_.in_use_bytes += size;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return b;
}

void PinnedPool::ReclaimEvents() {
  const int32_t before = events_->in_use();
  FreeBuffer* first_pending = nullptr;
  for (std::vector<FreeBuffer>& list : free_) {
    for (FreeBuffer& f : list) {
      if (f.ready == kNoEvent) continue;
      absl::StatusOr<bool> done = backend_->QueryEvent(events_->event(f.ready));
      if (done.ok() && !*done) {
        if (first_pending == nullptr) first_pending = &f;
        continue;
      }
      // Done, or failed (a failed copy is over): nothing to wait for.
      events_->Unref(f.ready);
      f.ready = kNoEvent;
    }
  }
  if (events_->in_use() == before && first_pending != nullptr) {
    // Nothing finished yet: wait for one (a host wait, only at the limit).
    (void)backend_->SynchronizeEvent(events_->event(first_pending->ready));
    events_->Unref(first_pending->ready);
    first_pending->ready = kNoEvent;
  }
}

void PinnedPool::Release(const PinnedBuffer& buffer, EventId ready) {
  if (!buffer.valid()) {
    events_->Unref(ready);
    return;
  }
  free_[buffer.size_class].push_back({buffer.ptr, ready});
  stats_.in_use_bytes -= buffer.capacity_bytes;
}

}  // namespace swapplan::runtime
