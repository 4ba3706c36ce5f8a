// The executed replay (replay_execute.h): a trace through the runtime shim
// on the host backend, with the replay's planner as policy provider.
#include "swapplan/eval/replay_execute.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/planners/chameleon/logical_layers.h"
#include "swapplan/planners/planner.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/runtime/host_backend.h"
#include "swapplan/runtime/runtime.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/varying/segment.h"
#include "swapplan/varying/stage_tracker.h"
#include "eval/replay_plan.h"

namespace swapplan {

namespace rt = ::swapplan::runtime;

absl::Status ExecuteOptions::Validate() const {
  if (!replay.model_runtime) {
    return absl::InvalidArgumentError(
        "execute options: replay.model_runtime is false; the executed run is compared with the "
        "replay of what the runtime does (set model_runtime)");
  }
  if (!std::isfinite(arena_capacity_ratio) || arena_capacity_ratio < 1) {
    return absl::InvalidArgumentError(absl::StrCat("execute options: arena_capacity_ratio is ",
                                                   arena_capacity_ratio, "; must be >= 1"));
  }
  return replay.Validate();
}

namespace {

// A temporary work directory, removed when it goes out of scope (only the
// one this driver created).
class WorkDir {
 public:
  static absl::StatusOr<WorkDir> Make(const std::string& given) {
    WorkDir w;
    if (!given.empty()) {
      w.path_ = given;
      std::error_code ec;
      std::filesystem::create_directories(given, ec);
      if (ec) {
        return absl::InvalidArgumentError(absl::StrCat("execute: cannot create work directory ",
                                                       given, ": ", ec.message()));
      }
      return w;
    }
    static std::atomic<int64_t> counter{0};
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("execute: no temporary directory: ", ec.message()));
    }
    for (int attempt = 0; attempt < 100; ++attempt) {
      const std::filesystem::path p =
          base / absl::StrCat("swapplan-execute-", rt::HostBackend::NowNs(), "-", counter++);
      if (std::filesystem::create_directory(p, ec)) {
        w.path_ = p.string();
        w.owned_ = true;
        return w;
      }
    }
    return absl::FailedPreconditionError(
        absl::StrCat("execute: cannot create a work directory under ", base.string()));
  }
  WorkDir() = default;
  WorkDir(WorkDir&& o) noexcept : path_(std::move(o.path_)), owned_(o.owned_) { o.owned_ = false; }
  WorkDir& operator=(WorkDir&&) = delete;
  ~WorkDir() {
    if (owned_) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
};

// `st` with `where` in front of its message, its kind and rule kept.
absl::Status Annotate(const absl::Status& st, const std::string& where) {
  absl::Status out(st.code(), absl::StrCat(where, ": ", st.message()));
  st.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

bool IsOom(const absl::Status& st) {
  return absl::IsResourceExhausted(st) && RuleOf(st).value_or("") == "out-of-memory";
}

// Per trace op: the tensors whose device lifetime starts / ends there.
struct Lifetimes {
  std::vector<TensorId> before_first;  // resident before the first op
  std::vector<std::vector<TensorId>> alloc_at, free_at;
  std::vector<bool> persistent;
};

Lifetimes ComputeLifetimes(const Trace& trace, const std::vector<OpRange>& ranges) {
  const OpIndex n = trace.num_ops();
  std::vector<int32_t> segment_of(static_cast<size_t>(n), 0);
  for (size_t s = 0; s < ranges.size(); ++s) {
    for (OpIndex op = ranges[s].begin; op < ranges[s].end; ++op) {
      segment_of[op] = static_cast<int32_t>(s);
    }
  }
  Lifetimes l;
  l.alloc_at.resize(n);
  l.free_at.resize(n);
  l.persistent.assign(trace.num_tensors(), false);
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (!lt.occupies_device()) continue;
    const bool from_start = lt.alloc_op < 0;
    const bool kept = lt.free_op >= n;
    // Resident across a runtime iteration boundary: persistent in the
    // replay's extracted iterations, persistent here.
    l.persistent[t] = from_start || kept ||
                      segment_of[lt.alloc_op] != segment_of[std::min<OpIndex>(lt.free_op, n - 1)];
    if (from_start) {
      l.before_first.push_back(t);
    } else {
      l.alloc_at[lt.alloc_op].push_back(t);
    }
    if (!kept) l.free_at[lt.free_op].push_back(t);
  }
  return l;
}

// Row of the replay's report from the runtime's iteration statistics.
ReplayRow ToRow(const rt::IterationStats& s, const Trace& trace, const OpRange& range) {
  ReplayRow r;
  r.iteration = s.iteration;
  r.trace_iteration = trace.IterationOf(range.begin);
  r.ops = s.ops;
  r.stage = s.stage;
  r.policy = s.policy;
  // Every item of the policy that ran is matched (found) or missed.
  r.matched = static_cast<int32_t>(s.counts.items_matched);
  r.missed = static_cast<int32_t>(s.counts.items_missed);
  r.items = r.matched + r.missed;
  r.policy_swaps = static_cast<int32_t>(s.counts.policy_swap_outs);
  r.uses_while_off_device = static_cast<int32_t>(s.counts.uses_while_off_device);
  r.ooms = static_cast<int32_t>(s.counts.allocation_failures);
  r.passive_swaps = static_cast<int32_t>(s.counts.passive_swap_outs);
  r.unresolved_ooms = static_cast<int32_t>(s.counts.ooms);
  r.time_ns = s.wall_ns;
  r.stall_ns = s.counts.stall_ns;
  r.peak_bytes = s.peak_bytes;
  r.sequence_stable = s.sequence_stable;
  r.next_stage = s.next_stage;
  r.change = s.stage_change;
  r.policy_misses = s.policy_misses;
  r.generated_policy = s.generated_policy;
  r.input.hash = s.input_signature_hash;
  r.input.bytes = s.input_signature_bytes;
  r.policy_of_other_input = s.policy_of_other_input;
  r.plan_error = s.plan_error;
  r.policy_planner = s.policy_planner;
  r.generated_by = s.generated_by;
  return r;
}

// The replay's simulator options (RunReplay): its device with all of its
// capacity.
SimulatorOptions SimulationOptionsFor(const ReplayOptions& ro, const DeviceModel& device) {
  SimulatorOptions o = ro.simulator;
  o.device = device;
  o.device.reserve_bytes = 0;
  return o;
}

class Driver {
 public:
  Driver(const Trace& trace, const ExecuteOptions& options, Planner* planner,
         const DeviceModel& device, std::string work_dir)
      : trace_(trace),
        options_(options),
        planner_(planner),
        device_(device),
        work_dir_(std::move(work_dir)),
        ranges_(RuntimeIterations(trace, options.replay.boundary)),
        sim_options_(SimulationOptionsFor(options.replay, device)),
        maker_(options.replay, sim_options_) {}

