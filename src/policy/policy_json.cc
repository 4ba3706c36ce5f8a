// The JSON form of a policy (policy_io.h, docs/policy-format.md): writer
// from Policy, strict reader into the proto message.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "policy/policy_codec.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/utf8.h"

namespace swapplan::internal_policy {
namespace {

namespace pb = ::swapplan::proto;
using Json = nlohmann::json;

// --- writer ---------------------------------------------------------------------

Json DeviceJson(const proto::DeviceModel& d) {
  Json tiers = Json::array();
  for (const proto::MemoryTier& t : d.tiers()) {
    tiers.push_back({{"name", t.name()},
                     {"capacity_bytes", t.capacity_bytes()},
                     {"store_bandwidth_bytes_per_s", t.store_bandwidth_bytes_per_s()},
                     {"load_bandwidth_bytes_per_s", t.load_bandwidth_bytes_per_s()},
                     {"latency_ns", t.latency_ns()},
                     {"shared_by_ranks", t.shared_by_ranks()}});
  }
  return {{"name", d.name()},
          {"capacity_bytes", d.capacity_bytes()},
          {"reserve_bytes", d.reserve_bytes()},
          {"h2d_bandwidth_bytes_per_s", d.h2d_bandwidth_bytes_per_s()},
          {"d2h_bandwidth_bytes_per_s", d.d2h_bandwidth_bytes_per_s()},
          {"copy_latency_ns", d.copy_latency_ns()},
          {"copy_engines", d.copy_engines()},
          {"compute_time_scale", d.compute_time_scale()},
          {"peak_flops_per_s", d.peak_flops_per_s()},
          {"memory_bandwidth_bytes_per_s", d.memory_bandwidth_bytes_per_s()},
          {"interconnect_bandwidth_bytes_per_s", d.interconnect_bandwidth_bytes_per_s()},
          {"tiers", tiers}};
}

Json AnchorJson(const OpAnchor& a) {
  return {{"phase", std::string(PhaseName(a.phase))},
          {"phase_ordinal", a.phase_ordinal},
          {"ordinal", a.ordinal}};
}

Json RuntimeJson(const PolicyRuntime& rt) {
  Json items = Json::array();
  for (const RuntimeItem& r : rt.items) {
    items.push_back({{"decision", AnchorJson(r.decision)},
                     {"use_index", r.use_index},
                     {"shape_hash", Hex(r.shape_hash)},
                     {"release", AnchorJson(r.release)},
                     {"swap_in", AnchorJson(r.swap_in)},
                     {"first_use", AnchorJson(r.first_use)}});
  }
  return {{"op_names", rt.op_names},
          {"op_ranks", rt.op_ranks},
          {"mask_bits", rt.mask_bits},
          {"op_sequence", rt.op_sequence},
          {"items", items}};
}

}  // namespace

Json ToJson(const Policy& p) {
  // Through the message, so the v1 fields and the device model are the ones
  // the binary form holds.
  pb::Policy msg;
  ToProto(p, &msg);
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
    // SWAP is the default and is left out, as are false flags.
    if (it.action != ItemAction::kSwap) {
      item["action"] = std::string(ItemActionName(it.action));
      item["recompute_ns"] = it.recompute_ns;
    }
    if (it.release_waits_for_copy) item["release_waits_for_copy"] = true;
    if (it.wraps) item["wraps"] = true;
    if (it.clean) item["clean"] = true;
    if (it.tier != 0) item["tier"] = it.tier;
    items.push_back(std::move(item));
  }
  Json out = {{"format", kPolicyFormat},
              {"format_version", msg.format_version()},
              {"fingerprint",
               {{"op_sequence_hash", Hex(p.fingerprint.op_sequence_hash)},
                {"iteration_ops", p.fingerprint.iteration_ops},
                {"iteration", p.fingerprint.iteration}}},
              {"device_budget_bytes", msg.device_budget_bytes()},
              {"h2d_bandwidth_bytes_per_s", msg.h2d_bandwidth_bytes_per_s()},
              {"d2h_bandwidth_bytes_per_s", msg.d2h_bandwidth_bytes_per_s()},
              {"device", DeviceJson(msg.device())},
              {"planner", p.planner},
              {"parameters", params},
              {"expected_peak_bytes", p.expected_peak_bytes},
              {"expected_overhead_ns", p.expected_overhead_ns},
              {"simulated_iteration_time_ns", p.simulated_iteration_time_ns},
              {"items", items}};
  // Optional sections, left out when absent.
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
  if (!p.runtime.empty()) out["runtime"] = RuntimeJson(p.runtime);
  return out;
}

