// JSON trace form (see include/swapplan/trace/io.h for the layout).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "swapplan/trace/builder.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/utf8.h"

namespace swapplan {
namespace {

using Json = nlohmann::json;

// Typed, path-tracking accessors: every schema error names the JSON path.
class JsonReader {
 public:
  explicit JsonReader(const std::string& source) : source_(source) {}

  absl::Status Fail(const std::string& path, absl::string_view what) const {
    return WithRule(absl::InvalidArgumentError(
                        absl::StrCat(source_, ": JSON ", path, ": ", what, " [json-schema]")),
                    "json-schema");
  }

  static const char* TypeName(const Json& j) { return j.type_name(); }

  absl::Status CheckObject(const Json& j, const std::string& path,
                           std::initializer_list<const char*> allowed) const {
    if (!j.is_object()) return Fail(path, absl::StrCat("expected an object, got ", TypeName(j)));
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || it.key() == a;
      if (!ok) return Fail(path, absl::StrCat("unknown field '", EscapeForMessage(it.key()), "'"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> Int(const Json& j, const std::string& path) const {
    if (j.is_number_unsigned()) {
      uint64_t v = j.get<uint64_t>();
      if (v > static_cast<uint64_t>(INT64_MAX)) return Fail(path, "integer out of range");
      return static_cast<int64_t>(v);
    }
    if (j.is_number_integer()) return j.get<int64_t>();
    return Fail(path, absl::StrCat("expected an integer, got ", TypeName(j)));
  }
  absl::StatusOr<uint64_t> Uint(const Json& j, const std::string& path) const {
    if (j.is_number_unsigned()) return j.get<uint64_t>();
    if (j.is_number_integer()) {
      return Fail(path, absl::StrCat("expected an id >= 0, got ", j.get<int64_t>()));
    }
    return Fail(path, absl::StrCat("expected an unsigned integer, got ", TypeName(j)));
  }
  absl::StatusOr<int32_t> Int32(const Json& j, const std::string& path) const {
    SWAPPLAN_ASSIGN_OR_RETURN(int64_t v, Int(j, path));
    if (v < INT32_MIN || v > INT32_MAX) return Fail(path, "integer out of range");
    return static_cast<int32_t>(v);
  }
  absl::StatusOr<double> Number(const Json& j, const std::string& path) const {
    if (!j.is_number()) return Fail(path, absl::StrCat("expected a number, got ", TypeName(j)));
    return j.get<double>();
  }
  absl::StatusOr<std::string> String(const Json& j, const std::string& path) const {
    if (!j.is_string()) return Fail(path, absl::StrCat("expected a string, got ", TypeName(j)));
    return j.get<std::string>();
  }
  absl::StatusOr<bool> Bool(const Json& j, const std::string& path) const {
    if (!j.is_boolean()) return Fail(path, absl::StrCat("expected true/false, got ", TypeName(j)));
    return j.get<bool>();
  }
  absl::Status Array(const Json& j, const std::string& path) const {
    if (!j.is_array()) return Fail(path, absl::StrCat("expected an array, got ", TypeName(j)));
    return absl::OkStatus();
  }

 private:
  const std::string& source_;
};

class TraceJsonParser {
 public:
  TraceJsonParser(const std::string& source) : r_(source), b_(source) {}

  absl::StatusOr<Trace> Parse(const Json& root) {
    SWAPPLAN_RETURN_IF_ERROR(r_.CheckObject(
        root, "$", {"format", "format_version", "metadata", "op_names", "tensors", "iterations"}));
    if (root.contains("format")) {
      SWAPPLAN_ASSIGN_OR_RETURN(std::string f, r_.String(root["format"], "$.format"));
      if (f != "swapplan-trace") {
        return r_.Fail("$.format", absl::StrCat("is '", EscapeForMessage(f),
                                                "', expected 'swapplan-trace'"));
      }
    }
    if (root.contains("format_version")) {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t v, r_.Int(root["format_version"], "$.format_version"));
      if (v != kTraceFormatVersion) {
        return r_.Fail("$.format_version",
                       absl::StrCat("version ", v, " is not supported (expected ",
                                    kTraceFormatVersion, ")"));
      }
    }
    if (root.contains("metadata")) SWAPPLAN_RETURN_IF_ERROR(Metadata(root["metadata"]));
    if (root.contains("op_names")) {
      const Json& names = root["op_names"];
      SWAPPLAN_RETURN_IF_ERROR(r_.Array(names, "$.op_names"));
      for (size_t i = 0; i < names.size(); ++i) {
        SWAPPLAN_ASSIGN_OR_RETURN(std::string n,
                                  r_.String(names[i], absl::StrCat("$.op_names[", i, "]")));
        b_.AddOpName(n);
      }
    }
    if (root.contains("tensors")) {
      const Json& tensors = root["tensors"];
      SWAPPLAN_RETURN_IF_ERROR(r_.Array(tensors, "$.tensors"));
      for (size_t i = 0; i < tensors.size(); ++i) {
        SWAPPLAN_RETURN_IF_ERROR(Tensor(tensors[i], absl::StrCat("$.tensors[", i, "]")));
      }
    }
    if (!root.contains("iterations")) return r_.Fail("$", "missing field 'iterations'");
    const Json& iterations = root["iterations"];
    SWAPPLAN_RETURN_IF_ERROR(r_.Array(iterations, "$.iterations"));
    for (size_t i = 0; i < iterations.size(); ++i) {
      SWAPPLAN_RETURN_IF_ERROR(Iteration(iterations[i], absl::StrCat("$.iterations[", i, "]")));
    }
    return std::move(b_).Finish();
  }

 private:
  absl::Status Metadata(const Json& m) {
    SWAPPLAN_RETURN_IF_ERROR(r_.CheckObject(
        m, "$.metadata",
        {"device_name", "device_memory_bytes", "h2d_bandwidth_bytes_per_s",
         "d2h_bandwidth_bytes_per_s", "framework", "recorder", "recorder_version", "model_name",
         "model_layers", "attributes"}));
    TraceMetadata& md = b_.metadata();
    auto str = [&](const char* key, std::string* out) -> absl::Status {
      if (!m.contains(key)) return absl::OkStatus();
      SWAPPLAN_ASSIGN_OR_RETURN(*out, r_.String(m[key], absl::StrCat("$.metadata.", key)));
      return absl::OkStatus();
    };
    SWAPPLAN_RETURN_IF_ERROR(str("device_name", &md.device_name));
    SWAPPLAN_RETURN_IF_ERROR(str("framework", &md.framework));
    SWAPPLAN_RETURN_IF_ERROR(str("recorder", &md.recorder));
    SWAPPLAN_RETURN_IF_ERROR(str("recorder_version", &md.recorder_version));
    SWAPPLAN_RETURN_IF_ERROR(str("model_name", &md.model_name));
    if (m.contains("device_memory_bytes")) {
      SWAPPLAN_ASSIGN_OR_RETURN(md.device_memory_bytes,
                                r_.Int(m["device_memory_bytes"], "$.metadata.device_memory_bytes"));
    }
    if (m.contains("h2d_bandwidth_bytes_per_s")) {
      SWAPPLAN_ASSIGN_OR_RETURN(md.h2d_bandwidth_bytes_per_s,
                                r_.Number(m["h2d_bandwidth_bytes_per_s"],
                                          "$.metadata.h2d_bandwidth_bytes_per_s"));
    }
    if (m.contains("d2h_bandwidth_bytes_per_s")) {
      SWAPPLAN_ASSIGN_OR_RETURN(md.d2h_bandwidth_bytes_per_s,
                                r_.Number(m["d2h_bandwidth_bytes_per_s"],
                                          "$.metadata.d2h_bandwidth_bytes_per_s"));
    }
    if (m.contains("model_layers")) {
      SWAPPLAN_ASSIGN_OR_RETURN(md.model_layers,
                                r_.Int32(m["model_layers"], "$.metadata.model_layers"));
    }
    if (m.contains("attributes")) {
      const Json& a = m["attributes"];
      if (!a.is_object()) return r_.Fail("$.metadata.attributes", "expected an object");
      for (auto it = a.begin(); it != a.end(); ++it) {
        const Json& v = it.value();
        if (v.is_structured()) {
          // Flat key/value pairs only (and no unbounded recursion in dump()).
          return r_.Fail(absl::StrCat("$.metadata.attributes.", EscapeForMessage(it.key(), 40)),
                         "expected a string, number, true/false or null");
        }
        md.attributes.emplace_back(it.key(), v.is_string() ? v.get<std::string>() : v.dump());
      }
      std::sort(md.attributes.begin(), md.attributes.end());
    }
    return absl::OkStatus();
  }

  absl::Status Tensor(const Json& t, const std::string& path) {
    SWAPPLAN_RETURN_IF_ERROR(r_.CheckObject(t, path,
                                            {"id", "size_bytes", "dtype", "shape", "kind",
                                             "storage_id", "device_address", "persistent",
                                             "name"}));
    if (!t.contains("id")) return r_.Fail(path, "missing field 'id'");
    if (!t.contains("size_bytes")) return r_.Fail(path, "missing field 'size_bytes'");
    TensorSpec s;
    SWAPPLAN_ASSIGN_OR_RETURN(s.id, r_.Uint(t["id"], path + ".id"));
    SWAPPLAN_ASSIGN_OR_RETURN(s.size_bytes, r_.Int(t["size_bytes"], path + ".size_bytes"));
    if (t.contains("dtype")) {
      SWAPPLAN_ASSIGN_OR_RETURN(std::string d, r_.String(t["dtype"], path + ".dtype"));
      if (!ParseDType(d, &s.dtype)) {
        return r_.Fail(path + ".dtype", "unknown dtype '" + EscapeForMessage(d) + "'");
      }
    }
    if (t.contains("kind")) {
      SWAPPLAN_ASSIGN_OR_RETURN(std::string k, r_.String(t["kind"], path + ".kind"));
      if (!ParseTensorKind(k, &s.kind)) {
        return r_.Fail(path + ".kind", "unknown tensor kind '" + EscapeForMessage(k) + "'");
      }
    }
    shape_.clear();
    if (t.contains("shape")) {
      const Json& sh = t["shape"];
      SWAPPLAN_RETURN_IF_ERROR(r_.Array(sh, path + ".shape"));
      for (size_t i = 0; i < sh.size(); ++i) {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t d, r_.Int(sh[i], absl::StrCat(path, ".shape[", i, "]")));
        shape_.push_back(d);
      }
    }
    s.shape = shape_;
    if (t.contains("storage_id")) {
      SWAPPLAN_ASSIGN_OR_RETURN(s.storage_id, r_.Int(t["storage_id"], path + ".storage_id"));
    }
    if (t.contains("device_address")) {
      SWAPPLAN_ASSIGN_OR_RETURN(s.device_address,
                                r_.Uint(t["device_address"], path + ".device_address"));
    }
    if (t.contains("persistent")) {
      SWAPPLAN_ASSIGN_OR_RETURN(bool p, r_.Bool(t["persistent"], path + ".persistent"));
      s.persistent = p ? 1 : 0;
    }
    std::string name;
    if (t.contains("name")) {
      SWAPPLAN_ASSIGN_OR_RETURN(name, r_.String(t["name"], path + ".name"));
    }
    s.name = name;
    b_.AddTensor(s);
    return absl::OkStatus();
  }

  absl::Status Ids(const Json& j, const std::string& path, std::vector<uint64_t>* out) {
    out->clear();
    SWAPPLAN_RETURN_IF_ERROR(r_.Array(j, path));
    for (size_t i = 0; i < j.size(); ++i) {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t id, r_.Uint(j[i], absl::StrCat(path, "[", i, "]")));
      out->push_back(id);
    }
    return absl::OkStatus();
  }

