// swapplan simulate TRACE POLICY [--device-memory X] [--latency 10us] [--half-duplex]
//                   [--naive-record-stream] [--timeline FILE.json] [--json] [-o FILE]
//
// Runs the evaluation simulator (swapplan/sim/simulator.h) on the iteration
// the policy was made for and prints the result. Exit 3 when the policy does
// not fit the device memory (the result is printed first).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli.h"
#include "trace_input.h"
#include "sim_flags.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/chrome_trace.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct SimulateArgs {
  std::string trace;
  std::string policy;
  std::string device_memory;
  SimFlags sim;
  bool naive_record_stream = false;
  std::string host_dispatch;
  std::string event_query;
  int launch_queue_depth = SimulatorOptions().launch_queue_depth;
  int top_stalls = 10;
  std::string oom_handling = "report";  // or "algorithm3"
  std::string timeline;
  bool json = false;
  std::string output;
};

std::string Percent(double x) { return absl::StrFormat("%+.2f%%", 100.0 * x); }

std::string RenderText(const Trace& t, const Policy& p, const SimulateArgs& args,
                       const std::string& capacity_source, const SimulationResult& r) {
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
  absl::StrAppend(&out, "link            ", LinkText(r.device), "\n");
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
  if (args.oom_handling == "algorithm3") {
    const OomHandlingStats& h = r.oom_handling;
    absl::StrAppend(&out, "OOM handling    Algorithm 3: ", h.allocation_failures,
                    " allocation failures, ", h.early_releases, " early releases, ",
                    h.passive_swap_outs, " passive swap-outs (", BytesExact(h.passive_bytes_d2h),
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
    for (const StallSite& s : r.top_stalls) {
      const OpIndex g = t.iteration(it).op_begin + s.op;
      table.AddRow({absl::StrCat(s.op), t.op_name_at(g), std::string(PhaseName(t.op(g).phase)),
                    FormatDurationNs(s.stall_ns), std::string(StallCauseName(s.cause)),
                    absl::StrCat(s.tensor_id)});
    }
    absl::StrAppend(&out, table.Render(/*left_columns=*/3));
  }
  return out;
}

std::string RenderJson(const Trace& t, const Policy& p, const SimulateArgs& args,
                       const SimulationResult& r) {
  using nlohmann::json;
  auto op_json = [&](int32_t op) -> json {
    if (op < 0) return nullptr;
    return {{"op", op}, {"name", t.op_name_at(t.iteration(r.iteration).op_begin + op)}};
  };
  json j;
  j["trace"] = t.source();
  j["policy"] = args.policy;
  j["planner"] = p.planner;
  j["iteration"] = r.iteration;
  j["ops"] = r.num_ops;
  j["items"] = p.items.size();
  j["durations"] = std::string(DurationSourceName(r.durations));
  j["capacity_bytes"] =
      r.memory_limit_bytes == kUnlimitedBytes ? json(nullptr) : json(r.memory_limit_bytes);
  j["h2d_bandwidth_bytes_per_s"] = r.device.h2d_bandwidth_bytes_per_s;
  j["d2h_bandwidth_bytes_per_s"] = r.device.d2h_bandwidth_bytes_per_s;
  j["transfer_latency_ns"] = r.device.copy_latency_ns;
  j["half_duplex"] = r.device.half_duplex();
  j["record_stream"] = r.record_stream == RecordStreamMode::kNaive ? "naive" : "custom";
  j["feasible"] = !r.oom.occurred;
  j["iteration_time_ns"] = r.iteration_time_ns;
  j["ideal_time_ns"] = r.ideal_time_ns;
  j["overhead_vs_ideal"] = r.overhead_vs_ideal;
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
  j["ops_with_stall"] = r.ops_with_stall;
  json stalls = json::array();
  for (const StallSite& s : r.top_stalls) {
    json e = op_json(s.op);
    e["stall_ns"] = s.stall_ns;
    e["cause"] = std::string(StallCauseName(s.cause));
    e["tensor_id"] = s.tensor_id;
    stalls.push_back(e);
  }
  j["top_stalls"] = stalls;
  j["peak_bytes"] = r.peak_bytes;
  j["peak_op"] = op_json(r.peak_op);
  json oom = {{"occurred", r.oom.occurred}};
  if (r.oom.occurred) {
    oom["op"] = op_json(r.oom.op);
    oom["requested_bytes"] = r.oom.requested_bytes;
    oom["free_bytes"] = r.oom.free_bytes;
    oom["ops_over_capacity"] = r.oom.ops_over_capacity;
    oom["max_excess_bytes"] = r.oom.max_excess_bytes;
    if (r.oom.pool_class >= 0) oom["pool_class"] = r.oom.pool_class;
  }
  j["oom"] = oom;
  if (args.oom_handling == "algorithm3") {
    const OomHandlingStats& h = r.oom_handling;
    j["oom_handling"] = {{"mode", "algorithm3"},
                         {"allocation_failures", h.allocation_failures},
                         {"early_releases", h.early_releases},
                         {"passive_swap_outs", h.passive_swap_outs},
                         {"passive_swap_ins", h.passive_swap_ins},
                         {"passive_bytes_d2h", h.passive_bytes_d2h},
                         {"passive_bytes_h2d", h.passive_bytes_h2d},
                         {"passive_stall_ns", h.passive_stall_ns},
                         {"unresolved", h.unresolved},
                         {"first_unresolved", op_json(h.first_unresolved_op)},
                         {"first_unresolved_missing_bytes", h.first_unresolved_missing_bytes}};
  }
  if (r.pool_bytes > 0) j["pool_bytes"] = r.pool_bytes;
  j["bytes_d2h"] = r.bytes_d2h;
  j["bytes_h2d"] = r.bytes_h2d;
  j["copies_d2h"] = r.copies_d2h;
  j["copies_h2d"] = r.copies_h2d;
  j["d2h_busy_ns"] = r.d2h_busy_ns;
  j["h2d_busy_ns"] = r.h2d_busy_ns;
  j["recomputed_items"] = r.recomputed_items;
  j["reuse_interval"] = {{"blocks", r.reuse.blocks},
                         {"mean_ops", r.reuse.mean_ops},
                         {"max_ops", r.reuse.max_ops},
                         {"unreleased_blocks", r.reuse.unreleased_blocks}};
  j["host_event_queries"] = r.host_event_queries;
  j["host_syncs"] = r.host_syncs;
  j["events"] = r.events;
  return j.dump(2) + "\n";
}

absl::Status Run(const SimulateArgs& args) {
  SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, LoadTrace(args.trace));
  SWAPPLAN_ASSIGN_OR_RETURN(Policy policy, ReadPolicy(args.policy));
  SimulatorOptions o;
  SWAPPLAN_RETURN_IF_ERROR(ApplySimFlags(args.sim, &o));
  std::string capacity_source;
  if (!args.device_memory.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(args.device_memory);
    if (!b.ok())
      return absl::InvalidArgumentError(absl::StrCat("--device-memory: ", b.status().message()));
    o.device.capacity_bytes = *b;
    capacity_source = " (--device-memory)";
  } else if (policy.BudgetBytes() > 0) {
    // The policy's device: the run may use its budget (capacity - reserve).
    o.device.capacity_bytes = policy.device.capacity_bytes;
    o.device.reserve_bytes = policy.device.reserve_bytes;
    capacity_source = " (the policy's budget)";
  }
  o.record_stream = args.naive_record_stream ? RecordStreamMode::kNaive : RecordStreamMode::kCustom;
  if (!args.host_dispatch.empty()) {
    absl::StatusOr<int64_t> v = ParseDurationNs(args.host_dispatch);
    if (!v.ok())
      return absl::InvalidArgumentError(absl::StrCat("--host-dispatch: ", v.status().message()));
    o.host_dispatch_ns = *v;
  }
  if (!args.event_query.empty()) {
    absl::StatusOr<int64_t> v = ParseDurationNs(args.event_query);
    if (!v.ok())
      return absl::InvalidArgumentError(absl::StrCat("--event-query: ", v.status().message()));
    o.host_event_query_ns = *v;
  }
  o.launch_queue_depth = args.launch_queue_depth;
  o.top_stall_ops = args.top_stalls;
  o.record_timeline = !args.timeline.empty();
  o.oom_handling =
      args.oom_handling == "algorithm3" ? OomHandling::kAlgorithm3 : OomHandling::kReport;
  SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, Simulate(trace, policy, o));
  if (!args.timeline.empty()) {
    SWAPPLAN_RETURN_IF_ERROR(WriteOutput(args.timeline, TimelineToChromeTrace(trace, policy, r)));
  }
  SWAPPLAN_RETURN_IF_ERROR(
      WriteOutput(args.output, args.json ? RenderJson(trace, policy, args, r)
                                         : RenderText(trace, policy, args, capacity_source, r)));
  if (r.oom.occurred) {
    return absl::ResourceExhaustedError(absl::StrCat(
        args.policy, " does not fit in ", BytesExact(r.memory_limit_bytes), ": at ",
        OpText(trace, r.iteration, r.oom.op), " it requests ", BytesExact(r.oom.requested_bytes),
        " with ", BytesExact(r.oom.free_bytes), " free"));
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
  sub->add_option("trace", args->trace, "Trace file")->required();
  sub->add_option("policy", args->policy, "Policy file (JSON or binary)")->required();
  sub->add_option("--device-memory", args->device_memory,
                  "Device memory, e.g. 64GiB (default: the policy's budget; unlimited without)");
  AddSimFlags(sub, &args->sim);
  sub->add_flag("--naive-record-stream", args->naive_record_stream,
                "Reuse a swapped-out block only when the host sees its copy done (PyTorch "
                "recordStream) instead of at the planned release op");
  sub->add_option("--host-dispatch", args->host_dispatch,
                  "Host time to dispatch one op, e.g. 10us (default 0)");
  sub->add_option("--event-query", args->event_query,
                  "Host time per pending block queried at each dispatch (naive mode; default 0)");
  sub->add_option("--launch-queue-depth", args->launch_queue_depth,
                  "Ops the host may dispatch ahead of the device")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--top-stalls", args->top_stalls, "Ops with the longest stalls to list")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--oom-handling", args->oom_handling,
                  "An allocation that does not fit: report it (an OOM), or handle it with seed "
                  "001's Algorithm 3 (release finished swap-outs early, then passive swaps of the "
                  "closest-size resident tensors; OOM only when that fails)")
      ->capture_default_str()
      ->check(CLI::IsMember({"report", "algorithm3"}));
  sub->add_option("--timeline", args->timeline,
                  "Write the per-stream timeline as Chrome trace JSON (open in ui.perfetto.dev)");
  sub->add_flag("--json", args->json, "Machine-readable JSON output");
  sub->add_option("-o,--output", args->output, "Write to FILE instead of stdout");
  sub->callback([args, action] { *action = [args]() -> absl::Status { return Run(*args); }; });
}

}  // namespace swapplan::cli
