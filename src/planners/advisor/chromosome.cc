#include "swapplan/planners/advisor/chromosome.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "swapplan/util/checked.h"

namespace swapplan {

// --- schedules ---------------------------------------------------------------------

std::pair<std::vector<int32_t>, std::vector<int32_t>> CrossoverSchedules(
    absl::Span<const int32_t> a, absl::Span<const int32_t> b, int32_t cr) {
  const int32_t n = static_cast<int32_t>(a.size());
  cr = std::clamp(cr, 0, n);
  auto child = [n, cr](absl::Span<const int32_t> head, absl::Span<const int32_t> rest) {
    std::vector<int32_t> c;
    c.reserve(n);
    std::vector<bool> taken(n, false);
    for (int32_t i = 0; i < cr; ++i) {
      c.push_back(head[i]);
      taken[head[i]] = true;
    }
    for (int32_t op : rest) {
      if (!taken[op]) c.push_back(op);
    }
    return c;
  };
  return {child(b, a), child(a, b)};
}

namespace {

// Fenwick tree over 0/1 flags: point update, k-th set flag. O(log n).
class FlagTree {
 public:
  explicit FlagTree(int32_t n) : n_(n), tree_(n + 1, 0) {
    top_ = 1;
    while (top_ * 2 <= n_) top_ *= 2;
  }
  void Add(int32_t i, int32_t v) {
    for (++i; i <= n_; i += i & -i) tree_[i] += v;
  }
  // Index of the k-th (0-based) set flag; requires k < count.
  int32_t Kth(int32_t k) const {
    int32_t at = 0;
    for (int32_t step = top_; step > 0; step /= 2) {
      if (at + step <= n_ && tree_[at + step] <= k) {
        at += step;
        k -= tree_[at];
      }
    }
    return at;  // 1-based position at+1 -> 0-based at
  }

