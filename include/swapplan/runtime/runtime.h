// Runtime: the swap shim a training framework calls on every op (SPEC §9,
// seed 004, seeds 000/001 §6). It keeps a table of the framework's live
// tensors with their runtime keys, applies a swap policy op by op through a
// Backend (backend.h), falls back on Algorithm 3 when an allocation fails,
// tracks the stage of training (WarmUp -> GenPolicy -> Stable) and writes
// what it did as a swapplan trace. The public C API (swapplan_runtime.h) is
// a thin layer over this class.
//
// Per op (the framework hook):
//
//   OpBegin(op, phase, inputs)      before the kernel runs
//     streaming fingerprint and the policy's op sequence, op by op
//     Pump the transfer queue
//     prefetches due at this op (the items' swap-in anchors)
//     every input resident (one whose copy out is under way: the op waits
//       for that copy, it may write the block): a prefetched one -> compute
//       waits for its copy
//       (rule 3; a stall if it is late); one off the device -> passive
//       swap-in at the head of the queue (a policy's tensor touched before
//       its swap-in is also counted as a use while off device: the policy
//       failed there; Algorithm 3's victims come back this way by design)
//   ... the framework runs the op; its new outputs are allocated ...
//   AllocTensor / RegisterTensor    the ledger, Algorithm 3 on failure
//   OpEnd(outputs)                  after it
//     a written tensor whose copy out is under way keeps its block
//     runtime keys of the op's tensors; matched policy items -> copy out
//       queued after this op
//     releases due at this op: compute waits for the copy-out event, then
//       the block is freed in stream order (rule 2)
//   FreeTensor                      when the framework frees a tensor
//
// A policy item's life, in the ops of the iteration (policy.h):
//
//   compute  [decision] .... [release] ........... [swap_in] .... [first use]
//   d2h          |== copy out ==|
//   h2d                                                |== copy in ==|
//   device   resident -------->| off device ......... |<- block allocated, resident
//
// Recomputation. A RECOMPUTE item moves no bytes: when its tensor is
// matched the runtime asks the framework whether it can re-run the
// producing op (FrameworkCallbacks::can_recompute); if not, the item runs
// as a SWAP from that point (the bytes are still there: never a wrong
// value). Otherwise, at the release anchor, the block is dropped (owned:
// freed in compute-stream order; framework: release with free_memory), and
// at the swap-in anchor the runtime allocates the block (Algorithm 3 on
// failure, as for a swap-in), restores a framework storage and asks the
// framework to recompute into it (FrameworkCallbacks::recompute); before
// that it waits for every copy in still on the link (the framework's recipe
// may read that storage, restored but not yet filled). A use while dropped
// rematerialises on demand. A tensor written between its
// decision and its release keeps its block (the recipe no longer holds).
//
//   compute  [decision] .... [release] ........... [swap_in] .... [first use]
//   device   resident -------->| dropped ............ |<- block, recompute op
//
// Anchors. The fuzzy matcher (default) finds an item's tensor by its runtime
// key within `matcher_options.window_ops` ops of the planned position in its
// phase, and its release and swap-in points by (phase, position in the
// phase); the naive matcher uses op ordinals (Capuchin). A release anchor
// already passed when the tensor is found is taken after the next op.
//
// Memory. Every tensor is either runtime-owned (AllocTensor: a block of the
// backend's device memory, as a framework allocator plug-in would get) or
// framework-owned (RegisterTensor: the framework allocated it, e.g.
// PyTorch's allocator; the runtime moves its bytes and asks the framework,
// through FrameworkCallbacks, to free and re-allocate the storage). Both
// count against the device budget in exact bytes (the planners' model):
// "bytes in use during op i" = bytes resident when op i begins + bytes
// allocated for it (its outputs, the prefetches it triggers); the peak is
// the largest of these. A framework block the runtime copies from or into is
// held (FrameworkCallbacks::hold) until the runtime has waited for the copy,
// so the framework cannot free it under the copy (torchtune#1867).
//
// Algorithm 3 (seed 001 §6.3, Appendix B) runs on every failed allocation
// (all stages by default): (i) release every block whose copy out is under
// way (compute waits for those copies — an event wait, no host sync), retry;
// (ii) passively swap out the resident tensor closest in size to the bytes
// missing (not used by the current op, not persistent), release it after
// its copy, retry, repeat; when none is left, the same with persistent
// tensors (oom_persistent_victims; back at their next use, or at
// IterationEnd); (iii) else ResourceExhausted tagged
// "out-of-memory" naming the op, the request and what was tried.
//
// Stages (the policy library, varying/policy_library.h: the stage machine
// the replay runs too): at IterationEnd the op sequence goes to its tracker. Policies are kept per key: the iteration's
// input signature (varying/policy_set.h — dtypes and shapes of the first
// FORWARD op's inputs then outputs, taken at that op's OpEnd, where the
// stage machine's policy for the iteration is chosen and starts matching;
// ops before it run none) with RuntimeOptions::policies_by_input, else one
// key. A key has a GenPolicy policy (its latest) and a Stable one; an
// iteration runs its key's, else the nearest key's by input bytes (larger
// first; IterationStats::policy_of_other_input). WarmUp: no policy.
// Entering and during GenPolicy: the PolicyProvider gets the iteration's
// record with the key's earlier ones (PolicyRequest::observed_record_paths)
// and returns a policy, the key's latest, which runs in the next iteration
// with that key. Entering Stable (RuntimeOptions::planning): kObserved —
// that iteration is planned too and each key's latest runs from then on;
// kIteration — each key's best candidate (StableChoice::kBestCandidate:
// no unresolved OOM or use while off device, then the shortest simulated
// iteration time when every candidate has one, else the shortest measured
// mean, then the earliest). A Stable iteration that ran another input's
// policy has its own planned at its end, the Stable policy of its key. A
// Stable iteration whose policy missed (an allocation Algorithm 3 had to
// handle, or a use while off device) counts; tracker.max_policy_misses of
// them send it back to GenPolicy, which plans on the records again. Back to
// WarmUp: the keys of a sequence that reached Stable are remembered
// (RuntimeOptions::remembered_sequences) and the others dropped; an
// iteration stable against a remembered sequence (SameOpSequence) takes
// its keys back and goes straight to Stable (StageChange::kKnownSequence).
// A policy loaded with LoadPolicy overrides the stage machine and runs
// every iteration from the next IterationBegin (replacing a policy between
// iterations).
//
// The runtime links the core layer only: it cannot plan. A provider plans
// elsewhere (the Python package's default runs `swapplan plan` on the
// record; a service could do it remotely).
//
// Errors: statuses with typed kinds (util/error.h) and rule tags:
// "out-of-memory" (Algorithm 3 could not make room), "copy-failed" (a copy
// failed: the step fails, the tensor keeps its device block or its host
// copy — nothing is lost), "call-order" (entry points misused).
//
// Threading: not thread-safe; one framework thread calls it at a time (the C
// API serialises callers on a mutex). Callbacks run on the calling thread,
// inside the entry point that needs them; they must not call the runtime.
// Backend workers never call back.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::Create(options, backend));
//   int32_t mm = rt->InternOp("aten::mm");
//   rt->IterationBegin();
//   SWAPPLAN_RETURN_IF_ERROR(rt->OpBegin(mm, Phase::kForward, {a, b}));
//   SWAPPLAN_ASSIGN_OR_RETURN(TensorHandle c, rt->AllocTensor({.size_bytes = 100}, &ptr));
//   SWAPPLAN_RETURN_IF_ERROR(rt->OpEnd({c}));
//   ...
//   SWAPPLAN_RETURN_IF_ERROR(rt->IterationEnd());
//
// Complexity per op: O(uses of the op) — per use an array lookup, a state
// test, one runtime-key update and one hash probe of the matcher — plus the
// swaps it starts; no allocation in steady state (bench/runtime_bench.cc).
// Algorithm 3: O(live tensors log live tensors) per failed allocation.
#ifndef SWAPPLAN_RUNTIME_RUNTIME_H_
#define SWAPPLAN_RUNTIME_RUNTIME_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/policy/policy.h"
#include "swapplan/runtime/backend.h"
#include "swapplan/runtime/pinned_pool.h"
#include "swapplan/runtime/transfer_queue.h"
#include "swapplan/trace/trace.h"
#include "swapplan/varying/matcher.h"
#include "swapplan/varying/stage_tracker.h"

