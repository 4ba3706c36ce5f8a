// The checker (checker.h): the resolver's issues (policy/resolver.h: the
// structural rules), then the budget, the release points against the
// stall-free d2h FIFO, the pool, and the informational swap-in timing.
#include "swapplan/sim/checker.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "swapplan/curve/reserved_curve.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"
#include "swapplan/trace/tensor_label.h"

namespace swapplan {

absl::string_view ViolationTag(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kFingerprintMismatch: return "fingerprint-mismatch";
    case ViolationKind::kUnknownTensor: return "unknown-tensor";
    case ViolationKind::kOpOutOfRange: return "op-out-of-range";
    case ViolationKind::kSwapInBeforeSwapOut: return "swap-in-before-swap-out";
    case ViolationKind::kBadOpOrder: return "bad-op-order";
    case ViolationKind::kSizeMismatch: return "size-mismatch";
    case ViolationKind::kNotResident: return "not-resident";
    case ViolationKind::kUseWhileOffDevice: return "use-while-off-device";
    case ViolationKind::kDuplicateItem: return "duplicate-item";
    case ViolationKind::kOverlappingItems: return "overlapping-items";
    case ViolationKind::kNoBandwidth: return "no-bandwidth";
    case ViolationKind::kReleaseBeforeCopyDone: return "release-before-copy-done";
    case ViolationKind::kOverBudget: return "over-budget";
    case ViolationKind::kBadSchedule: return "bad-schedule";
    case ViolationKind::kScheduleBreaksDependency: return "schedule-breaks-dependency";
    case ViolationKind::kWrapNotPersistent: return "wrap-not-persistent";
    case ViolationKind::kCleanNotOnHost: return "clean-not-on-host";
    case ViolationKind::kCleanWritten: return "clean-but-written";
    case ViolationKind::kBadPool: return "bad-pool";
    case ViolationKind::kPoolOverBudget: return "pool-over-budget";
    case ViolationKind::kPoolNoClass: return "pool-no-class";
    case ViolationKind::kPoolClassFull: return "pool-class-full";
    case ViolationKind::kBadAction: return "bad-action";
    case ViolationKind::kUnknownTier: return "unknown-tier";
    case ViolationKind::kCleanOtherTier: return "clean-other-tier";
    case ViolationKind::kTierOverCapacity: return "tier-over-capacity";
    case ViolationKind::kNotRecomputable: return "not-recomputable";
    case ViolationKind::kRecomputeUnderstated: return "recompute-understated";
    case ViolationKind::kReservedOverBudget: return "reserved-over-budget";
  }
  return "unknown";
}

absl::Status CheckOptions::Validate() const {
  if (iteration_time_ns < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("check options: iteration_time_ns is ", iteration_time_ns, "; must be >= 0"));
  }
  if (device) {
    if (absl::Status st = device->ValidatePartial(); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("check options: ", st.message()));
    }
  }
  if (absl::Status st = allocator.Validate(); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("check options: ", st.message()));
  }
  return absl::OkStatus();
}