namespace {

// --- reader ---------------------------------------------------------------------

// Typed, range-checked accessors; every error names the JSON path.
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  // "FILE: JSON PATH: what [rule]" (the rule also as the status's payload,
  // util/error.h), as the trace readers' schema errors.
  absl::Status Fail(const std::string& path, absl::string_view what,
                    absl::string_view rule = "policy-schema") const {
    return WithRule(Error(ErrorKind::kMalformedInput,
                          absl::StrCat(source_, ": JSON ", path, ": ", what, " [", rule, "]")),
                    rule);
  }
  absl::StatusOr<uint64_t> U64(const Json& j, const std::string& path) const {
    if (j.is_number_unsigned()) return j.get<uint64_t>();
    return Fail(path, absl::StrCat("expected an unsigned integer, got ", j.type_name()));
  }
  // An unsigned integer <= max.
  absl::StatusOr<uint64_t> U(const Json& j, const std::string& path, uint64_t max) const {
    SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U64(j, path));
    if (x > max) return Fail(path, absl::StrCat(x, " is out of range (at most ", max, ")"));
    return x;
  }
  absl::StatusOr<int64_t> I64(const Json& j, const std::string& path) const {
    if (j.is_number_unsigned() &&
        j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Fail(path, "out of the range of a 64-bit integer");
    }
    if (j.is_number_integer()) return j.get<int64_t>();
    return Fail(path, absl::StrCat("expected an integer, got ", j.type_name()));
  }
  absl::StatusOr<int32_t> I32(const Json& j, const std::string& path) const {
    SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(j, path));
    if (x < INT32_MIN || x > INT32_MAX) {
      return Fail(path, absl::StrCat(x, " is out of the range of a 32-bit integer"));
    }
    return static_cast<int32_t>(x);
  }
  absl::StatusOr<uint64_t> Hex64(const Json& j, const std::string& path) const {
    if (j.is_number_unsigned()) return j.get<uint64_t>();
    uint64_t v = 0;
    if (j.is_string()) {
      const std::string s = j.get<std::string>();
      if (s.size() > 2 && s.size() <= 18 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
          absl::SimpleHexAtoi(s.substr(2), &v)) {
        return v;
      }
    }
    return Fail(path, "expected a hex string like \"0x00ff\"");
  }
  absl::StatusOr<double> Number(const Json& j, const std::string& path) const {
    if (j.is_number() && std::isfinite(j.get<double>())) return j.get<double>();
    return Fail(path, absl::StrCat("expected a finite number, got ", j.type_name()));
  }
  absl::StatusOr<std::string> String(const Json& j, const std::string& path) const {
    if (j.is_string()) return j.get<std::string>();
    return Fail(path, absl::StrCat("expected a string, got ", j.type_name()));
  }
  absl::StatusOr<bool> Bool(const Json& j, const std::string& path) const {
    if (j.is_boolean()) return j.get<bool>();
    return Fail(path, absl::StrCat("expected true or false, got ", j.type_name()));
  }
  // Calls field(key, value, path) for every member of the object at `path`;
  // field returns NotFound for a key it does not know (an unknown field).
  absl::Status Object(
      const Json& j, const std::string& path,
      absl::FunctionRef<absl::Status(const std::string&, const Json&, const std::string&)> field)
      const {
    if (!j.is_object()) return Fail(path, absl::StrCat("expected an object, got ", j.type_name()));
    for (auto it = j.begin(); it != j.end(); ++it) {
      // The key is quoted escaped: a control character in it must not break
      // the message over lines (issue 19).
      const std::string p = path + "." + EscapeForMessage(it.key());
      absl::Status st = field(it.key(), it.value(), p);
      if (st.code() == absl::StatusCode::kNotFound) return Fail(p, "unknown field", "unknown-field");
      SWAPPLAN_RETURN_IF_ERROR(st);
    }
    return absl::OkStatus();
  }
  // Calls element(value, path) for every element of the array at `path`.
  absl::Status Array(const Json& j, const std::string& path,
                     absl::FunctionRef<absl::Status(const Json&, const std::string&)> element)
      const {
    if (!j.is_array()) return Fail(path, absl::StrCat("expected an array, got ", j.type_name()));
    for (size_t i = 0; i < j.size(); ++i) {
      SWAPPLAN_RETURN_IF_ERROR(element(j[i], absl::StrCat(path, "[", i, "]")));
    }
    return absl::OkStatus();
  }

  absl::Status Read(const Json& j, pb::Policy* out) const;

 private:
  absl::Status Fingerprint(const Json& j, const std::string& path, pb::PolicyFingerprint* f) const;
  absl::Status Item(const Json& j, const std::string& path, pb::PolicyItem* o) const;
  absl::Status Key(const Json& j, const std::string& path, pb::RuntimeKey* k) const;
  absl::Status Pool(const Json& j, const std::string& path, pb::MemoryPool* pool) const;
  absl::Status Device(const Json& j, const std::string& path, pb::DeviceModel* d) const;
  absl::Status Runtime(const Json& j, const std::string& path, pb::PolicyRuntime* r) const;
  absl::Status Anchor(const Json& j, const std::string& path, pb::OpAnchor* a) const;

  const std::string& source_;
};

