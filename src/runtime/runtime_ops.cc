// Runtime: iterations, the per-op clock, policy triggers, the stage machine.
// See runtime.h.
#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/runtime_state.h"
#include "swapplan/runtime/host_backend.h"
#include "swapplan/runtime/runtime.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan::runtime {

namespace {

// RuntimeOptions::op_clock_ns, else the steady clock.
int64_t OpClockNs(const RuntimeOptions& o) {
  return o.op_clock_ns ? o.op_clock_ns() : HostBackend::NowNs();
}

}  // namespace

// ---------------------------------------------------------------------------
// Iterations.

absl::Status Runtime::IterationBegin() {
  State& s = *s_;
  if (s.closed) return CallOrder("iteration_begin: the swap environment is closed");
  if (s.in_iteration) return CallOrder("iteration_begin: the previous iteration has not ended");
  s.in_iteration = true;
  s.ordinal = -1;
  std::fill(std::begin(s.phase_count), std::end(s.phase_count), 0);
  s.optimizer_started = false;
  s.micro_batch = 0;
  s.micro_batch_has_backward = false;
  s.tokens.clear();
  s.fingerprint.Reset();
  s.first_divergent = -1;
  s.policy_stopped = false;
  s.stats.row = IterationStats{};
  s.stats.row.iteration = s.iteration;
  s.stats.row.stage = s.library->stage();
  s.stats.row.peak_bytes = s.residency.resident_bytes;
  if (s.staged_policy != -2) {
    s.user_policy = s.staged_policy;
    s.staged_policy = -2;
  }
  // The stage machine's policy is chosen at the first FORWARD op's end,
  // when the input signature is known (TakeInput); a loaded one runs now.
  s.input = InputSignature{};
  s.input_taken = false;
  s.pending_ops.clear();
  s.pending_slots.clear();
  s.token_phases.clear();
  s.stage_policy = -1;
  s.active = s.user_policy;
  s.choose_pending = s.user_policy < 0 && s.library->stage() != Stage::kWarmUp;
  s.stats.row.policy = s.active;
  s.stats.row.policy_planner =
      s.active >= 0 ? s.policies[s.active]->mp.policy.planner : std::string();
  // Only the slots the last iteration touched carry state to reset: the
  // boundary costs O(tensors used), not O(tensors alive).
  for (int32_t k : s.residency.touched) {
    Slot& t = s.residency.slots[k];
    t.last_use_op = -1;
    t.resident_since_op = -1;
    t.item = -1;
    s.residency.table[k] = RuntimeTensor{};
    if (t.live) s.residency.table.Describe(k, t.dtype, t.size, t.shape_hash);
  }
  s.residency.touched.clear();
  s.items.clear();
  s.late_releases.clear();
  s.due_late.clear();
  if (s.active >= 0) {
    LoadedPolicy& p = *s.policies[s.active];
    s.items.assign(p.mp.items.size(), ItemRun{});
    p.matcher->BeginIteration();
  }
  s.record->BeginIteration();
  s.iteration_start_ns = OpClockNs(s.options);
  s.op_start_ns = 0;
  return absl::OkStatus();
}

