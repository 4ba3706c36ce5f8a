// Evaluation simulator: setup, policy resolution and validation. The
// one-pass replay itself is in simulator_run.cc.
#include "swapplan/sim/simulator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/simulator_internal.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/saved_tensor_clock.h"
#include "swapplan/trace/dataflow.h"
#include "swapplan/util/error.h"
#include "swapplan/util/checked.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/utf8.h"

namespace swapplan {

absl::Status SimulatorOptions::Validate() const {
  auto bad = [](absl::string_view field, auto value, absl::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("simulator options: ", field, " is ", value, "; ", rule));
  };
  if (device.capacity_bytes < 0) {
    return bad("device.capacity_bytes", device.capacity_bytes, "must be >= 0 (0 = unlimited)");
  }
  if (absl::Status st = device.ValidatePartial(); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("simulator options: ", st.message()));
  }
  if (record_stream != RecordStreamMode::kCustom && record_stream != RecordStreamMode::kNaive) {
    return bad("record_stream", static_cast<int>(record_stream), "unknown mode");
  }
  if (host_dispatch_ns < 0) return bad("host_dispatch_ns", host_dispatch_ns, "must be >= 0");
  if (host_event_query_ns < 0) {
    return bad("host_event_query_ns", host_event_query_ns, "must be >= 0");
  }
  if (launch_queue_depth < 1) return bad("launch_queue_depth", launch_queue_depth, "must be >= 1");
  if (top_stall_ops < 0) return bad("top_stall_ops", top_stall_ops, "must be >= 0");
  if (oom_handling != OomHandling::kReport && oom_handling != OomHandling::kAlgorithm3) {
    return bad("oom_handling", static_cast<int>(oom_handling), "unknown mode");
  }
  if (clock != TriggerClock::kOps && clock != TriggerClock::kSavedTensors) {
    return bad("clock", static_cast<int>(clock), "unknown clock");
  }
  return absl::OkStatus();
}

int64_t SimulatorOptions::memory_limit_bytes() const {
  if (device.capacity_bytes == 0) return kUnlimitedBytes;
  return device.BudgetBytes();  // kUnlimitedBytes for an unlimited capacity
}

absl::string_view StallCauseName(StallCause c) {
  switch (c) {
    case StallCause::kRelease:
      return "release";
    case StallCause::kPassive:
      return "passive";
    case StallCause::kSwapIn:
      break;
  }
  return "swap-in";
}

namespace {

// Every simulated clock value is at most the sum of everything the run can
// spend time on: each op's dispatch and duration (this bound) and each copy
// and recomputation (added in Prepare) — every start is the max of earlier
// ends. Bounding that sum first makes the replay's unchecked clock
// arithmetic safe; an input whose sum does not fit is an error naming the
// op that crosses 2^63 - 1 ns (issue 19: a wall time near INT64_MAX).
// Returns the sum. O(ops).
absl::StatusOr<int64_t> OpClockBound(const Trace& trace, int32_t iteration,
                                     const std::vector<int64_t>& durations,
                                     int64_t host_dispatch_ns) {
  const IterationInfo& iter = trace.iteration(iteration);
  int64_t bound = 0;
  for (size_t i = 0; i < durations.size(); ++i) {
    int64_t step = 0;
    if (!CheckedAdd(host_dispatch_ns, durations[i], &step) || !CheckedAdd(bound, step, &bound)) {
      return OverflowError(
          absl::StrCat(trace.source(), ": iteration ", iteration, ", op ", i, " (",
                       EscapeForMessage(trace.op_name_at(iter.op_begin + static_cast<int32_t>(i))),
                       ")"),
          absl::StrCat("the simulated clock passes 2^63 - 1 ns (292 years) with its duration ",
                       durations[i], " ns and a host dispatch of ", host_dispatch_ns,
                       " ns per op"));
    }
  }
  return bound;
}

}  // namespace

