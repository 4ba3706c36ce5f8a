// The release-wait fallback of the Chameleon planner (options.h:
// ReleaseWait::kWhenNeeded). Used when Algorithm 2, its repair rounds and the
// maximal fallback all leave ops above the budget.
//
// Why they fail. A copy out starts after the tensor's last forward use and
// the d2h link moves bandwidth × time: if the budget needs more bytes gone
// by an op than the link can copy before it, no release point "where the
// copy completes" (§5.4.2) reaches it. Example (Llama-2-7B, DP8 ZeRO-2, seq
// 4096 on a 910B at r = 2): 10.78 GiB must be off the device at the loss,
// 430 ms into the forward pass; at 24 GB/s the link copies at most ~10.3 GB
// by then. Only stalling the compute stream until more is copied helps —
// which is what an early release does: op release_op + 1 waits for the copy
// (the custom record-stream's event wait), as the simulator models.
//
//   compute  |  op 9  | op 10 |  wait  | op 11 (over budget) |
//   d2h        |===== A =====|==== B ====|
//                            ^ B released after op 10: op 11 waits for B
//
// 1. Selection. Start from Algorithm 2's swaps. Any window may now be off
//    the device from the op after its last forward use; with that optimistic
//    coverage the MRL is rebuilt and more windows are selected, pass by pass
//    in Eq. (2) order, their swap-ins placed as in Algorithm 2 (the latest
//    layer with h2d time left after the MREs they relieve, else the stall
//    fallback). A CL that runs dry with MREs left: infeasible even so.
// 2. Release points. The d2h FIFO on the stall-free timeline gives each copy
//    its completion op (§5.4.2). Sweeping the ops in order, an op above the
//    budget pulls releases to the op before it, taking the pending copies
//    (last forward use passed, copy not yet complete, tensor not yet back) in
//    FIFO order — the earliest queued completes first, so the wait is the
//    shortest; each pulled item gets release_waits_for_copy. Pulls only take
//    tensors off earlier, so every op reaches the optimistic bytes of step 1
//    if it needs to.
// 3. A swap that still frees nothing (completion at or after its swap-in − 1,
//    never pulled) is dropped and step 2 rerun: fewer copies ahead only make
//    the others complete earlier.
// 4. Expected stall: the FIFO again on a timeline stretched by the waits (an
//    op that waits delays every later op and the start of later copies), plus
//    the swap-ins' stall-fallback estimates.
//
// Complexity: selection as Algorithm 2's passes; each release pass
// O(n + s log s) for n ops and s swaps (a heap of pending copies); the
// stall estimate O(n + s).
#include <algorithm>
#include <functional>
#include <queue>

#include "absl/strings/str_cat.h"
#include "planners/chameleon/planner_run.h"

