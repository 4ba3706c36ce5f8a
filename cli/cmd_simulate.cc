// swapplan simulate TRACE POLICY [--device NAME] [--device-memory X] [--copy-latency 10us]
//                   [--half-duplex] [--compute-scale F] [--naive-record-stream]
//                   [--clock ops|saved-tensors] [--timeline FILE.json] [--json] [-o FILE]
//                   [--server ADDR [--token-file F] [--tls-ca F] [--server-timeout T]]
//
// Runs the evaluation simulator (swapplan/sim/simulator.h) on the iteration
// the policy was made for and prints the result. Exit 3 when the policy does
// not fit the device memory (the result is printed first). With --server
// the simulation runs on a planner service (cli/remote.h) with the device
// and settings resolved here; the output is the same (--timeline is local
// only).
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "common.h"
#include "budget_flags.h"
#include "device_flags.h"
#include "flags.h"
#include "remote.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/saved_tensor_clock.h"
#include "swapplan/sim/chrome_trace.h"
#include "swapplan/curve/reserved_curve.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct SimulateArgs {
  FlagSet flags;
  std::string trace;
  std::string policy;
  DeviceFlags device;
  bool naive_record_stream = false;
  std::optional<int64_t> host_dispatch_ns;
  std::optional<int64_t> event_query_ns;
  std::optional<int64_t> launch_queue_depth;
  std::optional<int64_t> top_stalls;
  std::optional<std::string> oom_handling;  // report (default) or algorithm3
  std::optional<std::string> oom_persistent;  // move (default) or keep
  std::optional<std::string> clock;  // ops (default) or saved-tensors
  std::optional<std::string> timeline;
  bool json = false;
  std::optional<std::string> output;
  RemoteFlags remote;
  BudgetFlags budget;
  // Set by Run: the basis, and the allocator model's replay of the policy
  // with the budget as capacity.
  BudgetBasis basis = {};
  std::optional<ReservedCurve> reserved;
};

// "34.83 GiB (...) at op 1695 (aten::_to_copy), fits the budget".
std::string ReservedLine(const Trace& t, int32_t it, const ReservedCurve& c) {
  std::string s = BytesExact(c.peak_reserved_bytes);
  if (c.peak_position >= 0) absl::StrAppend(&s, " at ", OpText(t, it, c.peak_position));
  absl::StrAppend(&s, " (", AllocatorKindName(c.options.kind), " model), ",
                  c.ooms == 0 ? std::string("fits the budget")
                              : absl::StrCat(c.ooms, " allocations do not fit the budget (first at ",
                                             OpText(t, it, c.first_oom_position), ")"));
  return s;
}

std::string Percent(double x) { return absl::StrFormat("%+.2f%%", 100.0 * x); }

