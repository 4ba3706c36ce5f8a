// ET JSON reader: streams {"schema", "pid", "time", "start_ts", "nodes": [...],
// "finish_ts"} node by node into an EtCapture. Schema 1.0.1 nodes carry
// parent / inputs / input_shapes / input_types / ... and the attributes as
// plain keys; 1.0.2 and later carry ctrl_deps, inputs and outputs as
// {"values", "shapes", "types"} and the attributes as a list of
// {"name", "type", "value"}.
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "import/et_capture.h"
#include "import/formats.h"
#include "import/json_reader.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {
namespace {

struct NodeScratch {
  ValueTree tree{int64_t{1} << 24};
  uint32_t in_values = kNoValue, in_shapes = kNoValue, in_types = kNoValue;
  uint32_t out_values = kNoValue, out_shapes = kNoValue, out_types = kNoValue;
  uint32_t in_strides = kNoValue, out_strides = kNoValue;  // schema 1.1
  void Reset() {
    tree.Clear();
    in_values = in_shapes = in_types = out_values = out_shapes = out_types = kNoValue;
    in_strides = out_strides = kNoValue;
  }
};

// Reads an integer attribute value that may be written as a number, a bool
// or a string of digits; false (and leaves *out) for anything else.
bool ReadLooseInt(JsonReader& r, int64_t* out) {
  switch (r.Peek()) {
    case JsonKind::kNumber: {
      JsonNumber n;
      if (!r.ReadNumber(&n)) return false;
      if (n.is_int) {
        *out = n.int_value;
      } else {
        // uint64 ids above INT64_MAX (e.g. seq_id -1 written unsigned) read
        // as -1; a fraction is dropped; NaN, infinities and values below the
        // int64 range leave the field absent.
        double d = n.ToDouble();
        if (!std::isfinite(d) || d <= -9.2e18) return true;
        *out = d >= 9.2e18 ? -1 : static_cast<int64_t>(d);
      }
      return true;
    }
    case JsonKind::kTrue:
    case JsonKind::kFalse: {
      bool b = false;
      if (!r.ReadBool(&b)) return false;
      *out = b ? 1 : 0;
      return true;
    }
    default:
      return r.Skip();
  }
}

class EtJsonParser {
 public:
  EtJsonParser(JsonReader& r, EtCapture* cap) : r_(r), cap_(cap) {}

