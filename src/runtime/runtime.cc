// Runtime: creation, tensors, the swap state machine (runtime_state.h),
// Algorithm 3, seed 004's manual API, results. Iterations and ops are in
// runtime_ops.cc, policies in runtime_policy.cc.
#include "swapplan/runtime/runtime.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/runtime_state.h"
#include "swapplan/runtime/host_backend.h"
#include "runtime/file_io.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

namespace {

// Algorithm 3's passive-swap candidates: (size, record id, slot), sorted.
using Candidate = std::tuple<int64_t, int64_t, int32_t>;

// The candidate closest in size to `target` (non-empty `cand`): the
// smallest of at least `target` bytes unless a smaller one is closer; among
// equal sizes below `target`, the earliest registered. O(log n + ties).
std::vector<Candidate>::iterator ClosestCandidate(std::vector<Candidate>& cand,
                                                  int64_t target) {
  const auto right =
      std::lower_bound(cand.begin(), cand.end(), std::make_tuple(target, int64_t{-1}, int32_t{-1}));
  auto pick = right;
  if (right == cand.end()) {
    pick = right - 1;
  } else if (right != cand.begin()) {
    const auto left = right - 1;
    if (target - std::get<0>(*left) < std::get<0>(*right) - target) pick = left;
  }
  if (pick != right) {
    while (pick != cand.begin() && std::get<0>(*(pick - 1)) == std::get<0>(*pick)) --pick;
  }
  return pick;
}

// A compute wait longer than this counts as a stall (an inline compute
// stream: the wait is the caller blocking; a ready event costs far less).
constexpr int64_t kStallThresholdNs = 20'000;

bool IsOom(const absl::Status& st) {
  std::optional<std::string> rule = RuleOf(st);
  return rule.has_value() && *rule == "out-of-memory";
}

// The stage machine of runtime.h, "Stages": observed planning keeps the
// latest policy (planned on the most records), planning on one iteration
// the best candidate and none after a failed plan.
PolicyLibraryOptions LibraryOptions(const RuntimeOptions& o) {
  PolicyLibraryOptions l;
  l.tracker = o.tracker;
  l.by_input = o.policies_by_input;
  const bool observed = o.planning == PolicyPlanning::kObserved;
  l.stable_choice = observed ? StableChoice::kLatest : StableChoice::kBestCandidate;
  l.plan_leaving_genpolicy = observed;
  l.drop_latest_without_plan = !observed;
  l.remembered_sequences = o.remembered_sequences;
  return l;
}

}  // namespace

absl::Status CallOrder(absl::string_view message) {
  return WithRule(absl::FailedPreconditionError(message), "call-order");
}