  absl::Status Op(const Json& o, const std::string& path) {
    SWAPPLAN_RETURN_IF_ERROR(r_.CheckObject(
        o, path,
        {"name", "phase", "inputs", "outputs", "duration_ns", "allocator_bytes_in_use",
         "stack_id", "micro_batch", "layer"}));
    if (!o.contains("name")) return r_.Fail(path, "missing field 'name'");
    if (!o.contains("phase")) return r_.Fail(path, "missing field 'phase'");
    OpSpec s;
    const Json& name = o["name"];
    if (name.is_string()) {
      s.name = b_.InternOpName(name.get<std::string>());
    } else {
      // An index into op_names; range-checked by Finish().
      SWAPPLAN_ASSIGN_OR_RETURN(s.name, r_.Int32(name, path + ".name"));
    }
    SWAPPLAN_ASSIGN_OR_RETURN(std::string phase, r_.String(o["phase"], path + ".phase"));
    if (!ParsePhase(phase, &s.phase)) {
      return r_.Fail(path + ".phase",
                     "unknown phase '" + EscapeForMessage(phase) +
                         "' (FORWARD, BACKWARD, OPTIMIZER or OTHER)");
    }
    if (o.contains("inputs")) SWAPPLAN_RETURN_IF_ERROR(Ids(o["inputs"], path + ".inputs", &in_));
    else in_.clear();
    if (o.contains("outputs")) {
      SWAPPLAN_RETURN_IF_ERROR(Ids(o["outputs"], path + ".outputs", &out_));
    } else {
      out_.clear();
    }
    s.inputs = in_;
    s.outputs = out_;
    if (o.contains("duration_ns")) {
      SWAPPLAN_ASSIGN_OR_RETURN(s.duration_ns, r_.Int(o["duration_ns"], path + ".duration_ns"));
    }
    if (o.contains("allocator_bytes_in_use")) {
      SWAPPLAN_ASSIGN_OR_RETURN(
          s.allocator_bytes_in_use,
          r_.Int(o["allocator_bytes_in_use"], path + ".allocator_bytes_in_use"));
    }
    if (o.contains("stack_id")) {
      SWAPPLAN_ASSIGN_OR_RETURN(s.stack_id, r_.Int(o["stack_id"], path + ".stack_id"));
    }
    if (o.contains("micro_batch")) {
      SWAPPLAN_ASSIGN_OR_RETURN(s.micro_batch, r_.Int32(o["micro_batch"], path + ".micro_batch"));
    }
    if (o.contains("layer")) {
      SWAPPLAN_ASSIGN_OR_RETURN(s.layer, r_.Int32(o["layer"], path + ".layer"));
    }
    b_.AddOp(s);
    return absl::OkStatus();
  }

