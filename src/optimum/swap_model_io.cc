// The swap MILP: from a solution to a policy, and from a policy to a
// starting point (swap_model.h).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "swapplan/optimum/swap_model.h"

namespace swapplan {

namespace {

// The choice of a cumulative family values[first, first + count): its first
// entry that is set (the last one when none is, which cannot happen for a
// chosen window).
int32_t FirstSet(absl::Span<const double> values, int32_t first, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (values[first + i] > 0.5) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(count) - 1;
}

bool IsWrapKind(WindowKind k) { return k == WindowKind::kWrap || k == WindowKind::kWrapClean; }

}  // namespace

Policy SwapModel::Extract(absl::Span<const double> values, const Policy& base) const {
  Policy p = base;
  p.items.clear();
  p.schedule.clear();
  p.pool = MemoryPool();
  std::vector<const SwapWindowVar*> from;  // the window of each item
  for (const SwapWindowVar& w : windows_) {
    if (values[w.x] < 0.5) continue;
    PolicyItem it;
    it.tensor_id = trace_->tensor(w.tensor).trace_id;
    it.size_bytes = w.size_bytes;
    it.swap_out_op = w.out_op;
    it.release_op = w.releases[FirstSet(values, w.rho, w.releases.size())];
    it.swap_in_op = w.triggers[FirstSet(values, w.sigma, w.triggers.size())];
    it.first_use_op = w.use_op;
    it.wraps = IsWrapKind(w.kind);
    it.clean = w.kind == WindowKind::kClean || w.kind == WindowKind::kWrapClean;
    if (w.kind == WindowKind::kRecompute) {
      it.action = ItemAction::kRecompute;
      it.recompute_ns = w.recompute_ns;
    }
    p.items.push_back(std::move(it));
    from.push_back(&w);
  }
  // Item order: (swap-in, first use, tensor), except that the copies of
  // one batch — out after the same op, in at the same op — keep the MILP's
  // order (by their end times): the simulator's streams take ties in item
  // order. Kahn's algorithm over those precedences, the base order first.
  const size_t ni = p.items.size();
  std::vector<size_t> base_order(ni);
  for (size_t i = 0; i < ni; ++i) base_order[i] = i;
  std::sort(base_order.begin(), base_order.end(), [&](size_t a, size_t b) {
    const PolicyItem& x = p.items[a];
    const PolicyItem& y = p.items[b];
    return std::tie(x.swap_in_op, x.first_use_op, x.tensor_id) <
           std::tie(y.swap_in_op, y.first_use_op, y.tensor_id);
  });
  std::vector<size_t> rank(ni);
  for (size_t r = 0; r < ni; ++r) rank[base_order[r]] = r;
  std::vector<std::vector<size_t>> next(ni);
  std::vector<int32_t> indegree(ni, 0);
  auto chain = [&](auto key_op, auto end_column) {
    std::map<int32_t, std::vector<size_t>> batches;
    for (size_t i = 0; i < ni; ++i) {
      if (end_column(*from[i]) >= 0) batches[key_op(p.items[i])].push_back(i);
    }
    for (auto& [op, v] : batches) {
      std::sort(v.begin(), v.end(), [&](size_t a, size_t b) {
        const double ea = values[end_column(*from[a])], eb = values[end_column(*from[b])];
        return ea != eb ? ea < eb : rank[a] < rank[b];
      });
      for (size_t k = 1; k < v.size(); ++k) {
        next[v[k - 1]].push_back(v[k]);
        ++indegree[v[k]];
      }
    }
  };
  chain([](const PolicyItem& it) { return it.swap_out_op; },
        [](const SwapWindowVar& w) { return w.d2h_end; });
  chain([](const PolicyItem& it) { return it.swap_in_op; },
        [](const SwapWindowVar& w) { return w.h2d_end; });
  std::set<std::pair<size_t, size_t>> ready;  // (rank, item)
  for (size_t i = 0; i < ni; ++i) {
    if (indegree[i] == 0) ready.insert({rank[i], i});
  }
  std::vector<bool> placed(ni, false);
  std::vector<PolicyItem> ordered;
  ordered.reserve(ni);
  while (ordered.size() < ni) {
    size_t i = 0;
    if (!ready.empty()) {
      i = ready.begin()->second;
      ready.erase(ready.begin());
    } else {
      // Opposite orders in the two streams (a cycle): take the first left.
      for (size_t r = 0; r < ni; ++r) {
        if (!placed[base_order[r]]) {
          i = base_order[r];
          break;
        }
      }
    }
    if (placed[i]) continue;
    placed[i] = true;
    ordered.push_back(p.items[i]);
    for (size_t j : next[i]) {
      if (--indegree[j] == 0 && !placed[j]) ready.insert({rank[j], j});
    }
  }
  p.items = std::move(ordered);
  return p;
}

std::vector<std::pair<int32_t, double>> SwapModel::StartFrom(const Policy& policy,
                                                             int32_t* skipped) const {
  *skipped = 0;
  bool identity = true;
  for (size_t i = 0; i < policy.schedule.size() && identity; ++i) {
    identity = policy.schedule[i] == static_cast<int32_t>(i);
  }
  if (!identity) {
    *skipped = static_cast<int32_t>(policy.items.size());
    return {};
  }
  absl::flat_hash_map<uint64_t, std::vector<int32_t>> by_tensor;
  for (size_t gi = 0; gi < windows_.size(); ++gi) {
    by_tensor[trace_->tensor(windows_[gi].tensor).trace_id].push_back(static_cast<int32_t>(gi));
  }
  std::vector<int32_t> chosen_release(windows_.size(), -1), chosen_trigger(windows_.size(), -1);
  std::vector<uint8_t> group_taken(windows_.size(), 0);  // by first window of the group
  auto group_of = [&](int32_t gi) {
    int32_t g = gi;
    while (g > 0 && windows_[g - 1].tensor == windows_[gi].tensor &&
           windows_[g - 1].gap == windows_[gi].gap) {
      --g;
    }
    return g;
  };
  int32_t mapped = 0;
  for (const PolicyItem& it : policy.items) {
    WindowKind kind = WindowKind::kSwap;
    if (it.wraps) {
      kind = it.clean ? WindowKind::kWrapClean : WindowKind::kWrap;
    } else if (it.action == ItemAction::kRecompute) {
      kind = WindowKind::kRecompute;
    } else if (it.clean) {
      kind = WindowKind::kClean;
    }
    auto found = by_tensor.find(it.tensor_id);
    int32_t at = -1;
    if (found != by_tensor.end()) {
      for (int32_t gi : found->second) {
        const SwapWindowVar& w = windows_[gi];
        if (w.kind != kind || w.use_op != it.first_use_op) continue;
        if (!IsWrapKind(kind) && !(w.out_op <= it.swap_out_op && it.swap_out_op < w.use_op)) {
          continue;
        }
        at = gi;
        break;
      }
    }
    if (at < 0 || group_taken[group_of(at)]) {
      ++*skipped;
      continue;
    }
    const SwapWindowVar& w = windows_[at];
    // Release: the first op over the budget the window covers, minus one.
    int32_t release = -1;
    for (int32_t r : w.releases) {
      if (r >= it.release_op && (IsWrapKind(kind) || r + 1 < it.swap_in_op)) {
        release = r;
        break;
      }
    }
    if (IsWrapKind(kind) && release < 0) release = w.releases.back();
    const bool trigger_ok =
        std::binary_search(w.triggers.begin(), w.triggers.end(), it.swap_in_op);
    if (release < 0 || !trigger_ok) {
      ++*skipped;  // covers no op over the budget, or a trigger outside the domain
      continue;
    }
    group_taken[group_of(at)] = 1;
    chosen_release[at] = release;
    chosen_trigger[at] = it.swap_in_op;
    ++mapped;
  }
  if (mapped == 0) return {};
  std::vector<std::pair<int32_t, double>> start;
  for (size_t gi = 0; gi < windows_.size(); ++gi) {
    const SwapWindowVar& w = windows_[gi];
    // Cumulative: set from the chosen release / trigger on (x is the last
    // trigger column).
    const bool on = chosen_release[gi] >= 0;
    for (size_t i = 0; i < w.releases.size(); ++i) {
      start.emplace_back(w.rho + static_cast<int32_t>(i),
                         on && w.releases[i] >= chosen_release[gi] ? 1.0 : 0.0);
    }
    for (size_t i = 0; i < w.triggers.size(); ++i) {
      start.emplace_back(w.sigma + static_cast<int32_t>(i),
                         on && w.triggers[i] >= chosen_trigger[gi] ? 1.0 : 0.0);
    }
  }
  return start;
}

}  // namespace swapplan
