// What an op or annotation name tells the importers of PyTorch traces (ET,
// Chakra, Kineto), decided once per distinct name so that per-node work
// compares integers only.
//
//   NameTraits t = ClassifyName("## backward ##");
//   t.annotation;   // true
//   t.hint;         // PhaseHint::kBackward
//
// Rules (docs/importers.md, "Structure"):
//   ProfilerStep#N                       iteration N (annotation)
//   Optimizer.step#...                   OPTIMIZER (annotation)
//   Optimizer.zero_grad#...              OTHER, its tensors are gradients
//   ## name ##                           annotation; FORWARD / BACKWARD /
//                                        OPTIMIZER when the name contains
//                                        forward / backward / optimizer|optim
//   enumerate(DataLoader)#...            OTHER (annotation)
//   [anything in brackets]               annotation (ET roots, PARAM markers)
//   autograd::engine::evaluate_function: autograd wrapper (BACKWARD)
//   torch::autograd::AccumulateGrad      autograd wrapper; its tensors are
//                                        gradients
//   *Backward0 / *Backward1 ...          autograd node (not an operator)
// Operator roofline classes: matmul (aten::mm, addmm, bmm, baddbmm, matmul,
// linear), convolution (aten::*conv*d, *convolution), convolution backward,
// and view or metadata ops that launch no kernel (view, as_strided, t,
// transpose, permute, expand, reshape, detach, slice, select, narrow, squeeze,
// unsqueeze, empty*, result_type, alias, set_, resize_, lift_fresh,
// _unsafe_view, split, chunk, unbind). State creators (how Adam, AdamW and SGD
// make their state: zeros_like, zeros, ones_like, full_like, new_zeros,
// empty_like, empty, clone, lift_fresh for torch.tensor).
#ifndef SWAPPLAN_SRC_IMPORT_NAMES_H_
#define SWAPPLAN_SRC_IMPORT_NAMES_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "import/assembler.h"

namespace swapplan::import_internal {

enum class RooflineClass : uint8_t { kOther, kView, kMatmul, kLinear, kConv, kConvBackward };

struct NameTraits {
  bool annotation = false;        // structure only, never an op
  PhaseHint hint = PhaseHint::kNone;
  bool profiler_step = false;
  int64_t step_number = -1;       // N of ProfilerStep#N
  bool optimizer_step = false;
  bool zero_grad = false;
  bool autograd = false;          // autograd wrapper or node (not an op)
  bool accumulate_grad = false;
  bool copy = false;              // aten::copy_, aten::_to_copy, aten::to
  // Makes a fresh tensor (zeros_like, zeros, clone, empty, lift_fresh, ...):
  // inside Optimizer.step, how optimizers create their state.
  bool state_creator = false;
  // CompositeImplicitAutograd (composite_ops.inc): a TorchDispatchMode sees
  // what it decomposes into, never the operator itself.
  bool composite_implicit = false;
  RooflineClass roofline = RooflineClass::kOther;
};

NameTraits ClassifyName(absl::string_view name);

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_NAMES_H_
