// Recomputations of a resolved policy (resolver_recompute.h).
#include "policy/resolver_recompute.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/trace/recompute.h"
#include "swapplan/trace/tensor_label.h"

namespace swapplan {

void RecipeMemo::Add(int32_t position, const std::vector<TensorId>& targets, Entry entry) {
  std::vector<Entry>& list = entries_[std::make_pair(position, targets)];
  if (list.size() >= kMaxPerKey) list.erase(list.begin());
  list.push_back(std::move(entry));
}

void ResolveRecomputations(const Trace& trace, const DeviceModel& device,
                           const std::vector<int32_t>& slot_of_tensor,
                           const RecomputeAnalysis* given, RecipeMemo* memo, ResolvedPolicy* rp) {
  std::map<int32_t, std::vector<int32_t>> groups;  // position -> items
  for (size_t k = 0; k < rp->items.size(); ++k) {
    if (!rp->items[k].swap()) groups[rp->items[k].in].push_back(static_cast<int32_t>(k));
  }
  if (groups.empty()) return;
  absl::StatusOr<RecomputeAnalysis> built = absl::FailedPreconditionError("not built");
  if (given == nullptr) {
    built = RecomputeAnalysis::Build(trace, rp->iteration, device);
    if (!built.ok()) return;  // the iteration exists; a bad scale is the device's issue
  }
  const RecomputeAnalysis* analysis = given != nullptr ? given : &*built;
  if (rp->scheduled()) memo = nullptr;  // memo entries are for the recorded order
  // Accounted windows per tensor (off the device strictly inside them).
  // (tensor, item index) sorted: a tensor's windows are one equal range.
  std::vector<std::pair<TensorId, int32_t>> windows;
  windows.reserve(rp->items.size());
  for (size_t k = 0; k < rp->items.size(); ++k) {
    windows.emplace_back(rp->items[k].tensor, static_cast<int32_t>(k));
  }
  std::sort(windows.begin(), windows.end());
  auto text = [&](int32_t k) {
    const ResolvedItem& it = rp->items[k];
    return absl::StrCat("item ", it.item, " (", TensorLabel(trace, it.tensor, LabelForm::kShort), ")");
  };
  for (const auto& [position, items] : groups) {
    ResolvedRecompute g;
    g.position = position;
    g.items = items;
    std::vector<TensorId> targets;
    for (int32_t k : items) {
      g.stated_ns += rp->items[k].recompute_ns;
      targets.push_back(rp->items[k].tensor);
    }
    // On the device when the recipe runs: allocated before this position,
    // not freed before it, and not off under an item (a SWAP item coming
    // back at this very position is still being copied in).
    auto available = [&, position = position](TensorId x) {
      const int32_t slot = slot_of_tensor[x];
      if (slot < 0) return false;
      const ResolvedTensor& t = rp->tensors[slot];
      if (!(t.alloc < position && t.free >= position)) return false;
      auto w = std::lower_bound(windows.begin(), windows.end(),
                                std::make_pair(x, std::numeric_limits<int32_t>::min()));
      for (; w != windows.end() && w->first == x; ++w) {
        const ResolvedItem& it = rp->items[w->second];
        const bool off = it.wraps ? (position < it.in || position > it.release)
                                  : (position > it.release && position <= it.in);
        if (off) return false;
      }
      return true;
    };
    const RecomputeRecipe* remembered =
        memo != nullptr ? memo->Find(position, targets, available) : nullptr;
    RecomputeRecipe planned;
    if (remembered != nullptr) {
      ++memo->hits;
    } else if (memo != nullptr) {
      ++memo->misses;
      RecipeMemo::Entry entry;
      entry.recipe = analysis->Plan(
          targets, rp->OpAt(position),
          [&](TensorId x) {
            const bool answer = available(x);
            entry.asked.emplace_back(x, answer);
            return answer;
          },
          rp->pos);
      planned = entry.recipe;
      memo->Add(position, targets, std::move(entry));
    } else {
      planned = analysis->Plan(targets, rp->OpAt(position), available, rp->pos);
    }
    const RecomputeRecipe& r = remembered != nullptr ? *remembered : planned;
    g.blocker = r.blocker;
    const int32_t first = items.front();
    const int32_t local = rp->OpAt(position);
    // Built only for an issue's message.
    auto where = [&] {
      return absl::StrCat("op ", local, " (",
                          trace.op_name_at(trace.iteration(rp->iteration).op_begin + local), ")");
    };
    if (!r.ok()) {
      int32_t blamed = first;
      for (int32_t k : items) {
        if (rp->items[k].tensor == r.blocked_tensor) blamed = k;
      }
      const TensorId b = r.blocked_tensor;
      rp->issues.push_back(
          {ResolveRule::kNotRecomputable, rp->items[blamed].item, local,
           absl::StrCat(text(blamed), ": cannot be recomputed before ", where(), ": ",
                        TensorLabel(trace, b, LabelForm::kShort), " in its recipe is ",
                        RecomputeBlockerName(r.blocker), " [",
                        ResolveRuleTag(ResolveRule::kNotRecomputable), "]")});
    } else {
      g.cost_ns = r.cost_ns;
      g.transient_bytes = r.transient_peak_bytes;
      g.leaves = r.leaves;
      g.intermediates = r.intermediates;
      if (analysis->has_costs() && g.stated_ns < g.cost_ns) {
        rp->issues.push_back(
            {ResolveRule::kRecomputeUnderstated, rp->items[first].item, local,
             absl::StrCat(text(first), ": the ", items.size(),
                          " RECOMPUTE item(s) before ", where(), " state ", g.stated_ns,
                          " ns, but re-running their ", r.ops.size(), " op(s) takes ",
                          g.cost_ns, " ns [",
                          ResolveRuleTag(ResolveRule::kRecomputeUnderstated), "]")});
      }
    }
    rp->recomputes.push_back(std::move(g));
  }
}

}  // namespace swapplan
