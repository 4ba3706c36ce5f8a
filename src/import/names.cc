#include "import/names.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace swapplan::import_internal {
namespace {

PhaseHint HintFromWords(absl::string_view lower) {
  if (absl::StrContains(lower, "backward")) return PhaseHint::kBackward;
  if (absl::StrContains(lower, "forward")) return PhaseHint::kForward;
  if (absl::StrContains(lower, "optim")) return PhaseHint::kOptimizer;
  return PhaseHint::kNone;
}

bool EndsWithBackwardN(absl::string_view name) {
  // "AddmmBackward0", "CudnnBatchNormBackward0", "DivBackward1".
  size_t k = name.size();
  while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9') --k;
  return k < name.size() && absl::EndsWith(name.substr(0, k), "Backward") &&
         name.find("::") == absl::string_view::npos;
}

}  // namespace

NameTraits ClassifyName(absl::string_view name) {
  NameTraits t;
  if (absl::StartsWith(name, "ProfilerStep#")) {
    t.annotation = true;
    t.profiler_step = true;
    int64_t n = -1;
    if (absl::SimpleAtoi(name.substr(13), &n)) t.step_number = n;
    return t;
  }
  if (absl::StartsWith(name, "Optimizer.step#") || absl::StartsWith(name, "Optimizer.step")) {
    t.annotation = true;
    t.optimizer_step = true;
    t.hint = PhaseHint::kOptimizer;
    return t;
  }
  if (absl::StartsWith(name, "Optimizer.zero_grad")) {
    t.annotation = true;
    t.zero_grad = true;
    t.hint = PhaseHint::kOther;
    return t;
  }
  if (absl::StartsWith(name, "enumerate(DataLoader)")) {
    t.annotation = true;
    t.hint = PhaseHint::kOther;
    return t;
  }
  if (absl::StartsWith(name, "##") && absl::EndsWith(name, "##")) {
    t.annotation = true;
    t.hint = HintFromWords(absl::AsciiStrToLower(name));
    return t;
  }
  if (absl::StartsWith(name, "[") && absl::EndsWith(name, "]")) {
    t.annotation = true;
    return t;
  }
  if (absl::StartsWith(name, "autograd::engine::evaluate_function")) {
    t.autograd = true;
    return t;
  }
  if (absl::StrContains(name, "AccumulateGrad")) {
    t.autograd = true;
    t.accumulate_grad = true;
    return t;
  }
  if (EndsWithBackwardN(name)) {
    t.autograd = true;
    return t;
  }
  static constexpr absl::string_view kComposite[] = {
#include "import/composite_ops.inc"
  };
  t.composite_implicit = std::binary_search(std::begin(kComposite), std::end(kComposite), name);
  absl::string_view op = name;
  absl::ConsumePrefix(&op, "aten::");
  t.copy = op == "copy_" || op == "_to_copy" || op == "to";
  static constexpr absl::string_view kCreators[] = {
      "zeros_like", "zeros", "ones_like", "full_like", "new_zeros", "empty_like", "empty",
      "clone", "lift_fresh"};
  for (absl::string_view c : kCreators) t.state_creator = t.state_creator || op == c;
  static constexpr absl::string_view kViews[] = {
      "view", "as_strided", "t", "transpose", "permute", "expand", "expand_as", "reshape",
      "detach", "detach_", "slice", "select", "narrow", "squeeze", "unsqueeze", "empty",
      "empty_strided", "empty_like", "result_type", "alias", "set_", "resize_", "lift_fresh",
      "_unsafe_view", "split", "chunk", "unbind", "split_with_sizes", "_reshape_alias",
      "flatten", "unflatten", "numpy_T", "contiguous", "item", "_local_scalar_dense",
      "is_nonzero", "size", "stride", "dim", "record_stream"};
  for (absl::string_view v : kViews) {
    if (op == v) {
      t.roofline = RooflineClass::kView;
      return t;
    }
  }
  if (op == "mm" || op == "addmm" || op == "bmm" || op == "baddbmm" || op == "matmul" ||
      op == "_addmm_activation") {
    t.roofline = RooflineClass::kMatmul;
  } else if (op == "linear") {
    t.roofline = RooflineClass::kLinear;
  } else if (absl::StrContains(op, "convolution_backward")) {
    t.roofline = RooflineClass::kConvBackward;
  } else if (absl::StrContains(op, "convolution") || op == "conv1d" || op == "conv2d" ||
             op == "conv3d") {
    t.roofline = RooflineClass::kConv;
  }
  return t;
}

}  // namespace swapplan::import_internal