  absl::Status Event(const Json& e, const std::string& path) {
    SWAPPLAN_RETURN_IF_ERROR(r_.CheckObject(e, path, {"op", "kind", "tensor", "passive"}));
    for (const char* k : {"op", "kind", "tensor"}) {
      if (!e.contains(k)) return r_.Fail(path, absl::StrCat("missing field '", k, "'"));
    }
    SWAPPLAN_ASSIGN_OR_RETURN(uint64_t op, r_.Uint(e["op"], path + ".op"));
    if (op > UINT32_MAX) return r_.Fail(path + ".op", "op index out of range");
    SWAPPLAN_ASSIGN_OR_RETURN(std::string k, r_.String(e["kind"], path + ".kind"));
    MemoryEventKind kind;
    if (!ParseMemoryEventKind(k, &kind)) {
      return r_.Fail(path + ".kind",
                     "unknown memory event kind '" + EscapeForMessage(k) +
                         "' (ALLOC, FREE, SWAP_OUT or SWAP_IN)");
    }
    SWAPPLAN_ASSIGN_OR_RETURN(uint64_t tensor, r_.Uint(e["tensor"], path + ".tensor"));
    bool passive = false;
    if (e.contains("passive")) {
      SWAPPLAN_ASSIGN_OR_RETURN(passive, r_.Bool(e["passive"], path + ".passive"));
    }
    b_.AddMemoryEvent(static_cast<uint32_t>(op), kind, tensor, passive);
    return absl::OkStatus();
  }

