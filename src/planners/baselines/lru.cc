// On-demand LRU baseline, ODSwap of seed 002 §6.1 (see baselines.h).
//
//   pass 1 (eviction)  walk ops; returning tensors come back at their next
//                      use; touch op k's tensors (MRU end); while op k does
//                      not fit, evict from the LRU end: out after k-1, back
//                      at its next use (on demand).
//   pass 2 (prefetch)  in the order tensors were needed back, move each
//                      swap-in as early as the budget allows, not before the
//                      previous swap-in nor before its own release.
#include <algorithm>
#include <queue>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/baselines/baselines.h"
#include "planners/baselines/common.h"
#include "planners/chameleon/range_max_tree.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan {
namespace {

struct Eviction {
  TensorId tensor;
  int32_t at;    // op k that needed the room: out and release after k - 1
  int32_t back;  // next use
};

}  // namespace

absl::StatusOr<Policy> LruPlanner::PlanPolicy(const PlanningProblem& problem) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  const Trace& trace = *problem.trace;
  const int32_t it = problem.iteration;
  const IterationInfo& iter = trace.iteration(it);
  const int32_t n = iter.num_ops();
  const int64_t budget = problem.budget_bytes();
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int64_t> unswapped, IterationUnswappedBytes(problem));

  // --- pass 1: on-demand eviction in LRU order ------------------------------
  const int32_t nt = trace.num_tensors();
  // Intrusive list, LRU at head_, MRU at tail_.
  std::vector<TensorId> prev(nt, kNoTensor), next(nt, kNoTensor);
  std::vector<uint8_t> in_list(nt, 0);
  std::vector<int32_t> last_touch(nt, -1);
  TensorId head = kNoTensor, tail = kNoTensor;
  auto unlink = [&](TensorId t) {
    (prev[t] != kNoTensor ? next[prev[t]] : head) = next[t];
    (next[t] != kNoTensor ? prev[next[t]] : tail) = prev[t];
    in_list[t] = 0;
  };
  auto push_mru = [&](TensorId t) {
    prev[t] = tail;
    next[t] = kNoTensor;
    (tail != kNoTensor ? next[tail] : head) = t;
    tail = t;
    in_list[t] = 1;
  };
  // Next use (local) after local op k, or -1.
  auto next_use_after = [&](TensorId t, int32_t k) -> int32_t {
    absl::Span<const OpIndex> u = trace.tensor_uses(t);
    auto x = std::upper_bound(u.begin(), u.end(), iter.op_begin + k);
    return x != u.end() && *x < iter.op_end ? *x - iter.op_begin : -1;
  };
  using Return = std::pair<int32_t, TensorId>;  // (op, tensor), earliest first
  std::priority_queue<Return, std::vector<Return>, std::greater<Return>> returning;
  std::vector<Eviction> evictions;
  int64_t offset = 0;
  for (int32_t k = 0; k < n; ++k) {
    while (!returning.empty() && returning.top().first == k) {
      offset += trace.tensor(returning.top().second).size_bytes;
      returning.pop();
    }
    for (TensorId t : trace.uses(iter.op_begin + k)) {
      if (trace.tensor(t).kind != TensorKind::kActivation || last_touch[t] == k) continue;
      last_touch[t] = k;
      if (in_list[t]) unlink(t);
      if (next_use_after(t, k) >= 0) push_mru(t);
    }
    int64_t usage = unswapped[k] + offset;
    while (usage > budget) {
      TensorId victim = head;
      while (victim != kNoTensor && last_touch[victim] == k) victim = next[victim];
      if (victim == kNoTensor) {
        return absl::ResourceExhaustedError(absl::StrCat(
            name(), ": op ", k, " (", trace.op_name_at(iter.op_begin + k), ") needs ",
            FormatBytes(usage), ", ", FormatBytes(usage - budget), " over the budget of ",
            FormatBytes(budget), ", with every other resident activation evicted"));
      }
      unlink(victim);
      const int32_t back = next_use_after(victim, k);
      evictions.push_back({victim, k, back});
      returning.push({back, victim});
      const int64_t size = trace.tensor(victim).size_bytes;
      offset -= size;
      usage -= size;
    }
  }

  // --- pass 2: prefetch in the order the tensors were needed back -------------
  std::vector<int64_t> delta(n + 1, 0);
  for (const Eviction& e : evictions) {
    const int64_t size = trace.tensor(e.tensor).size_bytes;
    delta[e.at] -= size;
    delta[e.back] += size;
  }
  std::vector<int64_t> usage(n);
  int64_t run = 0;
  for (int32_t k = 0; k < n; ++k) {
    run += delta[k];
    usage[k] = unswapped[k] + run;
  }
  RangeMaxTree<int64_t> tree(usage);
  std::vector<size_t> order(evictions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return evictions[a].back < evictions[b].back; });
  Policy p = BaselinePolicy(problem, name(), {});  // lru takes no options
  int32_t last_trigger = 0;
  for (size_t i : order) {
    const Eviction& e = evictions[i];
    const int64_t size = trace.tensor(e.tensor).size_bytes;
    const int32_t lo = std::max(e.at, last_trigger);  // release is e.at - 1
    int32_t trigger = e.back;
    if (lo < e.back) {
      const int32_t blocked = tree.LastAbove(lo, e.back - 1, budget - size);
      trigger = blocked < 0 ? lo : blocked + 1;
      if (trigger < e.back) tree.Add(trigger, e.back - 1, size);
    }
    last_trigger = trigger;
    PolicyItem item = MakePolicyItem(trace, it, e.tensor, e.at - 1, e.at - 1, trigger, e.back);
    // On demand: the block is released when the copy is issued and op e.at
    // waits for the copy (a planned stall, policy.h).
    item.release_waits_for_copy = true;
    p.items.push_back(std::move(item));
  }
  SWAPPLAN_RETURN_IF_ERROR(
      CheckPolicyFits(problem, unswapped, absl::StrCat("evicting ", p.items.size(), " times"), &p));
  return p;
}

}  // namespace swapplan
