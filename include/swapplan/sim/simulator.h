// Evaluation simulator (SPEC §6): the one yardstick every planner and
// baseline is judged by. It replays one iteration of a trace under a policy
// on three FIFO streams — compute, device→host (d2h), host→device (h2d) —
// with a host that dispatches ops, and reports iteration time, stalls and
// where they happen, peak bytes, bytes moved, OOM, and (optionally) the
// per-stream timeline.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, Simulate(trace, policy, options));
//   r.iteration_time_ns; r.stall_ns; r.oom.occurred; r.peak_bytes;
//
//   // Many policies (or schedules) on one iteration: build once, run often.
//   SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(trace, 0, options));
//   SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult a, sim.Run(policy_a));
//   SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult b, sim.Run(policy_b, schedule));
//
// ---------------------------------------------------------------------------
// Model. Ops run in schedule order (the recorded order unless a schedule — a
// permutation of the iteration's local op indices — is passed, or the policy
// carries one: an Advisor policy's schedule is used when Run gets none). Times are
// integer nanoseconds from the moment the host starts dispatching the first op.
//
//   host      |disp 0|disp 1|disp 2| ...   op k dispatched at h_k
//   compute   |.... op 0 ....|  stall |.... op 1 ....|rc|.. op 2 ..|
//   d2h               |== out A (after op 0) ==|
//   h2d                                            |== in A ==|
//
// Host. h_k = max(h_{k-1}, end_{k-D}) + host_dispatch_ns (+ event queries in
//   naive record-stream mode), D = launch_queue_depth: the host may run up to
//   D ops ahead of the device. Defaults (dispatch 0 ns) make the host never
//   the bottleneck.
// Reach. The compute stream reaches op k at reach_k = max(end_{k-1}, h_k).
//   "Op k is dispatched", for a policy's triggers, means this moment: an
//   executor orders a copy after op k-1 with an event on the compute stream,
//   which is also what makes the block the copy writes into free.
// Compute. Op k first runs the recomputations of RECOMPUTE items whose
//   swap_in_op is k (their recompute_ns, summed), then waits for
//     * the h2d copies of SWAP items whose first_use_op is k, and
//     * (custom record-stream) the d2h copies of SWAP items whose release_op
//       is k-1 — the event wait that lets op k reuse the released block
//       (seed 001 §6.2); a release point earlier than the copy's end stalls,
//   then runs for its duration. stall_k = start_k − (reach_k + recompute_k),
//   attributed to op k and to the copy that finished last.
// Copies. A SWAP item's d2h copy is ready at end of swap_out_op; its h2d copy
//   at max(reach of swap_in_op, end of its own d2h copy). A copy starts at
//   max(ready, its stream free) and takes the device model's TransferNs
//   for the item's tier (DeviceModel::TierCopyNs): latency + ceil(bytes /
//   (bandwidth / 1e9)) ns, the host's copy_latency_ns and h2d/d2h
//   bandwidths for tier 0, a tier's own (per rank) otherwise. Every tier has
//   its own streams, so copies to different tiers overlap; each stream is
//   FIFO in program order: for each op k, the h2d copies triggered at k
//   (policy item order), op k, then the d2h copies after k (item order).
//   Half duplex (copy_engines 1): one stream per tier for both directions,
//   in that same order.
//
//   compute  |.. op 3 ..|.. op 4 ..|.. op 5 ..|
//   host d2h            |== A (tier 0) ==|
//   pool d2h            |== B (tier 1) ======|     A and B overlap
//   pool h2d                       |= C (tier 1) =|
//
//   The tiers the items may name are SimulatorOptions::device.tiers, else
//   the policy's; SimulationResult::tiers reports each one's traffic.
// Durations: recorded (or Eq. 1) op durations times the device's
//   compute_time_scale (trace/op_times.h).
// Memory (op-indexed, as in the unswapped curve; swaps recorded in the
//   trace are ignored — the policy replaces them). A tensor occupies the
//   device from its allocation to its free, both inclusive (trace lifetimes;
//   under a schedule: from the earliest to the latest position of its ALLOC
//   op, FREE op and uses; resident-before-the-iteration tensors from the
//   start, never-freed ones to the end). An item takes its tensor off from
//   release_op + 1 (custom) and puts it back from swap_in_op. Allocations of
//   op k — tensors allocated at k plus swap-in / recompute blocks of k — are
//   checked at its dispatch: bytes in use before them + requested >
//   capacity is an OOM. The recompute recipe of op k (policy/resolver.h
//   ResolvedRecompute, trace/recompute.h) runs after those blocks exist and
//   before op k's own tensors: bytes in use before k + k's blocks + the
//   recipe's transient peak > capacity is an OOM too (and counts in the
//   peak). The run does NOT stop at an OOM: it continues with
//   the bytes over capacity (so one pass gives the time and the full
//   extent), and reports the first OOM op (requested, free), how many ops
//   were over capacity and by how much at worst. A real run would crash at
//   the first one: feasible == !oom.occurred.
// Wrapping items (policy.h): the tensor is not counted before swap_in_op
//   (it is on the host when the iteration starts); its h2d copy waits for no
//   copy out of this iteration; its d2h copy after swap_out_op may end after
//   the last op, and the iteration then ends with it. Clean items make no
//   d2h copy: the block is released after release_op without a wait.
// Size-class pool (model_pool, when the policy has a pool): on top of the
//   bytes, every tensor on the device holds one object of its class
//   (MemoryPool::ClassOf) for the same positions. An op whose allocations
//   find no free object of their class is an OOM (an allocation can only
//   wait for a release point, which the model above already charges), as
//   is a pool larger than the capacity (at the first op). pool.cc.
// Naive record-stream (PyTorch recordStream). A SWAP item's block is
//   released only when the host, polling at an op dispatch, sees the copy
//   complete: at the first dispatch k > swap_out_op with h_k >= copy end.
//   Every dispatch queries each pending block (host_event_query_ns each).
//   When op k's allocations would exceed capacity while blocks are pending,
//   the host synchronises on all of them (as the caching allocator does
//   before reporting OOM): h_k waits for the last pending copy, then all are
//   released. Release points in the policy are ignored; the compute stream
//   never waits for d2h copies. If a block is still pending at swap_in_op,
//   the new block and the old one are both counted until the old is seen.
// OOM handling (OomHandling::kAlgorithm3, seed 001 §6.3 / Appendix B,
//   Algorithm 3; src/sim/oom_handler.h). When op k's allocations do not
//   fit, instead of only reporting:
//     (i)   release every block whose copy out is in flight or done but whose
//           release point has not come (custom record-stream; in naive mode
//           the host synchronisation above is this step); op k waits for
//           those copies (an event wait, no host blocking) — retry;
//     (ii)  passive swap-out: the resident tensor whose size is closest to the
//           bytes still missing, allocated and freed within the iteration,
//           not used by op k and not inside a policy item's window, is copied
//           out (d2h, after op k−1) and its block given to op k, which waits
//           for the copy; repeated until the allocation fits ("PassiveSwap()
//           releases enough space") — retry;
//           When none is left, a persistent tensor (parameter, gradient,
//           optimizer state) not used by op k and used again later in the
//           iteration, closest in size, the same way (oom_persistent_victims;
//           its next use brings it back, so each iteration still ends with
//           the resident set it began with);
//     (iii) if no such tensor is left, the failure is unresolved: an OOM as
//           above (the run would crash there).
//   A passively swapped tensor comes back at its next use: its block is
//   part of that op's allocations, the copy in is issued when the op is
//   dispatched and the op waits for it (a stalling passive swap-in, stall
//   cause "passive"). If it has no further use it is simply not freed again.
//   Passive copies count in bytes/copies per direction and busy times, and
//   separately in SimulationResult::oom_handling; they are not timeline
//   spans.
//
//   compute  |.. op k-1 ..|  wait   |.. op k ..|     ...     |wait|.. op u ..|
//   d2h                   |= out T =|                 (T's next use is u)
//   h2d                                                 |= in T =|
//
// Reuse interval (seed 001 §7.5, Fig. 8b): for each SWAP item, k − swap_out_op,
//   k = the first op whose allocations may use the block (custom:
//   release_op + 1; naive: the op at whose dispatch it was released). Blocks
//   still pending at the end of the iteration are counted separately.
//
// Iteration time = end of the last op, or of the last copy if later (only a
// wrapping item's copy out can be: every other h2d copy ends before its
// first_use_op, every other d2h copy before its h2d copy).
// Ideal = the same run with no policy and unlimited memory.
//
// Complexity: Create O(ops + uses + tensors of the trace); Run O(ops + items)
// with the recorded order, O(ops + uses of the iteration + items) with a
// schedule. One pass, no event queue: every stream is FIFO in program order
// and every dependency points to an earlier task in that order, so each
// task's start is max(ready, stream free) computed in order — the exact
// result of the event-driven system. Run is const and thread-safe.
#ifndef SWAPPLAN_SIM_SIMULATOR_H_
#define SWAPPLAN_SIM_SIMULATOR_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/device/device_model.h"
#include "swapplan/policy/policy.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/trace/op_times.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

