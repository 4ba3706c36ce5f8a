// Runtime tensor matching: policy preparation, the fuzzy matcher (runtime
// keys) and the naive one (op ordinal, i-th tensor). See matcher.h.
#include "swapplan/varying/matcher.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

uint64_t ShapeHash(absl::Span<const int64_t> shape) {
  uint64_t h = 1469598103934665603ULL;
  for (int64_t d : shape) {
    uint64_t v;
    std::memcpy(&v, &d, sizeof v);
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  }
  return h ^ shape.size();
}

namespace {

inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

uint64_t KeyHash(Phase phase, const TensorKeyState& key, DType dtype) {
  uint64_t h = static_cast<uint64_t>(phase) | (static_cast<uint64_t>(dtype) << 8) |
               (static_cast<uint64_t>(key.op_count) << 16);
  h = Mix(h, key.op_mask);
  h = Mix(h, key.op_history);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

absl::string_view MatcherKindName(MatcherKind k) {
  return k == MatcherKind::kNaive ? "naive" : "fuzzy";
}

bool ParseMatcherKind(absl::string_view name, MatcherKind* out) {
  if (name == "fuzzy") {
    *out = MatcherKind::kFuzzy;
  } else if (name == "naive") {
    *out = MatcherKind::kNaive;
  } else {
    return false;
  }
  return true;
}

absl::Status MatcherOptions::Validate() const {
  if (window_ops < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("matcher options: window_ops is ", window_ops, "; must be >= 0"));
  }
  return absl::OkStatus();
}

absl::StatusOr<MatchablePolicy> MakeMatchablePolicy(const Trace& trace, int32_t iteration,
                                                    Policy policy, int32_t mask_bits) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("matching: iteration ", iteration,
                                                   " is out of range: ", trace.source(), " has ",
                                                   trace.num_iterations(), " iterations"));
  }
  MatchablePolicy mp;
  SWAPPLAN_ASSIGN_OR_RETURN(mp.ranking,
                            OpFrequencyRanking::ForIteration(trace, iteration, mask_bits));
  mp.codes.resize(trace.num_op_names());
  for (NameId name = 0; name < trace.num_op_names(); ++name) mp.codes[name] = mp.ranking.code(name);
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  mp.source_ops = n;
  std::vector<int32_t> phase_ordinal(n);
  int32_t counts[kNumPhases] = {0, 0, 0, 0};
  for (int32_t i = 0; i < n; ++i) {
    phase_ordinal[i] = counts[static_cast<int>(trace.op(iter.op_begin + i).phase)]++;
  }
  auto anchor = [&](int32_t local) {
    return OpAnchor{trace.op(iter.op_begin + local).phase, phase_ordinal[local], local};
  };
  // File id -> dense id, skipped when the ids are dense.
  absl::flat_hash_map<uint64_t, TensorId> by_id;
  auto lookup = [&](uint64_t id) -> TensorId {
    if (id < static_cast<uint64_t>(trace.num_tensors()) &&
        trace.tensor(static_cast<TensorId>(id)).trace_id == id) {
      return static_cast<TensorId>(id);
    }
    if (by_id.empty()) {
      by_id.reserve(trace.num_tensors());
      for (TensorId t = 0; t < trace.num_tensors(); ++t) by_id.emplace(trace.tensor(t).trace_id, t);
    }
    auto f = by_id.find(id);
    return f == by_id.end() ? kNoTensor : f->second;
  };
  mp.items.reserve(policy.items.size());
  for (size_t k = 0; k < policy.items.size(); ++k) {
    const PolicyItem& it = policy.items[k];
    auto fail = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("matching: policy item ", k, " (tensor ",
                                                     it.tensor_id, "): ", what));
    };
    for (int32_t op : {it.swap_out_op, it.release_op, it.swap_in_op, it.first_use_op}) {
      if (op < 0 || op >= n) {
        return fail(absl::StrCat("op ", op, " is outside iteration ", iteration, " of ",
                                 trace.source(), " (", n, " ops)"));
      }
    }
    const TensorId t = lookup(it.tensor_id);
    if (t == kNoTensor) return fail(absl::StrCat("no such tensor in ", trace.source()));
    absl::Span<const OpIndex> uses = trace.tensor_uses(t);
    auto last = std::upper_bound(uses.begin(), uses.end(), iter.op_begin + it.swap_out_op);
    if (last == uses.begin() || *(last - 1) < iter.op_begin) {
      return fail(absl::StrCat("not used in iteration ", iteration, " at or before swap_out_op ",
                               it.swap_out_op));
    }
    const int32_t decision = *(last - 1) - iter.op_begin;
    MatchableItem m;
    m.item = static_cast<int32_t>(k);
    m.decision = anchor(decision);
    absl::Span<const TensorId> op_uses = trace.uses(iter.op_begin + decision);
    m.use_index = static_cast<int32_t>(std::find(op_uses.begin(), op_uses.end(), t) -
                                       op_uses.begin());
    m.key = KeyStateAt(trace, iteration, mp.ranking, t, decision);
    m.dtype = trace.tensor(t).dtype;
    m.size_bytes = trace.tensor(t).size_bytes;
    m.shape_hash = ShapeHash(trace.shape(t));
    m.release = anchor(it.release_op);
    m.swap_in = anchor(it.swap_in_op);
    m.first_use = anchor(it.first_use_op);
    mp.items.push_back(m);
  }
  mp.policy = std::move(policy);
  return mp;
}