constexpr uint64_t kMaxIndex = INT32_MAX;
// What a field callback returns for a key it does not know.
absl::Status Unknown() { return absl::NotFoundError("unknown field"); }

absl::Status Reader::Read(const Json& j, pb::Policy* out) const {
  return Object(j, "$", [&](const std::string& key, const Json& v, const std::string& p) {
    if (key == "format") {
      SWAPPLAN_ASSIGN_OR_RETURN(*out->mutable_format(), String(v, p));
    } else if (key == "format_version") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, UINT32_MAX));
      out->set_format_version(static_cast<uint32_t>(x));
    } else if (key == "fingerprint") {
      return Fingerprint(v, p, out->mutable_fingerprint());
    } else if (key == "device_budget_bytes") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(v, p));
      out->set_device_budget_bytes(x);
    } else if (key == "h2d_bandwidth_bytes_per_s") {
      SWAPPLAN_ASSIGN_OR_RETURN(double x, Number(v, p));
      out->set_h2d_bandwidth_bytes_per_s(x);
    } else if (key == "d2h_bandwidth_bytes_per_s") {
      SWAPPLAN_ASSIGN_OR_RETURN(double x, Number(v, p));
      out->set_d2h_bandwidth_bytes_per_s(x);
    } else if (key == "device") {
      return Device(v, p, out->mutable_device());
    } else if (key == "planner") {
      SWAPPLAN_ASSIGN_OR_RETURN(*out->mutable_planner(), String(v, p));
    } else if (key == "parameters") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        if (!e.is_object() || e.size() != 2 || !e.contains("name") || !e.contains("value")) {
          return Fail(ep, "expected {\"name\": ..., \"value\": ...}");
        }
        pb::PolicyParameter* param = out->add_parameters();
        SWAPPLAN_ASSIGN_OR_RETURN(*param->mutable_name(), String(e["name"], ep + ".name"));
        SWAPPLAN_ASSIGN_OR_RETURN(*param->mutable_value(), String(e["value"], ep + ".value"));
        return absl::OkStatus();
      });
    } else if (key == "expected_peak_bytes") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(v, p));
      out->set_expected_peak_bytes(x);
    } else if (key == "expected_overhead_ns") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(v, p));
      out->set_expected_overhead_ns(x);
    } else if (key == "simulated_iteration_time_ns") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(v, p));
      out->set_simulated_iteration_time_ns(x);
    } else if (key == "items") {
      return Array(v, p, [&](const Json& e, const std::string& ep) {
        return Item(e, ep, out->add_items());
      });
    } else if (key == "schedule") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(e, ep, kMaxIndex));
        out->add_schedule(static_cast<uint32_t>(x));
        return absl::OkStatus();
      });
    } else if (key == "pool") {
      return Pool(v, p, out->mutable_pool());
    } else if (key == "runtime") {
      return Runtime(v, p, out->mutable_runtime());
    } else {
      return Unknown();
    }
    return absl::OkStatus();
  });
}