absl::Status Runtime::IterationEnd() {
  State& s = *s_;
  if (!s.in_iteration) return CallOrder("iteration_end: no iteration has begun");
  if (s.in_op) return CallOrder("iteration_end: the last op has not ended (op_end)");
  const int64_t now = OpClockNs(s.options);
  if (s.ordinal < 0) {
    // No op ran: no iteration (the tracker and the rows see none).
    s.record->EndIteration(0);
    s.in_iteration = false;
    return absl::OkStatus();
  }
  if (s.op_start_ns > 0) s.record->SetLastOpDuration(now - s.op_start_ns);
  absl::Status first;
  // Policy swap-outs whose release never came keep their blocks (they were
  // decided at ops of this iteration: touched slots).
  for (int32_t k : s.residency.touched) {
    Slot& t = s.residency.slots[k];
    if (t.live && t.state == Residency::kSwappingOut && t.reason == SwapReason::kPolicy) {
      absl::Status st = s.CancelSwapOut(k);
      if (!st.ok() && first.ok()) first = st;
    } else if (t.live && t.state == Residency::kResident && t.reason == SwapReason::kRecompute) {
      t.reason = SwapReason::kNone;  // its drop never came: it stays
    }
  }
  // Algorithm 3's persistent victims that no use brought back: back now,
  // so the next iteration (and the framework between iterations) finds the
  // resident set this one began with.
  for (int32_t k : s.persistent_victims) {
    Slot& t = s.residency.slots[k];
    if (!t.live || !t.persistent || t.reason != SwapReason::kPassive) continue;
    absl::Status st;
    if (t.state == Residency::kOffDevice) {
      s.stats.Count(&SwapCounts::passive_swap_ins);
      st = s.StartSwapIn(k, /*demand=*/true);
      if (st.ok()) st = s.WaitIn(k);
    } else if (t.state == Residency::kSwappingIn) {
      st = s.WaitIn(k);
    }
    if (!st.ok() && first.ok()) first = st;
  }
  s.persistent_victims.clear();
  for (const ItemRun& run : s.items) {
    if (!run.matched) {
      s.stats.Count(&SwapCounts::items_missed);
    }
  }
  const int64_t wall = now - s.iteration_start_ns;
  s.record->EndIteration(wall);
  s.stats.row.ops = s.ordinal + 1;
  s.stats.row.wall_ns = wall;
  s.stats.row.first_divergent_op = s.first_divergent;
  s.stats.row.input_signature_hash = s.input.hash;
  s.stats.row.input_signature_bytes = s.input.bytes;
  if (s.active >= 0) {
    const PolicyFingerprint& fp = s.policies[s.active]->mp.policy.fingerprint;
    s.stats.row.fingerprint_matched = fp.op_sequence_hash == s.fingerprint.value() &&
                                fp.iteration_ops == s.fingerprint.ops();
  }
  absl::Status st = s.EndOfIterationStages();
  if (!st.ok() && first.ok()) first = st;
  s.stats.rows.push_back(s.stats.row);
  s.in_iteration = false;
  ++s.iteration;
  return first;
}

TraceMetadata Runtime::State::RecordMetadata() const {
  TraceMetadata md;
  md.device_name = absl::StrCat("swapplan-runtime:", backend->name());
  md.device_memory_bytes = budget;
  md.model_layers = options.model_layers;
  md.h2d_bandwidth_bytes_per_s = options.device.h2d_bandwidth_bytes_per_s;
  md.d2h_bandwidth_bytes_per_s = options.device.d2h_bandwidth_bytes_per_s;
  md.recorder = "swapplan_runtime";
  md.recorder_version = "1";
  // Sorted by key, as TraceMetadata requires (readers sort what they read).
  // The framework declared that its recompute callback restores the RNG
  // state (FrameworkCallbacks::rng_state_restorable): random ops'
  // outputs are recomputable (trace/recompute.h).
  if (callbacks.recompute && callbacks.rng_state_restorable) {
    md.attributes.emplace_back("rng_state_restorable", "true");
  }
  md.attributes.emplace_back("runtime.copy_latency_ns",
                             absl::StrCat(options.device.copy_latency_ns));
  md.attributes.emplace_back("runtime.matcher", std::string(MatcherKindName(options.matcher)));
  return md;
}

