// PinnedPool: the host buffers swapped tensors live in, carved from large
// pinned blocks (Backend::HostAlloc) and recycled by size class — never one
// host allocation per swap (pinned allocation dominating training time:
// pytorch#124456; one cudaHostAlloc per tensor: the research notes' "avoid"
// list).
//
// Size classes: 4 KiB, then four classes per power of two (5, 6, 7, 8, 10,
// 12, 14, 16 KiB, ...), so a buffer wastes at most a quarter of its size
// (vllm#56410: host memory 1.9x the offloaded bytes with power-of-two
// classes). Buffers start 64-byte aligned (ACL's copy rule). A released
// buffer goes to its class's free list with the event after which it may be
// reused (the copy that last touched it); the next Acquire for a stream makes
// that stream wait for the event first — a device-side wait, no host sync.
// When no buffer of the class is free, one is carved from the current block;
// when the block is full a new one of max(block_bytes, class size) is
// allocated (the rest of the old block stays unused: bounded waste, since a
// class is at most 1/4 of a block unless it is bigger than a block).
//
//   PinnedPool pool(&backend, &events, {.block_bytes = 64 << 20});
//   SWAPPLAN_ASSIGN_OR_RETURN(PinnedBuffer b, pool.Acquire(100, d2h_stream));
//   ... copy into b.ptr on d2h_stream, record `done` ...
//   pool.Release(b, done);          // reusable once `done` has happened
//
// Not thread-safe (the runtime's thread). Acquire/Release O(1) amortised.
#ifndef SWAPPLAN_RUNTIME_PINNED_POOL_H_
#define SWAPPLAN_RUNTIME_PINNED_POOL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/runtime/backend.h"
#include "swapplan/runtime/event_pool.h"

namespace swapplan::runtime {

struct PinnedPoolOptions {
  // Size of each pinned block the pool allocates (> 0).
  int64_t block_bytes = int64_t{64} << 20;
  // Pinned bytes allocated up front (0 = on first use).
  int64_t initial_bytes = 0;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

struct PinnedBuffer {
  void* ptr = nullptr;
  // The class size (>= the bytes asked for).
  int64_t capacity_bytes = 0;
  int32_t size_class = -1;
  bool valid() const { return ptr != nullptr; }
};

struct PinnedPoolStats {
  // Pinned bytes allocated from the backend, and in how many calls.
  int64_t reserved_bytes = 0;
  int64_t host_allocs = 0;
  // Class bytes handed out now and at most.
  int64_t in_use_bytes = 0;
  int64_t peak_in_use_bytes = 0;
  // Acquires served from a free list.
  int64_t reuses = 0;
};

class PinnedPool {
 public:
  PinnedPool(Backend* backend, EventPool* events, const PinnedPoolOptions& options);
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // Allocates initial_bytes (if any). The backend's error when it fails.
  absl::Status Init();

  // A buffer of at least `bytes` (> 0) that work issued to `user` after this
  // call may use; the backend's error when a new block cannot be allocated.
  absl::StatusOr<PinnedBuffer> Acquire(int64_t bytes, Stream user);
  // Returns `buffer`; `ready` (whose reference passes to the pool; kNoEvent
  // when nothing is in flight) must happen before it is reused.
  void Release(const PinnedBuffer& buffer, EventId ready);

  // Drops the reuse events of free buffers whose copies have finished
  // (non-blocking queries); when none has, waits for one (a host wait).
  // The EventPool's reclaimer at an event limit. O(free buffers).
  void ReclaimEvents();

  const PinnedPoolStats& stats() const { return stats_; }

  // The class of `bytes` and its size (exposed for tests).
  static int32_t ClassOf(int64_t bytes);
  static int64_t ClassBytes(int32_t size_class);

 private:
  struct FreeBuffer {
    void* ptr;
    EventId ready;
  };
  absl::Status Grow(int64_t at_least);

  Backend* backend_;
  EventPool* events_;
  PinnedPoolOptions options_;
  std::vector<void*> blocks_;
  char* cursor_ = nullptr;
  int64_t left_ = 0;
  std::vector<std::vector<FreeBuffer>> free_;  // per class
  PinnedPoolStats stats_;
};

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_PINNED_POOL_H_