absl::Status Reader::Fingerprint(const Json& j, const std::string& path,
                                 pb::PolicyFingerprint* f) const {
  return Object(j, path, [&](const std::string& key, const Json& v, const std::string& p) {
    if (key == "op_sequence_hash") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t h, Hex64(v, p));
      f->set_op_sequence_hash(h);
    } else if (key == "iteration_ops" || key == "iteration") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, kMaxIndex));
      key == "iteration" ? f->set_iteration(static_cast<uint32_t>(x))
                         : f->set_iteration_ops(static_cast<uint32_t>(x));
    } else {
      return Unknown();
    }
    return absl::OkStatus();
  });
}

absl::Status Reader::Item(const Json& j, const std::string& path, pb::PolicyItem* o) const {
  return Object(j, path, [&](const std::string& key, const Json& v, const std::string& p) {
    if (key == "tensor_id") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U64(v, p));
      o->set_tensor_id(x);
    } else if (key == "swap_out_op" || key == "release_op" || key == "swap_in_op" ||
               key == "first_use_op") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, kMaxIndex));
      const uint32_t op = static_cast<uint32_t>(x);
      if (key == "swap_out_op") o->set_swap_out_op(op);
      if (key == "release_op") o->set_release_op(op);
      if (key == "swap_in_op") o->set_swap_in_op(op);
      if (key == "first_use_op") o->set_first_use_op(op);
    } else if (key == "size_bytes") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(v, p));
      o->set_size_bytes(x);
    } else if (key == "runtime_key") {
      return Key(v, p, o->mutable_runtime_key());
    } else if (key == "action") {
      SWAPPLAN_ASSIGN_OR_RETURN(std::string a, String(v, p));
      ItemAction action;
      if (!ParseItemAction(a, &action)) {
        return Fail(p, "unknown action '" + a + "' (expected SWAP or RECOMPUTE)");
      }
      o->set_action(static_cast<pb::ItemAction>(action));
    } else if (key == "recompute_ns") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(v, p));
      o->set_recompute_ns(x);
    } else if (key == "release_waits_for_copy" || key == "wraps" || key == "clean") {
      SWAPPLAN_ASSIGN_OR_RETURN(bool b, Bool(v, p));
      if (key == "release_waits_for_copy") o->set_release_waits_for_copy(b);
      if (key == "wraps") o->set_wraps(b);
      if (key == "clean") o->set_clean(b);
    } else if (key == "tier") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, kMaxIndex));
      o->set_tier(static_cast<uint32_t>(x));
    } else {
      return Unknown();
    }
    return absl::OkStatus();
  });
}

absl::Status Reader::Key(const Json& j, const std::string& path, pb::RuntimeKey* k) const {
  return Object(j, path, [&](const std::string& key, const Json& v, const std::string& p) {
    if (key == "op_count") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, UINT32_MAX));
      k->set_op_count(static_cast<uint32_t>(x));
    } else if (key == "op_mask" || key == "op_history") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, Hex64(v, p));
      key == "op_mask" ? k->set_op_mask(x) : k->set_op_history(x);
    } else if (key == "dtype") {
      SWAPPLAN_ASSIGN_OR_RETURN(std::string d, String(v, p));
      DType dt;
      if (!ParseDType(d, &dt)) return Fail(p, "unknown dtype '" + d + "'");
      k->set_dtype(static_cast<int32_t>(dt));
    } else if (key == "size_bytes") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(v, p));
      k->set_size_bytes(x);
    } else if (key == "shape") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t d, I64(e, ep));
        k->add_shape(d);
        return absl::OkStatus();
      });
    } else if (key == "mask_bits") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, 64));
      k->set_mask_bits(static_cast<uint32_t>(x));
    } else {
      return Unknown();
    }
    return absl::OkStatus();
  });
}