  absl::Status Run() {
    if (!r_.BeginObject()) return r_.status();
    absl::string_view key;
    bool saw_nodes = false;
    while (r_.NextKey(&key)) {
      if (key == "nodes") {
        saw_nodes = true;
        if (!r_.BeginArray()) break;
        while (r_.NextElement()) {
          absl::Status s = ParseNode();
          if (!s.ok()) return s;
          if (!r_.ok()) break;
        }
      } else if (key == "schema") {
        absl::string_view s;
        if (r_.Peek() == JsonKind::kString && r_.ReadString(&s)) cap_->schema = std::string(s);
        else r_.Skip();
      } else if (key == "pid") {
        ReadLooseInt(r_, &cap_->pid);
      } else if (key == "time") {
        absl::string_view s;
        if (r_.Peek() == JsonKind::kString && r_.ReadString(&s)) cap_->time = std::string(s);
        else r_.Skip();
      } else {
        r_.Skip();
      }
    }
    if (r_.ok()) r_.AtEndOfInput();
    if (!r_.ok()) return r_.status();
    if (!saw_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(r_.source(), ": no \"nodes\" array: not an execution trace [et-schema]"));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status ParseNode() {
    s_.Reset();
    EtNode n;
    bool have_id = false;
    int32_t name = -1;
    if (!r_.BeginObject()) return r_.status();
    absl::string_view key;
    while (r_.NextKey(&key)) {
      if (key == "id") {
        have_id = r_.ReadInt64(&n.id);
      } else if (key == "name") {
        absl::string_view s;
        if (r_.ReadString(&s)) name = cap_->InternName(s);
      } else if (key == "ctrl_deps" || key == "parent") {
        if (r_.Peek() == JsonKind::kArray) {
          // A list of ids: the first is the parent.
          r_.BeginArray();
          bool first = true;
          while (r_.NextElement()) {
            int64_t v = -1;
            if (first && ReadLooseInt(r_, &v)) n.parent = v;
            else if (!first) r_.Skip();
            first = false;
          }
        } else {
          ReadLooseInt(r_, &n.parent);
        }
      } else if (key == "inputs" || key == "outputs") {
        const bool in = key == "inputs";
        if (r_.Peek() == JsonKind::kObject) {
          ParseIo(in);
        } else {
          (in ? s_.in_values : s_.out_values) = s_.tree.ParseJson(r_);
        }
      } else if (key == "input_shapes") {
        s_.in_shapes = s_.tree.ParseJson(r_);
      } else if (key == "input_types") {
        s_.in_types = s_.tree.ParseJson(r_);
      } else if (key == "output_shapes") {
        s_.out_shapes = s_.tree.ParseJson(r_);
      } else if (key == "output_types") {
        s_.out_types = s_.tree.ParseJson(r_);
      } else if (key == "attrs") {
        ParseAttrs(&n);
      } else if (!Attribute(key, &n)) {
        r_.Skip();
      }
      if (!r_.ok()) return r_.status();
    }
    if (!r_.ok()) return r_.status();
    if (!have_id || name < 0) {
      r_.Fail(have_id ? "node has no \"name\"" : "node has no integer \"id\"", "et-schema");
      return r_.status();
    }
    n.name = name;
    n.refs_begin = static_cast<uint32_t>(cap_->refs.size());
    const int64_t node_id = n.id;
    absl::StatusOr<uint16_t> ni = cap_->ExtractTensors(
        s_.tree, s_.in_values, s_.in_shapes, s_.in_types, s_.in_strides,
        [&] { return absl::StrCat(r_.source(), ": node ", node_id, " inputs"); });
    if (!ni.ok()) return ni.status();
    absl::StatusOr<uint16_t> no = cap_->ExtractTensors(
        s_.tree, s_.out_values, s_.out_shapes, s_.out_types, s_.out_strides,
        [&] { return absl::StrCat(r_.source(), ": node ", node_id, " outputs"); });
    if (!no.ok()) return no.status();
    n.num_inputs = *ni;
    n.num_outputs = *no;
    cap_->nodes.push_back(n);
    return absl::OkStatus();
  }

  // The attributes of schema 1.0.1 (plain keys) and of the attrs list.
  bool Attribute(absl::string_view key, EtNode* n) {
    int64_t v = 0;
    if (key == "rf_id") {
      if (ReadLooseInt(r_, &v)) n->rf_id = v;
    } else if (key == "scope") {
      if (ReadLooseInt(r_, &v)) n->scope = v >= 0 && v < 127 ? static_cast<int8_t>(v) : -1;
    } else if (key == "tid") {
      if (ReadLooseInt(r_, &v)) n->tid = static_cast<int32_t>(v);
    } else if (key == "fw_tid") {
      if (ReadLooseInt(r_, &v)) n->fw_tid = v != 0;
    } else {
      return false;
    }
    return true;
  }

  void ParseIo(bool in) {
    if (!r_.BeginObject()) return;
    absl::string_view key;
    while (r_.NextKey(&key)) {
      uint32_t* dst = nullptr;
      if (key == "values") dst = in ? &s_.in_values : &s_.out_values;
      else if (key == "shapes") dst = in ? &s_.in_shapes : &s_.out_shapes;
      else if (key == "types") dst = in ? &s_.in_types : &s_.out_types;
      else if (key == "strides") dst = in ? &s_.in_strides : &s_.out_strides;
      if (dst != nullptr) {
        *dst = s_.tree.ParseJson(r_);
      } else {
        r_.Skip();
      }
      if (!r_.ok()) return;
    }
  }

  void ParseAttrs(EtNode* n) {
    if (!r_.BeginArray()) return;
    std::string name;
    while (r_.NextElement()) {
      if (!r_.BeginObject()) return;
      absl::string_view key;
      name.clear();
      bool value_done = false;
      while (r_.NextKey(&key)) {
        if (key == "name") {
          absl::string_view s;
          if (r_.ReadString(&s)) name.assign(s.data(), s.size());
        } else if (key == "value" && !name.empty()) {
          value_done = Attribute(name, n);
          if (!value_done) r_.Skip();
        } else if (key == "value") {
          // "value" before "name": keep it in the scratch tree.
          uint32_t v = s_.tree.ParseJson(r_);
          int64_t x = 0;
          pending_value_ = s_.tree.AsInt(v, &x) ? x : INT64_MIN;
        } else {
          r_.Skip();
        }
        if (!r_.ok()) return;
      }
      if (!value_done && !name.empty() && pending_value_ != INT64_MIN) {
        ApplyPending(name, pending_value_, n);
      }
      pending_value_ = INT64_MIN;
    }
  }

  static void ApplyPending(absl::string_view name, int64_t v, EtNode* n) {
    if (name == "rf_id") n->rf_id = v;
    else if (name == "scope") n->scope = v >= 0 && v < 127 ? static_cast<int8_t>(v) : -1;
    else if (name == "tid") n->tid = static_cast<int32_t>(v);
    else if (name == "fw_tid") n->fw_tid = v != 0;
  }

  JsonReader& r_;
  EtCapture* cap_;
  NodeScratch s_;
  int64_t pending_value_ = INT64_MIN;
};

}  // namespace

absl::Status ParseEtJson(google::protobuf::io::ZeroCopyInputStream* in, const std::string& source,
                         const ImportOptions& options, std::function<absl::Status()> stream_error,
                         EtCapture* cap) {
  JsonLimits limits;
  limits.max_token_bytes = options.max_json_token_bytes;
  JsonReader r(in, source, limits, std::move(stream_error));
  EtJsonParser p(r, cap);
  return p.Run();
}

}  // namespace swapplan::import_internal

namespace swapplan::import_internal {

absl::StatusOr<Trace> ImportEtJson(ImportInput& in, const ImportOptions& options) {
  EtCapture cap;
  SWAPPLAN_RETURN_IF_ERROR(ParseEtJson(in.stream(), in.source(), options, in.ErrorFn(), &cap));
  if (options.kineto_path.empty()) {
    return ConvertEt(std::move(cap), in.source(), kFormatEtJson, options, nullptr);
  }
  SWAPPLAN_ASSIGN_OR_RETURN(EtPairing pairing, LoadKinetoPairing(options.kineto_path, options));
  SWAPPLAN_RETURN_IF_ERROR(PairWithEt(cap, in.source(), &pairing));
  return ConvertEt(std::move(cap), in.source(), kFormatEtJson, options, &pairing);
}

}  // namespace swapplan::import_internal
