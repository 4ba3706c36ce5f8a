#include "swapplan/curve/step_anatomy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace swapplan {

absl::StatusOr<StepAnatomy> AnalyzeStep(const Trace& trace, const MemoryCurve& curve,
                                        int32_t iteration) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("step anatomy: iteration ", iteration,
                                                   " is out of range: ", trace.source(),
                                                   " has ", trace.num_iterations()));
  }
  if (static_cast<OpIndex>(curve.unswapped_bytes().size()) != trace.num_ops() ||
      static_cast<int32_t>(curve.iterations().size()) != trace.num_iterations()) {
    return absl::InvalidArgumentError(
        absl::StrCat("step anatomy: the memory curve is not that of ", trace.source()));
  }
  const IterationInfo& it = trace.iteration(iteration);
  StepAnatomy a;
  a.iteration = iteration;
  a.peak = curve.iterations()[iteration].peak_unswapped;

  // State created here: (allocation op, bytes), by allocation op.
  std::vector<std::pair<OpIndex, int64_t>> created;
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorInfo& info = trace.tensor(t);
    const TensorLifetime& lt = trace.lifetime(t);
    if (!lt.occupies_device()) continue;
    if (lt.LiveAt(a.peak.op)) {
      a.peak_bytes_by_kind[static_cast<int>(info.kind)] += info.size_bytes;
    }
    if (info.kind != TensorKind::kOptimizerState) continue;
    if (lt.alloc_op < it.op_begin || lt.alloc_op >= it.op_end) continue;
    if (lt.free_op < it.op_end) continue;  // freed inside: scratch, not state
    created.emplace_back(lt.alloc_op, info.size_bytes);
  }
  std::sort(created.begin(), created.end());
  a.first_step = !created.empty();
  a.num_state_tensors_created = static_cast<int32_t>(created.size());
  for (const auto& [op, bytes] : created) a.state_bytes_created += bytes;
  if (a.first_step) a.state_created_at = created.front().first;

  // Steady state: at op j, add the created state whose allocation comes
  // after j (it would already be resident).
  const std::vector<int64_t>& bytes = curve.unswapped_bytes();
  int64_t missing = a.state_bytes_created;
  size_t next = 0;
  a.steady_peak_bytes = -1;
  for (OpIndex j = it.op_begin; j < it.op_end; ++j) {
    while (next < created.size() && created[next].first <= j) missing -= created[next++].second;
    const int64_t v = bytes[j] + missing;
    if (v > a.steady_peak_bytes) {
      a.steady_peak_bytes = v;
      a.steady_peak_op = j;
    }
  }
  a.steady_peak_local_op = a.steady_peak_op - it.op_begin;
  a.steady_peak_phase = trace.op(a.steady_peak_op).phase;
  return a;
}

}  // namespace swapplan
