// Recompute recipes, costs and eligibility (trace/recompute.h).
#include "swapplan/trace/recompute.h"

#include <algorithm>
#include <array>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/util/error.h"

namespace swapplan {

absl::string_view RecomputeBlockerName(RecomputeBlocker b) {
  switch (b) {
    case RecomputeBlocker::kNone: return "none";
    case RecomputeBlocker::kNoProducer: return "no-producer";
    case RecomputeBlocker::kRandomState: return "random-state";
    case RecomputeBlocker::kInPlace: return "in-place";
    case RecomputeBlocker::kAliasing: return "aliasing";
    case RecomputeBlocker::kSideEffect: return "side-effect";
    case RecomputeBlocker::kCollective: return "collective";
    case RecomputeBlocker::kOptimizer: return "optimizer";
    case RecomputeBlocker::kNotBefore: return "not-before";
  }
  return "unknown";
}

namespace {

// ATen ops whose output shares its input's storage.
constexpr std::array<absl::string_view, 30> kViewOps = {
    "view",      "_reshape_alias", "t",           "transpose",  "expand",      "alias",
    "slice",     "select",         "_unsafe_view", "as_strided", "permute",     "squeeze",
    "unsqueeze", "narrow",         "split",       "chunk",      "unbind",      "detach",
    "diagonal",  "unfold",         "view_as",     "reshape",    "flatten",     "expand_as",
    "indices",   "values",         "real",        "imag",       "split_with_sizes",
    "view_as_real"};
constexpr std::array<absl::string_view, 13> kRandomParts = {
    "dropout", "bernoulli", "rand",   "normal",  "uniform",   "multinomial", "rrelu",
    "exponential", "geometric", "cauchy", "poisson", "log_normal", "random"};
constexpr std::array<absl::string_view, 7> kSideEffectParts = {
    "_local_scalar_dense", "batch_norm", "record_stream", "_fused_moving_avg", "print",
    "set_",                "resize_"};
constexpr std::array<absl::string_view, 14> kCollectiveParts = {
    "c10d",     "nccl",       "all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter",
    "reducescatter", "all_to_all", "alltoall", "isend",     "irecv",     "barrier",   "broadcast_coalesced"};

bool ContainsAny(absl::string_view s, absl::Span<const absl::string_view> parts) {
  for (absl::string_view p : parts) {
    if (absl::StrContains(s, p)) return true;
  }
  return false;
}

bool AttributeTrue(const TraceMetadata& m, absl::string_view key) {
  for (const auto& [k, v] : m.attributes) {
    if (k == key) return v == "true" || v == "1";
  }
  return false;
}

}  // namespace

RecomputeBlocker ClassifyOpName(absl::string_view name, bool rng_state_restorable) {
  const size_t colon = name.rfind("::");
  const absl::string_view base = colon == absl::string_view::npos ? name : name.substr(colon + 2);
  if (ContainsAny(name, kCollectiveParts)) return RecomputeBlocker::kCollective;
  if (ContainsAny(base, kSideEffectParts)) return RecomputeBlocker::kSideEffect;
  if (!base.empty() && base.back() == '_') return RecomputeBlocker::kInPlace;
  for (absl::string_view v : kViewOps) {
    if (base == v) return RecomputeBlocker::kAliasing;
  }
  if (!rng_state_restorable && ContainsAny(base, kRandomParts)) {
    return RecomputeBlocker::kRandomState;
  }
  return RecomputeBlocker::kNone;
}

absl::StatusOr<RecomputeAnalysis> RecomputeAnalysis::Build(const Trace& trace, int32_t iteration,
                                                           const DeviceModel& device) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return Error(ErrorKind::kMalformedInput,
                 absl::StrCat("recompute analysis: iteration ", iteration, " is out of range (",
                              trace.source(), " has ", trace.num_iterations(), " iterations)"));
  }
  RecomputeAnalysis a;
  a.trace_ = &trace;
  a.iteration_ = iteration;
  const IterationInfo& iter = trace.iteration(iteration);
  a.begin_ = iter.op_begin;
  const int32_t n = iter.num_ops();
  a.rng_state_restorable_ = AttributeTrue(trace.metadata(), "rng_state_restorable");
  absl::StatusOr<OpDurations> d =
      ComputeOpDurations(trace, iteration, OpTimeModel::kAuto, 0, device.compute_time_scale);
  if (d.ok()) {
    a.op_ns_ = std::move(d->duration_ns);
    a.has_costs_ = true;
  } else if (absl::IsFailedPrecondition(d.status())) {
    a.op_ns_.assign(n, 0);  // no durations and no iteration time: costs unknown
  } else {
    return d.status();
  }
  std::vector<RecomputeBlocker> by_name(trace.num_op_names());
  for (NameId k = 0; k < trace.num_op_names(); ++k) {
    by_name[k] = ClassifyOpName(trace.op_name(k), a.rng_state_restorable_);
  }
  const int32_t num_tensors = trace.num_tensors();
  a.producer_.assign(num_tensors, -1);
  a.blocker_.assign(num_tensors, RecomputeBlocker::kNoProducer);
  std::vector<int32_t> writers(num_tensors, 0);
  for (int32_t op = 0; op < n; ++op) {
    for (TensorId t : trace.outputs(a.begin_ + op)) {
      if (writers[t]++ == 0) a.producer_[t] = op;
    }
  }
  a.writer_begin_.assign(num_tensors + 1, 0);
  for (TensorId t = 0; t < num_tensors; ++t) {
    a.writer_begin_[t + 1] = a.writer_begin_[t] + (writers[t] > 1 ? writers[t] : 0);
  }
  a.writer_ops_.resize(a.writer_begin_[num_tensors]);
  {
    std::vector<int32_t> fill(a.writer_begin_.begin(), a.writer_begin_.end() - 1);
    for (int32_t op = 0; op < n; ++op) {
      for (TensorId t : trace.outputs(a.begin_ + op)) {
        if (writers[t] > 1) a.writer_ops_[fill[t]++] = op;
      }
    }
  }
  // Recorded storages shared by several tensors.
  absl::flat_hash_map<int64_t, int32_t> storage_count;
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (trace.tensor(t).storage_id >= 0) ++storage_count[trace.tensor(t).storage_id];
  }
  for (TensorId t = 0; t < num_tensors; ++t) {
    const int32_t p = a.producer_[t];
    if (p < 0) continue;
    const OpIndex g = a.begin_ + p;
    const OpInfo& op = trace.op(g);
    RecomputeBlocker b = by_name[op.name];
    if (b == RecomputeBlocker::kNone && op.phase == Phase::kOptimizer) {
      b = RecomputeBlocker::kOptimizer;
    }
    if (b == RecomputeBlocker::kNone) {
      const int64_t s = trace.tensor(t).storage_id;
      if (s >= 0 && storage_count[s] > 1) b = RecomputeBlocker::kAliasing;
    }
    if (b == RecomputeBlocker::kNone && writers[t] > 1) b = RecomputeBlocker::kInPlace;
    if (b == RecomputeBlocker::kNone) {
      for (TensorId x : trace.inputs(g)) {
        if (x == t) b = RecomputeBlocker::kInPlace;
      }
    }
    a.blocker_[t] = b;
  }
  return a;
}

