// Chakra .et reader: varint-length-delimited records, one EtMetadata then
// EtNode records (proto/chakra_et.proto), into an EtCapture. A node's
// parent is its first ctrl_deps entry; is_cpu_op = false marks a device
// kernel node, whose duration counts towards its parent op; the IO fields
// are Python literals (pylit.h).
#include <string>

#include <google/protobuf/io/coded_stream.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "chakra_et.pb.h"
#include "import/formats.h"
#include "import/pylit.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::import_internal {
namespace {

namespace pbio = google::protobuf::io;

// Records longer than this are refused before reading them.
constexpr uint64_t kMaxRecordBytes = uint64_t{256} << 20;

// Reads a base-128 varint; false at a clean end of input (no byte read).
// *partial is set when the input ends inside the varint.
bool ReadVarint(pbio::ZeroCopyInputStream* in, uint64_t* v, bool* partial, int64_t* offset) {
  *v = 0;
  *partial = false;
  for (int shift = 0; shift < 64; shift += 7) {
    const void* data = nullptr;
    int size = 0;
    do {
      if (!in->Next(&data, &size)) {
        *partial = shift > 0;
        return false;
      }
    } while (size == 0);
    unsigned char b = *static_cast<const unsigned char*>(data);
    in->BackUp(size - 1);
    ++*offset;
    *v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  *partial = true;
  return false;
}

// Appends exactly n bytes as they arrive (never reserving n up front).
bool ReadBytes(pbio::ZeroCopyInputStream* in, uint64_t n, std::string* out) {
  out->clear();
  while (out->size() < n) {
    const void* data = nullptr;
    int size = 0;
    if (!in->Next(&data, &size)) return false;
    uint64_t take = std::min<uint64_t>(n - out->size(), static_cast<uint64_t>(size));
    out->append(static_cast<const char*>(data), static_cast<size_t>(take));
    if (take < static_cast<uint64_t>(size)) in->BackUp(size - static_cast<int>(take));
  }
  return true;
}

// "aten::conv2d(2)" -> ("aten::conv2d", true): older Chakra converters split
// an op into numbered pieces around its device kernels.
std::pair<absl::string_view, bool> PieceBase(absl::string_view name) {
  if (name.size() < 4 || name.back() != ')') return {name, false};
  size_t open = name.rfind('(');
  if (open == absl::string_view::npos || open + 2 > name.size() - 1) return {name, false};
  for (size_t k = open + 1; k + 1 < name.size(); ++k) {
    if (name[k] < '0' || name[k] > '9') return {name, false};
  }
  return {name.substr(0, open), true};
}

bool AttrInt(const swapplan::chakra::EtAttr& a, int64_t* out) {
  // Exactly one value field is set; proto3 scalars have no presence, so take
  // the first non-zero one (zero is zero in every field).
  const int64_t candidates[] = {a.int64_val(),
                                static_cast<int64_t>(a.uint64_val()),
                                a.int32_val(),
                                static_cast<int64_t>(a.uint32_val()),
                                a.sint64_val(),
                                a.sint32_val(),
                                static_cast<int64_t>(a.fixed64_val()),
                                static_cast<int64_t>(a.fixed32_val()),
                                a.sfixed64_val(),
                                a.sfixed32_val(),
                                a.bool_val() ? 1 : 0};
  for (int64_t c : candidates) {
    if (c != 0) {
      *out = c;
      return true;
    }
  }
  *out = 0;
  return true;
}

}  // namespace

absl::Status ParseChakraEt(pbio::ZeroCopyInputStream* in, const std::string& source,
                           std::function<absl::Status()> stream_error, EtCapture* cap) {
  std::string record;
  int64_t offset = 0;
  int64_t record_start = 0;
  int64_t index = 0;
  ValueTree tree(int64_t{1} << 24);
  swapplan::chakra::EtNode node;
  // Pieces of one op (same base name and rf_id) merge into the first.
  absl::flat_hash_map<int64_t, size_t> piece_of_rf;   // rf_id -> node index
  absl::flat_hash_map<int64_t, int64_t> alias;        // merged piece id -> first piece id
  auto fail = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": record ", index, " at byte ",
                                                   record_start, ": ", what, " [chakra-record]"));
  };
  for (;; ++index) {
    record_start = offset;
    uint64_t len = 0;
    bool partial = false;
    if (!ReadVarint(in, &len, &partial, &offset)) {
      if (stream_error) SWAPPLAN_RETURN_IF_ERROR(stream_error());
      if (partial) return fail("the input ends inside a record length");
      break;
    }
    if (len > kMaxRecordBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": record ", index, " at byte ", record_start, ": declares ", len,
          " bytes, more than the ", kMaxRecordBytes, "-byte limit per record [declared-size]"));
    }
    if (!ReadBytes(in, len, &record)) {
      if (stream_error) SWAPPLAN_RETURN_IF_ERROR(stream_error());
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": record ", index, " at byte ", record_start, ": declares ", len,
          " bytes but only ", record.size(), " remain [declared-size]"));
    }
    offset += static_cast<int64_t>(len);
    if (index == 0) {
      swapplan::chakra::EtMetadata meta;
      if (!meta.ParseFromString(record)) return fail("not a valid Chakra GlobalMetadata message");
      cap->schema = meta.version();
      for (const auto& a : meta.attr()) {
        if (a.name() == "schema") cap->schema = a.string_val();
        if (a.name() == "pid") AttrInt(a, &cap->pid);
        if (a.name() == "time") cap->time = a.string_val();
      }
      continue;
    }
    if (!node.ParseFromString(record)) return fail("not a valid Chakra Node message");
    EtNode n;
    if (node.id() > static_cast<uint64_t>(INT64_MAX)) return fail("node id out of range");
    n.id = static_cast<int64_t>(node.id());
    n.name = cap->InternName(node.name());
    if (node.ctrl_deps_size() > 0 && node.ctrl_deps(0) <= static_cast<uint64_t>(INT64_MAX)) {
      n.parent = static_cast<int64_t>(node.ctrl_deps(0));
    }
    if (node.duration_micros() > 0) {
      if (node.duration_micros() > static_cast<uint64_t>(INT64_MAX / 1000)) {
        return fail("duration_micros out of range");
      }
      n.duration_ns = static_cast<int64_t>(node.duration_micros()) * 1000;
    }
    for (const auto& a : node.attr()) {
      int64_t v = 0;
      if (a.name() == "rf_id") {
        AttrInt(a, &v);
        n.rf_id = v;
      } else if (a.name() == "scope") {
        AttrInt(a, &v);
        n.scope = v >= 0 && v < 127 ? static_cast<int8_t>(v) : -1;
      } else if (a.name() == "tid") {
        AttrInt(a, &v);
        n.tid = static_cast<int32_t>(v);
      } else if (a.name() == "fw_tid") {
        AttrInt(a, &v);
        n.fw_tid = v != 0;
      } else if (a.name() == "is_cpu_op") {
        n.gpu = !a.bool_val();
      }
    }
    auto [base, piece] = PieceBase(node.name());
    if (piece && n.rf_id >= 0 && !n.gpu) {
      auto [it, first] = piece_of_rf.try_emplace(n.rf_id, cap->nodes.size());
      EtNode* head = first ? nullptr : &cap->nodes[it->second];
      if (head != nullptr && cap->names[head->name] == base) {
        if (n.duration_ns > 0) head->duration_ns = std::max<int64_t>(head->duration_ns, 0) + n.duration_ns;
        alias[n.id] = head->id;
        continue;
      }
      n.name = cap->InternName(base);
    }
    tree.Clear();
    uint32_t io[6];
    const std::string* texts[6] = {&node.inputs().values(),  &node.inputs().shapes(),
                                   &node.inputs().types(),   &node.outputs().values(),
                                   &node.outputs().shapes(), &node.outputs().types()};
    static constexpr const char* kField[6] = {"inputs.values",  "inputs.shapes",
                                              "inputs.types",   "outputs.values",
                                              "outputs.shapes", "outputs.types"};
    for (int k = 0; k < 6; ++k) {
      io[k] = kNoValue;
      if (texts[k]->empty()) continue;
      SWAPPLAN_RETURN_IF_ERROR(ParsePythonLiteral(
          *texts[k], absl::StrCat(source, ": record ", index, " (node ", n.id, ") ", kField[k]),
          &tree, &io[k]));
    }
    n.refs_begin = static_cast<uint32_t>(cap->refs.size());
    const int64_t node_id = n.id;
    SWAPPLAN_ASSIGN_OR_RETURN(
        n.num_inputs, cap->ExtractTensors(tree, io[0], io[1], io[2], kNoValue, [&] {
          return absl::StrCat(source, ": record ", index, " (node ", node_id, ") inputs");
        }));
    SWAPPLAN_ASSIGN_OR_RETURN(
        n.num_outputs, cap->ExtractTensors(tree, io[3], io[4], io[5], kNoValue, [&] {
          return absl::StrCat(source, ": record ", index, " (node ", node_id, ") outputs");
        }));
    cap->nodes.push_back(n);
  }
  if (index == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": empty Chakra trace (no GlobalMetadata record) [chakra-record]"));
  }
  for (EtNode& n : cap->nodes) {
    auto it = alias.find(n.parent);
    if (it != alias.end()) n.parent = it->second;
  }
  return absl::OkStatus();
}

absl::StatusOr<Trace> ImportChakraEt(ImportInput& in, const ImportOptions& options) {
  EtCapture cap;
  SWAPPLAN_RETURN_IF_ERROR(ParseChakraEt(in.stream(), in.source(), in.ErrorFn(), &cap));
  if (options.kineto_path.empty()) {
    return ConvertEt(std::move(cap), in.source(), kFormatChakraEt, options, nullptr);
  }
  SWAPPLAN_ASSIGN_OR_RETURN(EtPairing pairing, LoadKinetoPairing(options.kineto_path, options));
  SWAPPLAN_RETURN_IF_ERROR(PairWithEt(cap, in.source(), &pairing));
  return ConvertEt(std::move(cap), in.source(), kFormatChakraEt, options, &pairing);
}

}  // namespace swapplan::import_internal
