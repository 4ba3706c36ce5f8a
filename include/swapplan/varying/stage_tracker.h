// Stage tracker: Algorithm 1 of seeds 000/001 (§3 / §4, "stage adjusting").
// At the end of every iteration the runtime hands over that iteration's op
// sequence as integer tokens; the tracker compares it with the previous one
// and says what the next iteration does:
//
//   WarmUp     no policy (allocation failures: Algorithm 3's passive swaps)
//   GenPolicy  a policy is generated from the iteration just seen and run
//   Stable     the best policy of the GenPolicy run is reused, none generated
//
//   sequence stable  := |len − prev len| / prev len < max_length_change
//                       and Similarity(seq, prev) > min_similarity
//   stable:   steps += 1; WarmUp and steps > m  -> GenPolicy, steps = 0
//                         GenPolicy and steps > n -> Stable
//   unstable: WarmUp, steps = 0
//   Stable, sequence stable, but the policy missed (the runtime reports it:
//     an allocation failed — Algorithm 3 swapped passively or could not —
//     or a policy tensor was used while off device) for the
//     max_policy_misses-th time since Stable began: GenPolicy, steps = 0 —
//     the sequence has not changed, but what the policy was planned on no
//     longer covers the iterations (MoE routing, sequence lengths: sizes
//     the op sequence does not show). The decision says why.
//
// (The previous sequence starts as the first one, so the first iteration
// counts as stable, as the algorithm's static initialisation says.) With
// m = 2, n = 5 and a constant sequence the stages are, per iteration:
//   0 W, 1 W, 2 G, 3 G, 4 G, 5 G, 6 G, 7 G, 8 S, ...
// — six GenPolicy iterations (the paper's text says five policies; the
// algorithm as printed gives n + 1).
//
// Similarity. The paper takes the cosine similarity of the two integer
// sequences as vectors (SequenceSimilarity::kCosineOpIds, token t counted as
// t + 1 so that token 0 is not invisible; the shorter vector is padded with
// zeros). That measure is implemented as written, but token values are
// arbitrary labels, and all-positive vectors are never far apart:
//   * [0..19] x 50 against [20..39] x 50 — 1,000 ops each, not one op in
//     common — scores 0.951: "stable" at the 95% threshold;
//   * [0..39] x 25 against its reversal (the same ops) scores 0.519;
//   * replacing op 1 by op 2 in [0..39] x 25 scores 0.99998, replacing it
//     by op 39 scores 0.969: the same change, judged by the labels' values.
// (tests/varying/stage_tracker_test.cc checks these numbers.) The default,
// kCosineHistogram, is the cosine of the two op-name histograms (count of
// each token): independent of the numbering, 0 for disjoint sequences, and
// it falls with the share of ops added, removed or replaced (0.976 for both
// replacements above) — a validation pass or a skipped optimizer step moves
// it. Its blind spot is order: a reordering of the same ops scores 1. The
// causes of sequence changes the papers name (loss-scale skips, validation,
// conditional branches, elastic re-sharding) all change the composition;
// positions within a phase are the matcher's business (matcher.h). The
// length test stays as the paper has it.
//
//   StageTracker tracker = *StageTracker::Create({});
//   for each iteration:
//     StageDecision d = tracker.Observe(tokens);   // stage of the next iteration
//
// OpTokenizer numbers op names once, in order of first appearance
// (`Token(name)` is a hash lookup; a runtime calls it once per distinct
// operator and caches the integer, e.g. per dispatcher op handle).
//
// Complexity: Observe O(len + len of the previous sequence) time (the
// histogram measure also O(distinct tokens)), no allocation once the
// buffers have reached the longest sequence and the largest token.
#ifndef SWAPPLAN_VARYING_STAGE_TRACKER_H_
#define SWAPPLAN_VARYING_STAGE_TRACKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace swapplan {

enum class Stage : uint8_t { kWarmUp = 0, kGenPolicy = 1, kStable = 2 };
// "WarmUp", "GenPolicy", "Stable".
absl::string_view StageName(Stage s);

enum class SequenceSimilarity : uint8_t {
  kCosineHistogram = 0,  // cosine of the op-token histograms (default)
  kCosineOpIds = 1,      // the paper's: cosine of the token sequences as vectors
};
// "histogram", "op-ids"; the parser returns false for anything else.
absl::string_view SequenceSimilarityName(SequenceSimilarity s);
bool ParseSequenceSimilarity(absl::string_view name, SequenceSimilarity* out);

struct StageTrackerOptions {
  // Largest relative length change |len − prev| / prev still "stable"
  // (strictly below).
  double max_length_change = 0.05;
  // Smallest similarity still "stable" (strictly above).
  double min_similarity = 0.95;
  // m: stable iterations before WarmUp turns into GenPolicy (> m).
  int32_t warmup_iterations = 2;
  // n: stable iterations before GenPolicy turns into Stable (> n).
  int32_t genpolicy_iterations = 5;
  SequenceSimilarity similarity = SequenceSimilarity::kCosineHistogram;
  // Stable iterations whose policy missed (PolicyOutcome::missed) before the
  // tracker returns to GenPolicy, counted since Stable began; 0 = never.
  int32_t max_policy_misses = 2;