// The stage machine at the end of an iteration (runtime.h, "Stages"): the
// policy library's, which the replay (eval/replay.cc) runs too.
absl::Status Runtime::State::EndOfIterationStages() {
  // A policy the stage machine chose missed when an allocation did not fit
  // (Algorithm 3 ran, resolved or not) or one of its tensors was used while
  // off device; repeated misses in Stable send the tracker back to GenPolicy
  // (StageTrackerOptions::max_policy_misses), which plans on this record.
  EndedIteration end;
  end.tokens = tokens;
  end.input = input;
  end.policy = user_policy < 0 ? stage_policy : -1;
  end.policy_of_other_input = stats.row.policy_of_other_input;
  const SwapCounts& counts = stats.row.counts;
  end.missed = end.policy >= 0 &&
               (counts.allocation_failures > 0 || counts.uses_while_off_device > 0);
  end.run.time_ns = end.run.clock_ns = stats.row.wall_ns;
  end.run.allocation_failures = counts.allocation_failures;
  end.run.trouble = counts.ooms + counts.uses_while_off_device;
  end.can_plan = provider && user_policy < 0 && staged_policy < 0;
  const int32_t last = record->num_iterations() - 1;
  auto plan = [&](LibraryKey& key) -> absl::StatusOr<PlanOutcome> {
    return PlanForKey(last, key);
  };
  SWAPPLAN_ASSIGN_OR_RETURN(const StageDecision d, library->EndIteration(end, plan));
  stats.row.sequence_stable = d.sequence_stable;
  stats.row.next_stage = d.stage;
  stats.row.stage_change = d.change;
  stats.row.policy_misses = d.policy_misses;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Ops.

void Runtime::State::NormalizePhase(Phase* phase) {
  // As the trace format requires: no FORWARD/BACKWARD op after the
  // optimizer began (OTHER), a FORWARD after a BACKWARD opens a new
  // micro-batch.
  switch (*phase) {
    case Phase::kOptimizer:
      optimizer_started = true;
      return;
    case Phase::kForward:
    case Phase::kBackward:
      if (optimizer_started) {
        *phase = Phase::kOther;
        return;
      }
      if (*phase == Phase::kBackward) {
        micro_batch_has_backward = true;
      } else if (micro_batch_has_backward) {
        ++micro_batch;
        micro_batch_has_backward = false;
      }
      return;
    case Phase::kOther:
      return;
  }
}

bool Runtime::State::AnchorPassed(const OpAnchor& a) const {
  if (options.matcher == MatcherKind::kNaive) return a.ordinal < ordinal;
  const int p = static_cast<int>(a.phase);
  if (a.phase == op_phase && a.phase_ordinal == op_phase_ordinal) return false;
  return phase_count[p] > a.phase_ordinal;
}

absl::Status Runtime::OpBegin(int32_t op, Phase phase, absl::Span<const TensorHandle> inputs) {
  State& s = *s_;
  if (!s.in_iteration) return CallOrder("op_begin: no iteration has begun (iteration_begin)");
  if (s.in_op) return CallOrder("op_begin: the previous op has not ended (op_end)");
  if (op < 0 || op >= static_cast<int32_t>(s.op_names.size())) {
    return absl::InvalidArgumentError(absl::StrCat("op_begin: op id ", op, " was not interned"));
  }
  if (static_cast<uint8_t>(phase) >= kNumPhases) {
    return absl::InvalidArgumentError(
        absl::StrCat("op_begin: phase ", static_cast<int>(phase), " is not a phase"));
  }
  // Resolve the handles before the clock moves: a bad handle leaves no trace.
  s.op_slots.clear();
  s.op_rec.clear();
  for (TensorHandle h : inputs) {
    SWAPPLAN_ASSIGN_OR_RETURN(int32_t slot, s.residency.SlotOf(h));
    s.op_slots.push_back(slot);
    s.op_rec.push_back(s.residency.slots[slot].record_id);
  }
  s.op_inputs = static_cast<int32_t>(s.op_slots.size());
  const int64_t now = OpClockNs(s.options);
  if (s.op_start_ns > 0) s.record->SetLastOpDuration(now - s.op_start_ns);
  s.op_start_ns = now;
  s.NormalizePhase(&phase);
  s.in_op = true;
  ++s.ordinal;
  s.op_id = op;
  s.op_phase = phase;
  s.op_phase_ordinal = s.phase_count[static_cast<int>(phase)]++;
  s.tokens.push_back(op);
  s.token_phases.push_back(phase);
  s.fingerprint.AddOp(s.op_name_hash[op], phase);
  if (s.active >= 0 && s.first_divergent < 0) {
    LoadedPolicy& p = *s.policies[s.active];
    const std::vector<uint32_t>& seq = p.mp.policy.runtime.op_sequence;
    if (!seq.empty()) {
      const NameId name = s.PolicyName(p, op);
      const bool same = s.ordinal < static_cast<int32_t>(seq.size()) && name >= 0 &&
                        seq[s.ordinal] == ((static_cast<uint32_t>(name) << 2) |
                                           static_cast<uint32_t>(phase));
      if (!same) {
        s.first_divergent = s.ordinal;
        if (s.options.strict_fingerprint) s.policy_stopped = true;
      }
    }
  }
  for (int32_t slot : s.op_slots) {
    s.residency.slots[slot].last_use_op = s.ordinal;
    s.Touch(slot);
  }
  absl::Status st = s.queue->Pump();
  if (st.ok()) st = s.FireSwapIns(phase, s.op_phase_ordinal);
  for (int32_t k = 0; st.ok() && k < s.op_inputs; ++k) st = s.EnsureResident(s.op_slots[k]);
  if (!st.ok()) {
    // The op does not run; it still counts on the clock (and in the record)
    // so that positions stay consistent.
    (void)s.CloseOp({}, /*aborted=*/true);
    return st;
  }
  return absl::OkStatus();
}

absl::Status Runtime::OpReserve(int64_t bytes) {
  State& s = *s_;
  if (!s.in_op) return CallOrder("op_reserve: no op has begun (op_begin)");
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("op_reserve: ", bytes, " bytes"));
  }
  if (bytes == 0) return absl::OkStatus();
  absl::Status st = s.Reserve(bytes, /*owned=*/false, nullptr, -1);
  if (st.ok()) {
    s.Account(-bytes);  // room made; op_end's registrations take the bytes
    return st;
  }
  if (s.options.overcommit_on_oom && RuleOf(st) == "out-of-memory") {
    // The registration after the kernel takes the bytes over the budget and
    // counts the OOM: counted once, there.
    s.stats.Count(&SwapCounts::ooms, -1);
    return absl::OkStatus();
  }
  return st;
}

