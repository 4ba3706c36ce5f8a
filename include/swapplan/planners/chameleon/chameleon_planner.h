// The Chameleon planner (seeds 000/001 §4–5): from one recorded iteration, a
// device budget and the link bandwidths, choose which activations leave the
// device, when each swap-in is pre-triggered and when each device block is
// released — without per-op durations.
//
// Pipeline (every stage its own header):
//   logical_layers.h   Eq. (1) groups and their time estimates
//   mrl.h              memory reduction list from the unswapped curve
//   candidates.h       swap windows, candidate list, Eq. (2) scores
//   layer_simulator.h  layer budgets, swap-in pre-trigger, swap-out completion
//   this file          Algorithm 2 and the release-point repair rounds
//
// Algorithm 2, per round:
//   1. while the MRL is not empty: build the CL (unselected windows covering
//      an MRE) and score it; walk it in score order — a candidate whose
//      coverage still holds an MRE is scheduled if some layer fits its
//      swap-in (§5.4.1), and its size is removed from the MREs of its
//      estimated off-device window (earliest release .. swap-in); if no
//      candidate of the pass fits, the best one is scheduled with a stall
//      (and by default the rest of the CL after it, each in a layer if one
//      fits by then, else with a stall: options.h StallFallback).
//      An empty CL ends the round unsatisfied.
//   2. SetFreeTime: release points of all selected swaps (§5.4.2). A copy
//      queued behind others releases later than its estimate; one that
//      completes too late to leave any op off the device is dropped.
//   3. Replay the policy with its release points (the checker's exact byte
//      accounting). No op above the budget: done. Otherwise the MRL is
//      rebuilt from that replay and a new round selects more ("repair
//      round"); every round selects or drops at least one window for good,
//      so this terminates.
// If a round ends with an empty CL and MREs left, the maximal fallback
// (options.h) swaps every candidate for its whole idle window; if even that
// leaves an op above the budget — typically because the d2h link cannot copy
// out, before the peak, the bytes the budget needs gone — the release-wait
// fallback (options.h: ReleaseWait, default on) lets releases precede the
// copies' completion so the compute stream waits for them, a priced stall.
// Only if that fails too (or it is off) does Plan return ResourceExhausted:
//
//   <trace>: iteration 0: 120 bytes (120 B) still missing at op 5 (mm,
//   FORWARD) to fit the budget of 800 bytes, even with every one of the 2
//   candidate tensors off the device from its release to its first
//   backward use
//
// The policy's expected overhead is the sum of the stalls the layer
// simulator had to accept (stall fallbacks; for the maximal fallback, the
// h2d queue's waits on the stall-free timeline) — computed, never guessed.
//
//   ChameleonPlanner planner(ChameleonOptions{.layers = 32});
//   ChameleonExplanation why;
//   absl::StatusOr<Policy> p = planner.PlanExplained(problem, &why);
//
// Complexity, with n ops in the iteration, u uses, w windows, L layers,
// P passes over all rounds and R rounds: O(n + u + w log n) to prepare;
// each pass O(w log n + w log w) to build and sort the CL, then
// O(log n + log L) per candidate visited and O(log n) per MRE dropped; each
// round O(n + w log n) for release points and the replay. P and R are
// small in practice (a pass schedules every candidate that fits, and with
// the default batched stall fallback every candidate it needs); with
// StallFallback::kOnePerPass a slow link makes P the number of swaps.
#ifndef SWAPPLAN_PLANNERS_CHAMELEON_CHAMELEON_PLANNER_H_
#define SWAPPLAN_PLANNERS_CHAMELEON_CHAMELEON_PLANNER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/planners/chameleon/candidates.h"
#include "swapplan/planners/chameleon/logical_layers.h"
#include "swapplan/planners/chameleon/mrl.h"
#include "swapplan/planners/chameleon/options.h"
#include "swapplan/planners/planner.h"

namespace swapplan {

enum class ChameleonDecisionKind : uint8_t {
  // Swap-in placed in a layer with enough remaining h2d time.
  kScheduled,
  // Candidate passed over in this pass: no layer in its range fits.
  kNoLayerFits,
  // Candidate passed over: its coverage holds no MRE any more.
  kNoLongerNeeded,
  // No candidate of the pass fitted: the best one placed with a stall.
  kStallFallback,
  // Release point of a swap in the final policy.
  kReleased,
  // Copy out cannot complete before the swap-in: the swap is dropped.
  kDropped,
  // Release points left ops above the budget: another round.
  kRepairRound,
  // Algorithm 2 could not empty the MRL: every candidate swapped.
  kMaximalFallback,
  // Not even the maximal fallback fits (nor, when allowed, release waits).
  kInfeasible,
  // Release-wait fallback (options.h: ReleaseWait): the fallback starts, or
  // a release point placed before its copy out completes — the next op
  // waits for the copy.
  kReleaseWait,
};
// "scheduled", "no-layer-fits", "no-longer-needed", "stall-fallback",
// "released", "dropped", "repair-round", "maximal-fallback", "infeasible",
// "release-wait".
absl::string_view ChameleonDecisionKindName(ChameleonDecisionKind k);

struct ChameleonDecision {
  ChameleonDecisionKind kind = ChameleonDecisionKind::kScheduled;
  int32_t round = 0;
  int32_t pass = 0;
  // Index into ChameleonExplanation::windows; -1 for round-level decisions.
  int32_t window = -1;
  int32_t layer = -1;
  int32_t swap_in_op = -1;
  int32_t release_op = -1;
  double stall_ns = 0;
  // MRL after the decision: entry count always, the runs when snapshots are
  // on (ChameleonExplanation::mrl_snapshots).
  int32_t mrl_entries_after = 0;
  std::vector<MrlRange> mrl_after;
  std::string reason;
};

// One candidate list, as built at the start of a pass.
struct ChameleonPass {
  int32_t round = 0;
  int32_t pass = 0;
  int32_t mrl_entries = 0;
  std::vector<ScoredCandidate> candidates;
  // A pass of the release-wait fallback: coverage runs from the op after the
  // last forward use (not from SwapWindow::cover_begin).
  bool release_wait = false;
};

struct ChameleonExplanation {
  // MRL runs are recorded after every decision only for iterations of at
  // most this many ops (each snapshot costs O(MREs)).
  static constexpr int32_t kMaxSnapshotOps = 10000;

