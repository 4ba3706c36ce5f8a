// ValueTree: a small dynamically typed value graph (None, bool, int, float,
// string, bytes, list, tuple, dict) filled by the JSON reader, the Python-
// literal parser (Chakra .et IO fields) and the safe unpickler (memory
// snapshots). Containers hold node indices, so a pickle's memo can make two
// containers share a child without copying it (the graph may be a DAG; it is
// never cyclic, the unpickler sees to that).
//
//   ValueTree t;
//   uint32_t list = t.AddContainer(ValueKind::kList);
//   t.Append(list, t.AddInt(5));
//   t.Get(list).items.size();   // 1
//
// Budget: AddX() refuses (returns kNoValue) once `max_nodes` nodes exist, so
// a hostile input cannot make the tree outgrow what its bytes justify.
// Complexity: O(1) per node and per appended item.
#ifndef SWAPPLAN_SRC_IMPORT_VALUE_TREE_H_
#define SWAPPLAN_SRC_IMPORT_VALUE_TREE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "import/json_reader.h"

namespace swapplan::import_internal {

enum class ValueKind : uint8_t { kNone, kBool, kInt, kFloat, kString, kBytes, kList, kTuple, kDict };

inline constexpr uint32_t kNoValue = 0xFFFFFFFFu;

class ValueTree {
 public:
  struct Node {
    ValueKind kind = ValueKind::kNone;
    bool flag = false;      // bool value; for ints: "too large for int64"
    int64_t i = 0;
    double d = 0;
    uint32_t s_begin = 0;   // string / bytes in the arena
    uint32_t s_len = 0;
    uint32_t items = 0;     // container: index into containers_
  };

  explicit ValueTree(int64_t max_nodes = int64_t{1} << 31) : max_nodes_(max_nodes) {}

  // Forgets every node (keeps capacity).
  void Clear();
  size_t size() const { return nodes_.size(); }
  bool full() const { return static_cast<int64_t>(nodes_.size()) >= max_nodes_; }

  uint32_t AddNone();
  uint32_t AddBool(bool b);
  uint32_t AddInt(int64_t v, bool too_large = false);
  uint32_t AddFloat(double v);
  uint32_t AddString(absl::string_view s, ValueKind kind = ValueKind::kString);
  uint32_t AddContainer(ValueKind kind);
  // Appends `item` to container `c` (a dict takes key, value, key, ...).
  void Append(uint32_t c, uint32_t item) { containers_[nodes_[c].items].push_back(item); }

  const Node& Get(uint32_t v) const { return nodes_[v]; }
  ValueKind Kind(uint32_t v) const { return v == kNoValue ? ValueKind::kNone : nodes_[v].kind; }
  absl::string_view Str(uint32_t v) const {
    return absl::string_view(strings_).substr(nodes_[v].s_begin, nodes_[v].s_len);
  }
  const std::vector<uint32_t>& Items(uint32_t v) const { return containers_[nodes_[v].items]; }
  bool IsContainer(uint32_t v) const {
    ValueKind k = Kind(v);
    return k == ValueKind::kList || k == ValueKind::kTuple || k == ValueKind::kDict;
  }
  bool IsSequence(uint32_t v) const {
    ValueKind k = Kind(v);
    return k == ValueKind::kList || k == ValueKind::kTuple;
  }
  // Dict lookup by string key (linear; dicts in these formats are small).
  uint32_t Lookup(uint32_t dict, absl::string_view key) const;
  // Integer value of an int (or integral float) node; false otherwise.
  bool AsInt(uint32_t v, int64_t* out) const;
  bool AsDouble(uint32_t v, double* out) const;

  // Reads one JSON value (recursively) into the tree; returns its index, or
  // kNoValue after an error recorded on the reader (including a full tree:
  // [json-limit]).
  uint32_t ParseJson(JsonReader& r);

 private:
  uint32_t NewNode(ValueKind kind);

  int64_t max_nodes_;
  std::vector<Node> nodes_;
  std::string strings_;
  std::vector<std::vector<uint32_t>> containers_;
  size_t containers_used_ = 0;
};

}  // namespace swapplan::import_internal

#endif  // SWAPPLAN_SRC_IMPORT_VALUE_TREE_H_
