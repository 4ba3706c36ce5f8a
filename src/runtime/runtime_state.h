// Runtime internals shared by runtime.cc (tensors, swaps, Algorithm 3),
// runtime_ops.cc (iterations, ops, stages) and runtime_policy.cc (policies).
// See swapplan/runtime/runtime.h for the behaviour. The state is made of
// three parts and the machinery around them:
//   ResidencyTable  the tensor slots, the bytes on the device, runtime keys
//   RunStats        totals and per-iteration rows (Stats, IterationRows)
//   PolicyLibrary   the stage machine (varying/policy_library.h: the same
//                   one the replay runs), its keys and remembered sequences;
//                   the loaded policies it names stay here (LoadedPolicy)
//
// Per tensor slot, the residency state machine:
//
//   kResident --StartSwapOut--> kSwappingOut --Release--> kOffDevice
//       ^                           |  (compute waits E_out, block freed)
//       |                           |  cancelled (written, swap-in due):
//       |<--------------------------+  block kept, host copy dropped
//       |                                                   |
//       +<----WaitIn (compute waits E_in)---- kSwappingIn <-+ StartSwapIn
//                                             (block allocated on compute,
//                                              h2d waits E_alloc and E_out)
//
// A RECOMPUTE item (reason kRecompute) skips the copies:
//
//   kResident --Drop (release anchor)--> kOffDevice --Rematerialise--> kResident
//             (block freed, no copy)       (block allocated, framework recomputes)
#ifndef SWAPPLAN_SRC_RUNTIME_RUNTIME_STATE_H_
#define SWAPPLAN_SRC_RUNTIME_RUNTIME_STATE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "swapplan/policy/policy.h"
#include "swapplan/runtime/event_pool.h"
#include "swapplan/runtime/execution_record.h"
#include "swapplan/runtime/pinned_pool.h"
#include "swapplan/runtime/runtime.h"
#include "swapplan/runtime/transfer_queue.h"
#include "swapplan/varying/matcher.h"
#include "swapplan/varying/policy_library.h"
#include "swapplan/varying/policy_set.h"
#include "swapplan/varying/stage_tracker.h"

namespace swapplan::runtime {

enum class Residency : uint8_t { kResident, kSwappingOut, kOffDevice, kSwappingIn };

// Why a tensor is being swapped out.
// kRecompute: a RECOMPUTE item's tensor, resident until its release drops
// the block, then off the device without a host copy.
enum class SwapReason : uint8_t { kNone, kPolicy, kManual, kPassive, kRecompute };

struct Slot {
  uint32_t generation = 0;
  bool live = false;
  bool owned = false;
  bool persistent = false;
  // The framework refused to free its storage (release-refused): it never
  // leaves the device, not even as Algorithm 3's last resort.
  bool immovable = false;
  Residency state = Residency::kResident;
  SwapReason reason = SwapReason::kNone;
  TensorKind kind = TensorKind::kActivation;
  DType dtype = DType::kUnknown;
  int64_t size = 0;
  uint64_t shape_hash = 0;
  // Its dims (the input signature hashes them; the vector keeps its
  // capacity across the slot's reuse).
  std::vector<int64_t> shape;
  uint64_t framework_id = 0;
  void* device = nullptr;
  PinnedBuffer host;
  TicketId out = kNoTicket;
  TicketId in = kNoTicket;
  // Policy item being executed on it this iteration (-1: none).
  int32_t item = -1;
  // The framework block is held (a copy reads or writes it).
  bool held = false;
  // Framework copies (FrameworkCallbacks::copy): the framework holds a host
  // copy of it (from kOut until kIn or kDiscard).
  bool framework_host = false;
  // Op ordinal (this iteration) of its last use, and of the event that made
  // it resident (ALLOC / SWAP_IN; -1: before this iteration). A tensor is a
  // passive swap-out candidate at op p only if both are < p.
  int32_t last_use_op = -1;
  int32_t resident_since_op = -1;
  int64_t record_id = 0;
  // Iteration (+ 1) in which the per-iteration fields above or its runtime
  // key were last touched: only those slots are reset when the next begins.
  int32_t touched = 0;
};

// Per policy item, in the iteration being run.
struct ItemRun {
  int32_t slot = -1;
  uint32_t generation = 0;
  bool matched = false;
  // Release anchor passed when the tensor was found: release after the
  // next op.
  bool release_late = false;
  bool released = false;
  bool swapped_in = false;
};

struct LoadedPolicy {
  MatchablePolicy mp;
  std::unique_ptr<TensorMatcher> matcher;
  // The policy's op-name table (name -> id), and per runtime op id its
  // name id (-1: the policy never saw it), extended as ops get interned.
  absl::flat_hash_map<std::string, NameId> names;
  std::vector<NameId> name_of_op;
  // Trigger lists: per phase, indexed by position in the phase (fuzzy), or
  // by op ordinal (naive, phase index 0): item indices.
  std::vector<std::vector<int32_t>> release_at[kNumPhases];
  std::vector<std::vector<int32_t>> swap_in_at[kNumPhases];
};

// What the runtime keeps per policy key of its library beside the library's
// figures: the records of the iterations planned with it, oldest first
// (PolicyRequest::observed_record_paths).
struct RuntimeKey : LibraryKeyData {
  std::vector<std::string> records;
};

// The residency table: every tensor slot (live or free for reuse), the
// bytes they hold on the device, and the runtime keys the matchers read.
struct ResidencyTable {
  std::vector<Slot> slots;
  std::vector<int32_t> free_slots;
  int32_t live = 0;
  int64_t resident_bytes = 0;
  int64_t peak_bytes = 0;
  RuntimeTensorTable table;
  std::vector<int32_t> touched;  // slots touched in this iteration

