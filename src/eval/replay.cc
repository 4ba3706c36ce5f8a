// The multi-iteration replay loop (replay.h); its stage machine is the policy
// library the runtime runs too (varying/policy_library.h).
#include "swapplan/eval/replay.h"

#include "eval/replay_plan.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/varying/policy_library.h"
#include "swapplan/varying/tensor_roles.h"

namespace swapplan {

absl::string_view PolicyKeyingName(PolicyKeying k) {
  return k == PolicyKeying::kByInput ? "input" : "single";
}

bool ParsePolicyKeying(absl::string_view name, PolicyKeying* out) {
  if (name == "single") {
    *out = PolicyKeying::kSingle;
  } else if (name == "input") {
    *out = PolicyKeying::kByInput;
  } else {
    return false;
  }
  return true;
}

absl::string_view PlanningInputName(PlanningInput p) {
  switch (p) {
    case PlanningInput::kEnvelope:
      return "envelope";
    case PlanningInput::kObserved:
      return "observed";
    case PlanningInput::kIteration:
      break;
  }
  return "iteration";
}

bool ParsePlanningInput(absl::string_view name, PlanningInput* out) {
  if (name == "iteration") {
    *out = PlanningInput::kIteration;
  } else if (name == "envelope") {
    *out = PlanningInput::kEnvelope;
  } else if (name == "observed") {
    *out = PlanningInput::kObserved;
  } else {
    return false;
  }
  return true;
}

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
  if (keying != PolicyKeying::kSingle && keying != PolicyKeying::kByInput) {
    return bad("keying", static_cast<int>(keying), "unknown policy keying");
  }
  if (plan_on != PlanningInput::kIteration && plan_on != PlanningInput::kEnvelope &&
      plan_on != PlanningInput::kObserved) {
    return bad("plan_on", static_cast<int>(plan_on), "unknown planning input");
  }
  if (!std::isfinite(verify_margin) || verify_margin < 0) {
    return bad("verify_margin", verify_margin, "must be finite and >= 0");
  }
  if (verify_rounds < 1) return bad("verify_rounds", verify_rounds, "must be >= 1");
  if (verify_iterations < 1) return bad("verify_iterations", verify_iterations, "must be >= 1");
  if (remembered_sequences < 0) {
    return bad("remembered_sequences", remembered_sequences, "must be >= 0 (0: none)");
  }
  if (model_runtime && plan_on == PlanningInput::kEnvelope) {
    // What the runtime shim cannot do: it hands its provider the last
    // records of a key, not the envelope of every iteration since WarmUp.
    return bad("plan_on", PlanningInputName(plan_on),
               "model_runtime needs observed or iteration (the runtime's provider gets a key's "
               "last records, not an envelope of all of them)");
  }
  if (planner == "chain") SWAPPLAN_RETURN_IF_ERROR(chain.Validate());
  SWAPPLAN_RETURN_IF_ERROR(envelope.Validate());
  SWAPPLAN_RETURN_IF_ERROR(matcher_options.Validate());
  SWAPPLAN_RETURN_IF_ERROR(tracker.Validate());
  return simulator.Validate();
}

namespace {

using replay_internal::PolicyRecord;

// The replay's stage machine: the runtime's rules with model_runtime, the
// paper's (best run) or the latest observation's otherwise.
PolicyLibraryOptions ReplayLibraryOptions(const ReplayOptions& o) {
  PolicyLibraryOptions l;
  l.tracker = o.tracker;
  l.by_input = o.keying == PolicyKeying::kByInput;
  const bool one_iteration = o.plan_on == PlanningInput::kIteration;
  l.stable_choice = !one_iteration    ? StableChoice::kLatest
                    : o.model_runtime ? StableChoice::kBestCandidate
                                      : StableChoice::kBestRun;
  l.plan_leaving_genpolicy = !one_iteration;
  l.drop_latest_without_plan = o.model_runtime && one_iteration;
  l.remembered_sequences = o.remembered_sequences;
  return l;
}

// What the replay keeps per policy key beside the library's figures: its
// planning inputs and its policies (ids in the library).
struct ReplayKey : LibraryKeyData {
  IterationEnvelope envelope;
  std::vector<Trace> observed;  // kObserved: the last iterations seen
  std::vector<std::unique_ptr<PolicyRecord>> policies;
};

class ReplayLoop {
 public:
  ReplayLoop(const Trace& trace, const ReplayOptions& options, Planner* planner,
             const DeviceModel& device, const SimulatorOptions& sim_options, PolicyLibrary library)
      : trace_(trace),
        options_(options),
        planner_(planner),
        device_(device),
        sim_options_(sim_options),
        maker_(options, sim_options_),
        segments_(trace, RuntimeIterations(trace, options.boundary)),
        library_(std::move(library)) {}

