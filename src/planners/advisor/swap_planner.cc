// The Advisor's swap planner; the method is described in swap_planner.h.
#include "swapplan/planners/advisor/swap_planner.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

SwapPlanner::SwapPlanner(const AdvisorProblem& problem, const SwapPlannerOptions& options)
    : problem_(problem), options_(options), n_(problem.num_ops()) {}

// Positions, stall-free timeline, classes, uses and lifetimes under the
// schedule. O(ops + uses + tensors).
void SwapPlanner::Prepare(const Chromosome& c) {
  const int32_t n = n_;
  const int32_t nt = problem_.num_tensors();
  pos_.resize(n);
  end_ns_.resize(n);
  const std::vector<int64_t>& dur = problem_.durations();
  int64_t t = 0;
  for (int32_t p = 0; p < n; ++p) {
    pos_[c.schedule[p]] = p;
    end_ns_[p] = t += dur[c.schedule[p]];
  }
  slot_class_.resize(nt);
  alloc_pos_.resize(nt);
  free_pos_.resize(nt);
  use_pos_.resize(problem_.total_uses());
  use_writes_.resize(problem_.total_uses());
  next_idx_.resize(nt);
  for (int32_t s = 0; s < nt; ++s) next_idx_[s] = problem_.tensor(s).use_offset;  // cursor
  for (int32_t p = 0; p < n; ++p) {
    const int32_t op = c.schedule[p];
    absl::Span<const int32_t> slots = problem_.op_tensors(op);
    absl::Span<const uint8_t> writes = problem_.op_writes(op);
    for (size_t k = 0; k < slots.size(); ++k) {
      const int32_t at = next_idx_[slots[k]]++;
      use_pos_[at] = p;
      use_writes_[at] = writes[k];
    }
  }
  arrive_begin_.assign(n + 1, 0);
  free_begin_.assign(n + 1, 0);
  for (int32_t s = 0; s < nt; ++s) {
    const AdvisorTensor& x = problem_.tensor(s);
    slot_class_[s] = c.alloc.cls[x.size_index];
    int32_t a = x.alloc_op < 0 ? -1 : pos_[x.alloc_op];
    int32_t f = x.free_op >= n ? n : pos_[x.free_op];
    if (x.num_uses > 0) {
      if (a >= 0) a = std::min(a, use_pos_[x.use_offset]);
      if (f < n) f = std::max(f, use_pos_[x.use_offset + x.num_uses - 1]);
    }
    alloc_pos_[s] = a;
    free_pos_[s] = f;
    if (a >= 0) ++arrive_begin_[a + 1];
    if (f < n) ++free_begin_[f + 1];
  }
  for (int32_t p = 0; p < n; ++p) {
    arrive_begin_[p + 1] += arrive_begin_[p];
    free_begin_[p + 1] += free_begin_[p];
  }
  arrive_slots_.resize(arrive_begin_[n]);
  free_slots_.resize(free_begin_[n]);
  {
    std::vector<int32_t>& fill_a = order_;  // scratch
    fill_a.assign(arrive_begin_.begin(), arrive_begin_.end() - 1);
    for (int32_t s = 0; s < nt; ++s) {
      if (alloc_pos_[s] >= 0) arrive_slots_[fill_a[alloc_pos_[s]]++] = s;
    }
    fill_a.assign(free_begin_.begin(), free_begin_.end() - 1);
    for (int32_t s = 0; s < nt; ++s) {
      if (free_pos_[s] < n) free_slots_[fill_a[free_pos_[s]]++] = s;
    }
  }
  const int32_t classes = c.alloc.num_classes();
  capacity_ = c.alloc.cnt;
  threshold_ns_.resize(classes);
  const std::vector<int64_t> obj = ClassObjectBytes(c.alloc.cls, problem_.sizes());
  for (int32_t k = 0; k < classes; ++k) {
    threshold_ns_[k] = options_.eviction_threshold_ns >= 0 ? options_.eviction_threshold_ns
                                                           : problem_.D2hNs(obj[k]);
  }
}

