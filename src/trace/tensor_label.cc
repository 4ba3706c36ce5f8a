#include "swapplan/trace/tensor_label.h"

#include "absl/strings/str_cat.h"
#include "swapplan/trace/types.h"
#include "swapplan/util/units.h"

namespace swapplan {

TensorLabeler::TensorLabeler(const Trace& trace) : trace_(trace) {
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    if (trace.tensor(t).trace_id != static_cast<uint64_t>(t)) {
      dense_ = false;
      break;
    }
  }
  if (dense_) return;
  dense_of_id_.reserve(static_cast<size_t>(trace.num_tensors()));
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    dense_of_id_.emplace(trace.tensor(t).trace_id, t);
  }
}

std::string TensorLabeler::Label(uint64_t trace_id, LabelForm form) const {
  if (dense_) {
    if (trace_id < static_cast<uint64_t>(trace_.num_tensors())) {
      return LabelOf(static_cast<TensorId>(trace_id), form);
    }
  } else if (auto it = dense_of_id_.find(trace_id); it != dense_of_id_.end()) {
    return LabelOf(it->second, form);
  }
  return form == LabelForm::kCell ? absl::StrCat(trace_id) : absl::StrCat("tensor ", trace_id);
}

std::string TensorLabel(const Trace& trace, TensorId t, LabelForm form) {
  const TensorInfo& info = trace.tensor(t);
  absl::string_view name = trace.tensor_name(t);
  if (name.empty()) {
    return form == LabelForm::kCell ? absl::StrCat(info.trace_id)
                                    : absl::StrCat("tensor ", info.trace_id);
  }
  std::string out = absl::StrCat(name, " \xE2\x86\x92 ");  // U+2192 RIGHTWARDS ARROW
  absl::Span<const int64_t> shape = trace.shape(t);
  if (!shape.empty()) {
    out += '[';
    for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&out, i ? "," : "", shape[i]);
    out += "] ";
  }
  if (info.dtype != DType::kUnknown) absl::StrAppend(&out, DTypeName(info.dtype), " ");
  absl::StrAppend(&out, TensorKindName(info.kind), " ", FormatBytes(info.size_bytes));
  return out;
}

}  // namespace swapplan