absl::Status Reader::Pool(const Json& j, const std::string& path, pb::MemoryPool* pool) const {
  return Object(j, path, [&](const std::string& key, const Json& v, const std::string& p) {
    if (key == "tensor_sizes") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(e, ep));
        pool->add_tensor_sizes(x);
        return absl::OkStatus();
      });
    }
    if (key == "size_class") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(e, ep, kMaxIndex));
        pool->add_size_class(static_cast<uint32_t>(x));
        return absl::OkStatus();
      });
    }
    if (key == "classes") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        if (!e.is_object() || e.size() != 2 || !e.contains("object_bytes") ||
            !e.contains("count")) {
          return Fail(ep, "expected {\"object_bytes\": ..., \"count\": ...}");
        }
        pb::PoolClass* c = pool->add_classes();
        SWAPPLAN_ASSIGN_OR_RETURN(int64_t b, I64(e["object_bytes"], ep + ".object_bytes"));
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t n, U(e["count"], ep + ".count", kMaxIndex));
        c->set_object_bytes(b);
        c->set_count(static_cast<uint32_t>(n));
        return absl::OkStatus();
      });
    }
    return Unknown();
  });
}

absl::Status Reader::Device(const Json& j, const std::string& path, pb::DeviceModel* d) const {
  return Object(j, path, [&](const std::string& key, const Json& v, const std::string& p) {
    if (key == "name") {
      SWAPPLAN_ASSIGN_OR_RETURN(*d->mutable_name(), String(v, p));
    } else if (key == "capacity_bytes" || key == "reserve_bytes" || key == "copy_latency_ns") {
      SWAPPLAN_ASSIGN_OR_RETURN(int64_t x, I64(v, p));
      if (key == "capacity_bytes") d->set_capacity_bytes(x);
      if (key == "reserve_bytes") d->set_reserve_bytes(x);
      if (key == "copy_latency_ns") d->set_copy_latency_ns(x);
    } else if (key == "copy_engines") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, 2));
      d->set_copy_engines(static_cast<uint32_t>(x));
    } else if (key == "h2d_bandwidth_bytes_per_s" || key == "d2h_bandwidth_bytes_per_s" ||
               key == "compute_time_scale" || key == "peak_flops_per_s" ||
               key == "memory_bandwidth_bytes_per_s" ||
               key == "interconnect_bandwidth_bytes_per_s") {
      SWAPPLAN_ASSIGN_OR_RETURN(double x, Number(v, p));
      if (key == "h2d_bandwidth_bytes_per_s") d->set_h2d_bandwidth_bytes_per_s(x);
      if (key == "d2h_bandwidth_bytes_per_s") d->set_d2h_bandwidth_bytes_per_s(x);
      if (key == "compute_time_scale") d->set_compute_time_scale(x);
      if (key == "peak_flops_per_s") d->set_peak_flops_per_s(x);
      if (key == "memory_bandwidth_bytes_per_s") d->set_memory_bandwidth_bytes_per_s(x);
      if (key == "interconnect_bandwidth_bytes_per_s") {
        d->set_interconnect_bandwidth_bytes_per_s(x);
      }
    } else if (key == "tiers") {
      return Array(v, p, [&](const Json& e, const std::string& ep) {
        pb::MemoryTier* t = d->add_tiers();
        return Object(e, ep, [&](const std::string& k, const Json& x, const std::string& xp)
                                 -> absl::Status {
          if (k == "name") {
            SWAPPLAN_ASSIGN_OR_RETURN(*t->mutable_name(), String(x, xp));
          } else if (k == "capacity_bytes" || k == "latency_ns") {
            SWAPPLAN_ASSIGN_OR_RETURN(int64_t y, I64(x, xp));
            k == "latency_ns" ? t->set_latency_ns(y) : t->set_capacity_bytes(y);
          } else if (k == "store_bandwidth_bytes_per_s" || k == "load_bandwidth_bytes_per_s") {
            SWAPPLAN_ASSIGN_OR_RETURN(double y, Number(x, xp));
            k == "store_bandwidth_bytes_per_s" ? t->set_store_bandwidth_bytes_per_s(y)
                                               : t->set_load_bandwidth_bytes_per_s(y);
          } else if (k == "shared_by_ranks") {
            SWAPPLAN_ASSIGN_OR_RETURN(uint64_t y, U(x, xp, kMaxIndex));
            t->set_shared_by_ranks(static_cast<uint32_t>(y));
          } else {
            return Unknown();
          }
          return absl::OkStatus();
        });
      });
    } else {
      return Unknown();
    }
    return absl::OkStatus();
  });
}

