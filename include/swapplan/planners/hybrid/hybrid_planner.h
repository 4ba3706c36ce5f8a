// The hybrid planner: per candidate activation, keep it, swap it (with the
// Chameleon planner's prefetch and release machinery) or recompute it just
// before its first backward use (trace/recompute.h), minimising the
// simulated iteration time under the budget.
//
// Candidates are the activations idle between a forward and a backward use
// whose producer can be re-run (RecomputeBlocker::kNone). Each is ranked by
// rho = (re-running its producer) / (copying it in over the h2d link): the
// time a recompute costs per unit of link time it frees. For each cut-off
// alpha of a geometric ladder (options: min_ratio .. max_ratio, `variants`
// steps, plus 0 = swap only and infinity = every candidate):
//   1. every candidate with rho <= alpha becomes a RECOMPUTE item (dropped
//      after its last forward use, re-run before its first backward use);
//      the resolver groups them into recipes (chains, transients), drops
//      what cannot run, and states each recipe's exact cost;
//   2. the Chameleon planner plans the swaps on what is left
//      (ChameleonOverlay): the curve less the dropped bytes plus the
//      transients, the timeline stretched by the recomputations, the
//      dropped tensors excluded, every recipe input pinned on the device —
//      so the link time the recomputations free goes to the tensors that
//      still need it;
//   3. the merged policy's recipes are made exact again (a swap can turn a
//      recipe input into a chain) and the evaluation simulator times it.
// Before step 2, a chosen tensor that another recipe produces on the way
// (a chain) has its swap_in_op moved to that recipe's op, so it is re-run
// once, as a target (hoisting). When the hoisted variant does not fit (the
// swap step gives up or the simulator runs out of memory), the same set is
// planned again without hoisting: the chained tensor is re-made as a
// transient of the earlier recipe and again at its own use, which holds
// less memory in between. Rho is the cost of the tensor's own recipe with
// everything else where the trace has it. The fastest variant without OOM
// that passes the checker wins (checked in time order); ties go to fewer
// recomputations.
//
// Pruning (prune_variants, default on): the cut-offs are planned in
// ascending order; before planning one, ideal + one run of each distinct
// producer of its chosen tensors (every RECOMPUTE item re-runs its
// producer, and with no host dispatch time the simulated compute stream
// runs every op and every stated recomputation back to back) is compared
// with the fastest variant so far that passes the checker; when the bound
// exceeds it, this cut-off and every larger one (whose sets contain this
// one) are skipped. It assumes every chosen tensor stays a RECOMPUTE item
// (the exactness step drops an item only when its recipe cannot run).
//
// swap_only_last (on by default; a heuristic, not a bound): the recompute
// cut-offs first, ascending and pruned as above, stopping at the first
// variant slower than the fastest so far; the swap-only cut-off last, and
// only when no larger set's variant beats the smallest recompute set's,
// passes the checker and is within swap_only_skip_overhead_fraction (5 %)
// of the ideal time — so skipping it costs at most that fraction. Never
// faster than the full order (swap_only_last=false: it plans a subset of its
// sets, or sets it pruned); same policies on the bundled traces
// (docs/hybrid.md, "Planning time").
//
//   compute  fwd ... [p(S)] ... [last use S] ............ [p(S) again][use S]
//   h2d                                     |== A in ==|
//   device   S resident ------------------->  S off      S back ------------>
//
//   HybridPlanner planner;
//   absl::StatusOr<Policy> p = planner.Plan(problem);  // items SWAP + RECOMPUTE
//
// Complexity: (planned variants) × ((hoisting rounds + 1) × resolution +
// Chameleon + simulation) + one check per variant the pruning or the final
// choice asks about, rounds <= 16; planned variants <= 2 × (variants + 2)
// (a retry without hoisting only after a failure), and with pruning only
// the cut-offs below the first one whose bound exceeds the best time: on
// the 32-layer llama trace 2 to 3 of the 6 distinct sets. The hoisting's
// last resolution is the exactness step's input, and the exactness step's
// last resolution is the simulator's (Simulator::RunResolved): no policy is
// resolved twice. The variants', the simulator's and the checker's
// resolutions share one PolicyResolver, RecomputeAnalysis and RecipeMemo
// (policy/resolver.h, Simulator::RunShared, CheckPolicyShared): a recipe is
// walked once per distinct (position, targets, availability answers) over
// the whole plan.
// A resolution is O(ops × tiers + items log items + uses of the items'
// tensors + memo lookups) plus the walks of its new recipes (each O(chain
// × log chain)).
#ifndef SWAPPLAN_PLANNERS_HYBRID_HYBRID_PLANNER_H_
#define SWAPPLAN_PLANNERS_HYBRID_HYBRID_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/planners/option_table.h"
#include "swapplan/planners/planner.h"