  // The slot a handle names; InvalidArgument when it names no live tensor.
  absl::StatusOr<int32_t> SlotOf(TensorHandle t) const;
  TensorHandle HandleOf(int32_t slot) const;
  // Notes a slot whose per-iteration state changes in `iteration`. O(1).
  void Touch(int32_t slot, int32_t iteration) {
    Slot& t = slots[slot];
    if (t.touched != iteration + 1) {
      t.touched = iteration + 1;
      touched.push_back(slot);
    }
  }
};

// The statistics: the run's totals, the open iteration's row and the rows
// of those that ended (RuntimeStats, IterationStats).
struct RunStats {
  SwapCounts counts;
  IterationStats row;
  std::vector<IterationStats> rows;
  int32_t policy_of_other_input = 0;  // iterations

  // Adds `n` to one count, in the totals and in the open iteration's row.
  void Count(int64_t SwapCounts::*field, int64_t n = 1) {
    counts.*field += n;
    row.counts.*field += n;
  }
};

struct Runtime::State {
  RuntimeOptions options;
  std::unique_ptr<Backend> backend;
  Stream compute;
  Stream streams[4];  // out, in, demand_out, demand_in
  std::unique_ptr<EventPool> events;
  std::unique_ptr<PinnedPool> pinned;
  std::unique_ptr<TransferQueue> queue;
  FrameworkCallbacks callbacks;
  PolicyProvider provider;
  int64_t budget = 0;
  bool closed = false;

  // Op names.
  absl::flat_hash_map<std::string, int32_t> op_ids;
  std::vector<std::string> op_names;
  std::vector<uint64_t> op_name_hash;

  ResidencyTable residency;
  RunStats stats;

  // Iteration and op clock.
  bool in_iteration = false;
  bool in_op = false;
  int32_t iteration = 0;  // runtime iterations begun so far (the open one's index)
  int32_t ordinal = -1;   // op being run / last run in this iteration
  int32_t phase_count[kNumPhases] = {0, 0, 0, 0};
  Phase op_phase = Phase::kOther;
  int32_t op_id = 0;
  int32_t op_phase_ordinal = 0;
  bool optimizer_started = false;
  int32_t micro_batch = 0;
  bool micro_batch_has_backward = false;
  int64_t iteration_start_ns = 0;
  int64_t op_start_ns = 0;
  int64_t op_peak = 0;
  std::vector<int32_t> tokens;       // this iteration's op ids (stage tracker)
  std::vector<Phase> token_phases;   // and their (normalized) phases
  std::vector<int32_t> op_slots;     // the open op's inputs then outputs
  std::vector<int64_t> op_rec;       // their record ids
  int32_t op_inputs = 0;             // how many of op_slots are inputs
  FingerprintState fingerprint;
  int32_t first_divergent = -1;
  bool policy_stopped = false;  // strict fingerprint tripped

