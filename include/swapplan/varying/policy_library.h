// Policy library: the one stage machine of GenPolicy and Stable, shared by
// the runtime shim (runtime/runtime.h, "Stages") and the multi-iteration
// replay (eval/replay.h). It owns the stage tracker (stage_tracker.h), the
// policies made per input signature (policy_set.h) since the last WarmUp,
// the choice of each signature's Stable policy, and the policy sets of op
// sequences the run left (remembered sequences). What a policy *is* — a
// loaded, matchable policy with its matcher (the runtime), a planned and
// simulated one (the replay) — stays with the driver, under the id it
// gives the library; so does planning: the driver's planner runs when the
// library asks for a key's policy (the runtime's provider, the replay's
// planner chain, planners/chain.h), and the library records which planner
// served each signature. How a policy is prepared for a driver — from its
// own runtime section or from the trace it was made for — is decided once,
// in PrepareForMatching (below).
//
// Per iteration the driver calls, in this order:
//   Choose(sig)         the policy to run for input signature `sig` in the
//                       current stage: WarmUp none; GenPolicy the key's
//                       latest; Stable the key's kept one; a key without one
//                       takes the nearest key's (PolicySet), not exact.
//   EndIteration(end, plan)
//                       Algorithm 1 on the iteration's tokens and whether its
//                       policy missed -> the next stage. A GenPolicy
//                       iteration that ran its own key's policy counts as a
//                       run of it. Then:
//     next WarmUp       a sequence that reached Stable is remembered (at most
//                       remembered_sequences, the least recently left
//                       dropped); back on a remembered one (SameOpSequence):
//                       its keys, straight to Stable (kKnownSequence);
//     planning          when the next stage is GenPolicy, or this one was
//                       and plan_leaving_genpolicy: `plan` for the key of
//                       the input; a policy becomes its latest (and a
//                       candidate), none clears it when
//                       drop_latest_without_plan; a Stable iteration that
//                       ran another key's policy (by_input) plans its own,
//                       which becomes its Stable policy;
//     GenPolicy->Stable each key keeps its Stable policy (StableChoice).
//
//   PolicyLibraryOptions o;  o.tracker.warmup_iterations = 1;
//   SWAPPLAN_ASSIGN_OR_RETURN(PolicyLibrary lib, PolicyLibrary::Create(o));
//   PolicyLibrary::Choice c = lib.Choose(sig);      // c.policy: an id, -1 none
//   ... run the iteration with the driver's policy c.policy ...
//   SWAPPLAN_ASSIGN_OR_RETURN(StageDecision d, lib.EndIteration(end,
//       [&](LibraryKey& key) -> absl::StatusOr<PlanOutcome> { ... }));
//
// Complexity: Choose O(keys); EndIteration O(tokens) for the tracker plus
// O(keys × policies) on a stage change and O(remembered × tokens) on a
// WarmUp; memory: the keys' policy statistics (O(policies since WarmUp))
// and the remembered sequences' tokens and keys.
#ifndef SWAPPLAN_VARYING_POLICY_LIBRARY_H_
#define SWAPPLAN_VARYING_POLICY_LIBRARY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/policy/policy.h"
#include "swapplan/trace/trace.h"
#include "swapplan/varying/matcher.h"
#include "swapplan/varying/policy_set.h"
#include "swapplan/varying/stage_tracker.h"