namespace internal_sim {
struct Prepared;
class OomHandler;
}  // namespace internal_sim

// Unlimited memory (the same value as kUnlimitedCapacityBytes).
inline constexpr int64_t kUnlimitedBytes = kUnlimitedCapacityBytes;

enum class RecordStreamMode : uint8_t {
  kCustom = 0,  // release at the policy's release_op, event wait on compute
  kNaive = 1,   // release when the host observes the copy's completion
};

// What an allocation that does not fit does.
enum class OomHandling : uint8_t {
  kReport = 0,      // an OOM: reported, the run continues over capacity
  kAlgorithm3 = 1,  // seed 001 Algorithm 3: release, passive swaps, else OOM
};

// What the runtime triggers a policy's swaps at.
enum class TriggerClock : uint8_t {
  kOps = 0,           // every op (the runtime's per-op clock; the model above)
  kSavedTensors = 1,  // autograd's saved-tensor events (the PyTorch runtime's
                      // stable_clock="hooks"): the policy is first moved to
                      // the iteration's recorded events
                      // (policy/saved_tensor_clock.h), then run as above
};

struct SimulatorOptions {
  // The device (device/device_model.h): the run may use device.BudgetBytes()
  // = capacity - reserve (capacity 0, the default: unlimited memory); copies
  // take its TransferNs (bandwidths — 0 = the trace metadata's, else the
  // policy's —, copy_latency_ns); copy_engines 1: both directions share one
  // link, copies run one at a time in issue order; recorded op durations are
  // scaled by compute_time_scale.
  DeviceModel device;
  RecordStreamMode record_stream = RecordStreamMode::kCustom;
  // Host time to dispatch one op (framework overhead + launch).
  int64_t host_dispatch_ns = 0;
  // Host time per pending record-stream block queried at each dispatch
  // (naive mode only).
  int64_t host_event_query_ns = 0;
  // Ops the host may dispatch ahead of the device: op k is dispatched no
  // earlier than op k − depth ends. 1 = a host that waits for each op.
  int32_t launch_queue_depth = 1024;
  // Keep per-op and per-copy spans and the per-op bytes in the result.
  bool record_timeline = false;
  // How many of the ops with the longest stalls to list.
  int32_t top_stall_ops = 10;
  // Allocation failures: reported (default) or handled by Algorithm 3.
  OomHandling oom_handling = OomHandling::kReport;
  // Algorithm 3's last resort, once no tensor allocated and freed within the
  // iteration is left: a persistent one (parameters, gradients, optimizer
  // states) not used by the op and used again later in the iteration (it
  // comes back at that use). false: persistent tensors never move passively
  // (the behaviour before; the seed's Algorithm 3 names no such rule).
  bool oom_persistent_victims = true;
  // Honour the policy's size-class memory pool when it has one (see above);
  // false: bytes only.
  bool model_pool = true;
  // kSavedTensors: the policy as the saved-tensor clock runs it
  // (SnapToSavedTensorEvents: SWAP items at the recorded saved-tensor
  // events, those with no event in their window resident), or, when the
  // hook clock cannot run it (SavedClockPolicy::per_op_reason), the policy
  // as is — what the runtime then runs on its per-op clock.
  // SimulationResult::saved_clock says which. The iteration must have
  // recorded saved-tensor events (FailedPrecondition otherwise).
  TriggerClock clock = TriggerClock::kOps;

