// The policy library: the stage machine of the runtime and the replay
// (policy_library.h).
#include "swapplan/varying/policy_library.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::string_view StableChoiceName(StableChoice c) {
  switch (c) {
    case StableChoice::kLatest:
      return "latest";
    case StableChoice::kBestRun:
      return "best-run";
    case StableChoice::kBestCandidate:
      break;
  }
  return "best-candidate";
}

absl::Status PolicyLibraryOptions::Validate() const {
  if (stable_choice != StableChoice::kLatest && stable_choice != StableChoice::kBestCandidate &&
      stable_choice != StableChoice::kBestRun) {
    return absl::InvalidArgumentError(absl::StrCat(
        "policy library options: stable_choice is ", static_cast<int>(stable_choice),
        "; not a StableChoice"));
  }
  if (remembered_sequences < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy library options: remembered_sequences is ", remembered_sequences,
                     "; must be >= 0 (0: none)"));
  }
  return tracker.Validate();
}

const LibraryPolicy* LibraryKey::Find(int32_t id) const {
  for (const LibraryPolicy& p : policies) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

absl::StatusOr<PreparedPolicy> PrepareForMatching(Policy policy, const MatchSource& source) {
  PreparedPolicy out;
  if (source.trace != nullptr && (source.rebuild || policy.runtime.empty())) {
    SWAPPLAN_ASSIGN_OR_RETURN(out.mp, MakeMatchablePolicy(*source.trace, source.iteration,
                                                          std::move(policy), source.mask_bits));
    out.names = source.trace->op_names();
    return out;
  }
  SWAPPLAN_ASSIGN_OR_RETURN(out.mp, MakeMatchablePolicy(std::move(policy)));
  out.names = out.mp.policy.runtime.op_names;
  return out;
}

absl::StatusOr<PolicyLibrary> PolicyLibrary::Create(const PolicyLibraryOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(StageTracker tracker, StageTracker::Create(options.tracker));
  return PolicyLibrary(options, std::move(tracker));
}

LibraryKey& PolicyLibrary::KeyFor(const InputSignature& sig) {
  const InputSignature key = options_.by_input ? sig : InputSignature{};
  for (LibraryKey& k : keys_) {
    if (k.sig == key) return k;
  }
  keys_.emplace_back();
  keys_.back().sig = key;
  return keys_.back();
}

PolicyLibrary::Choice PolicyLibrary::Choose(const InputSignature& sig) {
  Choice choice;
  if (stage_ == Stage::kWarmUp) return choice;
  auto pick = [&](const LibraryKey& k) { return stage_ == Stage::kStable ? k.stable : k.latest; };
  PolicySet set;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (pick(keys_[i]) >= 0) set.Insert(keys_[i].sig, static_cast<int32_t>(i));
  }
  const PolicySet::Choice c = set.Select(options_.by_input ? sig : InputSignature{});
  if (c.index < 0) return choice;
  choice.key = &keys_[c.index];
  choice.policy = pick(*choice.key);
  choice.exact = c.exact;
  return choice;
}

namespace {

// Whether a is a better long-term policy than b (StableChoice::kBestRun).
bool BetterRun(const LibraryPolicy& a, const LibraryPolicy& b) {
  if ((a.runs > 0) != (b.runs > 0)) return a.runs > 0;
  if (a.runs > 0) {
    const bool a_clean = a.total.trouble == 0, b_clean = b.total.trouble == 0;
    if (a_clean != b_clean) return a_clean;
    // Compare per-run means without dividing: x / a.runs < y / b.runs.
    const int64_t ao = a.total.allocation_failures * b.runs;
    const int64_t bo = b.total.allocation_failures * a.runs;
    if (ao != bo) return ao < bo;
    const int64_t at = a.total.time_ns * b.runs, bt = b.total.time_ns * a.runs;
    if (at != bt) return at < bt;
  }
  return a.id < b.id;
}

// StableChoice::kBestCandidate among `candidates` (-1: none).
int32_t BestCandidate(absl::Span<const LibraryPolicy> candidates) {
  bool all_simulated = true;
  for (const LibraryPolicy& p : candidates) {
    if (p.runs > 0 && p.simulated_iteration_time_ns <= 0) all_simulated = false;
  }
  int32_t best = -1;
  std::tuple<bool, int64_t, int32_t> best_key{true, std::numeric_limits<int64_t>::max(), 0};
  for (const LibraryPolicy& p : candidates) {
    if (p.runs == 0) continue;
    const int64_t time = all_simulated ? p.simulated_iteration_time_ns : p.total.clock_ns / p.runs;
    const std::tuple<bool, int64_t, int32_t> key{p.total.trouble > 0, time, p.id};
    if (best < 0 || key < best_key) {
      best = p.id;
      best_key = key;
    }
  }
  if (best < 0 && !candidates.empty()) best = candidates.back().id;
  return best;
}

}  // namespace

