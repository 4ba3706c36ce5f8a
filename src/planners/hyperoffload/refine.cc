#include "planners/hyperoffload/refine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "planners/hyperoffload/load_queue.h"

namespace swapplan {
namespace {

absl::Status Invalid(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("order refinement: ", what));
}

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// The cost model for one issue time (see refine.h): `issue_ns` the issue
// op's start, `consumer_ns` the consumer's, `free_ns` the tier's load
// stream, `next_ns` the latest start of the next load on the tier
// (kNever: none, or contention not weighed).
PrefetchPlacement Cost(int64_t issue_ns, int64_t consumer_ns, int64_t free_ns, int64_t next_ns,
                       int64_t copy_ns, double weight) {
  PrefetchPlacement p;
  const int64_t end = std::max(issue_ns, free_ns) + copy_ns;
  p.exposed_ns = std::max<int64_t>(0, end - consumer_ns);
  p.delay_ns = next_ns == kNever ? 0 : std::max<int64_t>(0, end - next_ns);
  p.residency_ns = consumer_ns + p.exposed_ns - issue_ns;
  p.cost = static_cast<double>(std::max(p.exposed_ns, p.delay_ns)) +
           weight * static_cast<double>(p.residency_ns);
  return p;
}

// Mutable order with positions and prefix start times.
class OrderState {
 public:
  explicit OrderState(const RefineProblem& p) : d_(p.duration_ns), order_(p.order) {
    const int32_t n = static_cast<int32_t>(order_.size());
    pos_.assign(n, 0);
    start_.assign(n + 1, 0);
    Recompute(0, n);
  }
  int32_t n() const { return static_cast<int32_t>(order_.size()); }
  int32_t pos(int32_t op) const { return pos_[op]; }
  int32_t at(int32_t p) const { return order_[p]; }
  int64_t start(int32_t p) const { return start_[p]; }
  const std::vector<int64_t>& starts() const { return start_; }
  std::vector<int32_t>& order() { return order_; }

  // Positions [from, to) changed: their positions and start times.
  void Recompute(int32_t from, int32_t to) {
    for (int32_t p = from; p < to; ++p) {
      pos_[order_[p]] = p;
      start_[p + 1] = start_[p] + d_[order_[p]];
    }
  }

 private:
  const std::vector<int64_t>& d_;
  std::vector<int32_t> order_;
  std::vector<int32_t> pos_;
  std::vector<int64_t> start_;
};

struct Choice {
  PrefetchPlacement placement;
  int32_t k = 0;            // ops hoisted
  int32_t issue_pos = 0;    // in the original positions (k's hoisted ops: -1 - j)
  bool found = false;
};

// True when `a` beats `b`: lower cost; ties to fewer hoisted ops, then the
// later issue (positions compare as issue time).
bool Better(const PrefetchPlacement& a, int32_t ka, int64_t ta, const Choice& b, int64_t tb) {
  if (!b.found) return true;
  if (a.cost != b.placement.cost) return a.cost < b.placement.cost;
  if (ka != b.k) return ka < b.k;
  return ta > tb;
}

}  // namespace

void RefineProblem::SetPredecessors(const std::vector<std::vector<int32_t>>& lists) {
  pred_begin.assign(1, 0);
  preds.clear();
  for (const std::vector<int32_t>& l : lists) {
    preds.insert(preds.end(), l.begin(), l.end());
    pred_begin.push_back(static_cast<int32_t>(preds.size()));
  }
}

absl::Status RefineProblem::Validate() const {
  const size_t n = duration_ns.size();
  if (pred_begin.size() != n + 1 || pred_begin[0] != 0 ||
      static_cast<size_t>(pred_begin[n]) != preds.size()) {
    return Invalid(absl::StrCat("pred_begin has ", pred_begin.size(), " entries for ", n,
                                " ops (needs ops + 1, from 0 to the size of preds)"));
  }
  for (size_t v = 0; v < n; ++v) {
    if (pred_begin[v] > pred_begin[v + 1]) return Invalid("pred_begin is not ascending");
  }
  if (order.size() != n) {
    return Invalid(absl::StrCat("order has ", order.size(), " entries for ", n, " ops"));
  }
  if (!pinned.empty() && pinned.size() != n) {
    return Invalid(absl::StrCat("pinned has ", pinned.size(), " entries for ", n, " ops"));
  }
  std::vector<int32_t> pos(n, -1);
  for (size_t p = 0; p < n; ++p) {
    const int32_t op = order[p];
    if (op < 0 || static_cast<size_t>(op) >= n || pos[op] >= 0) {
      return Invalid(absl::StrCat("order is not a permutation (entry ", p, " is op ", op, ")"));
    }
    pos[op] = static_cast<int32_t>(p);
  }
  for (size_t v = 0; v < n; ++v) {
    if (duration_ns[v] < 0) return Invalid(absl::StrCat("op ", v, " has a negative duration"));
    for (int32_t k = pred_begin[v]; k < pred_begin[v + 1]; ++k) {
      const int32_t u = preds[k];
      if (u < 0 || static_cast<size_t>(u) >= n) {
        return Invalid(absl::StrCat("op ", v, " has predecessor ", u, ", not an op"));
      }
      if (pos[u] >= pos[v]) {
        return Invalid(absl::StrCat("order runs op ", v, " at position ", pos[v],
                                    " before its predecessor op ", u, " at position ", pos[u]));
      }
    }
  }
  for (size_t j = 0; j < prefetches.size(); ++j) {
    const RefinePrefetch& f = prefetches[j];
    const auto in = [&](int32_t op) { return op >= 0 && static_cast<size_t>(op) < n; };
    if (!in(f.consumer) || !in(f.earliest_op)) {
      return Invalid(absl::StrCat("prefetch ", j, " names an op out of range"));
    }
    if (pos[f.earliest_op] > pos[f.consumer]) {
      return Invalid(absl::StrCat("prefetch ", j, ": earliest op ", f.earliest_op,
                                  " comes after its consumer op ", f.consumer));
    }
    if (f.copy_ns < 0 || f.tier < 0) {
      return Invalid(absl::StrCat("prefetch ", j, ": negative copy time or tier"));
    }
  }
  return absl::OkStatus();
}

