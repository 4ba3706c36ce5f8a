#include "import/et_capture.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace swapplan::import_internal {
namespace {

// A list of six values whose first five are integers and whose last is a
// string: the ET encoding of a tensor.
bool IsTensorTuple(const ValueTree& t, uint32_t v) {
  if (!t.IsSequence(v)) return false;
  const std::vector<uint32_t>& it = t.Items(v);
  if (it.size() != 6) return false;
  for (int k = 0; k < 5; ++k) {
    if (t.Kind(it[k]) != ValueKind::kInt) return false;
  }
  return t.Kind(it[5]) == ValueKind::kString;
}

// Splits "GenericList[Tensor(float),Tensor(long)]" into the element types
// (top-level commas only).
std::vector<absl::string_view> ElementTypes(absl::string_view type) {
  std::vector<absl::string_view> out;
  size_t open = type.find('[');
  if (open == absl::string_view::npos || type.empty() || type.back() != ']') return out;
  absl::string_view inner = type.substr(open + 1, type.size() - open - 2);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < inner.size(); ++i) {
    char c = inner[i];
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(inner.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < inner.size()) out.push_back(inner.substr(start));
  return out;
}

DType DTypeOfTensorType(absl::string_view type) {
  if (!absl::ConsumePrefix(&type, "Tensor(") || type.empty() || type.back() != ')') {
    return DType::kUnknown;
  }
  type.remove_suffix(1);
  return EtDType(type);
}

}  // namespace

DType EtDType(absl::string_view s) {
  absl::ConsumePrefix(&s, "c10::");
  if (s == "float") return DType::kFloat32;
  if (s == "double") return DType::kFloat64;
  if (s == "Half" || s == "half") return DType::kFloat16;
  if (s == "BFloat16" || s == "bfloat16") return DType::kBFloat16;
  if (s == "long" || s == "long int" || s == "int64_t" || s == "long long") return DType::kInt64;
  if (s == "int" || s == "int32_t") return DType::kInt32;
  if (s == "short" || s == "short int" || s == "int16_t") return DType::kInt16;
  if (s == "signed char" || s == "int8_t") return DType::kInt8;
  if (s == "unsigned char" || s == "uint8_t") return DType::kUInt8;
  if (s == "bool") return DType::kBool;
  if (s == "Float8_e4m3fn") return DType::kFloat8E4M3;
  if (s == "Float8_e5m2") return DType::kFloat8E5M2;
  if (s == "complex<float>") return DType::kComplex64;
  return DType::kUnknown;
}

int32_t EtCapture::InternName(absl::string_view name) {
  auto it = name_index.find(name);
  if (it != name_index.end()) return it->second;
  int32_t id = static_cast<int32_t>(names.size());
  names.emplace_back(name);
  name_index.emplace(names.back(), id);
  return id;
}

uint16_t EtCapture::InternDevice(absl::string_view device) {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] == device) return static_cast<uint16_t>(i);
  }
  if (devices.size() >= 65535) return 65535;
  devices.emplace_back(device);
  return static_cast<uint16_t>(devices.size() - 1);
}