  // {"position": 3, "kind": "PACK" | "UNPACK", "tensor": 7} (tensor
  // optional for an UNPACK).
  absl::Status Saved(const Json& e, const std::string& path) {
    SWAPPLAN_RETURN_IF_ERROR(r_.CheckObject(e, path, {"position", "kind", "tensor"}));
    for (const char* k : {"position", "kind"}) {
      if (!e.contains(k)) return r_.Fail(path, absl::StrCat("missing field '", k, "'"));
    }
    SWAPPLAN_ASSIGN_OR_RETURN(uint64_t position, r_.Uint(e["position"], path + ".position"));
    if (position > UINT32_MAX) return r_.Fail(path + ".position", "position out of range");
    SWAPPLAN_ASSIGN_OR_RETURN(std::string k, r_.String(e["kind"], path + ".kind"));
    if (k != "PACK" && k != "UNPACK") {
      return r_.Fail(path + ".kind",
                     "unknown saved-tensor event kind '" + EscapeForMessage(k) +
                         "' (PACK or UNPACK)");
    }
    std::optional<uint64_t> tensor;
    if (e.contains("tensor")) {
      SWAPPLAN_ASSIGN_OR_RETURN(tensor, r_.Uint(e["tensor"], path + ".tensor"));
    }
    b_.AddSavedTensorEvent(static_cast<uint32_t>(position), k == "UNPACK", tensor);
    return absl::OkStatus();
  }

