// Local search on one policy (issue 20): the Advisor's genetic search keeps
// the best policy it has seen — a seed from another planner, or the plan of
// its best chromosome — as its elite and improves it by hill climbing, one
// item at a time, with the schedule and the pool fixed. Moves:
//
//   earlier  a swap-in triggered 1..64 positions earlier (not before its
//            release + 1): the copy has more time before the first use;
//   later    a swap-in triggered later (not after its first use): the block
//            is taken later, and the copy no longer delays others queued
//            after it;
//   hold     a release moved later (not to its swap-in): the op after it
//            waits less for the copy out;
//   free     a release moved earlier (not before its swap-out);
//   drop     an item removed: its copies leave the link;
//   add      a new SWAP item on an idle gap of a tensor between two uses:
//            out after the first, released soon after, back before the
//            second.
//
// Half of the moves aim at the longest stalls of the current policy (a
// stalled swap-in moves earlier, a stalled release later; the simulator's
// top_stalls name the op and the tensor), the rest are drawn at random. A
// move is kept when the simulated iteration time drops, or stays the same
// with fewer items, and the policy still fits (no OOM, the pool included):
// the policy never gets worse. A policy with RECOMPUTE items (a seed from
// the recompute or selective baseline) keeps its recipes valid and its
// stated times exact: a move that leaves any RECOMPUTE item
// not-recomputable or understated (policy/resolver.h) — a recompute point
// moved or split, an input of a recipe swapped out, the item carrying the
// stated time dropped — is not kept, so the checker passes the result.
// Deterministic for the random stream.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<PolicyImprover> li, PolicyImprover::Create(*problem));
//   SWAPPLAN_RETURN_IF_ERROR(li->Reset(elite));
//   SWAPPLAN_ASSIGN_OR_RETURN(int32_t kept, li->Improve(200, &rng));
//   li->policy(); li->time_ns();
//
// Threading: one improver per thread (it owns its simulator and scratch).
// Complexity: Reset O(ops + uses + items); each move one simulation,
// O(ops + items) (plus O(uses of a tensor) for `add`, and one resolution,
// O(ops + items + recipe ops), for a kept move on a policy with RECOMPUTE
// items).
#ifndef SWAPPLAN_SRC_PLANNERS_ADVISOR_LOCAL_SEARCH_H_
#define SWAPPLAN_SRC_PLANNERS_ADVISOR_LOCAL_SEARCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/planners/advisor/problem.h"
#include "swapplan/policy/policy.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/util/random.h"

namespace swapplan {

class PolicyImprover {
 public:
  // Stalls listed per simulation to aim the targeted moves at.
  static constexpr int32_t kTopStalls = 8;

  // An improver judging with `problem`'s simulator settings (capacity =
  // budget, the pool modelled). Errors from Simulator::Create.
  static absl::StatusOr<std::unique_ptr<PolicyImprover>> Create(const AdvisorProblem& problem);

  // Starts from `policy` (of the problem's iteration). InvalidArgument when
  // the simulator rejects it; ResourceExhausted when it does not fit.
  absl::Status Reset(Policy policy);
  // Tries `moves` moves; returns how many were kept. Requires Reset.
  // `stop` (may be empty), asked every 64 moves, ends the round early (the
  // search's time limit).
  int32_t Improve(int32_t moves, Rng* rng, const std::function<bool()>& stop = {});

  const Policy& policy() const { return policy_; }
  int64_t time_ns() const { return time_ns_; }
  // Moves tried and kept since Create.
  int64_t tried() const { return tried_; }
  int64_t kept() const { return kept_; }

 private:
  explicit PolicyImprover(const AdvisorProblem& problem) : problem_(problem) {}
  // Applies one move to `c` (a copy of policy_); false when not applicable.
  bool Earlier(Policy* c, size_t i, int32_t delta) const;
  bool Later(Policy* c, size_t i, int32_t delta) const;
  bool Hold(Policy* c, size_t i, int32_t delta) const;
  bool Free(Policy* c, size_t i, int32_t delta) const;
  bool Add(Policy* c, Rng* rng) const;
  // The item of `tensor_id` whose window ends at (use) or starts after
  // (release) position `p`; -1 when none.
  int32_t ItemUsedAt(uint64_t tensor_id, int32_t p) const;
  int32_t ItemReleasedBefore(uint64_t tensor_id, int32_t p) const;
  // True when `c` has no RECOMPUTE item, or every one can run its recipe
  // and states at least what the recipe costs (no not-recomputable or
  // recompute-understated issue).
  bool RecomputeExact(const Policy& c) const;

  const AdvisorProblem& problem_;
  std::optional<Simulator> sim_;
  std::optional<PolicyResolver> resolver_;  // judges RECOMPUTE claims
  DeviceModel device_;
  absl::flat_hash_map<uint64_t, int32_t> slot_of_;  // trace id -> slot
  Policy policy_;
  int64_t time_ns_ = 0;
  std::vector<StallSite> stalls_;
  // Under policy_'s schedule: position of each op, op at each position, and
  // each slot's use positions (CSR by AdvisorTensor::use_offset).
  std::vector<int32_t> pos_, sched_, use_pos_;
  int64_t tried_ = 0, kept_ = 0;
};

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_PLANNERS_ADVISOR_LOCAL_SEARCH_H_