namespace {

class FuzzyMatcher final : public TensorMatcher {
 public:
  FuzzyMatcher(const MatchablePolicy& p, const MatcherOptions& o) : p_(&p), window_(o.window_ops) {
    const std::vector<MatchableItem>& items = p.items;
    // Group items by features: hash -> chain of buckets.
    std::vector<int32_t> bucket_of(items.size());
    for (size_t k = 0; k < items.size(); ++k) {
      const MatchableItem& it = items[k];
      const uint64_t h = KeyHash(it.decision.phase, it.key, it.dtype);
      auto [f, inserted] = by_hash_.try_emplace(h, -1);
      int32_t b = f->second;
      while (b >= 0 && !Same(buckets_[b], it.decision.phase, it.key, it.dtype)) b = buckets_[b].next;
      if (b < 0) {
        b = static_cast<int32_t>(buckets_.size());
        buckets_.push_back({it.decision.phase, it.key, it.dtype, 0, 0, f->second});
        f->second = b;
      }
      bucket_of[k] = b;
      ++buckets_[b].end;  // count for now
    }
    int32_t at = 0;
    for (Bucket& b : buckets_) {
      b.begin = at;
      at += b.end;
      b.end = b.begin;
    }
    order_.resize(items.size());
    for (size_t k = 0; k < items.size(); ++k) {
      order_[buckets_[bucket_of[k]].end++] = static_cast<int32_t>(k);
    }
    for (Bucket& b : buckets_) {
      std::stable_sort(order_.begin() + b.begin, order_.begin() + b.end, [&](int32_t x, int32_t y) {
        return items[x].decision.phase_ordinal < items[y].decision.phase_ordinal;
      });
    }
    cursor_.resize(buckets_.size());
    matched_.resize(items.size());
    fallback_.reserve(16);
    BeginIteration();
  }

  MatcherKind kind() const override { return MatcherKind::kFuzzy; }

  void BeginIteration() override {
    for (size_t b = 0; b < buckets_.size(); ++b) cursor_[b] = buckets_[b].begin;
    std::fill(matched_.begin(), matched_.end(), 0);
    ordinal_ = 0;
    std::fill(std::begin(phase_count_), std::end(phase_count_), 0);
  }

  void OnOp(NameId name, Phase phase, absl::Span<const int32_t> slots, RuntimeTensorTable& table,
            std::vector<MatchDecision>* out) override {
    const OpKeyCode code = name >= 0 && name < num_codes() ? p_->codes[name] : OpKeyCode{};
    const int32_t op = ordinal_++;
    const int32_t o = phase_count_[static_cast<int>(phase)]++;
    fallback_.clear();
    for (size_t k = 0; k < slots.size(); ++k) {
      const int32_t slot = slots[k];
      if (!table.Update(slot, op, code)) continue;
      const RuntimeTensor& rt = table[slot];
      if (rt.matched_item >= 0 || buckets_.empty()) continue;
      auto f = by_hash_.find(KeyHash(phase, rt.key, rt.dtype));
      if (f == by_hash_.end()) continue;
      int32_t b = f->second;
      while (b >= 0 && !Same(buckets_[b], phase, rt.key, rt.dtype)) b = buckets_[b].next;
      if (b < 0) continue;
      int32_t level = 0;
      const int32_t c = Best(b, o, rt, static_cast<int32_t>(k), &level);
      if (c < 0) continue;
      if (level == 0) {
        Match(c, slot, table, out);
      } else {
        fallback_.push_back({level, static_cast<int32_t>(k), b, slot});
      }
    }
    // Tensors that met their bucket's items only on features: the closest
    // first (size and shape equal, then neither), each in use order.
    std::stable_sort(fallback_.begin(), fallback_.end(),
                     [](const Fallback& x, const Fallback& y) { return x.level < y.level; });
    for (const Fallback& x : fallback_) {
      if (table[x.slot].matched_item >= 0) continue;
      int32_t level = 0;
      const int32_t c = Best(x.bucket, o, table[x.slot], x.use_index, &level);
      if (c >= 0) Match(c, x.slot, table, out);
    }
  }

 private:
  struct Bucket {
    Phase phase;
    TensorKeyState key;
    DType dtype;
    int32_t begin, end;  // into order_
    int32_t next;        // next bucket with the same hash, or -1
  };
  struct Fallback {
    int32_t level;      // 1: size and shape equal, 2: features only
    int32_t use_index;  // position among the op's uses
    int32_t bucket;
    int32_t slot;
  };

