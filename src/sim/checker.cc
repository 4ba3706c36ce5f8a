#include "swapplan/sim/checker.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/trace/dataflow.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan {

absl::string_view ViolationTag(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kFingerprintMismatch:
      return "fingerprint-mismatch";
    case ViolationKind::kUnknownTensor:
      return "unknown-tensor";
    case ViolationKind::kOpOutOfRange:
      return "op-out-of-range";
    case ViolationKind::kSwapInBeforeSwapOut:
      return "swap-in-before-swap-out";
    case ViolationKind::kBadOpOrder:
      return "bad-op-order";
    case ViolationKind::kSizeMismatch:
      return "size-mismatch";
    case ViolationKind::kNotResident:
      return "not-resident";
    case ViolationKind::kUseWhileOffDevice:
      return "use-while-off-device";
    case ViolationKind::kDuplicateItem:
      return "duplicate-item";
    case ViolationKind::kOverlappingItems:
      return "overlapping-items";
    case ViolationKind::kNoBandwidth:
      return "no-bandwidth";
    case ViolationKind::kReleaseBeforeCopyDone:
      return "release-before-copy-done";
    case ViolationKind::kOverBudget:
      return "over-budget";
    case ViolationKind::kBadSchedule:
      return "bad-schedule";
    case ViolationKind::kScheduleBreaksDependency:
      return "schedule-breaks-dependency";
    case ViolationKind::kWrapNotPersistent:
      return "wrap-not-persistent";
    case ViolationKind::kCleanNotOnHost:
      return "clean-not-on-host";
    case ViolationKind::kCleanWritten:
      return "clean-but-written";
    case ViolationKind::kBadPool:
      return "bad-pool";
    case ViolationKind::kPoolOverBudget:
      return "pool-over-budget";
    case ViolationKind::kPoolNoClass:
      return "pool-no-class";
    case ViolationKind::kPoolClassFull:
      return "pool-class-full";
  }
  return "unknown";
}

absl::Status CheckOptions::Validate() const {
  if (iteration_time_ns < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("check options: iteration_time_ns is ", iteration_time_ns, "; must be >= 0"));
  }
  return absl::OkStatus();
}

namespace {

class Checker {
 public:
  Checker(const Trace& trace, const Policy& policy, const MemoryCurve& curve)
      : trace_(trace),
        policy_(policy),
        curve_(curve),
        it_(policy.fingerprint.iteration),
        begin_(trace.iteration(it_).op_begin),
        n_(trace.iteration(it_).num_ops()),
        scheduled_(!policy.schedule.empty()) {}

  absl::StatusOr<CheckReport> Run(const CheckOptions& options) {
    report_.iteration = it_;
    report_.items = static_cast<int32_t>(policy_.items.size());
    report_.budget_bytes = policy_.device_budget_bytes;
    if (!SetUpSchedule()) return std::move(report_);
    for (int32_t p = 0; p < n_; ++p) {
      report_.peak_unswapped_bytes = std::max(report_.peak_unswapped_bytes, unswapped_[p]);
    }
    tensor_of_item_.assign(policy_.items.size(), kNoTensor);
    accounted_.assign(policy_.items.size(), false);
    CheckItems();
    CheckDuplicates();
    CheckClean();
    SWAPPLAN_RETURN_IF_ERROR(CheckReleases(options));
    CheckBudget();
    CheckPool();
    TimeSwapIns(options);
    return std::move(report_);
  }

 private:
  std::string Op(int32_t local) const {
    const OpInfo& op = trace_.op(begin_ + local);
    std::string s = absl::StrCat("op ", local, " (", trace_.op_name(op.name), ", ",
                                 PhaseName(op.phase), ")");
    if (scheduled_) absl::StrAppend(&s, " at position ", pos_[local]);
    return s;
  }
  std::string ItemText(size_t i) const {
    return absl::StrCat("item ", i, " (tensor ", policy_.items[i].tensor_id, ")");
  }
  void Add(ViolationKind kind, int32_t item, int32_t op, std::string text, int64_t bytes = 0) {
    report_.violations.push_back(
        {kind, item, op, bytes, absl::StrCat(text, " [", ViolationTag(kind), "]")});
  }
  int32_t Pos(int32_t local) const { return pos_[local]; }

