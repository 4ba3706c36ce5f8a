// The multi-iteration replay loop (replay.h).
#include "swapplan/eval/replay.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/varying/tensor_roles.h"

namespace swapplan {

absl::Status ReplayOptions::Validate() const {
  auto bad = [](absl::string_view field, auto value, absl::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("replay options: ", field, " is ", value, "; ", rule));
  };
  const DeviceModel& device = simulator.device;
  if (device.capacity_bytes <= 0 || device.capacity_bytes == kUnlimitedCapacityBytes) {
    return bad("simulator.device.capacity_bytes", device.capacity_bytes,
               "must be > 0 and not unlimited");
  }
  if (device.reserve_bytes < 0 || device.reserve_bytes >= device.capacity_bytes) {
    return bad("simulator.device.reserve_bytes", device.reserve_bytes,
               "must be >= 0 and below the capacity");
  }
  if (runtime_key_bits != 32 && runtime_key_bits != 64) {
    return bad("runtime_key_bits", runtime_key_bits, "must be 32 or 64");
  }
  if (max_iterations < 0) return bad("max_iterations", max_iterations, "must be >= 0");
  if (explain_iteration < -1) {
    return bad("explain_iteration", explain_iteration, "must be >= 0 (or -1: none)");
  }
  if (matcher != MatcherKind::kFuzzy && matcher != MatcherKind::kNaive) {
    return bad("matcher", static_cast<int>(matcher), "unknown matcher");
  }
  if (boundary != IterationBoundary::kTrace && boundary != IterationBoundary::kOptimizerEnd) {
    return bad("boundary", static_cast<int>(boundary), "unknown boundary");
  }
  SWAPPLAN_RETURN_IF_ERROR(matcher_options.Validate());
  SWAPPLAN_RETURN_IF_ERROR(tracker.Validate());
  return simulator.Validate();
}

namespace {

// A generated policy, ready for matching, with what the GenPolicy run
// learned of it.
struct PolicyRecord {
  int32_t id = 0;
  MatchablePolicy matchable;
  std::vector<uint64_t> item_roles;
  std::unique_ptr<TensorMatcher> matcher;
  // Outcome of the iteration it ran in (set once run).
  bool scored = false;
  bool clean = false;  // no use while off device, no unresolved OOM
  int32_t ooms = 0;
  int64_t time_ns = 0;
};

// Whether a is a better long-term policy than b.
bool Better(const PolicyRecord& a, const PolicyRecord& b) {
  if (a.clean != b.clean) return a.clean;
  if (a.ooms != b.ooms) return a.ooms < b.ooms;
  if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
  return a.id < b.id;
}

}  // namespace

