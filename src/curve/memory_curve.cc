#include "swapplan/curve/memory_curve.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/checked.h"

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
// False when an entry would overflow (the caller names the record).
template <typename T>
[[nodiscard]] inline bool AddRange(std::vector<T>& diff, OpIndex lo, OpIndex hi, T v) {
  if (lo > hi) return true;
  return CheckedAdd(diff[lo], v, &diff[lo]) && CheckedSub(diff[hi + 1], v, &diff[hi + 1]);
}

// In-place prefix sums; the index of the first entry that overflows, or
// v.size() when none does.
template <typename T>
size_t PrefixSum(std::vector<T>& v) {
  for (size_t i = 1; i < v.size(); ++i) {
    if (!CheckedAdd(v[i], v[i - 1], &v[i])) return i;
  }
  return v.size();
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
  // Every sum below is checked. For a trace from TraceBuilder::Finish() the
  // sizes of all tensors fit in int64 (rule overflow), which bounds every
  // range sum here, so these errors name the record only for a Trace that
  // broke that invariant; the allocator comparison can overflow on its own
  // (allocator_bytes_in_use values near INT64_MAX).
  auto tensor_overflow = [&](TensorId t, absl::string_view what) {
    return OverflowError(absl::StrCat(trace.source(), ": ", TensorLabel(trace, t, LabelForm::kShort)),
                         absl::StrCat("size_bytes ", trace.tensor(t).size_bytes,
                                      " overflows the ", what));
  };
  auto op_overflow = [&](OpIndex op, absl::string_view what) {
    const int32_t it = trace.IterationOf(op);
    return OverflowError(absl::StrCat(trace.source(), ": iteration ", it, ", op ",
                                      op - trace.iteration(it).op_begin),
                         absl::StrCat("the ", what, " overflows a 64-bit integer"));
  };

  // Unswapped curve and live counts: one range per tensor.
  std::vector<int64_t> unswapped(n + 1, 0);
  std::vector<int32_t> live(n + 1, 0);
  std::vector<int64_t> dropped_after(n + 1, 0);  // bytes leaving the device after op i
  for (TensorId t = 0; t < nt; ++t) {
    const TensorLifetime& life = trace.lifetime(t);
    if (!life.occupies_device()) continue;
    OpIndex lo = std::max<OpIndex>(life.alloc_op, 0);
    OpIndex hi = std::min<OpIndex>(life.free_op, n - 1);
    if (!AddRange<int64_t>(unswapped, lo, hi, trace.tensor(t).size_bytes)) {
      return tensor_overflow(t, "unswapped memory curve");
    }
    if (!AddRange<int32_t>(live, lo, hi, 1)) return tensor_overflow(t, "live-tensor count");
  }

  // Recorded curve: subtract each off-device interval (SWAP_OUT .. SWAP_IN).
  std::vector<int64_t> recorded_diff(n + 1, 0);
  std::vector<OpIndex> out_since(nt, kNoOp);
  for (const MemoryEvent& e : trace.events()) {
    const int64_t size = trace.tensor(e.tensor).size_bytes;
    switch (e.kind) {
      case MemoryEventKind::kSwapOut:
        out_since[e.tensor] = e.op;
        if (!CheckedAdd(dropped_after[e.op], size, &dropped_after[e.op])) {
          return tensor_overflow(e.tensor, "bytes leaving the device");
        }
        break;
      case MemoryEventKind::kSwapIn:
        if (!AddRange<int64_t>(recorded_diff, out_since[e.tensor] + 1, e.op - 1, -size)) {
          return tensor_overflow(e.tensor, "recorded memory curve");
        }
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
      if (!AddRange<int64_t>(recorded_diff, out_since[t] + 1,
                             std::min<OpIndex>(life.free_op, n - 1), -size)) {
        return tensor_overflow(t, "recorded memory curve");
      }
    } else if (life.free_op < n) {
      if (!CheckedAdd(dropped_after[life.free_op], size, &dropped_after[life.free_op])) {
        return tensor_overflow(t, "bytes leaving the device");
      }
    }
  }
  for (auto [v, what] : {std::pair<std::vector<int64_t>*, const char*>{&unswapped, "unswapped "
                                                                                    "memory curve"},
                         {&recorded_diff, "recorded memory curve"}}) {
    if (size_t at = PrefixSum(*v); at < v->size()) {
      return op_overflow(static_cast<OpIndex>(std::min<size_t>(at, n - 1)), what);
    }
  }
  if (size_t at = PrefixSum(live); at < live.size()) {
    return op_overflow(static_cast<OpIndex>(std::min<size_t>(at, n - 1)), "live-tensor count");
  }
  unswapped.resize(n);
  live.resize(n);
  c.recorded_.resize(n);
  c.recorded_after_.resize(n);
  for (OpIndex i = 0; i < n; ++i) {
    if (!CheckedAdd(unswapped[i], recorded_diff[i], &c.recorded_[i]) ||
        !CheckedSub(c.recorded_[i], dropped_after[i], &c.recorded_after_[i])) {
      return op_overflow(i, "recorded memory curve");
    }
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
      int64_t d = 0;
      if (!CheckedSub(a, c.recorded_after_[i], &d) || (d < 0 && !CheckedSub(int64_t{0}, d, &d)) ||
          !CheckedAdd(sum_abs, d, &sum_abs)) {
        return op_overflow(i, "allocator_bytes_in_use comparison (sum of |allocator - rebuilt|)");
      }
      AllocatorComparison& ac = ic.allocator;
      ++ac.ops_compared;
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
      if (!CheckedAdd(total_abs, sum_abs, &total_abs)) {
        return op_overflow(ic.allocator.max_diff_op,
                           "allocator_bytes_in_use comparison (sum of |allocator - rebuilt|)");
      }
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
    if (full_lo <= full_hi && !AddRange<int64_t>(persistent_diff, full_lo, full_hi, size)) {
      return tensor_overflow(t, "persistent bytes of an iteration");
    }
    for (int32_t it = first; it <= last; ++it) {
      if (life.LiveAt(c.iterations_[it].peak_unswapped.op)) top[it].Offer(size, t);
    }
  }
  int64_t running = 0;
  for (int32_t it = 0; it < ni; ++it) {
    if (!CheckedAdd(running, persistent_diff[it], &running)) {
      return op_overflow(trace.iteration(it).op_begin, "persistent bytes of an iteration");
    }
    c.iterations_[it].persistent_bytes = running;
    c.iterations_[it].largest_at_peak = top[it].Take();
  }
  return c;
}

}  // namespace swapplan