namespace swapplan::runtime {

// A live tensor: slot + 1 in the low 32 bits, the slot's generation in the
// high ones (a stale handle is an error, not another tensor). 0 = none.
using TensorHandle = uint64_t;
inline constexpr TensorHandle kNoTensorHandle = 0;

enum class OomHandling : uint8_t {
  kAllStages = 0,   // Algorithm 3 on every failed allocation
  kWarmUpOnly = 1,  // the papers': after warm-up a failed allocation is an OOM
  kOff = 2,         // every failed allocation is an OOM
};

// How GenPolicy plans and which policy Stable runs (runtime.h, "Stages").
enum class PolicyPlanning : uint8_t {
  // The provider gets the last `observed_records` records of iterations
  // with the policy's key (it can verify the policy on all of them, as
  // `swapplan replay --plan-on observed` does); the iteration that moves
  // GenPolicy to Stable is planned too, and the key's latest policy runs in
  // Stable; a failed plan leaves the key's previous policy.
  kObserved = 0,
  // The papers': the provider gets the iteration just run; Stable runs the
  // key's best policy made in GenPolicy (no OOM or use while off device, then
  // the shortest time); after a failed plan the key has no GenPolicy policy.
  kIteration = 1,
};

struct RuntimeOptions {
  // Device memory the runtime may use; 0 = the backend's total memory.
  int64_t device_budget_bytes = 0;
  MatcherKind matcher = MatcherKind::kFuzzy;
  // Ops of slack for the fuzzy matcher's positions (varying/matcher.h).
  MatcherOptions matcher_options{4};
  // Runtime-key mask width for policies prepared from a trace: 32 or 64.
  int32_t runtime_key_bits = 32;
  StageTrackerOptions tracker;
  OomHandling oom_handling = OomHandling::kAllStages;
  // Algorithm 3's last resort, once no other tensor is left: a persistent
  // one (parameter, gradient, optimizer state; not one the framework
  // refused to free) not used by the op. It comes back at its next use or,
  // if none comes, at IterationEnd: every iteration ends with the resident
  // set it began with (the simulator's rule, sim/simulator.h "OOM
  // handling"). false: persistent tensors never move passively.
  bool oom_persistent_victims = true;
  // Policies keyed by input signature (varying/policy_set.h, computed at the
  // iteration's first FORWARD op): one policy set per signature, and an
  // input never planned for runs the nearest one by bytes, larger first
  // (counted: IterationStats::policy_of_other_input). false: one key for
  // every input (the papers').
  bool policies_by_input = true;
  PolicyPlanning planning = PolicyPlanning::kObserved;
  // kObserved: how many of a key's records (the last ones) a provider gets;
  // >= 1 (the replay's verify_iterations).
  int32_t observed_records = 8;
  // Policy sets of op sequences the run left (the tracker went back to
  // WarmUp after reaching Stable) kept, most recent first; an iteration
  // stable against one of them (SameOpSequence) goes straight back to
  // Stable with its policies. 0: forget on WarmUp.
  int32_t remembered_sequences = 4;
  // A framework-owned allocation Algorithm 3 could not fit is still taken
  // (counted as an OOM, the budget overrun shows in the peak) instead of
  // failing: for frameworks whose memory is really there (CPU), to report
  // OOMs of a run that goes on. Runtime-owned allocations always fail.
  bool overcommit_on_oom = false;
  // Stop applying the policy for the rest of an iteration at the first op
  // that differs from the policy's op sequence (needs a policy with a
  // runtime section).
  bool strict_fingerprint = false;
  TransferQueueOptions queue;
  PinnedPoolOptions pinned;
  // Directory for the records handed to the policy provider (required when
  // a provider is set).
  std::string work_dir;
  // Keep every iteration for WriteRecord (otherwise only the iteration in
  // progress and the last one are kept).
  bool keep_record = false;
  // Device model written into the record's metadata (name, bandwidths):
  // what a planner plans the record with.
  DeviceModel device;
  // The model's layer count, written into the record's metadata
  // (TraceMetadata::model_layers): a record has no layer hints, and the
  // planners' logical layers (Chameleon, the hybrid's swap part) resolve
  // from it. 0: unknown, not written (the planners' default applies).
  int32_t model_layers = 0;
  // The op clock, in ns: per-op durations and iteration wall times in the
  // rows and the record are differences of its readings (at each OpBegin,
  // IterationBegin and IterationEnd). Unset: the steady clock. A driver that
  // replays a trace (eval/replay_execute.h) passes a virtual clock advanced
  // by each op's recorded duration, so the record carries the trace's op
  // times. Stall times are always measured on the steady clock.
  std::function<int64_t()> op_clock_ns;

