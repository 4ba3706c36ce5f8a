// Algorithm 3 (seed 001 §6.3 and Appendix B) on the evaluation simulator's
// byte-count allocator: what SimulatorOptions::oom_handling = kAlgorithm3
// does when an op's allocations do not fit. The model is in
// swapplan/sim/simulator.h ("OOM handling"); this is its implementation,
// kept apart from the one-pass replay (simulator_run.cc), which calls it at
// five points:
//
//   per position p (program order)
//     request += SwapInBytesAt(p)           passive swap-ins due at p
//     if usage + request > capacity:
//       wait = Handle(p, ...)               (i) release, (ii) passive swap-outs
//     ... compute reaches p ...
//     wait' = IssueSwapIns(p, reach, ...)   h2d copies of those swap-ins
//     op p starts after both waits
//     OnCopyOutIssued(k) per d2h copy; ReleasedEarly(k) at release points
//     usage += FreedWhileOffAt(p)           after p's frees
//
// Inactive (every call a no-op, nothing allocated) unless the option asks
// for it, so the default simulator pays one branch per op.
//
// Complexity: construction O(T log T + items) for the T tensors of the
// iteration; per failure O(uses of the op + in-flight items) plus, per
// passive swap, O(log T) to find the size and a scan outward past
// ineligible tensors (O(T) worst case) and O(log uses) for the next use;
// swap-ins and frees O(log T) each (heaps).
#ifndef SWAPPLAN_SRC_SIM_OOM_HANDLER_H_
#define SWAPPLAN_SRC_SIM_OOM_HANDLER_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "sim/simulator_internal.h"
#include "swapplan/sim/simulator.h"

namespace swapplan::internal_sim {

// When the op must not start before, and what it waits for.
struct OomWait {
  int64_t until_ns = 0;
  // Policy item (>= 0), a passively swapped tensor (-2 - slot), or none (-1).
  int32_t binding = -1;
  StallCause cause = StallCause::kRelease;
};

class OomHandler {
 public:
  OomHandler(const Simulator& sim, const Prepared& pr, absl::Span<const int32_t> schedule);

  bool active() const { return active_; }

  // Bytes of the passively swapped tensors whose next use is position p;
  // they are part of p's allocations. Call once per position, in order.
  int64_t SwapInBytesAt(int32_t p) { return active_ ? SwapInBytesAtActive(p) : 0; }

  // Policy item k's copy out was issued (step (i) may release its block).
  void OnCopyOutIssued(int32_t k) {
    if (active_ && !naive_) inflight_.push_back(k);
  }
  // True when step (i) already released item k's block: its release point
  // must not release it again.
  bool ReleasedEarly(int32_t k) const { return active_ && released_early_[k] != 0; }

  // Op at position p asks for `request` bytes that do not fit. Step (i)
  // (custom record-stream only: naive mode has synchronised already)
  // releases every in-flight block through `release_item`; step (ii)
  // passively swaps out tensors (d2h copies start after `end_prev`, the end
  // of position p-1, on `*out_stream`) until the request fits or no
  // candidate is left; an unresolved failure is counted in
  // r->oom_handling. Updates *usage. Returns what op p must wait for.
  OomWait Handle(int32_t p, int64_t request, int64_t end_prev, int64_t* usage,
                 int64_t* out_stream, const std::vector<int64_t>& d2h_end,
                 absl::FunctionRef<void(int32_t)> release_item, SimulationResult* r);

  // Issues the h2d copies of the swap-ins SwapInBytesAt(p) announced (after
  // the policy's copies at p, on `*in_stream`, not before `reach`). Returns
  // what op p must wait for.
  OomWait IssueSwapIns(int32_t p, int64_t reach, int64_t* in_stream, SimulationResult* r) {
    return active_ && !due_.empty() ? IssueSwapInsActive(reach, in_stream, r) : OomWait{};
  }

  // Bytes of passively swapped-out tensors freed after position p: the
  // frees subtract them although they no longer occupy the device.
  int64_t FreedWhileOffAt(int32_t p) {
    return active_ && !free_heap_.empty() ? FreedWhileOffAtActive(p) : 0;
  }

  // Trace file id of the tensor behind a binding < -1.
  uint64_t TraceIdOfBinding(int32_t binding) const;

 private:
  int64_t SwapInBytesAtActive(int32_t p);
  OomWait IssueSwapInsActive(int64_t reach, int64_t* in_stream, SimulationResult* r);
  int64_t FreedWhileOffAtActive(int32_t p);
  // Resident at p, not used by op p, outside every policy window of its
  // tensor; with `needs_next_use` also used again after p in the iteration.
  bool Eligible(int32_t slot, int32_t p, bool needs_next_use) const;
  // Slot of the eligible tensor of `by_size` (sorted by size, then slot)
  // whose size is closest to `target` (ties: the larger, then the lower
  // slot), or -1.
  int32_t Closest(const std::vector<int32_t>& by_size, int32_t p, int64_t target,
                  bool needs_next_use) const;
  // Position of the first use of `slot` after position p, or -1.
  int32_t NextUse(int32_t slot, int32_t p) const;

  using Entry = std::pair<int32_t, int32_t>;  // (position, slot)
  using MinHeap = std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>;

  bool active_ = false;
  const Simulator* sim_ = nullptr;
  const Prepared* pr_ = nullptr;
  absl::Span<const int32_t> schedule_;
  bool naive_ = false;
  int64_t latency_ns_ = 0;
  // Per simulator tensor (slot): size, positions of allocation and free.
  std::vector<int64_t> size_;
  std::vector<int32_t> alloc_, free_;
  // Slots allocated and freed within the iteration, by (size, slot), and
  // the persistent ones (resident before the first op or after the last:
  // parameters, gradients, optimizer states) — the last resort, with
  // SimulatorOptions::oom_persistent_victims.
  std::vector<int32_t> by_size_, persistent_by_size_;
  // Policy windows per slot, CSR: off the device in (out, first use], or
  // for a wrapping window after out and up to first use.
  struct Window {
    int32_t out = 0, use = 0;
    bool wraps = false;
  };
  std::vector<int32_t> window_begin_;
  std::vector<Window> windows_;
  std::vector<uint8_t> off_;
  std::vector<int32_t> used_stamp_;
  std::vector<int64_t> passive_d2h_end_;
  absl::flat_hash_map<TensorId, int32_t> slot_of_;
  std::vector<int32_t> inflight_;
  std::vector<uint8_t> released_early_;
  MinHeap swap_in_heap_, free_heap_;
  std::vector<int32_t> due_;
};

}  // namespace swapplan::internal_sim

#endif  // SWAPPLAN_SRC_SIM_OOM_HANDLER_H_