namespace swapplan {

// How each key's Stable policy is chosen when GenPolicy moves to Stable.
enum class StableChoice : uint8_t {
  // The key's latest: planned on the most observations (observed or
  // envelope planning).
  kLatest = 0,
  // The runtime's choice among the key's candidates (made since GenPolicy
  // was entered): no trouble in its GenPolicy runs first, then the shortest
  // iteration — the policies' simulated_iteration_time_ns when every
  // candidate that ran has one, else the mean clock time of its runs — then
  // the earliest id; none ran: the latest candidate.
  kBestCandidate = 1,
  // The paper's: the best run of all the key's policies since WarmUp —
  // policies that ran first, no trouble first, then fewer allocation
  // failures and a shorter time per run, then the earliest id.
  kBestRun = 2,
};
// "latest", "best-candidate", "best-run".
absl::string_view StableChoiceName(StableChoice c);

struct PolicyLibraryOptions {
  // Algorithm 1 (stage_tracker.h).
  StageTrackerOptions tracker;
  // One key per input signature; false: one key for every input (the
  // paper's single policy).
  bool by_input = true;
  // See StableChoice.
  StableChoice stable_choice = StableChoice::kBestCandidate;
  // The last GenPolicy iteration (the next stage is Stable) is planned on
  // too (observed or envelope planning: one more observation).
  bool plan_leaving_genpolicy = false;
  // A plan that makes no policy leaves the key none to run until the next
  // one (planning on the iteration just seen: the runtime's rule); false:
  // the key keeps its previous latest.
  bool drop_latest_without_plan = false;
  // Policy sets of op sequences the run left after reaching Stable, kept
  // for when it comes back (>= 0; 0: WarmUp forgets).
  int32_t remembered_sequences = 4;

  // InvalidArgument naming the field (and the tracker options' errors).
  absl::Status Validate() const;
};

// One GenPolicy iteration run with a policy made for its input signature.
struct PolicyRun {
  // The iteration's time: the replay's simulated time; the runtime's
  // clock (kBestRun compares it).
  int64_t time_ns = 0;
  // The iteration's op-clock time (kBestCandidate's mean).
  int64_t clock_ns = 0;
  // Allocations that did not fit (Algorithm 3 ran, resolved or not).
  int64_t allocation_failures = 0;
  // Unresolved OOMs and uses while off device: each a crash in a real run.
  int64_t trouble = 0;
};

// A policy of the library: the driver's id and what its GenPolicy runs
// showed (summed).
struct LibraryPolicy {
  int32_t id = -1;
  // Policy::simulated_iteration_time_ns of the policy (0: none).
  int64_t simulated_iteration_time_ns = 0;
  // The planner that made it (Policy::planner: the chain's member).
  std::string planner;
  int32_t runs = 0;
  PolicyRun total;
};

// What a driver keeps per key beside the library's figures (the runtime's
// records, the replay's envelope and observed iterations and its policies):
// created by the driver on first use, moved with the key when its sequence
// is remembered, dropped with it.
struct LibraryKeyData {
  virtual ~LibraryKeyData() = default;
};

// One input signature's policies since the last WarmUp.
struct LibraryKey {
  InputSignature sig;  // {} when not by_input
  std::vector<LibraryPolicy> policies;  // oldest first
  // Ids of the policy GenPolicy runs and of the one Stable runs; -1: none.
  int32_t latest = -1;
  int32_t stable = -1;
  // policies[candidates_begin, end) were made since GenPolicy was entered.
  size_t candidates_begin = 0;
  std::unique_ptr<LibraryKeyData> data;