  // The memory the run may use: device.BudgetBytes(), unlimited for a
  // capacity of 0. Requires valid options.
  int64_t memory_limit_bytes() const;

  // InvalidArgument naming the field when a value is out of range (the
  // device model: DeviceModel::ValidatePartial; negative times, depth < 1,
  // ...).
  absl::Status Validate() const;
};

enum class StallCause : uint8_t {
  kSwapIn = 0,   // waited for the h2d copy of an input
  kRelease = 1,  // waited for a d2h copy before reusing its block (custom)
  kPassive = 2,  // OomHandling::kAlgorithm3: a passive swap-out or swap-in
};
absl::string_view StallCauseName(StallCause c);  // "swap-in", "release", "passive""

struct StallSite {
  int32_t op = -1;  // local op index
  int64_t stall_ns = 0;
  StallCause cause = StallCause::kSwapIn;
  // Trace id of the tensor whose copy finished last.
  uint64_t tensor_id = 0;
};

struct OomReport {
  bool occurred = false;
  // First op whose allocations did not fit (local index), what it asked for
  // and what was free just before (capacity − bytes in use before its
  // allocations; negative only when the tensors resident before the first op
  // alone exceed the capacity).
  int32_t op = -1;
  int64_t requested_bytes = 0;
  int64_t free_bytes = 0;
  // Ops over capacity, and the largest excess (peak − capacity).
  int32_t ops_over_capacity = 0;
  int64_t max_excess_bytes = 0;
  // Size-class pool: the class that had no free object at the first OOM
  // (-1: the first OOM was about bytes; requested/free_bytes then count
  // objects of that class), and the ops where some class ran out.
  int32_t pool_class = -1;
  int32_t pool_ops_over_capacity = 0;
};