  absl::Status Iteration(const Json& it, const std::string& path) {
    SWAPPLAN_RETURN_IF_ERROR(r_.CheckObject(
        it, path, {"wall_time_ns", "ops", "memory_events", "saved_tensor_events"}));
    b_.BeginIteration();
    int64_t wall = 0;
    if (it.contains("wall_time_ns")) {
      SWAPPLAN_ASSIGN_OR_RETURN(wall, r_.Int(it["wall_time_ns"], path + ".wall_time_ns"));
    }
    if (!it.contains("ops")) return r_.Fail(path, "missing field 'ops'");
    const Json& ops = it["ops"];
    SWAPPLAN_RETURN_IF_ERROR(r_.Array(ops, path + ".ops"));
    for (size_t i = 0; i < ops.size(); ++i) {
      SWAPPLAN_RETURN_IF_ERROR(Op(ops[i], absl::StrCat(path, ".ops[", i, "]")));
    }
    if (it.contains("memory_events")) {
      const Json& ev = it["memory_events"];
      SWAPPLAN_RETURN_IF_ERROR(r_.Array(ev, path + ".memory_events"));
      for (size_t i = 0; i < ev.size(); ++i) {
        SWAPPLAN_RETURN_IF_ERROR(Event(ev[i], absl::StrCat(path, ".memory_events[", i, "]")));
      }
    }
    if (it.contains("saved_tensor_events")) {
      const Json& ev = it["saved_tensor_events"];
      SWAPPLAN_RETURN_IF_ERROR(r_.Array(ev, path + ".saved_tensor_events"));
      b_.MarkSavedTensorEventsRecorded();
      for (size_t i = 0; i < ev.size(); ++i) {
        SWAPPLAN_RETURN_IF_ERROR(
            Saved(ev[i], absl::StrCat(path, ".saved_tensor_events[", i, "]")));
      }
    }
    b_.EndIteration(wall);
    return absl::OkStatus();
  }