absl::StatusOr<Simulator> Simulator::Create(const Trace& trace, int32_t iteration,
                                            const SimulatorOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(
      OpDurations durations,
      ComputeOpDurations(trace, iteration, OpTimeModel::kAuto, 0, options.device.compute_time_scale));
  SWAPPLAN_ASSIGN_OR_RETURN(PolicyResolver resolver, PolicyResolver::Create(trace, iteration));
  Simulator s;
  s.trace_ = &trace;
  s.iteration_ = iteration;
  s.options_ = options;
  s.durations_ = std::move(durations);
  s.n_ = trace.iteration(iteration).num_ops();
  s.resolver_.emplace(std::move(resolver));
  SWAPPLAN_RETURN_IF_ERROR(
      OpClockBound(trace, iteration, s.durations_.duration_ns, options.host_dispatch_ns).status());
  s.ideal_time_ns_ = internal_sim::IdealTime(s.durations_.duration_ns, {}, options);
  return s;
}

namespace internal_sim {

int64_t IdealTime(const std::vector<int64_t>& durations, absl::Span<const int32_t> schedule,
                  const SimulatorOptions& o) {
  const int32_t n = static_cast<int32_t>(durations.size());
  const int32_t depth = std::min<int32_t>(o.launch_queue_depth, std::max(n, 1));
  std::vector<int64_t> ring(depth, 0);
  int64_t h = 0, end = 0;
  for (int32_t p = 0; p < n; ++p) {
    int64_t t0 = h;
    if (p >= o.launch_queue_depth) t0 = std::max(t0, ring[p % depth]);
    h = t0 + o.host_dispatch_ns;
    const int32_t op = schedule.empty() ? p : schedule[p];
    end = std::max(end, h) + durations[op];
    ring[p % depth] = end;
  }
  return end;
}

}  // namespace internal_sim

DeviceModel Simulator::DeviceFor(const Policy& policy) const {
  const Trace& trace = *trace_;
  // The device the copies run on: bandwidths from the options, else the
  // trace metadata, else the policy.
  DeviceModel device = options_.device;
  auto pick = [](double opt, double meta, double pol) {
    return opt > 0 ? opt : meta > 0 ? meta : pol;
  };
  device.h2d_bandwidth_bytes_per_s =
      pick(options_.device.h2d_bandwidth_bytes_per_s, trace.metadata().h2d_bandwidth_bytes_per_s,
           policy.device.h2d_bandwidth_bytes_per_s);
  device.d2h_bandwidth_bytes_per_s =
      pick(options_.device.d2h_bandwidth_bytes_per_s, trace.metadata().d2h_bandwidth_bytes_per_s,
           policy.device.d2h_bandwidth_bytes_per_s);
  // The tiers the items may name: the options', else the policy's.
  if (device.tiers.empty()) device.tiers = policy.device.tiers;
  return device;
}