  // Positions, the unswapped bytes per position, the dependency check.
  // False when the schedule is unusable (reported; nothing else checked).
  bool SetUpSchedule() {
    if (!scheduled_) {
      pos_.resize(n_);
      for (int32_t i = 0; i < n_; ++i) pos_[i] = i;
      order_ = pos_;
      const std::vector<int64_t>& all = curve_.unswapped_bytes();
      unswapped_.assign(all.begin() + begin_, all.begin() + begin_ + n_);
      return true;
    }
    absl::StatusOr<std::vector<int32_t>> pos = SchedulePositions(policy_.schedule, n_);
    if (!pos.ok()) {
      Add(ViolationKind::kBadSchedule, -1, -1, std::string(pos.status().message()));
      return false;
    }
    pos_ = std::move(pos).value();
    order_ = policy_.schedule;
    absl::StatusOr<DataflowGraph> graph = DataflowGraph::Build(trace_, it_);
    if (graph.ok()) {
      if (absl::Status st = graph->ValidateSchedule(order_); !st.ok()) {
        Add(ViolationKind::kScheduleBreaksDependency, -1, -1, std::string(st.message()));
      }
    }
    std::vector<int64_t> delta(n_ + 1, 0);
    for (TensorId t = 0; t < trace_.num_tensors(); ++t) {
      const TensorLifetime& lt = trace_.lifetime(t);
      if (!lt.occupies_device() || lt.free_op < begin_ || lt.alloc_op >= begin_ + n_) continue;
      const ScheduledLifetime s = ScheduleLifetime(trace_, it_, t, pos_);
      const int64_t size = trace_.tensor(t).size_bytes;
      delta[std::max(s.alloc, 0)] += size;
      delta[std::min(s.free, n_ - 1) + 1] -= size;
    }
    unswapped_.resize(n_);
    int64_t run = 0;
    for (int32_t p = 0; p < n_; ++p) unswapped_[p] = run += delta[p];
    return true;
  }

  // Window of an accounted item in positions.
  struct Window {
    int32_t out, rel, in, use;
    bool wraps;
  };
  Window WindowOf(size_t i) const {
    const PolicyItem& x = policy_.items[i];
    return {Pos(x.swap_out_op), Pos(x.release_op), Pos(x.swap_in_op), Pos(x.first_use_op),
            x.wraps};
  }