absl::Status RuntimeOptions::Validate() const {
  if (device_budget_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "runtime options: device_budget_bytes is ", device_budget_bytes, "; must be >= 0"));
  }
  if (runtime_key_bits != 32 && runtime_key_bits != 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "runtime options: runtime_key_bits is ", runtime_key_bits, "; must be 32 or 64"));
  }
  if (planning != PolicyPlanning::kObserved && planning != PolicyPlanning::kIteration) {
    return absl::InvalidArgumentError(absl::StrCat("runtime options: planning is ",
                                                   static_cast<int>(planning), "; unknown"));
  }
  if (observed_records < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "runtime options: observed_records is ", observed_records, "; must be >= 1"));
  }
  if (remembered_sequences < 0) {
    return absl::InvalidArgumentError(absl::StrCat("runtime options: remembered_sequences is ",
                                                   remembered_sequences, "; must be >= 0"));
  }
  if (model_layers < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime options: model_layers is ", model_layers, "; must be >= 0"));
  }
  SWAPPLAN_RETURN_IF_ERROR(matcher_options.Validate());
  SWAPPLAN_RETURN_IF_ERROR(tracker.Validate());
  SWAPPLAN_RETURN_IF_ERROR(queue.Validate());
  SWAPPLAN_RETURN_IF_ERROR(pinned.Validate());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Runtime>> Runtime::Create(const RuntimeOptions& options,
                                                         std::unique_ptr<Backend> backend) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  if (backend == nullptr) return absl::InvalidArgumentError("runtime: no backend");
  auto s = std::make_unique<State>();
  s->options = options;
  s->backend = std::move(backend);
  Backend& b = *s->backend;
  s->budget = options.device_budget_bytes;
  if (s->budget == 0) {
    SWAPPLAN_ASSIGN_OR_RETURN(MemInfo info, b.GetMemInfo());
    s->budget = info.total_bytes;
  }
  s->compute = b.ComputeStream();
  const StreamPriority prio[4] = {StreamPriority::kNormal, StreamPriority::kNormal,
                                  StreamPriority::kHigh, StreamPriority::kHigh};
  for (int i = 0; i < 4; ++i) {
    SWAPPLAN_ASSIGN_OR_RETURN(s->streams[i], b.CreateStream(prio[i]));
  }
  s->events = std::make_unique<EventPool>(&b);
  s->pinned = std::make_unique<PinnedPool>(&b, s->events.get(), options.pinned);
  s->events->SetReclaimer([pinned = s->pinned.get()] { pinned->ReclaimEvents(); });
  SWAPPLAN_RETURN_IF_ERROR(s->pinned->Init());
  s->queue = std::make_unique<TransferQueue>(
      &b, s->events.get(),
      TransferQueue::Streams{s->streams[0], s->streams[1], s->streams[2], s->streams[3]},
      options.queue);
  SWAPPLAN_ASSIGN_OR_RETURN(s->library, PolicyLibrary::Create(LibraryOptions(options)));
  s->record = std::make_unique<ExecutionRecord>(options.keep_record);
  return std::unique_ptr<Runtime>(new Runtime(std::move(s)));
}

Runtime::Runtime(std::unique_ptr<State> state) : s_(std::move(state)) {}

Runtime::~Runtime() {
  (void)Close();
  State& s = *s_;
  s.queue.reset();
  s.pinned.reset();
  s.events.reset();
  for (Stream st : s.streams) (void)s.backend->DestroyStream(st);
}

Backend& Runtime::backend() { return *s_->backend; }
const RuntimeOptions& Runtime::options() const { return s_->options; }

int32_t Runtime::InternOp(absl::string_view name) {
  State& s = *s_;
  auto [it, inserted] = s.op_ids.try_emplace(name, static_cast<int32_t>(s.op_names.size()));
  if (inserted) {
    s.op_names.emplace_back(name);
    s.op_name_hash.push_back(NameHash(name));
  }
  return it->second;
}

void Runtime::SetFrameworkCallbacks(FrameworkCallbacks callbacks) {
  s_->callbacks = std::move(callbacks);
}
void Runtime::SetComputeStream(Stream stream) { s_->compute = stream; }
void Runtime::SetPolicyProvider(PolicyProvider provider) { s_->provider = std::move(provider); }

// ---------------------------------------------------------------------------
// Slots and the ledger.

absl::StatusOr<int32_t> ResidencyTable::SlotOf(TensorHandle t) const {
  const uint64_t index = (t & 0xffffffffu);
  const uint32_t gen = static_cast<uint32_t>(t >> 32);
  if (index == 0 || index > slots.size() || !slots[index - 1].live ||
      slots[index - 1].generation != gen) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime: tensor handle ", t, " does not name a live tensor"));
  }
  return static_cast<int32_t>(index - 1);
}

TensorHandle ResidencyTable::HandleOf(int32_t slot) const {
  return (static_cast<uint64_t>(slots[slot].generation) << 32) | static_cast<uint64_t>(slot + 1);
}

int32_t Runtime::State::PositionBefore() const { return in_op ? ordinal : ordinal + 1; }
int32_t Runtime::State::PositionAfter() const { return ordinal; }

void Runtime::State::Account(int64_t delta) {
  residency.resident_bytes += delta;
  if (delta > 0) {
    residency.peak_bytes = std::max(residency.peak_bytes, residency.resident_bytes);
    stats.row.peak_bytes = std::max(stats.row.peak_bytes, residency.resident_bytes);
  }
}