uint32_t EtCapture::InternShape(const std::vector<int64_t>& dims) {
  if (dims.empty()) return 0;
  shape_key_.assign(reinterpret_cast<const char*>(dims.data()), dims.size() * sizeof(int64_t));
  auto it = shape_index.find(absl::string_view(shape_key_));
  if (it != shape_index.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(shape_begin.size() - 1);
  shape_dims.insert(shape_dims.end(), dims.begin(), dims.end());
  shape_begin.push_back(static_cast<uint32_t>(shape_dims.size()));
  shape_index.emplace(shape_key_, id);
  return id;
}

absl::StatusOr<uint16_t> EtCapture::ExtractTensors(const ValueTree& t, uint32_t values,
                                                   uint32_t shapes, uint32_t types,
                                                   uint32_t strides,
                                                   const std::function<std::string()>& where) {
  if (!t.IsSequence(values)) return 0;
  uint16_t count = 0;
  std::vector<int64_t>& dims = dims_;
  auto shape_of = [&](uint32_t s) {
    dims.clear();
    if (!t.IsSequence(s)) return;
    for (uint32_t d : t.Items(s)) {
      int64_t v = 0;
      if (!t.AsInt(d, &v) || v < 0) {
        dims.clear();
        return;
      }
      dims.push_back(v);
    }
  };
  // Elements a view reaches from its offset: 1 + sum((size - 1) * stride),
  // or -1 when the strides do not fit the shape (then numel is used).
  auto strided_reach = [&](uint32_t st) -> int64_t {
    if (!t.IsSequence(st) || t.Items(st).size() != dims.size()) return -1;
    int64_t reach = 1;
    const std::vector<uint32_t>& items = t.Items(st);
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t stride = 0, step = 0;
      if (!t.AsInt(items[k], &stride) || stride < 0) return -1;
      if (dims[k] == 0) return -1;
      if (__builtin_mul_overflow(dims[k] - 1, stride, &step) ||
          __builtin_add_overflow(reach, step, &reach)) {
        return -1;
      }
    }
    return reach;
  };
  auto add = [&](uint32_t v, uint32_t s, uint32_t st, DType dtype, size_t index) -> absl::Status {
    const std::vector<uint32_t>& it = t.Items(v);
    int64_t f[5];
    for (int k = 0; k < 5; ++k) f[k] = t.Get(it[k]).i;
    const int64_t storage = f[1], offset = f[2], numel = f[3], itemsize = f[4];
    absl::string_view device = t.Str(it[5]);
    if (t.Get(it[1]).flag || t.Get(it[2]).flag || t.Get(it[3]).flag || t.Get(it[4]).flag ||
        offset < 0 || numel < 0 || itemsize < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), "[", index, "]: tensor has a negative or out-of-range storage id, offset, "
                 "numel or itemsize [et-schema]"));
    }
    if (device.empty() || numel == 0 || itemsize == 0) return absl::OkStatus();  // undefined
    int64_t view = 0, reach = 0;
    if (__builtin_mul_overflow(numel, itemsize, &view) ||
        __builtin_add_overflow(offset, numel, &reach) ||
        __builtin_mul_overflow(reach, itemsize, &reach)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), "[", index, "]: tensor size (offset + numel) * itemsize overflows int64 [et-schema]"));
    }
    if (count == 65535) return absl::OkStatus();
    shape_of(s);
    if (const int64_t elems = strided_reach(st); elems > 0 && elems < numel) {
      // Only ever narrower than numel: an expanded view (stride 0), whose
      // shape is not its storage's (left unknown).
      dims.clear();
      if (__builtin_add_overflow(offset, elems, &reach) ||
          __builtin_mul_overflow(reach, itemsize, &reach)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where(), "[", index, "]: tensor reach (offset + strided extent) * itemsize overflows "
                   "int64 [et-schema]"));
      }
    }
    EtTensorRef r;
    r.storage_id = storage;
    r.extent_bytes = reach;
    r.view_bytes = view;
    r.shape = InternShape(dims);
    r.dtype = dtype;
    r.device = InternDevice(device);
    refs.push_back(r);
    ++count;
    return absl::OkStatus();
  };
  const std::vector<uint32_t>& vals = t.Items(values);
  const std::vector<uint32_t>* shp = t.IsSequence(shapes) ? &t.Items(shapes) : nullptr;
  const std::vector<uint32_t>* typ = t.IsSequence(types) ? &t.Items(types) : nullptr;
  const std::vector<uint32_t>* str = t.IsSequence(strides) ? &t.Items(strides) : nullptr;
  for (size_t i = 0; i < vals.size(); ++i) {
    uint32_t v = vals[i];
    uint32_t s = shp != nullptr && i < shp->size() ? (*shp)[i] : kNoValue;
    uint32_t st = str != nullptr && i < str->size() ? (*str)[i] : kNoValue;
    absl::string_view type;
    if (typ != nullptr && i < typ->size() && t.Kind((*typ)[i]) == ValueKind::kString) {
      type = t.Str((*typ)[i]);
    }
    if (IsTensorTuple(t, v)) {
      absl::Status status = add(v, s, st, DTypeOfTensorType(type), i);
      if (!status.ok()) return status;
      continue;
    }
    if (!t.IsSequence(v)) continue;
    // A list or tuple argument: tensors among its elements.
    std::vector<absl::string_view> elem_types = ElementTypes(type);
    const std::vector<uint32_t>& elems = t.Items(v);
    const std::vector<uint32_t>* elem_shapes = t.IsSequence(s) ? &t.Items(s) : nullptr;
    const std::vector<uint32_t>* elem_strides = t.IsSequence(st) ? &t.Items(st) : nullptr;
    for (size_t j = 0; j < elems.size(); ++j) {
      if (!IsTensorTuple(t, elems[j])) continue;
      DType dt = j < elem_types.size() ? DTypeOfTensorType(elem_types[j]) : DType::kUnknown;
      uint32_t es = elem_shapes != nullptr && j < elem_shapes->size() ? (*elem_shapes)[j] : kNoValue;
      uint32_t est = elem_strides != nullptr && j < elem_strides->size() ? (*elem_strides)[j]
                                                                         : kNoValue;
      absl::Status status = add(elems[j], es, est, dt, i);
      if (!status.ok()) return status;
    }
  }
  return count;
}

}  // namespace swapplan::import_internal
