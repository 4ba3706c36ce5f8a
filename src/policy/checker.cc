#include "swapplan/policy/checker.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "swapplan/policy/policy_io.h"
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
        n_(trace.iteration(it_).num_ops()) {}

  absl::StatusOr<CheckReport> Run(const CheckOptions& options) {
    report_.iteration = it_;
    report_.items = static_cast<int32_t>(policy_.items.size());
    report_.budget_bytes = policy_.device_budget_bytes;
    const std::vector<int64_t>& unswapped = curve_.unswapped_bytes();
    for (int32_t i = 0; i < n_; ++i) {
      report_.peak_unswapped_bytes = std::max(report_.peak_unswapped_bytes, unswapped[begin_ + i]);
    }
    tensor_of_item_.assign(policy_.items.size(), kNoTensor);
    accounted_.assign(policy_.items.size(), false);
    CheckItems();
    CheckDuplicates();
    SWAPPLAN_RETURN_IF_ERROR(CheckReleases(options));
    CheckBudget();
    TimeSwapIns(options);
    return std::move(report_);
  }

 private:
  std::string Op(int32_t local) const {
    const OpInfo& op = trace_.op(begin_ + local);
    return absl::StrCat("op ", local, " (", trace_.op_name(op.name), ", ", PhaseName(op.phase),
                        ")");
  }
  std::string ItemText(size_t i) const {
    return absl::StrCat("item ", i, " (tensor ", policy_.items[i].tensor_id, ")");
  }
  void Add(ViolationKind kind, int32_t item, int32_t op, std::string text, int64_t bytes = 0) {
    report_.violations.push_back(
        {kind, item, op, bytes, absl::StrCat(text, " [", ViolationTag(kind), "]")});
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
      if (item.swap_in_op <= item.swap_out_op) {
        Add(ViolationKind::kSwapInBeforeSwapOut, idx, item.swap_in_op,
            absl::StrCat(ItemText(i), ": swap-in at ", Op(item.swap_in_op),
                         " is not after the swap-out at ", Op(item.swap_out_op)));
        continue;
      }
      if (!(item.swap_out_op <= item.release_op && item.release_op < item.swap_in_op &&
            item.swap_in_op <= item.first_use_op)) {
        Add(ViolationKind::kBadOpOrder, idx, -1,
            absl::StrCat(ItemText(i),
                         ": ops must satisfy swap_out_op <= release_op < swap_in_op <= "
                         "first_use_op, got ",
                         item.swap_out_op, ", ", item.release_op, ", ", item.swap_in_op, ", ",
                         item.first_use_op));
        continue;
      }
      tensor_of_item_[i] = t;
      const int64_t size = trace_.tensor(t).size_bytes;
      if (item.size_bytes != size) {
        Add(ViolationKind::kSizeMismatch, idx, -1,
            absl::StrCat(ItemText(i), ": size_bytes ", item.size_bytes, " but the trace says ",
                         size));
      }
      const TensorLifetime& life = trace_.lifetime(t);
      const OpIndex out_g = begin_ + item.swap_out_op;
      const OpIndex use_g = begin_ + item.first_use_op;
      if (!(life.LiveAt(out_g) && life.LiveAt(use_g))) {
        std::string where =
            life.occupies_device()
                ? absl::StrCat("it is allocated during ops ",
                               std::max<int64_t>(life.alloc_op - begin_, 0), "..",
                               std::min<int64_t>(life.free_op - begin_, n_ - 1))
                : std::string("it never occupies the device");
        if (life.occupies_device() && (life.free_op < begin_ || life.alloc_op >= begin_ + n_)) {
          where = absl::StrCat("it is not allocated in iteration ", it_);
        }
        Add(ViolationKind::kNotResident, idx, -1,
            absl::StrCat(ItemText(i), ": the tensor is not allocated throughout ops ",
                         item.swap_out_op, "..", item.first_use_op, " (", where, ")"));
        continue;
      }
      accounted_[i] = true;
      absl::Span<const OpIndex> uses = trace_.tensor_uses(t);
      for (auto u = std::upper_bound(uses.begin(), uses.end(), out_g);
           u != uses.end() && *u < use_g; ++u) {
        const int32_t local = *u - begin_;
        Add(ViolationKind::kUseWhileOffDevice, idx, local,
            absl::StrCat(ItemText(i), ": used by ", Op(local), " between its swap-out after op ",
                         item.swap_out_op, " and its first use at op ", item.first_use_op));
      }
    }
  }

  void CheckDuplicates() {
    std::vector<int32_t> order;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (tensor_of_item_[i] != kNoTensor) order.push_back(static_cast<int32_t>(i));
    }
    const auto& items = policy_.items;
    auto key = [&](int32_t i) {
      const PolicyItem& x = items[i];
      return std::make_tuple(tensor_of_item_[i], x.swap_out_op, x.release_op, x.swap_in_op,
                             x.first_use_op);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return key(a) < key(b); });
    // Per tensor, exact duplicates are adjacent; a window overlaps an earlier
    // one when it starts before the furthest first use seen so far.
    for (size_t k = 0; k < order.size();) {
      size_t e = k;
      while (e < order.size() && tensor_of_item_[order[e]] == tensor_of_item_[order[k]]) ++e;
      int32_t reach = order[k];
      for (size_t j = k + 1; j < e; ++j) {
        const int32_t cur = order[j];
        if (key(cur) == key(order[j - 1])) {
          Add(ViolationKind::kDuplicateItem, cur, -1,
              absl::StrCat(ItemText(cur), ": duplicates item ", order[j - 1]));
          accounted_[cur] = false;
          continue;
        }
        const PolicyItem& a = items[reach];
        const PolicyItem& b = items[cur];
        if (b.swap_out_op < a.first_use_op) {
          Add(ViolationKind::kOverlappingItems, cur, -1,
              absl::StrCat(ItemText(cur), ": window ops ", b.swap_out_op, "..", b.first_use_op,
                           " overlaps item ", reach, "'s window ops ", a.swap_out_op, "..",
                           a.first_use_op));
          accounted_[cur] = false;
        }
        if (b.first_use_op > a.first_use_op) reach = cur;
      }
      k = e;
    }
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
    SWAPPLAN_ASSIGN_OR_RETURN(
        timeline_, OpTimeline::Build(trace_, it_, options.op_time_model, options.iteration_time_ns));
    const auto& items = policy_.items;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return items[a].swap_out_op < items[b].swap_out_op;
    });
    double stream_free = 0;
    for (int32_t i : order) {
      const PolicyItem& item = items[i];
      const int64_t size = trace_.tensor(tensor_of_item_[i]).size_bytes;
      report_.bytes_out += size;
      const double start = std::max(timeline_->end_ns(item.swap_out_op), stream_free);
      const double done = start + TransferNs(size, bw);
      stream_free = done;
      if (done <= timeline_->end_ns(item.release_op)) continue;
      if (item.release_waits_for_copy) {
        ++report_.release_waits;  // planned: priced by EstimateReleaseWaits
        continue;
      }
      const int32_t done_op = timeline_->OpEndingAtOrAfter(done);
      std::string during = done_op < n_ ? absl::StrCat("during ", Op(done_op))
                                         : std::string("after the iteration ends");
      Add(ViolationKind::kReleaseBeforeCopyDone, i, done_op < n_ ? done_op : -1,
          absl::StrCat(ItemText(i), ": released after ", Op(item.release_op), " (",
                       absl::StrFormat("%.1f", timeline_->end_ns(item.release_op)),
                       " ns) but its copy out (", size, " bytes at ", FormatBandwidth(bw),
                       ", started at ", absl::StrFormat("%.1f", start), " ns) completes at ",
                       absl::StrFormat("%.1f", done), " ns, ", during));
    }
    if (report_.release_waits > 0) EstimateReleaseWaits(order, bw);
    return absl::OkStatus();
  }

  // The waits of release_waits_for_copy items, on a timeline stretched by
  // the waits themselves: op k starts at its stall-free start plus the
  // waits before it; a copy starts when its swap_out_op has ended (so
  // stretched too) and the FIFO is free; op release_op + 1 of a flagged item
  // waits for its copy. `order`: accounted items in FIFO order. O(ops +
  // items).
  void EstimateReleaseWaits(const std::vector<int32_t>& order, double bw) {
    const auto& items = policy_.items;
    std::vector<std::vector<size_t>> waits_at(n_);
    for (size_t j = 0; j < order.size(); ++j) {
      const PolicyItem& item = items[order[j]];
      if (item.release_waits_for_copy && item.release_op + 1 < n_) {
        waits_at[item.release_op + 1].push_back(j);
      }
    }
    std::vector<double> shift(n_, 0.0), copy_end(order.size(), 0.0);
    double delay = 0, stream_free = 0;
    size_t queued = 0;
    for (int32_t k = 0; k < n_; ++k) {
      while (queued < order.size() && items[order[queued]].swap_out_op < k) {
        const int32_t i = order[queued];
        const PolicyItem& item = items[i];
        const double start = std::max(
            timeline_->end_ns(item.swap_out_op) + shift[item.swap_out_op], stream_free);
        stream_free = start + TransferNs(trace_.tensor(tensor_of_item_[i]).size_bytes, bw);
        copy_end[queued++] = stream_free;
      }
      const double op_start = timeline_->start_ns(k) + delay;
      double ready = op_start;
      for (size_t j : waits_at[k]) ready = std::max(ready, copy_end[j]);
      delay += ready - op_start;
      shift[k] = delay;
    }
    report_.release_wait_ns = delay;
  }

  void CheckBudget() {
    std::vector<int64_t> off(n_ + 1, 0);
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (!accounted_[i]) continue;
      const PolicyItem& item = policy_.items[i];
      const int64_t size = trace_.tensor(tensor_of_item_[i]).size_bytes;
      if (item.release_op + 1 <= item.swap_in_op - 1) {
        off[item.release_op + 1] += size;
        off[item.swap_in_op] -= size;
      }
    }
    const std::vector<int64_t>& unswapped = curve_.unswapped_bytes();
    const int64_t budget = policy_.device_budget_bytes;
    int64_t running = 0;
    int32_t run_begin = -1, worst = -1;
    int64_t worst_bytes = 0;
    report_.peak_bytes = -1;
    auto close_run = [&](int32_t end) {
      Add(ViolationKind::kOverBudget, -1, worst,
          absl::StrCat(Op(worst), ": ", worst_bytes, " bytes in use, ", worst_bytes - budget,
                       " over the budget of ", budget,
                       run_begin == end - 1 ? std::string()
                                            : absl::StrCat(" (ops ", run_begin, "..", end - 1,
                                                           " are over)")),
          worst_bytes - budget);
      run_begin = -1;
    };
    for (int32_t i = 0; i < n_; ++i) {
      running += off[i];
      const int64_t bytes = unswapped[begin_ + i] - running;
      if (bytes > report_.peak_bytes) {
        report_.peak_bytes = bytes;
        report_.peak_op = i;
      }
      if (bytes > budget) {
        if (run_begin < 0) {
          run_begin = i;
          worst = i;
          worst_bytes = bytes;
        } else if (bytes > worst_bytes) {
          worst = i;
          worst_bytes = bytes;
        }
      } else if (run_begin >= 0) {
        close_run(i);
      }
    }
    if (run_begin >= 0) close_run(n_);
  }

  void TimeSwapIns(const CheckOptions& options) {
    const double bw = policy_.h2d_bandwidth_bytes_per_s;
    if (!timeline_.has_value() || !(bw > 0)) return;
    std::vector<int32_t> order;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (accounted_[i]) order.push_back(static_cast<int32_t>(i));
    }
    const auto& items = policy_.items;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return items[a].swap_in_op < items[b].swap_in_op;
    });
    double stream_free = 0;
    for (int32_t i : order) {
      const PolicyItem& item = items[i];
      const double start = std::max(timeline_->start_ns(item.swap_in_op), stream_free);
      stream_free = start + TransferNs(trace_.tensor(tensor_of_item_[i]).size_bytes, bw);
      const double need = timeline_->start_ns(item.first_use_op);
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
  std::vector<TensorId> tensor_of_item_;
  std::vector<bool> accounted_;
  std::optional<OpTimeline> timeline_;
  CheckReport report_;
};

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
