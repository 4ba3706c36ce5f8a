// The Advisor's swap planner: the double pass around the walk, copy timing
// and the policy (steps 2–4 of swap_planner.h).
#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/advisor/swap_planner.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

// Copies out, FIFO in swap-out order on the stall-free timeline; release =
// the position during which the copy ends, clamped to [out, need - 1].
// Copies after the same op run in policy item order, and Emit orders the
// items by (swap-in, first use, slot) — the same as (first use, slot),
// since swap-in positions do not decrease along first uses (TimeCopiesIn)
// — so ties here are broken the same way: the planner's FIFO is the
// checker's and the simulator's.
void SwapPlanner::TimeCopiesOut() {
  order_.resize(evictions_.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int32_t>(i);
  auto use_of = [&](const Eviction& e) { return e.back >= 0 ? e.back : wrap_in_[e.slot]; };
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    const Eviction& x = evictions_[a];
    const Eviction& y = evictions_[b];
    if (x.out != y.out) return x.out < y.out;
    if (use_of(x) != use_of(y)) return use_of(x) < use_of(y);
    return x.slot != y.slot ? x.slot < y.slot : a < b;
  });
  int64_t stream_free = 0;
  for (int32_t i : order_) {
    Eviction& e = evictions_[i];
    if (e.clean) {
      e.release = e.out;
      continue;
    }
    const int64_t start = std::max(end_ns_[e.out], stream_free);
    const int64_t done = start + problem_.D2hNs(problem_.tensor(e.slot).size_bytes);
    stream_free = done;
    const int32_t during = static_cast<int32_t>(
        std::lower_bound(end_ns_.begin(), end_ns_.end(), done) - end_ns_.begin());
    const int32_t latest = std::min(e.need, n_) - 1;
    e.release = std::clamp(during, e.out, latest);
    // Released before the copy ends (a wrapping item's copy may instead run
    // past the last op: the iteration ends with it).
    e.waits = during > latest && e.need < n_;
  }
}

// Copies in, as early as the class's objects allow (swap_planner.h, 4).
void SwapPlanner::TimeCopiesIn(const Chromosome& c) {
  struct Arrival {
    int32_t use, lo, slot, eviction;  // eviction -1: a wrapping tensor's first use
  };
  std::vector<Arrival> arrivals;
  arrivals.reserve(evictions_.size());
  for (size_t i = 0; i < evictions_.size(); ++i) {
    const Eviction& e = evictions_[i];
    if (e.back >= 0) {
      arrivals.push_back({e.back, e.release + 1, e.slot, static_cast<int32_t>(i)});
    }
  }
  const int32_t nt = problem_.num_tensors();
  for (int32_t s = 0; s < nt; ++s) {
    if (wrap_in_[s] >= 0) arrivals.push_back({wrap_in_[s], 0, s, -1});
  }
  std::sort(arrivals.begin(), arrivals.end(), [](const Arrival& a, const Arrival& b) {
    return a.use != b.use ? a.use < b.use : a.slot < b.slot;
  });
  // Objects in use per position, for the classes that get swap-ins.
  const int32_t classes = c.alloc.num_classes();
  count_row_.assign(classes, -1);
  int32_t rows = 0;
  for (const Arrival& a : arrivals) {
    int32_t& row = count_row_[slot_class_[a.slot]];
    if (row < 0) row = rows++;
  }
  const int32_t width = n_ + 1;
  counts_.assign(static_cast<size_t>(rows) * width, 0);
  auto range = [&](int32_t slot, int32_t lo, int32_t hi, int32_t v) {  // [lo, hi], diff form
    if (lo > hi) return;
    int32_t* row = &counts_[static_cast<size_t>(count_row_[slot_class_[slot]]) * width];
    row[lo] += v;
    row[hi + 1] -= v;
  };
  for (int32_t s = 0; s < nt; ++s) {
    if (count_row_[slot_class_[s]] < 0) continue;
    if (free_pos_[s] < 0 || (alloc_pos_[s] >= n_)) continue;
    range(s, std::max(alloc_pos_[s], 0), std::min(free_pos_[s], n_ - 1), 1);
    if (wrap_in_[s] >= 0) range(s, 0, wrap_in_[s] - 1, -1);
  }
  for (const Eviction& e : evictions_) {
    if (count_row_[slot_class_[e.slot]] < 0) continue;
    range(e.slot, e.release + 1, e.back >= 0 ? e.back - 1 : n_ - 1, -1);
  }
  for (int32_t r = 0; r < rows; ++r) {
    int32_t* row = &counts_[static_cast<size_t>(r) * width];
    for (int32_t p = 1; p < width; ++p) row[p] += row[p - 1];
  }
  wrap_trigger_.assign(nt, -1);
  int32_t previous = 0;
  for (const Arrival& a : arrivals) {
    const int32_t k = slot_class_[a.slot];
    int32_t* row = &counts_[static_cast<size_t>(count_row_[k]) * width];
    const int32_t lo = std::max(a.lo, previous);
    int32_t trigger = std::min(lo, a.use);
    for (int32_t q = a.use - 1; q >= lo; --q) {
      if (row[q] >= capacity_[k]) {
        trigger = q + 1;
        break;
      }
    }
    for (int32_t q = trigger; q < a.use; ++q) ++row[q];
    previous = trigger;
    if (a.eviction >= 0) {
      evictions_[a.eviction].trigger = trigger;
    } else {
      wrap_trigger_[a.slot] = trigger;
    }
  }
}