absl::Status Runtime::OpEnd(absl::Span<const TensorHandle> outputs) {
  State& s = *s_;
  if (!s.in_op) return CallOrder("op_end: no op has begun (op_begin)");
  absl::Status first;
  const size_t before = s.op_slots.size();
  for (TensorHandle h : outputs) {
    absl::StatusOr<int32_t> slot = s.residency.SlotOf(h);
    if (!slot.ok()) {
      if (first.ok()) first = slot.status();
      continue;
    }
    Slot& t = s.residency.slots[*slot];
    t.last_use_op = s.ordinal;
    s.Touch(*slot);
    s.op_slots.push_back(*slot);
    s.op_rec.push_back(t.record_id);
    absl::Status st;
    if (t.state == Residency::kSwappingOut) {
      st = s.CancelSwapOut(*slot);  // written: the host copy is stale
    } else if (t.state == Residency::kResident && t.reason == SwapReason::kRecompute) {
      // Written after its decision: re-running its producer would not give
      // this value any more. It keeps its block.
      t.reason = SwapReason::kNone;
      s.stats.Count(&SwapCounts::cancelled_swap_outs);
    } else if (t.state != Residency::kResident) {
      st = s.EnsureResident(*slot);
    }
    if (!st.ok() && first.ok()) first = st;
  }
  absl::Status st = s.CloseOp(absl::MakeConstSpan(s.op_slots).subspan(before), !first.ok());
  return first.ok() ? st : first;
}

void Runtime::State::TakeInput() {
  // varying/policy_set.h: the op's tensors, inputs then outputs.
  InputSignature sig;
  for (int32_t slot : op_slots) {
    const Slot& t = residency.slots[slot];
    sig.Add(t.dtype, t.shape, t.size);
  }
  input = sig;
  if (op_phase != Phase::kForward) return;  // the first op's, until a FORWARD op
  input_taken = true;
  if (!choose_pending) return;
  choose_pending = false;
  const PolicyLibrary::Choice c = library->Choose(input);
  if (c.policy >= 0) {
    stats.row.policy_of_other_input = !c.exact;
    if (!c.exact) ++stats.policy_of_other_input;
    Activate(c.policy);
  }
  pending_ops.clear();
  pending_slots.clear();
}

