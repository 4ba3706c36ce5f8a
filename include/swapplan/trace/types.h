// Vocabulary types of the in-memory trace model: integer ids and the enums of
// the trace schema (proto/trace.proto), with their canonical names.
//
//   Phase p;
//   if (ParsePhase("BACKWARD", &p)) { ... }   // p == Phase::kBackward
//   PhaseName(Phase::kForward)                 // "FORWARD"
#ifndef SWAPPLAN_TRACE_TYPES_H_
#define SWAPPLAN_TRACE_TYPES_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace swapplan {

// Dense index of a tensor in a Trace (0 .. num_tensors-1). Not the id written
// in the file: that one is kept as TensorInfo::trace_id.
using TensorId = int32_t;
// Global index of an op in a Trace (all iterations concatenated).
using OpIndex = int32_t;
// Index into the interned op-name table.
using NameId = int32_t;

inline constexpr TensorId kNoTensor = -1;
inline constexpr OpIndex kNoOp = -1;

enum class DType : uint8_t {
  kUnknown = 0,
  kFloat32 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kFloat64 = 4,
  kInt64 = 5,
  kInt32 = 6,
  kInt16 = 7,
  kInt8 = 8,
  kUInt8 = 9,
  kBool = 10,
  kFloat8E4M3 = 11,
  kFloat8E5M2 = 12,
  kComplex64 = 13,
};
inline constexpr int kNumDTypes = 14;

enum class TensorKind : uint8_t {
  kOther = 0,
  kParameter = 1,
  kGradient = 2,
  kOptimizerState = 3,
  kActivation = 4,
  kInput = 5,
  kTemporary = 6,
};
inline constexpr int kNumTensorKinds = 7;

enum class Phase : uint8_t {
  kForward = 0,
  kBackward = 1,
  kOptimizer = 2,
  kOther = 3,
};
inline constexpr int kNumPhases = 4;

enum class MemoryEventKind : uint8_t {
  kAlloc = 0,
  kFree = 1,
  kSwapOut = 2,
  kSwapIn = 3,
};
inline constexpr int kNumMemoryEventKinds = 4;

// Canonical upper-case names as used in the JSON form and in reports:
// "float32", "ACTIVATION", "FORWARD", "ALLOC".
absl::string_view DTypeName(DType d);
absl::string_view TensorKindName(TensorKind k);
absl::string_view PhaseName(Phase p);
absl::string_view MemoryEventKindName(MemoryEventKind k);

// Parsers for the names above. Return false for an unknown name. DType also
// accepts PyTorch spellings ("torch.float16", "half", "bfloat16").
bool ParseDType(absl::string_view name, DType* out);
bool ParseTensorKind(absl::string_view name, TensorKind* out);
bool ParsePhase(absl::string_view name, Phase* out);
bool ParseMemoryEventKind(absl::string_view name, MemoryEventKind* out);

// Bytes per element (0 for kUnknown).
int DTypeBytes(DType d);

// Whether tensors of this kind are resident across iterations when the trace
// does not say otherwise (parameters and optimizer states).
inline bool KindIsPersistentByDefault(TensorKind k) {
  return k == TensorKind::kParameter || k == TensorKind::kOptimizerState;
}

}  // namespace swapplan

#endif  // SWAPPLAN_TRACE_TYPES_H_
