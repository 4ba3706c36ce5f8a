#include "swapplan/policy/policy_io.h"

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policy.pb.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/file.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/utf8.h"

namespace swapplan {
namespace {

namespace pb = ::swapplan::proto;
using Json = nlohmann::json;

constexpr absl::string_view kPolicyFormat = "swapplan-policy";

std::string Hex(uint64_t v) { return absl::StrFormat("0x%016x", v); }

// --- proto conversion --------------------------------------------------------

void ToProto(const Policy& p, pb::Policy* out) {
  out->set_format(std::string(kPolicyFormat));
  out->set_format_version(kPolicyFormatVersion);
  out->mutable_fingerprint()->set_op_sequence_hash(p.fingerprint.op_sequence_hash);
  out->mutable_fingerprint()->set_iteration_ops(static_cast<uint32_t>(p.fingerprint.iteration_ops));
  out->mutable_fingerprint()->set_iteration(static_cast<uint32_t>(p.fingerprint.iteration));
  out->set_device_budget_bytes(p.device_budget_bytes);
  out->set_h2d_bandwidth_bytes_per_s(p.h2d_bandwidth_bytes_per_s);
  out->set_d2h_bandwidth_bytes_per_s(p.d2h_bandwidth_bytes_per_s);
  out->set_planner(p.planner);
  for (const auto& [k, v] : p.parameters) {
    pb::PolicyParameter* param = out->add_parameters();
    param->set_name(k);
    param->set_value(v);
  }
  out->set_expected_peak_bytes(p.expected_peak_bytes);
  out->set_expected_overhead_ns(p.expected_overhead_ns);
  out->set_simulated_iteration_time_ns(p.simulated_iteration_time_ns);
  for (const PolicyItem& it : p.items) {
    pb::PolicyItem* o = out->add_items();
    o->set_tensor_id(it.tensor_id);
    pb::RuntimeKey* k = o->mutable_runtime_key();
    k->set_op_count(it.runtime_key.op_count);
    k->set_op_mask(it.runtime_key.op_mask);
    k->set_op_history(it.runtime_key.op_history);
    k->set_dtype(static_cast<int32_t>(it.runtime_key.dtype));
    k->set_size_bytes(it.runtime_key.size_bytes);
    for (int64_t d : it.runtime_key.shape) k->add_shape(d);
    k->set_mask_bits(it.runtime_key.mask_bits);
    o->set_swap_out_op(static_cast<uint32_t>(it.swap_out_op));
    o->set_release_op(static_cast<uint32_t>(it.release_op));
    o->set_swap_in_op(static_cast<uint32_t>(it.swap_in_op));
    o->set_first_use_op(static_cast<uint32_t>(it.first_use_op));
    o->set_size_bytes(it.size_bytes);
    o->set_action(static_cast<pb::ItemAction>(it.action));
    o->set_recompute_ns(it.recompute_ns);
    o->set_release_waits_for_copy(it.release_waits_for_copy);
    o->set_wraps(it.wraps);
    o->set_clean(it.clean);
  }
  for (int32_t op : p.schedule) out->add_schedule(static_cast<uint32_t>(op));
  if (!p.pool.empty() || !p.pool.tensor_sizes.empty()) {
    pb::MemoryPool* pool = out->mutable_pool();
    for (int64_t s : p.pool.tensor_sizes) pool->add_tensor_sizes(s);
    for (int32_t c : p.pool.size_class) pool->add_size_class(static_cast<uint32_t>(c));
    for (const PoolClass& c : p.pool.classes) {
      pb::PoolClass* pc = pool->add_classes();
      pc->set_object_bytes(c.object_bytes);
      pc->set_count(static_cast<uint32_t>(c.count));
    }
  }
}

int32_t Clamp32(uint32_t v) { return v > INT32_MAX ? INT32_MAX : static_cast<int32_t>(v); }

absl::StatusOr<Policy> FromProto(const pb::Policy& in, const std::string& source,
                                 bool validate = true) {
  if (in.format() != kPolicyFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a swapplan policy (format is '", in.format(), "')"));
  }
  if (in.format_version() != static_cast<uint32_t>(kPolicyFormatVersion)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": policy format version ",
                                                   in.format_version(), " is not supported"));
  }
  bool text_ok = IsValidUtf8(in.planner());
  for (const pb::PolicyParameter& param : in.parameters()) {
    text_ok = text_ok && IsValidUtf8(param.name()) && IsValidUtf8(param.value());
  }
  if (!text_ok) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": planner text is not valid UTF-8"));
  }
  Policy p;
  p.fingerprint.op_sequence_hash = in.fingerprint().op_sequence_hash();
  p.fingerprint.iteration_ops = Clamp32(in.fingerprint().iteration_ops());
  p.fingerprint.iteration = Clamp32(in.fingerprint().iteration());
  p.device_budget_bytes = in.device_budget_bytes();
  p.h2d_bandwidth_bytes_per_s = in.h2d_bandwidth_bytes_per_s();
  p.d2h_bandwidth_bytes_per_s = in.d2h_bandwidth_bytes_per_s();
  p.planner = in.planner();
  for (const pb::PolicyParameter& param : in.parameters()) {
    p.parameters.emplace_back(param.name(), param.value());
  }
  p.expected_peak_bytes = in.expected_peak_bytes();
  p.expected_overhead_ns = in.expected_overhead_ns();
  p.simulated_iteration_time_ns = in.simulated_iteration_time_ns();
  for (const pb::PolicyItem& o : in.items()) {
    PolicyItem it;
    it.tensor_id = o.tensor_id();
    const pb::RuntimeKey& k = o.runtime_key();
    it.runtime_key.op_count = k.op_count();
    it.runtime_key.op_mask = k.op_mask();
    it.runtime_key.op_history = k.op_history();
    it.runtime_key.dtype =
        k.dtype() >= 0 && k.dtype() < kNumDTypes ? static_cast<DType>(k.dtype()) : DType::kUnknown;
    it.runtime_key.size_bytes = k.size_bytes();
    it.runtime_key.shape.assign(k.shape().begin(), k.shape().end());
    it.runtime_key.mask_bits = k.mask_bits();
    it.swap_out_op = Clamp32(o.swap_out_op());
    it.release_op = Clamp32(o.release_op());
    it.swap_in_op = Clamp32(o.swap_in_op());
    it.first_use_op = Clamp32(o.first_use_op());
    it.size_bytes = o.size_bytes();
    if (o.action() != pb::SWAP && o.action() != pb::RECOMPUTE) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": policy item ", p.items.size(),
                                                     " (tensor ", it.tensor_id,
                                                     "): unknown action ",
                                                     static_cast<int>(o.action())));
    }
    it.action = static_cast<ItemAction>(o.action());
    it.recompute_ns = o.recompute_ns();
    it.release_waits_for_copy = o.release_waits_for_copy();
    it.wraps = o.wraps();
    it.clean = o.clean();
    p.items.push_back(std::move(it));
  }
  p.schedule.reserve(in.schedule_size());
  for (uint32_t op : in.schedule()) p.schedule.push_back(Clamp32(op));
  if (in.has_pool()) {
    const pb::MemoryPool& pool = in.pool();
    p.pool.tensor_sizes.assign(pool.tensor_sizes().begin(), pool.tensor_sizes().end());
    for (uint32_t c : pool.size_class()) p.pool.size_class.push_back(Clamp32(c));
    for (const pb::PoolClass& c : pool.classes()) {
      p.pool.classes.push_back({c.object_bytes(), Clamp32(c.count())});
    }
  }
  if (absl::Status st = validate ? p.Validate() : absl::OkStatus(); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", st.message()));
  }
  return p;
}

