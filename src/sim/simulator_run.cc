// Evaluation simulator: the one-pass replay. See simulator.h for the model;
// the comments below name the step of the model each block implements.
//
// Per schedule position p (op = schedule[p]), in program order:
//
//   host       t0 = max(h[p-1], end[p-D]);  h[p] = t0 + dispatch (+ queries)
//              naive: release pending blocks whose copy ended by h[p]
//              allocations of p (tensors, swap-in / recompute blocks) -> OOM?
//   compute    reach = max(end[p-1], h[p])
//   h2d        copies triggered at p: start = max(reach, own d2h end, stream free)
//   compute    recompute R; start = max(reach + R, waited copies); end = start + dur
//   d2h        copies after p: start = max(end, stream free)
//   memory     frees after p; custom: items released after p
//   pool       (policies with a size-class pool) objects taken at the
//              dispatch, given back with the frees and releases (pool.cc)
//
// Every quantity depends only on earlier ones in this order, so one pass is
// exact. O(ops + items).
#include <algorithm>

#include "sim/oom_handler.h"
#include "sim/simulator_internal.h"

namespace swapplan::internal_sim {

SimulationResult Replay(const Simulator& sim, const Prepared& pr, const Policy& policy,
                        absl::Span<const int32_t> schedule) {
  const SimulatorOptions& o = sim.options();
  const Trace& trace = sim.trace();
  const IterationInfo& iter = trace.iteration(sim.iteration());
  const std::vector<int64_t>& dur = sim.durations().duration_ns;
  const int32_t n = sim.num_ops();
  const bool naive = o.record_stream == RecordStreamMode::kNaive;
  const int64_t cap = o.memory_limit_bytes();
  const absl::Span<const int64_t> alloc_at = pr.resolved.alloc_at;
  const absl::Span<const int64_t> free_after = pr.resolved.free_after;
  const std::vector<Item>& items = pr.items;
  const size_t ni = items.size();

  SimulationResult r;
  r.iteration = sim.iteration();
  r.num_ops = n;
  r.durations = sim.durations().source;
  r.record_stream = o.record_stream;
  r.device = pr.device;
  r.memory_limit_bytes = cap;
  r.ideal_time_ns = pr.ideal_time_ns;
  if (o.record_timeline) {
    r.timeline.reserve(static_cast<size_t>(n) * 2 + ni * 2);
    r.bytes_in_use.assign(n, 0);
  }

  // End times of the last D ops (the launch-queue bound on the host).
  const int32_t ring_size = std::min<int32_t>(o.launch_queue_depth, std::max(n, 1));
  std::vector<int64_t> ring(ring_size, 0);
  std::vector<int64_t> d2h_end(ni, 0), h2d_end(ni, 0);
  // Copy streams: per tier one per direction (one shared by both when half
  // duplex); each is a FIFO in program order.
  const int32_t num_tiers = pr.device.num_tiers();
  const bool half = pr.device.half_duplex();
  std::vector<int64_t> stream_free(2 * static_cast<size_t>(num_tiers), 0);
  auto out_stream_of = [&](int32_t tier) -> int64_t& { return stream_free[2 * tier]; };
  auto in_stream_of = [&](int32_t tier) -> int64_t& {
    return stream_free[half ? 2 * tier : 2 * tier + 1];
  };
  int64_t& out_stream = out_stream_of(0);
  int64_t& in_stream = in_stream_of(0);
  r.tiers.resize(num_tiers);
  for (int32_t k = 0; k < num_tiers; ++k) {
    TierTraffic& tt = r.tiers[k];
    tt.name = pr.device.TierName(k);
    tt.capacity_bytes = pr.resolved.tier_usage[k].capacity_bytes;
    tt.peak_bytes = pr.resolved.tier_usage[k].peak_bytes;
  }
  // Naive record-stream: blocks whose release the host has not seen, per
  // tier in d2h issue order (a FIFO stream, so their copy ends are
  // non-decreasing).
  std::vector<std::vector<int32_t>> pending(num_tiers);
  std::vector<size_t> pending_head(num_tiers, 0);
  size_t pending_count = 0;

  int64_t usage = pr.initial_bytes;
  int64_t peak = -1;
  int64_t h_prev = 0, end_prev = 0;
  int64_t reuse_sum = 0;
  struct Stalled {
    int64_t stall;
    int32_t op;
    StallCause cause;
    int32_t item;
  };
  std::vector<Stalled> stalled;
  // Algorithm 3 (OomHandling::kAlgorithm3); inactive by default.
  OomHandler oom_handler(sim, pr, schedule);

  PoolState pool;
  if (pr.pool.enabled) PoolStart(pr.pool, &pool);
  r.pool_bytes = pr.pool.pool_bytes;

  auto release_block = [&](int32_t k, int32_t p) {
    usage -= items[k].size;
    if (pr.pool.enabled) --pool.in_use[pr.pool.item_class[k]];
    const int32_t interval = p - items[k].out;
    ++r.reuse.blocks;
    reuse_sum += interval;
    r.reuse.max_ops = std::max(r.reuse.max_ops, interval);
  };

  int32_t ring_at = 0;  // == p % ring_size
  for (int32_t p = 0; p < n; ++p, ring_at = ring_at + 1 == ring_size ? 0 : ring_at + 1) {
    const int32_t op = schedule.empty() ? p : schedule[p];

    // --- host: dispatch op p ------------------------------------------------
    int64_t t0 = h_prev;
    if (p >= o.launch_queue_depth) t0 = std::max(t0, ring[ring_at]);
    int64_t t1 = t0 + o.host_dispatch_ns;
    if (naive) {
      const int64_t queries = static_cast<int64_t>(pending_count);
      r.host_event_queries += queries;
      t1 += queries * o.host_event_query_ns;
      for (int32_t k = 0; k < num_tiers && pending_count > 0; ++k) {
        std::vector<int32_t>& q = pending[k];
        size_t& head = pending_head[k];
        while (head < q.size() && d2h_end[q[head]] <= t1) {
          release_block(q[head++], p);
          --pending_count;
        }
      }
    }
    // Allocations at the start of op p.
    int64_t request = alloc_at[p] + oom_handler.SwapInBytesAt(p);
    for (int32_t k : pr.by_in.at(p)) request += items[k].size;
    if (naive && usage + request > cap && pending_count > 0) {
      // The caching allocator synchronises on every outstanding event before
      // giving up: the host waits for the last pending copy.
      for (int32_t k = 0; k < num_tiers; ++k) {
        if (pending_head[k] < pending[k].size()) t1 = std::max(t1, d2h_end[pending[k].back()]);
      }
      for (int32_t k = 0; k < num_tiers; ++k) {
        while (pending_head[k] < pending[k].size()) release_block(pending[k][pending_head[k]++], p);
      }
      pending_count = 0;
      ++r.host_syncs;
    }
    OomWait oom_wait;
    if (oom_handler.active() && usage + request > cap) {
      oom_wait = oom_handler.Handle(p, request, end_prev, &usage, &out_stream, d2h_end,
                                    [&](int32_t k) { release_block(k, p); }, &r);
    }
    if (usage + request > cap) {
      if (!r.oom.occurred) {
        r.oom.occurred = true;
        r.oom.op = op;
        r.oom.requested_bytes = request;
        r.oom.free_bytes = cap - usage;
      }
      ++r.oom.ops_over_capacity;
      r.oom.max_excess_bytes = std::max(r.oom.max_excess_bytes, usage + request - cap);
    }
    if (pr.pool.enabled) PoolAllocate(pr.pool, p, op, cap, &pool, &r);
    usage += request;
    if (usage > peak) {
      peak = usage;
      r.peak_op = op;
    }
    if (o.record_timeline) {
      r.bytes_in_use[op] = usage;
      if (t1 > t0) r.timeline.push_back({SpanKind::kDispatch, op, t0, t1});
    }
    h_prev = t1;

    // --- compute reaches op p -------------------------------------------------
    const int64_t reach = std::max(end_prev, t1);
    r.host_wait_ns += reach - end_prev;

    // --- h2d copies triggered at p; recomputation ------------------------------
    int64_t recompute = 0;
    for (int32_t k : pr.by_in.at(p)) {
      const Item& it = items[k];
      if (!it.swap) {
        recompute += it.recompute_ns;
        ++r.recomputed_items;
        continue;
      }
      int64_t& stream = in_stream_of(it.tier);
      const int64_t start = std::max({reach, d2h_end[k], stream});
      h2d_end[k] = stream = start + it.in_ns;
      r.bytes_h2d += it.size;
      ++r.copies_h2d;
      r.h2d_busy_ns += it.in_ns;
      TierTraffic& tt = r.tiers[it.tier];
      tt.bytes_loaded += it.size;
      ++tt.loads;
      tt.load_busy_ns += it.in_ns;
      if (o.record_timeline) r.timeline.push_back({SpanKind::kH2D, k, start, h2d_end[k]});
    }
    const int64_t ready = reach + recompute;
    if (recompute > 0) {
      r.recompute_ns += recompute;
      ++r.events;
      if (o.record_timeline) r.timeline.push_back({SpanKind::kRecompute, op, reach, ready});
    }

    // --- waits: swap-ins of inputs, (custom) copies of released blocks --------
    int64_t start = ready;
    int32_t binding = -1;
    StallCause cause = StallCause::kSwapIn;
    for (int32_t k : pr.by_use.at(p)) {
      if (items[k].swap && h2d_end[k] > start) {
        start = h2d_end[k];
        binding = k;
        cause = StallCause::kSwapIn;
      }
    }
    if (!naive && p > 0) {
      for (int32_t k : pr.by_release.at(p - 1)) {
        if (items[k].swap && d2h_end[k] > start) {
          start = d2h_end[k];
          binding = k;
          cause = StallCause::kRelease;
        }
      }
    }
    if (oom_handler.active()) {
      // Algorithm 3: op p waits for the copies that freed its blocks and for
      // its passive swap-ins (issued after the policy's).
      const OomWait passive_in = oom_handler.IssueSwapIns(p, reach, &in_stream, &r);
      for (const OomWait& w : {oom_wait, passive_in}) {
        if (w.until_ns > start) {
          start = w.until_ns;
          binding = w.binding;
          cause = w.cause;
        }
      }
    }
    if (binding != -1) {  // an item (>= 0) or a passive swap (<= -2)
      const int64_t stall = start - ready;
      r.stall_ns += stall;
      if (cause == StallCause::kPassive) {
        r.stall_passive_ns += stall;
        r.oom_handling.passive_stall_ns += stall;
      } else {
        (cause == StallCause::kSwapIn ? r.stall_swap_in_ns : r.stall_release_ns) += stall;
      }
      r.stall_by_phase_ns[static_cast<int>(trace.op(iter.op_begin + op).phase)] += stall;
      stalled.push_back({stall, op, cause, binding});
      if (o.record_timeline) r.timeline.push_back({SpanKind::kStall, op, ready, start});
    }
    const int64_t end = start + dur[op];
    r.compute_ns += dur[op];
    ++r.events;
    if (o.record_timeline) r.timeline.push_back({SpanKind::kOp, op, start, end});
    ring[ring_at] = end;
    end_prev = end;

    // --- d2h copies after p ----------------------------------------------------
    for (int32_t k : pr.by_out.at(p)) {
      const Item& it = items[k];
      if (!it.swap || it.clean) continue;
      int64_t& stream = out_stream_of(it.tier);
      const int64_t s = std::max(end, stream);
      d2h_end[k] = stream = s + it.out_ns;
      r.bytes_d2h += it.size;
      ++r.copies_d2h;
      r.d2h_busy_ns += it.out_ns;
      TierTraffic& tt = r.tiers[it.tier];
      tt.bytes_stored += it.size;
      ++tt.stores;
      tt.store_busy_ns += it.out_ns;
      if (o.record_timeline) r.timeline.push_back({SpanKind::kD2H, k, s, d2h_end[k]});
      if (naive) {
        pending[it.tier].push_back(k);
        ++pending_count;
      }
      oom_handler.OnCopyOutIssued(k);
    }

    // --- frees after p -----------------------------------------------------------
    usage -= free_after[p] - oom_handler.FreedWhileOffAt(p);
    for (int32_t k : pr.by_release.at(p)) {
      const Item& it = items[k];
      if (!it.swap || it.clean) {
        usage -= it.size;
      } else if (!naive && !oom_handler.ReleasedEarly(k)) {
        release_block(k, p + 1);
      }
    }
    if (pr.pool.enabled) PoolFree(pr.pool, p, &pool);
  }

  // Only a wrapping item's copy out can outlast the last op.
  r.iteration_time_ns = end_prev;
  for (int64_t f : stream_free) r.iteration_time_ns = std::max(r.iteration_time_ns, f);
  r.peak_bytes = std::max<int64_t>(peak, 0);
  r.events += r.copies_d2h + r.copies_h2d;
  r.overhead_vs_ideal =
      r.ideal_time_ns > 0
          ? static_cast<double>(r.iteration_time_ns - r.ideal_time_ns) / r.ideal_time_ns
          : 0.0;
  r.reuse.unreleased_blocks = static_cast<int32_t>(pending_count);
  r.reuse.mean_ops = r.reuse.blocks > 0 ? static_cast<double>(reuse_sum) / r.reuse.blocks : 0.0;

  r.ops_with_stall = static_cast<int32_t>(stalled.size());
  const size_t top = std::min<size_t>(stalled.size(), static_cast<size_t>(o.top_stall_ops));
  // `stalled` is in schedule order, so a stable sort keeps earlier ops first
  // among equal stalls.
  std::stable_sort(stalled.begin(), stalled.end(),
                   [](const Stalled& a, const Stalled& b) { return a.stall > b.stall; });
  for (size_t i = 0; i < top; ++i) {
    const Stalled& s = stalled[i];
    const uint64_t id = s.item >= 0 ? policy.items[s.item].tensor_id
                                     : oom_handler.TraceIdOfBinding(s.item);
    r.top_stalls.push_back({s.op, s.stall, s.cause, id});
  }
  return r;
}

}  // namespace swapplan::internal_sim