absl::StatusOr<internal_sim::Prepared> Simulator::Prepare(const Policy& policy,
                                                          absl::Span<const int32_t> schedule,
                                                          const ResolveOptions& shared,
                                                          ResolvedPolicy* given) const {
  const Trace& trace = *trace_;
  const int32_t n = n_;
  const DeviceModel device = DeviceFor(policy);
  internal_sim::Prepared pr;
  if (given != nullptr) {
    SWAPPLAN_RETURN_IF_ERROR(PolicyResolver::FirstFatalIssue(*given));
    pr.resolved = std::move(*given);
  } else {
    SWAPPLAN_ASSIGN_OR_RETURN(pr.resolved,
                              resolver_->Resolve(policy, device,
                                                 {.schedule = schedule,
                                                  .recompute_analysis = shared.recompute_analysis,
                                                  .recipe_memo = shared.recipe_memo}));
  }
  const ResolvedPolicy& rp = pr.resolved;
  pr.h2d_bw = device.h2d_bandwidth_bytes_per_s;
  pr.d2h_bw = device.d2h_bandwidth_bytes_per_s;
  pr.device = device;
  pr.initial_bytes = rp.initial_bytes;
  const size_t ni = rp.items.size();
  pr.items.resize(ni);
  bool any_swap = false;
  for (size_t k = 0; k < ni; ++k) {
    const ResolvedItem& ri = rp.items[k];
    internal_sim::Item& r = pr.items[k];
    r.size = ri.size_bytes;
    r.swap = ri.swap();
    r.recompute_ns = ri.recompute_ns;
    r.wraps = ri.wraps;
    r.clean = ri.clean;
    r.out = ri.out;
    r.release = ri.release;
    r.in = ri.in;
    r.use = ri.use;
    r.out_ns = ri.out_ns;
    r.in_ns = ri.in_ns;
    r.slot = ri.slot;
    r.tier = ri.tier;
    any_swap = any_swap || (r.swap && r.tier == 0);
    // A wrapping item's tensor is on the host when the iteration starts.
    if (r.wraps) pr.initial_bytes -= r.size;
  }
  if (any_swap && (!(pr.h2d_bw > 0) || !(pr.d2h_bw > 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("the policy swaps tensors but no ", !(pr.h2d_bw > 0) ? "h2d" : "d2h",
                     " bandwidth is known: none given, none in the metadata of ", trace.source(),
                     ", none in the policy"));
  }
  // --- per-position buckets (counting sort, stable in item order) -----------
  auto bucket = [&](internal_sim::Buckets& b, auto key) {
    b.begin.assign(n + 1, 0);
    for (const internal_sim::Item& r : pr.items) ++b.begin[key(r) + 1];
    for (int32_t p = 0; p < n; ++p) b.begin[p + 1] += b.begin[p];
    b.items.resize(ni);
    std::vector<int32_t> fill(b.begin.begin(), b.begin.end() - 1);
    for (size_t k = 0; k < ni; ++k) b.items[fill[key(pr.items[k])]++] = static_cast<int32_t>(k);
  };
  if (ni > 0) {
    bucket(pr.by_out, [](const internal_sim::Item& r) { return r.out; });
    bucket(pr.by_release, [](const internal_sim::Item& r) { return r.release; });
    bucket(pr.by_in, [](const internal_sim::Item& r) { return r.in; });
    bucket(pr.by_use, [](const internal_sim::Item& r) { return r.use; });
  }
  // The clock bound of Create plus every copy and recomputation, and the
  // naive mode's event queries (at most every item pending at each of the
  // n dispatches).
  SWAPPLAN_ASSIGN_OR_RETURN(int64_t bound, OpClockBound(*trace_, iteration_,
                                                         durations_.duration_ns,
                                                         options_.host_dispatch_ns));
  for (size_t k = 0; k < ni; ++k) {
    const internal_sim::Item& r = pr.items[k];
    if (!CheckedAdd(bound, r.out_ns, &bound) || !CheckedAdd(bound, r.in_ns, &bound) ||
        !CheckedAdd(bound, r.recompute_ns, &bound)) {
      return OverflowError(
          absl::StrCat("policy item ", rp.items[k].item, " (tensor ", rp.items[k].tensor, ")"),
          absl::StrCat("with its copies (", r.out_ns, " + ", r.in_ns, " ns) and recomputation (",
                       r.recompute_ns, " ns) the simulated clock passes 2^63 - 1 ns"));
    }
  }
  if (options_.record_stream == RecordStreamMode::kNaive && options_.host_event_query_ns > 0) {
    int64_t queries = 0;
    if (!CheckedMul<int64_t>(static_cast<int64_t>(ni), n, &queries) ||
        !CheckedMul(queries, options_.host_event_query_ns, &queries) ||
        !CheckedAdd(bound, queries, &bound)) {
      return OverflowError("simulator options",
                           absl::StrCat("host_event_query_ns ", options_.host_event_query_ns,
                                        " for up to ", ni, " pending blocks at each of ", n,
                                        " dispatches passes 2^63 - 1 ns"));
    }
  }
  if (options_.model_pool && !policy.pool.empty()) {
    SWAPPLAN_RETURN_IF_ERROR(PreparePool(policy, &pr));
  }
  pr.ideal_time_ns = schedule.empty()
                         ? ideal_time_ns_
                         : internal_sim::IdealTime(durations_.duration_ns, schedule, options_);
  return pr;
}

absl::StatusOr<SimulationResult> Simulator::Run(const Policy& policy,
                                                absl::Span<const int32_t> schedule) const {
  return RunShared(policy, {}, schedule);  // nothing shared
}

absl::StatusOr<SimulationResult> Simulator::RunShared(const Policy& policy,
                                                      const ResolveOptions& shared,
                                                      absl::Span<const int32_t> schedule) const {
  if (shared.recompute_analysis != nullptr && shared.recompute_analysis->num_ops() != n_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "simulator: the shared recompute analysis has ", shared.recompute_analysis->num_ops(),
        " ops; iteration ", iteration_, " of ", trace_->source(), " has ", n_));
  }
  if (schedule.empty() && !policy.schedule.empty()) schedule = policy.schedule;
  if (options_.clock == TriggerClock::kSavedTensors) {
    if (!schedule.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "simulator: the saved-tensor clock models the recorded op order; iteration ",
          iteration_, " of ", trace_->source(), " is run under a schedule"));
    }
    SWAPPLAN_ASSIGN_OR_RETURN(SavedClockPolicy snapped,
                              SnapToSavedTensorEvents(*trace_, iteration_, policy));
    SWAPPLAN_ASSIGN_OR_RETURN(internal_sim::Prepared pr, Prepare(snapped.policy, {}, shared));
    SimulationResult r = internal_sim::Replay(*this, pr, snapped.policy, {});
    r.saved_clock = {.modelled = true,
                     .hook_clock = snapped.per_op_reason.empty(),
                     .snapped_items = snapped.snapped_items,
                     .resident_items = snapped.resident_items,
                     .before_forward_items = snapped.before_forward_items,
                     .per_op_reason = std::move(snapped.per_op_reason)};
    return r;
  }
  SWAPPLAN_ASSIGN_OR_RETURN(internal_sim::Prepared pr, Prepare(policy, schedule, shared));
  return internal_sim::Replay(*this, pr, policy, schedule);
}