  absl::StatusOr<ReplaySummary> Run(absl::FunctionRef<void(const ReplayRow&)> on_row);

 private:
  // The replay's data of `key`, made when new.
  ReplayKey& DataOf(LibraryKey& key);
  // The library's choice for `sig`: its record, nullptr for none.
  PolicyRecord* Choose(const InputSignature& sig, bool* other_key);
  // Plans for `key` after observing `seg` (which it may take: not used
  // afterwards): the policy made, for the library.
  absl::StatusOr<PlanOutcome> Plan(Trace& seg, int32_t t, LibraryKey& key, ReplayRow& row,
                                   ReplaySummary& sum);
  void Accumulate(ReplayRow& row, ReplaySummary& sum);

  const Trace& trace_;
  const ReplayOptions& options_;
  Planner* planner_;
  DeviceModel device_;
  SimulatorOptions sim_options_;
  replay_internal::PolicyMaker maker_;
  SegmentExtractor segments_;
  PolicyLibrary library_;
  std::vector<InputSignature> seen_;  // distinct input signatures
  int32_t next_id_ = 0;
  std::vector<int32_t> tokens_;
};

ReplayKey& ReplayLoop::DataOf(LibraryKey& key) {
  if (key.data == nullptr) {
    auto data = std::make_unique<ReplayKey>();
    data->envelope = IterationEnvelope(options_.envelope);
    key.data = std::move(data);
  }
  return static_cast<ReplayKey&>(*key.data);
}

PolicyRecord* ReplayLoop::Choose(const InputSignature& sig, bool* other_key) {
  const PolicyLibrary::Choice c = library_.Choose(sig);
  *other_key = !c.exact;
  if (c.policy < 0) return nullptr;
  for (const std::unique_ptr<PolicyRecord>& p : DataOf(*c.key).policies) {
    if (p->id == c.policy) return p.get();
  }
  return nullptr;
}

absl::StatusOr<PlanOutcome> ReplayLoop::Plan(Trace& seg, int32_t t, LibraryKey& key,
                                             ReplayRow& row, ReplaySummary& sum) {
  ReplayKey& data = DataOf(key);
  std::string infeasible;
  std::unique_ptr<PolicyRecord> rec;
  if (options_.plan_on == PlanningInput::kObserved) {
    // Plan the latest iteration; verify on the observed ones (PolicyMaker).
    data.observed.push_back(std::move(seg));
    if (static_cast<int32_t>(data.observed.size()) > options_.verify_iterations) {
      data.observed.erase(data.observed.begin());
    }
    row.planned_on_iterations = static_cast<int32_t>(data.observed.size());
    std::vector<const Trace*> observed;
    for (const Trace& o : data.observed) observed.push_back(&o);
    SWAPPLAN_ASSIGN_OR_RETURN(rec, maker_.MakeVerified(*planner_, observed, device_, t,
                                                       &infeasible));
  } else {
    Trace envelope;
    const Trace* plan_on = &seg;
    row.planned_on_iterations = 1;
    if (options_.plan_on == PlanningInput::kEnvelope) {
      data.envelope.Observe(seg, 0);
      SWAPPLAN_ASSIGN_OR_RETURN(envelope, data.envelope.Build(seg, 0));
      plan_on = &envelope;
      row.planned_on_iterations = data.envelope.observations();
    }
    SWAPPLAN_ASSIGN_OR_RETURN(rec, maker_.Make(*planner_, *plan_on, device_, t, &infeasible));
  }
  PlanOutcome made;
  if (rec == nullptr) {
    // The library keeps the key's policy or drops it
    // (PolicyLibraryOptions::drop_latest_without_plan).
    row.plan_error = infeasible;
    ++sum.plan_failures;
    return made;
  }
  rec->id = next_id_++;
  row.generated_policy = rec->id;
  row.generated_by = rec->planned.planner;
  made.policy = rec->id;
  made.simulated_iteration_time_ns = rec->matchable.policy.simulated_iteration_time_ns;
  made.planner = rec->planned.planner;
  data.policies.push_back(std::move(rec));
  ++sum.policies_generated;
  return made;
}

void ReplayLoop::Accumulate(ReplayRow& row, ReplaySummary& sum) {
  AccumulateReplayRow(row, sum);
}

}  // namespace