absl::StatusOr<int32_t> Runtime::State::NewSlot(const TensorDesc& desc, bool owned, void* device) {
  int32_t slot;
  if (!residency.free_slots.empty()) {
    slot = residency.free_slots.back();
    residency.free_slots.pop_back();
  } else {
    slot = static_cast<int32_t>(residency.slots.size());
    residency.slots.emplace_back();
  }
  Slot& t = residency.slots[slot];
  const uint32_t gen = t.generation;
  std::vector<int64_t> shape = std::move(t.shape);  // keeps its capacity
  t = Slot{};
  t.generation = gen;
  t.shape = std::move(shape);
  t.shape.assign(desc.shape.begin(), desc.shape.end());
  t.live = true;
  t.owned = owned;
  t.persistent =
      desc.persistent < 0 ? KindIsPersistentByDefault(desc.kind) : desc.persistent != 0;
  t.kind = desc.kind;
  t.dtype = desc.dtype;
  t.size = desc.size_bytes;
  t.shape_hash = ShapeHash(desc.shape);
  t.framework_id = desc.framework_id;
  t.device = device;
  t.resident_since_op = in_iteration ? PositionBefore() : -1;
  Touch(slot);
  ++residency.live;
  residency.table.Grow(slot + 1);
  residency.table[slot] = RuntimeTensor{};
  residency.table.Describe(slot, t.dtype, t.size, t.shape_hash);
  RecordTensor rt;
  rt.size_bytes = desc.size_bytes;
  rt.dtype = desc.dtype;
  rt.shape.assign(desc.shape.begin(), desc.shape.end());
  rt.kind = desc.kind;
  rt.pinned = t.persistent;
  // Before the first iteration: resident from the start of the record.
  const bool from_start = !in_iteration && record->num_iterations() == 0;
  t.record_id = record->AddTensor(rt, from_start);
  if (!from_start) {
    record->AddEvent(PositionBefore(), MemoryEventKind::kAlloc, t.record_id, false);
  }
  return slot;
}

absl::Status Runtime::State::Reserve(int64_t bytes, bool owned, void** device, int32_t requester) {
  absl::Status st;
  if (residency.resident_bytes + bytes > budget) {
    st = WithRule(Error(ErrorKind::kResourceLimit,
                        absl::StrCat("device budget exceeded: ", bytes, " bytes requested, ",
                                     residency.resident_bytes, " of ", budget, " bytes in use")),
                  "out-of-memory");
  } else if (owned) {
    absl::StatusOr<void*> p = backend->AllocAsync(bytes, compute);
    if (p.ok()) *device = *p;
    st = p.status();
  }
  if (st.ok()) {
    Account(bytes);
    return st;
  }
  if (!IsOom(st)) return st;
  const bool handle = options.oom_handling == OomHandling::kAllStages ||
                      (options.oom_handling == OomHandling::kWarmUpOnly &&
                       library->stage() == Stage::kWarmUp);
  if (!handle) {
    stats.Count(&SwapCounts::ooms);
    return WithRule(Error(ErrorKind::kResourceLimit,
                          absl::StrCat("device out of memory at op ", PositionBefore(),
                                       " of iteration ", iteration, " (",
                                       StageName(library->stage()),
                                       ", OOM handling off): ", st.message())),
                    "out-of-memory");
  }
  return Algorithm3(bytes, owned, device, requester, st);
}