absl::StatusOr<SimulationResult> Simulator::RunResolved(const Policy& policy,
                                                        ResolvedPolicy resolved,
                                                        const DeviceModel& device,
                                                        const ResolveOptions& shared) const {
  if (options_.clock != TriggerClock::kOps || !policy.schedule.empty() || resolved.scheduled() ||
      resolved.num_ops != n_ ||
      resolved.iteration != iteration_ || !(device == DeviceFor(policy))) {
    return RunShared(policy, shared);
  }
  SWAPPLAN_ASSIGN_OR_RETURN(internal_sim::Prepared pr, Prepare(policy, {}, shared, &resolved));
  return internal_sim::Replay(*this, pr, policy, {});
}

absl::StatusOr<SimulationResult> Simulate(const Trace& trace, const Policy& policy,
                                          const SimulatorOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(CheckFingerprint(policy, trace));
  // A schedule from outside (the policy's) must respect the iteration's
  // dataflow (trace/dataflow.h): Simulator::Run trusts its caller's order,
  // so a policy file that runs an op before one it depends on is refused
  // here rather than simulated (issue 19).
  if (!policy.schedule.empty()) {
    SWAPPLAN_ASSIGN_OR_RETURN(DataflowGraph graph,
                              DataflowGraph::Build(trace, policy.fingerprint.iteration));
    if (absl::Status st = graph.ValidateSchedule(policy.schedule); !st.ok()) {
      return WithRule(Error(ErrorKind::kMalformedInput,
                            absl::StrCat(st.message(), " [schedule-breaks-dependency]")),
                      "schedule-breaks-dependency");
    }
  }
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim,
                            Simulator::Create(trace, policy.fingerprint.iteration, options));
  return sim.Run(policy);
}

}  // namespace swapplan
