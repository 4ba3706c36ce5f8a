#include "swapplan/varying/stage_tracker.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace swapplan {

absl::string_view StageName(Stage s) {
  switch (s) {
    case Stage::kGenPolicy:
      return "GenPolicy";
    case Stage::kStable:
      return "Stable";
    case Stage::kWarmUp:
      break;
  }
  return "WarmUp";
}

absl::string_view StageChangeName(StageChange c) {
  switch (c) {
    case StageChange::kSequenceStable:
      return "sequence stable";
    case StageChange::kSequenceChanged:
      return "sequence changed";
    case StageChange::kPolicyMisses:
      return "policy misses";
    case StageChange::kKnownSequence:
      return "known sequence";
    case StageChange::kNone:
      break;
  }
  return "none";
}

absl::string_view SequenceSimilarityName(SequenceSimilarity s) {
  return s == SequenceSimilarity::kCosineOpIds ? "op-ids" : "histogram";
}

bool ParseSequenceSimilarity(absl::string_view name, SequenceSimilarity* out) {
  if (name == "histogram") {
    *out = SequenceSimilarity::kCosineHistogram;
  } else if (name == "op-ids") {
    *out = SequenceSimilarity::kCosineOpIds;
  } else {
    return false;
  }
  return true;
}

absl::Status StageTrackerOptions::Validate() const {
  auto bad = [](absl::string_view field, auto value, absl::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("stage tracker options: ", field, " is ", value, "; ", rule));
  };
  if (!(max_length_change >= 0 && max_length_change <= 1)) {
    return bad("max_length_change", max_length_change, "must be in [0, 1]");
  }
  if (!(min_similarity >= 0 && min_similarity <= 1)) {
    return bad("min_similarity", min_similarity, "must be in [0, 1]");
  }
  if (warmup_iterations < 0) return bad("warmup_iterations (m)", warmup_iterations, "must be >= 0");
  if (genpolicy_iterations < 0) {
    return bad("genpolicy_iterations (n)", genpolicy_iterations, "must be >= 0");
  }
  if (max_policy_misses < 0) {
    return bad("max_policy_misses", max_policy_misses, "must be >= 0 (0: never)");
  }
  if (similarity != SequenceSimilarity::kCosineHistogram &&
      similarity != SequenceSimilarity::kCosineOpIds) {
    return bad("similarity", static_cast<int>(similarity), "unknown measure");
  }
  return absl::OkStatus();
}