namespace swapplan {

struct HybridOptions {
  // Smallest non-zero cut-off on rho = recompute time / h2d copy time.
  double min_ratio = 0.01;
  // Largest finite cut-off on rho.
  double max_ratio = 2.0;
  // Finite cut-offs tried between min_ratio and max_ratio (geometric), on
  // top of swap-only and recompute-every-candidate.
  int32_t variants = 6;
  // Activations smaller than this are not recomputed.
  int64_t min_tensor_bytes = 0;
  // Activations smaller than this are not swapped (the swap step's
  // Chameleon min_tensor_bytes; the same default).
  int64_t swap_min_tensor_bytes = 1 << 20;
  // Logical layers for the swap planning (0: the trace's model_layers, else
  // Chameleon's default).
  int32_t logical_layers = 0;
  // Skip a cut-off (and every larger one) when the ideal time plus one
  // re-run of each distinct producer of its chosen tensors exceeds the
  // simulated time of a variant already planned that passes the checker.
  // A bound while every chosen tensor stays a RECOMPUTE item (exactness
  // drops an item only when its recipe cannot run; docs/hybrid.md); false:
  // every cut-off is planned and simulated.
  bool prune_variants = true;
  // A heuristic order (not a bound; on by default): the recompute sets
  // first, ascending, stopping at the first variant slower than the fastest
  // so far; the swap-only set last, and only when no larger set's variant
  // beats the smallest recompute set's, passes the checker and is within
  // swap_only_skip_overhead_fraction of the ideal time. Assumes the
  // simulated time is unimodal along the ladder; saves the swap-only plan
  // where a recompute set wins (docs/hybrid.md, "Planning time"). false:
  // every set in ascending order (pruned as above).
  bool swap_only_last = true;
  // With swap_only_last: the largest overhead over the ideal time (a
  // fraction of it) at which the swap-only plan may be skipped. The
  // swap-only variant takes at least the ideal time, so skipping it costs at
  // most this fraction; 0 skips it only when a variant already runs at the
  // ideal time.
  double swap_only_skip_overhead_fraction = 0.05;

  // InvalidArgument unless 0 < min_ratio <= max_ratio, variants >= 1,
  // min_tensor_bytes, swap_min_tensor_bytes and logical_layers >= 0 and
  // swap_only_skip_overhead_fraction is finite and >= 0.
  absl::Status Validate() const;
};

// The one declaration of the hybrid options (planners/option_table.h).
const OptionTable<HybridOptions>& HybridOptionTable();

class HybridPlanner : public Planner {
 public:
  explicit HybridPlanner(HybridOptions options = {}) : options_(options) {}

  std::string name() const override { return "hybrid"; }
  const HybridOptions& options() const { return options_; }
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  std::vector<OptionInfo> DescribeOptions() const override {
    return HybridOptionTable().Describe(options_);
  }

 protected:
  // ResourceExhausted when no variant fits the budget (the swap-only
  // variant's message, which says what is missing where).
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  HybridOptions options_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_HYBRID_HYBRID_PLANNER_H_