void AccumulateReplayRow(ReplayRow& row, ReplaySummary& sum) {
  const int s = static_cast<int>(row.stage);
  // What GenPolicy made for the row's input.
  auto in = std::find_if(sum.inputs.begin(), sum.inputs.end(),
                         [&](const InputPlanning& p) { return p.input == row.input; });
  if (in == sum.inputs.end()) {
    sum.inputs.emplace_back();
    in = sum.inputs.end() - 1;
    in->input = row.input;
  }
  if (row.generated_policy >= 0) {
    ++in->policies;
    ++in->by_planner[row.generated_by];
    ++sum.policies_by_planner[row.generated_by];
    in->planner = row.generated_by;
  } else if (!row.plan_error.empty()) {
    ++in->plan_failures;
    row.plan_error_repeated = !in->no_fit.empty();
    if (in->no_fit.empty()) {
      in->no_fit = row.plan_error;
      in->no_fit_iteration = row.iteration;
    }
  }
  ++sum.iterations;
  ++sum.iterations_by_stage[s];
  sum.uses_while_off_device += row.uses_while_off_device;
  sum.ooms += row.ooms;
  sum.ooms_by_stage[s] += row.ooms;
  sum.passive_swaps += row.passive_swaps;
  sum.passive_swaps_by_stage[s] += row.passive_swaps;
  sum.policy_swaps_by_stage[s] += row.policy_swaps;
  sum.unresolved_ooms += row.unresolved_ooms;
  sum.items += row.items;
  sum.matched += row.matched;
  sum.missed += row.missed;
  sum.mismatched += row.mismatched;
  sum.resized_larger += row.resized_larger;
  sum.resized_smaller += row.resized_smaller;
  sum.time_ns += row.time_ns;
  sum.time_ns_by_stage[s] += row.time_ns;
  sum.oracle_time_ns += row.oracle_time_ns;
  sum.oracle_time_ns_by_stage[s] += row.oracle_time_ns;
  if (row.oracle_plan_failed) ++sum.oracle_plan_failures;
  if (row.policy_of_other_input) ++sum.policy_of_other_input;
  if (row.change == StageChange::kPolicyMisses) ++sum.policy_miss_returns;
  if (row.stage != Stage::kWarmUp) {
    sum.ooms_after_warmup += row.ooms;
    if (row.ooms > 0 && sum.first_oom_after_warmup_iteration < 0) {
      sum.first_oom_after_warmup_iteration = row.iteration;
    }
  }
  if (row.unresolved_ooms > 0 && sum.first_unresolved_oom_iteration < 0) {
    sum.first_unresolved_oom_iteration = row.iteration;
  }
  if (row.uses_while_off_device > 0 && sum.first_off_device_iteration < 0) {
    sum.first_off_device_iteration = row.iteration;
  }
}