absl::Status Runtime::State::Algorithm3(int64_t bytes, bool owned, void** device,
                                        int32_t requester, absl::Status first_failure) {
  stats.Count(&SwapCounts::allocation_failures);
  auto try_once = [&]() -> absl::Status {
    if (residency.resident_bytes + bytes > budget) {
      return WithRule(absl::ResourceExhaustedError("budget"), "out-of-memory");
    }
    if (owned) {
      absl::StatusOr<void*> p = backend->AllocAsync(bytes, compute);
      if (!p.ok()) return p.status();
      *device = *p;
    }
    Account(bytes);
    return absl::OkStatus();
  };
  // (i) FreeSwappingOutBlock: every block whose copy out is under way; the
  // compute stream waits for those copies (SwapStream.eventRecord,
  // ComputeStream.eventWait), no host sync.
  const int32_t pos = PositionBefore();
  int32_t early = 0;
  for (int32_t k = 0; k < static_cast<int32_t>(residency.slots.size()); ++k) {
    const Slot& t = residency.slots[k];
    if (!t.live || t.state != Residency::kSwappingOut || k == requester || t.last_use_op >= pos) {
      continue;
    }
    SWAPPLAN_RETURN_IF_ERROR(Release(k, /*for_allocation=*/true));
    ++early;
  }
  stats.Count(&SwapCounts::early_releases, early);
  absl::Status st = try_once();
  if (st.ok() || !IsOom(st)) return st;
  // (ii) PassiveSwap: the resident tensor closest in size to what is
  // missing, until the request fits; tensors of the iteration first, then
  // (RuntimeOptions::oom_persistent_victims) persistent ones, which come
  // back at their next use or at IterationEnd.
  // Candidates by (size, record id, slot): among tensors of one size the
  // earliest registered goes first — the same order whatever slots were
  // reused before (the simulator's Algorithm 3 orders them by trace order).
  int32_t passive = 0;
  int64_t passive_bytes = 0;
  std::vector<Candidate> cand;
  for (const bool persistent_round : {false, true}) {
    if (persistent_round && !options.oom_persistent_victims) break;
    cand.clear();
    for (int32_t k = 0; k < static_cast<int32_t>(residency.slots.size()); ++k) {
      const Slot& t = residency.slots[k];
      if (!t.live || t.state != Residency::kResident || t.persistent != persistent_round ||
          t.immovable || k == requester || t.size <= 0 || t.last_use_op >= pos ||
          t.resident_since_op >= pos) {
        continue;
      }
      cand.emplace_back(t.size, t.record_id, k);
    }
    std::sort(cand.begin(), cand.end());
    while (!cand.empty()) {
      const int64_t target =
          std::max<int64_t>(residency.resident_bytes + bytes - budget, bytes > 0 ? 1 : 0);
      const auto pick = ClosestCandidate(cand, target);
      const int32_t victim = std::get<2>(*pick);
      cand.erase(pick);
      absl::Status out = StartSwapOut(victim, SwapReason::kPassive);
      // A framework storage that died under the runtime (its free not yet
      // reported) cannot be held: not a candidate.
      if (RuleOf(out) == "hold-failed") continue;
      SWAPPLAN_RETURN_IF_ERROR(out);
      SWAPPLAN_RETURN_IF_ERROR(Release(victim, /*for_allocation=*/true));
      if (residency.slots[victim].state == Residency::kOffDevice) {
        ++passive;
        passive_bytes += residency.slots[victim].size;
        if (persistent_round) {
          persistent_victims.push_back(victim);
          stats.Count(&SwapCounts::persistent_passive_swap_outs);
        }
      }
      st = try_once();
      if (st.ok() || !IsOom(st)) return st;
    }
  }
  // (iii) Throw Error.
  stats.Count(&SwapCounts::ooms);
  const std::string op = in_op && op_id >= 0 && op_id < static_cast<int32_t>(op_names.size())
                             ? absl::StrCat(" (", op_names[op_id], ")")
                             : std::string();
  return WithRule(
      Error(ErrorKind::kResourceLimit,
            absl::StrCat("device out of memory at op ", pos, op, " of iteration ", iteration,
                         ": ", bytes, " bytes requested, ", residency.resident_bytes, " of ",
                         budget, " bytes in use (", first_failure.message(), "); Algorithm 3 released ",
                         early, " blocks of swap-outs under way and swapped out ", passive,
                         " tensors (", passive_bytes, " bytes) passively; no other tensor may "
                         "leave the device (used by this op, just allocated, or persistent: a "
                         "parameter the framework cannot free, or none used again)")),
      "out-of-memory");
}

// ---------------------------------------------------------------------------
// The swap state machine.