namespace {

ViolationKind KindOfRule(ResolveRule rule) {
  switch (rule) {
    case ResolveRule::kFingerprintMismatch: return ViolationKind::kFingerprintMismatch;
    case ResolveRule::kBadSchedule: return ViolationKind::kBadSchedule;
    case ResolveRule::kScheduleBreaksDependency: return ViolationKind::kScheduleBreaksDependency;
    case ResolveRule::kUnknownTensor: return ViolationKind::kUnknownTensor;
    case ResolveRule::kOpOutOfRange: return ViolationKind::kOpOutOfRange;
    case ResolveRule::kBadOpOrder: return ViolationKind::kBadOpOrder;
    case ResolveRule::kSwapInBeforeSwapOut: return ViolationKind::kSwapInBeforeSwapOut;
    case ResolveRule::kBadAction: return ViolationKind::kBadAction;
    case ResolveRule::kSizeMismatch: return ViolationKind::kSizeMismatch;
    case ResolveRule::kNotResident: return ViolationKind::kNotResident;
    case ResolveRule::kWrapNotPersistent: return ViolationKind::kWrapNotPersistent;
    case ResolveRule::kUseWhileOffDevice: return ViolationKind::kUseWhileOffDevice;
    case ResolveRule::kDuplicateItem: return ViolationKind::kDuplicateItem;
    case ResolveRule::kOverlappingItems: return ViolationKind::kOverlappingItems;
    case ResolveRule::kCleanNotOnHost: return ViolationKind::kCleanNotOnHost;
    case ResolveRule::kCleanWritten: return ViolationKind::kCleanWritten;
    case ResolveRule::kUnknownTier: return ViolationKind::kUnknownTier;
    case ResolveRule::kCleanOtherTier: return ViolationKind::kCleanOtherTier;
    case ResolveRule::kTierOverCapacity: return ViolationKind::kTierOverCapacity;
    case ResolveRule::kNotRecomputable: return ViolationKind::kNotRecomputable;
    case ResolveRule::kRecomputeUnderstated: return ViolationKind::kRecomputeUnderstated;
  }
  return ViolationKind::kBadOpOrder;
}

class Checker {
 public:
  Checker(const Trace& trace, const Policy& policy, const DeviceModel& device,
          const ResolvedPolicy& rp)
      : trace_(trace),
        policy_(policy),
        device_(device),
        rp_(rp),
        budget_(device.BudgetBytes()),
        begin_(trace.iteration(rp.iteration).op_begin),
        n_(rp.num_ops) {}

  absl::StatusOr<CheckReport> Run(const CheckOptions& options) {
    report_.iteration = rp_.iteration;
    report_.items = static_cast<int32_t>(policy_.items.size());
    report_.budget_bytes = budget_;
    for (const ResolveIssue& i : rp_.issues) {
      report_.violations.push_back({KindOfRule(i.rule), i.item, i.op, 0, i.message});
    }
    if (rp_.stopped) return std::move(report_);
    report_.tier_usage = rp_.tier_usage;
    unswapped_ = rp_.UnswappedBytes();
    for (int32_t p = 0; p < n_; ++p) {
      report_.peak_unswapped_bytes = std::max(report_.peak_unswapped_bytes, unswapped_[p]);
    }
    SWAPPLAN_RETURN_IF_ERROR(CheckReleases(options));
    CheckBudget();
    SWAPPLAN_RETURN_IF_ERROR(CheckReserved(options));
    CheckPool();
    TimeSwapIns();
    return std::move(report_);
  }

 private:
  std::string Op(int32_t local) const {
    const OpInfo& op = trace_.op(begin_ + local);
    std::string s = absl::StrCat("op ", local, " (", trace_.op_name(op.name), ", ",
                                 PhaseName(op.phase), ")");
    if (rp_.scheduled()) absl::StrAppend(&s, " at position ", rp_.pos[local]);
    return s;
  }
  std::string ItemText(int32_t i) const {
    return absl::StrCat("item ", i, " (", names_.Label(policy_.items[i].tensor_id, LabelForm::kShort), ")");
  }
  void Add(ViolationKind kind, int32_t item, int32_t op, std::string text, int64_t bytes = 0) {
    report_.violations.push_back(
        {kind, item, op, bytes, absl::StrCat(text, " [", ViolationTag(kind), "]")});
  }
  // Over-budget and pool runs: "(ops a..b are over)" unless one position.
  std::string RunText(int32_t begin, int32_t end) const {
    if (begin == end - 1) return std::string();
    return absl::StrCat(rp_.scheduled() ? " (positions " : " (ops ", begin, "..", end - 1,
                        " are over)");
  }