  static bool Same(const Bucket& b, Phase phase, const TensorKeyState& k, DType dtype) {
    return b.phase == phase && b.dtype == dtype && b.key.op_count == k.op_count &&
           b.key.op_mask == k.op_mask && b.key.op_history == k.op_history;
  }
  int32_t num_codes() const { return static_cast<int32_t>(p_->codes.size()); }

  // The bucket's first unmatched item whose window contains position o, or
  // -1. Items whose window has passed are skipped for good.
  int32_t Candidate(int32_t b, int32_t o) {
    int32_t& c = cursor_[b];
    const int32_t end = buckets_[b].end;
    const std::vector<MatchableItem>& items = p_->items;
    while (c < end &&
           (matched_[order_[c]] != 0 || items[order_[c]].decision.phase_ordinal < o - window_)) {
      ++c;
    }
    if (c < end && items[order_[c]].decision.phase_ordinal <= o + window_) return order_[c];
    return -1;
  }

  // Among the bucket's unmatched items in the window of position o, the one
  // that fits the tensor best: size, shape and position among the op's uses
  // equal (level 0), size and shape equal (1), features only (2); ties: the
  // earliest item. -1 when the window holds none.
  int32_t Best(int32_t b, int32_t o, const RuntimeTensor& rt, int32_t use_index, int32_t* level) {
    if (Candidate(b, o) < 0) return -1;
    const std::vector<MatchableItem>& items = p_->items;
    int32_t best = -1;
    *level = 3;
    for (int32_t c = cursor_[b];
         c < buckets_[b].end && items[order_[c]].decision.phase_ordinal <= o + window_; ++c) {
      const int32_t k = order_[c];
      if (matched_[k] != 0) continue;
      const MatchableItem& it = items[k];
      const bool same = it.size_bytes == rt.size_bytes && it.shape_hash == rt.shape_hash;
      const int32_t l = same ? (it.use_index == use_index ? 0 : 1) : 2;
      if (l < *level) {
        *level = l;
        best = k;
        if (l == 0) break;
      }
    }
    return best;
  }

  void Match(int32_t c, int32_t slot, RuntimeTensorTable& table, std::vector<MatchDecision>* out) {
    matched_[c] = 1;
    table[slot].matched_item = c;
    out->push_back({p_->items[c].item, slot});
  }

  const MatchablePolicy* p_;
  int32_t window_;
  std::vector<Bucket> buckets_;
  std::vector<int32_t> order_;
  absl::flat_hash_map<uint64_t, int32_t> by_hash_;
  std::vector<int32_t> cursor_;
  std::vector<uint8_t> matched_;
  std::vector<Fallback> fallback_;
  int32_t ordinal_ = 0;
  int32_t phase_count_[kNumPhases] = {0, 0, 0, 0};
};

class NaiveMatcher final : public TensorMatcher {
 public:
  explicit NaiveMatcher(const MatchablePolicy& p) : p_(&p) {
    begin_.assign(static_cast<size_t>(p.source_ops) + 1, 0);
    for (const MatchableItem& it : p.items) ++begin_[it.decision.ordinal + 1];
    for (int32_t i = 0; i < p.source_ops; ++i) begin_[i + 1] += begin_[i];
    at_.resize(p.items.size());
    std::vector<int32_t> fill(begin_.begin(), begin_.end() - 1);
    for (size_t k = 0; k < p.items.size(); ++k) {
      at_[fill[p.items[k].decision.ordinal]++] = static_cast<int32_t>(k);
    }
  }

  MatcherKind kind() const override { return MatcherKind::kNaive; }
  void BeginIteration() override { ordinal_ = 0; }

  void OnOp(NameId name, Phase phase, absl::Span<const int32_t> slots, RuntimeTensorTable& table,
            std::vector<MatchDecision>* out) override {
    (void)name;
    (void)phase;
    const int32_t op = ordinal_++;
    if (op >= p_->source_ops) return;
    for (int32_t i = begin_[op]; i < begin_[op + 1]; ++i) {
      const MatchableItem& it = p_->items[at_[i]];
      if (it.use_index >= static_cast<int32_t>(slots.size())) continue;
      const int32_t slot = slots[it.use_index];
      if (table[slot].matched_item >= 0) continue;
      table[slot].matched_item = at_[i];
      out->push_back({it.item, slot});
    }
  }

 private:
  const MatchablePolicy* p_;
  std::vector<int32_t> begin_, at_;
  int32_t ordinal_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TensorMatcher>> CreateMatcher(MatcherKind kind,
                                                             const MatchablePolicy& policy,
                                                             const MatcherOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  if (kind == MatcherKind::kNaive) return std::make_unique<NaiveMatcher>(policy);
  if (kind != MatcherKind::kFuzzy) {
    return absl::InvalidArgumentError(
        absl::StrCat("matching: unknown matcher kind ", static_cast<int>(kind)));
  }
  return std::make_unique<FuzzyMatcher>(policy, options);
}

}  // namespace swapplan