absl::Status Runtime::State::Hold(Slot& t) {
  if (t.owned || t.held) return absl::OkStatus();
  if (!callbacks.hold) return absl::OkStatus();
  SWAPPLAN_RETURN_IF_ERROR(callbacks.hold(t.framework_id));
  t.held = true;
  return absl::OkStatus();
}

absl::Status Runtime::State::Unhold(Slot& t, bool free_memory) {
  if (t.owned || (!t.held && !free_memory)) return absl::OkStatus();
  t.held = false;
  if (!callbacks.release) {
    return free_memory ? absl::FailedPreconditionError(
                             "runtime: a framework-owned tensor must be released, but no "
                             "framework callbacks are set")
                       : absl::OkStatus();
  }
  return callbacks.release(t.framework_id, free_memory);
}

absl::Status Runtime::State::CallCopy(Slot& t, FrameworkCopy action) {
  const bool sized = action == FrameworkCopy::kOut || action == FrameworkCopy::kIn;
  SWAPPLAN_RETURN_IF_ERROR(callbacks.copy(t.framework_id, action, sized ? t.size : 0));
  if (action == FrameworkCopy::kOut) t.framework_host = true;
  if (action == FrameworkCopy::kIn || action == FrameworkCopy::kDiscard) t.framework_host = false;
  return absl::OkStatus();
}

void Runtime::State::DropHost(Slot& t, EventId ready) {
  pinned->Release(t.host, ready);
  t.host = PinnedBuffer{};
}

absl::Status Runtime::State::TimedComputeWait(TicketId ticket) {
  const int64_t t0 = HostBackend::NowNs();
  absl::Status st = queue->WaitOn(ticket, compute);
  const int64_t dt = HostBackend::NowNs() - t0;
  if (dt > kStallThresholdNs) {
    stats.Count(&SwapCounts::stalls);
    stats.Count(&SwapCounts::stall_ns, dt);
  }
  return st;
}

absl::Status Runtime::State::StartSwapOut(int32_t slot, SwapReason reason) {
  Slot& t = residency.slots[slot];
  if (t.state != Residency::kResident || t.size <= 0) {
    return CallOrder(absl::StrCat("runtime: swap-out of tensor ", residency.HandleOf(slot),
                                  " which is not resident or has no bytes"));
  }
  const bool passive = reason == SwapReason::kPassive;
  if (FrameworkCopies(t)) {
    // The framework copies, ordered after the op that wrote the tensor.
    SWAPPLAN_RETURN_IF_ERROR(Hold(t));
    if (absl::Status st = CallCopy(t, FrameworkCopy::kOut); !st.ok()) {
      (void)Unhold(t, false);
      return st;
    }
  } else {
    SWAPPLAN_RETURN_IF_ERROR(StartBackendCopyOut(t, passive));
  }
  t.state = Residency::kSwappingOut;
  t.reason = reason;
  stats.Count(&SwapCounts::bytes_d2h, t.size);
  int64_t SwapCounts::*field = reason == SwapReason::kPolicy   ? &SwapCounts::policy_swap_outs
                               : reason == SwapReason::kManual ? &SwapCounts::manual_swap_outs
                                                               : &SwapCounts::passive_swap_outs;
  stats.Count(field);
  return absl::OkStatus();
}

absl::Status Runtime::State::StartBackendCopyOut(Slot& t, bool passive) {
  SWAPPLAN_ASSIGN_OR_RETURN(PinnedBuffer host,
                            pinned->Acquire(t.size, passive ? streams[2] : streams[0]));
  absl::Status st = Hold(t);
  if (!st.ok()) {
    pinned->Release(host, kNoEvent);
    return st;
  }
  SWAPPLAN_ASSIGN_OR_RETURN(EventId produced, events->Acquire());
  st = backend->RecordEvent(events->event(produced), compute);
  TransferRequest r;
  r.direction = Direction::kDeviceToHost;
  r.dst = host.ptr;
  r.src = t.device;
  r.bytes = t.size;
  r.after = produced;
  r.demand = passive;
  absl::StatusOr<TicketId> ticket = st.ok() ? queue->Enqueue(r) : absl::StatusOr<TicketId>(st);
  if (!ticket.ok()) {
    if (!st.ok()) events->Unref(produced);
    pinned->Release(host, kNoEvent);
    (void)Unhold(t, false);
    return ticket.status();
  }
  t.out = *ticket;
  t.host = host;
  return absl::OkStatus();
}

