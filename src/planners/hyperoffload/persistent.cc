// Windows of parameters and optimizer states (see persistent.h).
#include "planners/hyperoffload/persistent.h"

#include <algorithm>
#include <tuple>

#include "planners/baselines/common.h"

namespace swapplan {
namespace {

struct Group {
  std::vector<PersistentWindow> windows;
  int64_t exposed_ns = 0;
  double memory_time = 0;
};

}  // namespace

std::vector<PersistentWindow> PersistentWindows(const Trace& trace, int32_t iteration,
                                                const std::vector<int64_t>& start,
                                                const PersistentWindowOptions& options,
                                                const std::function<int64_t(int64_t)>& load_ns,
                                                const std::function<int64_t(int64_t)>& store_ns) {
  const IterationInfo& iter = trace.iteration(iteration);
  const OpIndex begin = iter.op_begin;
  const int32_t n = iter.num_ops();
  const int64_t end_ns = start[n];
  std::vector<Group> groups;
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorInfo& info = trace.tensor(t);
    if (info.kind != TensorKind::kParameter && info.kind != TensorKind::kOptimizerState) continue;
    if (info.size_bytes <= 0 || info.size_bytes < options.min_tensor_bytes) continue;
    const TensorLifetime& life = trace.lifetime(t);
    if (!life.occupies_device() || life.alloc_op >= begin || life.free_op < iter.op_end) continue;
    absl::Span<const OpIndex> in_iteration = UsesIn(trace, iter, t);
    const auto lo = in_iteration.begin(), hi = in_iteration.end();
    const int64_t uses = hi - lo;
    if (uses < 1 || uses > options.max_uses) continue;
    Group g;
    const int64_t bytes = info.size_bytes;
    const int32_t first = *lo - begin, last = *(hi - 1) - begin;
    PersistentWindow wrap;
    wrap.tensor = t;
    wrap.store_op = last;
    wrap.consumer = first;
    wrap.bytes = bytes;
    wrap.idle_ns = start[first] + (end_ns - start[last + 1]);
    wrap.wraps = true;
    g.windows.push_back(wrap);
    g.memory_time = static_cast<double>(bytes) * static_cast<double>(wrap.idle_ns);
    // Clean gaps until the first write (the tier's copy is stale after it).
    const int64_t load = load_ns(bytes);
    for (auto u = lo; u + 1 < hi; ++u) {
      if (OpWrites(trace, *u, t)) break;
      const int32_t a = *u - begin, b = *(u + 1) - begin;
      if (b - a < 2) continue;
      const int64_t gap = start[b] - start[a + 1];
      if (static_cast<double>(gap) < options.min_idle_ratio * static_cast<double>(load)) continue;
      PersistentWindow w;
      w.tensor = t;
      w.store_op = a;
      w.consumer = b;
      w.bytes = bytes;
      w.idle_ns = gap;
      w.clean = true;
      g.windows.push_back(w);
      g.memory_time += static_cast<double>(bytes) * static_cast<double>(gap);
    }
    // Exposed if alone on the streams: the first Prefetch issued when the
    // iteration starts, the Store when the last use ends.
    g.exposed_ns = std::max<int64_t>(0, load - start[first]) +
                   std::max<int64_t>(0, store_ns(bytes) - (end_ns - start[last + 1]));
    groups.push_back(std::move(g));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    if (a.exposed_ns != b.exposed_ns) return a.exposed_ns < b.exposed_ns;
    return a.memory_time > b.memory_time;
  });
  std::vector<PersistentWindow> out;
  for (size_t k = 0; k < groups.size(); ++k) {
    for (PersistentWindow& w : groups[k].windows) {
      w.group = static_cast<int32_t>(k);
      out.push_back(w);
    }
  }
  return out;
}

}  // namespace swapplan