int32_t PolicyLibrary::StablePolicy(const LibraryKey& key) const {
  switch (options_.stable_choice) {
    case StableChoice::kLatest:
      return key.latest;
    case StableChoice::kBestCandidate: {
      const size_t first = std::min(key.candidates_begin, key.policies.size());
      return BestCandidate(absl::MakeConstSpan(key.policies).subspan(first));
    }
    case StableChoice::kBestRun:
      break;
  }
  const LibraryPolicy* best = nullptr;
  for (const LibraryPolicy& p : key.policies) {
    if (best == nullptr || BetterRun(p, *best)) best = &p;
  }
  return best == nullptr ? -1 : best->id;
}

absl::Status PolicyLibrary::Plan(LibraryKey& key, PlanFn plan) {
  SWAPPLAN_ASSIGN_OR_RETURN(PlanOutcome made, plan(key));
  if (made.policy < 0) {
    if (options_.drop_latest_without_plan) key.latest = -1;
    return absl::OkStatus();
  }
  LibraryPolicy p;
  p.id = made.policy;
  p.simulated_iteration_time_ns = made.simulated_iteration_time_ns;
  p.planner = std::move(made.planner);
  key.policies.push_back(std::move(p));
  key.latest = made.policy;
  return absl::OkStatus();
}

absl::StatusOr<StageDecision> PolicyLibrary::EndIteration(const EndedIteration& end, PlanFn plan) {
  const Stage current = stage_;
  PolicyOutcome outcome;
  outcome.missed = end.missed;
  StageDecision d = tracker_.Observe(end.tokens, outcome);
  if (current == Stage::kGenPolicy && end.policy >= 0 && !end.policy_of_other_input) {
    // A run of the key's own policy: what its Stable choice weighs.
    LibraryKey& key = KeyFor(end.input);
    for (LibraryPolicy& p : key.policies) {
      if (p.id != end.policy) continue;
      ++p.runs;
      p.total.time_ns += end.run.time_ns;
      p.total.clock_ns += end.run.clock_ns;
      p.total.allocation_failures += end.run.allocation_failures;
      p.total.trouble += end.run.trouble;
    }
  }
  stage_ = d.stage;
  if (d.stage == Stage::kWarmUp) {
    // Leaving a sequence: remember its keys if it reached Stable.
    const bool had_stable = std::any_of(keys_.begin(), keys_.end(),
                                        [](const LibraryKey& k) { return k.stable >= 0; });
    if (had_stable && options_.remembered_sequences > 0) {
      remembered_.push_back({stable_tokens_, std::move(keys_)});
      if (static_cast<int32_t>(remembered_.size()) > options_.remembered_sequences) {
        remembered_.erase(remembered_.begin());
      }
    }
    keys_.clear();
    // Back on a sequence left before: its keys, straight to Stable.
    for (size_t f = remembered_.size(); f-- > 0;) {
      if (!SameOpSequence(options_.tracker, end.tokens, remembered_[f].tokens)) continue;
      keys_ = std::move(remembered_[f].keys);
      stable_tokens_ = std::move(remembered_[f].tokens);
      remembered_.erase(remembered_.begin() + static_cast<std::ptrdiff_t>(f));
      tracker_.ResumeStable();
      stage_ = d.stage = Stage::kStable;
      d.change = StageChange::kKnownSequence;
      ++known_sequence_returns_;
      break;
    }
    return d;
  }
  const bool detailed = d.stage == Stage::kGenPolicy ||
                        (current == Stage::kGenPolicy && options_.plan_leaving_genpolicy);
  if (end.can_plan && detailed) SWAPPLAN_RETURN_IF_ERROR(Plan(KeyFor(end.input), plan));
  if (end.can_plan && current == Stage::kStable && d.stage == Stage::kStable &&
      end.policy_of_other_input && options_.by_input) {
    // A Stable iteration whose input no policy was made for ran the nearest
    // one: its own is planned now and runs from its next iteration on.
    LibraryKey& key = KeyFor(end.input);
    SWAPPLAN_RETURN_IF_ERROR(Plan(key, plan));
    key.stable = key.latest;
  }
  if (current == Stage::kGenPolicy && d.stage == Stage::kStable) {
    stable_tokens_.assign(end.tokens.begin(), end.tokens.end());
    for (LibraryKey& k : keys_) {
      k.stable = StablePolicy(k);
      k.candidates_begin = k.policies.size();
    }
  }
  return d;
}

}  // namespace swapplan
