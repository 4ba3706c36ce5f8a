// The maximal fallback of the Chameleon planner (options.h:
// ChameleonOptions::maximal_fallback): when Algorithm 2 ends with MREs left,
// swap every candidate for its whole idle window. If that still leaves an op
// above the budget the budget is infeasible for this planner; otherwise the
// swap-ins are moved as early as memory allows, to hide their copies.
//
//   1. Every initial candidate: swap-out after its last forward use, swap-in
//      at its first backward use; release points from the d2h queue.
//   2. Replay. Over budget -> nothing (the caller tries release waits or
//      reports the bytes missing and where).
//   3. For each swap in FIFO order, the swap-in moves to the latest op that
//      still hides the copy (start(op) <= start(first use) - copy time), but
//      never earlier than memory allows: bringing the tensor back at op x
//      adds its size to ops x .. first use - 1, which must stay within the
//      budget (a range-max tree finds the last op that would not).
//   4. Expected stalls: the h2d queue in swap-in order on the stall-free
//      timeline, each swap waiting max(0, copy end - start(first use)).
//
// Complexity: O(c (log n + log c) + n) for c candidates and n ops.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "planners/chameleon/planner_run.h"
#include "planners/chameleon/range_max_tree.h"

namespace swapplan::chameleon_internal {

std::optional<Policy> PlannerRun::MaximalFallback(std::vector<int64_t>* over_budget_bytes) {
  const int32_t candidates = static_cast<int32_t>(initial_candidates_.size());
  std::vector<Selection> all;
  all.reserve(initial_candidates_.size());
  for (int32_t w : initial_candidates_) {
    Selection s;
    s.window = w;
    s.in.swap_in_op = windows_[w].first_bwd_op;
    s.in.layer = layers_.layer_of_op[s.in.swap_in_op];
    s.in.fallback = true;
    all.push_back(s);
  }
  LayerBudgets budgets(layers_, options_.link_budget);
  std::vector<SwapOutResult> results = Releases(&all, SwapOutCompletion::kD2hQueue, &budgets);
  std::vector<Selection> kept;
  std::vector<SwapOutResult> kept_results;
  for (size_t i = 0; i < all.size(); ++i) {
    if (results[i].dropped) continue;
    kept.push_back(all[i]);
    kept_results.push_back(results[i]);
  }
  std::vector<int64_t> bytes = Replay(kept);
  if (explanation_ != nullptr) {
    explanation_->maximal_fallback_used = true;
    Decide({.kind = ChameleonDecisionKind::kMaximalFallback,
            .reason = absl::StrCat("Algorithm 2 ran out of candidates with ", mrl_.size(),
                                   " MREs left: swapping every one of the ", candidates,
                                   " candidates from its release to its first backward use (",
                                   all.size() - kept.size(),
                                   " of them cannot complete their copy out in time)")});
  }
  if (*std::max_element(bytes.begin(), bytes.end()) > budget_) {
    *over_budget_bytes = std::move(bytes);
    return std::nullopt;
  }

  RangeMaxTree<int64_t> tree(bytes);
  for (Selection& s : kept) {
    const SwapWindow& w = windows_[s.window];
    const int32_t lo = s.release_op + 1;
    const int32_t fb = w.first_bwd_op;
    const int32_t last_bad = tree.LastAbove(lo, fb - 1, budget_ - w.size_bytes);
    const int32_t by_memory = last_bad >= 0 ? last_bad + 1 : lo;
    const double latest_start = timeline_->start_ns(fb) - w.in_ns;
    int32_t hiding = -1;  // latest op starting no later than latest_start
    if (latest_start >= 0) {
      const int32_t j = timeline_->OpEndingAtOrAfter(latest_start);
      hiding = (j < n_ && timeline_->end_ns(j) == latest_start) ? j + 1 : j;
    }
    const int32_t x = std::clamp(hiding >= by_memory ? std::min(hiding, fb) : by_memory, lo, fb);
    s.in.swap_in_op = x;
    s.in.layer = layers_.layer_of_op[x];
    tree.Add(x, fb - 1, w.size_bytes);
  }

  std::vector<size_t> by_swap_in(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) by_swap_in[i] = i;
  std::stable_sort(by_swap_in.begin(), by_swap_in.end(), [&](size_t a, size_t b) {
    return kept[a].in.swap_in_op < kept[b].in.swap_in_op;
  });
  double stream_free = 0, total_stall = 0;
  for (size_t i : by_swap_in) {
    Selection& s = kept[i];
    const SwapWindow& w = windows_[s.window];
    const double start = std::max(timeline_->start_ns(s.in.swap_in_op), stream_free);
    stream_free = start + w.in_ns;
    s.in.stall_ns = std::max(0.0, stream_free - timeline_->start_ns(w.first_bwd_op));
    s.in.charged_ns = w.in_ns - s.in.stall_ns;
    budgets.ChargeH2d(s.in.layer, s.in.charged_ns);
    total_stall += s.in.stall_ns;
  }
  budgets_.emplace(std::move(budgets));
  selections_ = kept;
  bytes = Replay(kept);
  RecordReleases(explanation_ != nullptr ? explanation_->rounds : 0, kept, kept_results);
  return BuildPolicy(kept, bytes, total_stall);
}

}  // namespace swapplan::chameleon_internal
