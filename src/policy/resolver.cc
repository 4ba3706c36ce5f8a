// The policy resolver (resolver.h): the legality rules of a policy against a
// trace iteration, and its items in schedule positions.
#include "swapplan/policy/resolver.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policy/resolver_recompute.h"
#include "swapplan/trace/dataflow.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::string_view ResolveRuleTag(ResolveRule rule) {
  switch (rule) {
    case ResolveRule::kFingerprintMismatch: return "fingerprint-mismatch";
    case ResolveRule::kBadSchedule: return "bad-schedule";
    case ResolveRule::kScheduleBreaksDependency: return "schedule-breaks-dependency";
    case ResolveRule::kUnknownTensor: return "unknown-tensor";
    case ResolveRule::kOpOutOfRange: return "op-out-of-range";
    case ResolveRule::kBadOpOrder: return "bad-op-order";
    case ResolveRule::kSwapInBeforeSwapOut: return "swap-in-before-swap-out";
    case ResolveRule::kBadAction: return "bad-action";
    case ResolveRule::kSizeMismatch: return "size-mismatch";
    case ResolveRule::kNotResident: return "not-resident";
    case ResolveRule::kWrapNotPersistent: return "wrap-not-persistent";
    case ResolveRule::kUseWhileOffDevice: return "use-while-off-device";
    case ResolveRule::kDuplicateItem: return "duplicate-item";
    case ResolveRule::kOverlappingItems: return "overlapping-items";
    case ResolveRule::kCleanNotOnHost: return "clean-not-on-host";
    case ResolveRule::kCleanWritten: return "clean-but-written";
    case ResolveRule::kUnknownTier: return "unknown-tier";
    case ResolveRule::kCleanOtherTier: return "clean-other-tier";
    case ResolveRule::kTierOverCapacity: return "tier-over-capacity";
    case ResolveRule::kNotRecomputable: return "not-recomputable";
    case ResolveRule::kRecomputeUnderstated: return "recompute-understated";
  }
  return "unknown";
}

std::vector<int64_t> ResolvedPolicy::UnswappedBytes() const {
  std::vector<int64_t> bytes(num_ops);
  int64_t running = initial_bytes;
  for (int32_t p = 0; p < num_ops; ++p) {
    running += alloc_at[p];
    bytes[p] = running;
    running -= free_after[p];
  }
  return bytes;
}

absl::StatusOr<PolicyResolver> PolicyResolver::Create(const Trace& trace, int32_t iteration) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return Error(ErrorKind::kMalformedInput,
                 absl::StrCat("iteration ", iteration, " is out of range (", trace.source(),
                              " has ", trace.num_iterations(), " iterations)"));
  }
  PolicyResolver r;
  r.trace_ = &trace;
  r.iteration_ = iteration;
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  r.n_ = n;
  // The fingerprint (policy_io.h ComputeFingerprint), without the I/O layer.
  std::vector<uint64_t> name_hash(trace.num_op_names());
  for (NameId k = 0; k < trace.num_op_names(); ++k) name_hash[k] = NameHash(trace.op_name(k));
  FingerprintState fp;
  for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
    fp.AddOp(name_hash[trace.op(i).name], trace.op(i).phase);
  }
  r.fingerprint_ = {fp.value(), n, iteration};
  r.alloc_at_.assign(n, 0);
  r.free_after_.assign(n, 0);
  r.slot_of_tensor_.assign(trace.num_tensors(), -1);
  bool dense = true;
  for (TensorId t = 0; t < trace.num_tensors() && dense; ++t) {
    dense = trace.tensor(t).trace_id == static_cast<uint64_t>(t);
  }
  if (!dense) {
    r.dense_of_id_.reserve(trace.num_tensors());
    for (TensorId t = 0; t < trace.num_tensors(); ++t) {
      r.dense_of_id_.emplace(trace.tensor(t).trace_id, t);
    }
  }
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (!lt.occupies_device()) continue;
    if (lt.free_op < iter.op_begin || lt.alloc_op >= iter.op_end) continue;
    ResolvedTensor rt;
    rt.id = t;
    rt.alloc = lt.alloc_op < iter.op_begin ? -1 : lt.alloc_op - iter.op_begin;
    rt.free = lt.free_op >= iter.op_end ? n : lt.free_op - iter.op_begin;
    const int64_t size = trace.tensor(t).size_bytes;
    if (rt.alloc < 0) {
      r.initial_bytes_ += size;
    } else {
      r.alloc_at_[rt.alloc] += size;
    }
    if (rt.free < n) r.free_after_[rt.free] += size;
    r.slot_of_tensor_[t] = static_cast<int32_t>(r.tensors_.size());
    r.tensors_.push_back(rt);
  }
  return r;
}

