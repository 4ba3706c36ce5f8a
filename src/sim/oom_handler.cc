// Algorithm 3 on the simulator's allocator; see oom_handler.h.
#include "sim/oom_handler.h"

#include <algorithm>
#include <cstdlib>

namespace swapplan::internal_sim {

OomHandler::OomHandler(const Simulator& sim, const Prepared& pr,
                       absl::Span<const int32_t> schedule) {
  if (sim.options().oom_handling != OomHandling::kAlgorithm3) return;
  active_ = true;
  sim_ = &sim;
  pr_ = &pr;
  schedule_ = schedule;
  naive_ = sim.options().record_stream == RecordStreamMode::kNaive;
  latency_ns_ = sim.options().device.copy_latency_ns;
  const Trace& trace = sim.trace();
  const int32_t n = sim.num_ops();
  const absl::Span<const ResolvedTensor> tensors = pr.resolved.tensors;
  const size_t nt = tensors.size();
  size_.resize(nt);
  alloc_.resize(nt);
  free_.resize(nt);
  slot_of_.reserve(nt);
  for (size_t i = 0; i < nt; ++i) {
    const ResolvedTensor& t = tensors[i];
    size_[i] = trace.tensor(t.id).size_bytes;
    alloc_[i] = t.alloc;
    free_[i] = t.free;
    slot_of_.emplace(t.id, static_cast<int32_t>(i));
    // Candidates: allocated and freed within the iteration; then, as the
    // last resort, persistent state (resident before the first op or kept
    // after the last) that is used again later in the iteration — it comes
    // back at that use, so every iteration still starts and ends with the
    // same resident set.
    if (alloc_[i] >= 0 && free_[i] < n) {
      by_size_.push_back(static_cast<int32_t>(i));
    } else if (sim.options().oom_persistent_victims) {
      persistent_by_size_.push_back(static_cast<int32_t>(i));
    }
  }
  auto by_size = [&](int32_t a, int32_t b) {
    return size_[a] != size_[b] ? size_[a] < size_[b] : a < b;
  };
  std::sort(by_size_.begin(), by_size_.end(), by_size);
  std::sort(persistent_by_size_.begin(), persistent_by_size_.end(), by_size);
  window_begin_.assign(nt + 1, 0);
  for (const Item& it : pr.items) ++window_begin_[it.slot + 1];
  for (size_t i = 0; i < nt; ++i) window_begin_[i + 1] += window_begin_[i];
  windows_.resize(pr.items.size());
  std::vector<int32_t> fill(window_begin_.begin(), window_begin_.end() - 1);
  for (const Item& it : pr.items) windows_[fill[it.slot]++] = {it.out, it.use, it.wraps};
  off_.assign(nt, 0);
  used_stamp_.assign(nt, -1);
  passive_d2h_end_.assign(nt, 0);
  released_early_.assign(pr.items.size(), 0);
}

int64_t OomHandler::SwapInBytesAtActive(int32_t p) {
  int64_t bytes = 0;
  while (!swap_in_heap_.empty() && swap_in_heap_.top().first <= p) {
    const int32_t slot = swap_in_heap_.top().second;
    swap_in_heap_.pop();
    off_[slot] = 0;
    bytes += size_[slot];
    due_.push_back(slot);
  }
  return bytes;
}

bool OomHandler::Eligible(int32_t slot, int32_t p, bool needs_next_use) const {
  if (!(alloc_[slot] < p && free_[slot] >= p)) return false;
  if (off_[slot] != 0 || used_stamp_[slot] == p) return false;
  for (int32_t w = window_begin_[slot]; w < window_begin_[slot + 1]; ++w) {
    const Window& win = windows_[w];
    const bool off = win.wraps ? (win.out < p || p <= win.use) : (win.out < p && p <= win.use);
    if (off) return false;
  }
  return !needs_next_use || NextUse(slot, p) >= 0;
}

int32_t OomHandler::Closest(const std::vector<int32_t>& by_size, int32_t p, int64_t target,
                            bool needs_next_use) const {
  const int32_t m = static_cast<int32_t>(by_size.size());
  int32_t right = static_cast<int32_t>(
      std::lower_bound(by_size.begin(), by_size.end(), target,
                       [&](int32_t s, int64_t v) { return size_[s] < v; }) -
      by_size.begin());
  int32_t left = right - 1;
  while (right < m && !Eligible(by_size[right], p, needs_next_use)) ++right;
  while (left >= 0 && !Eligible(by_size[left], p, needs_next_use)) --left;
  if (right >= m && left < 0) return -1;
  if (left < 0) return by_size[right];
  if (right >= m) return by_size[left];
  // Right is >= target, left < target: right wins ties (the larger). Among
  // equal sizes left of target, the scan found the highest slot; prefer the
  // lowest one of that size for determinism.
  const int64_t dr = size_[by_size[right]] - target;
  const int64_t dl = target - size_[by_size[left]];
  if (dr <= dl) return by_size[right];
  const int64_t size = size_[by_size[left]];
  int32_t best = left;
  for (int32_t i = left - 1; i >= 0 && size_[by_size[i]] == size; --i) {
    if (Eligible(by_size[i], p, needs_next_use)) best = i;
  }
  return by_size[best];
}

int32_t OomHandler::NextUse(int32_t slot, int32_t p) const {
  const Trace& trace = sim_->trace();
  const IterationInfo& iter = trace.iteration(sim_->iteration());
  absl::Span<const OpIndex> u = trace.tensor_uses(pr_->resolved.tensors[slot].id);
  auto lo = std::lower_bound(u.begin(), u.end(), iter.op_begin);
  auto hi = std::lower_bound(lo, u.end(), iter.op_end);
  if (schedule_.empty()) {
    auto next = std::upper_bound(lo, hi, iter.op_begin + p);
    return next == hi ? -1 : *next - iter.op_begin;
  }
  int32_t best = -1;
  for (auto it = lo; it != hi; ++it) {
    const int32_t pos = pr_->pos()[*it - iter.op_begin];
    if (pos > p && (best < 0 || pos < best)) best = pos;
  }
  return best;
}

OomWait OomHandler::Handle(int32_t p, int64_t request, int64_t end_prev, int64_t* usage,
                           int64_t* out_stream, const std::vector<int64_t>& d2h_end,
                           absl::FunctionRef<void(int32_t)> release_item, SimulationResult* r) {
  OomWait w;
  if (!active_) return w;
  OomHandlingStats& st = r->oom_handling;
  ++st.allocation_failures;
  const int64_t cap = sim_->options().memory_limit_bytes();
  // (i) FreeSwappingOutBlock(): every block whose copy out was issued and
  // whose release point has not come; op p waits for those copies
  // (SwapStream.eventRecord / ComputeStream.eventWait).
  if (!naive_) {
    for (int32_t k : inflight_) {
      if (released_early_[k] != 0 || pr_->items[k].release < p) continue;
      released_early_[k] = 1;
      release_item(k);
      ++st.early_releases;
      if (d2h_end[k] > w.until_ns) w = {d2h_end[k], k, StallCause::kRelease};
    }
    inflight_.clear();
  }
  if (*usage + request <= cap) return w;
  // (ii) PassiveSwap(): tensors closest in size to what is missing.
  if (!(pr_->d2h_bw > 0) || !(pr_->h2d_bw > 0)) {
    st.no_bandwidth = true;
  } else {
    const Trace& trace = sim_->trace();
    const IterationInfo& iter = trace.iteration(sim_->iteration());
    const int32_t op = schedule_.empty() ? p : schedule_[p];
    for (TensorId t : trace.uses(iter.op_begin + op)) {
      if (auto f = slot_of_.find(t); f != slot_of_.end()) used_stamp_[f->second] = p;
    }
    while (*usage + request > cap) {
      const int64_t missing = *usage + request - cap;
      int32_t slot = Closest(by_size_, p, missing, /*needs_next_use=*/false);
      if (slot < 0) {
        slot = Closest(persistent_by_size_, p, missing, /*needs_next_use=*/true);
        if (slot >= 0) ++st.persistent_passive_swap_outs;
      }
      if (slot < 0) break;
      const int64_t size = size_[slot];
      off_[slot] = 1;
      *usage -= size;
      const int64_t dur = TransferNs(size, pr_->d2h_bw, latency_ns_);
      const int64_t start = std::max(end_prev, *out_stream);
      const int64_t end = start + dur;
      *out_stream = end;
      passive_d2h_end_[slot] = end;
      r->bytes_d2h += size;
      ++r->copies_d2h;
      r->d2h_busy_ns += dur;
      r->tiers[0].bytes_stored += size;
      ++r->tiers[0].stores;
      r->tiers[0].store_busy_ns += dur;
      ++st.passive_swap_outs;
      st.passive_bytes_d2h += size;
      if (end > w.until_ns) w = {end, -2 - slot, StallCause::kPassive};
      const int32_t next = NextUse(slot, p);
      if (next >= 0) {
        swap_in_heap_.push({next, slot});
      } else {
        free_heap_.push({free_[slot], slot});
      }
    }
  }
  // (iii) Throw Error: the run would die here.
  if (*usage + request > cap) {
    if (st.unresolved == 0) {
      st.first_unresolved_op = schedule_.empty() ? p : schedule_[p];
      st.first_unresolved_missing_bytes = *usage + request - cap;
    }
    ++st.unresolved;
  }
  return w;
}

OomWait OomHandler::IssueSwapInsActive(int64_t reach, int64_t* in_stream, SimulationResult* r) {
  OomWait w;
  for (int32_t slot : due_) {
    const int64_t size = size_[slot];
    const int64_t dur = TransferNs(size, pr_->h2d_bw, latency_ns_);
    const int64_t start = std::max({reach, passive_d2h_end_[slot], *in_stream});
    const int64_t end = start + dur;
    *in_stream = end;
    r->bytes_h2d += size;
    ++r->copies_h2d;
    r->h2d_busy_ns += dur;
    r->tiers[0].bytes_loaded += size;
    ++r->tiers[0].loads;
    r->tiers[0].load_busy_ns += dur;
    ++r->oom_handling.passive_swap_ins;
    r->oom_handling.passive_bytes_h2d += size;
    if (end > w.until_ns) w = {end, -2 - slot, StallCause::kPassive};
  }
  due_.clear();
  return w;
}

int64_t OomHandler::FreedWhileOffAtActive(int32_t p) {
  int64_t bytes = 0;
  while (!free_heap_.empty() && free_heap_.top().first <= p) {
    const int32_t slot = free_heap_.top().second;
    free_heap_.pop();
    off_[slot] = 0;
    bytes += size_[slot];
  }
  return bytes;
}

uint64_t OomHandler::TraceIdOfBinding(int32_t binding) const {
  const int32_t slot = -2 - binding;
  return sim_->trace().tensor(pr_->resolved.tensors[slot].id).trace_id;
}

}  // namespace swapplan::internal_sim