  void CheckItems() {
    absl::flat_hash_map<uint64_t, TensorId> ids;
    ids.reserve(trace_.num_tensors());
    for (TensorId t = 0; t < trace_.num_tensors(); ++t) ids.emplace(trace_.tensor(t).trace_id, t);
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      const PolicyItem& item = policy_.items[i];
      const int32_t idx = static_cast<int32_t>(i);
      auto found = ids.find(item.tensor_id);
      if (found == ids.end()) {
        Add(ViolationKind::kUnknownTensor, idx, -1,
            absl::StrCat(ItemText(i), ": no such tensor in ", trace_.source()));
        continue;
      }
      const TensorId t = found->second;
      bool in_range = true;
      for (auto [name, op] : {std::pair<const char*, int32_t>{"swap_out_op", item.swap_out_op},
                              {"release_op", item.release_op},
                              {"swap_in_op", item.swap_in_op},
                              {"first_use_op", item.first_use_op}}) {
        if (op < 0 || op >= n_) {
          Add(ViolationKind::kOpOutOfRange, idx, -1,
              absl::StrCat(ItemText(i), ": ", name, " ", op, " is outside iteration ", it_, " (",
                           n_, " ops)"));
          in_range = false;
        }
      }
      if (!in_range) continue;
      const Window w = WindowOf(i);
      const std::string in_positions = scheduled_ ? " in schedule positions" : "";
      if (item.wraps || item.clean) {
        if (item.action != ItemAction::kSwap) {
          Add(ViolationKind::kBadOpOrder, idx, -1,
              absl::StrCat(ItemText(i), ": ", item.wraps ? "wraps" : "clean",
                           " is only allowed on SWAP items"));
          continue;
        }
      }
      if (w.wraps) {
        if (!(w.in <= w.use && w.use <= w.out && w.out <= w.rel)) {
          Add(ViolationKind::kBadOpOrder, idx, -1,
              absl::StrCat(ItemText(i),
                           ": a wrapping item's ops must satisfy swap_in_op <= first_use_op <= "
                           "swap_out_op <= release_op",
                           in_positions, ", got ", w.in, ", ", w.use, ", ", w.out, ", ", w.rel));
          continue;
        }
      } else {
        if (w.in <= w.out) {
          Add(ViolationKind::kSwapInBeforeSwapOut, idx, item.swap_in_op,
              absl::StrCat(ItemText(i), ": swap-in at ", Op(item.swap_in_op),
                           " is not after the swap-out at ", Op(item.swap_out_op)));
          continue;
        }
        if (!(w.out <= w.rel && w.rel < w.in && w.in <= w.use)) {
          Add(ViolationKind::kBadOpOrder, idx, -1,
              absl::StrCat(ItemText(i),
                           ": ops must satisfy swap_out_op <= release_op < swap_in_op <= "
                           "first_use_op",
                           in_positions, ", got ", w.out, ", ", w.rel, ", ", w.in, ", ", w.use));
          continue;
        }
      }
      tensor_of_item_[i] = t;
      const int64_t size = trace_.tensor(t).size_bytes;
      if (item.size_bytes != size) {
        Add(ViolationKind::kSizeMismatch, idx, -1,
            absl::StrCat(ItemText(i), ": size_bytes ", item.size_bytes, " but the trace says ",
                         size));
      }
      const TensorLifetime& life = trace_.lifetime(t);
      const bool in_iteration =
          life.occupies_device() && life.free_op >= begin_ && life.alloc_op < begin_ + n_;
      if (w.wraps) {
        if (!(in_iteration && life.alloc_op < begin_ && life.free_op >= begin_ + n_)) {
          Add(ViolationKind::kWrapNotPersistent, idx, -1,
              absl::StrCat(ItemText(i),
                           ": wraps around the iteration but the tensor is not resident before "
                           "and after iteration ",
                           it_));
          continue;
        }
      } else {
        ScheduledLifetime s{0, -1};
        if (in_iteration) s = ScheduleLifetime(trace_, it_, t, pos_);
        if (!(in_iteration && s.alloc <= w.out && w.use <= s.free)) {
          std::string where =
              life.occupies_device()
                  ? absl::StrCat(scheduled_ ? "it is allocated during positions "
                                            : "it is allocated during ops ",
                                 std::max(s.alloc, 0), "..", std::min(s.free, n_ - 1))
                  : std::string("it never occupies the device");
          if (life.occupies_device() && !in_iteration) {
            where = absl::StrCat("it is not allocated in iteration ", it_);
          }
          Add(ViolationKind::kNotResident, idx, -1,
              absl::StrCat(ItemText(i), ": the tensor is not allocated throughout ",
                           scheduled_ ? "positions " : "ops ", w.out, "..", w.use, " (", where,
                           ")"));
          continue;
        }
      }
      accounted_[i] = true;
      absl::Span<const OpIndex> uses = trace_.tensor_uses(t);
      for (auto u = std::lower_bound(uses.begin(), uses.end(), begin_);
           u != uses.end() && *u < begin_ + n_; ++u) {
        const int32_t local = *u - begin_;
        const int32_t p = Pos(local);
        if (!w.wraps && p > w.out && p < w.use) {
          Add(ViolationKind::kUseWhileOffDevice, idx, local,
              absl::StrCat(ItemText(i), ": used by ", Op(local), " between its swap-out after op ",
                           item.swap_out_op, " and its first use at op ", item.first_use_op));
        } else if (w.wraps && (p < w.use || p > w.out)) {
          Add(ViolationKind::kUseWhileOffDevice, idx, local,
              absl::StrCat(ItemText(i), ": used by ", Op(local),
                           " while on the host (before its first use at op ", item.first_use_op,
                           " or after its swap-out after op ", item.swap_out_op, ")"));
        }
      }
    }
  }