// OomHandling::kAlgorithm3 only (all zero otherwise).
struct OomHandlingStats {
  // Allocations that did not fit at first (Algorithm 3 invoked).
  int32_t allocation_failures = 0;
  // Blocks released by step (i) before their release point.
  int32_t early_releases = 0;
  // Passive swaps and the bytes they moved; of the swap-outs, those of
  // persistent tensors (SimulatorOptions::oom_persistent_victims).
  int32_t passive_swap_outs = 0;
  int32_t persistent_passive_swap_outs = 0;
  int32_t passive_swap_ins = 0;
  int64_t passive_bytes_d2h = 0;
  int64_t passive_bytes_h2d = 0;
  // Compute stall waiting for passive copies (included in stall_ns).
  int64_t passive_stall_ns = 0;
  // Failures left after step (iii) (each an OOM a real run dies of); the
  // first one: local op, bytes still missing, and whether passive swaps were
  // impossible for lack of a bandwidth.
  int32_t unresolved = 0;
  int32_t first_unresolved_op = -1;
  int64_t first_unresolved_missing_bytes = 0;
  bool no_bandwidth = false;
};

// One memory tier's part of a run (index 0: the host; i: device.tiers[i-1]).
struct TierTraffic {
  std::string name;
  // This rank's capacity of the tier (DeviceModel::TierCapacityBytes) and
  // the most the policy's items hold in it at once (policy/resolver.h
  // TierUsage).
  int64_t capacity_bytes = kUnlimitedCapacityBytes;
  int64_t peak_bytes = 0;
  // Copies to the tier (Store) and from it (Prefetch), their bytes and the
  // time the tier's streams were busy with them. Passive swaps (Algorithm
  // 3) go to the host.
  int64_t bytes_stored = 0;
  int64_t bytes_loaded = 0;
  int32_t stores = 0;
  int32_t loads = 0;
  int64_t store_busy_ns = 0;
  int64_t load_busy_ns = 0;
};

struct ReuseStats {
  // SWAP items whose block was released within the iteration.
  int32_t blocks = 0;
  double mean_ops = 0;
  int32_t max_ops = 0;
  // Blocks still waiting for the host at the end of the iteration (naive).
  int32_t unreleased_blocks = 0;
};

enum class SpanKind : uint8_t {
  kOp = 0,         // compute: an op (index = local op)
  kRecompute = 1,  // compute: recomputation before an op (index = local op)
  kStall = 2,      // compute: idle waiting for copies (index = local op)
  kD2H = 3,        // d2h (or the shared link): a copy out (index = policy item)
  kH2D = 4,        // h2d (or the shared link): a copy in (index = policy item)
  kDispatch = 5,   // host: dispatching an op (index = local op)
};