std::string RenderText(const Trace& t, const Policy& p, const SimulateArgs& args,
                       const std::string& capacity_source, const ResolvedDevice& d,
                       const SimulationResult& r) {
  const int32_t it = r.iteration;
  auto op_text = [&](int32_t op) { return OpText(t, it, op); };
  int32_t recomputes = 0;
  for (const PolicyItem& item : p.items) recomputes += item.action == ItemAction::kRecompute;
  std::string out;
  absl::StrAppend(&out, "trace           ", t.source(), ", iteration ", it, " (", r.num_ops,
                  " ops, op durations ", DurationSourceName(r.durations), ")\n");
  absl::StrAppend(&out, "policy          ", args.policy, ": planner ",
                  p.planner.empty() ? "(unnamed)" : p.planner, ", ", p.items.size(), " items (",
                  p.items.size() - recomputes, " swaps, ", recomputes, " recomputations), ",
                  FormatBytes(p.TotalItemBytes()), "\n");
  absl::StrAppend(
      &out, "device memory   ",
      r.memory_limit_bytes == kUnlimitedBytes ? std::string("unlimited")
                                              : BytesExact(r.memory_limit_bytes),
      capacity_source, "\n");
  absl::StrAppend(&out, "budget on       ", BudgetBasisText(args.basis), "\n");
  if (args.reserved) {
    absl::StrAppend(&out, "reserved peak   ", ReservedLine(t, it, *args.reserved), "\n");
  }
  absl::StrAppend(&out, "link            ", LinkText(d.model), "\n");
  if (r.saved_clock.modelled) {
    const SavedClockReport& c = r.saved_clock;
    absl::StrAppend(&out, "clock           ",
                    c.hook_clock
                        ? absl::StrCat("saved-tensor events: ", c.snapped_items,
                                       " items moved to them, ", c.resident_items,
                                       " kept resident (no event in their window)",
                                       c.before_forward_items > 0
                                           ? absl::StrCat(", ", c.before_forward_items,
                                                          " of tensors made before the forward "
                                                          "(not run)")
                                           : std::string(),
                                       r.oom.occurred ? "; over the budget: the runtime "
                                                        "refuses this schedule and runs the "
                                                        "per-op clock (--clock ops)"
                                                      : "")
                        : absl::StrCat("per-op (the saved-tensor clock cannot run it: ",
                                       c.per_op_reason, ")"),
                    "\n");
  }
  absl::StrAppend(&out, "compute         ", ComputeScaleText(d), "\n");
  if (r.record_stream == RecordStreamMode::kNaive) {
    absl::StrAppend(
        &out, "record stream   naive (blocks reused once the host sees the copy done): ",
        r.host_event_queries, " event queries, ", r.host_syncs, " host synchronisations\n");
  } else {
    absl::StrAppend(&out, "record stream   custom (blocks reused after the planned release op)\n");
  }
  absl::StrAppend(&out, "\niteration time  ", FormatDurationNs(r.iteration_time_ns), " (ideal ",
                  FormatDurationNs(r.ideal_time_ns), ", overhead ", Percent(r.overhead_vs_ideal),
                  ")\n");
  absl::StrAppend(&out, "compute         ", FormatDurationNs(r.compute_ns), " in ops + ",
                  FormatDurationNs(r.recompute_ns), " recomputation\n");
  absl::StrAppend(&out, "stall           ", FormatDurationNs(r.stall_ns));
  if (r.stall_ns > 0) {
    absl::StrAppend(&out, " in ", r.ops_with_stall, " ops: swap-in ",
                    FormatDurationNs(r.stall_swap_in_ns), ", release ",
                    FormatDurationNs(r.stall_release_ns), " (");
    bool first = true;
    for (int ph = 0; ph < kNumPhases; ++ph) {
      if (r.stall_by_phase_ns[ph] == 0) continue;
      absl::StrAppend(&out, first ? "" : ", ", PhaseName(static_cast<Phase>(ph)), " ",
                      FormatDurationNs(r.stall_by_phase_ns[ph]));
      first = false;
    }
    absl::StrAppend(&out, ")");
  }
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "host wait       ", FormatDurationNs(r.host_wait_ns), "\n");
  absl::StrAppend(&out, "peak            ", BytesExact(r.peak_bytes), " at ", op_text(r.peak_op),
                  "\n");
  absl::StrAppend(&out, "moved           d2h ", FormatBytes(r.bytes_d2h), " in ", r.copies_d2h,
                  " copies (busy ", FormatDurationNs(r.d2h_busy_ns), "), h2d ",
                  FormatBytes(r.bytes_h2d), " in ", r.copies_h2d, " copies (busy ",
                  FormatDurationNs(r.h2d_busy_ns), ")\n");
  // Per tier, when the device has tiers beyond the host.
  for (size_t k = 1; k < r.tiers.size(); ++k) {
    const TierTraffic& tier = r.tiers[k];
    absl::StrAppend(&out, absl::StrFormat("%-16s", absl::StrCat("tier ", tier.name)), "stored ",
                    FormatBytes(tier.bytes_stored), " in ", tier.stores, " copies (busy ",
                    FormatDurationNs(tier.store_busy_ns), "), loaded ", FormatBytes(tier.bytes_loaded),
                    " in ", tier.loads, " copies (busy ", FormatDurationNs(tier.load_busy_ns),
                    "), holds at most ", FormatBytes(tier.peak_bytes),
                    tier.capacity_bytes == kUnlimitedCapacityBytes
                        ? std::string()
                        : absl::StrCat(" of ", FormatBytes(tier.capacity_bytes)),
                    "\n");
  }
  if (r.reuse.blocks > 0 || r.reuse.unreleased_blocks > 0) {
    absl::StrAppend(&out, "reuse interval  mean ", absl::StrFormat("%.2f", r.reuse.mean_ops),
                    " ops, max ", r.reuse.max_ops, " ops over ", r.reuse.blocks, " blocks");
    if (r.reuse.unreleased_blocks > 0) {
      absl::StrAppend(&out, "; ", r.reuse.unreleased_blocks, " never released");
    }
    absl::StrAppend(&out, "\n");
  }
  if (r.pool_bytes > 0) {
    absl::StrAppend(&out, "pool            ", p.pool.classes.size(), " size classes, ",
                    BytesExact(r.pool_bytes), "; ", r.oom.pool_ops_over_capacity,
                    " ops with a class out of objects\n");
  }
  if (r.oom.occurred && r.oom.pool_class >= 0) {
    absl::StrAppend(&out, "OOM             at ", op_text(r.oom.op), ": pool class ",
                    r.oom.pool_class, " needed ", r.oom.requested_bytes, " objects with ",
                    r.oom.free_bytes, " free\n");
  } else if (r.oom.occurred) {
    absl::StrAppend(&out, "OOM             at ", op_text(r.oom.op), ": requested ",
                    BytesExact(r.oom.requested_bytes), " with ", BytesExact(r.oom.free_bytes),
                    " free; ", r.oom.ops_over_capacity, " ops over capacity, worst by ",
                    BytesExact(r.oom.max_excess_bytes), "\n");
  } else {
    absl::StrAppend(&out, "OOM             none\n");
  }
  if (args.oom_handling == std::optional<std::string>("algorithm3")) {
    const OomHandlingStats& h = r.oom_handling;
    absl::StrAppend(&out, "OOM handling    Algorithm 3: ", h.allocation_failures,
                    " allocation failures, ", h.early_releases, " early releases, ",
                    h.passive_swap_outs, " passive swap-outs (", BytesExact(h.passive_bytes_d2h),
                    h.persistent_passive_swap_outs > 0
                        ? absl::StrCat("; ", h.persistent_passive_swap_outs, " of persistent tensors")
                        : std::string(),
                    ") and ", h.passive_swap_ins, " swap-ins (", BytesExact(h.passive_bytes_h2d),
                    "), ", FormatDurationNs(h.passive_stall_ns), " waiting for them; ",
                    h.unresolved, " unresolved");
    if (h.unresolved > 0) {
      absl::StrAppend(&out, " (first at ", op_text(h.first_unresolved_op), ", ",
                      BytesExact(h.first_unresolved_missing_bytes), " missing",
                      h.no_bandwidth ? "; no link bandwidth for passive swaps" : "", ")");
    }
    absl::StrAppend(&out, "\n");
  }
  if (!r.top_stalls.empty()) {
    absl::StrAppend(&out, "\n");
    TextTable table({"op", "name", "phase", "stall", "cause", "tensor"});
    const TensorLabeler names(t);
    for (const StallSite& s : r.top_stalls) {
      const OpIndex g = t.iteration(it).op_begin + s.op;
      table.AddRow({absl::StrCat(s.op), t.op_name_at(g), std::string(PhaseName(t.op(g).phase)),
                    FormatDurationNs(s.stall_ns), std::string(StallCauseName(s.cause)),
                    names.Label(s.tensor_id, LabelForm::kCell)});
    }
    absl::StrAppend(&out, table.Render(/*left_columns=*/3));
  }
  return out;
}