SwapPlan SwapPlanner::Emit(const Chromosome& c, bool runtime_keys) {
  SwapPlan plan;
  Policy& policy = plan.policy;
  policy = problem_.base_policy();
  policy.schedule = c.schedule;
  policy.pool = ToMemoryPool(c.alloc, problem_.sizes());
  const Trace& trace = problem_.trace();
  auto item = [&](const Eviction& e, int32_t in, int32_t use, bool wraps) {
    const AdvisorTensor& x = problem_.tensor(e.slot);
    PolicyItem it;
    it.tensor_id = trace.tensor(x.id).trace_id;
    it.size_bytes = x.size_bytes;
    it.swap_out_op = c.schedule[e.out];
    it.release_op = c.schedule[e.release];
    it.swap_in_op = c.schedule[in];
    it.first_use_op = c.schedule[use];
    it.wraps = wraps;
    it.clean = e.clean;
    it.release_waits_for_copy = e.waits;
    if (runtime_keys) {
      const TensorInfo& info = trace.tensor(x.id);
      it.runtime_key.dtype = info.dtype;
      it.runtime_key.size_bytes = info.size_bytes;
      absl::Span<const int64_t> shape = trace.shape(x.id);
      it.runtime_key.shape.assign(shape.begin(), shape.end());
      it.runtime_key.op_count = static_cast<uint32_t>(e.op_count);
    }
    policy.items.push_back(std::move(it));
  };
  // Item order: (swap-in, first use, slot) — the h2d FIFO order, and the
  // tie order TimeCopiesOut assumed for copies out after the same op.
  struct Key {
    int32_t in, use, slot, index;
    bool operator<(const Key& o) const {
      return std::tie(in, use, slot, index) < std::tie(o.in, o.use, o.slot, o.index);
    }
  };
  std::vector<Key> keys;
  for (const Eviction& e : evictions_) {
    const int32_t index = static_cast<int32_t>(keys.size());
    if (e.back >= 0) {
      item(e, e.trigger, e.back, false);
      keys.push_back({e.trigger, e.back, e.slot, index});
      ++plan.evictions;
    } else {
      // The wrapping tensor's swap-out at the end; its swap-in is wrap_in_.
      item(e, wrap_trigger_[e.slot], wrap_in_[e.slot], true);
      keys.push_back({wrap_trigger_[e.slot], wrap_in_[e.slot], e.slot, index});
      ++plan.wrapping;
    }
  }
  std::sort(keys.begin(), keys.end());
  std::vector<PolicyItem> sorted;
  sorted.reserve(keys.size());
  for (const Key& k : keys) sorted.push_back(std::move(policy.items[k.index]));
  policy.items = std::move(sorted);
  for (int32_t s = 0; s < problem_.num_tensors(); ++s) {
    const AdvisorTensor& x = problem_.tensor(s);
    plan.initial_residents += x.persistent && x.num_uses > 0 && initial_[s];
  }
  return plan;
}

absl::StatusOr<SwapPlan> SwapPlanner::Plan(const Chromosome& c, bool runtime_keys) {
  Prepare(c);
  const int32_t nt = problem_.num_tensors();
  // End of a pass: persistent tensors that started on the host and are on
  // the device go back after their last use; false when one that started on
  // the device is not on it (it then starts on the host next pass).
  auto finish_pass = [&]() {
    bool consistent = true;
    for (int32_t s = 0; s < nt; ++s) {
      const AdvisorTensor& x = problem_.tensor(s);
      if (!x.persistent || x.num_uses == 0) continue;
      if (initial_[s]) {
        if (!resident_[s]) {
          initial_[s] = 0;
          consistent = false;
        }
      } else if (resident_[s]) {
        Eviction e;
        e.slot = s;
        e.out = last_use_[s];
        e.need = n_;
        e.clean = from_host_[s];
        e.op_count = x.num_uses;
        evictions_.push_back(e);
      }
    }
    return consistent;
  };

  initial_.assign(nt, 0);
  SWAPPLAN_RETURN_IF_ERROR(Walk(c));
  finish_pass();
  int32_t passes = 1;
  bool fell_back = false;
  if (options_.param_residency == ParamResidency::kDoublePass) {
    bool any = false;
    for (int32_t s = 0; s < nt; ++s) {
      const AdvisorTensor& x = problem_.tensor(s);
      initial_[s] = x.persistent && x.num_uses > 0 && resident_[s];
      any = any || initial_[s];
    }
    if (any) {
      // Keep pass 1's plan for the fallback.
      std::vector<Eviction> pass1_evictions = evictions_;
      std::vector<int32_t> pass1_wrap_in = wrap_in_;
      bool done = false;
      while (!done && passes < options_.max_passes) {
        ++passes;
        if (!Walk(c).ok()) break;
        done = finish_pass();
      }
      if (!done) {
        evictions_ = std::move(pass1_evictions);
        wrap_in_ = std::move(pass1_wrap_in);
        initial_.assign(nt, 0);
        fell_back = true;
      }
    }
  }
  TimeCopiesOut();
  TimeCopiesIn(c);
  SwapPlan plan = Emit(c, runtime_keys);
  plan.passes = passes;
  plan.fell_back_to_pass1 = fell_back;
  return plan;
}

}  // namespace swapplan