absl::Status RefineOptions::Validate() const {
  if (!std::isfinite(residency_weight) || residency_weight < 0) {
    return Invalid(absl::StrCat("residency_weight is ", residency_weight,
                                "; must be finite and >= 0"));
  }
  if (scan_ops < 0 || max_hoisted < 0) {
    return Invalid("scan_ops and max_hoisted must be >= 0");
  }
  return absl::OkStatus();
}

PrefetchPlacement EvaluatePlacement(const RefineProblem& problem, const std::vector<int32_t>& order,
                                    const RefinePrefetch& prefetch, int32_t issue_op,
                                    const RefineOptions& options) {
  int64_t t = 0, issue_ns = 0, consumer_ns = 0;
  for (int32_t op : order) {
    if (op == issue_op) issue_ns = t;
    if (op == prefetch.consumer) consumer_ns = t;
    t += problem.duration_ns[op];
  }
  PrefetchPlacement p =
      Cost(issue_ns, consumer_ns, 0, kNever, prefetch.copy_ns, options.residency_weight);
  p.issue_op = issue_op;
  return p;
}

absl::StatusOr<RefineResult> RefineOrder(const RefineProblem& problem,
                                         const RefineOptions& options) {
  if (absl::Status s = problem.Validate(); !s.ok()) return s;
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  const int32_t n = static_cast<int32_t>(problem.order.size());
  OrderState st(problem);
  // Consumers and earliest ops of every prefetch stay where they are
  // relative to each other (only other ops move).
  std::vector<bool> pinned = problem.pinned.empty() ? std::vector<bool>(n, false) : problem.pinned;
  for (const RefinePrefetch& f : problem.prefetches) {
    pinned[f.consumer] = true;
    pinned[f.earliest_op] = true;
  }
  std::vector<int32_t> by_consumer(problem.prefetches.size());
  for (size_t j = 0; j < by_consumer.size(); ++j) by_consumer[j] = static_cast<int32_t>(j);
  std::stable_sort(by_consumer.begin(), by_consumer.end(), [&](int32_t a, int32_t b) {
    return st.pos(problem.prefetches[a].consumer) < st.pos(problem.prefetches[b].consumer);
  });
  int32_t max_tier = 0;
  for (const RefinePrefetch& f : problem.prefetches) max_tier = std::max(max_tier, f.tier);
  std::vector<int64_t> stream_free(static_cast<size_t>(max_tier) + 1, 0);
  std::vector<char> moved(n, 0);
  RefineResult result;
  result.placements.resize(problem.prefetches.size());
  const double w = options.residency_weight;
  // Contention (load_queue.h): the latest start of the next prefetch on
  // the same tier, from the loads placed as late as possible backward from
  // the last consumer in the given order. Hoisting only moves consumers
  // later, so these bounds stay safe while the order is refined.
  std::vector<int64_t> next_start(problem.prefetches.size(), kNever);
  if (options.stream_contention) {
    std::vector<QueuedLoad> loads;
    std::vector<size_t> index;  // prefetch of each queued load
    for (size_t j = 0; j < problem.prefetches.size(); ++j) {
      const RefinePrefetch& f = problem.prefetches[j];
      if (!f.queued) continue;
      loads.push_back({.ready_ns = st.start(st.pos(f.earliest_op)),
                       .deadline_ns = st.start(st.pos(f.consumer)),
                       .copy_ns = f.copy_ns,
                       .tier = f.tier});
      index.push_back(j);
    }
    const std::vector<LoadSlot> slots = LatestLoadStarts(loads);
    for (size_t k = 0; k < loads.size(); ++k) {
      if (slots[k].finish_by_ns < loads[k].deadline_ns) next_start[index[k]] = slots[k].finish_by_ns;
    }
  }

  for (int32_t j : by_consumer) {
    const RefinePrefetch& f = problem.prefetches[j];
    const int32_t pc = st.pos(f.consumer);
    const int32_t lo = st.pos(f.earliest_op);
    const int64_t free_ns = stream_free[f.tier];
    const int64_t next_ns = next_start[j];
    // Independent ops after the consumer, in order.
    std::vector<int32_t> hoist;  // positions
    const int32_t scan_end = std::min(n, pc + 1 + options.scan_ops);
    for (int32_t q = pc + 1; q < scan_end && static_cast<int32_t>(hoist.size()) < options.max_hoisted;
         ++q) {
      const int32_t v = st.at(q);
      if (pinned[v]) continue;
      bool independent = true;
      for (int32_t e = problem.pred_begin[v]; e < problem.pred_begin[v + 1]; ++e) {
        const int32_t u = problem.preds[e];
        if (st.pos(u) >= pc && !moved[u]) {
          independent = false;
          break;
        }
      }
      if (!independent) continue;
      moved[v] = 1;
      hoist.push_back(q);
    }
    for (int32_t q : hoist) moved[st.at(q)] = 0;

    Choice best;
    int64_t best_t = 0;
    int64_t hoisted_ns = 0;
    const std::vector<int64_t>& s = st.starts();
    for (int32_t k = 0; k <= static_cast<int32_t>(hoist.size()); ++k) {
      if (k > 0) hoisted_ns += problem.duration_ns[st.at(hoist[k - 1])];
      const int64_t consumer_ns = s[pc] + hoisted_ns;
      // Issue at an op at positions lo..pc-1 (start s[p], they do not
      // move): the candidates of refine.h's case analysis — the last start
      // <= consumer - copy, the one after it, the last start before the
      // stream frees, the first; then at the consumer itself.
      auto last_at_most = [&](int64_t x) {
        const auto it = std::upper_bound(s.begin() + lo, s.begin() + pc, x);
        return static_cast<int32_t>(it - s.begin()) - 1;  // lo - 1 when none
      };
      const int32_t p1 = last_at_most(std::min(consumer_ns, next_ns) - f.copy_ns);
      const int32_t p3 = last_at_most(free_ns - 1);
      for (int32_t p : {lo, p1, p1 + 1, p3}) {
        if (p < lo || p >= pc) continue;
        PrefetchPlacement c = Cost(s[p], consumer_ns, free_ns, next_ns, f.copy_ns, w);
        if (Better(c, k, s[p], best, best_t)) {
          best = {c, k, p, true};
          best_t = s[p];
        }
      }
      {
        PrefetchPlacement c = Cost(consumer_ns, consumer_ns, free_ns, next_ns, f.copy_ns, w);
        if (Better(c, k, consumer_ns, best, best_t)) {
          best = {c, k, pc, true};
          best_t = consumer_ns;
        }
      }
      // Issue at hoisted op j (< k): it starts after the hoisted ops before it.
      int64_t before = 0;
      for (int32_t h = 0; h < k; ++h) {
        const int64_t t = s[pc] + before;
        PrefetchPlacement c = Cost(t, consumer_ns, free_ns, next_ns, f.copy_ns, w);
        if (Better(c, k, t, best, best_t)) {
          best = {c, k, -1 - h, true};
          best_t = t;
        }
        before += problem.duration_ns[st.at(hoist[h])];
      }
    }
    // Apply: the first k independent ops move to just before the consumer.
    int32_t issue_op = best.issue_pos >= 0 ? st.at(best.issue_pos)
                                            : st.at(hoist[-1 - best.issue_pos]);
    if (best.k > 0) {
      const int32_t last = hoist[best.k - 1];
      std::vector<int32_t>& order = st.order();
      std::vector<int32_t> seg;
      seg.reserve(last - pc + 1);
      for (int32_t h = 0; h < best.k; ++h) seg.push_back(order[hoist[h]]);
      int32_t h = 0;
      for (int32_t q = pc; q <= last; ++q) {
        if (h < best.k && hoist[h] == q) {
          ++h;
          continue;
        }
        seg.push_back(order[q]);
      }
      std::copy(seg.begin(), seg.end(), order.begin() + pc);
      st.Recompute(pc, last + 1);
      result.hoisted_ops += best.k;
    }
    const int64_t issue_ns = st.start(st.pos(issue_op));
    stream_free[f.tier] = std::max(issue_ns, free_ns) + f.copy_ns;
    best.placement.issue_op = issue_op;
    best.placement.hoisted = best.k;
    result.placements[j] = best.placement;
  }
  result.order = std::move(st.order());
  return result;
}

}  // namespace swapplan
