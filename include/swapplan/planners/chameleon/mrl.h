// Memory reduction list (seed 001 §5.2): for every op of the iteration where
// memory exceeds the budget, an entry (MRE) with the bytes still to remove
// there. Swapping a tensor out removes its size from every MRE its
// off-device window covers; an MRE whose need reaches 0 is satisfied and
// dropped; planning ends when the list is empty.
//
//   bytes ^      ____                      MRL = { op 3: 100, op 4: 300,
//         |     /    \___                          op 5: 200 }
//  budget |----/--------\----------
//         |   /          \ (excess)
//         +---0-1-2-3-4-5-6-7---> op
//
// Held as a segment tree over the ops between the first and last MRE, with
// per node the minimum need of its active entries, how many are active and
// a pending addition, so that every operation the planner needs is
// logarithmic:
//
//   MemoryReductionList mrl;
//   mrl.Reset(curve_bytes, budget);          // O(ops)
//   mrl.CountIn(10, 20);                     // N_MRE of a window, O(log ops)
//   mrl.LastIn(10, 20);                      // last MRE in a window
//   mrl.Reduce(12, 18, 4096);                // a swap; drops satisfied MREs,
//                                            // O(log ops) + O(log ops) per drop
//
// Ops are local to the iteration (0 .. num_ops-1).
#ifndef SWAPPLAN_PLANNERS_CHAMELEON_MRL_H_
#define SWAPPLAN_PLANNERS_CHAMELEON_MRL_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace swapplan {

// A run of consecutive MREs, for explanations.
struct MrlRange {
  int32_t first_op = 0;
  int32_t last_op = 0;
  // Largest need in the run and the first op that has it.
  int64_t max_need_bytes = 0;
  int32_t max_op = 0;
};

class MemoryReductionList {
 public:
  // Entries for every op i with bytes[i] > budget_bytes, need = the excess.
  // O(ops).
  void Reset(absl::Span<const int64_t> bytes, int64_t budget_bytes);

  // Number of active entries.
  int32_t size() const { return cnt_.empty() ? 0 : cnt_[1]; }
  bool empty() const { return size() == 0; }
  // Remaining need at `op` (0 when no active entry). O(log ops).
  int64_t need(int32_t op) const;
  // Active entries in ops [lo, hi] (empty range -> 0). O(log ops).
  int32_t CountIn(int32_t lo, int32_t hi) const;
  // Last / first active op in [lo, hi], or -1. O(log ops).
  int32_t LastIn(int32_t lo, int32_t hi) const;
  int32_t FirstIn(int32_t lo, int32_t hi) const;
  // Removes `bytes` (> 0) from every active entry in [lo, hi]; entries
  // reaching <= 0 are dropped. Returns how many were dropped. O(log ops)
  // plus O(log ops) per dropped entry.
  int32_t Reduce(int32_t lo, int32_t hi, int64_t bytes);
  // The active entries as runs of consecutive ops. O(active × log ops).
  std::vector<MrlRange> Ranges() const;

 private:
  static constexpr int64_t kInactive = INT64_MAX / 4;
  void Apply(int32_t node, int64_t v);
  void Push(int32_t node);
  void Pull(int32_t node);
  int32_t Update(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi, int64_t v);
  int32_t Extract(int32_t node, int32_t l, int32_t r);
  int32_t Count(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi) const;
  int32_t Last(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi) const;
  int32_t First(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi) const;
  void Collect(int32_t node, int32_t l, int32_t r, int64_t add,
               std::vector<std::pair<int32_t, int64_t>>* out) const;

  // Tree over local ops [offset_, offset_ + width_), width_ a power of two.
  int32_t offset_ = 0;
  int32_t width_ = 0;
  int32_t num_ops_ = 0;
  std::vector<int64_t> min_;
  std::vector<int64_t> lazy_;
  std::vector<int32_t> cnt_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_CHAMELEON_MRL_H_
