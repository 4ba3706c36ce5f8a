// Evaluation simulator: setup, policy resolution and validation. The
// one-pass replay itself is in simulator_run.cc.
#include "swapplan/sim/simulator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/simulator_internal.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/status_macros.h"

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
  return absl::OkStatus();
}

int64_t SimulatorOptions::memory_limit_bytes() const {
  if (device.capacity_bytes == 0 || device.capacity_bytes == kUnlimitedCapacityBytes) {
    return kUnlimitedBytes;
  }
  return device.capacity_bytes - device.reserve_bytes;
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

absl::StatusOr<Simulator> Simulator::Create(const Trace& trace, int32_t iteration,
                                            const SimulatorOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  SWAPPLAN_ASSIGN_OR_RETURN(
      OpDurations durations,
      ComputeOpDurations(trace, iteration, OpTimeModel::kAuto, 0, options.device.compute_time_scale));
  Simulator s;
  s.trace_ = &trace;
  s.iteration_ = iteration;
  s.options_ = options;
  s.durations_ = std::move(durations);
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  s.n_ = n;
  s.fingerprint_ = ComputeFingerprint(trace, iteration);
  s.alloc_at_.assign(n, 0);
  s.free_after_.assign(n, 0);
  for (TensorId t = 0; t < trace.num_tensors() && s.dense_ids_; ++t) {
    s.dense_ids_ = trace.tensor(t).trace_id == static_cast<uint64_t>(t);
  }
  if (s.dense_ids_) s.slot_of_tensor_.assign(trace.num_tensors(), -1);
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (!lt.occupies_device()) continue;
    if (lt.free_op < iter.op_begin || lt.alloc_op >= iter.op_end) continue;
    IterTensor it;
    it.id = t;
    it.alloc = lt.alloc_op < iter.op_begin ? -1 : lt.alloc_op - iter.op_begin;
    it.free = lt.free_op >= iter.op_end ? n : lt.free_op - iter.op_begin;
    const int64_t size = trace.tensor(t).size_bytes;
    if (it.alloc < 0) {
      s.initial_bytes_ += size;
    } else {
      s.alloc_at_[it.alloc] += size;
    }
    if (it.free < n) s.free_after_[it.free] += size;
    if (s.dense_ids_) {
      s.slot_of_tensor_[t] = static_cast<int32_t>(s.tensors_.size());
    } else {
      s.by_trace_id_.emplace(trace.tensor(t).trace_id, static_cast<int32_t>(s.tensors_.size()));
    }
    s.tensors_.push_back(it);
  }
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

namespace {

std::string Hex(uint64_t v) { return absl::StrFormat("0x%016x", v); }

// A clean item frees its block without a copy, so the host must hold the
// bytes: the tensor came back from the host — the first use of an earlier
// window of the same tensor, or of its wrapping window (on the host when
// the iteration starts) — and no op wrote it (had it among its outputs)
// from that use through swap_out_op. O(items + uses of their tensors).
absl::Status CheckCleanItems(const Trace& trace, const IterationInfo& iter, const Policy& policy,
                             const internal_sim::Prepared& pr,
                             const std::vector<TensorId>& item_tensor) {
  const size_t ni = pr.items.size();
  bool any = false;
  for (const internal_sim::Item& r : pr.items) any = any || r.clean;
  if (!any) return absl::OkStatus();
  absl::flat_hash_map<int32_t, std::vector<int32_t>> by_slot;
  for (size_t k = 0; k < ni; ++k) by_slot[pr.items[k].slot].push_back(static_cast<int32_t>(k));
  auto pos = [&](int32_t local) { return pr.pos.empty() ? local : pr.pos[local]; };
  for (size_t k = 0; k < ni; ++k) {
    const internal_sim::Item& r = pr.items[k];
    if (!r.clean) continue;
    const PolicyItem& it = policy.items[k];
    // The latest return from the host at or before the swap-out.
    int32_t arrival = -1;
    // (A window's first use is after its own swap-out unless it wraps.)
    for (int32_t j : by_slot[r.slot]) {
      if (pr.items[j].use <= r.out) arrival = std::max(arrival, pr.items[j].use);
    }
    if (arrival < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy item ", k, " (tensor ", it.tensor_id,
          "): marked clean but the host holds no copy (the tensor was not brought back from "
          "the host before its swap-out)"));
    }
    const TensorId t = item_tensor[k];
    absl::Span<const OpIndex> u = trace.tensor_uses(t);
    for (auto x = std::lower_bound(u.begin(), u.end(), iter.op_begin);
         x != u.end() && *x < iter.op_end; ++x) {
      const int32_t local = *x - iter.op_begin;
      const int32_t p = pos(local);
      if (p < arrival || p > r.out) continue;
      absl::Span<const TensorId> outs = trace.outputs(*x);
      if (std::find(outs.begin(), outs.end(), t) != outs.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "policy item ", k, " (tensor ", it.tensor_id, "): marked clean but op ", local, " (",
            trace.op_name_at(*x), ") writes it after it came back from the host"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<internal_sim::Prepared> Simulator::Prepare(
    const Policy& policy, absl::Span<const int32_t> schedule) const {
  const Trace& trace = *trace_;
  const IterationInfo& iter = trace.iteration(iteration_);
  if (!(policy.fingerprint == fingerprint_)) {
    return absl::FailedPreconditionError(
        absl::StrCat("policy fingerprint (", Hex(policy.fingerprint.op_sequence_hash), ", ",
                     policy.fingerprint.iteration_ops, " ops) does not match iteration ",
                     iteration_, " of ", trace.source(), " (", Hex(fingerprint_.op_sequence_hash),
                     ", ", fingerprint_.iteration_ops, " ops) [fingerprint-mismatch]"));
  }
  internal_sim::Prepared pr;
  const int32_t n = n_;
  // --- schedule ---------------------------------------------------------
  const bool identity = schedule.empty();
  if (!identity) {
    if (static_cast<int32_t>(schedule.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("schedule has ", schedule.size(),
                                                     " entries; iteration ", iteration_, " has ", n,
                                                     " ops"));
    }
    pr.pos.assign(n, -1);
    for (int32_t p = 0; p < n; ++p) {
      const int32_t op = schedule[p];
      if (op < 0 || op >= n || pr.pos[op] != -1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "schedule is not a permutation of the iteration's ops: entry ", p, " is ", op));
      }
      pr.pos[op] = p;
    }
  }
  auto pos = [&](int32_t op) { return identity ? op : pr.pos[op]; };
  auto uses_in_iteration = [&](TensorId t) {
    absl::Span<const OpIndex> u = trace.tensor_uses(t);
    auto lo = std::lower_bound(u.begin(), u.end(), iter.op_begin);
    auto hi = std::lower_bound(lo, u.end(), iter.op_end);
    return u.subspan(lo - u.begin(), hi - lo);
  };
  // --- memory deltas and tensor positions ---------------------------------
  const size_t nt = tensors_.size();
  if (identity) {
    pr.alloc_at = &alloc_at_;
    pr.free_after = &free_after_;
  } else {
    pr.own_alloc_at.assign(n, 0);
    pr.own_free_after.assign(n, 0);
    pr.tensor_alloc.resize(nt);
    pr.tensor_free.resize(nt);
    for (size_t i = 0; i < nt; ++i) {
      const IterTensor& t = tensors_[i];
      int32_t a = t.alloc < 0 ? -1 : pos(t.alloc);
      int32_t f = t.free >= n ? n : pos(t.free);
      for (OpIndex g : uses_in_iteration(t.id)) {
        const int32_t p = pos(g - iter.op_begin);
        if (a >= 0) a = std::min(a, p);
        if (f < n) f = std::max(f, p);
      }
      pr.tensor_alloc[i] = a;
      pr.tensor_free[i] = f;
      const int64_t size = trace.tensor(t.id).size_bytes;
      if (a >= 0) pr.own_alloc_at[a] += size;
      if (f < n) pr.own_free_after[f] += size;
    }
  }
  pr.initial_bytes = initial_bytes_;
  // --- items --------------------------------------------------------------
  const size_t ni = policy.items.size();
  pr.items.resize(ni);
  std::vector<TensorId> item_tensor(ni, kNoTensor);
  bool any_swap = false;
  for (size_t k = 0; k < ni; ++k) {
    const PolicyItem& it = policy.items[k];
    auto fail = [&](const std::string& what) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy item ", k, " (tensor ", it.tensor_id, "): ", what));
    };
    auto op_text = [&](int32_t local) {
      return absl::StrCat("op ", local, " (", trace.op_name_at(iter.op_begin + local), ")");
    };
    int32_t ti = -1;
    if (dense_ids_) {
      if (it.tensor_id < slot_of_tensor_.size()) ti = slot_of_tensor_[it.tensor_id];
    } else if (auto found = by_trace_id_.find(it.tensor_id); found != by_trace_id_.end()) {
      ti = found->second;
    }
    if (ti < 0) {
      return fail(absl::StrCat("no such tensor occupies the device during iteration ", iteration_,
                               " of ", trace.source()));
    }
    const IterTensor& t = tensors_[ti];
    item_tensor[k] = t.id;
    const int64_t size = trace.tensor(t.id).size_bytes;
    if (it.size_bytes != size) {
      return fail(absl::StrCat("size_bytes ", it.size_bytes, " differs from the trace's ", size));
    }
    for (int32_t op : {it.swap_out_op, it.release_op, it.swap_in_op, it.first_use_op}) {
      if (op < 0 || op >= n) {
        return fail(absl::StrCat("op ", op, " is outside the iteration (", n, " ops)"));
      }
    }
    if (it.action != ItemAction::kSwap && it.action != ItemAction::kRecompute) {
      return fail(absl::StrCat("unknown action ", static_cast<int>(it.action)));
    }
    if (it.recompute_ns < 0 || (it.action == ItemAction::kSwap && it.recompute_ns != 0)) {
      return fail(absl::StrCat("recompute_ns is ", it.recompute_ns,
                               "; must be >= 0, and 0 for a SWAP item"));
    }
    internal_sim::Item& r = pr.items[k];
    r.size = size;
    r.swap = it.action == ItemAction::kSwap;
    r.recompute_ns = it.recompute_ns;
    r.wraps = it.wraps;
    r.clean = it.clean && r.swap;
    r.out = pos(it.swap_out_op);
    r.release = pos(it.release_op);
    r.in = pos(it.swap_in_op);
    r.use = pos(it.first_use_op);
    const int32_t a = identity ? t.alloc : pr.tensor_alloc[ti];
    const int32_t f = identity ? t.free : pr.tensor_free[ti];
    if (r.wraps) {
      if (!r.swap) return fail("a wrapping item must be a SWAP item");
      if (!(r.in <= r.use && r.use <= r.out && r.out <= r.release)) {
        return fail(absl::StrCat("under the schedule the ops run at positions ", r.in, ", ",
                                 r.use, ", ", r.out, ", ", r.release,
                                 "; a wrapping item needs swap_in <= first_use <= swap_out <= "
                                 "release"));
      }
      if (a >= 0 || f < n) {
        return fail("wraps around the iteration but the tensor is not resident before and after "
                    "it");
      }
      for (OpIndex g : uses_in_iteration(t.id)) {
        const int32_t local = g - iter.op_begin;
        const int32_t p = pos(local);
        if (p < r.use || p > r.out) {
          return fail(absl::StrCat("used at ", op_text(local),
                                   " while off device (on the host until ",
                                   op_text(it.first_use_op), " and again after ",
                                   op_text(it.swap_out_op), ")"));
        }
      }
      pr.initial_bytes -= size;
      r.slot = ti;
      any_swap = true;
      continue;
    }
    if (!(r.out <= r.release && r.release < r.in && r.in <= r.use)) {
      return fail(absl::StrCat("under the schedule the ops run at positions ", r.out, ", ",
                               r.release, ", ", r.in, ", ", r.use,
                               "; need swap_out <= release < swap_in <= first_use"));
    }
    if (a > r.out) {
      return fail(absl::StrCat("not resident at swap_out_op ", op_text(it.swap_out_op),
                               ": allocated at ", op_text(identity ? a : schedule[a])));
    }
    if (f < r.use) {
      return fail(absl::StrCat("freed after ", op_text(identity ? f : schedule[f]),
                               ", before first_use_op ", op_text(it.first_use_op)));
    }
    for (OpIndex g : uses_in_iteration(t.id)) {
      const int32_t local = g - iter.op_begin;
      const int32_t p = pos(local);
      if (p > r.out && p < r.use) {
        return fail(absl::StrCat("used at ", op_text(local),
                                 " while off device (swapped out after ", op_text(it.swap_out_op),
                                 ", back for ", op_text(it.first_use_op), ")"));
      }
    }
    r.slot = ti;
    any_swap = any_swap || r.swap;
  }
  // --- bandwidths -----------------------------------------------------------
  auto pick = [](double opt, double meta, double pol) {
    return opt > 0 ? opt : meta > 0 ? meta : pol;
  };
  pr.h2d_bw = pick(options_.device.h2d_bandwidth_bytes_per_s,
                   trace.metadata().h2d_bandwidth_bytes_per_s,
                   policy.device.h2d_bandwidth_bytes_per_s);
  pr.d2h_bw = pick(options_.device.d2h_bandwidth_bytes_per_s,
                   trace.metadata().d2h_bandwidth_bytes_per_s,
                   policy.device.d2h_bandwidth_bytes_per_s);
  if (any_swap && (!(pr.h2d_bw > 0) || !(pr.d2h_bw > 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("the policy swaps tensors but no ", !(pr.h2d_bw > 0) ? "h2d" : "d2h",
                     " bandwidth is known: none given, none in the metadata of ", trace.source(),
                     ", none in the policy"));
  }
  for (internal_sim::Item& r : pr.items) {
    if (!r.swap) continue;
    r.out_ns = TransferNs(r.size, pr.d2h_bw, options_.device.copy_latency_ns);
    r.in_ns = TransferNs(r.size, pr.h2d_bw, options_.device.copy_latency_ns);
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
    // Items of one tensor may not overlap: walking swap-outs in position
    // order, each must start at or after the previous window's first use.
    // A wrapping item's window starts the iteration (up to its first use)
    // and ends it (from its swap-out).
    std::vector<int32_t> window_end(tensors_.size(), -1), window_item(tensors_.size(), -1);
    for (size_t k = 0; k < ni; ++k) {
      const internal_sim::Item& r = pr.items[k];
      if (!r.wraps) continue;
      if (window_item[r.slot] >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "policy item ", k, " (tensor ", policy.items[k].tensor_id,
            "): a second wrapping item of the same tensor (policy item ", window_item[r.slot],
            ")"));
      }
      window_end[r.slot] = r.use;
      window_item[r.slot] = static_cast<int32_t>(k);
    }
    for (int32_t p = 0; p < n; ++p) {
      for (int32_t k : pr.by_out.at(p)) {
        const internal_sim::Item& r = pr.items[k];
        if (window_end[r.slot] > p) {
          const PolicyItem& it = policy.items[k];
          const int32_t prev = window_item[r.slot];
          return absl::InvalidArgumentError(absl::StrCat(
              "policy item ", k, " (tensor ", it.tensor_id, "): overlaps policy item ", prev,
              " of the same tensor (its window ends at first_use_op ",
              policy.items[prev].first_use_op, ", after swap_out_op ", it.swap_out_op, ")"));
        }
        window_end[r.slot] = r.wraps ? n : r.use;
        window_item[r.slot] = k;
      }
    }
    SWAPPLAN_RETURN_IF_ERROR(CheckCleanItems(trace, iter, policy, pr, item_tensor));
  }
  if (options_.model_pool && !policy.pool.empty()) {
    SWAPPLAN_RETURN_IF_ERROR(PreparePool(policy, &pr));
  }
  if (identity) {
    pr.ideal_time_ns = ideal_time_ns_;
  } else {
    pr.ideal_time_ns = internal_sim::IdealTime(durations_.duration_ns, schedule, options_);
  }
  return pr;
}

absl::StatusOr<SimulationResult> Simulator::Run(const Policy& policy,
                                                absl::Span<const int32_t> schedule) const {
  if (schedule.empty() && !policy.schedule.empty()) schedule = policy.schedule;
  SWAPPLAN_ASSIGN_OR_RETURN(internal_sim::Prepared pr, Prepare(policy, schedule));
  return internal_sim::Replay(*this, pr, policy, schedule);
}

absl::StatusOr<SimulationResult> Simulate(const Trace& trace, const Policy& policy,
                                          const SimulatorOptions& options) {
  SWAPPLAN_RETURN_IF_ERROR(CheckFingerprint(policy, trace));
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim,
                            Simulator::Create(trace, policy.fingerprint.iteration, options));
  return sim.Run(policy);
}

}  // namespace swapplan
