// RangeMaxTree: a segment tree over n values with range addition, range
// maximum, and searches for the first / last index in a range whose value
// passes a threshold. Used for the layers' remaining transfer budgets (find
// the latest layer with enough h2d time: §5.4.1's backward search in
// O(log layers)) and for the memory curve of the maximal fallback.
//
//   RangeMaxTree<double> t(std::vector<double>{100, 40, 70});
//   t.LastAtLeast(0, 2, 50);   // 2
//   t.Add(2, 2, -30);          // values 100, 40, 40
//   t.LastAtLeast(0, 2, 50);   // 0
//
// Every operation is O(log n); construction O(n).
#ifndef SWAPPLAN_SRC_PLANNERS_CHAMELEON_RANGE_MAX_TREE_H_
#define SWAPPLAN_SRC_PLANNERS_CHAMELEON_RANGE_MAX_TREE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace swapplan {

template <typename T>
class RangeMaxTree {
 public:
  RangeMaxTree() = default;
  explicit RangeMaxTree(const std::vector<T>& values) { Assign(values); }

  void Assign(const std::vector<T>& values) {
    n_ = static_cast<int32_t>(values.size());
    width_ = 1;
    while (width_ < std::max(n_, 1)) width_ *= 2;
    max_.assign(2 * width_, kNone);
    lazy_.assign(2 * width_, T{});
    for (int32_t i = 0; i < n_; ++i) max_[width_ + i] = values[i];
    for (int32_t node = width_ - 1; node >= 1; --node) {
      max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
    }
  }

  int32_t size() const { return n_; }

  // Adds v to values [lo, hi].
  void Add(int32_t lo, int32_t hi, T v) {
    if (lo > hi) return;
    AddRec(1, 0, width_ - 1, lo, hi, v);
  }
  // Value at i.
  T Get(int32_t i) const {
    int32_t node = width_ + i;
    T v = max_[node];
    for (node /= 2; node >= 1; node /= 2) v += lazy_[node];
    return v;
  }
  // Maximum over [lo, hi] (lowest() for an empty range).
  T Max(int32_t lo, int32_t hi) const {
    if (lo > hi) return kNone;
    return MaxRec(1, 0, width_ - 1, lo, hi, T{});
  }
  // Largest / smallest index in [lo, hi] whose value is >= x (or > x for the
  // *Above variants); -1 when none.
  int32_t LastAtLeast(int32_t lo, int32_t hi, T x) const { return Last(lo, hi, x, false); }
  int32_t LastAbove(int32_t lo, int32_t hi, T x) const { return Last(lo, hi, x, true); }
  int32_t FirstAtLeast(int32_t lo, int32_t hi, T x) const {
    if (lo > hi || lo >= n_) return -1;
    return FirstRec(1, 0, width_ - 1, std::max(lo, 0), std::min(hi, n_ - 1), x, T{});
  }

 private:
  static constexpr T kNone = std::numeric_limits<T>::lowest() / 4;

  static bool Passes(T v, T x, bool strict) { return strict ? v > x : v >= x; }

  int32_t Last(int32_t lo, int32_t hi, T x, bool strict) const {
    if (lo > hi || lo >= n_) return -1;
    return LastRec(1, 0, width_ - 1, std::max(lo, 0), std::min(hi, n_ - 1), x, T{}, strict);
  }

  void AddRec(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi, T v) {
    if (hi < l || r < lo) return;
    if (lo <= l && r <= hi) {
      max_[node] += v;
      if (node < width_) lazy_[node] += v;
      return;
    }
    const int32_t m = (l + r) / 2;
    AddRec(2 * node, l, m, lo, hi, v);
    AddRec(2 * node + 1, m + 1, r, lo, hi, v);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + lazy_[node];
  }
  // `add`: pending additions of the ancestors.
  T MaxRec(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi, T add) const {
    if (hi < l || r < lo) return kNone;
    if (lo <= l && r <= hi) return max_[node] + add;
    const int32_t m = (l + r) / 2;
    add += lazy_[node];
    return std::max(MaxRec(2 * node, l, m, lo, hi, add), MaxRec(2 * node + 1, m + 1, r, lo, hi, add));
  }
  int32_t LastRec(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi, T x, T add,
                  bool strict) const {
    if (hi < l || r < lo || !Passes(max_[node] + add, x, strict)) return -1;
    if (l == r) return l;
    const int32_t m = (l + r) / 2;
    add += lazy_[node];
    int32_t got = LastRec(2 * node + 1, m + 1, r, lo, hi, x, add, strict);
    return got >= 0 ? got : LastRec(2 * node, l, m, lo, hi, x, add, strict);
  }
  int32_t FirstRec(int32_t node, int32_t l, int32_t r, int32_t lo, int32_t hi, T x, T add) const {
    if (hi < l || r < lo || !Passes(max_[node] + add, x, false)) return -1;
    if (l == r) return l;
    const int32_t m = (l + r) / 2;
    add += lazy_[node];
    int32_t got = FirstRec(2 * node, l, m, lo, hi, x, add);
    return got >= 0 ? got : FirstRec(2 * node + 1, m + 1, r, lo, hi, x, add);
  }

  int32_t n_ = 0;
  int32_t width_ = 1;
  // max_[node] includes lazy_[node] (the addition pending for its children).
  std::vector<T> max_;
  std::vector<T> lazy_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_PLANNERS_CHAMELEON_RANGE_MAX_TREE_H_