int64_t SwapPlanner::KeyAfterUse(int32_t slot) const {
  const AdvisorTensor& x = problem_.tensor(slot);
  const int32_t idx = next_idx_[slot];
  if (idx < x.num_uses) return use_pos_[x.use_offset + idx];
  if (x.persistent) return static_cast<int64_t>(n_) + use_pos_[x.use_offset];  // next iteration
  return -1;  // no further use: not evictable
}

int32_t SwapPlanner::PickVictim(int32_t cls, int32_t p) {
  std::vector<HeapEntry>& heap = heap_[cls];
  const int64_t now = p <= 0 ? 0 : end_ns_[p - 1];
  stash_.clear();
  int32_t chosen = -1;
  HeapEntry recent{-1, -1, 0};
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const HeapEntry e = heap.back();
    heap.pop_back();
    if (!resident_[e.slot] || stamp_[e.slot] != e.stamp) continue;  // stale
    if (pinned_at_[e.slot] == p) {
      stash_.push_back(e);
      continue;
    }
    const int32_t last = last_use_[e.slot];
    const bool old_enough = last < 0 || now - end_ns_[last] >= threshold_ns_[cls];
    if (old_enough) {
      chosen = e.slot;
      break;
    }
    if (recent.slot < 0) {
      recent = e;  // the furthest next use among the recent ones
    } else {
      stash_.push_back(e);
    }
  }
  if (recent.slot >= 0) {
    if (chosen < 0 && options_.threshold_fallback) {
      chosen = recent.slot;
    } else {
      stash_.push_back(recent);
    }
  }
  for (const HeapEntry& e : stash_) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end());
  }
  return chosen;
}

void SwapPlanner::Evict(int32_t slot, int32_t p) {
  resident_[slot] = 0;
  --in_use_[slot_class_[slot]];
  ++stamp_[slot];
  const AdvisorTensor& x = problem_.tensor(slot);
  if (x.persistent && initial_[slot] && last_use_[slot] < 0) {
    initial_[slot] = 0;  // not used yet: it simply starts on the host
    return;
  }
  Eviction e;
  e.slot = slot;
  e.out = last_use_[slot];
  e.need = p;
  e.clean = from_host_[slot];
  e.op_count = next_idx_[slot];
  open_evict_[slot] = static_cast<int32_t>(evictions_.size());
  evictions_.push_back(e);
}

