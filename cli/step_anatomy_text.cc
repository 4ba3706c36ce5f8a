#include "step_anatomy_text.h"

#include "absl/strings/str_cat.h"
#include "common.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

std::string GlobalOpText(const Trace& t, OpIndex op) {
  const int32_t it = t.IterationOf(op);
  return absl::StrCat("op ", op - t.iteration(it).op_begin, " (", t.op_name_at(op), ", ",
                      PhaseName(t.op(op).phase), ")");
}

nlohmann::json GlobalOpJson(const Trace& t, OpIndex op) {
  if (op == kNoOp) return nullptr;
  const int32_t it = t.IterationOf(op);
  return {{"iteration", it},
          {"op", op - t.iteration(it).op_begin},
          {"op_name", t.op_name_at(op)},
          {"phase", std::string(PhaseName(t.op(op).phase))}};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> AnatomyLines(const Trace& trace,
                                                              const MemoryCurve& curve,
                                                              const StepAnatomy& a,
                                                              int64_t budget_bytes) {
  std::vector<std::pair<std::string, std::string>> rows;
  std::string kinds;
  for (int k = 0; k < kNumTensorKinds; ++k) {
    if (a.peak_bytes_by_kind[k] == 0) continue;
    absl::StrAppend(&kinds, kinds.empty() ? "" : ", ",
                    TensorKindName(static_cast<TensorKind>(k)), " ",
                    FormatBytes(a.peak_bytes_by_kind[k]));
  }
  std::string made = absl::StrCat(kinds, " at ", GlobalOpText(trace, a.peak.op));
  const std::vector<TensorId>& largest = curve.iterations()[a.iteration].largest_at_peak;
  if (!largest.empty()) {
    absl::StrAppend(&made, "; largest: ");
    for (size_t i = 0; i < largest.size() && i < 3; ++i) {
      absl::StrAppend(&made, i == 0 ? "" : ", ", TensorLabel(trace, largest[i], LabelForm::kCell),
                      " ", FormatBytes(trace.tensor(largest[i]).size_bytes), " ",
                      TensorKindName(trace.tensor(largest[i]).kind));
    }
  }
  const int64_t activations = a.peak_bytes_by_kind[static_cast<int>(TensorKind::kActivation)];
  if (activations == 0) {
    absl::StrAppend(&made, "; no ACTIVATION is live there: swapping activations cannot lower it");
  } else if (activations < a.peak.bytes / 100) {
    absl::StrAppend(&made, "; only ", FormatBytes(activations),
                    " of ACTIVATION is live there: swapping activations cannot lower it more");
  }
  rows.emplace_back("peak holds", made);
  if (!a.first_step) return rows;
  rows.emplace_back(
      "first step",
      absl::StrCat("iteration ", a.iteration, " is a first step: the optimizer creates its state "
                   "in it (", a.num_state_tensors_created, " OPTIMIZER_STATE tensors, ",
                   FormatBytes(a.state_bytes_created), ", from ",
                   GlobalOpText(trace, a.state_created_at),
                   "); a steady-state step has that state resident from its first op"));
  std::string steady = absl::StrCat("estimated peak ", BytesExact(a.steady_peak_bytes), " at ",
                                    GlobalOpText(trace, a.steady_peak_op),
                                    " (this step with the state resident throughout)");
  if (budget_bytes >= 0) {
    if (a.steady_peak_bytes <= budget_bytes) {
      absl::StrAppend(&steady, "; fits this budget without swapping");
    } else {
      absl::StrAppend(&steady, "; ", FormatBytes(a.steady_peak_bytes - budget_bytes),
                      " over this budget: needs ", BytesExact(a.steady_peak_bytes),
                      " without swapping; plan on a steady-state step (record two or more "
                      "steps, --iteration 1)");
    }
  }
  rows.emplace_back("steady", steady);
  return rows;
}

nlohmann::json AnatomyJson(const Trace& trace, const StepAnatomy& a) {
  nlohmann::json kinds = nlohmann::json::object();
  for (int k = 0; k < kNumTensorKinds; ++k) {
    kinds[std::string(TensorKindName(static_cast<TensorKind>(k)))] = a.peak_bytes_by_kind[k];
  }
  nlohmann::json first = nullptr;
  if (a.first_step) {
    first = {{"iteration", a.iteration},
             {"num_state_tensors_created", a.num_state_tensors_created},
             {"state_bytes_created", a.state_bytes_created},
             {"state_created_at", GlobalOpJson(trace, a.state_created_at)},
             {"steady_peak_unswapped_bytes", a.steady_peak_bytes},
             {"steady_peak_at", GlobalOpJson(trace, a.steady_peak_op)}};
  }
  return {{"peak_bytes_by_kind", kinds}, {"first_step", first}};
}

}  // namespace swapplan::cli