  // Stages and policies: the library's stage machine (set by Create) and
  // the policies it and LoadPolicy loaded (library ids: indices here).
  std::optional<PolicyLibrary> library;
  std::vector<std::unique_ptr<LoadedPolicy>> policies;
  int32_t user_policy = -1;     // LoadPolicy: runs every iteration
  int32_t staged_policy = -2;   // -2: no change pending; -1: clear; else index
  int32_t stage_policy = -1;    // the stage machine's choice for this iteration
  // This iteration's input signature: taken (at the first FORWARD op's
  // end, else the first op's) and whether the stage machine's policy is
  // still to be chosen there.
  InputSignature input;
  bool input_taken = false;
  bool choose_pending = false;
  // The ops run before the policy was chosen (names, phases, their slots in
  // pending_slots[begin, end)): the chosen policy's matcher sees them first.
  struct PendingOp {
    int32_t op = 0;
    Phase phase = Phase::kOther;
    int32_t begin = 0, end = 0;
  };
  std::vector<PendingOp> pending_ops;
  std::vector<int32_t> pending_slots;
  int32_t active = -1;          // policy running in this iteration
  std::vector<ItemRun> items;
  std::vector<MatchDecision> decisions;
  std::vector<int32_t> late_releases;  // items to release after the next op
  std::vector<int32_t> due_late;       // swap of late_releases at an op's end

  // Persistent tensors Algorithm 3 moved off the device in this iteration
  // (its last resort): brought back at IterationEnd, so every iteration
  // ends with the resident set it began with.
  std::vector<int32_t> persistent_victims;

  // seed 004.
  std::vector<int32_t> manual_out;  // slots swapped out by PageOut, not released
  std::vector<int32_t> prefetch_list;

  // Record.
  std::unique_ptr<ExecutionRecord> record;
  int32_t genpolicy_records = 0;

  // --- runtime.cc ---
  // Notes a slot whose per-iteration state changes now. O(1).
  void Touch(int32_t slot) { residency.Touch(slot, iteration); }
  absl::StatusOr<int32_t> NewSlot(const TensorDesc& desc, bool owned, void* device);
  // Reserves `bytes` for an allocation at the current position (Algorithm 3
  // on failure); owned: also allocates the block into *device. `requester`
  // (-1: none) is never a victim.
  absl::Status Reserve(int64_t bytes, bool owned, void** device, int32_t requester);
  absl::Status Algorithm3(int64_t bytes, bool owned, void** device, int32_t requester,
                          absl::Status first_failure);
  void Account(int64_t delta);
  // Record position of an event that takes effect before / after "now".
  int32_t PositionBefore() const;
  int32_t PositionAfter() const;

  absl::Status StartSwapOut(int32_t slot, SwapReason reason);
  // The backend's copy out of a slot (pinned buffer, transfer ticket).
  absl::Status StartBackendCopyOut(Slot& t, bool passive);
  // Rule 2. for_allocation: Algorithm 3 releases it for an allocation at
  // the current position (recorded off the device during it).
  absl::Status Release(int32_t slot, bool for_allocation = false);
  // A swap-out not to be released: the block stays, the host copy goes.
  absl::Status CancelSwapOut(int32_t slot);
  // Gives an off-device slot its device block again before a copy in or a
  // recomputation: reserves its bytes (Algorithm 3 on failure; a framework
  // tensor over the budget is counted as an OOM when overcommit_on_oom) and,
  // for a framework tensor, has the framework restore its storage. Returns
  // the block's address; on failure nothing stays accounted.
  absl::StatusOr<void*> ClaimBlock(int32_t slot);
  absl::Status StartSwapIn(int32_t slot, bool demand);
  // The state change and bookkeeping of a swap-in whose copy was started.
  absl::Status SwapInStarted(int32_t slot, bool demand);
  absl::Status WaitIn(int32_t slot);
  // Makes the slot resident before a use (rule 3; passive swap-in).
  absl::Status EnsureResident(int32_t slot);