std::string RenderJson(const Trace& t, const Policy& p, const SimulateArgs& args,
                       const ResolvedDevice& d, const SimulationResult& r) {
  using nlohmann::json;
  const int32_t it = r.iteration;
  json j;
  j["trace"] = t.source();
  j["policy_file"] = args.policy;
  j["planner"] = p.planner;
  j["iteration"] = it;
  j["num_ops"] = r.num_ops;
  j["num_items"] = p.items.size();
  j["op_durations"] = std::string(DurationSourceName(r.durations));
  j["device"] = DeviceJson(d);
  j["budget_bytes"] = r.memory_limit_bytes == kUnlimitedBytes ? json(nullptr)
                                                             : json(r.memory_limit_bytes);
  j["warnings"] = WarningsJson(d.warnings);
  j.update(BudgetBasisJson(args.basis));
  if (args.reserved) {
    const ReservedCurve& c = *args.reserved;
    j["reserved"] = {{"reserved_peak_bytes", c.peak_reserved_bytes},
                     {"reserved_peak_op", OpJson(c.peak_position)},
                     {"fragmentation_bytes", c.fragmentation_at_peak_bytes()},
                     {"num_ooms", c.ooms},
                     {"first_oom_op", OpJson(c.first_oom_position)}};
  }
  j["record_stream"] = r.record_stream == RecordStreamMode::kNaive ? "naive" : "custom";
  j["feasible"] = !r.oom.occurred;
  j["iteration_time_ns"] = r.iteration_time_ns;
  j["ideal_iteration_time_ns"] = r.ideal_time_ns;
  j["overhead_vs_ideal_fraction"] = r.overhead_vs_ideal;
  j["compute_ns"] = r.compute_ns;
  j["recompute_ns"] = r.recompute_ns;
  j["stall_ns"] = r.stall_ns;
  j["stall_swap_in_ns"] = r.stall_swap_in_ns;
  j["stall_release_ns"] = r.stall_release_ns;
  json by_phase = json::object();
  for (int ph = 0; ph < kNumPhases; ++ph) {
    by_phase[std::string(PhaseName(static_cast<Phase>(ph)))] = r.stall_by_phase_ns[ph];
  }
  j["stall_by_phase_ns"] = by_phase;
  j["host_wait_ns"] = r.host_wait_ns;
  j["num_ops_with_stall"] = r.ops_with_stall;
  json stalls = json::array();
  const TensorLabeler names(t);
  for (const StallSite& s : r.top_stalls) {
    stalls.push_back({{"op", s.op},
                      {"op_name", OpNameJson(t, it, s.op)},
                      {"stall_ns", s.stall_ns},
                      {"cause", std::string(StallCauseName(s.cause))},
                      {"tensor_id", s.tensor_id},
                      {"label", names.Label(s.tensor_id)}});
  }
  j["top_stalls"] = stalls;
  j["peak_with_policy_bytes"] = r.peak_bytes;
  j["peak_with_policy_op"] = OpJson(r.peak_op);
  j["peak_with_policy_op_name"] = OpNameJson(t, it, r.peak_op);
  json oom = {{"occurred", r.oom.occurred}};
  if (r.oom.occurred) {
    oom["op"] = OpJson(r.oom.op);
    oom["op_name"] = OpNameJson(t, it, r.oom.op);
    oom["requested_bytes"] = r.oom.requested_bytes;
    oom["free_bytes"] = r.oom.free_bytes;
    oom["num_ops_over_capacity"] = r.oom.ops_over_capacity;
    oom["max_excess_bytes"] = r.oom.max_excess_bytes;
    if (r.oom.pool_class >= 0) oom["pool_class"] = r.oom.pool_class;
  }
  j["oom"] = oom;
  if (args.oom_handling == std::optional<std::string>("algorithm3")) {
    const OomHandlingStats& h = r.oom_handling;
    j["oom_handling"] = {{"mode", "algorithm3"},
                         {"num_allocation_failures", h.allocation_failures},
                         {"num_early_releases", h.early_releases},
                         {"num_passive_swap_outs", h.passive_swap_outs},
                         {"num_persistent_passive_swap_outs", h.persistent_passive_swap_outs},
                         {"num_passive_swap_ins", h.passive_swap_ins},
                         {"passive_d2h_bytes", h.passive_bytes_d2h},
                         {"passive_h2d_bytes", h.passive_bytes_h2d},
                         {"passive_stall_ns", h.passive_stall_ns},
                         {"num_unresolved", h.unresolved},
                         {"first_unresolved_op", OpJson(h.first_unresolved_op)},
                         {"first_unresolved_op_name", OpNameJson(t, it, h.first_unresolved_op)},
                         {"first_unresolved_missing_bytes", h.first_unresolved_missing_bytes}};
  }
  if (r.pool_bytes > 0) j["pool_bytes"] = r.pool_bytes;
  if (r.saved_clock.modelled) {
    const SavedClockReport& c = r.saved_clock;
    j["saved_tensor_clock"] = {{"hook_clock", c.hook_clock},
                               {"num_snapped_items", c.snapped_items},
                               {"num_resident_items", c.resident_items},
                               {"num_before_forward_items", c.before_forward_items},
                               {"per_op_reason", c.per_op_reason}};
  }
  j["d2h_bytes"] = r.bytes_d2h;
  j["h2d_bytes"] = r.bytes_h2d;
  j["num_d2h_copies"] = r.copies_d2h;
  j["num_h2d_copies"] = r.copies_h2d;
  j["d2h_busy_ns"] = r.d2h_busy_ns;
  j["h2d_busy_ns"] = r.h2d_busy_ns;
  if (r.tiers.size() > 1) {
    json tiers = json::array();
    for (const TierTraffic& tier : r.tiers) {
      tiers.push_back({{"name", tier.name},
                       {"capacity_bytes", tier.capacity_bytes == kUnlimitedCapacityBytes
                                              ? json(nullptr)
                                              : json(tier.capacity_bytes)},
                       {"peak_bytes", tier.peak_bytes},
                       {"stored_bytes", tier.bytes_stored},
                       {"loaded_bytes", tier.bytes_loaded},
                       {"num_stores", tier.stores},
                       {"num_loads", tier.loads},
                       {"store_busy_ns", tier.store_busy_ns},
                       {"load_busy_ns", tier.load_busy_ns}});
    }
    j["tiers"] = std::move(tiers);
  }
  j["num_recomputed_items"] = r.recomputed_items;
  j["reuse_interval"] = {{"num_blocks", r.reuse.blocks},
                         {"mean_ops", r.reuse.mean_ops},
                         {"max_ops", r.reuse.max_ops},
                         {"num_unreleased_blocks", r.reuse.unreleased_blocks}};
  j["num_host_event_queries"] = r.host_event_queries;
  j["num_host_syncs"] = r.host_syncs;
  j["num_events"] = r.events;
  return j.dump(2) + "\n";
}

