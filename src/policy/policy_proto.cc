// Policy <-> proto message, and the v1 -> v2 conversion on read
// (docs/policy-format.md).
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policy/policy_codec.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/utf8.h"

namespace swapplan::internal_policy {
namespace {

namespace pb = ::swapplan::proto;

int32_t Clamp32(uint32_t v) { return v > INT32_MAX ? INT32_MAX : static_cast<int32_t>(v); }

void AnchorToProto(const OpAnchor& a, pb::OpAnchor* o) {
  o->set_phase(static_cast<pb::Phase>(a.phase));
  o->set_phase_ordinal(static_cast<uint32_t>(a.phase_ordinal));
  o->set_ordinal(static_cast<uint32_t>(a.ordinal));
}

void RuntimeToProto(const PolicyRuntime& rt, pb::PolicyRuntime* o) {
  for (const std::string& n : rt.op_names) o->add_op_names(n);
  for (int32_t r : rt.op_ranks) o->add_op_ranks(r);
  o->set_mask_bits(static_cast<uint32_t>(rt.mask_bits));
  for (uint32_t e : rt.op_sequence) o->add_op_sequence(e);
  for (const RuntimeItem& r : rt.items) {
    pb::RuntimeItem* x = o->add_items();
    AnchorToProto(r.decision, x->mutable_decision());
    x->set_use_index(static_cast<uint32_t>(r.use_index));
    x->set_shape_hash(r.shape_hash);
    AnchorToProto(r.release, x->mutable_release());
    AnchorToProto(r.swap_in, x->mutable_swap_in());
    AnchorToProto(r.first_use, x->mutable_first_use());
  }
}

// "SOURCE: what [rule]", malformed input with the rule attached (WithRule).
absl::Status Malformed(const std::string& source, absl::string_view what,
                       absl::string_view rule = "policy-schema") {
  return WithRule(
      Error(ErrorKind::kMalformedInput, absl::StrCat(source, ": ", what, " [", rule, "]")), rule);
}

absl::StatusOr<OpAnchor> AnchorFromProto(const pb::OpAnchor& in, const std::string& source,
                                         const std::string& field) {
  const int phase = static_cast<int>(in.phase());
  if (phase < 0 || phase >= kNumPhases) {
    return Malformed(source, absl::StrCat(field, ".phase: unknown phase ", phase));
  }
  return OpAnchor{static_cast<Phase>(phase), Clamp32(in.phase_ordinal()), Clamp32(in.ordinal())};
}

absl::Status RuntimeFromProto(const pb::PolicyRuntime& in, const std::string& source,
                              PolicyRuntime* rt) {
  for (const std::string& n : in.op_names()) {
    if (!IsValidUtf8(n)) {
      return Malformed(source, absl::StrCat("runtime.op_names[", rt->op_names.size(),
                                            "] is not valid UTF-8"));
    }
    rt->op_names.push_back(n);
  }
  rt->op_ranks.assign(in.op_ranks().begin(), in.op_ranks().end());
  rt->mask_bits = Clamp32(in.mask_bits());
  rt->op_sequence.assign(in.op_sequence().begin(), in.op_sequence().end());
  for (int k = 0; k < in.items_size(); ++k) {
    const pb::RuntimeItem& x = in.items(k);
    const std::string base = absl::StrCat("runtime.items[", k, "]");
    RuntimeItem r;
    SWAPPLAN_ASSIGN_OR_RETURN(r.decision, AnchorFromProto(x.decision(), source, base + ".decision"));
    r.use_index = Clamp32(x.use_index());
    r.shape_hash = x.shape_hash();
    SWAPPLAN_ASSIGN_OR_RETURN(r.release, AnchorFromProto(x.release(), source, base + ".release"));
    SWAPPLAN_ASSIGN_OR_RETURN(r.swap_in, AnchorFromProto(x.swap_in(), source, base + ".swap_in"));
    SWAPPLAN_ASSIGN_OR_RETURN(r.first_use,
                              AnchorFromProto(x.first_use(), source, base + ".first_use"));
    rt->items.push_back(r);
  }
  return absl::OkStatus();
}

}  // namespace

void TierToProto(const MemoryTier& t, pb::MemoryTier* x) {
  x->set_name(t.name);
  x->set_capacity_bytes(t.capacity_bytes);
  x->set_store_bandwidth_bytes_per_s(t.store_bandwidth_bytes_per_s);
  x->set_load_bandwidth_bytes_per_s(t.load_bandwidth_bytes_per_s);
  x->set_latency_ns(t.latency_ns);
  x->set_shared_by_ranks(static_cast<uint32_t>(t.shared_by_ranks));
}

MemoryTier TierFromProto(const pb::MemoryTier& x) {
  MemoryTier t;
  t.name = x.name();
  t.capacity_bytes = x.capacity_bytes();
  t.store_bandwidth_bytes_per_s = x.store_bandwidth_bytes_per_s();
  t.load_bandwidth_bytes_per_s = x.load_bandwidth_bytes_per_s();
  t.latency_ns = x.latency_ns();
  t.shared_by_ranks = Clamp32(x.shared_by_ranks());
  return t;
}

void DeviceToProto(const DeviceModel& d, pb::DeviceModel* o) {
  o->set_name(d.name);
  o->set_capacity_bytes(d.capacity_bytes);
  o->set_reserve_bytes(d.reserve_bytes);
  o->set_h2d_bandwidth_bytes_per_s(d.h2d_bandwidth_bytes_per_s);
  o->set_d2h_bandwidth_bytes_per_s(d.d2h_bandwidth_bytes_per_s);
  o->set_copy_latency_ns(d.copy_latency_ns);
  o->set_copy_engines(static_cast<uint32_t>(d.copy_engines));
  o->set_compute_time_scale(d.compute_time_scale);
  o->set_peak_flops_per_s(d.peak_flops_per_s);
  o->set_memory_bandwidth_bytes_per_s(d.memory_bandwidth_bytes_per_s);
  o->set_interconnect_bandwidth_bytes_per_s(d.interconnect_bandwidth_bytes_per_s);
  for (const MemoryTier& t : d.tiers) TierToProto(t, o->add_tiers());
}

DeviceModel DeviceFromProto(const pb::DeviceModel& in) {
  DeviceModel d;
  d.name = in.name();
  d.capacity_bytes = in.capacity_bytes();
  d.reserve_bytes = in.reserve_bytes();
  d.h2d_bandwidth_bytes_per_s = in.h2d_bandwidth_bytes_per_s();
  d.d2h_bandwidth_bytes_per_s = in.d2h_bandwidth_bytes_per_s();
  d.copy_latency_ns = in.copy_latency_ns();
  d.copy_engines = Clamp32(in.copy_engines());
  d.compute_time_scale = in.compute_time_scale();
  d.peak_flops_per_s = in.peak_flops_per_s();
  d.memory_bandwidth_bytes_per_s = in.memory_bandwidth_bytes_per_s();
  d.interconnect_bandwidth_bytes_per_s = in.interconnect_bandwidth_bytes_per_s();
  for (const pb::MemoryTier& x : in.tiers()) d.tiers.push_back(TierFromProto(x));
  return d;
}


std::string Hex(uint64_t v) { return absl::StrFormat("0x%016x", v); }

void ToProto(const Policy& p, pb::Policy* out) {
  out->set_format(kPolicyFormat);
  out->set_format_version(kPolicyFormatVersion);
  out->mutable_fingerprint()->set_op_sequence_hash(p.fingerprint.op_sequence_hash);
  out->mutable_fingerprint()->set_iteration_ops(static_cast<uint32_t>(p.fingerprint.iteration_ops));
  out->mutable_fingerprint()->set_iteration(static_cast<uint32_t>(p.fingerprint.iteration));
  // The v1 fields repeat the device model for readers of schema v1.
  out->set_device_budget_bytes(p.BudgetBytes());
  out->set_h2d_bandwidth_bytes_per_s(p.device.h2d_bandwidth_bytes_per_s);
  out->set_d2h_bandwidth_bytes_per_s(p.device.d2h_bandwidth_bytes_per_s);
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
    o->set_tier(static_cast<uint32_t>(it.tier));
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
  DeviceToProto(p.device, out->mutable_device());
  if (!p.runtime.empty()) RuntimeToProto(p.runtime, out->mutable_runtime());
}

absl::StatusOr<Policy> FromProto(const pb::Policy& in, const std::string& source,
                                 bool validate) {
  if (in.format() != kPolicyFormat) {
    return Malformed(source, absl::StrCat("not a swapplan policy (format is '",
                                       EscapeForMessage(in.format()), "')"));
  }
  const uint32_t version = in.format_version();
  if (version != 1 && version != 2) {
    return Malformed(source, absl::StrCat("policy format version ", version,
                                          " is not supported (this swapplan reads 1 and 2)"));
  }
  bool text_ok = IsValidUtf8(in.planner());
  for (const pb::PolicyParameter& param : in.parameters()) {
    text_ok = text_ok && IsValidUtf8(param.name()) && IsValidUtf8(param.value());
  }
  if (!text_ok) return Malformed(source, "planner text is not valid UTF-8");
  Policy p;
  p.format_version = static_cast<int32_t>(version);
  p.fingerprint.op_sequence_hash = in.fingerprint().op_sequence_hash();
  // A value past int32 is refused, never clamped (issue 19).
  for (auto [name, v, out] : {std::tuple<const char*, uint32_t, int32_t*>{
                                  "iteration_ops", in.fingerprint().iteration_ops(),
                                  &p.fingerprint.iteration_ops},
                              {"iteration", in.fingerprint().iteration(), &p.fingerprint.iteration}}) {
    if (v > static_cast<uint32_t>(INT32_MAX)) {
      return Malformed(source, absl::StrCat("fingerprint.", name, " ", v, " is past 2^31 - 1"),
                       "bad-fingerprint");
    }
    *out = static_cast<int32_t>(v);
  }
  if (version == 1) {
    // v1: the budget and bandwidths are the whole device model; there is no
    // runtime section (swapplan policy upgrade rebuilds it from the trace).
    if (in.has_device() || in.has_runtime()) {
      return Malformed(source, "a format_version 1 policy has a v2 section (device or runtime)");
    }
    p.device.capacity_bytes = in.device_budget_bytes();
    p.device.h2d_bandwidth_bytes_per_s = in.h2d_bandwidth_bytes_per_s();
    p.device.d2h_bandwidth_bytes_per_s = in.d2h_bandwidth_bytes_per_s();
  } else {
    if (!in.has_device()) return Malformed(source, "a format_version 2 policy needs a device");
    p.device = DeviceFromProto(in.device());
    // The v1 fields, when written, must repeat the model.
    const int64_t budget = p.device.BudgetBytes();
    if (in.device_budget_bytes() != 0 && in.device_budget_bytes() != budget) {
      return Malformed(source, absl::StrCat("device_budget_bytes ", in.device_budget_bytes(),
                                            " disagrees with the device model's budget ", budget));
    }
    for (auto [name, v1, v2] :
         {std::tuple<const char*, double, double>{"h2d_bandwidth_bytes_per_s",
                                                  in.h2d_bandwidth_bytes_per_s(),
                                                  p.device.h2d_bandwidth_bytes_per_s},
          {"d2h_bandwidth_bytes_per_s", in.d2h_bandwidth_bytes_per_s(),
           p.device.d2h_bandwidth_bytes_per_s}}) {
      if (v1 != 0 && v1 != v2) {
        return Malformed(source, absl::StrCat(name, " ", v1, " disagrees with the device model's ",
                                              v2));
      }
    }
    if (in.has_runtime()) {
      if (absl::Status st = RuntimeFromProto(in.runtime(), source, &p.runtime); !st.ok()) {
        return st;
      }
    }
  }
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
      return Malformed(source, absl::StrCat("policy item ", p.items.size(), " (tensor ",
                                            it.tensor_id, "): unknown action ",
                                            static_cast<int>(o.action())));
    }
    it.action = static_cast<ItemAction>(o.action());
    it.recompute_ns = o.recompute_ns();
    it.release_waits_for_copy = o.release_waits_for_copy();
    it.wraps = o.wraps();
    it.clean = o.clean();
    it.tier = Clamp32(o.tier());
    if (version == 1 && it.tier != 0) {
      return Malformed(source, absl::StrCat("policy item ", p.items.size(), " (tensor ",
                                            it.tensor_id, ") names tier ", it.tier,
                                            ", a format_version 2 field"));
    }
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
  // The header checks run for every reader (check's too: one validation
  // path); the item checks only when asked (the checker lists every item's
  // problems itself).
  if (absl::Status st = validate ? p.Validate() : p.ValidateHeader(); !st.ok()) {
    // Validate's own rule tag is already in its message; the rest are
    // "bad-policy".
    if (std::optional<std::string> rule = RuleOf(st)) {
      return WithRule(Error(ErrorKind::kMalformedInput, absl::StrCat(source, ": ", st.message())),
                      *rule);
    }
    return Malformed(source, st.message(), "bad-policy");
  }
  return p;
}

}  // namespace swapplan::internal_policy