// --- JSON ---------------------------------------------------------------------

Json ToJson(const Policy& p) {
  Json params = Json::array();
  for (const auto& [k, v] : p.parameters) params.push_back({{"name", k}, {"value", v}});
  Json items = Json::array();
  for (const PolicyItem& it : p.items) {
    const RuntimeKey& k = it.runtime_key;
    Json item = {{"tensor_id", it.tensor_id},
                 {"swap_out_op", it.swap_out_op},
                 {"release_op", it.release_op},
                 {"swap_in_op", it.swap_in_op},
                 {"first_use_op", it.first_use_op},
                 {"size_bytes", it.size_bytes},
                 {"runtime_key",
                  {{"op_count", k.op_count},
                   {"op_mask", Hex(k.op_mask)},
                   {"op_history", Hex(k.op_history)},
                   {"dtype", std::string(DTypeName(k.dtype))},
                   {"size_bytes", k.size_bytes},
                   {"shape", k.shape},
                   {"mask_bits", k.mask_bits}}}};
    // SWAP is the default and is left out, so swap-only policies read as before.
    if (it.action != ItemAction::kSwap) {
      item["action"] = std::string(ItemActionName(it.action));
      item["recompute_ns"] = it.recompute_ns;
    }
    // Left out when false, like the action.
    if (it.release_waits_for_copy) item["release_waits_for_copy"] = true;
    // Likewise the Advisor's flags: written only when set.
    if (it.wraps) item["wraps"] = true;
    if (it.clean) item["clean"] = true;
    items.push_back(std::move(item));
  }
  Json out = {{"format", std::string(kPolicyFormat)},
          {"format_version", kPolicyFormatVersion},
          {"fingerprint",
           {{"op_sequence_hash", Hex(p.fingerprint.op_sequence_hash)},
            {"iteration_ops", p.fingerprint.iteration_ops},
            {"iteration", p.fingerprint.iteration}}},
          {"device_budget_bytes", p.device_budget_bytes},
          {"h2d_bandwidth_bytes_per_s", p.h2d_bandwidth_bytes_per_s},
          {"d2h_bandwidth_bytes_per_s", p.d2h_bandwidth_bytes_per_s},
          {"planner", p.planner},
          {"parameters", params},
          {"expected_peak_bytes", p.expected_peak_bytes},
          {"expected_overhead_ns", p.expected_overhead_ns},
          {"simulated_iteration_time_ns", p.simulated_iteration_time_ns},
          {"items", items}};
  // Advisor fields, left out when absent so other policies read as before.
  if (!p.schedule.empty()) out["schedule"] = p.schedule;
  if (!p.pool.empty() || !p.pool.tensor_sizes.empty()) {
    Json classes = Json::array();
    for (const PoolClass& c : p.pool.classes) {
      classes.push_back({{"object_bytes", c.object_bytes}, {"count", c.count}});
    }
    out["pool"] = {{"tensor_sizes", p.pool.tensor_sizes},
                   {"size_class", p.pool.size_class},
                   {"classes", classes}};
  }
  return out;
}

