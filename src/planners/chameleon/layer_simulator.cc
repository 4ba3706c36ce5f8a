#include "planners/chameleon/layer_simulator.h"

#include <algorithm>

namespace swapplan {

LayerBudgets::LayerBudgets(const LogicalLayers& layers, LinkBudget mode) : mode_(mode) {
  for (const LogicalLayer& l : layers.layers) time_ns_.push_back(l.time_ns);
  h2d_used_.assign(time_ns_.size(), 0.0);
  d2h_used_.assign(time_ns_.size(), 0.0);
  h2d_left_.Assign(time_ns_);
  d2h_left_.Assign(time_ns_);
}

void LayerBudgets::Charge(int32_t l, double ns, bool h2d) {
  (h2d ? h2d_used_ : d2h_used_)[l] += ns;
  if (h2d || mode_ == LinkBudget::kShared) h2d_left_.Add(l, l, -ns);
  if (!h2d || mode_ == LinkBudget::kShared) d2h_left_.Add(l, l, -ns);
}

void LayerBudgets::ChargeH2d(int32_t l, double ns) { Charge(l, ns, true); }
void LayerBudgets::ChargeD2h(int32_t l, double ns) { Charge(l, ns, false); }

void LayerBudgets::ClearD2h() {
  std::fill(d2h_used_.begin(), d2h_used_.end(), 0.0);
  std::vector<double> h2d(time_ns_.size()), d2h(time_ns_.size());
  for (size_t l = 0; l < time_ns_.size(); ++l) {
    h2d[l] = time_ns_[l] - h2d_used_[l];
    d2h[l] = mode_ == LinkBudget::kShared ? h2d[l] : time_ns_[l];
  }
  h2d_left_.Assign(h2d);
  d2h_left_.Assign(d2h);
}

D2hQueue::D2hQueue(const std::vector<double>& ready_ns, const std::vector<double>& copy_ns)
    : ready_ns_(ready_ns), copy_ns_(copy_ns) {
  while (width_ < static_cast<int32_t>(ready_ns.size())) width_ *= 2;
  tree_.assign(2 * width_, Node{});
}

void D2hQueue::SetActive(int32_t slot, bool active) {
  int32_t node = width_ + slot;
  tree_[node] = active ? Node{copy_ns_[slot], ready_ns_[slot] + copy_ns_[slot]} : Node{};
  for (node /= 2; node >= 1; node /= 2) {
    tree_[node] = Combine(tree_[2 * node], tree_[2 * node + 1]);
  }
}

double D2hQueue::CompletionIfActive(int32_t slot) const {
  // Fold the nodes covering slots [0, slot) left to right, then the slot.
  Node acc;
  int32_t lo = width_, hi = width_ + slot;  // half-open [lo, hi) at the leaves
  int32_t right[32];  // nodes of the right border, collected right to left
  int32_t num_right = 0;
  while (lo < hi) {
    if (lo & 1) acc = Combine(acc, tree_[lo++]);
    if (hi & 1) right[num_right++] = --hi;
    lo /= 2;
    hi /= 2;
  }
  while (num_right > 0) acc = Combine(acc, tree_[right[--num_right]]);
  return Combine(acc, Node{copy_ns_[slot], ready_ns_[slot] + copy_ns_[slot]}).m;
}

bool PlaceSwapIn(const SwapWindow& w, int32_t m_last, int32_t release_estimate,
                 const LogicalLayers& layers, LayerBudgets* budgets, SwapInPlacement* out) {
  const int32_t after = std::max(m_last, release_estimate);
  const int32_t lo = layers.layer_of_op[after] + 1;
  const int32_t hi = layers.layer_of_op[w.first_bwd_op] - 1;
  if (lo > hi) return false;
  const int32_t k = budgets->LastH2dFit(lo, hi, w.in_ns);
  if (k < 0) return false;
  budgets->ChargeH2d(k, w.in_ns);
  *out = {k, layers.layers[k].begin_op, w.in_ns, 0.0, false};
  return true;
}

SwapInPlacement PlaceSwapInWithStall(const SwapWindow& w, int32_t m_last,
                                     int32_t release_estimate, const LogicalLayers& layers,
                                     const OpTimeline& timeline, LayerBudgets* budgets) {
  const int32_t before_use = layers.layer_of_op[w.first_bwd_op] - 1;
  int32_t s = before_use >= 0 ? layers.layers[before_use].begin_op : 0;
  s = std::max({s, m_last + 1, release_estimate + 1});
  s = std::min(s, w.first_bwd_op);
  const int32_t k = layers.layer_of_op[s];
  const double left = std::max(0.0, budgets->h2d_left_ns(k));
  const double usable =
      std::min(left, timeline.start_ns(w.first_bwd_op) - timeline.start_ns(s));
  SwapInPlacement p;
  p.layer = k;
  p.swap_in_op = s;
  p.charged_ns = std::min(w.in_ns, usable);
  p.stall_ns = std::max(0.0, w.in_ns - usable);
  p.fallback = true;
  budgets->ChargeH2d(k, p.charged_ns);
  return p;
}

void ChargeD2hBusy(double s, double e, const LogicalLayers& layers, const OpTimeline& timeline,
                   LayerBudgets* budgets) {
  const int32_t n = timeline.num_ops();
  int32_t l = layers.layer_of_op[std::min(timeline.OpEndingAtOrAfter(s), n - 1)];
  const int32_t num_layers = static_cast<int32_t>(layers.layers.size());
  for (; l < num_layers && layers.layers[l].start_ns < e; ++l) {
    const LogicalLayer& layer = layers.layers[l];
    const double overlap =
        std::min(e, layer.start_ns + layer.time_ns) - std::max(s, layer.start_ns);
    if (overlap > 0) budgets->ChargeD2h(l, overlap);
  }
}

std::vector<SwapOutResult> CompleteSwapOuts(absl::Span<const SwapOutRequest> requests,
                                            SwapOutCompletion mode, const LogicalLayers& layers,
                                            const OpTimeline& timeline, LayerBudgets* budgets) {
  budgets->ClearD2h();
  std::vector<SwapOutResult> out(requests.size());
  double stream_free = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const SwapOutRequest& r = requests[i];
    SwapOutResult& res = out[i];
    const double start = std::max(timeline.end_ns(r.swap_out_op), stream_free);
    const double end = start + r.out_ns;
    // The tensor is off the device during release+1 .. swap_in-1: a release
    // at swap_in-1 or later frees nothing, and the swap is not issued.
    // Never before the swap-out op: the copy starts when it ends. (In
    // double precision an op of 2^62 ns absorbs the ones after it, so the
    // op "ending at or after" the copy could be an earlier one.)
    const int32_t queue_release = std::max(r.swap_out_op, timeline.OpEndingAtOrAfter(end));
    int32_t release = queue_release;
    int32_t layer = -1;
    if (mode == SwapOutCompletion::kLayerSearch && queue_release < r.swap_in_op - 1) {
      const int32_t lo = layers.layer_of_op[r.swap_out_op];
      const int32_t hi = layers.layer_of_op[r.swap_in_op - 1];
      layer = budgets->FirstD2hFit(lo, hi, r.out_ns);
      if (layer >= 0) release = std::max(queue_release, layers.layers[layer].end_op - 1);
    }
    if (release >= r.swap_in_op - 1) {
      res.dropped = true;
      continue;
    }
    stream_free = end;
    res.start_ns = start;
    res.end_ns = end;
    res.release_op = release;
    if (layer >= 0) {
      res.layer = layer;
      res.layer_later_than_queue = release > queue_release;
      budgets->ChargeD2h(layer, r.out_ns);
      continue;
    }
    ChargeD2hBusy(start, end, layers, timeline, budgets);
  }
  return out;
}

}  // namespace swapplan