  // The stall-free op timeline in positions: each position first re-runs
  // the recomputations triggered there (RECOMPUTE items' recompute_ns at
  // their swap_in_op, as the simulator's compute stream does), then its op.
  absl::Status BuildTimeline(const CheckOptions& options) {
    if (!end_ns_.empty() || n_ == 0) return absl::OkStatus();
    SWAPPLAN_ASSIGN_OR_RETURN(
        OpTimeline tl, OpTimeline::Build(trace_, rp_.iteration, options.op_time_model,
                                         options.iteration_time_ns, device_.compute_time_scale));
    std::vector<int64_t> recompute(n_, 0);
    for (const ResolvedItem& it : rp_.items) {
      if (!it.swap()) recompute[it.in] += it.recompute_ns;
    }
    end_ns_.resize(n_);
    op_ns_.resize(n_);
    double t = 0;
    for (int32_t p = 0; p < n_; ++p) {
      op_ns_[p] = tl.duration_ns(rp_.OpAt(p));
      end_ns_[p] = t += static_cast<double>(recompute[p]) + op_ns_[p];
    }
    return absl::OkStatus();
  }
  // When the compute stream reaches position p (its copies in are issued),
  // and when its op starts (after its recomputations).
  double ReachNs(int32_t p) const { return p == 0 ? 0.0 : end_ns_[p - 1]; }
  double OpStartNs(int32_t p) const { return end_ns_[p] - op_ns_[p]; }
  // The first position whose end is >= t (n when t is past the end).
  int32_t PositionEndingAtOrAfter(double t) const {
    return static_cast<int32_t>(std::lower_bound(end_ns_.begin(), end_ns_.end(), t) -
                                end_ns_.begin());
  }

  // Items making a copy out, in issue order (swap-out position, then item
  // order); each tier's stream is the FIFO of its items in this order.
  // RECOMPUTE and clean items make none.
  std::vector<const ResolvedItem*> CopyOutOrder() const {
    std::vector<const ResolvedItem*> order;
    for (const ResolvedItem& it : rp_.items) {
      if (it.copies_out()) order.push_back(&it);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const ResolvedItem* a, const ResolvedItem* b) { return a->out < b->out; });
    return order;
  }

  // Eq. (3) bandwidth of the item's tier for a direction (0: unknown).
  double Bandwidth(const ResolvedItem& it, Direction dir) const {
    return device_.TierBandwidth(it.tier, dir);
  }

  absl::Status CheckReleases(const CheckOptions& options) {
    // Only SWAP items move bytes (a RECOMPUTE item has no copy to time).
    if (std::none_of(rp_.items.begin(), rp_.items.end(),
                     [](const ResolvedItem& it) { return it.swap(); })) {
      return absl::OkStatus();
    }
    // Tiers are validated with positive bandwidths; the host's may be
    // unrecorded.
    if (!(device_.d2h_bandwidth_bytes_per_s > 0) &&
        std::any_of(rp_.items.begin(), rp_.items.end(),
                    [](const ResolvedItem& it) { return it.swap() && it.tier == 0; })) {
      Add(ViolationKind::kNoBandwidth, -1, -1,
          "the policy has items but no d2h bandwidth, so its release points cannot be checked");
      return absl::OkStatus();
    }
    SWAPPLAN_RETURN_IF_ERROR(BuildTimeline(options));
    const std::vector<const ResolvedItem*> order = CopyOutOrder();
    std::vector<double> stream_free(device_.num_tiers(), 0.0);
    for (const ResolvedItem* it : order) {
      const double bw = Bandwidth(*it, Direction::kDeviceToHost);
      report_.bytes_out += it->size_bytes;
      const double start = std::max(end_ns_[it->out], stream_free[it->tier]);
      const double done = start + TransferNs(it->size_bytes, bw);
      stream_free[it->tier] = done;
      if (done <= end_ns_[it->release]) continue;
      // A wrapping item released by the last op may finish its copy after
      // it: the iteration ends when the copy does.
      if (it->wraps && it->release == n_ - 1) continue;
      if (it->release_waits_for_copy) {
        ++report_.release_waits;  // planned: priced by EstimateReleaseWaits
        continue;
      }
      const int32_t done_pos = PositionEndingAtOrAfter(done);
      std::string during = done_pos < n_ ? absl::StrCat("during ", Op(rp_.OpAt(done_pos)))
                                         : std::string("after the iteration ends");
      const PolicyItem& item = policy_.items[it->item];
      const std::string tier =
          it->tier == 0 ? std::string() : absl::StrCat(" to tier ", device_.TierName(it->tier));
      Add(ViolationKind::kReleaseBeforeCopyDone, it->item, done_pos < n_ ? rp_.OpAt(done_pos) : -1,
          absl::StrCat(ItemText(it->item), ": released after ", Op(item.release_op), " (",
                       absl::StrFormat("%.1f", end_ns_[it->release]), " ns) but its copy out",
                       tier, " (", it->size_bytes, " bytes at ", FormatBandwidth(bw),
                       ", started at ", absl::StrFormat("%.1f", start), " ns) completes at ",
                       absl::StrFormat("%.1f", done), " ns, ", during));
    }
    if (report_.release_waits > 0) EstimateReleaseWaits(order);
    return absl::OkStatus();
  }