void Runtime::State::Activate(int32_t index) {
  stage_policy = index;
  active = index;
  stats.row.policy = index;
  LoadedPolicy& p = *policies[index];
  stats.row.policy_planner = p.mp.policy.planner;
  items.assign(p.mp.items.size(), ItemRun{});
  p.matcher->BeginIteration();
  // The ops already run (this one included): the op-sequence check, and
  // the matcher's keys of the ops before this one (their items are missed:
  // decided before the policy was chosen).
  const std::vector<uint32_t>& seq = p.mp.policy.runtime.op_sequence;
  for (int32_t k = 0; !seq.empty() && k <= ordinal && first_divergent < 0; ++k) {
    const NameId name = PolicyName(p, tokens[k]);
    const bool same = k < static_cast<int32_t>(seq.size()) && name >= 0 &&
                      seq[k] == ((static_cast<uint32_t>(name) << 2) |
                                 static_cast<uint32_t>(token_phases[k]));
    if (!same) {
      first_divergent = k;
      if (options.strict_fingerprint) policy_stopped = true;
    }
  }
  for (const PendingOp& o : pending_ops) {
    decisions.clear();
    p.matcher->OnOp(PolicyName(p, o.op), o.phase,
                    absl::MakeConstSpan(pending_slots).subspan(o.begin, o.end - o.begin),
                    residency.table, &decisions);
  }
  decisions.clear();
}

absl::Status Runtime::State::CloseOp(absl::Span<const int32_t> outputs, bool aborted) {
  (void)outputs;
  absl::Status first;
  if (!input_taken && (op_phase == Phase::kForward || ordinal == 0)) TakeInput();
  if (choose_pending) {
    // Not chosen yet (no FORWARD op so far): the chosen policy's matcher
    // sees this op first.
    pending_ops.push_back({op_id, op_phase, static_cast<int32_t>(pending_slots.size()),
                           static_cast<int32_t>(pending_slots.size() + op_slots.size())});
    pending_slots.insert(pending_slots.end(), op_slots.begin(), op_slots.end());
  }
  if (active >= 0) {
    LoadedPolicy& p = *policies[active];
    const NameId name = PolicyName(p, op_id);
    decisions.clear();
    p.matcher->OnOp(name, op_phase, op_slots, residency.table, &decisions);
    if (!aborted && !policy_stopped) first = ApplyDecisions();
    decisions.clear();
    // Releases scheduled after the previous op, then those due at this one.
    if (first.ok() && !aborted) {
      for (int32_t k : due_late) {
        ItemRun& run = items[k];
        if (run.released || run.slot < 0) continue;
        const Slot& t = residency.slots[run.slot];
        if (t.generation != run.generation || !ReleasePending(t) || t.item != k) continue;
        first = ReleaseItem(run.slot);
        run.released = true;
        if (!first.ok()) break;
      }
      due_late.swap(late_releases);
      late_releases.clear();
      if (first.ok()) first = FireReleases(op_phase, op_phase_ordinal);
    }
  }
  // The record: inputs then outputs, each tensor once per list.
  RecordOp rop;
  rop.name = op_id;
  rop.phase = op_phase;
  rop.micro_batch =
      op_phase == Phase::kForward || op_phase == Phase::kBackward ? micro_batch : -1;
  for (size_t k = 0; k < op_rec.size(); ++k) {
    std::vector<int64_t>& list = static_cast<int32_t>(k) < op_inputs ? rop.inputs : rop.outputs;
    if (std::find(list.begin(), list.end(), op_rec[k]) == list.end()) list.push_back(op_rec[k]);
  }
  rop.bytes_in_use = residency.resident_bytes;
  record->AddOp(std::move(rop));
  in_op = false;
  op_slots.clear();
  op_rec.clear();
  op_inputs = 0;
  return first;
}

