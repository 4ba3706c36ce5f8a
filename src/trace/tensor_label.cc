#include "swapplan/trace/tensor_label.h"

#include "absl/strings/str_cat.h"
#include "swapplan/trace/types.h"
#include "swapplan/util/units.h"

namespace swapplan {
namespace {

constexpr absl::string_view kDTypeShortNames[kNumDTypes] = {
    "?",  "f32", "f16", "bf16", "f64",    "i64",    "i32",
    "i16", "i8", "u8",  "bool", "f8e4m3", "f8e5m2", "c64"};

// The unnamed fallback of file id `id`.
std::string Fallback(uint64_t id, LabelForm form) {
  return form == LabelForm::kCell ? absl::StrCat(id) : absl::StrCat("tensor ", id);
}

}  // namespace

absl::string_view DTypeShortName(DType d) { return kDTypeShortNames[static_cast<int>(d)]; }

std::string FormatBytesShort(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes >= 1024) {
    int u = -1;
    int64_t v = bytes;
    while (v >= 1024 && v % 1024 == 0 && u < 3) {
      v /= 1024;
      ++u;
    }
    // Whole in this unit and no larger unit fits: "256 MiB".
    if (u >= 0 && (v < 1024 || u == 3)) return absl::StrCat(v, " ", kUnits[u]);
  }
  return FormatBytes(bytes);
}

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

TensorId TensorLabeler::DenseOf(uint64_t trace_id) const {
  if (dense_) {
    return trace_id < static_cast<uint64_t>(trace_.num_tensors()) ? static_cast<TensorId>(trace_id)
                                                                   : kNoTensor;
  }
  auto it = dense_of_id_.find(trace_id);
  return it == dense_of_id_.end() ? kNoTensor : it->second;
}

std::string TensorLabeler::Label(uint64_t trace_id, LabelForm form) const {
  const TensorId t = DenseOf(trace_id);
  return t == kNoTensor ? Fallback(trace_id, form) : LabelOf(t, form);
}

absl::string_view TensorLabeler::Name(uint64_t trace_id) const {
  const TensorId t = DenseOf(trace_id);
  return t == kNoTensor ? absl::string_view() : trace_.tensor_name(t);
}

std::string TensorLabel(const Trace& trace, TensorId t, LabelForm form) {
  const TensorInfo& info = trace.tensor(t);
  absl::string_view name = trace.tensor_name(t);
  if (name.empty()) return Fallback(info.trace_id, form);
  switch (form) {
    case LabelForm::kShort:
      return absl::StrCat("tensor ", info.trace_id, " '", name, "'");
    case LabelForm::kCell:
      return absl::StrCat(name, " (", info.trace_id, ")");
    case LabelForm::kFull:
      break;
  }
  std::string out = absl::StrCat(name, " \xE2\x86\x92 ");  // U+2192 RIGHTWARDS ARROW
  absl::Span<const int64_t> shape = trace.shape(t);
  if (!shape.empty()) {
    out += '[';
    for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&out, i ? "," : "", shape[i]);
    out += "] ";
  }
  if (info.dtype != DType::kUnknown) absl::StrAppend(&out, DTypeShortName(info.dtype), " ");
  absl::StrAppend(&out, TensorKindName(info.kind), " ", FormatBytesShort(info.size_bytes));
  return out;
}

}  // namespace swapplan