  // The waits of release_waits_for_copy items, on a timeline stretched by
  // the waits themselves: the op at position p starts at its stall-free
  // start plus the waits before it; a copy starts when its swap-out has
  // ended (so stretched too) and its tier's FIFO is free; the op after a
  // flagged item's release point waits for its copy. O(ops + items).
  void EstimateReleaseWaits(const std::vector<const ResolvedItem*>& order) {
    std::vector<std::vector<size_t>> waits_at(n_);
    for (size_t j = 0; j < order.size(); ++j) {
      if (order[j]->release_waits_for_copy && order[j]->release + 1 < n_) {
        waits_at[order[j]->release + 1].push_back(j);
      }
    }
    std::vector<double> shift(n_, 0.0), copy_end(order.size(), 0.0);
    std::vector<double> stream_free(device_.num_tiers(), 0.0);
    double delay = 0;
    size_t queued = 0;
    for (int32_t k = 0; k < n_; ++k) {
      while (queued < order.size() && order[queued]->out < k) {
        const ResolvedItem& it = *order[queued];
        double& sf = stream_free[it.tier];
        const double start = std::max(end_ns_[it.out] + shift[it.out], sf);
        sf = start + TransferNs(it.size_bytes, Bandwidth(it, Direction::kDeviceToHost));
        copy_end[queued++] = sf;
      }
      const double op_start = OpStartNs(k) + delay;
      double ready = op_start;
      for (size_t j : waits_at[k]) ready = std::max(ready, copy_end[j]);
      delay += ready - op_start;
      shift[k] = delay;
    }
    report_.release_wait_ns = delay;
  }

  // Positions an accounted item keeps its tensor off the device, as
  // (first, last) ranges.
  template <typename F>
  void ForEachOffRange(const ResolvedItem& it, F&& f) const {
    if (it.wraps) {
      if (it.in > 0) f(0, it.in - 1);
      if (it.release + 1 <= n_ - 1) f(it.release + 1, n_ - 1);
    } else if (it.release + 1 <= it.in - 1) {
      f(it.release + 1, it.in - 1);
    }
  }