  void CheckDuplicates() {
    std::vector<int32_t> order;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (tensor_of_item_[i] != kNoTensor) order.push_back(static_cast<int32_t>(i));
    }
    auto key = [&](int32_t i) {
      const Window w = WindowOf(i);
      // Wrapping windows sort last within their tensor.
      return std::make_tuple(tensor_of_item_[i], w.wraps, w.out, w.rel, w.in, w.use);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return key(a) < key(b); });
    const auto& items = policy_.items;
    auto window_text = [&](int32_t i) {
      const PolicyItem& x = items[i];
      return x.wraps ? absl::StrCat("ops ", x.swap_out_op, "..(next iteration)..",
                                    x.first_use_op)
                     : absl::StrCat("ops ", x.swap_out_op, "..", x.first_use_op);
    };
    // Per tensor, exact duplicates are adjacent; a window overlaps an earlier
    // one when it starts before the furthest first use seen so far; the
    // wrapping window (at most one) holds the positions before its first
    // use and after its swap-out.
    for (size_t k = 0; k < order.size();) {
      size_t e = k;
      while (e < order.size() && tensor_of_item_[order[e]] == tensor_of_item_[order[k]]) ++e;
      int32_t reach = -1;
      int32_t wrap = -1;
      for (size_t j = k; j < e; ++j) {
        const int32_t cur = order[j];
        if (j > k && key(cur) == key(order[j - 1])) {
          Add(ViolationKind::kDuplicateItem, cur, -1,
              absl::StrCat(ItemText(cur), ": duplicates item ", order[j - 1]));
          accounted_[cur] = false;
          continue;
        }
        if (!accounted_[cur]) continue;
        const Window b = WindowOf(cur);
        int32_t clash = -1;
        if (!b.wraps) {
          if (reach >= 0 && b.out < WindowOf(reach).use) clash = reach;
        } else if (wrap >= 0) {
          clash = wrap;
        } else {
          // Every plain window must lie within (first use, swap-out).
          for (size_t q = k; q < j && clash < 0; ++q) {
            const int32_t o = order[q];
            if (!accounted_[o] || items[o].wraps) continue;
            const Window a = WindowOf(o);
            if (a.out < b.use || a.use > b.out) clash = o;
          }
        }
        if (clash >= 0) {
          Add(ViolationKind::kOverlappingItems, cur, -1,
              absl::StrCat(ItemText(cur), ": window ", window_text(cur), " overlaps item ", clash,
                           "'s window ", window_text(clash)));
          accounted_[cur] = false;
          continue;
        }
        if (b.wraps) {
          wrap = cur;
        } else if (reach < 0 || b.use > WindowOf(reach).use) {
          reach = cur;
        }
      }
      k = e;
    }
  }

  // Clean items: the tensor came back from the host (the latest first use
  // of an accounted window of it at or before the swap-out — its own when
  // it wraps) and nothing wrote it from there through the swap-out.
  void CheckClean() {
    absl::flat_hash_map<TensorId, std::vector<int32_t>> by_tensor;
    bool any = false;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (!accounted_[i]) continue;
      by_tensor[tensor_of_item_[i]].push_back(static_cast<int32_t>(i));
      any = any || policy_.items[i].clean;
    }
    if (!any) return;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (!accounted_[i] || !policy_.items[i].clean) continue;
      const TensorId t = tensor_of_item_[i];
      const Window w = WindowOf(i);
      int32_t arrival = -1;
      for (int32_t j : by_tensor[t]) {
        const int32_t use = WindowOf(j).use;
        if (use <= w.out) arrival = std::max(arrival, use);
      }
      const int32_t idx = static_cast<int32_t>(i);
      if (arrival < 0) {
        Add(ViolationKind::kCleanNotOnHost, idx, -1,
            absl::StrCat(ItemText(i),
                         ": marked clean, but the host holds no copy: the tensor was not brought "
                         "back from the host before its swap-out after ",
                         Op(policy_.items[i].swap_out_op)));
        continue;
      }
      absl::Span<const OpIndex> uses = trace_.tensor_uses(t);
      for (auto u = std::lower_bound(uses.begin(), uses.end(), begin_);
           u != uses.end() && *u < begin_ + n_; ++u) {
        const int32_t local = *u - begin_;
        const int32_t p = Pos(local);
        if (p < arrival || p > w.out) continue;
        absl::Span<const TensorId> outs = trace_.outputs(*u);
        if (std::find(outs.begin(), outs.end(), t) == outs.end()) continue;
        Add(ViolationKind::kCleanWritten, idx, local,
            absl::StrCat(ItemText(i), ": marked clean, but ", Op(local),
                         " writes it after it came back from the host at ", Op(order_[arrival])));
        break;
      }
    }
  }

  absl::Status BuildTimeline(const CheckOptions& options) {
    if (timeline_built_) return absl::OkStatus();
    SWAPPLAN_ASSIGN_OR_RETURN(
        OpTimeline tl, OpTimeline::Build(trace_, it_, options.op_time_model, options.iteration_time_ns));
    end_ns_.resize(n_);
    double t = 0;
    for (int32_t p = 0; p < n_; ++p) end_ns_[p] = t += tl.duration_ns(order_[p]);
    timeline_built_ = true;
    return absl::OkStatus();
  }
  double StartNs(int32_t p) const { return p == 0 ? 0.0 : end_ns_[p - 1]; }
  // The first position whose end is >= t (n when t is past the end).
  int32_t PositionEndingAtOrAfter(double t) const {
    return static_cast<int32_t>(std::lower_bound(end_ns_.begin(), end_ns_.end(), t) -
                                end_ns_.begin());
  }

  absl::Status CheckReleases(const CheckOptions& options) {
    std::vector<int32_t> order;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (accounted_[i]) order.push_back(static_cast<int32_t>(i));
    }
    if (order.empty()) return absl::OkStatus();
    const double bw = policy_.d2h_bandwidth_bytes_per_s;
    if (!(bw > 0)) {
      Add(ViolationKind::kNoBandwidth, -1, -1,
          "the policy has items but no d2h bandwidth, so its release points cannot be checked");
      return absl::OkStatus();
    }
    SWAPPLAN_RETURN_IF_ERROR(BuildTimeline(options));
    const auto& items = policy_.items;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return Pos(items[a].swap_out_op) < Pos(items[b].swap_out_op);
    });
    double stream_free = 0;
    for (int32_t i : order) {
      const PolicyItem& item = items[i];
      if (item.clean || item.action != ItemAction::kSwap) continue;  // no copy
      const int64_t size = trace_.tensor(tensor_of_item_[i]).size_bytes;
      report_.bytes_out += size;
      const Window w = WindowOf(i);
      const double start = std::max(end_ns_[w.out], stream_free);
      const double done = start + TransferNs(size, bw);
      stream_free = done;
      if (done <= end_ns_[w.rel]) continue;
      // A wrapping item released by the last op may finish its copy after
      // it: the iteration ends when the copy does.
      if (w.wraps && w.rel == n_ - 1) continue;
      if (item.release_waits_for_copy) {
        ++report_.release_waits;  // planned: priced by EstimateReleaseWaits
        continue;
      }
      const int32_t done_pos = PositionEndingAtOrAfter(done);
      std::string during = done_pos < n_ ? absl::StrCat("during ", Op(order_[done_pos]))
                                         : std::string("after the iteration ends");
      Add(ViolationKind::kReleaseBeforeCopyDone, i, done_pos < n_ ? order_[done_pos] : -1,
          absl::StrCat(ItemText(i), ": released after ", Op(item.release_op), " (",
                       absl::StrFormat("%.1f", end_ns_[w.rel]), " ns) but its copy out (", size,
                       " bytes at ", FormatBandwidth(bw), ", started at ",
                       absl::StrFormat("%.1f", start), " ns) completes at ",
                       absl::StrFormat("%.1f", done), " ns, ", during));
    }
    if (report_.release_waits > 0) EstimateReleaseWaits(order, bw);
    return absl::OkStatus();
  }

  // The waits of release_waits_for_copy items, on a timeline stretched by
  // the waits themselves: the op at position p starts at its stall-free
  // start plus the waits before it; a copy starts when its swap-out has
  // ended (so stretched too) and the FIFO is free; the op after a flagged
  // item's release point waits for its copy. `order`: accounted items in
  // FIFO order (clean ones make no copy). O(ops + items).
  void EstimateReleaseWaits(const std::vector<int32_t>& order, double bw) {
    const auto& items = policy_.items;
    std::vector<std::vector<size_t>> waits_at(n_);
    for (size_t j = 0; j < order.size(); ++j) {
      const PolicyItem& item = items[order[j]];
      const int32_t rel = Pos(item.release_op);
      if (item.release_waits_for_copy && !item.clean && rel + 1 < n_) {
        waits_at[rel + 1].push_back(j);
      }
    }
    std::vector<double> shift(n_, 0.0), copy_end(order.size(), 0.0);
    double delay = 0, stream_free = 0;
    size_t queued = 0;
    for (int32_t k = 0; k < n_; ++k) {
      while (queued < order.size() && Pos(items[order[queued]].swap_out_op) < k) {
        const int32_t i = order[queued];
        const int32_t out = Pos(items[i].swap_out_op);
        if (!items[i].clean && items[i].action == ItemAction::kSwap) {
          const double start = std::max(end_ns_[out] + shift[out], stream_free);
          stream_free = start + TransferNs(trace_.tensor(tensor_of_item_[i]).size_bytes, bw);
        }
        copy_end[queued++] = stream_free;
      }
      const double op_start = StartNs(k) + delay;
      double ready = op_start;
      for (size_t j : waits_at[k]) ready = std::max(ready, copy_end[j]);
      delay += ready - op_start;
      shift[k] = delay;
    }
    report_.release_wait_ns = delay;
  }

  // Positions each accounted item keeps its tensor off the device, as
  // (first, last) ranges.
  template <typename F>
  void ForEachOffRange(size_t i, F&& f) const {
    const Window w = WindowOf(i);
    if (w.wraps) {
      if (w.in > 0) f(0, w.in - 1);
      if (w.rel + 1 <= n_ - 1) f(w.rel + 1, n_ - 1);
    } else if (w.rel + 1 <= w.in - 1) {
      f(w.rel + 1, w.in - 1);
    }
  }

  void CheckBudget() {
    std::vector<int64_t> off(n_ + 1, 0);
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (!accounted_[i]) continue;
      const int64_t size = trace_.tensor(tensor_of_item_[i]).size_bytes;
      ForEachOffRange(i, [&](int32_t a, int32_t b) {
        off[a] += size;
        off[b + 1] -= size;
      });
    }
    const int64_t budget = policy_.device_budget_bytes;
    int64_t running = 0;
    int32_t run_begin = -1, worst = -1;
    int64_t worst_bytes = 0;
    report_.peak_bytes = -1;
    auto close_run = [&](int32_t end) {
      Add(ViolationKind::kOverBudget, -1, order_[worst],
          absl::StrCat(Op(order_[worst]), ": ", worst_bytes, " bytes in use, ",
                       worst_bytes - budget, " over the budget of ", budget,
                       run_begin == end - 1
                           ? std::string()
                           : absl::StrCat(scheduled_ ? " (positions " : " (ops ", run_begin, "..",
                                          end - 1, " are over)")),
          worst_bytes - budget);
      run_begin = -1;
    };
    for (int32_t p = 0; p < n_; ++p) {
      running += off[p];
      const int64_t bytes = unswapped_[p] - running;
      if (bytes > report_.peak_bytes) {
        report_.peak_bytes = bytes;
        report_.peak_op = order_[p];
      }
      if (bytes > budget) {
        if (run_begin < 0) {
          run_begin = p;
          worst = p;
          worst_bytes = bytes;
        } else if (bytes > worst_bytes) {
          worst = p;
          worst_bytes = bytes;
        }
      } else if (run_begin >= 0) {
        close_run(p);
      }
    }
    if (run_begin >= 0) close_run(n_);
  }

  void CheckPool();

  void TimeSwapIns(const CheckOptions& options) {
    const double bw = policy_.h2d_bandwidth_bytes_per_s;
    if (!timeline_built_ || !(bw > 0)) return;
    (void)options;
    std::vector<int32_t> order;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (accounted_[i]) order.push_back(static_cast<int32_t>(i));
    }
    const auto& items = policy_.items;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return Pos(items[a].swap_in_op) < Pos(items[b].swap_in_op);
    });
    double stream_free = 0;
    for (int32_t i : order) {
      const Window w = WindowOf(i);
      const double start = std::max(StartNs(w.in), stream_free);
      stream_free = start + TransferNs(trace_.tensor(tensor_of_item_[i]).size_bytes, bw);
      const double need = StartNs(w.use);
      if (stream_free > need) {
        ++report_.late_swap_ins;
        report_.swap_in_wait_ns += stream_free - need;
      }
    }
  }

  const Trace& trace_;
  const Policy& policy_;
  const MemoryCurve& curve_;
  const int32_t it_;
  const OpIndex begin_;
  const int32_t n_;
  const bool scheduled_;
  std::vector<int32_t> pos_, order_;
  std::vector<int64_t> unswapped_;
  std::vector<TensorId> tensor_of_item_;
  std::vector<bool> accounted_;
  bool timeline_built_ = false;
  std::vector<double> end_ns_;
  CheckReport report_;
};

