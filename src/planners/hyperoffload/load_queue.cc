// Load-stream contention (see load_queue.h).
#include "planners/hyperoffload/load_queue.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

namespace swapplan {

std::vector<LoadSlot> LatestLoadStarts(const std::vector<QueuedLoad>& loads) {
  const size_t n = loads.size();
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Per tier, the last deadline first (the queue walked backward).
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const QueuedLoad& x = loads[a];
    const QueuedLoad& y = loads[b];
    return std::tie(x.tier, y.deadline_ns, b) < std::tie(y.tier, x.deadline_ns, a);
  });
  std::vector<LoadSlot> out(n);
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  int32_t tier = -1;
  int64_t next_start = kNever;  // latest start of the next load on the tier
  for (int32_t j : order) {
    const QueuedLoad& l = loads[j];
    if (l.tier != tier) {
      tier = l.tier;
      next_start = kNever;
    }
    LoadSlot& s = out[j];
    s.finish_by_ns = std::min(l.deadline_ns, next_start);
    s.latest_start_ns = std::max(s.finish_by_ns - l.copy_ns, l.ready_ns);
    next_start = s.latest_start_ns;
  }
  return out;
}

std::vector<int64_t> QueuedLoadStalls(const std::vector<QueuedLoad>& loads,
                                      const std::vector<int64_t>& issue_ns) {
  const size_t n = loads.size();
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return std::tie(loads[a].tier, issue_ns[a], loads[a].deadline_ns, a) <
           std::tie(loads[b].tier, issue_ns[b], loads[b].deadline_ns, b);
  });
  std::vector<int64_t> stall(n, 0);
  int32_t tier = -1;
  int64_t free_ns = 0;
  for (int32_t j : order) {
    const QueuedLoad& l = loads[j];
    if (l.tier != tier) {
      tier = l.tier;
      free_ns = 0;
    }
    free_ns = std::max(issue_ns[j], free_ns) + l.copy_ns;
    stall[j] = std::max<int64_t>(0, free_ns - l.deadline_ns);
  }
  return stall;
}

}  // namespace swapplan