absl::Status Runtime::State::Release(int32_t slot, bool for_allocation) {
  Slot& t = residency.slots[slot];
  if (t.state != Residency::kSwappingOut) {
    return CallOrder(absl::StrCat("runtime: release of tensor ", residency.HandleOf(slot),
                                  " which is not being swapped out"));
  }
  // Rule 2: the block is released only after the copy out has finished —
  // the compute stream waits for its event, then frees in stream order
  // (framework copies: the framework's release orders the free after its
  // copy on its streams).
  absl::Status st = FrameworkCopies(t) ? absl::OkStatus() : TimedComputeWait(t.out);
  if (!st.ok()) {
    // The copy failed: the tensor keeps its device block; the host copy is
    // dropped. Nothing is lost.
    // The error came back from the wait itself: the copy is over, and its
    // buffer is free without waiting on the failed event (a stream that
    // waits on a failed event fails with it).
    stats.Count(&SwapCounts::copy_errors);
    DropHost(t, kNoEvent);
    queue->Retire(t.out);
    t.out = kNoTicket;
    t.state = Residency::kResident;
    t.reason = SwapReason::kNone;
    (void)Unhold(t, false);
    return WithRule(Error(ErrorKind::kUnavailable,
                          absl::StrCat("swap-out of tensor ", residency.HandleOf(slot), " (",
                                       t.size, " bytes) failed: ", st.message(),
                                       "; the tensor keeps its device block")),
                    "copy-failed");
  }
  const bool passive = t.reason == SwapReason::kPassive;
  if (t.owned) {
    SWAPPLAN_RETURN_IF_ERROR(backend->FreeAsync(t.device, compute));
  } else if (absl::Status freed = Unhold(t, /*free_memory=*/true); !freed.ok()) {
    if (RuleOf(freed) != "release-refused") return freed;
    // The framework cannot free this storage (memory it does not own, e.g.
    // a tensor over a NumPy array): it stays, and never leaves again.
    if (FrameworkCopies(t)) {
      SWAPPLAN_RETURN_IF_ERROR(CallCopy(t, FrameworkCopy::kDiscard));
    } else {
      DropHost(t, kNoEvent);  // the copy is over (waited for above)
    }
    queue->Retire(t.out);
    t.out = kNoTicket;
    t.state = Residency::kResident;
    t.reason = SwapReason::kNone;
    t.persistent = true;
    t.immovable = true;
    stats.Count(&SwapCounts::cancelled_swap_outs);
    return absl::OkStatus();
  }
  t.device = nullptr;
  t.state = Residency::kOffDevice;
  Account(-t.size);
  // Released to make room for an allocation at the current position: off
  // the device during it, i.e. after the op before.
  record->AddEvent(for_allocation ? PositionBefore() - 1 : PositionAfter(),
                   MemoryEventKind::kSwapOut, t.record_id, passive, t.size);
  return absl::OkStatus();
}

absl::Status Runtime::State::CancelSwapOut(int32_t slot) {
  Slot& t = residency.slots[slot];
  if (FrameworkCopies(t)) {
    // The block may be written again only after the copy read it: the
    // framework's current stream waits for it, then frees the host copy.
    SWAPPLAN_RETURN_IF_ERROR(CallCopy(t, FrameworkCopy::kDiscard));
  } else if (queue->Erase(t.out)) {
    DropHost(t, kNoEvent);
  } else {
    // The copy may still read the block: the compute stream waits for it
    // before the block can be written again or the framework may free it.
    absl::Status st = TimedComputeWait(t.out);
    EventId ready = kNoEvent;
    if (st.ok()) {
      ready = queue->done_event(t.out);
      events->Ref(ready);
    } else {
      stats.Count(&SwapCounts::copy_errors);
    }
    DropHost(t, ready);
    queue->Retire(t.out);
  }
  t.out = kNoTicket;
  t.state = Residency::kResident;
  t.reason = SwapReason::kNone;
  stats.Count(&SwapCounts::cancelled_swap_outs);
  return Unhold(t, false);
}