  JsonReader r_;
  TraceBuilder b_;
  std::vector<int64_t> shape_;
  std::vector<uint64_t> in_, out_;
};

// Re-reads text that failed to parse, tracking the JSON path of the value
// being read, so the error says where it is: "$.iterations[0].wall_time_ns".
// Iterative (a stack of frames), so deep nesting cannot exhaust the stack.
class ErrorLocator : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    frames_.push_back({false, 0, {}, false});
    return true;
  }
  bool key(string_t& k) override {
    frames_.back().key = k;
    frames_.back().has_key = true;
    return true;
  }
  bool end_object() override { return End(); }
  bool start_array(std::size_t) override {
    frames_.push_back({true, 0, {}, false});
    return true;
  }
  bool end_array() override { return End(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    position_ = position;
    id_ = ex.id;
    what_ = ex.what();
    path_ = Path();
    return false;
  }

  size_t position() const { return position_; }
  int id() const { return id_; }
  const std::string& what() const { return what_; }
  const std::string& path() const { return path_; }

 private:
  struct Frame {
    bool array;
    size_t count;  // values read so far (arrays)
    std::string key;
    bool has_key;  // objects: a key was read, its value not yet
  };
  bool Value() {
    if (!frames_.empty()) {
      Frame& f = frames_.back();
      if (f.array) {
        ++f.count;
      } else {
        f.has_key = false;
      }
    }
    return true;
  }
  bool End() {
    frames_.pop_back();
    return Value();
  }
  // The path of the value being read when the error struck; past 16 levels
  // the middle is elided ("$[0][0]...(199990 levels)...[0]") to keep the
  // message one short line.
  std::string Path() const {
    constexpr size_t kHead = 4, kTail = 8;
    std::string p = "$";
    for (size_t i = 0; i < frames_.size(); ++i) {
      if (frames_.size() > kHead + kTail + 4 && i == kHead) {
        absl::StrAppend(&p, "...(", frames_.size() - kHead - kTail, " levels)...");
        i = frames_.size() - kTail - 1;
        continue;
      }
      const Frame& f = frames_[i];
      if (f.array) {
        absl::StrAppend(&p, "[", f.count, "]");
      } else if (f.has_key) {
        bool plain = !f.key.empty();
        for (char c : f.key) {
          plain = plain && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_');
        }
        if (plain) {
          absl::StrAppend(&p, ".", f.key);
        } else {
          absl::StrAppend(&p, "[\"", EscapeForMessage(f.key, 40), "\"]");
        }
      }
    }
    return p;
  }

  std::vector<Frame> frames_;
  size_t position_ = 0;
  int id_ = 0;
  std::string what_;
  std::string path_ = "$";
};

// The one-line error for text nlohmann could not parse: byte offset, JSON
// path and reason; rule json-number for a number no double can hold
// (1e400), json-syntax otherwise.
absl::Status JsonParseError(absl::string_view json, const std::string& source) {
  ErrorLocator locator;
  Json::sax_parse(json.begin(), json.end(), &locator);
  // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax
  // error while parsing value - invalid literal; last read: 'tru'" -> the
  // part after the position.
  std::string reason = locator.what();
  if (size_t col = reason.find("column "); col != std::string::npos) {
    if (size_t colon = reason.find(": ", col); colon != std::string::npos) {
      reason = reason.substr(colon + 2);
    }
  } else if (size_t bracket = reason.find("] "); bracket != std::string::npos) {
    reason = reason.substr(bracket + 2);
  }
  reason = EscapeForMessage(reason, 160);
  if (locator.id() == 406) {  // out_of_range.406: number overflow
    return WithRule(absl::InvalidArgumentError(absl::StrCat(
                        source, ": JSON ", locator.path(), " (byte ", locator.position(),
                        "): ", reason, " (out of the range of a double) [json-number]")),
                    "json-number");
  }
  return WithRule(absl::InvalidArgumentError(
                      absl::StrCat(source, ": JSON syntax error at byte ", locator.position(),
                                   " (", locator.path(), "): ", reason, " [json-syntax]")),
                  "json-syntax");
}

}  // namespace

absl::StatusOr<Trace> ParseTraceJson(absl::string_view json, const std::string& source) {
  Json root = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return JsonParseError(json, source);
  // The typed accessors check every type before reading a value, so nothing
  // below throws; the handler keeps that promise at the library boundary.
  try {
    return TraceJsonParser(source).Parse(root);
  } catch (const Json::exception& e) {
    return WithRule(absl::InvalidArgumentError(absl::StrCat(
                        source, ": JSON: ", EscapeForMessage(e.what(), 200), " [json-schema]")),
                    "json-schema");
  }
}