struct TimelineSpan {
  SpanKind kind = SpanKind::kOp;
  int32_t index = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// SimulatorOptions::clock == kSavedTensors: what the snapping did.
struct SavedClockReport {
  bool modelled = false;  // the option was on
  // The hook clock runs the policy (else the per-op clock, and why).
  bool hook_clock = false;
  int32_t snapped_items = 0;
  int32_t resident_items = 0;
  int32_t before_forward_items = 0;
  std::string per_op_reason;
};

struct SimulationResult {
  int32_t iteration = 0;
  int32_t num_ops = 0;
  DurationSource durations = DurationSource::kRecorded;
  RecordStreamMode record_stream = RecordStreamMode::kCustom;
  // The device model the run used, bandwidths resolved (options, else the
  // trace metadata, else the policy; 0 = unknown: no copies were needed),
  // and the memory the run could use (SimulatorOptions::memory_limit_bytes).
  DeviceModel device;
  int64_t memory_limit_bytes = kUnlimitedBytes;

  // End of the last op.
  int64_t iteration_time_ns = 0;
  // The same iteration with no policy and unlimited memory.
  int64_t ideal_time_ns = 0;
  // (iteration − ideal) / ideal; 0 when ideal is 0.
  double overhead_vs_ideal = 0;
  // Sum of op durations, and of recomputation charged on the compute stream.
  int64_t compute_ns = 0;
  int64_t recompute_ns = 0;
  // Compute stream idle waiting for copies, in total and by cause.
  int64_t stall_ns = 0;
  int64_t stall_swap_in_ns = 0;
  int64_t stall_release_ns = 0;
  int64_t stall_passive_ns = 0;
  // Stall by phase of the waiting op (index: static_cast<int>(Phase)).
  int64_t stall_by_phase_ns[kNumPhases] = {0, 0, 0, 0};
  // Compute stream idle waiting for the host to dispatch.
  int64_t host_wait_ns = 0;
  // Ops with the longest stalls, longest first (ties: earlier op first).
  std::vector<StallSite> top_stalls;
  int32_t ops_with_stall = 0;

  int64_t peak_bytes = 0;
  int32_t peak_op = -1;  // local index of the first op at the peak
  OomReport oom;
  OomHandlingStats oom_handling;
  // Bytes of the size-class pool modelled; 0 when none.
  int64_t pool_bytes = 0;

  // Bytes and copies moved off the device (d2h: to any tier) and back
  // (h2d: from any tier), summed over the tiers.
  int64_t bytes_d2h = 0;
  int64_t bytes_h2d = 0;
  int32_t copies_d2h = 0;
  int32_t copies_h2d = 0;
  // Time the copy streams of each direction were busy, summed over the
  // tiers (a half-duplex link counts in both).
  int64_t d2h_busy_ns = 0;
  int64_t h2d_busy_ns = 0;
  // Per tier of the device the run used: the host, then its tiers.
  std::vector<TierTraffic> tiers;
  int32_t recomputed_items = 0;

  ReuseStats reuse;
  // Naive record-stream: event queries made and host synchronisations on
  // memory pressure.
  int64_t host_event_queries = 0;
  int32_t host_syncs = 0;

  // Tasks simulated on the three streams: ops, copies, recomputations.
  int64_t events = 0;

  // SimulatorOptions::clock == kSavedTensors. The per-item figures of this
  // result (top_stalls' items, timeline copy indices) then refer to the
  // snapped policy's items.
  SavedClockReport saved_clock;

  // With record_timeline: spans in the order they were scheduled, and the
  // bytes in use during each op (local index).
  std::vector<TimelineSpan> timeline;
  std::vector<int64_t> bytes_in_use;
};

class Simulator {
 public:
  // Prepares iteration `iteration` of `trace` (which must outlive the
  // simulator): durations (ComputeOpDurations), lifetimes clamped to the
  // iteration, per-op allocation and free bytes. InvalidArgument for bad
  // options or iteration; FailedPrecondition when durations are unavailable.
  static absl::StatusOr<Simulator> Create(const Trace& trace, int32_t iteration,
                                          const SimulatorOptions& options = {});

  // Simulates `policy` (its op indices local to this iteration). `schedule`:
  // empty for the recorded order, else a permutation of 0..num_ops-1 giving
  // the order ops run in (dependencies are the caller's business); when
  // empty and the policy has a schedule, the policy's.
  // FailedPrecondition when the policy's fingerprint does not match this
  // iteration; InvalidArgument, naming the item, tensor and op and ending in
  // the rule tag (also attached: RuleOf), for the first issue the policy
  // resolver finds (policy/resolver.h — the checker's structural rules:
  // unknown tensor, op order under the schedule, action, size, residency,
  // use while off device, duplicates and overlaps, clean items); or when a
  // copy is needed and no bandwidth is known.
  absl::StatusOr<SimulationResult> Run(const Policy& policy,
                                       absl::Span<const int32_t> schedule = {}) const;