// Reads JSON into the proto message so both forms share FromProto's checks.
class PolicyJsonReader {
 public:
  explicit PolicyJsonReader(const std::string& source) : source_(source) {}

  absl::Status Fail(const std::string& path, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": JSON ", path, ": ", what));
  }
  absl::StatusOr<uint64_t> Uint(const Json& j, const std::string& path) const {
    if (j.is_number_unsigned()) return j.get<uint64_t>();
    return Fail(path, absl::StrCat("expected an unsigned integer, got ", j.type_name()));
  }
  absl::StatusOr<int64_t> Int(const Json& j, const std::string& path) const {
    if (j.is_number_integer()) return j.get<int64_t>();
    return Fail(path, absl::StrCat("expected an integer, got ", j.type_name()));
  }
  absl::StatusOr<uint64_t> Hex64(const Json& j, const std::string& path) const {
    if (j.is_number_unsigned()) return j.get<uint64_t>();
    uint64_t v = 0;
    if (j.is_string()) {
      std::string s = j.get<std::string>();
      if ((s.size() > 2 && (s[1] == 'x' || s[1] == 'X') && s[0] == '0') && absl::SimpleHexAtoi(s.substr(2), &v)) return v;
    }
    return Fail(path, "expected a hex string like \"0x00ff\"");
  }
  absl::StatusOr<double> Number(const Json& j, const std::string& path) const {
    if (j.is_number()) return j.get<double>();
    return Fail(path, absl::StrCat("expected a number, got ", j.type_name()));
  }
  absl::StatusOr<std::string> String(const Json& j, const std::string& path) const {
    if (j.is_string()) return j.get<std::string>();
    return Fail(path, absl::StrCat("expected a string, got ", j.type_name()));
  }

  absl::Status Read(const Json& j, pb::Policy* out) {
    if (!j.is_object()) return Fail("$", "expected an object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      const Json& v = it.value();
      std::string path = "$." + key;
      if (key == "format") {
        SWAPPLAN_ASSIGN_OR_RETURN(*out->mutable_format(), String(v, path));
      } else if (key == "format_version") {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v, path));
        out->set_format_version(static_cast<uint32_t>(x));
      } else if (key == "fingerprint") {
        if (!v.is_object()) return Fail(path, "expected an object");
        if (v.contains("op_sequence_hash")) {
          SWAPPLAN_ASSIGN_OR_RETURN(uint64_t h,
                                    Hex64(v["op_sequence_hash"], path + ".op_sequence_hash"));
          out->mutable_fingerprint()->set_op_sequence_hash(h);
        }
        if (v.contains("iteration_ops")) {
          SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v["iteration_ops"], path + ".iteration_ops"));
          out->mutable_fingerprint()->set_iteration_ops(static_cast<uint32_t>(x));
        }
        if (v.contains("iteration")) {
          SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v["iteration"], path + ".iteration"));
          out->mutable_fingerprint()->set_iteration(static_cast<uint32_t>(x));
        }
      } else if (key == "device_budget_bytes") {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v, path));
        out->set_device_budget_bytes(x);
      } else if (key == "h2d_bandwidth_bytes_per_s") {
        SWAPPLAN_ASSIGN_OR_RETURN(double x, Number(v, path));
        out->set_h2d_bandwidth_bytes_per_s(x);
      } else if (key == "d2h_bandwidth_bytes_per_s") {
        SWAPPLAN_ASSIGN_OR_RETURN(double x, Number(v, path));
        out->set_d2h_bandwidth_bytes_per_s(x);
      } else if (key == "planner") {
        SWAPPLAN_ASSIGN_OR_RETURN(*out->mutable_planner(), String(v, path));
      } else if (key == "parameters") {
        if (!v.is_array()) return Fail(path, "expected an array");
        for (size_t i = 0; i < v.size(); ++i) {
          std::string ip = absl::StrCat(path, "[", i, "]");
          if (!v[i].is_object() || !v[i].contains("name") || !v[i].contains("value")) {
            return Fail(ip, "expected {\"name\": ..., \"value\": ...}");
          }
          pb::PolicyParameter* p = out->add_parameters();
          SWAPPLAN_ASSIGN_OR_RETURN(*p->mutable_name(), String(v[i]["name"], ip + ".name"));
          SWAPPLAN_ASSIGN_OR_RETURN(*p->mutable_value(), String(v[i]["value"], ip + ".value"));
        }
      } else if (key == "expected_peak_bytes") {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v, path));
        out->set_expected_peak_bytes(x);
      } else if (key == "expected_overhead_ns") {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v, path));
        out->set_expected_overhead_ns(x);
      } else if (key == "simulated_iteration_time_ns") {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v, path));
        out->set_simulated_iteration_time_ns(x);
      } else if (key == "items") {
        if (!v.is_array()) return Fail(path, "expected an array");
        for (size_t i = 0; i < v.size(); ++i) {
          SWAPPLAN_RETURN_IF_ERROR(Item(v[i], absl::StrCat(path, "[", i, "]"), out->add_items()));
        }
      } else if (key == "schedule") {
        if (!v.is_array()) return Fail(path, "expected an array");
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string ip = absl::StrCat(path, "[", i, "]");
          SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v[i], ip));
          if (x > INT32_MAX) return Fail(ip, "op index out of range");
          out->add_schedule(static_cast<uint32_t>(x));
        }
      } else if (key == "pool") {
        SWAPPLAN_RETURN_IF_ERROR(Pool(v, path, out->mutable_pool()));
      } else {
        return Fail(path, "unknown field");
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Item(const Json& j, const std::string& path, pb::PolicyItem* o) {
    if (!j.is_object()) return Fail(path, "expected an object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      const Json& v = it.value();
      std::string p = path + "." + key;
      if (key == "tensor_id") {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v, p));
        o->set_tensor_id(x);
      } else if (key == "swap_out_op" || key == "release_op" || key == "swap_in_op" ||
                 key == "first_use_op") {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v, p));
        if (x > INT32_MAX) return Fail(p, "op index out of range");
        uint32_t op = static_cast<uint32_t>(x);
        if (key == "swap_out_op") o->set_swap_out_op(op);
        if (key == "release_op") o->set_release_op(op);
        if (key == "swap_in_op") o->set_swap_in_op(op);
        if (key == "first_use_op") o->set_first_use_op(op);
      } else if (key == "size_bytes") {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v, p));
        o->set_size_bytes(x);
      } else if (key == "runtime_key") {
        SWAPPLAN_RETURN_IF_ERROR(Key(v, p, o->mutable_runtime_key()));
      } else if (key == "action") {
        SWAPPLAN_ASSIGN_OR_RETURN(std::string a, String(v, p));
        ItemAction action;
        if (!ParseItemAction(a, &action)) {
          return Fail(p, "unknown action '" + a + "' (expected SWAP or RECOMPUTE)");
        }
        o->set_action(static_cast<pb::ItemAction>(action));
      } else if (key == "recompute_ns") {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v, p));
        o->set_recompute_ns(x);
      } else if (key == "release_waits_for_copy") {
        if (!v.is_boolean()) return Fail(p, "expected true or false");
        o->set_release_waits_for_copy(v.get<bool>());
      } else if (key == "wraps" || key == "clean") {
        if (!v.is_boolean()) return Fail(p, absl::StrCat("expected true or false, got ", v.type_name()));
        (key == "wraps") ? o->set_wraps(v.get<bool>()) : o->set_clean(v.get<bool>());
      } else {
        return Fail(p, "unknown field");
      }
    }
    return absl::OkStatus();
  }

  absl::Status Pool(const Json& j, const std::string& path, pb::MemoryPool* pool) {
    if (!j.is_object()) return Fail(path, "expected an object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      const Json& v = it.value();
      const std::string p = path + "." + key;
      if (key != "tensor_sizes" && key != "size_class" && key != "classes") {
        return Fail(p, "unknown field");
      }
      if (!v.is_array()) return Fail(p, "expected an array");
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string ip = absl::StrCat(p, "[", i, "]");
        if (key == "tensor_sizes") {
          SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v[i], ip));
          pool->add_tensor_sizes(x);
        } else if (key == "size_class") {
          SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v[i], ip));
          if (x > INT32_MAX) return Fail(ip, "class index out of range");
          pool->add_size_class(static_cast<uint32_t>(x));
        } else if (key == "classes") {
          if (!v[i].is_object() || !v[i].contains("object_bytes") || !v[i].contains("count") ||
              v[i].size() != 2) {
            return Fail(ip, "expected {\"object_bytes\": ..., \"count\": ...}");
          }
          pb::PoolClass* c = pool->add_classes();
          SWAPPLAN_ASSIGN_OR_RETURN(int64_t b, Int(v[i]["object_bytes"], ip + ".object_bytes"));
          SWAPPLAN_ASSIGN_OR_RETURN(uint64_t n, Uint(v[i]["count"], ip + ".count"));
          if (n > INT32_MAX) return Fail(ip + ".count", "count out of range");
          c->set_object_bytes(b);
          c->set_count(static_cast<uint32_t>(n));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status Key(const Json& j, const std::string& path, pb::RuntimeKey* k) {
    if (!j.is_object()) return Fail(path, "expected an object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      const Json& v = it.value();
      std::string p = path + "." + key;
      if (key == "op_count") {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v, p));
        k->set_op_count(static_cast<uint32_t>(x));
      } else if (key == "op_mask") {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Hex64(v, p));
        k->set_op_mask(x);
      } else if (key == "op_history") {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Hex64(v, p));
        k->set_op_history(x);
      } else if (key == "dtype") {
        SWAPPLAN_ASSIGN_OR_RETURN(std::string d, String(v, p));
        DType dt;
        if (!ParseDType(d, &dt)) return Fail(p, "unknown dtype '" + d + "'");
        k->set_dtype(static_cast<int32_t>(dt));
      } else if (key == "size_bytes") {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, Int(v, p));
        k->set_size_bytes(x);
      } else if (key == "shape") {
        if (!v.is_array()) return Fail(p, "expected an array");
        for (size_t i = 0; i < v.size(); ++i) {
          SWAPPLAN_ASSIGN_OR_RETURN(int64_t d, Int(v[i], absl::StrCat(p, "[", i, "]")));
          k->add_shape(d);
        }
      } else if (key == "mask_bits") {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Uint(v, p));
        k->set_mask_bits(static_cast<uint32_t>(x));
      } else {
        return Fail(p, "unknown field");
      }
    }
    return absl::OkStatus();
  }

  const std::string& source_;
};

}  // namespace