// `status` with "<prefix>: " before its message, its code and payloads (the
// kind and the rule tag, util/error.h) kept.
absl::Status WithPrefix(const absl::Status& status, absl::string_view prefix) {
  absl::Status out(status.code(), absl::StrCat(prefix, ": ", status.message()));
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

absl::Status Run(SimulateArgs& args) {
  args.flags.Parse();
  SWAPPLAN_ASSIGN_OR_RETURN(Trace recorded, ReadTraceArg(args.trace, &args.flags));
  // A missing POLICY argument is a problem of the flags already.
  if (args.policy.empty()) return args.flags.Status();
  absl::StatusOr<Policy> read_policy = ReadPolicy(args.policy);
  if (!read_policy.ok()) {
    if (args.flags.ok()) return read_policy.status();
    args.flags.Add(std::string(read_policy.status().message()));
    return args.flags.Status();
  }
  Policy policy = *std::move(read_policy);
  DeviceDefaults defaults = TraceDeviceDefaults(recorded);
  std::string capacity_source;
  if (policy.BudgetBytes() > 0 && policy.BudgetBytes() != kUnlimitedCapacityBytes) {
    // The run may use the policy's budget (its capacity - reserve).
    defaults.capacity_bytes = policy.BudgetBytes();
    capacity_source = " (the policy's budget)";
  } else {
    defaults.capacity_bytes = 0;
  }
  if (defaults.h2d_bandwidth_bytes_per_s <= 0) {
    defaults.h2d_bandwidth_bytes_per_s = policy.device.h2d_bandwidth_bytes_per_s;
  }
  if (defaults.d2h_bandwidth_bytes_per_s <= 0) {
    defaults.d2h_bandwidth_bytes_per_s = policy.device.d2h_bandwidth_bytes_per_s;
  }
  if (policy.device.compute_time_scale > 0) defaults.compute_time_scale = policy.device.compute_time_scale;
  const ResolvedDevice device =
      ResolveDevice(args.device, defaults, {.capacity = false}, &args.flags);
  if (args.device.device_memory_bytes) {
    capacity_source = " (--device-memory)";
  } else if (args.device.device) {
    capacity_source = absl::StrCat(" (--device ", device.model.name, ")");
  }
  SWAPPLAN_RETURN_IF_ERROR(args.flags.Status());
  PrintWarnings(device.warnings);
  // The simulator scales recorded op durations by device.compute_time_scale.
  const Trace& trace = recorded;
  SimulatorOptions o;
  o.device = device.model;
  o.record_stream = args.naive_record_stream ? RecordStreamMode::kNaive : RecordStreamMode::kCustom;
  // Per-op host times past 1e17 ns (about 3 years) are refused by their
  // flag; smaller ones that still carry the clock past 2^63 - 1 ns over the
  // iteration's ops are the simulator's overflow error naming the op.
  for (auto [flag, v] : {std::pair<const char*, std::optional<int64_t>>{"--host-dispatch",
                                                                       args.host_dispatch_ns},
                         {"--event-query", args.event_query_ns}}) {
    if (v && *v > kMaxCopyNs) {
      args.flags.Add(absl::StrCat(flag, ": ", FormatDurationNs(*v),
                                  " is more than a host step may take (1e17 ns, about 3 years)"));
    }
  }
  SWAPPLAN_RETURN_IF_ERROR(args.flags.Status());
  o.host_dispatch_ns = args.host_dispatch_ns.value_or(0);
  o.host_event_query_ns = args.event_query_ns.value_or(0);
  o.launch_queue_depth =
      static_cast<int32_t>(args.launch_queue_depth.value_or(SimulatorOptions().launch_queue_depth));
  o.top_stall_ops = static_cast<int32_t>(args.top_stalls.value_or(10));
  o.oom_persistent_victims = args.oom_persistent.value_or("move") == "move";
  o.record_timeline = args.timeline.has_value();
  o.oom_handling = args.oom_handling == std::optional<std::string>("algorithm3")
                       ? OomHandling::kAlgorithm3
                       : OomHandling::kReport;
  o.clock = args.clock.value_or("ops") == "saved-tensors" ? TriggerClock::kSavedTensors
                                                          : TriggerClock::kOps;
  if (args.remote.server && o.clock != TriggerClock::kOps) {
    return Error(ErrorKind::kUsage,
                 "--clock saved-tensors needs the simulator in this process: drop --server");
  }
  if (args.remote.server && args.timeline) {
    return Error(ErrorKind::kUsage, "--timeline needs the simulator in this process: drop --server");
  }
  absl::StatusOr<SimulationResult> simulated = args.remote.server
                                                   ? RemoteSimulate(args.remote, trace, policy, o)
                                                   : Simulate(trace, policy, o);
  if (!simulated.ok()) {
    // What the policy breaks names the policy file (its items, schedule and
    // sums come from it); the trace's own errors already name the trace. A
    // fingerprint mismatch names the trace inside: the policy goes first.
    const ErrorKind kind = KindOf(simulated.status());
    const bool names_trace = absl::StartsWith(simulated.status().message(), trace.source());
    if ((kind == ErrorKind::kMalformedInput && !names_trace) ||
        kind == ErrorKind::kFingerprintMismatch) {
      return WithPrefix(simulated.status(), args.policy);
    }
    return simulated.status();
  }
  SimulationResult r = *std::move(simulated);
  // The basis: the flags, else what the policy was planned on, else the
  // device model's default; the allocator model over the policy's
  // allocations and frees (in position order), the budget as capacity.
  std::optional<BudgetBasis> planned_on;
  if (CheckOptions co = CheckOptionsFor(policy); co.budget_on == BudgetOn::kReserved) {
    planned_on = BudgetBasis{BudgetOn::kReserved, co.allocator,
                             "the policy was planned with --budget-on reserved"};
  }
  args.basis = ResolveBudgetBasis(args.budget, device.model, &args.flags, planned_on);
  SWAPPLAN_RETURN_IF_ERROR(args.flags.Status());
  // (Here also with --server: the trace and the policy are local.)
  AllocatorOptions alloc = args.basis.allocator;
  SWAPPLAN_RETURN_IF_ERROR(device.model.ValidateBudget());
  alloc.capacity_bytes = std::max<int64_t>(device.model.BudgetBytes(), 1);
  SWAPPLAN_ASSIGN_OR_RETURN(args.reserved, PolicyReservedCurve(trace, policy, device.model, alloc,
                                                               {.pinned_segments = 0}));
  if (args.timeline) {
    // The copies' indices are the items of the policy that ran.
    Policy ran;
    if (o.clock == TriggerClock::kSavedTensors) {
      SWAPPLAN_ASSIGN_OR_RETURN(SavedClockPolicy snapped,
                                SnapToSavedTensorEvents(trace, r.iteration, policy));
      ran = std::move(snapped.policy);
    }
    SWAPPLAN_RETURN_IF_ERROR(WriteOutput(
        *args.timeline,
        TimelineToChromeTrace(trace, o.clock == TriggerClock::kSavedTensors ? ran : policy, r)));
  }
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput(
      args.output.value_or(""), args.json ? RenderJson(trace, policy, args, device, r)
                                          : RenderText(trace, policy, args, capacity_source,
                                                       device, r)));
  if (r.oom.occurred) {
    return Error(ErrorKind::kInfeasible,
                 absl::StrCat(args.policy, " does not fit in ", BytesExact(r.memory_limit_bytes),
                              ": at ", OpText(trace, r.iteration, r.oom.op), " it requests ",
                              BytesExact(r.oom.requested_bytes), " with ",
                              BytesExact(r.oom.free_bytes), " free"));
  }
  return absl::OkStatus();
}

}  // namespace