int32_t PolicyResolver::SlotOf(uint64_t id) const {
  TensorId t = kNoTensor;
  if (dense_of_id_.empty()) {
    if (id < slot_of_tensor_.size()) t = static_cast<TensorId>(id);
  } else if (auto f = dense_of_id_.find(id); f != dense_of_id_.end()) {
    t = f->second;
  }
  return t == kNoTensor ? -1 : slot_of_tensor_[t];
}

// One resolution: the state shared by the rule checks, in their order.
class ResolveRun {
 public:
  ResolveRun(const PolicyResolver& r, const Policy& policy, const DeviceModel& device,
             const ResolveOptions& options)
      : r_(r),
        trace_(*r.trace_),
        policy_(policy),
        device_(device),
        options_(options),
        begin_(trace_.iteration(r.iteration_).op_begin),
        n_(r.n_) {}

  ResolvedPolicy Run() {
    out_.iteration = r_.iteration_;
    out_.num_ops = n_;
    out_.accounted.assign(policy_.items.size(), -1);
    out_.tensors = r_.tensors_;
    out_.initial_bytes = r_.initial_bytes_;
    out_.alloc_at = r_.alloc_at_;
    out_.free_after = r_.free_after_;
    if (!(policy_.fingerprint == r_.fingerprint_)) {
      const PolicyFingerprint& a = policy_.fingerprint;
      const PolicyFingerprint& b = r_.fingerprint_;
      Add(ResolveRule::kFingerprintMismatch, -1, -1,
          absl::StrCat("policy fingerprint (", absl::StrFormat("0x%016x", a.op_sequence_hash),
                       ", ", a.iteration_ops, " ops) does not match iteration ", r_.iteration_,
                       " of ", trace_.source(), " (",
                       absl::StrFormat("0x%016x", b.op_sequence_hash), ", ", b.iteration_ops,
                       " ops)"));
      out_.stopped = true;
      return std::move(out_);
    }
    if (!SetUpSchedule()) {
      out_.stopped = true;
      return std::move(out_);
    }
    tensor_of_item_.assign(policy_.items.size(), kNoTensor);
    ok_.assign(policy_.items.size(), false);
    CheckItems();
    CheckDuplicates();
    CheckClean();
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (ok_[i]) AddItem(i);
    }
    AccountTiers();
    ResolveRecomputations(trace_, device_, r_.slot_of_tensor_, options_.recompute_analysis,
                          options_.recipe_memo, &out_);
    return std::move(out_);
  }

 private:
  std::string Op(int32_t local) const {
    const OpInfo& op = trace_.op(begin_ + local);
    std::string s = absl::StrCat("op ", local, " (", trace_.op_name(op.name), ", ",
                                 PhaseName(op.phase), ")");
    if (out_.scheduled()) absl::StrAppend(&s, " at position ", out_.pos[local]);
    return s;
  }
  // "item 1 (tensor 11 'layers.3.mlp.silu')" (trace/tensor_label.h, short
  // form; "item 1 (tensor 11)" when unnamed or not in the trace).
  std::string ItemText(size_t i) const {
    const uint64_t id = policy_.items[i].tensor_id;
    const TensorId t = DenseOf(id);
    return absl::StrCat("item ", i, " (",
                        t == kNoTensor ? absl::StrCat("tensor ", id)
                                       : TensorLabel(trace_, t, LabelForm::kShort),
                        ")");
  }
  // The dense index of file id `id`, or kNoTensor.
  TensorId DenseOf(uint64_t id) const {
    if (r_.dense_of_id_.empty()) {
      return id < static_cast<uint64_t>(trace_.num_tensors()) ? static_cast<TensorId>(id)
                                                               : kNoTensor;
    }
    auto f = r_.dense_of_id_.find(id);
    return f == r_.dense_of_id_.end() ? kNoTensor : f->second;
  }
  void Add(ResolveRule rule, int32_t item, int32_t op, std::string text) {
    out_.issues.push_back(
        {rule, item, op, absl::StrCat(text, " [", ResolveRuleTag(rule), "]")});
  }
  int32_t Pos(int32_t local) const { return out_.Pos(local); }

  struct Window {
    int32_t out, rel, in, use;
    bool wraps;
  };
  Window WindowOf(size_t i) const {
    const PolicyItem& x = policy_.items[i];
    return {Pos(x.swap_out_op), Pos(x.release_op), Pos(x.swap_in_op), Pos(x.first_use_op),
            x.wraps};
  }
  absl::Span<const OpIndex> UsesIn(TensorId t) const {
    absl::Span<const OpIndex> u = trace_.tensor_uses(t);
    auto lo = std::lower_bound(u.begin(), u.end(), begin_);
    auto hi = std::lower_bound(lo, u.end(), begin_ + n_);
    return u.subspan(lo - u.begin(), hi - lo);
  }

  // Positions, the tensors' positions and bytes under the schedule, the
  // dependency check. False when the schedule is unusable.
  bool SetUpSchedule() {
    absl::Span<const int32_t> schedule =
        options_.schedule.empty() ? absl::MakeConstSpan(policy_.schedule) : options_.schedule;
    if (schedule.empty()) return true;
    absl::StatusOr<std::vector<int32_t>> pos = SchedulePositions(schedule, n_);
    if (!pos.ok()) {
      Add(ResolveRule::kBadSchedule, -1, -1, std::string(pos.status().message()));
      return false;
    }
    out_.pos = *std::move(pos);
    out_.order.assign(schedule.begin(), schedule.end());
    if (options_.check_dependencies) {
      absl::StatusOr<DataflowGraph> graph = DataflowGraph::Build(trace_, r_.iteration_);
      if (graph.ok()) {
        if (absl::Status st = graph->ValidateSchedule(out_.order); !st.ok()) {
          Add(ResolveRule::kScheduleBreaksDependency, -1, -1, std::string(st.message()));
        }
      }
    }
    out_.own_tensors = r_.tensors_;
    out_.own_alloc_at.assign(n_, 0);
    out_.own_free_after.assign(n_, 0);
    for (ResolvedTensor& t : out_.own_tensors) {
      const ScheduledLifetime s = ScheduleLifetime(trace_, r_.iteration_, t.id, out_.pos);
      t.alloc = s.alloc;
      t.free = s.free;
      const int64_t size = trace_.tensor(t.id).size_bytes;
      if (t.alloc >= 0) out_.own_alloc_at[t.alloc] += size;
      if (t.free < n_) out_.own_free_after[t.free] += size;
    }
    out_.tensors = out_.own_tensors;
    out_.alloc_at = out_.own_alloc_at;
    out_.free_after = out_.own_free_after;
    return true;
  }

  // Per item: tensor, op range, action, order, size, residency, uses.
  void CheckItems() {
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      const PolicyItem& item = policy_.items[i];
      const int32_t idx = static_cast<int32_t>(i);
      const TensorId t = DenseOf(item.tensor_id);
      if (t == kNoTensor) {
        Add(ResolveRule::kUnknownTensor, idx, -1,
            absl::StrCat(ItemText(i), ": no such tensor in ", trace_.source()));
        continue;
      }
      bool in_range = true;
      for (auto [name, op] : {std::pair<const char*, int32_t>{"swap_out_op", item.swap_out_op},
                              {"release_op", item.release_op},
                              {"swap_in_op", item.swap_in_op},
                              {"first_use_op", item.first_use_op}}) {
        if (op < 0 || op >= n_) {
          Add(ResolveRule::kOpOutOfRange, idx, -1,
              absl::StrCat(ItemText(i), ": ", name, " ", op, " is outside iteration ",
                           r_.iteration_, " (", n_, " ops)"));
          in_range = false;
        }
      }
      if (!in_range || !CheckAction(i)) continue;
      const Window w = WindowOf(i);
      const std::string in_positions = out_.scheduled() ? " in schedule positions" : "";
      if ((item.wraps || item.clean) && item.action != ItemAction::kSwap) {
        Add(ResolveRule::kBadOpOrder, idx, -1,
            absl::StrCat(ItemText(i), ": ", item.wraps ? "wraps" : "clean",
                         " is only allowed on SWAP items"));
        continue;
      }
      if (w.wraps) {
        if (!(w.in <= w.use && w.use <= w.out && w.out <= w.rel)) {
          Add(ResolveRule::kBadOpOrder, idx, -1,
              absl::StrCat(ItemText(i),
                           ": a wrapping item's ops must satisfy swap_in_op <= first_use_op <= "
                           "swap_out_op <= release_op",
                           in_positions, ", got ", w.in, ", ", w.use, ", ", w.out, ", ", w.rel));
          continue;
        }
      } else {
        if (w.in <= w.out) {
          Add(ResolveRule::kSwapInBeforeSwapOut, idx, item.swap_in_op,
              absl::StrCat(ItemText(i), ": swap-in at ", Op(item.swap_in_op),
                           " is not after the swap-out at ", Op(item.swap_out_op)));
          continue;
        }
        if (!(w.out <= w.rel && w.rel < w.in && w.in <= w.use)) {
          Add(ResolveRule::kBadOpOrder, idx, -1,
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
        Add(ResolveRule::kSizeMismatch, idx, -1,
            absl::StrCat(ItemText(i), ": size_bytes ", item.size_bytes, " but the trace says ",
                         size));
      }
      if (!CheckResidency(i, t, w)) continue;
      ok_[i] = true;
      for (OpIndex u : UsesIn(t)) {
        const int32_t local = u - begin_;
        const int32_t p = Pos(local);
        if (!w.wraps && p > w.out && p < w.use) {
          Add(ResolveRule::kUseWhileOffDevice, idx, local,
              absl::StrCat(ItemText(i), ": used by ", Op(local), " between its swap-out after op ",
                           item.swap_out_op, " and its first use at op ", item.first_use_op));
        } else if (w.wraps && (p < w.use || p > w.out)) {
          Add(ResolveRule::kUseWhileOffDevice, idx, local,
              absl::StrCat(ItemText(i), ": used by ", Op(local),
                           " while on the host (before its first use at op ", item.first_use_op,
                           " or after its swap-out after op ", item.swap_out_op, ")"));
        }
      }
    }
  }

  // The action and its fields. False (reported) when they are inconsistent.
  bool CheckAction(size_t i) {
    const PolicyItem& item = policy_.items[i];
    const int32_t idx = static_cast<int32_t>(i);
    if (item.action != ItemAction::kSwap && item.action != ItemAction::kRecompute) {
      Add(ResolveRule::kBadAction, idx, -1,
          absl::StrCat(ItemText(i), ": unknown action ", static_cast<int>(item.action)));
      return false;
    }
    if (item.recompute_ns < 0 || (item.action == ItemAction::kSwap && item.recompute_ns != 0)) {
      Add(ResolveRule::kBadAction, idx, -1,
          absl::StrCat(ItemText(i), ": recompute_ns is ", item.recompute_ns,
                       "; must be >= 0, and 0 for a SWAP item"));
      return false;
    }
    if (item.release_waits_for_copy && item.action != ItemAction::kSwap) {
      Add(ResolveRule::kBadAction, idx, -1,
          absl::StrCat(ItemText(i),
                       ": release_waits_for_copy is set on a RECOMPUTE item (no copy to wait "
                       "for)"));
      return false;
    }
    if (item.tier != 0 && item.action != ItemAction::kSwap) {
      Add(ResolveRule::kBadAction, idx, -1,
          absl::StrCat(ItemText(i), ": tier ", item.tier,
                       " is set on a RECOMPUTE item (it moves no bytes)"));
      return false;
    }
    if (item.tier < 0 || item.tier >= device_.num_tiers()) {
      Add(ResolveRule::kUnknownTier, idx, -1,
          absl::StrCat(ItemText(i), ": tier ", item.tier, " is not a tier of device model \"",
                       device_.name, "\" (",
                       device_.tiers.empty()
                           ? std::string("only the host, tier 0")
                           : absl::StrCat("0 = host, 1..", device_.tiers.size(), " its tiers"),
                       ")"));
      return false;
    }
    return true;
  }

  // The tensor is on the device through the window (a wrapping item's:
  // before and after the iteration). False (reported) otherwise.
  bool CheckResidency(size_t i, TensorId t, const Window& w) {
    const int32_t idx = static_cast<int32_t>(i);
    const TensorLifetime& life = trace_.lifetime(t);
    const bool in_iteration =
        life.occupies_device() && life.free_op >= begin_ && life.alloc_op < begin_ + n_;
    if (w.wraps) {
      if (in_iteration && life.alloc_op < begin_ && life.free_op >= begin_ + n_) return true;
      Add(ResolveRule::kWrapNotPersistent, idx, -1,
          absl::StrCat(ItemText(i),
                       ": wraps around the iteration but the tensor is not resident before "
                       "and after iteration ",
                       r_.iteration_));
      return false;
    }
    ResolvedTensor s{t, 0, -1};
    if (in_iteration) s = out_.tensors[r_.slot_of_tensor_[t]];
    if (in_iteration && s.alloc <= w.out && w.use <= s.free) return true;
    std::string where =
        life.occupies_device()
            ? absl::StrCat(out_.scheduled() ? "it is allocated during positions "
                                            : "it is allocated during ops ",
                           std::max(s.alloc, 0), "..", std::min(s.free, n_ - 1))
            : std::string("it never occupies the device");
    if (life.occupies_device() && !in_iteration) {
      where = absl::StrCat("it is not allocated in iteration ", r_.iteration_);
    }
    Add(ResolveRule::kNotResident, idx, -1,
        absl::StrCat(ItemText(i), ": the tensor is not allocated throughout ",
                     out_.scheduled() ? "positions " : "ops ", w.out, "..", w.use, " (", where,
                     ")"));
    return false;
  }

  // Exact duplicates and overlapping windows of one tensor.
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
          Add(ResolveRule::kDuplicateItem, cur, -1,
              absl::StrCat(ItemText(cur), ": duplicates item ", order[j - 1]));
          ok_[cur] = false;
          continue;
        }
        if (!ok_[cur]) continue;
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
            if (!ok_[o] || items[o].wraps) continue;
            const Window a = WindowOf(o);
            if (a.out < b.use || a.use > b.out) clash = o;
          }
        }
        if (clash >= 0) {
          Add(ResolveRule::kOverlappingItems, cur, -1,
              absl::StrCat(ItemText(cur), ": window ", window_text(cur), " overlaps item ", clash,
                           "'s window ", window_text(clash)));
          ok_[cur] = false;
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

  // Clean items: the tensor came back from the item's tier (the latest first
  // use of an accounted window of it on that tier at or before the
  // swap-out — its own when it wraps) and nothing wrote it from there
  // through the swap-out. A tensor that came back only from other tiers is
  // clean-other-tier.
  void CheckClean() {
    absl::flat_hash_map<TensorId, std::vector<int32_t>> by_tensor;
    bool any = false;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (!ok_[i]) continue;
      by_tensor[tensor_of_item_[i]].push_back(static_cast<int32_t>(i));
      any = any || policy_.items[i].clean;
    }
    if (!any) return;
    for (size_t i = 0; i < policy_.items.size(); ++i) {
      if (!ok_[i] || !policy_.items[i].clean) continue;
      const TensorId t = tensor_of_item_[i];
      const Window w = WindowOf(i);
      const int32_t tier = policy_.items[i].tier;
      int32_t arrival = -1, other_arrival = -1, other_tier = 0;
      for (int32_t j : by_tensor[t]) {
        const int32_t use = WindowOf(j).use;
        if (use > w.out) continue;
        if (policy_.items[j].tier == tier) {
          arrival = std::max(arrival, use);
        } else if (use > other_arrival) {
          other_arrival = use;
          other_tier = policy_.items[j].tier;
        }
      }
      const int32_t idx = static_cast<int32_t>(i);
      const std::string holder =
          tier == 0 ? std::string("the host")
                    : absl::StrCat("tier ", tier, " (", TierText(tier), ")");
      if (arrival < 0 && other_arrival >= 0) {
        Add(ResolveRule::kCleanOtherTier, idx, -1,
            absl::StrCat(ItemText(i), ": marked clean on ", holder,
                         ", but the tensor came back from tier ", other_tier, " (",
                         TierText(other_tier), "), so ", holder, " holds no copy at its swap-out after ",
                         Op(policy_.items[i].swap_out_op)));
        continue;
      }
      if (arrival < 0) {
        Add(ResolveRule::kCleanNotOnHost, idx, -1,
            absl::StrCat(ItemText(i), ": marked clean, but ", holder,
                         " holds no copy: the tensor was not brought back from ",
                         tier == 0 ? "the host" : "it", " before its swap-out after ",
                         Op(policy_.items[i].swap_out_op)));
        continue;
      }
      for (OpIndex u : UsesIn(t)) {
        const int32_t local = u - begin_;
        const int32_t p = Pos(local);
        if (p < arrival || p > w.out) continue;
        absl::Span<const TensorId> outs = trace_.outputs(u);
        if (std::find(outs.begin(), outs.end(), t) == outs.end()) continue;
        Add(ResolveRule::kCleanWritten, idx, local,
            absl::StrCat(ItemText(i), ": marked clean, but ", Op(local),
                         " writes it after it came back from ", holder, " at ",
                         Op(out_.OpAt(arrival))));
        break;
      }
    }
  }

  std::string TierText(int32_t tier) const {
    return tier >= 0 && tier < device_.num_tiers() ? device_.TierName(tier) : std::string("?");
  }

  // Per tier: the positions each tensor holds space there (see resolver.h
  // "Tiers"), its peak against this rank's capacity, and the bytes moved.
  void AccountTiers() {
    const int32_t num_tiers = device_.num_tiers();
    out_.tier_usage.assign(num_tiers, TierUsage{});
    for (int32_t k = 0; k < num_tiers; ++k) {
      out_.tier_usage[k].capacity_bytes = device_.TierCapacityBytes(k);
    }
    if (out_.items.empty() || n_ == 0) return;
    // (slot, tier) -> [first, last] position held; a wrapping item holds the
    // whole iteration.
    struct Span {
      int32_t first, last;
      int64_t size;
      int32_t tier;
    };
    absl::flat_hash_map<int64_t, Span> held;
    for (const ResolvedItem& it : out_.items) {
      if (!it.swap()) continue;
      TierUsage& u = out_.tier_usage[it.tier];
      ++u.items;
      if (it.copies_out()) u.store_bytes += it.size_bytes;
      u.load_bytes += it.size_bytes;
      const int32_t first = it.wraps ? 0 : it.out;
      const int32_t last = it.wraps ? n_ - 1 : it.use;
      const int64_t key = static_cast<int64_t>(it.slot) * num_tiers + it.tier;
      auto [pos, fresh] = held.try_emplace(key, Span{first, last, it.size_bytes, it.tier});
      if (!fresh) {
        pos->second.first = std::min(pos->second.first, first);
        pos->second.last = std::max(pos->second.last, last);
      }
    }
    std::vector<std::vector<int64_t>> delta(num_tiers);
    for (const auto& [key, span] : held) {
      std::vector<int64_t>& d = delta[span.tier];
      if (d.empty()) d.assign(n_ + 1, 0);
      d[span.first] += span.size;
      d[span.last + 1] -= span.size;
    }
    for (int32_t k = 0; k < num_tiers; ++k) {
      if (delta[k].empty()) continue;
      TierUsage& u = out_.tier_usage[k];
      int64_t running = 0;
      for (int32_t p = 0; p < n_; ++p) {
        running += delta[k][p];
        if (running > u.peak_bytes) {
          u.peak_bytes = running;
          u.peak_position = p;
        }
      }
      if (u.peak_bytes > u.capacity_bytes) {
        const int32_t local = out_.OpAt(u.peak_position);
        Add(ResolveRule::kTierOverCapacity, -1, local,
            absl::StrCat("tier ", k, " (", TierText(k), ") holds ", u.peak_bytes, " bytes at ",
                         Op(local), ", over this rank's capacity of ", u.capacity_bytes,
                         " bytes", k > 0 && device_.tiers[k - 1].shared_by_ranks > 1
                                       ? absl::StrCat(" (", device_.tiers[k - 1].capacity_bytes,
                                                      " shared by ",
                                                      device_.tiers[k - 1].shared_by_ranks,
                                                      " ranks)")
                                       : std::string()));
      }
    }
  }

  void AddItem(size_t i) {
    const PolicyItem& it = policy_.items[i];
    const Window w = WindowOf(i);
    ResolvedItem r;
    r.item = static_cast<int32_t>(i);
    r.tensor = tensor_of_item_[i];
    r.slot = r_.slot_of_tensor_[r.tensor];
    r.size_bytes = trace_.tensor(r.tensor).size_bytes;
    r.action = it.action;
    r.recompute_ns = it.recompute_ns;
    r.wraps = it.wraps;
    r.clean = it.clean;
    r.release_waits_for_copy = it.release_waits_for_copy;
    r.tier = it.tier;
    r.out = w.out;
    r.release = w.rel;
    r.in = w.in;
    r.use = w.use;
    if (r.copies_out() && device_.TierBandwidth(r.tier, Direction::kDeviceToHost) > 0) {
      r.out_ns = device_.TierCopyNs(r.tier, Direction::kDeviceToHost, r.size_bytes);
    }
    if (r.swap() && device_.TierBandwidth(r.tier, Direction::kHostToDevice) > 0) {
      r.in_ns = device_.TierCopyNs(r.tier, Direction::kHostToDevice, r.size_bytes);
    }
    out_.accounted[i] = static_cast<int32_t>(out_.items.size());
    out_.items.push_back(r);
  }

  const PolicyResolver& r_;
  const Trace& trace_;
  const Policy& policy_;
  const DeviceModel& device_;
  const ResolveOptions& options_;
  const OpIndex begin_;
  const int32_t n_;
  ResolvedPolicy out_;
  std::vector<TensorId> tensor_of_item_;
  std::vector<bool> ok_;
};

absl::StatusOr<ResolvedPolicy> PolicyResolver::Resolve(const Policy& policy,
                                                       const DeviceModel& device,
                                                       const ResolveOptions& options) const {
  ResolvedPolicy r = ResolveRun(*this, policy, device, options).Run();
  if (options.all_issues) return r;
  SWAPPLAN_RETURN_IF_ERROR(FirstFatalIssue(r));
  return r;
}

absl::Status PolicyResolver::FirstFatalIssue(const ResolvedPolicy& r) {
  // The recompute rules judge a planner's claims (the checker's business);
  // a resolution for simulation accounts what the policy states.
  auto fatal = std::find_if(r.issues.begin(), r.issues.end(), [](const ResolveIssue& i) {
    return i.rule != ResolveRule::kNotRecomputable && i.rule != ResolveRule::kRecomputeUnderstated;
  });
  if (fatal == r.issues.end()) return absl::OkStatus();
  const ResolveIssue& first = *fatal;
  const ErrorKind kind = first.rule == ResolveRule::kFingerprintMismatch
                             ? ErrorKind::kFingerprintMismatch
                             : ErrorKind::kMalformedInput;
  return WithRule(Error(kind, first.message), ResolveRuleTag(first.rule));
}

}  // namespace swapplan