// Pool: the objects fit the budget, every tensor size has a class, and no
// class needs more objects than it has at any position (tensors counted
// over their lifetimes under the schedule, minus the items' off ranges).
// One violation per maximal run of positions over, per class.
void Checker::CheckPool() {
  const MemoryPool& pool = policy_.pool;
  if (pool.empty() && pool.tensor_sizes.empty()) return;
  if (absl::Status st = pool.Validate(); !st.ok()) {
    Add(ViolationKind::kBadPool, -1, -1, std::string(st.message()));
    return;
  }
  const int64_t total = pool.TotalBytes();
  if (total > policy_.device_budget_bytes) {
    Add(ViolationKind::kPoolOverBudget, -1, -1,
        absl::StrCat("the pool's ", pool.classes.size(), " classes hold ", total,
                     " bytes, over the budget of ", policy_.device_budget_bytes),
        total - policy_.device_budget_bytes);
  }
  const int32_t num_classes = static_cast<int32_t>(pool.classes.size());
  // (position, delta) per class.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> events(num_classes);
  absl::flat_hash_map<int64_t, bool> reported_size;
  std::vector<int32_t> class_of(trace_.num_tensors(), -1);
  for (TensorId t = 0; t < trace_.num_tensors(); ++t) {
    const TensorLifetime& lt = trace_.lifetime(t);
    if (!lt.occupies_device() || lt.free_op < begin_ || lt.alloc_op >= begin_ + n_) continue;
    const int64_t size = trace_.tensor(t).size_bytes;
    const int32_t c = pool.ClassOf(size);
    if (c < 0) {
      if (reported_size.emplace(size, true).second) {
        Add(ViolationKind::kPoolNoClass, -1, -1,
            absl::StrCat("tensor ", trace_.tensor(t).trace_id, " of ", size,
                         " bytes fits no class of the pool (the largest object is ",
                         pool.classes.back().object_bytes, " bytes)"));
      }
      continue;
    }
    class_of[t] = c;
    const ScheduledLifetime s = ScheduleLifetime(trace_, it_, t, pos_);
    events[c].emplace_back(std::max(s.alloc, 0), 1);
    events[c].emplace_back(std::min(s.free, n_ - 1) + 1, -1);
  }
  for (size_t i = 0; i < policy_.items.size(); ++i) {
    if (!accounted_[i]) continue;
    const int32_t c = class_of[tensor_of_item_[i]];
    if (c < 0) continue;
    ForEachOffRange(i, [&](int32_t a, int32_t b) {
      events[c].emplace_back(a, -1);
      events[c].emplace_back(b + 1, 1);
    });
  }
  for (int32_t c = 0; c < num_classes; ++c) {
    std::vector<std::pair<int32_t, int32_t>>& ev = events[c];
    std::sort(ev.begin(), ev.end());
    const int32_t cap = pool.classes[c].count;
    int32_t count = 0;
    int32_t run_begin = -1, worst = -1, worst_count = 0;
    auto close_run = [&](int32_t end) {
      Add(ViolationKind::kPoolClassFull, -1, order_[worst],
          absl::StrCat(Op(order_[worst]), ": class ", c, " (", pool.classes[c].object_bytes,
                       "-byte objects) needs ", worst_count, " objects but has ", cap,
                       run_begin == end - 1
                           ? std::string()
                           : absl::StrCat(scheduled_ ? " (positions " : " (ops ", run_begin,
                                          "..", end - 1, " are over)")));
      run_begin = -1;
    };
    for (size_t k = 0; k < ev.size();) {
      const int32_t p = ev[k].first;
      while (k < ev.size() && ev[k].first == p) count += ev[k++].second;
      if (p >= n_) break;
      const int32_t next = k < ev.size() ? std::min(ev[k].first, n_) : n_;
      // Positions p .. next-1 hold `count` objects.
      if (count > cap) {
        if (run_begin < 0) {
          run_begin = p;
          worst = p;
          worst_count = count;
        } else if (count > worst_count) {
          worst = p;
          worst_count = count;
        }
      } else if (run_begin >= 0) {
        close_run(p);
      }
      if (next >= n_ && run_begin >= 0) close_run(n_);
    }
  }
}

}  // namespace