  // --- runtime_recompute.cc ---
  // Whether the framework can recompute the slot's tensor now.
  bool CanRecompute(const Slot& t) const;
  // A RECOMPUTE item's release: frees the block, no copy (a framework that
  // refuses to free it keeps it resident, persistent).
  absl::Status Drop(int32_t slot);
  // Allocates the block (Algorithm 3 on failure), restores a framework
  // storage and has the framework recompute into it. On failure the tensor
  // stays off the device: rule "recompute-failed".
  absl::Status Rematerialise(int32_t slot, bool demand);
  // A policy item's release due now: Drop for kRecompute, else Release.
  bool ReleasePending(const Slot& t) const {
    return t.state == Residency::kSwappingOut ||
           (t.state == Residency::kResident && t.reason == SwapReason::kRecompute);
  }
  absl::Status ReleaseItem(int32_t slot) {
    return residency.slots[slot].reason == SwapReason::kRecompute ? Drop(slot) : Release(slot);
  }
  // Whether the framework moves this tensor's bytes (FrameworkCallbacks::
  // copy set, a framework-owned tensor): no pinned buffer, no ticket.
  bool FrameworkCopies(const Slot& t) const {
    return !t.owned && static_cast<bool>(callbacks.copy);
  }
  // Asks the framework (kOut / kIn with the tensor's size); keeps
  // framework_host current.
  absl::Status CallCopy(Slot& t, FrameworkCopy action);
  absl::Status FreeDeviceBlock(Slot& s, bool after_copy);
  absl::Status Hold(Slot& s);
  absl::Status Unhold(Slot& s, bool free_memory);
  absl::Status TimedComputeWait(TicketId ticket);
  void DropHost(Slot& s, EventId ready);

  // --- runtime_ops.cc ---
  void NormalizePhase(Phase* phase);
  // Ends the open op: matcher, decisions (unless aborted), releases due,
  // the record.
  absl::Status CloseOp(absl::Span<const int32_t> outputs, bool aborted);
  bool AnchorPassed(const OpAnchor& a) const;
  absl::Status FireSwapIns(Phase phase, int32_t phase_ordinal);
  absl::Status FireReleases(Phase phase, int32_t phase_ordinal);
  absl::Status ApplyDecisions();
  absl::Status EndOfIterationStages();
  TraceMetadata RecordMetadata() const;

  // --- runtime_policy.cc ---
  // Prepares a policy for running (its matcher, name table, triggers).
  absl::StatusOr<int32_t> AddPolicy(PreparedPolicy prepared);
  NameId PolicyName(LoadedPolicy& p, int32_t op);
  // Writes the record of iteration `record_iteration`, adds it to the key's
  // records and asks the provider: the policy it made for the library. A
  // failed plan: the row's plan_error, no policy.
  PlanOutcome PlanForKey(int32_t record_iteration, LibraryKey& key);
  absl::StatusOr<PlanOutcome> GeneratePolicy(int32_t record_iteration, LibraryKey& key);
  // Takes the iteration's input signature from the open op's tensors and,
  // when pending, chooses and starts the stage machine's policy.
  void TakeInput();
  // Starts policy `index` for the rest of this iteration (items, matcher,
  // the op-sequence check of the ops already run).
  void Activate(int32_t index);
};

// Tags the status with the runtime's rule names.
absl::Status CallOrder(absl::string_view message);

}  // namespace swapplan::runtime

#endif  // SWAPPLAN_SRC_RUNTIME_RUNTIME_STATE_H_
