#include "swapplan/curve/memory_curve.h"

#include <algorithm>
#include <cstdlib>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"

namespace swapplan {

absl::Status CurveOptions::Validate() const {
  if (top_tensors_at_peak < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("curve options: top_tensors_at_peak is ", top_tensors_at_peak,
                     "; must be >= 0"));
  }
  return absl::OkStatus();
}

namespace {

// Adds `v` to ops [lo, hi] of a difference array with num_ops + 1 entries.
template <typename T>
inline void AddRange(std::vector<T>& diff, OpIndex lo, OpIndex hi, T v) {
  if (lo > hi) return;
  diff[lo] += v;
  diff[hi + 1] -= v;
}

template <typename T>
void PrefixSum(std::vector<T>& v) {
  for (size_t i = 1; i < v.size(); ++i) v[i] += v[i - 1];
}

PeakInfo MakePeak(const Trace& trace, int32_t it, const std::vector<int64_t>& curve) {
  const IterationInfo& iter = trace.iteration(it);
  PeakInfo p;
  p.iteration = it;
  p.bytes = -1;
  for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
    if (curve[i] > p.bytes) {
      p.bytes = curve[i];
      p.op = i;
    }
  }
  p.local_op = p.op - iter.op_begin;
  p.phase = trace.op(p.op).phase;
  return p;
}

// Keeps the k largest (size desc, id asc) tensors offered.
class TopK {
 public:
  explicit TopK(size_t k) : k_(k) {}
  void Offer(int64_t size, TensorId t) {
    if (k_ == 0) return;
    Entry e{size, t};
    if (heap_.size() < k_) {
      heap_.push(e);
    } else if (Better(e, heap_.top())) {
      heap_.pop();
      heap_.push(e);
    }
  }
  std::vector<TensorId> Take() {
    std::vector<Entry> v;
    while (!heap_.empty()) {
      v.push_back(heap_.top());
      heap_.pop();
    }
    std::sort(v.begin(), v.end(), Better);
    std::vector<TensorId> out;
    for (const Entry& e : v) out.push_back(e.tensor);
    return out;
  }

 private:
  struct Entry {
    int64_t size;
    TensorId tensor;
  };
  static bool Better(const Entry& a, const Entry& b) {
    return a.size != b.size ? a.size > b.size : a.tensor < b.tensor;
  }
  struct Worse {
    bool operator()(const Entry& a, const Entry& b) const { return Better(a, b); }
  };
  size_t k_;
  // Min-heap on quality: top() is the worst kept entry.
  std::priority_queue<Entry, std::vector<Entry>, Worse> heap_;
};

}  // namespace