absl::StatusOr<CheckReport> CheckPolicy(const Trace& trace, const Policy& policy,
                                        const CheckOptions& options, const MemoryCurve* curve) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  if (absl::Status fp = CheckFingerprint(policy, trace); !fp.ok()) {
    CheckReport r;
    r.iteration = policy.fingerprint.iteration;
    r.items = static_cast<int32_t>(policy.items.size());
    r.budget_bytes = policy.device_budget_bytes;
    std::string msg(fp.message());
    // CheckFingerprint tags only the mismatch case; tag the missing-iteration
    // case the same way.
    const std::string tag = " [fingerprint-mismatch]";
    if (msg.size() < tag.size() || msg.compare(msg.size() - tag.size(), tag.size(), tag) != 0) {
      msg += tag;
    }
    r.violations.push_back({ViolationKind::kFingerprintMismatch, -1, -1, 0, std::move(msg)});
    return r;
  }
  std::optional<MemoryCurve> own;
  if (curve == nullptr) {
    SWAPPLAN_ASSIGN_OR_RETURN(own, ComputeMemoryCurve(trace));
    curve = &*own;
  }
  return Checker(trace, policy, *curve).Run(options);
}

}  // namespace swapplan

namespace swapplan {

absl::StatusOr<CheckReport> CheckMarkingReleaseWaits(const Trace& trace, Policy* policy,
                                                     const CheckOptions& options,
                                                     const MemoryCurve* curve) {
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport r, CheckPolicy(trace, *policy, options, curve));
  bool marked = false;
  for (const Violation& v : r.violations) {
    if (v.kind != ViolationKind::kReleaseBeforeCopyDone || v.item < 0) continue;
    policy->items[v.item].release_waits_for_copy = true;
    marked = true;
  }
  if (!marked) return r;
  return CheckPolicy(trace, *policy, options, curve);
}

}  // namespace swapplan