absl::Status Runtime::State::ApplyDecisions() {
  for (const MatchDecision& d : decisions) {
    ItemRun& run = items[d.item];
    Slot& t = residency.slots[d.slot];
    stats.Count(&SwapCounts::items_matched);
    run.slot = d.slot;
    run.generation = t.generation;
    run.matched = true;
    // Persistent tensors (parameters, storages the framework cannot free)
    // never leave, whatever a policy matched.
    if (t.state != Residency::kResident || t.size <= 0 || t.item >= 0 || t.persistent) continue;
    t.item = d.item;
    const MatchableItem& it = policies[active]->mp.items[d.item];
    if (policies[active]->mp.policy.items[it.item].action == ItemAction::kRecompute) {
      // Decided now, while the bytes are still there: a tensor the
      // framework cannot recompute is swapped instead.
      if (CanRecompute(t)) {
        t.reason = SwapReason::kRecompute;
        if (AnchorPassed(it.release)) late_releases.push_back(d.item);
        continue;
      }
      stats.Count(&SwapCounts::recompute_fallbacks_to_swap);
    }
    SWAPPLAN_RETURN_IF_ERROR(StartSwapOut(d.slot, SwapReason::kPolicy));
    if (AnchorPassed(it.release)) late_releases.push_back(d.item);
  }
  return absl::OkStatus();
}

absl::Status Runtime::State::FireReleases(Phase phase, int32_t phase_ordinal) {
  const LoadedPolicy& p = *policies[active];
  const bool naive = options.matcher == MatcherKind::kNaive;
  const int ph = naive ? 0 : static_cast<int>(phase);
  const int32_t at = naive ? ordinal : phase_ordinal;
  if (at >= static_cast<int32_t>(p.release_at[ph].size())) return absl::OkStatus();
  for (int32_t k : p.release_at[ph][at]) {
    ItemRun& run = items[k];
    if (run.released || run.slot < 0) continue;
    Slot& t = residency.slots[run.slot];
    if (t.generation != run.generation || t.item != k || !ReleasePending(t)) continue;
    run.released = true;
    SWAPPLAN_RETURN_IF_ERROR(ReleaseItem(run.slot));
  }
  return absl::OkStatus();
}

absl::Status Runtime::State::FireSwapIns(Phase phase, int32_t phase_ordinal) {
  if (active < 0 || policy_stopped) return absl::OkStatus();
  const LoadedPolicy& p = *policies[active];
  const bool naive = options.matcher == MatcherKind::kNaive;
  const int ph = naive ? 0 : static_cast<int>(phase);
  const int32_t at = naive ? ordinal : phase_ordinal;
  if (at >= static_cast<int32_t>(p.swap_in_at[ph].size())) return absl::OkStatus();
  for (int32_t k : p.swap_in_at[ph][at]) {
    ItemRun& run = items[k];
    if (run.swapped_in || run.slot < 0) continue;
    Slot& t = residency.slots[run.slot];
    if (t.generation != run.generation || t.item != k) continue;
    run.swapped_in = true;
    if (t.state == Residency::kResident && t.reason == SwapReason::kRecompute) {
      // Its drop has not come: it never left; keep it.
      std::erase(late_releases, k);
      std::erase(due_late, k);
      run.released = true;
      t.reason = SwapReason::kNone;
    } else if (t.state == Residency::kOffDevice && t.reason == SwapReason::kRecompute) {
      SWAPPLAN_RETURN_IF_ERROR(Rematerialise(run.slot, /*demand=*/false));
      stats.Count(&SwapCounts::policy_recomputes);
    } else if (t.state == Residency::kSwappingOut) {
      // Its release has not come: it never left; keep it.
      std::erase(late_releases, k);
      std::erase(due_late, k);
      run.released = true;
      SWAPPLAN_RETURN_IF_ERROR(CancelSwapOut(run.slot));
    } else if (t.state == Residency::kOffDevice) {
      SWAPPLAN_RETURN_IF_ERROR(StartSwapIn(run.slot, /*demand=*/false));
      stats.Count(&SwapCounts::policy_swap_ins);
    }
  }
  return absl::OkStatus();
}

}  // namespace swapplan::runtime