  // InvalidArgument naming the field: thresholds outside [0, 1], m, n or
  // max_policy_misses < 0.
  absl::Status Validate() const;
};

// Cosine similarity of `a` and `b` as vectors of (token + 1), the shorter
// padded with zeros; 1 when both are empty, 0 when one is. Tokens >= 0.
double CosineOfOpIds(absl::Span<const int32_t> a, absl::Span<const int32_t> b);
// Cosine similarity of the token histograms; 1 when both are empty, 0 when
// one is. Tokens >= 0. Allocates a histogram (StageTracker reuses its own).
double CosineOfHistograms(absl::Span<const int32_t> a, absl::Span<const int32_t> b);

// Whether `a` passes the tracker's stability tests against `b` (the
// sequence a stage machine left): |len(a) − len(b)| / len(b) below
// options.max_length_change and the options' similarity above
// options.min_similarity; false when `b` is empty. What a runtime and the
// replay use to recognise a remembered sequence (ReplayOptions::
// remembered_sequences, runtime RuntimeOptions::remembered_sequences).
// O(len(a) + len(b)); allocates a histogram for kCosineHistogram.
bool SameOpSequence(const StageTrackerOptions& options, absl::Span<const int32_t> a,
                    absl::Span<const int32_t> b);

// What the policy did in the iteration that just ended, as the runtime saw
// it (Observe's second argument; the default: nothing to report).
struct PolicyOutcome {
  // An allocation failed (Algorithm 3 ran: passive swaps, or an OOM it could
  // not resolve) or a tensor the policy had swapped out was used while off
  // device (a passive swap-in).
  bool missed = false;
};

// Why the stage changed (or kNone).
enum class StageChange : uint8_t {
  kNone = 0,
  kSequenceStable = 1,   // enough stable iterations: WarmUp -> GenPolicy -> Stable
  kSequenceChanged = 2,  // length or similarity test failed: -> WarmUp
  kPolicyMisses = 3,     // Stable: max_policy_misses reached -> GenPolicy
  kKnownSequence = 4,    // ResumeStable: a sequence with policies already made
};
// "none", "sequence stable", "sequence changed", "policy misses", "known
// sequence".
absl::string_view StageChangeName(StageChange c);

struct StageDecision {
  // Stage of the next iteration.
  Stage stage = Stage::kWarmUp;
  // Why it differs from the stage of the iteration just observed (kNone
  // when it does not; kSequenceChanged also when WarmUp stays WarmUp).
  StageChange change = StageChange::kNone;
  // Policy misses counted in this Stable run so far (0 outside Stable;
  // reset when the limit sends the tracker back).
  int32_t policy_misses = 0;
  // Both tests passed.
  bool sequence_stable = false;
  // |len − prev| / prev (0 when both are empty, 1 when prev is empty).
  double length_change = 0;
  double similarity = 1;
  // StableStep after this iteration.
  int32_t stable_steps = 0;
};

class StageTracker {
 public:
  static absl::StatusOr<StageTracker> Create(const StageTrackerOptions& options);

  // Algorithm 1 on the sequence of the iteration that just ended (tokens
  // >= 0) and what its policy did. Returns the stage of the next iteration.
  StageDecision Observe(absl::Span<const int32_t> tokens, const PolicyOutcome& outcome = {});

  // Puts the tracker in Stable now, as if the last observed sequence had
  // just finished GenPolicy: for a runtime that kept the policies of a
  // sequence it left and recognises it again (replay.h's remembered
  // sequences). The last Observe's sequence stays the one compared with.
  void ResumeStable();

  // The stage the last Observe returned (WarmUp before the first).
  Stage stage() const { return stage_; }
  const StageTrackerOptions& options() const { return options_; }

 private:
  StageTracker() = default;
  double Similarity(absl::Span<const int32_t> seq);

  StageTrackerOptions options_;
  bool first_ = true;
  Stage stage_ = Stage::kWarmUp;
  int32_t stable_steps_ = 0;
  int32_t policy_misses_ = 0;
  std::vector<int32_t> prev_;
  // Histogram measure: counts of prev_ and of the current sequence, and the
  // tokens each touched (to clear them in O(distinct)).
  std::vector<int64_t> prev_hist_, hist_;
  std::vector<int32_t> prev_touched_, touched_;
  double prev_norm2_ = 0;
};

// Numbers op names in order of first appearance (0, 1, 2, ...).
class OpTokenizer {
 public:
  // The token of `name`, assigning the next one when it is new.
  int32_t Token(absl::string_view name);
  // Names by token.
  const std::vector<std::string>& names() const { return names_; }
  int32_t size() const { return static_cast<int32_t>(names_.size()); }

 private:
  absl::flat_hash_map<std::string, int32_t> ids_;
  std::vector<std::string> names_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_VARYING_STAGE_TRACKER_H_