double CosineOfOpIds(absl::Span<const int32_t> a, absl::Span<const int32_t> b) {
  if (a.empty() && b.empty()) return 1.0;
  if (a.empty() || b.empty()) return 0.0;
  // Exact integer sums (tokens < 2^31, sequences < 2^31 long: each square
  // < 2^62 — use long double for the sums to stay exact enough).
  long double dot = 0, na = 0, nb = 0;
  const size_t common = std::min(a.size(), b.size());
  for (size_t i = 0; i < common; ++i) {
    const long double x = static_cast<long double>(a[i]) + 1;
    const long double y = static_cast<long double>(b[i]) + 1;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  for (size_t i = common; i < a.size(); ++i) {
    const long double x = static_cast<long double>(a[i]) + 1;
    na += x * x;
  }
  for (size_t i = common; i < b.size(); ++i) {
    const long double y = static_cast<long double>(b[i]) + 1;
    nb += y * y;
  }
  return static_cast<double>(dot / std::sqrt(na * nb));
}

bool SameOpSequence(const StageTrackerOptions& options, absl::Span<const int32_t> a,
                    absl::Span<const int32_t> b) {
  const double la = static_cast<double>(a.size()), lb = static_cast<double>(b.size());
  if (lb == 0 || std::abs(la - lb) / lb >= options.max_length_change) return false;
  const double sim = options.similarity == SequenceSimilarity::kCosineOpIds
                         ? CosineOfOpIds(a, b)
                         : CosineOfHistograms(a, b);
  return sim > options.min_similarity;
}

double CosineOfHistograms(absl::Span<const int32_t> a, absl::Span<const int32_t> b) {
  if (a.empty() && b.empty()) return 1.0;
  if (a.empty() || b.empty()) return 0.0;
  int32_t max_token = 0;
  for (int32_t t : a) max_token = std::max(max_token, t);
  for (int32_t t : b) max_token = std::max(max_token, t);
  std::vector<int64_t> ha(max_token + 1, 0), hb(max_token + 1, 0);
  for (int32_t t : a) ++ha[t];
  for (int32_t t : b) ++hb[t];
  long double dot = 0, na = 0, nb = 0;
  for (int32_t t = 0; t <= max_token; ++t) {
    dot += static_cast<long double>(ha[t]) * hb[t];
    na += static_cast<long double>(ha[t]) * ha[t];
    nb += static_cast<long double>(hb[t]) * hb[t];
  }
  return static_cast<double>(dot / std::sqrt(na * nb));
}

absl::StatusOr<StageTracker> StageTracker::Create(const StageTrackerOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  StageTracker t;
  t.options_ = options;
  return t;
}

double StageTracker::Similarity(absl::Span<const int32_t> seq) {
  if (options_.similarity == SequenceSimilarity::kCosineOpIds) return CosineOfOpIds(seq, prev_);
  // Histogram of the current sequence into hist_ (prev_hist_ holds the
  // previous one); only touched entries are cleared afterwards.
  for (int32_t t : seq) {
    if (static_cast<size_t>(t) >= hist_.size()) {
      hist_.resize(static_cast<size_t>(t) + 1, 0);
      prev_hist_.resize(hist_.size(), 0);
    }
    if (hist_[t]++ == 0) touched_.push_back(t);
  }
  long double dot = 0, norm2 = 0;
  for (int32_t t : touched_) {
    const long double c = static_cast<long double>(hist_[t]);
    norm2 += c * c;
    if (static_cast<size_t>(t) < prev_hist_.size()) dot += c * prev_hist_[t];
  }
  double sim;
  if (seq.empty() && prev_.empty()) {
    sim = 1.0;
  } else if (seq.empty() || prev_.empty()) {
    sim = 0.0;
  } else {
    sim = static_cast<double>(dot / std::sqrt(norm2 * static_cast<long double>(prev_norm2_)));
  }
  // The current histogram becomes the previous one.
  for (int32_t t : prev_touched_) prev_hist_[t] = 0;
  std::swap(prev_hist_, hist_);
  std::swap(prev_touched_, touched_);
  touched_.clear();
  prev_norm2_ = static_cast<double>(norm2);
  return sim;
}

StageDecision StageTracker::Observe(absl::Span<const int32_t> tokens,
                                    const PolicyOutcome& outcome) {
  if (first_) {
    // static PrevOpSeq <- OpSeq
    prev_.assign(tokens.begin(), tokens.end());
    if (options_.similarity == SequenceSimilarity::kCosineHistogram) Similarity(tokens);
    first_ = false;
  }
  StageDecision d;
  const double len = static_cast<double>(tokens.size());
  const double prev_len = static_cast<double>(prev_.size());
  d.length_change = prev_len > 0 ? std::abs(len - prev_len) / prev_len : (len > 0 ? 1.0 : 0.0);
  d.similarity = Similarity(tokens);
  d.sequence_stable =
      d.length_change < options_.max_length_change && d.similarity > options_.min_similarity;
  Stage next = stage_;
  if (d.sequence_stable) {
    ++stable_steps_;
    if (stage_ == Stage::kWarmUp && stable_steps_ > options_.warmup_iterations) {
      next = Stage::kGenPolicy;
      stable_steps_ = 0;
      d.change = StageChange::kSequenceStable;
    } else if (stage_ == Stage::kGenPolicy && stable_steps_ > options_.genpolicy_iterations) {
      next = Stage::kStable;
      policy_misses_ = 0;
      d.change = StageChange::kSequenceStable;
    } else if (stage_ == Stage::kStable && outcome.missed) {
      ++policy_misses_;
      if (options_.max_policy_misses > 0 && policy_misses_ >= options_.max_policy_misses) {
        next = Stage::kGenPolicy;
        stable_steps_ = 0;
        d.change = StageChange::kPolicyMisses;
      }
    }
  } else {
    next = Stage::kWarmUp;
    stable_steps_ = 0;
    d.change = StageChange::kSequenceChanged;
  }
  d.policy_misses = next == Stage::kStable || d.change == StageChange::kPolicyMisses
                        ? policy_misses_ : 0;
  if (next != Stage::kStable) policy_misses_ = 0;
  stage_ = next;
  d.stage = next;
  d.stable_steps = stable_steps_;
  prev_.assign(tokens.begin(), tokens.end());
  return d;
}

void StageTracker::ResumeStable() {
  stage_ = Stage::kStable;
  stable_steps_ = 0;
  policy_misses_ = 0;
}

int32_t OpTokenizer::Token(absl::string_view name) {
  auto [it, inserted] = ids_.try_emplace(name, static_cast<int32_t>(names_.size()));
  if (inserted) names_.emplace_back(name);
  return it->second;
}

}  // namespace swapplan
