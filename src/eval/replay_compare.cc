// Per-iteration comparison of a simulated and an executed replay
// (replay_execute.h).
#include <string>
#include <vector>

#include "swapplan/eval/replay_execute.h"

namespace swapplan {

const std::vector<std::string>& ComparedReplayFields() {
  static const std::vector<std::string> kFields = {
      "stage",         "policy",      "items",      "items found",
      "items missed",  "uses while off device", "allocation failures", "passive swaps",
      "unresolved OOMs", "policy swaps",  "next stage", "policy made"};
  return kFields;
}

void CompareReplayRows(const ReplayRow& simulated, const ReplayRow& executed,
                       std::vector<RowDifference>* out) {
  auto figures = [](const ReplayRow& r) {
    return std::vector<int64_t>{static_cast<int64_t>(r.stage),
                                r.policy,
                                r.items,
                                r.matched + r.mismatched,
                                r.missed,
                                r.uses_while_off_device,
                                r.ooms,
                                r.passive_swaps,
                                r.unresolved_ooms,
                                r.policy_swaps,
                                static_cast<int64_t>(r.next_stage),
                                r.generated_policy >= 0 ? 1 : 0};
  };
  const std::vector<int64_t> a = figures(simulated), b = figures(executed);
  const std::vector<std::string>& names = ComparedReplayFields();
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] != b[k]) out->push_back({simulated.iteration, names[k], a[k], b[k]});
  }
}

}  // namespace swapplan