  // InvalidArgument naming the field.
  absl::Status Validate() const;
};

struct TensorDesc {
  int64_t size_bytes = 0;
  DType dtype = DType::kUnknown;
  absl::Span<const int64_t> shape;
  TensorKind kind = TensorKind::kActivation;
  // Resident across iterations and never a passive-swap candidate
  // (parameters, optimizer states); the kind's default when unset.
  int8_t persistent = -1;
  // Handed back to the framework callbacks (framework-owned tensors).
  uint64_t framework_id = 0;
};

// What FrameworkCallbacks::copy is asked (swapplan_runtime.h SWAPPLAN_RT_COPY_*).
enum class FrameworkCopy : uint8_t {
  kOut = 0,      // start the copy to host memory (after the op that wrote it)
  kIn = 1,       // start the copy back into the restored storage
  kWait = 2,     // the current stream waits for the tensor's last copy
  kDiscard = 3,  // the copy out will not be released: wait for it, free the host copy
};

// How the runtime reaches a framework's storage (RegisterTensor).
struct FrameworkCallbacks {
  // Keep the storage alive (a copy is about to read or write it).
  std::function<absl::Status(uint64_t framework_id)> hold;
  // Drop the hold; with free_memory, free the storage's memory first (its
  // bytes are on the host now). An error tagged "release-refused": the
  // framework cannot free it — the tensor stays on the device, persistent.
  std::function<absl::Status(uint64_t framework_id, bool free_memory)> release;
  // Allocate the storage again (same size) and hold it; its new address. An
  // error with rule "framework-oom" (RuleOf): the framework's allocator had
  // no block though the budget has room; the runtime swaps out `bytes`
  // beyond its ledger (Algorithm 3) and asks once more, then fails the swap-in
  // with rule "out-of-memory".
  std::function<absl::StatusOr<void*>(uint64_t framework_id, int64_t bytes)> restore;
  // Recomputation (policy RECOMPUTE items; "Recomputation" above). Whether
  // the framework can re-run the op that produced the tensor now, from
  // inputs it still holds: asked when the item's tensor is matched, before
  // anything is dropped. Unset, or false: the item runs as a SWAP (counted
  // in recompute_fallbacks_to_swap).
  std::function<bool(uint64_t framework_id)> can_recompute;
  // Re-run the producing op and write its result into the tensor's storage
  // at `device` (allocated already: by restore for a framework tensor, by
  // the runtime otherwise), in compute-stream order. An error: the tensor
  // stays off the device (its next use asks again), the entry point fails
  // with rule "recompute-failed".
  std::function<absl::Status(uint64_t framework_id, void* device)> recompute;
  // With `recompute` set: it re-runs a random op with the generator state
  // of its first run (bit-identical). The execution record then carries
  // the trace attribute rng_state_restorable = "true" (trace/recompute.h),
  // so planners may recompute random ops' outputs.
  bool rng_state_restorable = false;
  // Optional: the bytes `recompute` holds at once besides the tensor's own
  // block, given the residency now (swapplan_runtime.h,
  // recompute_workspace_bytes). Room is made for them and they are counted
  // while it runs. Unset: 0.
  std::function<absl::StatusOr<int64_t>(uint64_t framework_id)> recompute_workspace_bytes;
  // Framework copies (swapplan_runtime.h swapplan_rt_framework.copy, the
  // order of the calls there). Set: the bytes of framework-owned tensors
  // are moved by the framework on its own streams — the runtime still
  // decides every swap and keeps the ledger, but allocates no pinned host
  // memory, queues no transfer and waits on no event for them (each wait
  // is the framework's kWait, a stream order). Unset: the backend copies.
  std::function<absl::Status(uint64_t framework_id, FrameworkCopy action, int64_t bytes)> copy;
};

// What a policy provider is asked to plan.
struct PolicyRequest {
  // A trace written by the runtime; plan its iteration `iteration`.
  std::string record_path;
  int32_t iteration = 0;
  // The runtime iteration it records.
  int32_t runtime_iteration = 0;
  int64_t device_budget_bytes = 0;
  // Where the provider may write the policy.
  std::string work_dir;
  // The input signature of the iteration (its key; 0 / 0 with
  // policies_by_input false) and the records of the iterations observed
  // with that key, oldest first, the last one record_path
  // (RuntimeOptions::observed_records of them with kObserved, one with
  // kIteration). Each is a one-iteration trace.
  uint64_t input_signature_hash = 0;
  int64_t input_signature_bytes = 0;
  std::vector<std::string> observed_record_paths;
};
// Returns the path of a policy file for the request ("" = none this time)
// or an error (recorded in the iteration's row, training goes on).
using PolicyProvider = std::function<absl::StatusOr<std::string>(const PolicyRequest&)>;

// Counts shared by the whole run and each iteration.
struct SwapCounts {
  int64_t policy_swap_outs = 0;   // copies out started for policy items
  int64_t policy_swap_ins = 0;    // prefetches started at swap-in anchors
  int64_t manual_swap_outs = 0;   // seed 004 pageout_manual
  int64_t manual_swap_ins = 0;    // seed 004 prefetch_all
  int64_t passive_swap_outs = 0;  // Algorithm 3
  // Of those, persistent tensors (RuntimeOptions::oom_persistent_victims).
  int64_t persistent_passive_swap_outs = 0;
  int64_t passive_swap_ins = 0;   // a tensor touched while off device
  int64_t bytes_d2h = 0;
  int64_t bytes_h2d = 0;
  // Compute waits that blocked the caller (inline compute stream) and for
  // how long.
  int64_t stalls = 0;
  int64_t stall_ns = 0;
  // A policy item's tensor touched after its release, before its swap-in.
  int64_t uses_while_off_device = 0;
  int64_t allocation_failures = 0;  // Algorithm 3 invocations
  int64_t early_releases = 0;       // Algorithm 3 step (i)
  int64_t ooms = 0;                 // failures Algorithm 3 could not resolve
  int64_t cancelled_swap_outs = 0;  // tensor written or freed before its release
  int64_t copy_errors = 0;
  int64_t items_matched = 0;
  int64_t items_missed = 0;
  // RECOMPUTE items: blocks dropped at their release (no copy), tensors
  // rematerialised at their swap-in anchor (a use while dropped is a
  // passive_swap_in and a use_while_off_device), and items run as SWAP
  // because the framework could not recompute the tensor.
  int64_t policy_drops = 0;
  int64_t policy_recomputes = 0;
  int64_t recompute_fallbacks_to_swap = 0;
};

struct IterationStats {
  int32_t iteration = 0;
  Stage stage = Stage::kWarmUp;
  // Policy that ran (index into the policies loaded so far), -1: none.
  int32_t policy = -1;
  int32_t ops = 0;
  int64_t wall_ns = 0;
  int64_t peak_bytes = 0;
  // The iteration's op sequence hashed as the policy's fingerprint is: equal
  // to the policy's; the first op that differed from its op sequence (-1:
  // none, or no runtime section).
  bool fingerprint_matched = false;
  int32_t first_divergent_op = -1;
  // Tracker verdict at its end and the stage it set for the next one.
  bool sequence_stable = false;
  Stage next_stage = Stage::kWarmUp;
  // Why next_stage differs (StageChangeName: "policy misses" when repeated
  // misses in Stable sent it back to GenPolicy) and the misses counted in
  // Stable so far.
  StageChange stage_change = StageChange::kNone;
  int32_t policy_misses = 0;
  // Its input signature (first FORWARD op; its first op when it has none)
  // and whether the policy that ran was made for another one (the nearest
  // by bytes).
  uint64_t input_signature_hash = 0;
  int64_t input_signature_bytes = 0;
  bool policy_of_other_input = false;
  // A policy generated at its end (-1: none) or why not.
  int32_t generated_policy = -1;
  std::string plan_error;
  // The planner recorded in the policy that ran (Policy::planner: e.g. the
  // planner chain's member that served this input) and in the one generated
  // at its end; "" for none.
  std::string policy_planner;
  std::string generated_by;
  SwapCounts counts;
};

struct RuntimeStats {
  SwapCounts counts;
  int32_t iterations = 0;
  Stage stage = Stage::kWarmUp;
  int64_t device_budget_bytes = 0;
  int64_t device_bytes_in_use = 0;
  int64_t peak_device_bytes = 0;
  int32_t live_tensors = 0;
  int32_t policies_loaded = 0;
  int32_t active_policy = -1;
  // Iterations that ran another input's policy; returns to Stable on a
  // remembered sequence; policy keys (input signatures) of the current
  // sequence.
  int32_t policy_of_other_input = 0;
  int32_t known_sequence_returns = 0;
  int32_t policy_keys = 0;
  PinnedPoolStats pinned;
  TransferQueueStats queue;
  // Backend events the runtime's pool created, and how often it had to
  // give events back at the device's event limit (event_pool.h).
  int32_t events_created = 0;
  int64_t event_reclaims = 0;
};

class Runtime {
 public:
  // Takes ownership of the backend. InvalidArgument for bad options; the
  // backend's error when its streams cannot be created.
  static absl::StatusOr<std::unique_ptr<Runtime>> Create(const RuntimeOptions& options,
                                                         std::unique_ptr<Backend> backend);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Backend& backend();
  const RuntimeOptions& options() const;

