// Runtime tensor matching: policy preparation, the fuzzy matcher (runtime
// keys) and the naive one (op ordinal, i-th tensor). See matcher.h.
#include "swapplan/varying/matcher.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

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

absl::StatusOr<MatchablePolicy> MakeMatchablePolicy(Policy policy) {
  const PolicyRuntime& rt = policy.runtime;
  if (rt.empty()) {
    return Error(ErrorKind::kMalformedInput,
                 "matching: the policy has no runtime section (schema v1: `swapplan policy "
                 "upgrade` rebuilds it from the trace)");
  }
  SWAPPLAN_RETURN_IF_ERROR(ValidatePolicyRuntime(policy));
  MatchablePolicy mp;
  mp.source_ops = static_cast<int32_t>(rt.op_sequence.size());
  mp.items.reserve(policy.items.size());
  for (size_t k = 0; k < policy.items.size(); ++k) {
    const RuntimeKey& key = policy.items[k].runtime_key;
    const RuntimeItem& r = rt.items[k];
    MatchableItem m;
    m.item = static_cast<int32_t>(k);
    m.decision = r.decision;
    m.use_index = r.use_index;
    m.key.op_count = key.op_count;
    m.key.op_mask = key.op_mask;
    m.key.op_history = key.op_history;
    m.dtype = key.dtype;
    m.size_bytes = key.size_bytes;
    m.shape_hash = r.shape_hash;
    m.release = r.release;
    m.swap_in = r.swap_in;
    m.first_use = r.first_use;
    mp.items.push_back(m);
  }
  mp.policy = std::move(policy);
  mp.codes.reserve(mp.policy.runtime.op_ranks.size());
  for (int32_t rank : mp.policy.runtime.op_ranks) {
    mp.codes.push_back(OpKeyCodeForRank(rank, mp.policy.runtime.mask_bits));
  }
  return mp;
}

void BindOpNames(absl::Span<const std::string> names, MatchablePolicy* mp) {
  const PolicyRuntime& rt = mp->policy.runtime;
  absl::flat_hash_map<absl::string_view, int32_t> index;
  index.reserve(rt.op_names.size());
  for (size_t i = 0; i < rt.op_names.size(); ++i) {
    index.emplace(rt.op_names[i], static_cast<int32_t>(i));
  }
  mp->codes.assign(names.size(), OpKeyCode{});
  for (size_t n = 0; n < names.size(); ++n) {
    auto f = index.find(names[n]);
    if (f != index.end()) mp->codes[n] = OpKeyCodeForRank(rt.op_ranks[f->second], rt.mask_bits);
  }
}

absl::StatusOr<MatchablePolicy> MakeMatchablePolicy(const Trace& trace, int32_t iteration,
                                                    Policy policy, int32_t mask_bits) {
  SWAPPLAN_RETURN_IF_ERROR(AttachPolicyRuntime(trace, iteration, &policy, mask_bits));
  policy.fingerprint = ComputeFingerprint(trace, iteration);
  SWAPPLAN_ASSIGN_OR_RETURN(MatchablePolicy mp, MakeMatchablePolicy(std::move(policy)));
  BindOpNames(trace.op_names(), &mp);
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
      if (buckets_.empty()) continue;
      // A tensor that matched an item takes later ones only of the same
      // planned tensor: its next windows (a parameter's clean windows and
      // its window across the iteration boundary), one per op.
      const int32_t only = rt.matched_item;
      auto f = by_hash_.find(KeyHash(phase, rt.key, rt.dtype));
      if (f == by_hash_.end()) continue;
      int32_t b = f->second;
      while (b >= 0 && !Same(buckets_[b], phase, rt.key, rt.dtype)) b = buckets_[b].next;
      if (b < 0) continue;
      int32_t level = 0;
      const int32_t c = Best(b, o, rt, static_cast<int32_t>(k), only, &level);
      if (c < 0) continue;
      if (level == 0) {
        Match(c, slot, table, out);
        matched_now_.push_back(slot);
      } else {
        fallback_.push_back({level, static_cast<int32_t>(k), b, slot, only});
      }
    }
    // Tensors that met their bucket's items only on features: the closest
    // first (size and shape equal, then neither), each in use order.
    std::stable_sort(fallback_.begin(), fallback_.end(),
                     [](const Fallback& x, const Fallback& y) { return x.level < y.level; });
    for (const Fallback& x : fallback_) {
      if (table[x.slot].matched_item != x.only ||
          std::find(matched_now_.begin(), matched_now_.end(), x.slot) != matched_now_.end()) {
        continue;
      }
      int32_t level = 0;
      const int32_t c = Best(x.bucket, o, table[x.slot], x.use_index, x.only, &level);
      if (c >= 0) {
        Match(c, x.slot, table, out);
        matched_now_.push_back(x.slot);
      }
    }
    matched_now_.clear();
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
    int32_t only;       // the item the tensor matched before (-1: none)
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

  // Among the bucket's unmatched items in the window of position o (of the
  // planned tensor of item `only`, when >= 0), the one that fits the tensor
  // best: size, shape and position among the op's uses equal (level 0), size
  // and shape equal (1), features only (2); ties: the earliest item. -1 when
  // the window holds none.
  int32_t Best(int32_t b, int32_t o, const RuntimeTensor& rt, int32_t use_index, int32_t only,
               int32_t* level) {
    if (Candidate(b, o) < 0) return -1;
    const std::vector<MatchableItem>& items = p_->items;
    int32_t best = -1;
    *level = 3;
    for (int32_t c = cursor_[b];
         c < buckets_[b].end && items[order_[c]].decision.phase_ordinal <= o + window_; ++c) {
      const int32_t k = order_[c];
      if (matched_[k] != 0) continue;
      if (only >= 0 && SourceTensor(k) != SourceTensor(only)) continue;
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

  // The trace id of the tensor item k was planned for.
  uint64_t SourceTensor(int32_t k) const { return p_->policy.items[p_->items[k].item].tensor_id; }

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
  std::vector<int32_t> matched_now_;  // slots matched at the current op
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
      // A tensor that matched an item takes later ones only of the same
      // planned tensor (its next windows).
      const int32_t prev = table[slot].matched_item;
      if (prev >= 0 && (p_->items[prev].decision.ordinal == op ||
                        p_->policy.items[p_->items[prev].item].tensor_id !=
                            p_->policy.items[it.item].tensor_id)) {
        continue;
      }
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