namespace swapplan::chameleon_internal {

std::optional<Policy> PlannerRun::ReleaseWaitFallback(std::vector<int64_t>* over_budget_bytes,
                                                      int32_t* candidates) {
  const int32_t num_windows = static_cast<int32_t>(windows_.size());
  // Decisions are listed under the last round of Algorithm 2.
  const int32_t round = explanation_ != nullptr ? std::max(0, explanation_->rounds - 1) : 0;
  // Coverage from the op after the last forward use.
  std::vector<SwapWindow> wide = windows_;
  for (SwapWindow& w : wide) w.cover_begin = w.last_fwd_op + 1;
  mrl_.Reset(base_, budget_);
  *candidates = 0;
  for (const SwapWindow& w : wide) {
    if (mrl_.CountIn(w.cover_begin, w.cover_end()) > 0) ++*candidates;
  }

  std::vector<Selection> sel = selections_;
  std::vector<bool> taken(num_windows, false);
  for (const Selection& s : sel) taken[s.window] = true;
  auto optimistic = [&](std::vector<Selection> v) {
    for (Selection& s : v) s.release_op = windows_[s.window].last_fwd_op;
    return Replay(v);
  };
  mrl_.Reset(optimistic(sel), budget_);
  if (explanation_ != nullptr) {
    explanation_->release_wait_used = true;
    Decide({.kind = ChameleonDecisionKind::kReleaseWait,
            .round = round,
            .reason = absl::StrCat(
                "the d2h link cannot complete the copies the budget needs before the ops that "
                "need them gone: releases may now precede their copy's completion (the next op "
                "waits for it); with the ",
                sel.size(), " swaps selected so far off from the op after their last forward use, ",
                mrl_.size(), " of the iteration's ops would still be above the budget")});
  }

  // 1. Selection with the optimistic coverage.
  for (int32_t pass = 0; !mrl_.empty(); ++pass) {
    std::vector<int32_t> available;
    for (int32_t w = 0; w < num_windows; ++w) {
      if (!taken[w]) available.push_back(w);
    }
    std::vector<ScoredCandidate> cl = ScoreCandidates(wide, available, mrl_, options_.score_c,
                                                      options_.normalization);
    if (explanation_ != nullptr) {
      explanation_->passes.push_back({round, pass, mrl_.size(), cl, /*release_wait=*/true});
    }
    if (cl.empty()) break;
    for (const ScoredCandidate& c : cl) {
      if (mrl_.empty()) break;
      const SwapWindow& w = wide[c.window];
      const int32_t m_last = mrl_.LastIn(w.cover_begin, w.cover_end());
      if (m_last < 0) continue;
      SwapInPlacement p;
      if (!PlaceSwapIn(w, m_last, w.last_fwd_op, layers_, &*budgets_, &p)) {
        p = PlaceSwapInWithStall(w, m_last, w.last_fwd_op, layers_, *timeline_, &*budgets_);
      }
      mrl_.Reduce(w.cover_begin, p.swap_in_op - 1, w.size_bytes);
      taken[c.window] = true;
      sel.push_back({c.window, p, -1, false});
      if (explanation_ != nullptr) {
        Decide({.kind = p.fallback ? ChameleonDecisionKind::kStallFallback
                                   : ChameleonDecisionKind::kScheduled,
                .round = round,
                .pass = pass,
                .window = c.window,
                .layer = p.layer,
                .swap_in_op = p.swap_in_op,
                .stall_ns = p.stall_ns,
                .reason = absl::StrCat(
                    WindowText(c.window), ": release-wait fallback: swap-in triggered at ",
                    OpText(p.swap_in_op), " in ", LayerText(p.layer),
                    p.fallback ? absl::StrCat("; ", Ns(p.stall_ns), " of its ", Ns(w.in_ns),
                                              " copy in cannot be hidden (expected stall)")
                               : std::string(""),
                    "; off the device from at best op ", w.cover_begin, " (if released early)")});
      }
    }
  }
  if (!mrl_.empty()) {
    *over_budget_bytes = optimistic(sel);
    return std::nullopt;
  }

  // 2-3. Release points, pulled earlier where an op is above the budget.
  std::vector<int64_t> bytes;
  std::vector<int32_t> pulled_at;  // per selection: the op that pulled it (-1: none)
  std::vector<double> copy_start, copy_end;
  for (;;) {
    SortFifo(&sel);
    const int32_t m = static_cast<int32_t>(sel.size());
    copy_start.assign(m, 0);
    copy_end.assign(m, 0);
    pulled_at.assign(m, -1);
    double stream_free = 0;
    for (int32_t i = 0; i < m; ++i) {
      const SwapWindow& w = windows_[sel[i].window];
      copy_start[i] = std::max(timeline_->end_ns(w.last_fwd_op), stream_free);
      copy_end[i] = stream_free = copy_start[i] + w.out_ns;
      // Not before the swap-out op (see CompleteSwapOuts: times are doubles).
      sel[i].release_op = std::min(
          std::max(w.last_fwd_op, timeline_->OpEndingAtOrAfter(copy_end[i])), n_ - 1);
      sel[i].release_waits = false;
    }
    bytes = Replay(sel);
    std::vector<int64_t> undo(n_ + 1, 0);
    int64_t reduction = 0;
    // Pending copies by FIFO position: the earliest queued completes first.
    std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> pending;
    int32_t next = 0;
    for (int32_t k = 0; k < n_; ++k) {
      reduction -= undo[k];
      while (next < m && windows_[sel[next].window].last_fwd_op < k) pending.push(next++);
      while (bytes[k] - reduction > budget_ && !pending.empty()) {
        const int32_t i = pending.top();
        pending.pop();
        Selection& s = sel[i];
        if (s.release_op < k || s.in.swap_in_op <= k) continue;  // already off / back
        const int32_t last_off = std::min(s.release_op, s.in.swap_in_op - 1);
        const int64_t size = windows_[s.window].size_bytes;
        s.release_op = k - 1;
        s.release_waits = true;
        pulled_at[i] = k;
        reduction += size;
        undo[last_off + 1] += size;
      }
      bytes[k] -= reduction;
    }
    // Swaps that free nothing leave the FIFO (and return their h2d time).
    std::vector<Selection> kept;
    for (const Selection& s : sel) {
      if (s.release_op < s.in.swap_in_op - 1) {
        kept.push_back(s);
        continue;
      }
      budgets_->ChargeH2d(s.in.layer, -s.in.charged_ns);
      taken[s.window] = false;
      state_[s.window] = WindowState::kRejected;
      if (explanation_ != nullptr) {
        Decide({.kind = ChameleonDecisionKind::kDropped,
                .round = round,
                .window = s.window,
                .swap_in_op = s.in.swap_in_op,
                .reason = absl::StrCat(WindowText(s.window),
                                       ": release-wait fallback: not needed early and its copy "
                                       "out completes too late to free anything: dropped")});
      }
    }
    if (kept.size() == sel.size()) break;
    sel = std::move(kept);
  }
  if (*std::max_element(bytes.begin(), bytes.end()) > budget_) {
    // Cannot happen (pulls reach the optimistic bytes); kept as a guard.
    *over_budget_bytes = std::move(bytes);
    return std::nullopt;
  }

  // 4. Expected stall on the timeline stretched by the waits.
  const int32_t m = static_cast<int32_t>(sel.size());
  std::vector<std::vector<int32_t>> waits_at(n_);
  for (int32_t i = 0; i < m; ++i) {
    if (sel[i].release_waits) waits_at[sel[i].release_op + 1].push_back(i);
  }
  std::vector<double> shift(n_, 0.0);  // total wait up to and including op k
  std::vector<double> wait_of(m, 0.0);
  double delay = 0, stream_free = 0, overhead = 0;
  int32_t queued = 0;
  std::vector<double> end_stretched(m, 0.0);
  for (int32_t k = 0; k < n_; ++k) {
    while (queued < m && windows_[sel[queued].window].last_fwd_op < k) {
      const int32_t lf = windows_[sel[queued].window].last_fwd_op;
      const double start = std::max(timeline_->end_ns(lf) + shift[lf], stream_free);
      end_stretched[queued] = stream_free = start + windows_[sel[queued].window].out_ns;
      ++queued;
    }
    const double op_start = timeline_->start_ns(k) + delay;
    double ready = op_start;
    for (int32_t i : waits_at[k]) ready = std::max(ready, end_stretched[i]);
    if (ready > op_start) {
      for (int32_t i : waits_at[k]) wait_of[i] = std::max(0.0, end_stretched[i] - op_start);
      delay += ready - op_start;
    }
    shift[k] = delay;
  }
  overhead += delay;
  for (const Selection& s : sel) overhead += s.in.stall_ns;

  // The explanation: pulls, d2h charges, release points.
  budgets_->ClearD2h();
  std::vector<SwapOutResult> results(m);
  for (int32_t i = 0; i < m; ++i) {
    ChargeD2hBusy(copy_start[i], copy_end[i], layers_, *timeline_, &*budgets_);
    results[i].release_op = sel[i].release_op;
    results[i].start_ns = copy_start[i];
    results[i].end_ns = copy_end[i];
    if (explanation_ != nullptr && sel[i].release_waits) {
      Decide({.kind = ChameleonDecisionKind::kReleaseWait,
              .round = round,
              .window = sel[i].window,
              .swap_in_op = sel[i].in.swap_in_op,
              .release_op = sel[i].release_op,
              .stall_ns = wait_of[i],
              .reason = absl::StrCat(
                  WindowText(sel[i].window), ": released after ", OpText(sel[i].release_op),
                  " before its copy out completes (", Ns(copy_end[i]),
                  " on the stall-free timeline) so that ", OpText(pulled_at[i]),
                  " fits the budget; that op waits for the copy (expected ", Ns(wait_of[i]),
                  " after the earlier waits)")});
    }
  }
  for (int32_t w = 0; w < num_windows; ++w) {
    if (taken[w]) state_[w] = WindowState::kSelected;
  }
  selections_ = sel;
  last_releases_ = results;
  RecordReleases(round, sel, results);
  return BuildPolicy(sel, bytes, overhead);
}

}  // namespace swapplan::chameleon_internal