namespace {

// A small set of ids as a sorted vector: recipes touch a few dozen tensors,
// where a sorted vector beats a hash set (no hashing, one allocation).
class SortedIds {
 public:
  bool contains(int32_t x) const { return std::binary_search(v_.begin(), v_.end(), x); }
  // Inserts x; false when it was there.
  bool insert(int32_t x) {
    auto it = std::lower_bound(v_.begin(), v_.end(), x);
    if (it != v_.end() && *it == x) return false;
    v_.insert(it, x);
    return true;
  }
  // Index of x, or -1.
  int64_t index(int32_t x) const {
    auto it = std::lower_bound(v_.begin(), v_.end(), x);
    return it != v_.end() && *it == x ? it - v_.begin() : -1;
  }
  const std::vector<int32_t>& ids() const { return v_; }

 private:
  std::vector<int32_t> v_;
};

}  // namespace

RecomputeRecipe RecomputeAnalysis::Plan(absl::Span<const TensorId> targets, int32_t at,
                                        absl::FunctionRef<bool(TensorId)> available,
                                        absl::Span<const int32_t> pos) const {
  RecomputeRecipe r;
  const Trace& trace = *trace_;
  auto position = [&](int32_t op) { return pos.empty() ? op : pos[op]; };
  const int32_t at_pos = position(at);
  SortedIds target_set;
  for (TensorId t : targets) target_set.insert(t);
  // Tensors the re-run ops write (set when an op joins the recipe).
  SortedIds produced;
  SortedIds op_set;
  SortedIds leaf_set;
  std::vector<TensorId> work(targets.begin(), targets.end());
  while (!work.empty()) {
    const TensorId x = work.back();
    work.pop_back();
    if (produced.contains(x)) continue;
    RecomputeBlocker b = blocker_[x];
    if (b == RecomputeBlocker::kNone && position(producer_[x]) >= at_pos) {
      b = RecomputeBlocker::kNotBefore;
    }
    if (b != RecomputeBlocker::kNone) {
      r.blocker = b;
      r.blocked_tensor = x;
      return r;
    }
    const int32_t p = producer_[x];
    // An input written again between the producer and `at` no longer holds
    // the value the producer read.
    for (TensorId y : trace.inputs(begin_ + p)) {
      for (int32_t k = writer_begin_[y]; k < writer_begin_[y + 1] && b == RecomputeBlocker::kNone;
           ++k) {
        const int32_t w = position(writer_ops_[k]);
        if (w > position(p) && w < at_pos) b = RecomputeBlocker::kInPlace;
      }
    }
    if (b != RecomputeBlocker::kNone) {
      r.blocker = b;
      r.blocked_tensor = x;
      return r;
    }
    op_set.insert(p);
    for (TensorId y : trace.outputs(begin_ + p)) produced.insert(y);
    for (TensorId y : trace.inputs(begin_ + p)) {
      if (produced.contains(y) || target_set.contains(y)) continue;
      if (available(y)) {
        leaf_set.insert(y);
      } else {
        work.push_back(y);
      }
    }
  }
  r.ops = op_set.ids();
  std::sort(r.ops.begin(), r.ops.end(),
            [&](int32_t a, int32_t b) { return position(a) < position(b); });
  // A tensor both read in place by one re-run op and produced by another
  // (reached first as available, later written by the recipe) is produced.
  for (TensorId y : leaf_set.ids()) {
    if (!produced.contains(y)) r.leaves.push_back(y);
  }
  // Last re-run op (index into r.ops) reading each produced non-target, by
  // index in `produced`; kNever when none reads it.
  constexpr size_t kNever = static_cast<size_t>(-1);
  std::vector<size_t> last_read(produced.ids().size(), kNever);
  for (size_t k = 0; k < r.ops.size(); ++k) {
    r.cost_ns += op_ns_[r.ops[k]];
    for (TensorId y : trace.inputs(begin_ + r.ops[k])) {
      const int64_t i = produced.index(y);
      if (i >= 0 && !target_set.contains(y)) last_read[i] = k;
    }
  }
  // Transient: walk the ops; outputs that are not targets are held during
  // their op and until their last reader.
  std::vector<int64_t> freed_after(r.ops.size(), 0);
  int64_t held = 0;
  for (size_t k = 0; k < r.ops.size(); ++k) {
    for (TensorId y : trace.outputs(begin_ + r.ops[k])) {
      if (target_set.contains(y)) continue;
      const int64_t bytes = trace.tensor(y).size_bytes;
      held += bytes;
      const size_t last = last_read[produced.index(y)];
      freed_after[last == kNever || last < k ? k : last] += bytes;
      if (last != kNever) r.intermediates.push_back(y);
    }
    r.transient_peak_bytes = std::max(r.transient_peak_bytes, held);
    held -= freed_after[k];
  }
  std::sort(r.intermediates.begin(), r.intermediates.end());
  return r;
}

}  // namespace swapplan
