// Advice from a planner comparison (eval/compare.h): does the iteration fit
// without swapping, which policy is best and which comes second, and what
// limits a policy, in one line — the engine of `swapplan advise`, and the
// "what limits" notes of `swapplan compare` and of the HTML report.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(Comparison c, ComparePlanners(trace, options));
//   SWAPPLAN_ASSIGN_OR_RETURN(Advice a, ChooseAdvice(c));
//   if (a.best >= 0) {
//     const PlannerOutcome& best = c.rows[a.best];
//     std::string why = OutcomeNote(trace, c.iteration, best);
//   }
//
// Ranking. Candidates are the rows that are feasible (a valid policy whose
// simulated run stays within the budget) and judged with the budget (not
// `ideal`, which has unlimited memory). They are ordered by simulated
// iteration time, then bytes moved (d2h + h2d), then row order (the
// registry's: noswap before chameleon, so a budget the peak fits is advised
// as "no swapping" when nothing is faster).
//
// Which planners advise runs (AdvisePlanners): the default set — every
// planner that plans in milliseconds (PlannerInfo::in_default_set: hybrid
// and hyperoffload included) — plus the genetic search (the advisor) when a
// time limit is given; the others are listed with why they were skipped.
// `swapplan advise` also runs the search (kFallbackSearchNs) when nothing
// of the default set reaches the budget.
//
// For an executor (`advise --executor runtime|matched`, as the planner
// chain's `executable`, planners/chain.h): only policies it can run are
// candidates (WhyNotExecutable); the others are listed with the reason
// (Advice::not_executable). HyperOffload then plans without reordering
// (and, for the runtime, with the host as its only tier), and the search,
// whose policies always reorder, is skipped.
//
// Complexity: ChooseAdvice O(rows); OutcomeNote O(1) (plus the op name);
// AdvisePlanners O(registered planners).
#ifndef SWAPPLAN_EVAL_ADVISE_H_
#define SWAPPLAN_EVAL_ADVISE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/chain.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct Advice {
  // The unswapped peak of the iteration is within the budget.
  bool fits_without_swapping = false;
  // Budget - unswapped peak: what is left over (>= 0) or missing (< 0).
  int64_t headroom_bytes = 0;
  // Indices into Comparison::rows; -1 when there is none (no candidate, or
  // only one for runner_up).
  int32_t best = -1;
  int32_t runner_up = -1;
  // Candidates (see Ranking above).
  int32_t num_feasible = 0;
  // Feasible rows the executor cannot run (row, reason), in row order.
  struct NotExecutable {
    int32_t row = -1;
    std::string reason;
  };
  std::vector<NotExecutable> not_executable;
};

// The planners advise runs, in registry order, and those it skips.
struct PlannerSelection {
  std::vector<std::string> run;
  struct Skipped {
    std::string planner;
    std::string reason;
  };
  std::vector<Skipped> skipped;
  // Planner options for `run` ("advisor.time-limit-ns=10s" with a search).
  std::vector<CompareOptions::PlannerOption> options;
};
// The default set (ideal included: the overhead reference) and, with
// search_time_limit_ns > 0, the advisor limited to that long; skipped: the
// advisor otherwise (a search, seconds to minutes) and every other planner
// outside the default set with its reason.
PlannerSelection AdvisePlanners(int64_t search_time_limit_ns,
                                ChainExecutor executor = ChainExecutor::kAny);
// The search's time limit when the default set finds nothing (10 s).
inline constexpr int64_t kFallbackSearchNs = 10'000'000'000;

// Returns the advice for `c`. InvalidArgument when the comparison has no
// rows, or a feasible row has no simulation (not a ComparePlanners result).
// With an executor other than kAny, a feasible row whose policy it cannot
// run (or that kept no policy) is no candidate.
absl::StatusOr<Advice> ChooseAdvice(const Comparison& c,
                                    ChainExecutor executor = ChainExecutor::kAny);

// Bytes a row's policy moves: d2h + h2d of its simulation; 0 without one.
int64_t BytesMoved(const PlannerOutcome& row);

// What limits one row, in one line (the notes below `swapplan compare`'s
// table): why it did not plan, the checker's violation, the simulated OOM
// (op, requested, free), or for a feasible policy: "fits without
// swapping", recomputation, stalls (total, by cause, the longest and the
// tensor it waited for), or "all N of copies hidden". `iteration` is the
// comparison's, for op names.
std::string OutcomeNote(const Trace& trace, int32_t iteration, const PlannerOutcome& row);

// "op 7 (aten::mm)": local op `op` of `iteration`.
std::string LocalOpText(const Trace& trace, int32_t iteration, int32_t op);

// "1.50 GiB (1610612736 B)", or "100 B" below 1 KiB.
std::string BytesWithExact(int64_t bytes);

}  // namespace swapplan

#endif  // SWAPPLAN_EVAL_ADVISE_H_