std::string TraceToJson(const Trace& t, bool pretty) {
  // Written by hand rather than through a DOM so that large traces stay cheap
  // and the layout is one op per line (diff-friendly) unless pretty.
  auto q = [](absl::string_view s) { return Json(std::string(s)).dump(); };
  const TraceMetadata& m = t.metadata();
  std::string out;
  absl::StrAppend(&out, "{\"format\": \"swapplan-trace\", \"format_version\": ",
                  kTraceFormatVersion, ",\n");
  Json md = {{"device_name", m.device_name},
             {"device_memory_bytes", m.device_memory_bytes},
             {"h2d_bandwidth_bytes_per_s", m.h2d_bandwidth_bytes_per_s},
             {"d2h_bandwidth_bytes_per_s", m.d2h_bandwidth_bytes_per_s},
             {"framework", m.framework},
             {"recorder", m.recorder},
             {"recorder_version", m.recorder_version},
             {"model_name", m.model_name},
             {"model_layers", m.model_layers}};
  Json attrs = Json::object();
  for (const auto& [k, v] : m.attributes) attrs[k] = v;
  md["attributes"] = attrs;
  absl::StrAppend(&out, " \"metadata\": ", md.dump(pretty ? 1 : -1), ",\n");
  Json names = t.op_names();
  absl::StrAppend(&out, " \"op_names\": ", names.dump(), ",\n \"tensors\": [");
  for (TensorId i = 0; i < t.num_tensors(); ++i) {
    const TensorInfo& info = t.tensor(i);
    Json j = {{"id", info.trace_id},
              {"size_bytes", info.size_bytes},
              {"dtype", std::string(DTypeName(info.dtype))},
              {"shape", std::vector<int64_t>(t.shape(i).begin(), t.shape(i).end())},
              {"kind", std::string(TensorKindName(info.kind))}};
    if (info.storage_id >= 0) j["storage_id"] = info.storage_id;
    if (info.device_address != 0) j["device_address"] = info.device_address;
    if (info.persistent != KindIsPersistentByDefault(info.kind)) j["persistent"] = info.persistent;
    if (!t.tensor_name(i).empty()) j["name"] = std::string(t.tensor_name(i));
    absl::StrAppend(&out, i == 0 ? "\n  " : ",\n  ", j.dump());
  }
  absl::StrAppend(&out, "],\n \"iterations\": [");
  for (int32_t it = 0; it < t.num_iterations(); ++it) {
    const IterationInfo& iter = t.iteration(it);
    absl::StrAppend(&out, it == 0 ? "\n  " : ",\n  ", "{\"wall_time_ns\": ", iter.wall_time_ns,
                    ", \"ops\": [");
    for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
      const OpInfo& op = t.op(i);
      absl::StrAppend(&out, i == iter.op_begin ? "\n   " : ",\n   ", "{\"name\": ",
                      q(t.op_name(op.name)), ", \"phase\": \"", PhaseName(op.phase),
                      "\", \"inputs\": [");
      bool first = true;
      for (TensorId in : t.inputs(i)) {
        absl::StrAppend(&out, first ? "" : ", ", t.tensor(in).trace_id);
        first = false;
      }
      absl::StrAppend(&out, "], \"outputs\": [");
      first = true;
      for (TensorId o : t.outputs(i)) {
        absl::StrAppend(&out, first ? "" : ", ", t.tensor(o).trace_id);
        first = false;
      }
      absl::StrAppend(&out, "]");
      if (op.duration_ns >= 0) absl::StrAppend(&out, ", \"duration_ns\": ", op.duration_ns);
      if (op.allocator_bytes_in_use >= 0) {
        absl::StrAppend(&out, ", \"allocator_bytes_in_use\": ", op.allocator_bytes_in_use);
      }
      if (op.stack_id >= 0) absl::StrAppend(&out, ", \"stack_id\": ", op.stack_id);
      if (op.micro_batch >= 0) absl::StrAppend(&out, ", \"micro_batch\": ", op.micro_batch);
      if (op.layer >= 0) absl::StrAppend(&out, ", \"layer\": ", op.layer);
      absl::StrAppend(&out, "}");
    }
    absl::StrAppend(&out, "],\n   \"memory_events\": [");
    absl::Span<const MemoryEvent> events = t.iteration_events(it);
    for (size_t e = 0; e < events.size(); ++e) {
      absl::StrAppend(&out, e == 0 ? "\n    " : ",\n    ", "{\"op\": ",
                      events[e].op - iter.op_begin, ", \"kind\": \"",
                      MemoryEventKindName(events[e].kind), "\", \"tensor\": ",
                      t.tensor(events[e].tensor).trace_id);
      if (events[e].passive) absl::StrAppend(&out, ", \"passive\": true");
      absl::StrAppend(&out, "}");
    }
    absl::StrAppend(&out, "]");
    if (iter.saved_recorded) {
      absl::StrAppend(&out, ",\n   \"saved_tensor_events\": [");
      absl::Span<const SavedTensorEvent> saved = t.iteration_saved_events(it);
      for (size_t e = 0; e < saved.size(); ++e) {
        absl::StrAppend(&out, e == 0 ? "\n    " : ",\n    ", "{\"position\": ",
                        saved[e].position, ", \"kind\": \"",
                        saved[e].unpack ? "UNPACK" : "PACK", "\"");
        if (saved[e].tensor != kNoTensor) {
          absl::StrAppend(&out, ", \"tensor\": ", t.tensor(saved[e].tensor).trace_id);
        }
        absl::StrAppend(&out, "}");
      }
      absl::StrAppend(&out, "]");
    }
    absl::StrAppend(&out, "}");
  }
  absl::StrAppend(&out, "]}\n");
  return out;
}

}  // namespace swapplan