  // The policy `id`, or nullptr.
  const LibraryPolicy* Find(int32_t id) const;
  // The driver's data, made (default-constructed) on first use; T must be
  // the one type this driver uses.
  template <typename T>
  T& Data() {
    if (data == nullptr) data = std::make_unique<T>();
    return static_cast<T&>(*data);
  }
};

// What the driver's planner made for a key.
struct PlanOutcome {
  int32_t policy = -1;  // the new policy's id; -1: none (failed or declined)
  int64_t simulated_iteration_time_ns = 0;
  std::string planner;
};

// The end of one iteration, as the driver saw it.
struct EndedIteration {
  // Its op tokens (the tracker's), and its input signature.
  absl::Span<const int32_t> tokens;
  InputSignature input;
  // The library's policy it ran (Choose; -1: none, or one the driver
  // loaded itself), and whether that was another key's.
  int32_t policy = -1;
  bool policy_of_other_input = false;
  // That policy missed: an allocation did not fit, or one of its tensors
  // was used while off device.
  bool missed = false;
  PolicyRun run;
  // The driver plans now (false: no provider, or a policy of its own runs).
  bool can_plan = true;
};

// Where the match tables of a policy that enters the library's driver come
// from — the one rule of the runtime shim (LoadPolicy, LoadPolicyForTrace,
// its provider's policies) and the replay's planned policies.
struct MatchSource {
  // The trace the policy was made for (its iteration `iteration`); nullptr:
  // none.
  const Trace* trace = nullptr;
  int32_t iteration = 0;
  // Rebuild the runtime section from `trace` even when the policy has one
  // (its keys then have mask_bits bits, its fingerprint is the iteration's).
  bool rebuild = false;
  int32_t mask_bits = 32;
};

struct PreparedPolicy {
  MatchablePolicy mp;
  // The op-name table mp.codes indexes (NameId order): the trace's, or the
  // policy's runtime op_names.
  std::vector<std::string> names;
};

// `policy` prepared for matching: from source.trace when one is given and
// source.rebuild or the policy has no runtime section
// (MakeMatchablePolicy(trace, ...)); otherwise from its own runtime section
// (MakeMatchablePolicy(policy): a v1 policy without a trace is
// InvalidArgument, "no runtime section"). Errors as those.
// O(items + names + ops).
absl::StatusOr<PreparedPolicy> PrepareForMatching(Policy policy, const MatchSource& source);

class PolicyLibrary {
 public:
  // InvalidArgument for bad options.
  static absl::StatusOr<PolicyLibrary> Create(const PolicyLibraryOptions& options);

  struct Choice {
    int32_t policy = -1;  // id; -1: none
    bool exact = true;    // made for this input (false: the nearest key's)
    LibraryKey* key = nullptr;  // the key it belongs to
  };
  // The policy to run in the current stage for input `sig`. O(keys).
  Choice Choose(const InputSignature& sig);

  using PlanFn = absl::FunctionRef<absl::StatusOr<PlanOutcome>(LibraryKey& key)>;
  // Ends the iteration as described at the top; returns the tracker's
  // decision with the next stage (kKnownSequence when a remembered
  // sequence came back). `plan`'s errors are returned as they are.
  absl::StatusOr<StageDecision> EndIteration(const EndedIteration& end, PlanFn plan);

  // The stage of the next iteration (WarmUp before the first).
  Stage stage() const { return stage_; }
  // The key of `sig` (the one key when not by_input), made when new.
  LibraryKey& KeyFor(const InputSignature& sig);
  // The current sequence's keys, in order of creation.
  const std::vector<LibraryKey>& keys() const { return keys_; }
  // Returns to Stable on a remembered sequence so far.
  int32_t known_sequence_returns() const { return known_sequence_returns_; }
  const PolicyLibraryOptions& options() const { return options_; }

 private:
  PolicyLibrary(const PolicyLibraryOptions& options, StageTracker tracker)
      : options_(options), tracker_(std::move(tracker)) {}
  absl::Status Plan(LibraryKey& key, PlanFn plan);
  // The key's Stable policy by options_.stable_choice (-1: none).
  int32_t StablePolicy(const LibraryKey& key) const;

  struct Sequence {
    std::vector<int32_t> tokens;  // of the iteration that entered Stable
    std::vector<LibraryKey> keys;
  };

  PolicyLibraryOptions options_;
  StageTracker tracker_;
  Stage stage_ = Stage::kWarmUp;
  std::vector<LibraryKey> keys_;
  std::vector<int32_t> stable_tokens_;  // tokens of the iteration that entered Stable
  std::vector<Sequence> remembered_;    // most recently left last
  int32_t known_sequence_returns_ = 0;
};

}  // namespace swapplan

#endif  // SWAPPLAN_VARYING_POLICY_LIBRARY_H_
