// Internal: the recomputation part of the policy resolver (resolver.h,
// ResolvedRecompute), split from resolver.cc.
#ifndef SWAPPLAN_SRC_POLICY_RESOLVER_RECOMPUTE_H_
#define SWAPPLAN_SRC_POLICY_RESOLVER_RECOMPUTE_H_

#include <cstdint>
#include <vector>

#include "swapplan/device/device_model.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// Groups the accounted RECOMPUTE items of `rp` by position, plans each
// group's recipe (RecomputeAnalysis on `device`, availability from the
// tensors' positions and the accounted items' windows; `slot_of_tensor`
// maps a dense tensor id to its index in rp->tensors or -1), fills
// rp->recomputes and appends not-recomputable / recompute-understated
// issues. Nothing when there is no RECOMPUTE item.
// `analysis` (may be null: built here) and `memo` (may be null) are
// ResolveOptions::recompute_analysis and ::recipe_memo.
// O(items + recipe sizes) plus RecomputeAnalysis::Build when there is one
// and `analysis` is null; a memo hit costs the questions its walk asked.
void ResolveRecomputations(const Trace& trace, const DeviceModel& device,
                           const std::vector<int32_t>& slot_of_tensor,
                           const RecomputeAnalysis* analysis, RecipeMemo* memo,
                           ResolvedPolicy* rp);

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_POLICY_RESOLVER_RECOMPUTE_H_
