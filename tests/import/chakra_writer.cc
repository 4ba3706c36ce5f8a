#include "import/chakra_writer.h"

#include <cstdio>

#include <catch2/catch.hpp>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <nlohmann/json.hpp>

#include "chakra_et.pb.h"

namespace swapplan::testing {
namespace {

using nlohmann::json;

// str() of the Python value a JSON value stands for.
std::string PyRepr(const json& v) {
  switch (v.type()) {
    case json::value_t::array: {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + PyRepr(v[i]);
      return s + "]";
    }
    case json::value_t::string: {
      std::string s = "'";
      for (char c : v.get<std::string>()) {
        if (c == '\'' || c == '\\') s += '\\';
        s += c;
      }
      return s + "'";
    }
    case json::value_t::boolean: return v.get<bool>() ? "True" : "False";
    case json::value_t::null: return "None";
    case json::value_t::number_float: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", v.get<double>());
      std::string s = buf;
      if (s.find_first_of(".en") == std::string::npos) s += ".0";
      return s;
    }
    default: return v.dump();
  }
}

void Record(const google::protobuf::MessageLite& m, std::string* out) {
  std::string bytes = m.SerializeAsString();
  google::protobuf::io::StringOutputStream s(out);
  google::protobuf::io::CodedOutputStream cs(&s);
  cs.WriteVarint32(static_cast<uint32_t>(bytes.size()));
  cs.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
}

}  // namespace

std::string ChakraFromEtJson(const std::string& et_json) {
  json doc = json::parse(et_json);
  std::string out;
  swapplan::chakra::EtMetadata meta;
  auto* schema = meta.add_attr();
  schema->set_name("schema");
  schema->set_string_val(doc.value("schema", ""));
  auto* pid = meta.add_attr();
  pid->set_name("pid");
  pid->set_uint64_val(doc.value("pid", 0));
  Record(meta, &out);
  for (const json& n : doc["nodes"]) {
    swapplan::chakra::EtNode node;
    node.set_id(n["id"].get<uint64_t>());
    node.set_name(n["name"].get<std::string>());
    node.set_type(4);  // COMP_NODE
    json parent = n.contains("ctrl_deps") ? n["ctrl_deps"] : n.value("parent", json());
    if (parent.is_number()) node.add_ctrl_deps(parent.get<uint64_t>());
    auto io = [&](const char* key, const char* shapes, const char* types,
                  swapplan::chakra::EtIo* dst) {
      if (!n.contains(key)) return;
      const json& v = n[key];
      if (v.is_object()) {
        dst->set_values(PyRepr(v.value("values", json::array())));
        dst->set_shapes(PyRepr(v.value("shapes", json::array())));
        dst->set_types(PyRepr(v.value("types", json::array())));
      } else {
        dst->set_values(PyRepr(v));
        dst->set_shapes(PyRepr(n.value(shapes, json::array())));
        dst->set_types(PyRepr(n.value(types, json::array())));
      }
    };
    io("inputs", "input_shapes", "input_types", node.mutable_inputs());
    io("outputs", "output_shapes", "output_types", node.mutable_outputs());
    json attrs = json::object();
    if (n.contains("attrs")) {
      for (const json& a : n["attrs"]) attrs[a["name"].get<std::string>()] = a["value"];
    } else {
      for (const char* k : {"rf_id", "scope", "tid", "fw_tid", "seq_id", "fw_parent"}) {
        if (n.contains(k)) attrs[k] = n[k];
      }
    }
    for (const char* k : {"rf_id", "scope", "tid", "fw_tid"}) {
      if (!attrs.contains(k) || !attrs[k].is_number_integer()) continue;
      auto* a = node.add_attr();
      a->set_name(k);
      a->set_int64_val(attrs[k].get<int64_t>());
    }
    auto* cpu = node.add_attr();
    cpu->set_name("is_cpu_op");
    cpu->set_bool_val(true);
    Record(node, &out);
  }
  return out;
}

}  // namespace swapplan::testing