 private:
  int32_t n_;
  int32_t top_;
  std::vector<int32_t> tree_;
};

}  // namespace

void MutateSchedule(const DataflowGraph& graph, absl::Span<const int32_t> parent, double p,
                    Rng* rng, std::vector<int32_t>* out) {
  const int32_t n = graph.num_ops();
  std::vector<int32_t> where(n);
  for (int32_t i = 0; i < n; ++i) where[parent[i]] = i;
  std::vector<int32_t> indegree(n);
  FlagTree ready(n);
  int32_t count = 0;
  for (int32_t op = 0; op < n; ++op) {
    indegree[op] = graph.in_degree(op);
    if (indegree[op] == 0) {
      ready.Add(where[op], 1);
      ++count;
    }
  }
  out->clear();
  out->reserve(n);
  while (count > 0) {
    const int32_t k = rng->Bernoulli(p) ? static_cast<int32_t>(rng->Uniform(count)) : 0;
    const int32_t at = ready.Kth(k);
    ready.Add(at, -1);
    --count;
    const int32_t op = parent[at];
    out->push_back(op);
    for (int32_t v : graph.successors(op)) {
      if (--indegree[v] == 0) {
        ready.Add(where[v], 1);
        ++count;
      }
    }
  }
}

// --- allocations ------------------------------------------------------------------------

bool IsValidAllocation(const Allocation& a) {
  if (a.cls.empty() || a.cls[0] != 0) return a.cls.empty() && a.cnt.empty();
  for (size_t i = 1; i < a.cls.size(); ++i) {
    const int32_t step = a.cls[i] - a.cls[i - 1];
    if (step != 0 && step != 1) return false;
  }
  return static_cast<int32_t>(a.cnt.size()) == a.num_classes();
}

void RepairClasses(std::vector<int32_t>* cls) {
  if (cls->empty()) return;
  int32_t prev_raw = (*cls)[0];
  (*cls)[0] = 0;
  for (size_t i = 1; i < cls->size(); ++i) {
    const int32_t raw = (*cls)[i];
    const int32_t step = std::clamp(raw - prev_raw, 0, 1);
    prev_raw = raw;
    (*cls)[i] = (*cls)[i - 1] + step;
  }
}

std::vector<int64_t> ClassObjectBytes(const std::vector<int32_t>& cls,
                                      const std::vector<int64_t>& sizes) {
  std::vector<int64_t> bytes(cls.empty() ? 0 : cls.back() + 1, 0);
  for (size_t i = 0; i < cls.size(); ++i) bytes[cls[i]] = std::max(bytes[cls[i]], sizes[i]);
  return bytes;
}

namespace {

// Sum of cnt[c] * obj[c] over the classes, checked: false when it overflows
// int64 (so it exceeds every budget).
bool PoolBytes(const std::vector<int64_t>& obj, const std::vector<int32_t>& cnt, int64_t* total,
               size_t* failed_class) {
  int64_t sum = 0;
  for (size_t c = 0; c < cnt.size() && c < obj.size(); ++c) {
    int64_t bytes = 0;
    if (!CheckedMul(obj[c], int64_t{cnt[c]}, &bytes) || !CheckedAdd(sum, bytes, &sum)) {
      *failed_class = c;
      return false;
    }
  }
  *total = sum;
  return true;
}

}  // namespace

absl::StatusOr<int64_t> AllocationBytes(const Allocation& a, const std::vector<int64_t>& sizes) {
  const std::vector<int64_t> obj = ClassObjectBytes(a.cls, sizes);
  int64_t total = 0;
  size_t c = 0;
  if (!PoolBytes(obj, a.cnt, &total, &c)) {
    return OverflowError(absl::StrCat("advisor: pool size class ", c),
                         absl::StrCat(a.cnt[c], " objects of ", obj[c],
                                      " bytes bring the pool past a 64-bit byte count"));
  }
  return total;
}

std::vector<int32_t> ExpandCounts(const Allocation& a) {
  std::vector<int32_t> ext(a.cls.size());
  for (size_t i = 0; i < a.cls.size(); ++i) ext[i] = a.cnt[a.cls[i]];
  return ext;
}

std::vector<int32_t> CollapseCounts(const std::vector<int32_t>& cntext,
                                    const std::vector<int32_t>& cls) {
  const int32_t classes = cls.empty() ? 0 : cls.back() + 1;
  std::vector<int64_t> sum(classes, 0), num(classes, 0);
  for (size_t i = 0; i < cls.size(); ++i) {
    sum[cls[i]] += cntext[i];
    ++num[cls[i]];
  }
  std::vector<int32_t> cnt(classes);
  for (int32_t c = 0; c < classes; ++c) {
    cnt[c] = static_cast<int32_t>((2 * sum[c] + num[c]) / (2 * num[c]));  // round half up
  }
  return cnt;
}

std::vector<int32_t> MinCounts(const AdvisorProblem& problem, const std::vector<int32_t>& cls) {
  const int32_t classes = cls.empty() ? 0 : cls.back() + 1;
  std::vector<int32_t> min(classes, 0), live(classes, 0);
  const std::vector<AdvisorProblem::PinEvent>& ev = problem.pin_events();
  for (size_t k = 0; k < ev.size();) {
    const int32_t p = ev[k].position;
    // Ends (-1) sort before starts at a position: apply all, then measure.
    size_t e = k;
    for (; e < ev.size() && ev[e].position == p; ++e) live[cls[ev[e].size_index]] += ev[e].delta;
    for (size_t j = k; j < e; ++j) {
      const int32_t c = cls[ev[j].size_index];
      min[c] = std::max(min[c], live[c]);
    }
    k = e;
  }
  return min;
}

bool RepairCounts(const std::vector<int64_t>& sizes, const std::vector<int32_t>& min_counts,
                  int64_t budget_bytes, Allocation* a) {
  const std::vector<int64_t> obj = ClassObjectBytes(a->cls, sizes);
  const int32_t classes = a->num_classes();
  a->cnt.resize(classes, 0);
  for (int32_t c = 0; c < classes; ++c) a->cnt[c] = std::max(a->cnt[c], min_counts[c]);
  // The pool's bytes are checked sums: a total that overflows int64 exceeds
  // every budget; its excess is then taken as INT64_MAX - budget (at least
  // 1), an underestimate, so the loop just runs again until the pool fits.
  while (true) {
    int64_t total = 0;
    size_t failed = 0;
    const bool fits = PoolBytes(obj, a->cnt, &total, &failed);
    if (fits && total <= budget_bytes) break;
    int64_t active = 0;
    for (int32_t c = 0; c < classes; ++c) active += a->cnt[c] > min_counts[c];
    if (active == 0) return false;
    int64_t excess = INT64_MAX;
    if (fits) {
      excess = total - budget_bytes;  // total > budget_bytes
    } else if (!CheckedSub(INT64_MAX, budget_bytes, &excess)) {
      excess = INT64_MAX;
    }
    excess = std::max<int64_t>(1, excess);
    for (int32_t c = 0; c < classes; ++c) {
      if (a->cnt[c] <= min_counts[c]) continue;
      // ceil(E / (C * size)); a share past int64 exceeds E, so 1 object.
      int64_t share = 0;
      const int64_t give = CheckedMul(active, obj[c], &share)
                               ? excess / share + (excess % share != 0 ? 1 : 0)
                               : 1;
      a->cnt[c] = static_cast<int32_t>(std::max<int64_t>(min_counts[c], a->cnt[c] - give));
    }
  }
  return true;
}

std::pair<Allocation, Allocation> CrossoverAllocations(const Allocation& a, const Allocation& b,
                                                       int32_t cr) {
  const int32_t n = static_cast<int32_t>(a.cls.size());
  cr = std::clamp(cr, 0, n);
  const std::vector<int32_t> ext_a = ExpandCounts(a), ext_b = ExpandCounts(b);
  auto child = [&](const Allocation& head, const std::vector<int32_t>& head_ext,
                   const Allocation& tail, const std::vector<int32_t>& tail_ext) {
    Allocation c;
    c.cls.assign(head.cls.begin(), head.cls.begin() + cr);
    c.cls.insert(c.cls.end(), tail.cls.begin() + cr, tail.cls.end());
    RepairClasses(&c.cls);
    std::vector<int32_t> ext(head_ext.begin(), head_ext.begin() + cr);
    ext.insert(ext.end(), tail_ext.begin() + cr, tail_ext.end());
    c.cnt = CollapseCounts(ext, c.cls);
    return c;
  };
  return {child(b, ext_b, a, ext_a), child(a, ext_a, b, ext_b)};
}

void MutateAllocation(double p, double cnt_sigma_fraction, Rng* rng, Allocation* a) {
  const std::vector<int32_t> ext = ExpandCounts(*a);
  std::vector<int32_t>& cls = a->cls;
  for (size_t i = 1; i < cls.size(); ++i) {
    if (!rng->Bernoulli(p)) continue;
    const int32_t delta = cls[i] == cls[i - 1] ? 1 : -1;
    for (size_t j = i; j < cls.size(); ++j) cls[j] += delta;
  }
  a->cnt = CollapseCounts(ext, cls);
  for (int32_t& c : a->cnt) {
    if (!rng->Bernoulli(p)) continue;
    const double sigma = std::max(1.0, cnt_sigma_fraction * c);
    c = static_cast<int32_t>(std::max(0.0, std::round(rng->Normal(c, sigma))));
  }
}

Allocation FinestAllocation(const AdvisorProblem& problem) {
  Allocation a;
  const size_t n = problem.sizes().size();
  a.cls.resize(n);
  for (size_t i = 0; i < n; ++i) a.cls[i] = static_cast<int32_t>(i);
  a.cnt = problem.recorded_peak_count();
  return a;
}

MemoryPool ToMemoryPool(const Allocation& a, const std::vector<int64_t>& sizes) {
  MemoryPool pool;
  pool.tensor_sizes = sizes;
  pool.size_class = a.cls;
  const std::vector<int64_t> obj = ClassObjectBytes(a.cls, sizes);
  pool.classes.resize(obj.size());
  for (size_t c = 0; c < obj.size(); ++c) pool.classes[c] = {obj[c], a.cnt[c]};
  return pool;
}

}  // namespace swapplan
