#include "swapplan/planners/chameleon/candidates.h"

#include <algorithm>

namespace swapplan {

std::vector<SwapWindow> FindSwapWindows(const Trace& trace, int32_t iteration,
                                        const LogicalLayers& layers, const OpTimeline& timeline,
                                        double h2d_bytes_per_s, double d2h_bytes_per_s,
                                        int64_t min_tensor_bytes, IdleWindowStart start) {
  const IterationInfo& iter = trace.iteration(iteration);
  std::vector<SwapWindow> out;
  // Tensors used in the iteration, each once, in id order.
  std::vector<TensorId> used;
  {
    std::vector<bool> seen(trace.num_tensors(), false);
    for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
      for (TensorId t : trace.uses(i)) {
        if (!seen[t]) {
          seen[t] = true;
          used.push_back(t);
        }
      }
    }
    std::sort(used.begin(), used.end());
  }
  for (TensorId t : used) {
    const TensorInfo& info = trace.tensor(t);
    if (info.kind == TensorKind::kParameter || info.persistent) continue;
    if (info.size_bytes < min_tensor_bytes) continue;
    absl::Span<const OpIndex> uses = trace.tensor_uses(t);
    auto u = std::lower_bound(uses.begin(), uses.end(), iter.op_begin);
    for (; u + 1 != uses.end() && *(u + 1) < iter.op_end; ++u) {
      const int32_t a = *u - iter.op_begin;
      const int32_t b = *(u + 1) - iter.op_begin;
      if (layers.op_type[a] != LayerType::kForward || layers.op_type[b] != LayerType::kBackward) {
        continue;
      }
      SwapWindow w;
      w.tensor = t;
      w.last_fwd_op = a;
      w.first_bwd_op = b;
      w.size_bytes = info.size_bytes;
      w.out_ns = TransferNs(info.size_bytes, d2h_bytes_per_s);
      w.in_ns = TransferNs(info.size_bytes, h2d_bytes_per_s);
      w.earliest_release_op = timeline.OpEndingAtOrAfter(timeline.end_ns(a) + w.out_ns);
      // Off the device during release+1 .. swap_in-1 with swap_in <= b: at
      // least one op needs release <= b - 2.
      if (w.earliest_release_op > b - 2) continue;
      w.cover_begin =
          start == IdleWindowStart::kEarliestRelease ? w.earliest_release_op + 1 : a + 1;
      out.push_back(w);
    }
  }
  return out;
}

std::vector<ScoredCandidate> ScoreCandidates(absl::Span<const SwapWindow> windows,
                                             absl::Span<const int32_t> available,
                                             const MemoryReductionList& mrl, double score_c,
                                             ScoreNormalization normalization) {
  std::vector<ScoredCandidate> cl;
  cl.reserve(available.size());
  for (int32_t w : available) {
    const int32_t n = mrl.CountIn(windows[w].cover_begin, windows[w].cover_end());
    if (n > 0) cl.push_back({w, n, 0, 0, 0});
  }
  if (cl.empty()) return cl;
  int32_t n_min = cl[0].n_mre, n_max = n_min;
  int64_t s_min = windows[cl[0].window].size_bytes, s_max = s_min;
  for (const ScoredCandidate& c : cl) {
    n_min = std::min(n_min, c.n_mre);
    n_max = std::max(n_max, c.n_mre);
    s_min = std::min(s_min, windows[c.window].size_bytes);
    s_max = std::max(s_max, windows[c.window].size_bytes);
  }
  auto norm = [&](double x, double lo, double hi) {
    if (normalization == ScoreNormalization::kMax) return x / hi;
    return hi > lo ? (x - lo) / (hi - lo) : 1.0;
  };
  for (ScoredCandidate& c : cl) {
    c.n_hat = norm(c.n_mre, n_min, n_max);
    c.s_hat = norm(static_cast<double>(windows[c.window].size_bytes), static_cast<double>(s_min),
                   static_cast<double>(s_max));
    c.score = c.n_hat + score_c * c.s_hat;
  }
  std::sort(cl.begin(), cl.end(), [&](const ScoredCandidate& a, const ScoredCandidate& b) {
    if (a.score != b.score) return a.score > b.score;
    const int64_t sa = windows[a.window].size_bytes, sb = windows[b.window].size_bytes;
    if (sa != sb) return sa > sb;
    return a.window < b.window;
  });
  return cl;
}

}  // namespace swapplan