  absl::StatusOr<ReplaySummary> Run(absl::FunctionRef<void(const ReplayRow&)> on_row);

 private:
  // The provider: plans the record with the replay's planner.
  absl::StatusOr<std::string> Provide(const rt::PolicyRequest& req);
  absl::Status Alloc(rt::Runtime& runtime, TensorId t, const Lifetimes& l);
  // Storage of an over-committed tensor (framework-owned, see Alloc): a new
  // block of `bytes`, replacing the tensor's previous one.
  absl::StatusOr<void*> Restore(uint64_t framework_id, int64_t bytes);
  std::string Where(int32_t t, OpIndex op) const {
    return absl::StrCat("execute: runtime iteration ", t, ", trace op ", op, " (",
                        trace_.op_name_at(op), ")");
  }

  const Trace& trace_;
  const ExecuteOptions& options_;
  Planner* planner_;
  DeviceModel device_;
  std::string work_dir_;
  std::vector<OpRange> ranges_;
  std::vector<rt::TensorHandle> handle_;
  int64_t clock_ns_ = 1;  // the runtime ignores an op start at 0
  int32_t policies_written_ = 0;
  // The replay's simulator (the device with all of its capacity) and policy
  // maker: the provider verifies policies as the replay does.
  SimulatorOptions sim_options_;
  replay_internal::PolicyMaker maker_;
  // Records read by the provider, by path (those of the last request: a
  // key's records come back in the next request for it).
  absl::flat_hash_map<std::string, std::unique_ptr<Trace>> records_;
  // Iterations the policy made at the end of runtime iteration t was
  // verified on (the row's planned_on_iterations), by t.
  absl::flat_hash_map<int32_t, int32_t> planned_on_;
  // Storage of the over-committed tensors, by framework id (TensorId + 1).
  absl::flat_hash_map<uint64_t, std::unique_ptr<char[]>> overcommitted_;
  absl::Status fatal_;
};

absl::StatusOr<std::string> Driver::Provide(const rt::PolicyRequest& req) {
  // The records observed with the request's key (the last one is the
  // iteration just run), read once each.
  absl::flat_hash_map<std::string, std::unique_ptr<Trace>> kept;
  std::vector<const Trace*> observed;
  const std::vector<std::string> one{req.record_path};
  const std::vector<std::string>& paths =
      req.observed_record_paths.empty() ? one : req.observed_record_paths;
  for (const std::string& path : paths) {
    auto f = records_.find(path);
    std::unique_ptr<Trace> record;
    if (f != records_.end()) {
      record = std::move(f->second);
    } else {
      absl::StatusOr<Trace> read = ReadTrace(path);
      if (!read.ok()) {
        fatal_ = read.status();
        return read.status();
      }
      record = std::make_unique<Trace>(*std::move(read));
    }
    observed.push_back(record.get());
    kept[path] = std::move(record);
  }
  for (auto& [path, record] : kept) records_[path] = std::move(record);
  Planner* planner = planner_;
  Policy policy;
  if (options_.replay.plan_on == PlanningInput::kObserved) {
    // As the replay plans: the latest record, verified on all of them.
    std::string infeasible;
    absl::StatusOr<std::unique_ptr<replay_internal::PolicyRecord>> rec =
        maker_.MakeVerified(*planner, observed, device_, req.runtime_iteration, &infeasible);
    if (!rec.ok()) {
      fatal_ = Annotate(rec.status(), "execute");
      return rec.status();
    }
    if (*rec == nullptr) return Error(ErrorKind::kInfeasible, infeasible);
    policy = std::move((*rec)->planned);
    planned_on_[req.runtime_iteration] = static_cast<int32_t>(observed.size());
  } else {
    PlanningProblem problem;
    problem.trace = observed.back();
    problem.iteration = req.iteration;
    problem.device = device_;
    absl::StatusOr<Policy> planned = planner->Plan(problem);
    if (!planned.ok()) {
      // Infeasible: the row's plan_error (as in the replay); anything else
      // ends the run.
      if (KindOf(planned.status()) != ErrorKind::kInfeasible) {
        fatal_ = absl::Status(planned.status().code(),
                              absl::StrCat("execute: planning runtime iteration ",
                                           req.runtime_iteration, ": ",
                                           planned.status().message()));
      }
      return planned.status();
    }
    policy = *std::move(planned);
    planned_on_[req.runtime_iteration] = 1;
  }
  const std::string path =
      absl::StrCat(req.work_dir, "/policy-", policies_written_++, ".pb");
  absl::Status st = WritePolicy(policy, path);
  if (!st.ok()) {
    fatal_ = st;
    return st;
  }
  return path;
}

absl::Status Driver::Alloc(rt::Runtime& runtime, TensorId t, const Lifetimes& l) {
  const TensorInfo& info = trace_.tensor(t);
  rt::TensorDesc desc;
  desc.size_bytes = info.size_bytes;
  desc.dtype = info.dtype;
  desc.shape = trace_.shape(t);
  desc.kind = info.kind;
  desc.persistent = l.persistent[t] ? 1 : 0;
  void* device = nullptr;
  absl::StatusOr<rt::TensorHandle> h = runtime.AllocTensor(desc, &device);
  if (h.ok()) {
    handle_[t] = *h;
    return absl::OkStatus();
  }
  if (!IsOom(h.status())) return h.status();
  // Unresolved (a crash in a real run, counted by the runtime): as the
  // simulator over-commits, the tensor is taken anyway — as framework-owned
  // memory of the driver, over the budget (RuntimeOptions::
  // overcommit_on_oom) — so that the rest of the run sees the same tensors.
  desc.framework_id = static_cast<uint64_t>(t) + 1;
  SWAPPLAN_ASSIGN_OR_RETURN(void* storage, Restore(desc.framework_id, info.size_bytes));
  SWAPPLAN_ASSIGN_OR_RETURN(handle_[t], runtime.RegisterTensor(desc, storage));
  return absl::OkStatus();
}

absl::StatusOr<void*> Driver::Restore(uint64_t framework_id, int64_t bytes) {
  std::unique_ptr<char[]>& block = overcommitted_[framework_id];
  block = std::make_unique_for_overwrite<char[]>(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  return static_cast<void*>(block.get());
}

absl::StatusOr<ReplaySummary> Driver::Run(absl::FunctionRef<void(const ReplayRow&)> on_row) {
  const ReplayOptions& ro = options_.replay;
  rt::HostBackendOptions bo;
  bo.device = device_;
  bo.device.reserve_bytes = 0;
  bo.device.capacity_bytes = static_cast<int64_t>(
      std::ceil(static_cast<double>(device_.capacity_bytes) * options_.arena_capacity_ratio));
  bo.timed_copies = options_.timed_copies;
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<rt::HostBackend> backend, rt::HostBackend::Create(bo));

  rt::RuntimeOptions o;
  o.device_budget_bytes = device_.capacity_bytes;
  o.matcher = ro.matcher;
  o.matcher_options = ro.matcher_options;
  o.runtime_key_bits = ro.runtime_key_bits;
  o.tracker = ro.tracker;
  o.oom_handling = ro.oom_handling_in_all_stages ? rt::OomHandling::kAllStages
                                                 : rt::OomHandling::kWarmUpOnly;
  o.oom_persistent_victims = ro.simulator.oom_persistent_victims;
  // The record has no layer hints (a runtime sees no model structure): its
  // metadata carries the layer count the replay's planners resolve from the
  // trace — what a framework states for its model — so that every planner
  // plans a record with the logical layers it plans the trace with.
  if (!ranges_.empty()) {
    LayerCountSource source;
    const int32_t layers =
        ResolveLayerCount(trace_, trace_.IterationOf(ranges_[0].begin), 0, &source);
    if (source != LayerCountSource::kDefault) o.model_layers = layers;
  }
  o.work_dir = work_dir_;
  o.device = device_;
  o.op_clock_ns = [this] { return clock_ns_; };
  o.overcommit_on_oom = true;
  o.policies_by_input = ro.keying == PolicyKeying::kByInput;
  o.planning = ro.plan_on == PlanningInput::kObserved ? rt::PolicyPlanning::kObserved
                                                      : rt::PolicyPlanning::kIteration;
  o.observed_records = ro.verify_iterations;
  o.remembered_sequences = ro.remembered_sequences;
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<rt::Runtime> runtime,
                            rt::Runtime::Create(o, std::move(backend)));
  runtime->SetPolicyProvider(
      [this](const rt::PolicyRequest& req) { return Provide(req); });
  rt::FrameworkCallbacks callbacks;
  callbacks.hold = [](uint64_t) { return absl::OkStatus(); };
  callbacks.release = [this](uint64_t id, bool free_memory) {
    if (free_memory) overcommitted_.erase(id);
    return absl::OkStatus();
  };
  callbacks.restore = [this](uint64_t id, int64_t bytes) { return Restore(id, bytes); };
  runtime->SetFrameworkCallbacks(std::move(callbacks));
  // Op ids: the trace's name ids (the stage tracker's tokens are the same).
  for (NameId n = 0; n < trace_.num_op_names(); ++n) {
    const int32_t id = runtime->InternOp(trace_.op_name(n));
    if (id != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "execute: ", trace_.source(), ": op name '", trace_.op_name(n), "' appears twice"));
    }
  }

  const Lifetimes life = ComputeLifetimes(trace_, ranges_);
  handle_.assign(trace_.num_tensors(), rt::kNoTensorHandle);
  for (TensorId t : life.before_first) SWAPPLAN_RETURN_IF_ERROR(Alloc(*runtime, t, life));

  ReplaySummary sum;
  sum.runtime_iterations = static_cast<int32_t>(ranges_.size());
  const int32_t count = ro.max_iterations > 0
                            ? std::min<int32_t>(ro.max_iterations, sum.runtime_iterations)
                            : sum.runtime_iterations;
  std::vector<rt::TensorHandle> in, out;
  std::vector<int32_t> tokens, previous_tokens;
  std::vector<InputSignature> signatures;  // distinct, as the replay counts them
  for (int32_t t = 0; t < count; ++t) {
    const OpRange range = ranges_[t];
    SWAPPLAN_RETURN_IF_ERROR(runtime->IterationBegin());
    // Ops during which an allocation failed: the simulator counts one
    // allocation failure per op (all of its allocations at once), the
    // runtime one per failed allocation (IterationStats keeps that count).
    int32_t failing_ops = 0, unresolved_ops = 0;
    rt::SwapCounts before = runtime->Stats().counts;
    for (OpIndex op = range.begin; op < range.end; ++op) {
      const OpInfo& info = trace_.op(op);
      in.clear();
      out.clear();
      for (TensorId u : trace_.inputs(op)) {
        if (handle_[u] != rt::kNoTensorHandle) in.push_back(handle_[u]);
      }
      absl::Status st = runtime->OpBegin(info.name, info.phase, in);
      const bool began = st.ok();
      if (!began && !IsOom(st)) return Annotate(st, Where(t, op));
      for (TensorId u : life.alloc_at[op]) {
        absl::Status a = Alloc(*runtime, u, life);
        if (!a.ok()) return Annotate(a, Where(t, op));
      }
      // The simulator's test: the bytes in use during the op (its
      // allocations made) over the capacity — also with no allocation of
      // its own, after an over-committed one.
      const bool over_budget = runtime->Stats().device_bytes_in_use > device_.capacity_bytes;
      if (began) {
        for (TensorId u : trace_.outputs(op)) {
          if (handle_[u] != rt::kNoTensorHandle) out.push_back(handle_[u]);
        }
        st = runtime->OpEnd(out);
        if (!st.ok() && !IsOom(st)) return Annotate(st, Where(t, op));
      }
      for (TensorId u : life.free_at[op]) {
        if (handle_[u] == rt::kNoTensorHandle) continue;
        absl::Status f = runtime->FreeTensor(handle_[u]);
        if (!f.ok()) return Annotate(f, Where(t, op));
        handle_[u] = rt::kNoTensorHandle;
        overcommitted_.erase(static_cast<uint64_t>(u) + 1);
      }
      clock_ns_ += std::max<int64_t>(info.duration_ns, 0);
      if (!fatal_.ok()) return fatal_;
      // Unresolved: Algorithm 3 failed, or did not run (WarmUp-only
      // handling after warm-up) and the allocation did not fit, or the op
      // ran over the budget.
      const rt::SwapCounts now = runtime->Stats().counts;
      const bool unresolved = now.ooms > before.ooms || over_budget;
      if (now.allocation_failures > before.allocation_failures || unresolved) ++failing_ops;
      if (unresolved) ++unresolved_ops;
      before = now;
    }
    absl::Status end = runtime->IterationEnd();
    if (!fatal_.ok()) return fatal_;
    if (!end.ok()) return Annotate(end, absl::StrCat("execute: end of runtime iteration ", t));
    const rt::IterationStats& stats = runtime->IterationRows().back();
    ReplayRow row = ToRow(stats, trace_, range);
    row.iteration = t;
    row.ooms = failing_ops;
    row.unresolved_ooms = unresolved_ops;
    // The tracker's figures (its verdict is the runtime's, in the stats):
    // against the previous iteration's op sequence, as StageTracker::Observe
    // computes them.
    tokens.clear();
    for (OpIndex op = range.begin; op < range.end; ++op) tokens.push_back(trace_.op(op).name);
    if (t == 0) previous_tokens = tokens;
    const double len = static_cast<double>(tokens.size());
    const double prev_len = static_cast<double>(previous_tokens.size());
    row.length_change = prev_len > 0 ? std::abs(len - prev_len) / prev_len : 1.0;
    row.similarity = ro.tracker.similarity == SequenceSimilarity::kCosineOpIds
                         ? CosineOfOpIds(tokens, previous_tokens)
                         : CosineOfHistograms(tokens, previous_tokens);
    previous_tokens.swap(tokens);
    auto planned = planned_on_.find(t);
    row.planned_on_iterations =
        row.generated_policy >= 0 && planned != planned_on_.end() ? planned->second : 0;
    if (std::find(signatures.begin(), signatures.end(), row.input) == signatures.end()) {
      signatures.push_back(row.input);
    }
    if (row.change == StageChange::kKnownSequence) ++sum.known_sequence_returns;
    if (row.generated_policy < 0 && !row.plan_error.empty()) ++sum.plan_failures;
    if (row.generated_policy >= 0) ++sum.policies_generated;
    AccumulateReplayRow(row, sum);
    on_row(row);
  }
  SWAPPLAN_RETURN_IF_ERROR(runtime->Close());
  sum.input_signatures = static_cast<int32_t>(signatures.size());
  return sum;
}

}  // namespace

absl::StatusOr<ReplaySummary> RunExecutedReplay(const Trace& trace, const ExecuteOptions& options,
                                                absl::FunctionRef<void(const ReplayRow&)> on_row) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Planner> planner,
                            CreateReplayPlanner(options.replay));
  SWAPPLAN_ASSIGN_OR_RETURN(DeviceModel device, ReplayDevice(trace, options.replay));
  SWAPPLAN_ASSIGN_OR_RETURN(WorkDir dir, WorkDir::Make(options.work_dir));
  Driver driver(trace, options, planner.get(), device, dir.path());
  return driver.Run(on_row);
}

}  // namespace swapplan