absl::Status Reader::Anchor(const Json& j, const std::string& path, pb::OpAnchor* a) const {
  return Object(j, path, [&](const std::string& key, const Json& v, const std::string& p) {
    if (key == "phase") {
      SWAPPLAN_ASSIGN_OR_RETURN(std::string s, String(v, p));
      Phase ph;
      if (!ParsePhase(s, &ph)) return Fail(p, "unknown phase '" + s + "'");
      a->set_phase(static_cast<pb::Phase>(ph));
    } else if (key == "phase_ordinal" || key == "ordinal") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, kMaxIndex));
      key == "ordinal" ? a->set_ordinal(static_cast<uint32_t>(x))
                       : a->set_phase_ordinal(static_cast<uint32_t>(x));
    } else {
      return Unknown();
    }
    return absl::OkStatus();
  });
}

absl::Status Reader::Runtime(const Json& j, const std::string& path,
                             pb::PolicyRuntime* r) const {
  return Object(j, path, [&](const std::string& key, const Json& v, const std::string& p) {
    if (key == "op_names") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        SWAPPLAN_ASSIGN_OR_RETURN(*r->add_op_names(), String(e, ep));
        return absl::OkStatus();
      });
    }
    if (key == "op_ranks") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        SWAPPLAN_ASSIGN_OR_RETURN(int32_t x, I32(e, ep));
        if (x < -1) return Fail(ep, absl::StrCat(x, " is out of range (a rank, or -1)"));
        r->add_op_ranks(x);
        return absl::OkStatus();
      });
    }
    if (key == "mask_bits") {
      SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(v, p, 64));
      r->set_mask_bits(static_cast<uint32_t>(x));
      return absl::OkStatus();
    }
    if (key == "op_sequence") {
      return Array(v, p, [&](const Json& e, const std::string& ep) -> absl::Status {
        SWAPPLAN_ASSIGN_OR_RETURN(uint64_t x, U(e, ep, UINT32_MAX));
        r->add_op_sequence(static_cast<uint32_t>(x));
        return absl::OkStatus();
      });
    }
    if (key == "items") {
      return Array(v, p, [&](const Json& e, const std::string& ep) {
        pb::RuntimeItem* it = r->add_items();
        return Object(e, ep, [&](const std::string& k, const Json& x, const std::string& xp)
                                 -> absl::Status {
          if (k == "decision") return Anchor(x, xp, it->mutable_decision());
          if (k == "release") return Anchor(x, xp, it->mutable_release());
          if (k == "swap_in") return Anchor(x, xp, it->mutable_swap_in());
          if (k == "first_use") return Anchor(x, xp, it->mutable_first_use());
          if (k == "use_index") {
            SWAPPLAN_ASSIGN_OR_RETURN(uint64_t y, U(x, xp, kMaxIndex));
            it->set_use_index(static_cast<uint32_t>(y));
            return absl::OkStatus();
          }
          if (k == "shape_hash") {
            SWAPPLAN_ASSIGN_OR_RETURN(uint64_t y, Hex64(x, xp));
            it->set_shape_hash(y);
            return absl::OkStatus();
          }
          return Unknown();
        });
      });
    }
    return Unknown();
  });
}

}  // namespace

absl::Status ReadJson(const Json& j, const std::string& source, pb::Policy* out) {
  return Reader(source).Read(j, out);
}

}  // namespace swapplan::internal_policy