  int32_t iteration = 0;
  int32_t num_ops = 0;
  int64_t budget_bytes = 0;
  // Unswapped peak of the iteration (local op), and the peak of the result.
  int64_t peak_unswapped_bytes = 0;
  int32_t peak_unswapped_op = -1;
  int64_t peak_bytes = 0;
  int32_t peak_op = -1;
  int32_t layers_per_segment = 0;
  LayerCountSource layers_source = LayerCountSource::kDefault;
  DurationSource durations = DurationSource::kEstimated;  // where op times came from
  int64_t iteration_time_ns = 0;
  LinkBudget link_budget = LinkBudget::kPerDirection;
  std::vector<LogicalLayer> layers;
  // Final transfer time charged per layer and direction.
  std::vector<double> h2d_used_ns;
  std::vector<double> d2h_used_ns;
  std::vector<MrlRange> initial_mrl;
  int32_t initial_mrl_entries = 0;
  std::vector<SwapWindow> windows;
  std::vector<ChameleonPass> passes;
  std::vector<ChameleonDecision> decisions;
  int32_t rounds = 0;
  bool maximal_fallback_used = false;
  bool release_wait_used = false;
  bool mrl_snapshots = false;
  // Set when planning ended in ResourceExhausted.
  std::string infeasible;
};

// What another planner decided before the swaps are planned (the hybrid
// planner, planners/hybrid/hybrid_planner.h, drops tensors to recompute
// them): Algorithm 2 then plans on the curve and timeline those decisions
// leave, and never swaps what they need.
struct ChameleonOverlay {
  // Per local op (empty: none): bytes added to the unswapped curve
  // (negative: bytes already off the device).
  std::vector<int64_t> bytes_delta;
  // Per local op (empty: none): compute run just before the op, ns.
  std::vector<int64_t> extra_compute_ns;
  // Tensors that are not swap candidates.
  std::vector<TensorId> excluded;
  // (tensor, local op): the tensor must be on the device when that op
  // starts (a recomputation reads it): a swap window across the op ends
  // there instead (its first use becomes the op), or is dropped.
  std::vector<std::pair<TensorId, int32_t>> pinned;
  // The iteration's fingerprint when the caller has it (ComputeFingerprint,
  // or PolicyResolver::fingerprint), so that the policy does not compute it
  // again; empty: computed.
  std::optional<PolicyFingerprint> fingerprint;
};

class ChameleonPlanner : public Planner {
 public:
  explicit ChameleonPlanner(ChameleonOptions options = {}) : options_(options) {}

  std::string name() const override { return "chameleon"; }
  const ChameleonOptions& options() const { return options_; }

  // See Planner::SetOption: any ChameleonOptions field by its policy
  // parameter name (ChameleonOptions::Set), validated before it is kept.
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  // ChameleonOptionTable() with the current values as defaults.
  std::vector<OptionInfo> DescribeOptions() const override {
    return ChameleonOptionTable().Describe(options_);
  }
  // Planner::Plan, also filling `explanation` (when not null) with the
  // layers, MRL, every candidate list and every decision — also when the
  // result is ResourceExhausted.
  absl::StatusOr<Policy> PlanExplained(const PlanningProblem& problem,
                                       ChameleonExplanation* explanation);
  // Plan (no explanation) on top of `overlay`: the policy's items are the
  // swaps only, its expected overhead their stalls; the caller adds its own
  // items. InvalidArgument when a per-op vector of the overlay has the
  // wrong length.
  absl::StatusOr<Policy> PlanWithOverlay(const PlanningProblem& problem,
                                         const ChameleonOverlay& overlay);

 protected:
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  ChameleonOptions options_;
  // Where PlanPolicy explains itself (PlanExplained's argument), or null.
  ChameleonExplanation* explanation_ = nullptr;
  // PlanWithOverlay's argument while it runs, or null.
  const ChameleonOverlay* overlay_ = nullptr;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_CHAMELEON_CHAMELEON_PLANNER_H_