void SetupSimulate(CLI::App& root, Action* action) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub = root.add_subcommand(
      "simulate",
      "Run the evaluation simulator (compute, d2h and h2d streams) on the iteration a policy was "
      "made for: iteration time, stalls and where, peak, bytes moved, OOM. Exit 3 on OOM.");
  args->flags.Positional(sub, "trace", &args->trace, "Trace file", /*required=*/true);
  args->flags.Positional(sub, "policy", &args->policy, "Policy file (JSON or binary)",
                         /*required=*/true);
  AddDeviceFlags(sub, &args->flags, &args->device, {.remote_tier = true});
  AddBudgetFlags(sub, &args->flags, &args->budget, {});
  sub->add_flag("--naive-record-stream", args->naive_record_stream,
                "Reuse a swapped-out block only when the host sees its copy done (PyTorch "
                "recordStream) instead of at the planned release op");
  args->flags.Duration(sub, "--host-dispatch", &args->host_dispatch_ns,
                       "Host time to dispatch one op, e.g. 10us (default 0ns)");
  args->flags.Duration(sub, "--event-query", &args->event_query_ns,
                       "Host time per pending block queried at each dispatch (naive mode; "
                       "default 0ns)");
  args->flags.Int(sub, "--launch-queue-depth", &args->launch_queue_depth,
                  absl::StrCat("Ops the host may dispatch ahead of the device (default ",
                               SimulatorOptions().launch_queue_depth, ")"),
                  1, INT32_MAX);
  args->flags.Int(sub, "--top-stalls", &args->top_stalls,
                  "Ops with the longest stalls to list (default 10)", 0, INT32_MAX);
  args->flags.Choice(sub, "--oom-persistent", &args->oom_persistent, {"move", "keep"},
                     "With algorithm3: its last resort moves persistent tensors used again "
                     "later in the iteration (default) or keeps them (the seed's rule)");
  args->flags.Choice(sub, "--oom-handling", &args->oom_handling, {"report", "algorithm3"},
                     "An allocation that does not fit: report it (an OOM; default), or handle it "
                     "with seed 001's Algorithm 3 (release finished swap-outs early, then passive "
                     "swaps of the closest-size resident tensors; OOM only when that fails)");
  args->flags.Choice(sub, "--clock", &args->clock, {"ops", "saved-tensors"},
                     "What the runtime triggers swaps at: every op (default), or autograd's "
                     "saved-tensor events (the PyTorch runtime's stable_clock='hooks'; the "
                     "trace needs them recorded: swapplan.recorder on PyTorch >= 2.0)");
  args->flags.Text(sub, "--timeline", &args->timeline,
                   "Write the per-stream timeline as Chrome trace JSON (open in ui.perfetto.dev)");
  sub->add_flag("--json", args->json,
                "Machine-readable JSON report (docs/json/simulate.schema.json)");
  args->flags.Text(sub, "-o,--output", &args->output, "Write the report to FILE instead of stdout");
  AddRemoteFlags(sub, &args->flags, &args->remote);
  sub->callback([args, action] { *action = [args]() -> absl::Status { return Run(*args); }; });
}

}  // namespace swapplan::cli