PolicyFingerprint ComputeFingerprint(const Trace& trace, int32_t iteration) {
  const IterationInfo& iter = trace.iteration(iteration);
  // FingerprintState (policy.h); names are hashed once each.
  std::vector<uint64_t> name_hash(trace.num_op_names());
  for (NameId n = 0; n < trace.num_op_names(); ++n) name_hash[n] = NameHash(trace.op_name(n));
  FingerprintState state;
  for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
    const OpInfo& op = trace.op(i);
    state.AddOp(name_hash[op.name], op.phase);
  }
  PolicyFingerprint fp;
  fp.op_sequence_hash = state.value();
  fp.iteration_ops = iter.num_ops();
  fp.iteration = iteration;
  return fp;
}

absl::Status CheckFingerprint(const Policy& policy, const Trace& trace) {
  const int32_t it = policy.fingerprint.iteration;
  if (it < 0 || it >= trace.num_iterations()) {
    return absl::FailedPreconditionError(
        absl::StrCat("policy was made for iteration ", it, " but ", trace.source(), " has ",
                     trace.num_iterations(), " iterations"));
  }
  PolicyFingerprint fp = ComputeFingerprint(trace, it);
  if (!(fp == policy.fingerprint)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "policy fingerprint (", Hex(policy.fingerprint.op_sequence_hash), ", ",
        policy.fingerprint.iteration_ops, " ops) does not match iteration ", it, " of ",
        trace.source(), " (", Hex(fp.op_sequence_hash), ", ", fp.iteration_ops,
        " ops) [fingerprint-mismatch]"));
  }
  return absl::OkStatus();
}

