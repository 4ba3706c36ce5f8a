#include "swapplan/planners/registry.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/baselines/baselines.h"
#include "swapplan/planners/baselines/practice.h"
#include "swapplan/planners/chain.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/planners/hybrid/hybrid_planner.h"
#include "swapplan/planners/advisor/advisor_planner.h"
#include "swapplan/planners/hyperoffload/hyperoffload_planner.h"

namespace swapplan {
namespace {

template <typename T>
std::unique_ptr<Planner> Make() {
  return std::make_unique<T>();
}
std::unique_ptr<Planner> MakeVdnn() {
  return std::make_unique<LayerSwapPlanner>("vdnn", VdnnOptions());
}
std::unique_ptr<Planner> MakeBucket() {
  return std::make_unique<LayerSwapPlanner>("bucket", BucketOptions());
}

// One line per planner: name, description, unlimited memory, in compare's
// default set, factory.
const PlannerInfo kPlanners[] = {
    {"ideal", "no swapping, unlimited memory (the reference for overhead)", true, true,
     &Make<IdealPlanner>},
    {"noswap", "no swapping; feasible only when the unswapped peak fits", false, true,
     &Make<NoSwapPlanner>},
    {"chameleon", "logical layers, MRL, Eq. 2 candidates, logical-layer simulator (seeds 000/001)",
     false, true, &Make<ChameleonPlanner>},
    {"recompute", "full recomputation: drop each layer's activations, re-run its forward", false,
     true, &Make<RecomputePlanner>},
    {"vdnn", "every activation out, released at its layer's end, prefetched 1 layer ahead", false,
     true, &MakeVdnn},
    {"lru", "ODSwap: on-demand LRU eviction, prefetch in the previous iteration's order", false,
     true, &Make<LruPlanner>},
    {"bucket", "SmartSwap v2-like: activations >= 20 MiB out per layer, back 1 layer early", false,
     true, &MakeBucket},
    // It plans several Chameleon variants and simulates each (cut-offs
    // pruned by a lower bound): 2.4-3.9x Chameleon's CPU time on the
    // 32-layer trace (docs/hybrid.md, "Planning time"), milliseconds.
    {"hybrid", "per tensor keep / swap (Chameleon machinery) / recompute before the backward use",
     false, true, &Make<HybridPlanner>},
    // Not in the default set: a time-bounded search, seconds to minutes
    // where every other planner takes milliseconds (compare --planners,
    // advise --search).
    {"advisor", "SwapAdvisor: genetic search over schedule and size-class pool, Belady swaps (seed 002)",
     false, false, &Make<AdvisorPlanner>},
    // The baselines users pick in practice (issue 23, docs/baselines.md).
    {"selective", "Megatron selective recomputation: drop the attention core's activations, re-run it",
     false, true, &Make<SelectivePlanner>},
    {"te-offload", "TransformerEngine CPU offload: layers 0..k-1 out, smallest k that fits", false,
     true, &Make<TeOffloadPlanner>},
    {"save-on-cpu", "torch save_on_cpu: every saved activation out at save, back on use (no prefetch)",
     false, true, &Make<SaveOnCpuPlanner>},
    // Seed 003 (issue 17); milliseconds (its policies may reorder ops and
    // name the remote tier).
    {"hyperoffload", "HyperOffload: Store/Detach/Prefetch on a memory tier, prefetches placed by "
     "execution-order refinement (seed 003)", false, true, &Make<HyperOffloadPlanner>},
    // Not in the default set: the others again, in GenPolicy's order
    // (planners/chain.h) — replay, the runtime's providers and the service
    // plan with it.
    {"chain", "the first of chameleon, hybrid, hyperoffload, advisor (10 s) whose policy passes "
     "the checker at the budget (GenPolicy's planner chain)", false, false, &Make<ChainPlanner>},
};

}  // namespace

absl::Span<const PlannerInfo> RegisteredPlanners() { return kPlanners; }

const PlannerInfo* FindPlanner(absl::string_view name) {
  for (const PlannerInfo& p : kPlanners) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<Planner>> CreatePlanner(absl::string_view name) {
  const PlannerInfo* info = FindPlanner(name);
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown planner '", name, "' (known: ", PlannerNames(), ")"));
  }
  return info->create();
}

std::string PlannerNames() {
  std::string out;
  for (const PlannerInfo& p : kPlanners) absl::StrAppend(&out, out.empty() ? "" : ", ", p.name);
  return out;
}

std::string PlannerNamesOutsideDefaultSet() {
  std::string out;
  for (const PlannerInfo& p : kPlanners) {
    if (!p.in_default_set) absl::StrAppend(&out, out.empty() ? "" : ", ", p.name);
  }
  return out;
}

}  // namespace swapplan