  // As Run, with the policy's resolution reusing `shared.recompute_analysis`
  // and `shared.recipe_memo` (policy/resolver.h; its other fields are
  // ignored): a planner that resolves many policies of one iteration (the
  // hybrid) simulates each without rebuilding the analysis or re-walking the
  // recipes it has seen. Same result as Run (the memo's answers are a fresh
  // walk's), when the analysis was built for this trace and iteration with
  // this simulator's compute_time_scale and the memo is used only with such
  // an analysis. InvalidArgument when the analysis has another op count.
  //   RecipeMemo memo;  // RecomputeAnalysis a = RecomputeAnalysis::Build(trace, 0, device)
  //   sim.RunShared(policy, {.recompute_analysis = &a, .recipe_memo = &memo});
  absl::StatusOr<SimulationResult> RunShared(const Policy& policy, const ResolveOptions& shared,
                                             absl::Span<const int32_t> schedule = {}) const;

  // As RunShared in the recorded order, with the caller's resolution of
  // `policy` instead of a new one: `resolved` must be
  // PolicyResolver::Resolve(policy, device, {.all_issues = true, ...}) of
  // this iteration (a planner that has just resolved the policy it
  // simulates: the hybrid's exactness step). Used only when `device` is the
  // device Run would resolve on (the options' with the bandwidths and tiers
  // it picks) and the policy has no schedule; otherwise the policy is
  // resolved as RunShared does. Then the same result as Run.
  absl::StatusOr<SimulationResult> RunResolved(const Policy& policy, ResolvedPolicy resolved,
                                               const DeviceModel& device,
                                               const ResolveOptions& shared) const;

  const Trace& trace() const { return *trace_; }
  int32_t iteration() const { return iteration_; }
  int32_t num_ops() const { return n_; }
  const OpDurations& durations() const { return durations_; }
  const SimulatorOptions& options() const { return options_; }
  // Ideal iteration time in the recorded order.
  int64_t ideal_time_ns() const { return ideal_time_ns_; }

 private:
  Simulator() = default;
  friend class internal_sim::OomHandler;
  // Resolves and validates the policy against this iteration (see Run):
  // the resolver's first issue is the error.
  // `shared`: the analysis and memo for the resolution (RunShared), or
  // default. `given`: the policy's resolution on DeviceFor(policy) in the
  // recorded order (RunResolved), moved from; null: resolved here.
  absl::StatusOr<internal_sim::Prepared> Prepare(const Policy& policy,
                                                 absl::Span<const int32_t> schedule,
                                                 const ResolveOptions& shared = {},
                                                 ResolvedPolicy* given = nullptr) const;
  // The device Run resolves and copies on: the options' with the
  // bandwidths from the options, else the trace metadata, else the policy,
  // and the options' tiers, else the policy's.
  DeviceModel DeviceFor(const Policy& policy) const;
  // Fills pr->pool from the policy's pool (pool.cc). InvalidArgument when a
  // tensor of the iteration has no class.
  absl::Status PreparePool(const Policy& policy, internal_sim::Prepared* pr) const;

  const Trace* trace_ = nullptr;
  int32_t iteration_ = 0;
  int32_t n_ = 0;
  SimulatorOptions options_;
  OpDurations durations_;
  // The iteration's tensors, lifetimes and the legality rules
  // (policy/resolver.h), shared with the checker.
  std::optional<PolicyResolver> resolver_;
  int64_t ideal_time_ns_ = 0;
};

// Simulates `policy` on the iteration its fingerprint names, in the recorded
// order (or the policy's schedule). FailedPrecondition when the
// fingerprint does not match the trace; malformed input (rule
// schedule-breaks-dependency) when the policy's schedule runs an op before
// one it depends on (DataflowGraph::ValidateSchedule); otherwise as
// Simulator::Create and Simulator::Run (an overflow of the simulated clock
// is an input error naming the op or item, rule overflow).
absl::StatusOr<SimulationResult> Simulate(const Trace& trace, const Policy& policy,
                                          const SimulatorOptions& options = {});

}  // namespace swapplan

#endif  // SWAPPLAN_SIM_SIMULATOR_H_