  // --- op names ---
  // The id of an op name (dense, in order of first call); call once per
  // distinct operator and cache it.
  int32_t InternOp(absl::string_view name);

  // --- framework ---
  void SetFrameworkCallbacks(FrameworkCallbacks callbacks);
  // The stream the framework computes on (default: the backend's).
  void SetComputeStream(Stream stream);
  void SetPolicyProvider(PolicyProvider provider);

  // --- tensors ---
  // A runtime-owned tensor: a device block of size_bytes, Algorithm 3 on
  // failure. *device gets its address.
  absl::StatusOr<TensorHandle> AllocTensor(const TensorDesc& desc, void** device);
  // A framework-owned tensor at `device` (already allocated by the
  // framework: the ledger takes it, Algorithm 3 on failure — the bytes it
  // frees make the framework's allocation fit).
  absl::StatusOr<TensorHandle> RegisterTensor(const TensorDesc& desc, void* device);
  // The framework freed it (framework-owned) or asks to (runtime-owned).
  absl::Status FreeTensor(TensorHandle t);
  // Its device address; FailedPrecondition while it is off the device.
  absl::StatusOr<void*> TensorData(TensorHandle t) const;
  // Whether its bytes are on the device now.
  absl::StatusOr<bool> IsResident(TensorHandle t) const;