absl::StatusOr<void*> Runtime::State::ClaimBlock(int32_t slot) {
  Slot& t = residency.slots[slot];
  void* device = nullptr;
  if (absl::Status st = Reserve(t.size, t.owned, &device, slot); !st.ok()) {
    // A framework tensor must come back and its memory is real: over the
    // budget when asked to (the OOM is counted).
    if (t.owned || !options.overcommit_on_oom || RuleOf(st) != "out-of-memory") return st;
    Account(t.size);
  }
  if (!t.owned) {
    auto restore = [&]() {
      return callbacks.restore ? callbacks.restore(t.framework_id, t.size)
                               : absl::StatusOr<void*>(absl::FailedPreconditionError(
                                     "runtime: no framework callbacks to restore a tensor"));
    };
    absl::StatusOr<void*> p = restore();
    if (!p.ok() && RuleOf(p.status()) == "framework-oom") {
      // The framework's allocator had no block although the ledger has room
      // (fragmentation, memory outside the runtime): Algorithm 3 swaps out
      // this tensor's bytes beyond the ledger, and restore runs once more.
      const int64_t ask = budget - residency.resident_bytes + t.size;
      absl::Status room = Reserve(ask, /*owned=*/false, nullptr, slot);
      if (room.ok()) {
        Account(-ask);  // room made; the tensor's bytes are accounted already
        p = restore();
      }
      if (!p.ok() && RuleOf(p.status()) == "framework-oom") {
        p = WithRule(Error(ErrorKind::kResourceLimit,
                           absl::StrCat(p.status().message(),
                                        room.ok() ? "; again after Algorithm 3 swapped out "
                                                  : "; Algorithm 3 could not swap out ",
                                        t.size, " bytes",
                                        room.ok() ? "" : absl::StrCat(": ", room.message()))),
                     "out-of-memory");
      }
    }
    if (!p.ok()) {
      Account(-t.size);
      return p.status();
    }
    device = *p;
    t.held = true;
  }
  t.device = device;
  return device;
}