absl::StatusOr<MemoryCurve> ComputeMemoryCurve(const Trace& trace, const CurveOptions& options) {
  if (absl::Status st = options.Validate(); !st.ok()) return st;
  const OpIndex n = trace.num_ops();
  const int32_t nt = trace.num_tensors();
  MemoryCurve c;

  // Unswapped curve and live counts: one range per tensor.
  std::vector<int64_t> unswapped(n + 1, 0);
  std::vector<int32_t> live(n + 1, 0);
  std::vector<int64_t> dropped_after(n + 1, 0);  // bytes leaving the device after op i
  for (TensorId t = 0; t < nt; ++t) {
    const TensorLifetime& life = trace.lifetime(t);
    if (!life.occupies_device()) continue;
    OpIndex lo = std::max<OpIndex>(life.alloc_op, 0);
    OpIndex hi = std::min<OpIndex>(life.free_op, n - 1);
    AddRange<int64_t>(unswapped, lo, hi, trace.tensor(t).size_bytes);
    AddRange<int32_t>(live, lo, hi, 1);
  }

  // Recorded curve: subtract each off-device interval (SWAP_OUT .. SWAP_IN).
  std::vector<int64_t> recorded_diff(n + 1, 0);
  std::vector<OpIndex> out_since(nt, kNoOp);
  for (const MemoryEvent& e : trace.events()) {
    const int64_t size = trace.tensor(e.tensor).size_bytes;
    switch (e.kind) {
      case MemoryEventKind::kSwapOut:
        out_since[e.tensor] = e.op;
        dropped_after[e.op] += size;
        break;
      case MemoryEventKind::kSwapIn:
        AddRange<int64_t>(recorded_diff, out_since[e.tensor] + 1, e.op - 1, -size);
        out_since[e.tensor] = kNoOp;
        break;
      default:
        break;
    }
  }
  for (TensorId t = 0; t < nt; ++t) {
    const TensorLifetime& life = trace.lifetime(t);
    if (!life.occupies_device()) continue;
    const int64_t size = trace.tensor(t).size_bytes;
    if (out_since[t] != kNoOp) {
      // Still off-device when freed (or at the end of the trace).
      AddRange<int64_t>(recorded_diff, out_since[t] + 1, std::min<OpIndex>(life.free_op, n - 1),
                        -size);
    } else if (life.free_op < n) {
      dropped_after[life.free_op] += size;
    }
  }
  PrefixSum(unswapped);
  PrefixSum(live);
  PrefixSum(recorded_diff);
  unswapped.resize(n);
  live.resize(n);
  c.recorded_.resize(n);
  c.recorded_after_.resize(n);
  for (OpIndex i = 0; i < n; ++i) {
    c.recorded_[i] = unswapped[i] + recorded_diff[i];
    c.recorded_after_[i] = c.recorded_[i] - dropped_after[i];
  }
  c.unswapped_ = std::move(unswapped);
  c.live_ = std::move(live);

  // Per-iteration peaks, allocator comparison, persistent bytes.
  const int32_t ni = trace.num_iterations();
  c.iterations_.resize(ni);
  int64_t total_abs = 0;
  for (int32_t it = 0; it < ni; ++it) {
    IterationCurve& ic = c.iterations_[it];
    ic.peak_unswapped = MakePeak(trace, it, c.unswapped_);
    ic.peak_recorded = MakePeak(trace, it, c.recorded_);
    const IterationInfo& iter = trace.iteration(it);
    int64_t sum_abs = 0;
    for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
      int64_t a = trace.op(i).allocator_bytes_in_use;
      if (a < 0) continue;
      int64_t d = std::llabs(a - c.recorded_after_[i]);
      AllocatorComparison& ac = ic.allocator;
      ++ac.ops_compared;
      sum_abs += d;
      if (d > ac.max_abs_diff_bytes || ac.max_diff_op == kNoOp) {
        ac.max_abs_diff_bytes = d;
        ac.max_diff_op = i;
      }
    }
    if (ic.allocator.ops_compared > 0) {
      ic.allocator.mean_abs_diff_bytes =
          static_cast<double>(sum_abs) / static_cast<double>(ic.allocator.ops_compared);
      c.allocator_.ops_compared += ic.allocator.ops_compared;
      if (ic.allocator.max_abs_diff_bytes > c.allocator_.max_abs_diff_bytes ||
          c.allocator_.max_diff_op == kNoOp) {
        c.allocator_.max_abs_diff_bytes = ic.allocator.max_abs_diff_bytes;
        c.allocator_.max_diff_op = ic.allocator.max_diff_op;
      }
      total_abs += sum_abs;
    }
    if (it == 0 || ic.peak_unswapped.bytes > c.peak_unswapped_.bytes) {
      c.peak_unswapped_ = ic.peak_unswapped;
    }
    if (it == 0 || ic.peak_recorded.bytes > c.peak_recorded_.bytes) {
      c.peak_recorded_ = ic.peak_recorded;
    }
  }
  if (c.allocator_.ops_compared > 0) {
    c.allocator_.mean_abs_diff_bytes =
        static_cast<double>(total_abs) / static_cast<double>(c.allocator_.ops_compared);
  }

  // Persistent bytes and largest tensors at each iteration's peak: visit, for
  // every tensor, the iterations its lifetime touches.
  std::vector<int64_t> persistent_diff(ni + 1, 0);
  std::vector<TopK> top(ni, TopK(static_cast<size_t>(options.top_tensors_at_peak)));
  for (TensorId t = 0; t < nt; ++t) {
    const TensorLifetime& life = trace.lifetime(t);
    if (!life.occupies_device() || ni == 0) continue;
    const int64_t size = trace.tensor(t).size_bytes;
    int32_t first = life.alloc_op < 0 ? 0 : trace.IterationOf(life.alloc_op);
    int32_t last = life.free_op >= n ? ni - 1 : trace.IterationOf(life.free_op);
    // Fully covered iterations: begin after alloc, end at or before free.
    int32_t full_lo = trace.iteration(first).op_begin > life.alloc_op ? first : first + 1;
    int32_t full_hi = trace.iteration(last).op_end - 1 <= life.free_op ? last : last - 1;
    if (full_lo <= full_hi) {
      persistent_diff[full_lo] += size;
      persistent_diff[full_hi + 1] -= size;
    }
    for (int32_t it = first; it <= last; ++it) {
      if (life.LiveAt(c.iterations_[it].peak_unswapped.op)) top[it].Offer(size, t);
    }
  }
  int64_t running = 0;
  for (int32_t it = 0; it < ni; ++it) {
    running += persistent_diff[it];
    c.iterations_[it].persistent_bytes = running;
    c.iterations_[it].largest_at_peak = top[it].Take();
  }
  return c;
}

}  // namespace swapplan
