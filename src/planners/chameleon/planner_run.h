// Internal: the state of one ChameleonPlanner::PlanExplained call (see
// include/swapplan/planners/chameleon/chameleon_planner.h for the method).
// Split from the public header so that the driver (chameleon_planner.cc) and
// the maximal fallback (maximal_fallback.cc) share it without exposing it.
#ifndef SWAPPLAN_SRC_PLANNERS_CHAMELEON_PLANNER_RUN_H_
#define SWAPPLAN_SRC_PLANNERS_CHAMELEON_PLANNER_RUN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "planners/chameleon/layer_simulator.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/runtime_key.h"
#include "swapplan/util/units.h"

namespace swapplan::chameleon_internal {

// "12.5 ns".
std::string Ns(double ns);

enum class WindowState : uint8_t { kAvailable, kSelected, kRejected };

struct Selection {
  int32_t window = 0;
  SwapInPlacement in;
  int32_t release_op = -1;
  // Released before its copy out completes (release-wait fallback).
  bool release_waits = false;
};

class PlannerRun {
 public:
  PlannerRun(const ChameleonOptions& options, const PlanningProblem& problem,
             ChameleonExplanation* explanation, const ChameleonOverlay* overlay = nullptr)
      : options_(options),
        problem_(problem),
        trace_(*problem.trace),
        explanation_(explanation),
        overlay_(overlay) {}

  absl::StatusOr<Policy> Execute();

 private:
  absl::Status Prepare();
  // Algorithm 2 passes until the MRL is empty (true) or the CL is (false).
  bool SelectionPasses(int32_t round);
  // A candidate's standing now: the last MRE its coverage holds (-1: none)
  // and the op during which its copy out would complete, queued behind the
  // copies selected so far.
  struct Assessment {
    int32_t m_last = -1;
    int32_t release = 0;
  };
  Assessment Assess(int32_t window) const;
  // False (with a decision recorded) when the candidate cannot relieve any
  // MRE now; rejects it for good when its copy cannot complete in time.
  bool Usable(int32_t window, const Assessment& a, int32_t round, int32_t pass);
  // Records a placement: marks the window, enters its copy in the d2h
  // queue estimate, reduces the MRL over its estimated off-device ops.
  // `after_best`: a batched stall placement.
  void Schedule(int32_t window, const SwapInPlacement& p, const Assessment& a, int32_t round,
                int32_t pass, bool after_best = false);
  // Orders `s` for the d2h FIFO: swap-out op, then window index.
  void SortFifo(std::vector<Selection>* s) const;
  // Sorts `s` into FIFO order and sets release points (-1 for dropped ones).
  std::vector<SwapOutResult> Releases(std::vector<Selection>* s, SwapOutCompletion mode,
                                      LayerBudgets* budgets) const;
  // Releases of selections_; drops what cannot complete (refunding h2d).
  void ComputeReleases(int32_t round);
  // Bytes per op with `s` applied (release points set).
  std::vector<int64_t> Replay(const std::vector<Selection>& s) const;
  void RecordReleases(int32_t round, const std::vector<Selection>& s,
                      const std::vector<SwapOutResult>& results);
  // The maximal fallback (maximal_fallback.cc): the policy, or nothing with
  // its bytes per op in *over_budget_bytes when they exceed the budget.
  std::optional<Policy> MaximalFallback(std::vector<int64_t>* over_budget_bytes);
  // The release-wait fallback (release_wait.cc): the policy, or nothing with
  // the best bytes per op it reached in *over_budget_bytes and the number of
  // windows it could use in *candidates.
  std::optional<Policy> ReleaseWaitFallback(std::vector<int64_t>* over_budget_bytes,
                                            int32_t* candidates);
  // ResourceExhausted with the worst op of `bytes`; `release_waits` says
  // the release-wait fallback was tried (the message names its bound).
  absl::Status Infeasible(const std::vector<int64_t>& bytes, int32_t candidates,
                          bool release_waits);
  Policy BuildPolicy(const std::vector<Selection>& s, const std::vector<int64_t>& bytes,
                     double overhead_ns);
  void Decide(ChameleonDecision d);
  // Copies the windows, final layer charges and the peak of `bytes` into
  // the explanation (when there is one).
  void FinishExplanation(const std::vector<int64_t>& bytes);
  std::string OpText(int32_t local) const;
  std::string LayerText(int32_t layer) const;
  std::string WindowText(int32_t window) const;

  const ChameleonOptions& options_;
  const PlanningProblem& problem_;
  const Trace& trace_;
  ChameleonExplanation* explanation_;
  const ChameleonOverlay* overlay_;

  // The overlay applied to the windows: excluded tensors removed, pinned
  // ones cut at their pin (or dropped).
  void ApplyOverlayToWindows();

  OpIndex begin_ = 0;
  int32_t n_ = 0;
  int64_t budget_ = 0;
  std::vector<int64_t> base_;  // unswapped bytes per local op
  int32_t peak_unswapped_op_ = 0;
  std::optional<OpTimeline> timeline_;
  int32_t layers_per_segment_ = 0;
  LayerCountSource layers_source_ = LayerCountSource::kDefault;
  LogicalLayers layers_;
  std::optional<LayerBudgets> budgets_;
  std::optional<D2hQueue> queue_;
  std::vector<int32_t> fifo_slot_;  // per window: its slot in queue_
  OpFrequencyRanking ranking_;
  MemoryReductionList mrl_;
  std::vector<SwapWindow> windows_;
  std::vector<WindowState> state_;
  std::vector<int32_t> initial_candidates_;
  std::vector<Selection> selections_;
  std::vector<SwapOutResult> last_releases_;
};

}  // namespace swapplan::chameleon_internal

#endif  // SWAPPLAN_SRC_PLANNERS_CHAMELEON_PLANNER_RUN_H_