  // --- per op ---
  absl::Status IterationBegin();
  // An iteration in which no op ran is no iteration: no row, no record, the
  // stage tracker does not see it.
  absl::Status IterationEnd();
  absl::Status OpBegin(int32_t op, Phase phase, absl::Span<const TensorHandle> inputs);
  // Between OpBegin and the kernel: room for `bytes` the op will allocate
  // (Algorithm 3 now rather than after the allocation crossed the budget);
  // the bytes are not taken. O(tensors) when Algorithm 3 runs, else O(1).
  absl::Status OpReserve(int64_t bytes);
  absl::Status OpEnd(absl::Span<const TensorHandle> outputs);
  // An autograd saved-tensor event of the open iteration (a pack, or an
  // unpack) after the ops completed so far, for the execution record
  // (ExecutionRecord::AddSavedTensorEvent); `t` the saved storage's tensor,
  // kNoTensorHandle when the runtime does not hold it. Marks the iteration's events
  // as recorded. InvalidArgument for a stale handle; ignored between
  // iterations. O(1).
  absl::Status SavedTensorEvent(bool unpack, TensorHandle t);
  // The open iteration's saved-tensor events are watched (recorded, also
  // when none fires). Always OK.
  absl::Status MarkSavedTensorEventsRecorded();

  // --- seed 004 ---
  // pageout_manual: copy the tensor out (tail of the queue); its block is
  // released by WaitAllSwapOuts, or earlier by Algorithm 3.
  absl::Status PageOut(TensorHandle t);
  // need_prefetch: add an off-device tensor to the prefetch list (tail).
  absl::Status NeedPrefetch(TensorHandle t);
  // prefetch_init: empty the prefetch list.
  absl::Status PrefetchInit();
  // before_prefetch_wait_all: wait for every copy out, then release the
  // manual swap-outs' blocks.
  absl::Status WaitAllSwapOuts();
  // prefetch_all: start the listed prefetches in order.
  absl::Status PrefetchAll();

