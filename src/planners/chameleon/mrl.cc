#include "swapplan/planners/chameleon/mrl.h"

#include <algorithm>

namespace swapplan {

void MemoryReductionList::Reset(absl::Span<const int64_t> bytes, int64_t budget_bytes) {
  num_ops_ = static_cast<int32_t>(bytes.size());
  int32_t first = -1, last = -1;
  for (int32_t i = 0; i < num_ops_; ++i) {
    if (bytes[i] > budget_bytes) {
      if (first < 0) first = i;
      last = i;
    }
  }
  min_.clear();
  lazy_.clear();
  cnt_.clear();
  if (first < 0) {
    offset_ = width_ = 0;
    return;
  }
  offset_ = first;
  width_ = 1;
  while (width_ < last - first + 1) width_ *= 2;
  min_.assign(2 * width_, kInactive);
  lazy_.assign(2 * width_, 0);
  cnt_.assign(2 * width_, 0);
  for (int32_t i = first; i <= last; ++i) {
    if (bytes[i] > budget_bytes) {
      min_[width_ + i - first] = bytes[i] - budget_bytes;
      cnt_[width_ + i - first] = 1;
    }
  }
  for (int32_t node = width_ - 1; node >= 1; --node) Pull(node);
}

void MemoryReductionList::Apply(int32_t node, int64_t v) {
  if (cnt_[node] == 0) return;
  min_[node] += v;
  if (node < width_) lazy_[node] += v;
}

void MemoryReductionList::Push(int32_t node) {
  if (lazy_[node] != 0) {
    Apply(2 * node, lazy_[node]);
    Apply(2 * node + 1, lazy_[node]);
    lazy_[node] = 0;
  }
}

void MemoryReductionList::Pull(int32_t node) {
  cnt_[node] = cnt_[2 * node] + cnt_[2 * node + 1];
  min_[node] = cnt_[node] == 0 ? kInactive : std::min(min_[2 * node], min_[2 * node + 1]);
}

int32_t MemoryReductionList::Extract(int32_t node, int32_t l, int32_t r) {
  if (cnt_[node] == 0 || min_[node] > 0) return 0;
  if (l == r) {
    cnt_[node] = 0;
    min_[node] = kInactive;
    return 1;
  }
  Push(node);
  const int32_t m = (l + r) / 2;
  int32_t dropped = Extract(2 * node, l, m) + Extract(2 * node + 1, m + 1, r);
  Pull(node);
  return dropped;
}

int32_t MemoryReductionList::Update(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi,
                                    int64_t v) {
  if (hi < l || r < lo || cnt_[node] == 0) return 0;
  if (lo <= l && r <= hi) {
    Apply(node, v);
    return Extract(node, l, r);
  }
  Push(node);
  const int32_t m = (l + r) / 2;
  int32_t dropped = Update(2 * node, l, m, lo, hi, v) + Update(2 * node + 1, m + 1, r, lo, hi, v);
  Pull(node);
  return dropped;
}

int32_t MemoryReductionList::Reduce(int32_t lo, int32_t hi, int64_t bytes) {
  if (empty()) return 0;
  lo = std::max(lo - offset_, 0);
  hi = std::min(hi - offset_, width_ - 1);
  if (lo > hi) return 0;
  return Update(1, 0, width_ - 1, lo, hi, -bytes);
}

int64_t MemoryReductionList::need(int32_t op) const {
  if (empty() || op < offset_ || op >= offset_ + width_) return 0;
  int32_t node = width_ + (op - offset_);
  if (cnt_[node] == 0) return 0;
  int64_t v = min_[node];
  for (node /= 2; node >= 1; node /= 2) v += lazy_[node];
  return v;
}

int32_t MemoryReductionList::Count(int32_t node, int32_t l, int32_t r, int32_t lo,
                                   int32_t hi) const {
  if (hi < l || r < lo || cnt_[node] == 0) return 0;
  if (lo <= l && r <= hi) return cnt_[node];
  const int32_t m = (l + r) / 2;
  return Count(2 * node, l, m, lo, hi) + Count(2 * node + 1, m + 1, r, lo, hi);
}

int32_t MemoryReductionList::Last(int32_t node, int32_t l, int32_t r, int32_t lo,
                                  int32_t hi) const {
  if (hi < l || r < lo || cnt_[node] == 0) return -1;
  if (l == r) return l;
  const int32_t m = (l + r) / 2;
  int32_t x = Last(2 * node + 1, m + 1, r, lo, hi);
  return x >= 0 ? x : Last(2 * node, l, m, lo, hi);
}

int32_t MemoryReductionList::First(int32_t node, int32_t l, int32_t r, int32_t lo,
                                   int32_t hi) const {
  if (hi < l || r < lo || cnt_[node] == 0) return -1;
  if (l == r) return l;
  const int32_t m = (l + r) / 2;
  int32_t x = First(2 * node, l, m, lo, hi);
  return x >= 0 ? x : First(2 * node + 1, m + 1, r, lo, hi);
}

int32_t MemoryReductionList::CountIn(int32_t lo, int32_t hi) const {
  if (empty()) return 0;
  lo = std::max(lo - offset_, 0);
  hi = std::min(hi - offset_, width_ - 1);
  return lo > hi ? 0 : Count(1, 0, width_ - 1, lo, hi);
}

int32_t MemoryReductionList::LastIn(int32_t lo, int32_t hi) const {
  if (empty()) return -1;
  lo = std::max(lo - offset_, 0);
  hi = std::min(hi - offset_, width_ - 1);
  if (lo > hi) return -1;
  int32_t x = Last(1, 0, width_ - 1, lo, hi);
  return x < 0 ? -1 : x + offset_;
}

int32_t MemoryReductionList::FirstIn(int32_t lo, int32_t hi) const {
  if (empty()) return -1;
  lo = std::max(lo - offset_, 0);
  hi = std::min(hi - offset_, width_ - 1);
  if (lo > hi) return -1;
  int32_t x = First(1, 0, width_ - 1, lo, hi);
  return x < 0 ? -1 : x + offset_;
}

void MemoryReductionList::Collect(int32_t node, int32_t l, int32_t r, int64_t add,
                                  std::vector<std::pair<int32_t, int64_t>>* out) const {
  if (cnt_[node] == 0) return;
  if (l == r) {
    out->push_back({l + offset_, min_[node] + add});
    return;
  }
  const int32_t m = (l + r) / 2;
  Collect(2 * node, l, m, add + lazy_[node], out);
  Collect(2 * node + 1, m + 1, r, add + lazy_[node], out);
}

std::vector<MrlRange> MemoryReductionList::Ranges() const {
  std::vector<MrlRange> out;
  if (empty()) return out;
  std::vector<std::pair<int32_t, int64_t>> entries;
  entries.reserve(size());
  Collect(1, 0, width_ - 1, 0, &entries);
  for (const auto& [op, need] : entries) {
    if (!out.empty() && out.back().last_op == op - 1) {
      MrlRange& r = out.back();
      r.last_op = op;
      if (need > r.max_need_bytes) {
        r.max_need_bytes = need;
        r.max_op = op;
      }
    } else {
      out.push_back({op, op, need, op});
    }
  }
  return out;
}

}  // namespace swapplan