absl::Status SwapPlanner::Walk(const Chromosome& c) {
  const int32_t n = n_;
  const int32_t nt = problem_.num_tensors();
  const int32_t classes = c.alloc.num_classes();
  resident_.assign(nt, 0);
  from_host_.assign(nt, 0);
  next_idx_.assign(nt, 0);
  last_use_.assign(nt, -1);
  pinned_at_.assign(nt, std::numeric_limits<int32_t>::min());
  open_evict_.assign(nt, -1);
  wrap_in_.assign(nt, -1);
  stamp_.assign(nt, 0);
  in_use_.assign(classes, 0);
  heap_.resize(classes);
  for (std::vector<HeapEntry>& h : heap_) h.clear();
  evictions_.clear();
  fail_class_ = fail_pos_ = -1;

  for (int32_t s = 0; s < nt; ++s) {
    const AdvisorTensor& x = problem_.tensor(s);
    if (alloc_pos_[s] >= 0) continue;
    if (x.persistent && x.num_uses > 0 && !initial_[s]) continue;  // on the host
    resident_[s] = 1;
    ++in_use_[slot_class_[s]];
    if (x.persistent && x.num_uses > 0) {
      heap_[slot_class_[s]].push_back({use_pos_[x.use_offset], s, 0});
    }
  }
  for (std::vector<HeapEntry>& h : heap_) std::make_heap(h.begin(), h.end());
  // Start: more initial residents than objects -> start some on the host.
  for (int32_t k = 0; k < classes; ++k) {
    while (in_use_[k] > capacity_[k]) {
      const int32_t v = PickVictim(k, -1);
      if (v < 0) {
        fail_class_ = k;
        fail_pos_ = 0;
        return absl::ResourceExhaustedError(absl::StrCat(
            "class ", k, " has ", capacity_[k], " objects but ", in_use_[k],
            " tensors of it are resident before the first op and cannot start on the host"));
      }
      Evict(v, 0);
    }
  }

  auto arrive = [&](int32_t x, int32_t p) -> bool {
    const int32_t k = slot_class_[x];
    while (in_use_[k] >= capacity_[k]) {
      const int32_t v = PickVictim(k, p);
      if (v < 0) {
        fail_class_ = k;
        fail_pos_ = p;
        return false;
      }
      Evict(v, p);
    }
    ++in_use_[k];
    resident_[x] = 1;
    ++stamp_[x];
    if (open_evict_[x] >= 0) {
      evictions_[open_evict_[x]].back = p;
      open_evict_[x] = -1;
      from_host_[x] = 1;
    } else if (problem_.tensor(x).persistent) {
      wrap_in_[x] = p;  // starts the iteration on the host
      from_host_[x] = 1;
    } else {
      from_host_[x] = 0;
    }
    return true;
  };

  const std::vector<uint8_t>* hints = c.hints.get();
  for (int32_t p = 0; p < n; ++p) {
    const int32_t op = c.schedule[p];
    absl::Span<const int32_t> slots = problem_.op_tensors(op);
    absl::Span<const uint8_t> writes = problem_.op_writes(op);
    for (int32_t s : slots) pinned_at_[s] = p;
    bool ok = true;
    for (int32_t i = arrive_begin_[p]; i < arrive_begin_[p + 1] && ok; ++i) {
      ok = arrive(arrive_slots_[i], p);
    }
    for (size_t k = 0; k < slots.size() && ok; ++k) {
      if (!resident_[slots[k]]) ok = arrive(slots[k], p);
    }
    if (!ok) {
      const int32_t k = fail_class_;
      const std::vector<int64_t> obj = ClassObjectBytes(c.alloc.cls, problem_.sizes());
      return absl::ResourceExhaustedError(
          absl::StrCat("class ", k, " (", capacity_[k], " objects of ", obj[k],
                       " bytes) has no evictable tensor at op ", op, " (",
                       problem_.trace().op_name_at(
                           problem_.trace().iteration(problem_.iteration()).op_begin + op),
                       ", position ", p, ")"));
    }
    const int32_t use_id = problem_.op_use_offset(op);
    for (size_t k = 0; k < slots.size(); ++k) {
      const int32_t s = slots[k];
      if (writes[k]) from_host_[s] = 0;
      last_use_[s] = p;
      ++next_idx_[s];
      ++stamp_[s];
      int64_t key = KeyAfterUse(s);
      // A hinted eviction candidate ranks above every unhinted one (keys
      // are below 2n), Belady among the hinted.
      if (key >= 0 && hints != nullptr && (*hints)[use_id + k]) key += 4 * static_cast<int64_t>(n_);
      if (key >= 0) {
        std::vector<HeapEntry>& h = heap_[slot_class_[s]];
        // Lazy deletion leaves stale entries behind; drop them once they
        // outnumber the class's objects (each resident tensor has at most
        // one valid entry). Keeps every heap O(objects).
        if (h.size() > 2 * static_cast<size_t>(capacity_[slot_class_[s]]) + 64) {
          h.erase(std::remove_if(h.begin(), h.end(),
                                 [&](const HeapEntry& e) {
                                   return !resident_[e.slot] || stamp_[e.slot] != e.stamp;
                                 }),
                  h.end());
          std::make_heap(h.begin(), h.end());
        }
        h.push_back({key, s, stamp_[s]});
        std::push_heap(h.begin(), h.end());
      }
    }
    for (int32_t i = free_begin_[p]; i < free_begin_[p + 1]; ++i) {
      const int32_t s = free_slots_[i];
      if (!resident_[s]) continue;
      resident_[s] = 0;
      --in_use_[slot_class_[s]];
      ++stamp_[s];
    }
  }
  return absl::OkStatus();
}

}  // namespace swapplan