  // --- policies ---
  // A self-contained policy (schema v2: its runtime section has everything
  // the runtime needs; every planner writes one, `swapplan policy upgrade`
  // adds one to a v1 policy). Runs from the next IterationBegin on, in
  // every iteration. Returns its index. InvalidArgument for a policy without
  // a runtime section, for one the runtime cannot execute (a schedule, a
  // pool, wrapping items).
  absl::StatusOr<int32_t> LoadPolicy(Policy policy);
  // A policy made for iteration `iteration` of `trace` (its runtime keys
  // and anchors are prepared from the trace: MakeMatchablePolicy). Runs from
  // the next IterationBegin on, in every iteration. Returns its index.
  // InvalidArgument for what the runtime cannot execute (a schedule, a
  // pool, wrapping items) or a policy that does not fit the
  // trace.
  absl::StatusOr<int32_t> LoadPolicyForTrace(Policy policy, const Trace& trace,
                                             int32_t iteration);
  // Stops applying a loaded policy (the stage machine decides again).
  void ClearPolicy();

  // --- results ---
  RuntimeStats Stats() const;
  const std::vector<IterationStats>& IterationRows() const;
  // Everything recorded so far (see keep_record) as a trace.
  absl::StatusOr<Trace> RecordTrace() const;
  absl::Status WriteRecord(const std::string& path) const;

  // Brings every off-device tensor back (framework-owned ones into freshly
  // restored storage), waits for all copies. Called by the destructor; call
  // it to see its error.
  absl::Status Close();

  struct State;

 private:
  explicit Runtime(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_RUNTIME_RUNTIME_H_
