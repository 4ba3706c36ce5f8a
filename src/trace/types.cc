#include "swapplan/trace/types.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace swapplan {
namespace {

constexpr absl::string_view kDTypeNames[kNumDTypes] = {
    "unknown", "float32", "float16", "bfloat16", "float64", "int64",        "int32",
    "int16",   "int8",    "uint8",   "bool",     "float8_e4m3", "float8_e5m2", "complex64"};
constexpr int kDTypeBytes[kNumDTypes] = {0, 4, 2, 2, 8, 8, 4, 2, 1, 1, 1, 1, 1, 8};
constexpr absl::string_view kKindNames[kNumTensorKinds] = {
    "OTHER", "PARAMETER", "GRADIENT", "OPTIMIZER_STATE", "ACTIVATION", "INPUT", "TEMPORARY"};
constexpr absl::string_view kPhaseNames[kNumPhases] = {"FORWARD", "BACKWARD", "OPTIMIZER",
                                                       "OTHER"};
constexpr absl::string_view kEventNames[4] = {"ALLOC", "FREE", "SWAP_OUT", "SWAP_IN"};

template <typename E, size_t N>
bool ParseFrom(const absl::string_view (&names)[N], absl::string_view name, E* out) {
  for (size_t i = 0; i < N; ++i) {
    if (absl::EqualsIgnoreCase(names[i], name)) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

absl::string_view DTypeName(DType d) { return kDTypeNames[static_cast<int>(d)]; }
absl::string_view TensorKindName(TensorKind k) { return kKindNames[static_cast<int>(k)]; }
absl::string_view PhaseName(Phase p) { return kPhaseNames[static_cast<int>(p)]; }
absl::string_view MemoryEventKindName(MemoryEventKind k) {
  return kEventNames[static_cast<int>(k)];
}
int DTypeBytes(DType d) { return kDTypeBytes[static_cast<int>(d)]; }

bool ParseDType(absl::string_view name, DType* out) {
  if (absl::StartsWith(name, "torch.")) name.remove_prefix(6);
  if (ParseFrom(kDTypeNames, name, out)) return true;
  struct Alias {
    absl::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"float", DType::kFloat32},  {"fp32", DType::kFloat32},   {"half", DType::kFloat16},
      {"fp16", DType::kFloat16},   {"bf16", DType::kBFloat16},  {"double", DType::kFloat64},
      {"long", DType::kInt64},     {"int", DType::kInt32},      {"short", DType::kInt16},
      {"float8_e4m3fn", DType::kFloat8E4M3}, {"cfloat", DType::kComplex64},
  };
  for (const Alias& a : kAliases) {
    if (absl::EqualsIgnoreCase(a.name, name)) {
      *out = a.dtype;
      return true;
    }
  }
  return false;
}

bool ParseTensorKind(absl::string_view name, TensorKind* out) {
  return ParseFrom(kKindNames, name, out);
}
bool ParsePhase(absl::string_view name, Phase* out) { return ParseFrom(kPhaseNames, name, out); }
bool ParseMemoryEventKind(absl::string_view name, MemoryEventKind* out) {
  return ParseFrom(kEventNames, name, out);
}

}  // namespace swapplan
