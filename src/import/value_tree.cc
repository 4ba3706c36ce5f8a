#include "import/value_tree.h"

#include <cmath>
#include <limits>

namespace swapplan::import_internal {

void ValueTree::Clear() {
  nodes_.clear();
  strings_.clear();
  for (size_t i = 0; i < containers_used_; ++i) containers_[i].clear();
  containers_used_ = 0;
}

uint32_t ValueTree::NewNode(ValueKind kind) {
  if (full() || nodes_.size() >= kNoValue - 1) return kNoValue;
  nodes_.emplace_back();
  nodes_.back().kind = kind;
  return static_cast<uint32_t>(nodes_.size() - 1);
}

uint32_t ValueTree::AddNone() { return NewNode(ValueKind::kNone); }

uint32_t ValueTree::AddBool(bool b) {
  uint32_t v = NewNode(ValueKind::kBool);
  if (v != kNoValue) nodes_[v].flag = b;
  return v;
}

uint32_t ValueTree::AddInt(int64_t x, bool too_large) {
  uint32_t v = NewNode(ValueKind::kInt);
  if (v != kNoValue) {
    nodes_[v].i = x;
    nodes_[v].flag = too_large;
  }
  return v;
}

uint32_t ValueTree::AddFloat(double x) {
  uint32_t v = NewNode(ValueKind::kFloat);
  if (v != kNoValue) nodes_[v].d = x;
  return v;
}

uint32_t ValueTree::AddString(absl::string_view s, ValueKind kind) {
  if (strings_.size() + s.size() > std::numeric_limits<uint32_t>::max()) return kNoValue;
  uint32_t v = NewNode(kind);
  if (v == kNoValue) return v;
  nodes_[v].s_begin = static_cast<uint32_t>(strings_.size());
  nodes_[v].s_len = static_cast<uint32_t>(s.size());
  strings_.append(s.data(), s.size());
  return v;
}

uint32_t ValueTree::AddContainer(ValueKind kind) {
  uint32_t v = NewNode(kind);
  if (v == kNoValue) return v;
  if (containers_used_ == containers_.size()) containers_.emplace_back();
  nodes_[v].items = static_cast<uint32_t>(containers_used_++);
  return v;
}

uint32_t ValueTree::Lookup(uint32_t dict, absl::string_view key) const {
  if (Kind(dict) != ValueKind::kDict) return kNoValue;
  const std::vector<uint32_t>& it = Items(dict);
  for (size_t k = 0; k + 1 < it.size(); k += 2) {
    if (Kind(it[k]) == ValueKind::kString && Str(it[k]) == key) return it[k + 1];
  }
  return kNoValue;
}

bool ValueTree::AsInt(uint32_t v, int64_t* out) const {
  ValueKind k = Kind(v);
  if (k == ValueKind::kInt && !nodes_[v].flag) {
    *out = nodes_[v].i;
    return true;
  }
  if (k == ValueKind::kBool) {
    *out = nodes_[v].flag ? 1 : 0;
    return true;
  }
  if (k == ValueKind::kFloat) {
    double d = nodes_[v].d;
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
      *out = static_cast<int64_t>(d);
      return true;
    }
  }
  return false;
}

bool ValueTree::AsDouble(uint32_t v, double* out) const {
  ValueKind k = Kind(v);
  if (k == ValueKind::kFloat) {
    *out = nodes_[v].d;
    return true;
  }
  if (k == ValueKind::kInt) {
    *out = static_cast<double>(nodes_[v].i);
    return true;
  }
  return false;
}

uint32_t ValueTree::ParseJson(JsonReader& r) {
  auto full_error = [&] {
    r.Fail("value too large for the importer's budget", "json-limit");
    return kNoValue;
  };
  switch (r.Peek()) {
    case JsonKind::kObject: {
      if (!r.BeginObject()) return kNoValue;
      uint32_t d = AddContainer(ValueKind::kDict);
      if (d == kNoValue) return full_error();
      absl::string_view key;
      while (r.NextKey(&key)) {
        uint32_t k = AddString(key);
        if (k == kNoValue) return full_error();
        Append(d, k);
        uint32_t v = ParseJson(r);
        if (v == kNoValue) return kNoValue;
        Append(d, v);
      }
      return r.ok() ? d : kNoValue;
    }
    case JsonKind::kArray: {
      if (!r.BeginArray()) return kNoValue;
      uint32_t l = AddContainer(ValueKind::kList);
      if (l == kNoValue) return full_error();
      while (r.NextElement()) {
        uint32_t v = ParseJson(r);
        if (v == kNoValue) return kNoValue;
        Append(l, v);
      }
      return r.ok() ? l : kNoValue;
    }
    case JsonKind::kString: {
      absl::string_view s;
      if (!r.ReadString(&s)) return kNoValue;
      uint32_t v = AddString(s);
      return v == kNoValue ? full_error() : v;
    }
    case JsonKind::kNumber: {
      JsonNumber n;
      if (!r.ReadNumber(&n)) return kNoValue;
      uint32_t v = n.is_int ? AddInt(n.int_value) : AddFloat(n.ToDouble());
      return v == kNoValue ? full_error() : v;
    }
    case JsonKind::kTrue:
    case JsonKind::kFalse: {
      bool b = false;
      if (!r.ReadBool(&b)) return kNoValue;
      uint32_t v = AddBool(b);
      return v == kNoValue ? full_error() : v;
    }
    case JsonKind::kNull: {
      if (!r.Skip()) return kNoValue;
      uint32_t v = AddNone();
      return v == kNoValue ? full_error() : v;
    }
    case JsonKind::kEnd:
      if (r.ok()) r.Fail("unexpected end of input, expected a value", "json-syntax");
      return kNoValue;
  }
  return kNoValue;
}

}  // namespace swapplan::import_internal
