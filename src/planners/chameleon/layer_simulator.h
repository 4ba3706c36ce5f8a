// The logical-layer simulator (seed 001 §5.4): per logical layer, the
// transfer time still free for swaps, and the two timing decisions made with
// it.
//
// Budgets. Every layer starts with its estimated time (Eq. (1)) per
// direction (duplex link, default) or once for both (the papers' single
// remaining_time). A swap charges its copy time (Eq. (3)) to a layer.
//
// Pre-trigger swap-in (§5.4.1). For a tensor whose window covers MREs up to
// op m_last, search backward from the layer before the one holding its first
// backward use for the latest layer whose remaining h2d time covers the
// copy, never reaching back to a layer that starts at or before m_last (the
// peak region it must relieve) or before its copy out can complete. The
// swap-in is triggered when that layer's first op is dispatched, and the
// layer's budget pays for it:
//
//   layers     ... [ L5 (MRE) ][   L6   ][   L7   ][ L8: first use ]
//   search                      <-------- L7, then L6; L5 holds m_last: stop
//   h2d                                   |=copy=|   (trigger at L7's first op)
//
// No layer fits -> the caller tries the next candidate. When no candidate
// fits (stall fallback), the best one is triggered at the first op of the
// layer before its use — or right after m_last when that is later — and
// the part of the copy that neither that layer's remaining budget nor the
// time to the first use can hide is its expected stall.
//
// Swap-out completion (§5.4.2). In swap-out order, each copy out starts when
// its last forward use has ended and the d2h stream is free; the op running
// when it completes is the release point (options.h: SwapOutCompletion for
// the papers' per-layer variant). A release at or after the op before the
// swap-in leaves no op off the device — the swap frees nothing and is
// dropped (never issued, so later copies do not queue behind it).
//
//   compute  | lf |  op  |  op  |  op  | ... | swap_in | ... | first use |
//   d2h           |=== copy ===|                 release = the op where
//                              ^ completes        the copy completes
//
// While selecting, the d2h queue is estimated incrementally (D2hQueue): a
// candidate's copy out is placed among the copies already selected, in
// swap-out order, so its estimated release accounts for queueing. Copies
// selected later may still delay it; the final release points come from
// CompleteSwapOuts, and the planner's repair rounds absorb the difference.
//
// Complexity: LayerBudgets construction O(layers), each search or charge
// O(log layers); D2hQueue O(log windows) per query or update;
// CompleteSwapOuts O(items × (log ops + layers a copy spans)).
#ifndef SWAPPLAN_SRC_PLANNERS_CHAMELEON_LAYER_SIMULATOR_H_
#define SWAPPLAN_SRC_PLANNERS_CHAMELEON_LAYER_SIMULATOR_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "swapplan/planners/chameleon/candidates.h"
#include "swapplan/planners/chameleon/logical_layers.h"
#include "swapplan/planners/chameleon/options.h"
#include "planners/chameleon/range_max_tree.h"
#include "swapplan/trace/op_times.h"

namespace swapplan {

class LayerBudgets {
 public:
  LayerBudgets(const LogicalLayers& layers, LinkBudget mode);

  int32_t num_layers() const { return static_cast<int32_t>(time_ns_.size()); }
  // Remaining time per direction (in shared mode both are the same value).
  double h2d_left_ns(int32_t l) const { return h2d_left_.Get(l); }
  double d2h_left_ns(int32_t l) const { return d2h_left_.Get(l); }
  double h2d_used_ns(int32_t l) const { return h2d_used_[l]; }
  double d2h_used_ns(int32_t l) const { return d2h_used_[l]; }

  void ChargeH2d(int32_t l, double ns);
  void ChargeD2h(int32_t l, double ns);
  // Forgets every d2h charge (release points are recomputed from scratch).
  void ClearD2h();

  // Latest layer in [lo, hi] with h2d_left_ns >= ns, or -1.
  int32_t LastH2dFit(int32_t lo, int32_t hi, double ns) const {
    return h2d_left_.LastAtLeast(lo, hi, ns);
  }
  // Earliest layer in [lo, hi] with d2h_left_ns >= ns, or -1.
  int32_t FirstD2hFit(int32_t lo, int32_t hi, double ns) const {
    return d2h_left_.FirstAtLeast(lo, hi, ns);
  }