std::string PolicyToJson(const Policy& policy) { return ToJson(policy).dump(1) + "\n"; }

std::string PolicyToBinary(const Policy& policy) {
  pb::Policy msg;
  ToProto(policy, &msg);
  return msg.SerializeAsString();
}

namespace {

absl::StatusOr<Policy> ParseJson(absl::string_view json, const std::string& source,
                                 bool validate) {
  Json j = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not valid JSON"));
  }
  pb::Policy msg;
  SWAPPLAN_RETURN_IF_ERROR(PolicyJsonReader(source).Read(j, &msg));
  return FromProto(msg, source, validate);
}

absl::StatusOr<Policy> ParseBinary(absl::string_view bytes, const std::string& source,
                                   bool validate) {
  pb::Policy msg;
  if (!msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": neither a JSON nor a binary swapplan policy"));
  }
  return FromProto(msg, source, validate);
}

absl::StatusOr<Policy> Read(const std::string& path, bool validate) {
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> in, InputFile::Open(path));
  SWAPPLAN_ASSIGN_OR_RETURN(std::string content, in->ReadAll());
  absl::string_view s = absl::StripLeadingAsciiWhitespace(content);
  if (!s.empty() && s.front() == '{') return ParseJson(content, path, validate);
  return ParseBinary(content, path, validate);
}

}  // namespace

absl::StatusOr<Policy> ParsePolicyJson(absl::string_view json, const std::string& source) {
  return ParseJson(json, source, /*validate=*/true);
}

absl::StatusOr<Policy> ParsePolicyBinary(absl::string_view bytes, const std::string& source) {
  return ParseBinary(bytes, source, /*validate=*/true);
}

absl::StatusOr<Policy> ReadPolicy(const std::string& path) { return Read(path, true); }

absl::StatusOr<Policy> ReadPolicyForCheck(const std::string& path) { return Read(path, false); }

absl::Status WritePolicy(const Policy& policy, const std::string& path) {
  SWAPPLAN_RETURN_IF_ERROR(policy.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out,
                            OutputFile::Open(path, HasGzipSuffix(path)));
  if (TraceFormatForPath(path) == TraceFormat::kJson) {
    out->ostream() << PolicyToJson(policy);
  } else {
    out->ostream() << PolicyToBinary(policy);
  }
  return out->Commit();
}

}  // namespace swapplan