absl::Status Runtime::State::StartSwapIn(int32_t slot, bool demand) {
  Slot& t = residency.slots[slot];
  if (t.state != Residency::kOffDevice) {
    return CallOrder(absl::StrCat("runtime: swap-in of tensor ", residency.HandleOf(slot),
                                  " which is not off the device"));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(void* device, ClaimBlock(slot));
  if (FrameworkCopies(t)) {
    // The framework orders its copy after the allocation restore made.
    if (absl::Status st = CallCopy(t, FrameworkCopy::kIn); !st.ok()) {
      (void)FreeDeviceBlock(t, false);
      return st;
    }
    return SwapInStarted(slot, demand);
  }
  // The block is allocated in compute-stream order; the copy waits for that
  // and for the copy out (rule 1, in the queue).
  SWAPPLAN_ASSIGN_OR_RETURN(EventId allocated, events->Acquire());
  absl::Status st = backend->RecordEvent(events->event(allocated), compute);
  TransferRequest r;
  r.direction = Direction::kHostToDevice;
  r.dst = device;
  r.src = t.host.ptr;
  r.bytes = t.size;
  r.after = allocated;
  r.after_transfer = t.out;
  r.demand = demand;
  absl::StatusOr<TicketId> ticket = st.ok() ? queue->Enqueue(r) : absl::StatusOr<TicketId>(st);
  if (!ticket.ok()) {
    if (!st.ok()) events->Unref(allocated);
    (void)FreeDeviceBlock(t, false);
    return ticket.status();
  }
  t.in = *ticket;
  return SwapInStarted(slot, demand);
}

absl::Status Runtime::State::SwapInStarted(int32_t slot, bool demand) {
  Slot& t = residency.slots[slot];
  t.state = Residency::kSwappingIn;
  t.resident_since_op = PositionBefore();
  Touch(slot);
  stats.Count(&SwapCounts::bytes_h2d, t.size);
  record->AddEvent(PositionBefore(), MemoryEventKind::kSwapIn, t.record_id, demand);
  return absl::OkStatus();
}

absl::Status Runtime::State::FreeDeviceBlock(Slot& t, bool after_copy) {
  (void)after_copy;
  absl::Status st;
  if (t.owned) {
    if (t.device != nullptr) st = backend->FreeAsync(t.device, compute);
  } else {
    st = Unhold(t, /*free_memory=*/true);
  }
  t.device = nullptr;
  Account(-t.size);
  return st;
}

absl::Status Runtime::State::WaitIn(int32_t slot) {
  Slot& t = residency.slots[slot];
  if (FrameworkCopies(t)) {
    // Rule 3 in the framework's streams: the current stream waits for the
    // copy in (a stream order; no host wait, no stall measured here).
    SWAPPLAN_RETURN_IF_ERROR(CallCopy(t, FrameworkCopy::kWait));
    t.state = Residency::kResident;
    t.reason = SwapReason::kNone;
    return Unhold(t, false);
  }
  // Rule 3: the tensor is used only after its copy in has finished — the
  // compute stream waits for its event.
  absl::Status st = TimedComputeWait(t.in);
  if (!st.ok()) {
    // The block holds garbage; the host copy is intact: back off the device.
    stats.Count(&SwapCounts::copy_errors);
    queue->Retire(t.in);
    t.in = kNoTicket;
    (void)FreeDeviceBlock(t, true);
    t.state = Residency::kOffDevice;
    record->AddEvent(PositionAfter(), MemoryEventKind::kSwapOut, t.record_id, true, t.size);
    return WithRule(Error(ErrorKind::kUnavailable,
                          absl::StrCat("swap-in of tensor ", residency.HandleOf(slot), " (", t.size,
                                       " bytes) failed: ", st.message(),
                                       "; its bytes stay on the host")),
                    "copy-failed");
  }
  const EventId done = queue->done_event(t.in);
  events->Ref(done);
  DropHost(t, done);
  queue->Retire(t.in);
  queue->Retire(t.out);
  t.in = kNoTicket;
  t.out = kNoTicket;
  t.state = Residency::kResident;
  t.reason = SwapReason::kNone;
  return Unhold(t, false);
}

absl::Status Runtime::State::EnsureResident(int32_t slot) {
  Slot& t = residency.slots[slot];
  switch (t.state) {
    case Residency::kResident:
      return absl::OkStatus();
    case Residency::kSwappingOut: {
      // The block is still there, but the op may write it while the copy
      // out reads it: the op waits for the copy (a policy's decision op is
      // the tensor's last use before the window, so this is rare). A failed
      // copy just means the tensor stays.
      if (FrameworkCopies(t)) return CallCopy(t, FrameworkCopy::kWait);
      absl::Status st = TimedComputeWait(t.out);
      if (!st.ok()) return CancelSwapOut(slot);
      return absl::OkStatus();
    }
    case Residency::kSwappingIn:
      return WaitIn(slot);
    case Residency::kOffDevice:
      if (t.reason == SwapReason::kRecompute) {
        // Dropped by a RECOMPUTE item and used before its swap-in anchor:
        // rematerialised on demand, counted as a passive swap-in.
        stats.Count(&SwapCounts::uses_while_off_device);
        stats.Count(&SwapCounts::passive_swap_ins);
        return Rematerialise(slot, /*demand=*/true);
      }
      // Off the device by a policy's decision and touched before its
      // swap-in: the policy failed here (a crash without a runtime to bring
      // it back). Algorithm 3's victims and seed 004's manual swap-outs come
      // back this way by design: passive swap-ins only.
      if (t.reason == SwapReason::kPolicy) {
        stats.Count(&SwapCounts::uses_while_off_device);
      }
      stats.Count(&SwapCounts::passive_swap_ins);
      SWAPPLAN_RETURN_IF_ERROR(StartSwapIn(slot, /*demand=*/true));
      return WaitIn(slot);
  }
  return absl::OkStatus();
}

}  // namespace swapplan::runtime