absl::StatusOr<ReplaySummary> RunReplay(const Trace& trace, const ReplayOptions& options,
                                        absl::FunctionRef<void(const ReplayRow&)> on_row) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<Planner> planner;
  if (options.planner == "chameleon") {
    SWAPPLAN_RETURN_IF_ERROR(options.chameleon.Validate());
    planner = std::make_unique<ChameleonPlanner>(options.chameleon);
  } else {
    SWAPPLAN_ASSIGN_OR_RETURN(planner, CreatePlanner(options.planner));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(StageTracker tracker, StageTracker::Create(options.tracker));
  // Planning: the whole device model (budget = capacity - reserve).
  // Simulation: the same device with all of its capacity.
  DeviceModel device = options.simulator.device;
  const double h2d = device.h2d_bandwidth_bytes_per_s > 0
                         ? device.h2d_bandwidth_bytes_per_s
                         : trace.metadata().h2d_bandwidth_bytes_per_s;
  const double d2h = device.d2h_bandwidth_bytes_per_s > 0
                         ? device.d2h_bandwidth_bytes_per_s
                         : trace.metadata().d2h_bandwidth_bytes_per_s;
  if (!(h2d > 0) || !(d2h > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replay: no ", !(h2d > 0) ? "h2d" : "d2h", " bandwidth: none given and none in the ",
        "metadata of ", trace.source()));
  }
  device.h2d_bandwidth_bytes_per_s = h2d;
  device.d2h_bandwidth_bytes_per_s = d2h;
  SimulatorOptions sim_options = options.simulator;
  sim_options.device = device;
  sim_options.device.reserve_bytes = 0;

  SegmentExtractor segments(trace, RuntimeIterations(trace, options.boundary));
  ReplaySummary sum;
  sum.runtime_iterations = segments.num_segments();
  const int32_t count = options.max_iterations > 0
                            ? std::min(options.max_iterations, segments.num_segments())
                            : segments.num_segments();

  Stage stage = Stage::kWarmUp;
  std::unique_ptr<PolicyRecord> pending;              // runs in the next GenPolicy iteration
  std::vector<std::unique_ptr<PolicyRecord>> genrun;  // this GenPolicy run's policies
  PolicyRecord* stable = nullptr;                     // Stable's policy (owned by genrun)
  int32_t next_id = 0;
  RuntimeTensorTable table;
  std::vector<int32_t> tokens;

  for (int32_t t = 0; t < count; ++t) {
    SWAPPLAN_ASSIGN_OR_RETURN(Trace seg, segments.Extract(t));
    ReplayRow row;
    row.iteration = t;
    row.trace_iteration = trace.IterationOf(segments.range(t).begin);
    row.ops = seg.iteration(0).num_ops();
    row.stage = stage;

    // The policy this iteration runs.
    PolicyRecord* run = nullptr;
    if (stage == Stage::kGenPolicy && pending) {
      genrun.push_back(std::move(pending));
      run = genrun.back().get();
    } else if (stage == Stage::kStable) {
      run = stable;
    }
    AppliedPolicy applied;
    if (run != nullptr) {
      applied = ApplyPolicy(seg, 0, run->matchable, run->item_roles, *run->matcher, table);
      row.policy = run->id;
      row.items = applied.items;
      row.matched = applied.matched;
      row.mismatched = applied.mismatched;
      row.missed = applied.missed;
      row.uses_while_off_device = applied.uses_while_off_device;
      row.first_off_device_op = applied.first_off_device_op;
      row.first_off_device_tensor = applied.first_off_device_tensor;
    } else {
      applied.policy.fingerprint = ComputeFingerprint(seg, 0);
    }
    const bool handle_ooms = stage == Stage::kWarmUp || options.oom_handling_in_all_stages;
    sim_options.oom_handling = handle_ooms ? OomHandling::kAlgorithm3 : OomHandling::kReport;
    SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(seg, 0, sim_options));
    absl::StatusOr<SimulationResult> r = sim.Run(applied.policy);
    if (!r.ok()) {
      return absl::Status(r.status().code(), absl::StrCat("replay: runtime iteration ", t, ": ",
                                                          r.status().message()));
    }
    if (handle_ooms) {
      row.ooms = r->oom_handling.allocation_failures;
      row.passive_swaps = r->oom_handling.passive_swap_outs;
      row.unresolved_ooms = r->oom_handling.unresolved;
      row.first_oom_op = r->oom_handling.first_unresolved_op;
      row.first_oom_missing_bytes = r->oom_handling.first_unresolved_missing_bytes;
    } else if (r->oom.occurred) {
      row.ooms = row.unresolved_ooms = r->oom.ops_over_capacity;
      row.first_oom_op = r->oom.op;
      row.first_oom_missing_bytes = r->oom.requested_bytes - r->oom.free_bytes;
    }
    if (t == options.explain_iteration) row.reports = std::move(applied.reports);
    row.time_ns = r->iteration_time_ns;
    row.stall_ns = r->stall_ns;
    row.peak_bytes = r->peak_bytes;
    if (run != nullptr && stage == Stage::kGenPolicy) {
      run->scored = true;
      run->clean = row.uses_while_off_device == 0 && row.unresolved_ooms == 0;
      run->ooms = row.ooms;
      run->time_ns = row.time_ns;
    }

    // End of the iteration: the tracker, then the next iteration's policy.
    const IterationInfo& it0 = seg.iteration(0);
    tokens.resize(it0.num_ops());
    for (OpIndex op = it0.op_begin; op < it0.op_end; ++op) tokens[op] = seg.op(op).name;
    const StageDecision d = tracker.Observe(tokens);
    row.sequence_stable = d.sequence_stable;
    row.length_change = d.length_change;
    row.similarity = d.similarity;
    row.next_stage = d.stage;
    if (d.stage == Stage::kWarmUp) {
      pending.reset();
      genrun.clear();
      stable = nullptr;
    } else if (d.stage == Stage::kGenPolicy) {
      if (stage != Stage::kGenPolicy) genrun.clear();
      PlanningProblem problem;
      problem.trace = &seg;
      problem.iteration = 0;
      problem.device = device;
      absl::StatusOr<Policy> policy = planner->Plan(problem);
      if (policy.ok()) {
        auto rec = std::make_unique<PolicyRecord>();
        rec->id = next_id++;
        SWAPPLAN_ASSIGN_OR_RETURN(
            rec->matchable,
            MakeMatchablePolicy(seg, 0, *std::move(policy), options.runtime_key_bits));
        const std::vector<uint64_t> roles = TensorRoles(seg, 0);
        for (const MatchableItem& mi : rec->matchable.items) {
          // The item's tensor: the one whose file id the policy names.
          const PolicyItem& pi = rec->matchable.policy.items[mi.item];
          TensorId tensor = kNoTensor;
          absl::Span<const TensorId> uses =
              seg.uses(seg.iteration(0).op_begin + mi.decision.ordinal);
          for (TensorId u : uses) {
            if (seg.tensor(u).trace_id == pi.tensor_id) tensor = u;
          }
          rec->item_roles.push_back(tensor == kNoTensor ? 0 : roles[tensor]);
        }
        SWAPPLAN_ASSIGN_OR_RETURN(
            rec->matcher, CreateMatcher(options.matcher, rec->matchable, options.matcher_options));
        row.generated_policy = rec->id;
        pending = std::move(rec);
        ++sum.policies_generated;
      } else if (KindOf(policy.status()) == ErrorKind::kInfeasible) {
        row.plan_error = std::string(policy.status().message());
        pending.reset();
        ++sum.plan_failures;
      } else {
        return absl::Status(policy.status().code(),
                            absl::StrCat("replay: planning runtime iteration ", t, ": ",
                                         policy.status().message()));
      }
    } else if (stage == Stage::kGenPolicy) {
      // GenPolicy -> Stable: keep the best policy of the run.
      pending.reset();
      stable = nullptr;
      for (const std::unique_ptr<PolicyRecord>& p : genrun) {
        if (p->scored && (stable == nullptr || Better(*p, *stable))) stable = p.get();
      }
    }
    stage = d.stage;

    ++sum.iterations;
    ++sum.iterations_by_stage[static_cast<int>(row.stage)];
    sum.uses_while_off_device += row.uses_while_off_device;
    sum.ooms += row.ooms;
    sum.passive_swaps += row.passive_swaps;
    sum.unresolved_ooms += row.unresolved_ooms;
    sum.items += row.items;
    sum.matched += row.matched;
    sum.missed += row.missed;
    sum.mismatched += row.mismatched;
    sum.time_ns += row.time_ns;
    if (row.stage != Stage::kWarmUp) {
      sum.ooms_after_warmup += row.ooms;
      if (row.ooms > 0 && sum.first_oom_after_warmup_iteration < 0) {
        sum.first_oom_after_warmup_iteration = t;
      }
    }
    if (row.unresolved_ooms > 0 && sum.first_unresolved_oom_iteration < 0) {
      sum.first_unresolved_oom_iteration = t;
    }
    if (row.uses_while_off_device > 0 && sum.first_off_device_iteration < 0) {
      sum.first_off_device_iteration = t;
    }
    on_row(row);
  }
  return sum;
}

}  // namespace swapplan