 private:
  void Charge(int32_t l, double ns, bool h2d);
  LinkBudget mode_;
  std::vector<double> time_ns_;
  std::vector<double> h2d_used_;
  std::vector<double> d2h_used_;
  RangeMaxTree<double> h2d_left_;
  RangeMaxTree<double> d2h_left_;
};

struct SwapInPlacement {
  int32_t layer = -1;
  int32_t swap_in_op = -1;
  // Time charged to the layer and expected stall (fallback only).
  double charged_ns = 0;
  double stall_ns = 0;
  bool fallback = false;
};

// §5.4.1 for window `w` whose coverage holds MREs up to op `m_last` and
// whose copy out is estimated to complete during op `release_estimate`
// (< m_last): sets *out to the latest layer that fits, charged, and returns
// true; false when none does (nothing charged). Search range: layers
// starting after m_last up to the layer before the first backward use's.
bool PlaceSwapIn(const SwapWindow& w, int32_t m_last, int32_t release_estimate,
                 const LogicalLayers& layers, LayerBudgets* budgets, SwapInPlacement* out);

// The stall fallback for `w` (always succeeds), charged.
SwapInPlacement PlaceSwapInWithStall(const SwapWindow& w, int32_t m_last,
                                     int32_t release_estimate, const LogicalLayers& layers,
                                     const OpTimeline& timeline, LayerBudgets* budgets);

// The d2h FIFO over a fixed set of slots (every window, in swap-out order),
// of which the selected ones are active: completion time of the copy in a
// slot, given the active slots before it. A segment tree whose node holds
// the active copies' total duration D and the completion time M of its
// last active copy when the stream is free at the node's start; nodes
// combine as D = D_l + D_r, M = max(M_l + D_r, M_r).
class D2hQueue {
 public:
  // `ready_ns[i]` and `copy_ns[i]`: when slot i's copy may start (end of its
  // swap-out op) and how long it takes; slots in FIFO order, all inactive.
  D2hQueue(const std::vector<double>& ready_ns, const std::vector<double>& copy_ns);
  void SetActive(int32_t slot, bool active);
  // Completion time of slot `slot`'s copy if it were active, behind the
  // active slots before it. O(log slots).
  double CompletionIfActive(int32_t slot) const;

 private:
  struct Node {
    double d = 0;
    double m = kIdle;
  };
  static constexpr double kIdle = -1e300;
  static Node Combine(const Node& l, const Node& r) {
    return {l.d + r.d, std::max(l.m + r.d, r.m)};
  }
  int32_t width_ = 1;
  std::vector<double> ready_ns_;
  std::vector<double> copy_ns_;
  std::vector<Node> tree_;
};

// Charges a d2h copy busy during [start_ns, end_ns) on the stall-free
// timeline to the layers it overlaps, each the part inside it.
// O(log ops + layers spanned).
void ChargeD2hBusy(double start_ns, double end_ns, const LogicalLayers& layers,
                   const OpTimeline& timeline, LayerBudgets* budgets);

// One selected swap for swap-out completion, in FIFO (swap-out) order.
struct SwapOutRequest {
  int32_t swap_out_op = 0;
  int32_t swap_in_op = 0;
  int64_t size_bytes = 0;
  double out_ns = 0;
};

struct SwapOutResult {
  // Release point; -1 when dropped.
  int32_t release_op = -1;
  bool dropped = false;
  // The copy on the d2h stream (dropped items never enter it).
  double start_ns = 0;
  double end_ns = 0;
  // kLayerSearch: the layer charged (-1 when no layer fitted and the queue
  // decided), and whether the layer's last op was later than the queue
  // completion (the release was moved later to it).
  int32_t layer = -1;
  bool layer_later_than_queue = false;
};

// §5.4.2 for `requests` (sorted by swap_out_op; ties in the order the policy
// will list them). Clears and recharges the budgets' d2h side.
std::vector<SwapOutResult> CompleteSwapOuts(absl::Span<const SwapOutRequest> requests,
                                            SwapOutCompletion mode, const LogicalLayers& layers,
                                            const OpTimeline& timeline, LayerBudgets* budgets);

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_PLANNERS_CHAMELEON_LAYER_SIMULATOR_H_