  void CheckBudget() {
    std::vector<int64_t> off(n_ + 1, 0);
    for (const ResolvedItem& it : rp_.items) {
      ForEachOffRange(it, [&](int32_t a, int32_t b) {
        off[a] += it.size_bytes;
        off[b + 1] -= it.size_bytes;
      });
    }
    // While a recipe runs before position p: p's bytes less its own
    // allocations, plus the transient.
    std::vector<int64_t> transient(n_, 0);
    for (const ResolvedRecompute& g : rp_.recomputes) transient[g.position] = g.transient_bytes;
    int64_t running = 0;
    int32_t run_begin = -1, worst = -1;
    int64_t worst_bytes = 0;
    report_.peak_bytes = -1;
    auto close_run = [&](int32_t end) {
      Add(ViolationKind::kOverBudget, -1, rp_.OpAt(worst),
          absl::StrCat(Op(rp_.OpAt(worst)), ": ", worst_bytes, " bytes in use, ",
                       worst_bytes - budget_, " over the budget of ", budget_,
                       RunText(run_begin, end)),
          worst_bytes - budget_);
      run_begin = -1;
    };
    for (int32_t p = 0; p < n_; ++p) {
      running += off[p];
      int64_t bytes = unswapped_[p] - running;
      if (transient[p] > 0) bytes = std::max(bytes, bytes - rp_.alloc_at[p] + transient[p]);
      if (bytes > report_.peak_bytes) {
        report_.peak_bytes = bytes;
        report_.peak_op = rp_.OpAt(p);
      }
      if (bytes > budget_) {
        if (run_begin < 0 || bytes > worst_bytes) {
          if (run_begin < 0) run_begin = p;
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

  // The allocator model over the policy's allocations and frees, the budget
  // as its capacity (curve/reserved_curve.h).
  absl::Status CheckReserved(const CheckOptions& options) {
    report_.budget_on = options.budget_on;
    if (options.budget_on != BudgetOn::kReserved && !options.report_reserved) {
      return absl::OkStatus();
    }
    AllocatorOptions a = options.allocator;
    a.capacity_bytes = std::max<int64_t>(budget_, 1);
    SWAPPLAN_ASSIGN_OR_RETURN(
        ReservedCurve c,
        ReplayAllocations(SequenceOfPolicy(trace_, rp_), a, {.pinned_segments = 0}));
    report_.reserved_modelled = true;
    report_.reserved_peak_bytes = c.peak_reserved_bytes;
    report_.reserved_peak_op = c.peak_position < 0 ? -1 : rp_.OpAt(c.peak_position);
    report_.reserved_fragmentation_bytes = c.fragmentation_at_peak_bytes();
    report_.reserved_ooms = c.ooms;
    report_.reserved_first_oom_op = c.first_oom_position < 0 ? -1 : rp_.OpAt(c.first_oom_position);
    if (options.budget_on != BudgetOn::kReserved || c.ooms == 0) return absl::OkStatus();
    const int32_t p = c.first_oom_position;
    Add(ViolationKind::kReservedOverBudget, -1, rp_.OpAt(p),
        absl::StrCat(Op(rp_.OpAt(p)), ": the ", AllocatorKindName(a.kind),
                     " allocator model cannot place an allocation within the budget of ",
                     budget_, " bytes even after releasing its cache (", c.requested_bytes[p],
                     " bytes allocated, ", c.reserved_bytes[p], " reserved); ", c.ooms,
                     " such allocations in the iteration"),
        c.reserved_bytes[p] - budget_);
    return absl::OkStatus();
  }

  // Informational: swap-ins (per tier an h2d FIFO in swap_in_op order,
  // issued when the compute stream reaches swap_in_op) whose copy ends after
  // first_use_op's op would start on the stall-free timeline.
  void TimeSwapIns() {
    if (end_ns_.empty()) return;
    std::vector<const ResolvedItem*> order;
    for (const ResolvedItem& it : rp_.items) {
      if (it.swap() && Bandwidth(it, Direction::kHostToDevice) > 0) order.push_back(&it);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const ResolvedItem* a, const ResolvedItem* b) { return a->in < b->in; });
    std::vector<double> stream_free(device_.num_tiers(), 0.0);
    for (const ResolvedItem* it : order) {
      double& sf = stream_free[it->tier];
      const double start = std::max(ReachNs(it->in), sf);
      sf = start + TransferNs(it->size_bytes, Bandwidth(*it, Direction::kHostToDevice));
      const double need = OpStartNs(it->use);
      if (sf > need) {
        ++report_.late_swap_ins;
        report_.swap_in_wait_ns += sf - need;
      }
    }
  }

  const Trace& trace_;
  const TensorLabeler names_{trace_};
  const Policy& policy_;
  const DeviceModel& device_;
  const ResolvedPolicy& rp_;
  const int64_t budget_;
  const OpIndex begin_;
  const int32_t n_;
  std::vector<int64_t> unswapped_;
  std::vector<double> end_ns_, op_ns_;
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
  if (total > budget_) {
    Add(ViolationKind::kPoolOverBudget, -1, -1,
        absl::StrCat("the pool's ", pool.classes.size(), " classes hold ", total,
                     " bytes, over the budget of ", budget_),
        total - budget_);
  }
  const int32_t num_classes = static_cast<int32_t>(pool.classes.size());
  // (position, delta) per class.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> events(num_classes);
  absl::flat_hash_map<int64_t, bool> reported_size;
  std::vector<int32_t> class_of(rp_.tensors.size(), -1);
  for (size_t slot = 0; slot < rp_.tensors.size(); ++slot) {
    const ResolvedTensor& t = rp_.tensors[slot];
    const int64_t size = trace_.tensor(t.id).size_bytes;
    const int32_t c = pool.ClassOf(size);
    if (c < 0) {
      if (reported_size.emplace(size, true).second) {
        Add(ViolationKind::kPoolNoClass, -1, -1,
            absl::StrCat(TensorLabel(trace_, t.id, LabelForm::kShort), " of ", size,
                         " bytes fits no class of the pool (the largest object is ",
                         pool.classes.back().object_bytes, " bytes)"));
      }
      continue;
    }
    class_of[slot] = c;
    events[c].emplace_back(std::max(t.alloc, 0), 1);
    events[c].emplace_back(std::min(t.free, n_ - 1) + 1, -1);
  }
  for (const ResolvedItem& it : rp_.items) {
    const int32_t c = class_of[it.slot];
    if (c < 0) continue;
    ForEachOffRange(it, [&](int32_t a, int32_t b) {
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
      Add(ViolationKind::kPoolClassFull, -1, rp_.OpAt(worst),
          absl::StrCat(Op(rp_.OpAt(worst)), ": class ", c, " (", pool.classes[c].object_bytes,
                       "-byte objects) needs ", worst_count, " objects but has ", cap,
                       RunText(run_begin, end)));
      run_begin = -1;
    };
    for (size_t k = 0; k < ev.size();) {
      const int32_t p = ev[k].first;
      while (k < ev.size() && ev[k].first == p) count += ev[k++].second;
      if (p >= n_) break;
      const int32_t next = k < ev.size() ? std::min(ev[k].first, n_) : n_;
      // Positions p .. next-1 hold `count` objects.
      if (count > cap) {
        if (run_begin < 0 || count > worst_count) {
          if (run_begin < 0) run_begin = p;
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

CheckOptions CheckOptionsFor(const Policy& policy) {
  CheckOptions o;
  std::string model;
  int64_t iteration_time_ns = 0;
  std::string allocator, alloc_conf;
  for (const auto& [name, value] : policy.parameters) {
    if (name == "op_time_model") model = value;
    // A policy planned with its budget on reserved bytes (planners/planner.h)
    // is checked on them.
    if (name == "budget_on" && value == "reserved") o.budget_on = BudgetOn::kReserved;
    if (name == "allocator") allocator = value;
    if (name == "alloc_conf") alloc_conf = value;
    if (name == "iteration_time_ns" && !absl::SimpleAtoi(value, &iteration_time_ns)) {
      iteration_time_ns = 0;
    }
  }
  // The configured model (auto, eq1, recorded); older policies recorded the
  // resolved source ("recorded", "estimated (Eq. 1)").
  OpTimeModel m = OpTimeModel::kAuto;
  if (ParseOpTimeModel(model, &m)) {
    o.op_time_model = m;
  } else if (model == DurationSourceName(DurationSource::kRecorded)) {
    o.op_time_model = OpTimeModel::kRecorded;
  } else if (model == DurationSourceName(DurationSource::kEstimated)) {
    o.op_time_model = OpTimeModel::kEq1;
  }
  if (o.op_time_model == OpTimeModel::kEq1 || o.op_time_model == OpTimeModel::kAuto) {
    o.iteration_time_ns = std::max<int64_t>(iteration_time_ns, 0);
  }
  if (o.budget_on == BudgetOn::kReserved) {
    // Values the planner wrote; anything unreadable keeps the defaults.
    if (absl::StatusOr<AllocatorOptions> a = ParseAllocConf(alloc_conf); a.ok()) o.allocator = *a;
    if (!ParseAllocatorKind(allocator, &o.allocator.kind)) o.allocator.kind = AllocatorKind::kCudaCaching;
  }
  return o;
}

namespace {

// The device a policy is checked on: the given one, else the policy's; the
// tiers the items may name: the given device's, else the policy's.
DeviceModel CheckDevice(const Policy& policy, const CheckOptions& options) {
  DeviceModel device = options.device ? *options.device : policy.device;
  if (device.tiers.empty()) device.tiers = policy.device.tiers;
  return device;
}

// The checker's resolution (every issue, dependencies checked; the shared
// analysis and memo when given) and the check on it.
absl::StatusOr<CheckReport> CheckResolved(const PolicyResolver& resolver, const Policy& policy,
                                          const DeviceModel& device, const CheckOptions& options,
                                          const ResolveOptions& shared) {
  SWAPPLAN_ASSIGN_OR_RETURN(
      ResolvedPolicy rp,
      resolver.Resolve(policy, device,
                       {.all_issues = true,
                        .check_dependencies = true,
                        .recompute_analysis = shared.recompute_analysis,
                        .recipe_memo = shared.recipe_memo}));
  return Checker(resolver.trace(), policy, device, rp).Run(options);
}

}  // namespace

absl::StatusOr<CheckReport> CheckPolicy(const Trace& trace, const Policy& policy,
                                        const CheckOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  const DeviceModel device = CheckDevice(policy, options);
  if (absl::Status fp = CheckFingerprint(policy, trace); !fp.ok()) {
    CheckReport r;
    r.iteration = policy.fingerprint.iteration;
    r.items = static_cast<int32_t>(policy.items.size());
    r.budget_bytes = policy.BudgetBytes();
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
  SWAPPLAN_ASSIGN_OR_RETURN(PolicyResolver resolver,
                            PolicyResolver::Create(trace, policy.fingerprint.iteration));
  return CheckResolved(resolver, policy, device, options, {});
}

absl::StatusOr<CheckReport> CheckPolicyShared(const PolicyResolver& resolver,
                                              const Policy& policy, const CheckOptions& options,
                                              const ResolveOptions& shared) {
  if (policy.fingerprint.iteration != resolver.iteration() ||
      !(policy.fingerprint == resolver.fingerprint())) {
    return CheckPolicy(resolver.trace(), policy, options);
  }
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  return CheckResolved(resolver, policy, CheckDevice(policy, options), options, shared);
}

}  // namespace swapplan

namespace swapplan {

absl::StatusOr<CheckReport> CheckMarkingReleaseWaits(const Trace& trace, Policy* policy,
                                                     const CheckOptions& options) {
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport r, CheckPolicy(trace, *policy, options));
  bool marked = false;
  for (const Violation& v : r.violations) {
    if (v.kind != ViolationKind::kReleaseBeforeCopyDone || v.item < 0) continue;
    policy->items[v.item].release_waits_for_copy = true;
    marked = true;
  }
  if (!marked) return r;
  return CheckPolicy(trace, *policy, options);
}

}  // namespace swapplan