namespace {

absl::StatusOr<ReplaySummary> ReplayLoop::Run(absl::FunctionRef<void(const ReplayRow&)> on_row) {
  ReplaySummary sum;
  sum.runtime_iterations = segments_.num_segments();
  const int32_t count = options_.max_iterations > 0
                            ? std::min(options_.max_iterations, segments_.num_segments())
                            : segments_.num_segments();

  for (int32_t t = 0; t < count; ++t) {
    SWAPPLAN_ASSIGN_OR_RETURN(Trace seg, segments_.Extract(t));
    ReplayRow row;
    row.iteration = t;
    row.trace_iteration = trace_.IterationOf(segments_.range(t).begin);
    row.ops = seg.iteration(0).num_ops();
    const Stage stage = library_.stage();
    row.stage = stage;
    row.input = ComputeInputSignature(seg, 0);
    if (std::find(seen_.begin(), seen_.end(), row.input) == seen_.end()) {
      seen_.push_back(row.input);
    }

    // The policy this iteration runs, matched and applied.
    PolicyRecord* run = Choose(row.input, &row.policy_of_other_input);
    // The runtime chooses at the first FORWARD op (model_runtime): the
    // policy decides nothing before it, and nothing without one.
    int32_t first_decision_op = 0;
    if (options_.model_runtime) {
      const IterationInfo& it0 = seg.iteration(0);
      first_decision_op = -1;
      for (OpIndex op = it0.op_begin; op < it0.op_end && first_decision_op < 0; ++op) {
        if (seg.op(op).phase == Phase::kForward) first_decision_op = op - it0.op_begin;
      }
      if (first_decision_op < 0) {
        run = nullptr;
        row.policy_of_other_input = false;
      }
    }
    AppliedPolicy applied;
    if (run != nullptr) {
      applied = ApplyPolicy(seg, 0, run->matchable, run->item_roles, *run->matcher, maker_.table(),
                            first_decision_op);
      row.policy = run->id;
      row.policy_planner = run->planned.planner;
      row.items = applied.items;
      row.matched = applied.matched;
      row.mismatched = applied.mismatched;
      row.missed = applied.missed;
      row.resized_larger = applied.resized_larger;
      row.resized_smaller = applied.resized_smaller;
      // The runtime also starts the copy out of a found tensor with no use
      // after its swap-out (it cannot know; the copy is cancelled when the
      // tensor dies); the simulator leaves those out.
      row.policy_swaps = static_cast<int32_t>(applied.policy.items.size()) +
                         (options_.model_runtime ? applied.unused_after_swap_out : 0);
      row.uses_while_off_device = applied.uses_while_off_device;
      row.first_off_device_op = applied.first_off_device_op;
      row.first_off_device_tensor = applied.first_off_device_tensor;
    } else {
      applied.policy.fingerprint = ComputeFingerprint(seg, 0);
    }
    const bool handle_ooms = stage == Stage::kWarmUp || options_.oom_handling_in_all_stages;
    SWAPPLAN_ASSIGN_OR_RETURN(
        SimulationResult r,
        maker_.Simulate(seg, t, applied.policy,
                 handle_ooms ? OomHandling::kAlgorithm3 : OomHandling::kReport));
    if (handle_ooms) {
      row.ooms = r.oom_handling.allocation_failures;
      row.passive_swaps = r.oom_handling.passive_swap_outs;
      row.unresolved_ooms = r.oom_handling.unresolved;
      row.first_oom_op = r.oom_handling.first_unresolved_op;
      row.first_oom_missing_bytes = r.oom_handling.first_unresolved_missing_bytes;
    } else if (r.oom.occurred) {
      row.ooms = row.unresolved_ooms = r.oom.ops_over_capacity;
      row.first_oom_op = r.oom.op;
      row.first_oom_missing_bytes = r.oom.requested_bytes - r.oom.free_bytes;
    }
    if (t == options_.explain_iteration) row.reports = std::move(applied.reports);
    row.time_ns = r.iteration_time_ns;
    row.stall_ns = r.stall_ns;
    row.peak_bytes = r.peak_bytes;
    // What the library weighs of a GenPolicy run of its key's own policy.
    EndedIteration end;
    end.input = row.input;
    end.policy = run != nullptr ? run->id : -1;
    end.policy_of_other_input = row.policy_of_other_input;
    end.missed = run != nullptr && (row.ooms > 0 || row.uses_while_off_device > 0);
    end.run.time_ns = row.time_ns;
    end.run.allocation_failures = row.ooms;
    end.run.trouble = row.unresolved_ooms + row.uses_while_off_device;
    for (OpIndex op = seg.iteration(0).op_begin; op < seg.iteration(0).op_end; ++op) {
      end.run.clock_ns += std::max<int64_t>(seg.op(op).duration_ns, 0);
    }

    // The oracle: this iteration planned on itself.
    if (options_.oracle) {
      PlanningProblem problem;
      problem.trace = &seg;
      problem.iteration = 0;
      problem.device = device_;
      absl::StatusOr<Policy> own = planner_->Plan(problem);
      if (!own.ok() && KindOf(own.status()) != ErrorKind::kInfeasible) {
        return absl::Status(own.status().code(),
                            absl::StrCat("replay: oracle planning runtime iteration ", t, ": ",
                                         own.status().message()));
      }
      Policy none;
      none.fingerprint = applied.policy.fingerprint;
      SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult o,
                                maker_.Simulate(seg, t, own.ok() ? *own : none, OomHandling::kAlgorithm3));
      row.oracle_time_ns = o.iteration_time_ns;
      row.oracle_plan_failed = !own.ok();
      row.oracle_passive_swaps = o.oom_handling.passive_swap_outs;
    }

    // End of the iteration: the library's stage machine, planning for it.
    const IterationInfo& it0 = seg.iteration(0);
    tokens_.resize(it0.num_ops());
    for (OpIndex op = it0.op_begin; op < it0.op_end; ++op) tokens_[op] = seg.op(op).name;
    end.tokens = tokens_;
    auto plan = [&](LibraryKey& key) { return Plan(seg, t, key, row, sum); };
    SWAPPLAN_ASSIGN_OR_RETURN(const StageDecision d, library_.EndIteration(end, plan));
    row.sequence_stable = d.sequence_stable;
    row.length_change = d.length_change;
    row.similarity = d.similarity;
    row.next_stage = d.stage;
    row.change = d.change;
    row.policy_misses = d.policy_misses;
    Accumulate(row, sum);
    on_row(row);
  }
  sum.input_signatures = static_cast<int32_t>(seen_.size());
  sum.known_sequence_returns = library_.known_sequence_returns();
  return sum;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Planner>> CreateReplayPlanner(const ReplayOptions& options) {
  const ChameleonOptions& co = options.chameleon;
  SWAPPLAN_RETURN_IF_ERROR(co.Validate());
  if (options.planner == "chameleon") {
    return std::unique_ptr<Planner>(std::make_unique<ChameleonPlanner>(co));
  }
  if (options.planner == "chain") {
    // The replay applies items to later iterations in their own op order,
    // the runtime (model_runtime) executes them as the shim does.
    PlannerChainOptions chain = options.chain;
    chain.executable =
        options.model_runtime ? ChainExecutor::kRuntime
                              : std::max(chain.executable, ChainExecutor::kMatched);
    SWAPPLAN_RETURN_IF_ERROR(chain.Validate());
    auto planner = std::make_unique<ChainPlanner>(chain);
    SWAPPLAN_RETURN_IF_ERROR(planner->SetMember(std::make_unique<ChameleonPlanner>(co)));
    return std::unique_ptr<Planner>(std::move(planner));
  }
  return CreatePlanner(options.planner);
}

absl::StatusOr<DeviceModel> ReplayDevice(const Trace& trace, const ReplayOptions& options) {
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
  return device;
}

absl::StatusOr<ReplaySummary> RunReplay(const Trace& trace, const ReplayOptions& options,
                                        absl::FunctionRef<void(const ReplayRow&)> on_row) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Planner> planner, CreateReplayPlanner(options));
  // Planning: the whole device model (budget = capacity - reserve).
  // Simulation: the same device with all of its capacity.
  SWAPPLAN_ASSIGN_OR_RETURN(DeviceModel device, ReplayDevice(trace, options));
  SimulatorOptions sim_options = options.simulator;
  sim_options.device = device;
  sim_options.device.reserve_bytes = 0;
  SWAPPLAN_ASSIGN_OR_RETURN(PolicyLibrary library,
                            PolicyLibrary::Create(ReplayLibraryOptions(options)));
  ReplayLoop loop(trace, options, planner.get(), device, sim_options, std::move(library));
  return loop.Run(on_row);
}

}  // namespace swapplan
