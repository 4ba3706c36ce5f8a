// Cross-check of the evaluation simulator against a naive reference written
// independently here: a time-stepped machine that advances a clock one
// nanosecond at a time and, at each tick, lets the host, the compute stream
// and the copy queues make every move they can until nothing changes. Memory
// is recomputed from scratch (every tensor, every item) at each dispatch.
// It shares no code with src/sim/: it re-derives lifetimes under the
// schedule from the trace, recomputes copy durations, and tracks each copy
// as a queued/running/done task instead of computing start = max(...).
//
// Random traces (tests/support), random valid policies (SWAP and RECOMPUTE
// windows between consecutive uses), random schedules, capacities, latencies,
// bandwidths, half-duplex, naive record-stream, host costs and launch-queue
// depths. Every figure must agree to the nanosecond and to the byte.
#include <algorithm>
#include <catch2/catch.hpp>
#include <climits>
#include <deque>
#include <numeric>
#include <random>
#include <vector>

#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {
namespace {

struct RefOutcome {
  int64_t iteration_time = 0, stall = 0, host_wait = 0, recompute = 0, compute = 0;
  int64_t peak = -1;
  int32_t peak_op = -1;
  bool oom = false;
  int32_t oom_op = -1;
  int64_t oom_requested = 0, oom_free = 0, max_excess = 0;
  int32_t ops_over = 0;
  int64_t bytes_d2h = 0, bytes_h2d = 0;
  int32_t copies_d2h = 0, copies_h2d = 0;
  int32_t reuse_blocks = 0, reuse_max = 0, unreleased = 0;
  int64_t reuse_sum = 0;
  int64_t queries = 0;
  int32_t syncs = 0;
  // By local op.
  std::vector<int64_t> op_start, op_end, stall_of_op, bytes_of_op;
  std::vector<uint64_t> stall_tensor;
  std::vector<int> stall_cause;  // 0 swap-in, 1 release
  // By item; -1 when the item has no such copy.
  std::vector<int64_t> out_start, out_end, in_start, in_end;
};

RefOutcome Reference(const Trace& trace, int32_t iteration, const Policy& policy,
                     const SimulatorOptions& o, const std::vector<int32_t>& schedule) {
  const IterationInfo& iter = trace.iteration(iteration);
  const int n = iter.num_ops();
  std::vector<int> order(n), pos(n);
  for (int p = 0; p < n; ++p) order[p] = schedule.empty() ? p : schedule[p];
  for (int p = 0; p < n; ++p) pos[order[p]] = p;
  const bool naive = o.record_stream == RecordStreamMode::kNaive;
  const int64_t cap = o.memory_limit_bytes();

  // Lifetimes in schedule positions.
  struct Live {
    int64_t size;
    int a, f;  // -1: before the first op; n: after the last
  };
  std::vector<Live> live;
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (lt.free_op == kNoOp || lt.free_op < iter.op_begin || lt.alloc_op >= iter.op_end) continue;
    int a = lt.alloc_op < iter.op_begin ? -1 : pos[lt.alloc_op - iter.op_begin];
    int f = lt.free_op >= iter.op_end ? n : pos[lt.free_op - iter.op_begin];
    for (OpIndex u : trace.tensor_uses(t)) {
      if (u < iter.op_begin || u >= iter.op_end) continue;
      if (a >= 0) a = std::min(a, pos[u - iter.op_begin]);
      if (f < n) f = std::max(f, pos[u - iter.op_begin]);
    }
    live.push_back({trace.tensor(t).size_bytes, a, f});
  }
  struct It {
    int64_t size;
    bool swap;
    int64_t rc;
    int out, rel, in, use;
    int64_t dout, din;
    uint64_t tensor;
  };
  auto copy_ns = [&](int64_t bytes, double bw) {
    // bytes / (bw / 1e9), rounded up, plus the latency.
    double per_ns = bw / 1e9;
    double x = static_cast<double>(bytes) / per_ns;
    int64_t whole = static_cast<int64_t>(x);
    if (static_cast<double>(whole) < x) ++whole;
    return o.device.copy_latency_ns + whole;
  };
  std::vector<It> items;
  for (const PolicyItem& pi : policy.items) {
    items.push_back({pi.size_bytes, pi.action == ItemAction::kSwap, pi.recompute_ns,
                     pos[pi.swap_out_op], pos[pi.release_op], pos[pi.swap_in_op],
                     pos[pi.first_use_op], copy_ns(pi.size_bytes, o.device.d2h_bandwidth_bytes_per_s),
                     copy_ns(pi.size_bytes, o.device.h2d_bandwidth_bytes_per_s), pi.tensor_id});
  }
  const int ni = static_cast<int>(items.size());
  // Transient bytes of the recompute recipe before each position: the
  // recipe itself is trace/recompute.h's (tested there); what is checked
  // here is where the simulator charges it.
  std::vector<int64_t> transient(n, 0);
  {
    absl::StatusOr<PolicyResolver> resolver = PolicyResolver::Create(trace, iteration);
    REQUIRE(resolver.ok());
    absl::StatusOr<ResolvedPolicy> rp =
        resolver->Resolve(policy, o.device, {.schedule = schedule});
    REQUIRE(rp.ok());
    for (const ResolvedRecompute& g : rp->recomputes) transient[g.position] = g.transient_bytes;
  }
  std::vector<int> obs(ni, -1);  // naive: position at whose dispatch the block was released

  auto usage_at = [&](int p) {
    int64_t u = 0;
    for (const Live& l : live) {
      if (l.a <= p && p <= l.f) u += l.size;
    }
    for (int k = 0; k < ni; ++k) {
      const It& it = items[k];
      int rel = (!naive || !it.swap) ? it.rel + 1 : (obs[k] >= 0 ? obs[k] : INT_MAX);
      if (rel <= p && p <= it.in - 1) u -= it.size;
      if (it.in <= p && p < rel) u += it.size;  // old block not yet seen free
    }
    return u;
  };
  auto requested_at = [&](int p) {
    int64_t r = 0;
    for (const Live& l : live) {
      if (l.a == p) r += l.size;
    }
    for (const It& it : items) {
      if (it.in == p) r += it.size;
    }
    return r;
  };

  RefOutcome out;
  out.op_start.assign(n, -1);
  out.op_end.assign(n, -1);
  out.stall_of_op.assign(n, 0);
  out.bytes_of_op.assign(n, 0);
  out.stall_tensor.assign(n, 0);
  out.stall_cause.assign(n, 0);
  // Copies: index 2k = item k out, 2k+1 = item k in.
  std::vector<int64_t> cstart(2 * ni, -1), cend(2 * ni, -1);
  auto done = [&](int c, int64_t t) { return cstart[c] >= 0 && cend[c] <= t; };
  std::deque<int> q_out, q_in;
  std::deque<int>& q_in_ref = o.device.half_duplex() ? q_out : q_in;

  // Per position.
  std::vector<int64_t> disp(n, -1), reach(n, -1), start(n, -1), end(n, -1), rc_of(n, 0);
  auto ended = [&](int p, int64_t t) { return start[p] >= 0 && end[p] <= t; };

  enum { kIdle, kBusy, kSync } hs = kIdle;
  int64_t host_until = 0;
  int host_next = 0;
  std::vector<int> pending;
  enum { kReach, kRecomp, kWait, kRun } cs = kReach;
  int64_t comp_until = 0;
  int comp = 0;

  auto complete_dispatch = [&](int p, int64_t t) {
    const int64_t u = usage_at(p);
    const int64_t req = requested_at(p);
    int64_t own = 0;  // the trace's allocations of p, made after the recipe
    for (const Live& l : live) {
      if (l.a == p) own += l.size;
    }
    const int64_t at_recipe = transient[p] > 0 ? u - own + transient[p] : 0;
    if (at_recipe > u) {
      if (at_recipe > cap) {
        if (!out.oom) {
          out.oom = true;
          out.oom_op = order[p];
          out.oom_requested = req - own + transient[p];
          out.oom_free = cap - (u - req);
        }
        ++out.ops_over;
        out.max_excess = std::max(out.max_excess, at_recipe - cap);
      }
      if (at_recipe > out.peak) {
        out.peak = at_recipe;
        out.peak_op = order[p];
      }
    } else if (u > cap) {
      if (!out.oom) {
        out.oom = true;
        out.oom_op = order[p];
        out.oom_requested = req;
        out.oom_free = cap - (u - req);
      }
      ++out.ops_over;
      out.max_excess = std::max(out.max_excess, u - cap);
    }
    if (u > out.peak) {
      out.peak = u;
      out.peak_op = order[p];
    }
    out.bytes_of_op[order[p]] = u;
    disp[p] = t;
    for (int k = 0; k < ni; ++k) {
      if (items[k].swap && items[k].in == p) q_in_ref.push_back(2 * k + 1);
    }
    for (int k = 0; k < ni; ++k) {
      if (items[k].swap && items[k].out == p) {
        q_out.push_back(2 * k);
        if (naive) pending.push_back(k);
      }
    }
    ++host_next;
    hs = kIdle;
  };
  auto release = [&](int k, int p) {
    obs[k] = p;
    ++out.reuse_blocks;
    out.reuse_sum += p - items[k].out;
    out.reuse_max = std::max(out.reuse_max, p - items[k].out);
  };
  auto run_queue = [&](std::deque<int>& q, int64_t t) {
    bool moved = false;
    while (!q.empty()) {
      const int c = q.front();
      if (cstart[c] >= 0) {
        if (cend[c] > t) break;
        q.pop_front();  // finished: the stream is free
        moved = true;
        continue;
      }
      const int k = c / 2;
      const bool is_out = c % 2 == 0;
      const bool ready =
          is_out ? ended(items[k].out, t) : (reach[items[k].in] >= 0 && done(2 * k, t));
      if (!ready) break;
      cstart[c] = t;
      cend[c] = t + (is_out ? items[k].dout : items[k].din);
      moved = true;
      break;
    }
    return moved;
  };

  for (int64_t t = 0;; ++t) {
    if (t >= 100000000) FAIL("the reference is stuck at t = " << t);
    bool progress = true;
    while (progress) {
      progress = false;
      // Host.
      if (hs == kIdle && host_next < n &&
          (host_next < o.launch_queue_depth || ended(host_next - o.launch_queue_depth, t))) {
        const int64_t q = naive ? static_cast<int64_t>(pending.size()) : 0;
        out.queries += q;
        host_until = t + o.host_dispatch_ns + q * o.host_event_query_ns;
        hs = kBusy;
        progress = true;
      }
      if (hs == kBusy && t >= host_until) {
        const int p = host_next;
        std::vector<int> still;
        for (int k : pending) {
          if (done(2 * k, t)) {
            release(k, p);
          } else {
            still.push_back(k);
          }
        }
        pending = still;
        if (naive && usage_at(p) > cap && !pending.empty()) {
          hs = kSync;
        } else {
          complete_dispatch(p, t);
        }
        progress = true;
      }
      if (hs == kSync) {
        bool all = true;
        for (int k : pending) all = all && done(2 * k, t);
        if (all) {
          for (int k : pending) release(k, host_next);
          pending.clear();
          ++out.syncs;
          complete_dispatch(host_next, t);
          progress = true;
        }
      }
      // Compute stream.
      if (cs == kReach && comp < n && disp[comp] >= 0) {
        reach[comp] = t;
        out.host_wait += t - (comp == 0 ? 0 : end[comp - 1]);
        for (const It& it : items) {
          if (!it.swap && it.in == comp) rc_of[comp] += it.rc;
        }
        out.recompute += rc_of[comp];
        comp_until = t + rc_of[comp];
        cs = kRecomp;
        progress = true;
      }
      if (cs == kRecomp && t >= comp_until) {
        cs = kWait;
        progress = true;
      }
      if (cs == kWait) {
        bool ok = true;
        int64_t latest = -1;
        int binding = -1, cause = 0;
        for (int k = 0; k < ni; ++k) {
          if (!items[k].swap || items[k].use != comp) continue;
          ok = ok && done(2 * k + 1, t);
          if (cend[2 * k + 1] > latest) latest = cend[2 * k + 1], binding = k, cause = 0;
        }
        if (!naive && comp > 0) {
          for (int k = 0; k < ni; ++k) {
            if (!items[k].swap || items[k].rel != comp - 1) continue;
            ok = ok && done(2 * k, t);
            if (cend[2 * k] > latest) latest = cend[2 * k], binding = k, cause = 1;
          }
        }
        if (ok) {
          const int op = order[comp];
          start[comp] = t;
          end[comp] = t + trace.op(iter.op_begin + op).duration_ns;
          const int64_t stall = t - (reach[comp] + rc_of[comp]);
          out.stall_of_op[op] = stall;
          out.stall += stall;
          if (stall > 0) {
            out.stall_tensor[op] = items[binding].tensor;
            out.stall_cause[op] = cause;
          }
          out.compute += end[comp] - start[comp];
          out.op_start[op] = start[comp];
          out.op_end[op] = end[comp];
          cs = kRun;
          progress = true;
        }
      }
      if (cs == kRun && t >= end[comp]) {
        ++comp;
        cs = kReach;
        progress = true;
      }
      // Copy queues.
      if (run_queue(q_out, t)) progress = true;
      if (!o.device.half_duplex() && run_queue(q_in, t)) progress = true;
    }
    if (comp == n) {
      out.iteration_time = end[n - 1];
      break;
    }
  }
  out.unreleased = static_cast<int32_t>(pending.size());
  if (!naive) {
    for (int k = 0; k < ni; ++k) {
      if (items[k].swap) release(k, items[k].rel + 1);
    }
  }
  out.out_start.assign(ni, -1);
  out.out_end.assign(ni, -1);
  out.in_start.assign(ni, -1);
  out.in_end.assign(ni, -1);
  for (int k = 0; k < ni; ++k) {
    if (!items[k].swap) continue;
    out.out_start[k] = cstart[2 * k];
    out.out_end[k] = cend[2 * k];
    out.in_start[k] = cstart[2 * k + 1];
    out.in_end[k] = cend[2 * k + 1];
    out.bytes_d2h += items[k].size;
    out.bytes_h2d += items[k].size;
    ++out.copies_d2h;
    ++out.copies_h2d;
  }
  return out;
}

// A random valid policy: for each tensor and each gap between consecutive
// "anchors" (its allocation, its uses, its free, in schedule positions), with
// probability 0.35 an item out in the gap and back by its end.
Policy RandomPolicy(std::mt19937_64& rng, const Trace& trace, int32_t iteration,
                    const std::vector<int32_t>& schedule) {
  const IterationInfo& iter = trace.iteration(iteration);
  const int n = iter.num_ops();
  std::vector<int> order(n), pos(n);
  for (int p = 0; p < n; ++p) order[p] = schedule.empty() ? p : schedule[p];
  for (int p = 0; p < n; ++p) pos[order[p]] = p;
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Policy policy;
  policy.fingerprint = ComputeFingerprint(trace, iteration);
  policy.planner = "random";
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (lt.free_op == kNoOp || lt.free_op < iter.op_begin || lt.alloc_op >= iter.op_end) continue;
    std::vector<int> anchors;
    for (OpIndex u : trace.tensor_uses(t)) {
      if (u >= iter.op_begin && u < iter.op_end) anchors.push_back(pos[u - iter.op_begin]);
    }
    int a = lt.alloc_op < iter.op_begin ? 0 : pos[lt.alloc_op - iter.op_begin];
    int f = lt.free_op >= iter.op_end ? n - 1 : pos[lt.free_op - iter.op_begin];
    for (int x : anchors) a = std::min(a, x), f = std::max(f, x);
    anchors.push_back(a);
    anchors.push_back(f);
    std::sort(anchors.begin(), anchors.end());
    anchors.erase(std::unique(anchors.begin(), anchors.end()), anchors.end());
    for (size_t i = 0; i + 1 < anchors.size(); ++i) {
      const int b1 = anchors[i], b2 = anchors[i + 1];
      if (b2 - b1 < 2 || uni(0, 99) >= 35) continue;
      PolicyItem it;
      it.tensor_id = trace.tensor(t).trace_id;
      it.size_bytes = trace.tensor(t).size_bytes;
      const int out = static_cast<int>(uni(b1, b2 - 2));
      const int rel = static_cast<int>(uni(out, b2 - 2));
      const int in = static_cast<int>(uni(rel + 1, b2));
      it.swap_out_op = order[out];
      it.release_op = order[rel];
      it.swap_in_op = order[in];
      it.first_use_op = order[b2];
      if (uni(0, 3) == 0) {
        it.action = ItemAction::kRecompute;
        it.recompute_ns = uni(0, 60);
      }
      policy.items.push_back(it);
    }
  }
  std::shuffle(policy.items.begin(), policy.items.end(), rng);
  return policy;
}

TEST_CASE("simulator equals the time-stepped reference on random cases", "[sim][reference]") {
  const double bandwidths[] = {1e9, 2e9, 0.7e9, 3e9};
  const int32_t depths[] = {1, 2, 3, 5, 1024};
  int64_t with_stall = 0, with_oom = 0, with_sync = 0, with_schedule = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed * 7919);
    auto uni = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    testing::RandomTraceOptions to;
    to.iterations = static_cast<int32_t>(uni(1, 2));
    to.ops_per_iteration = static_cast<int32_t>(uni(10, 50));
    to.max_tensor_bytes = 300;
    Trace trace = testing::RandomTrace(seed, to);
    const int32_t iteration = static_cast<int32_t>(uni(0, trace.num_iterations() - 1));
    const int n = trace.iteration(iteration).num_ops();
    std::vector<int32_t> schedule;
    if (uni(0, 9) < 3) {
      schedule.resize(n);
      std::iota(schedule.begin(), schedule.end(), 0);
      std::shuffle(schedule.begin(), schedule.end(), rng);
      ++with_schedule;
    }
    Policy policy = RandomPolicy(rng, trace, iteration, schedule);

    SimulatorOptions o;
    o.record_timeline = true;
    o.top_stall_ops = n;
    o.device.h2d_bandwidth_bytes_per_s = bandwidths[uni(0, 3)];
    o.device.d2h_bandwidth_bytes_per_s = bandwidths[uni(0, 3)];
    o.device.copy_latency_ns = uni(0, 1) ? uni(0, 30) : 0;
    o.device.copy_engines = uni(0, 1) == 1 ? 1 : 2;
    o.record_stream = uni(0, 1) ? RecordStreamMode::kNaive : RecordStreamMode::kCustom;
    o.host_dispatch_ns = uni(0, 1) ? uni(0, 40) : 0;
    o.host_event_query_ns = uni(0, 1) ? uni(0, 20) : 0;
    o.launch_queue_depth = depths[uni(0, 4)];
    if (uni(0, 1)) {
      absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(trace);
      REQUIRE(curve.ok());
      const int64_t peak = curve->iterations()[iteration].peak_unswapped.bytes;
      o.device.capacity_bytes = std::max<int64_t>(1, uni(peak / 3, peak + peak / 10));
    }
    INFO("items " << policy.items.size() << ", ops " << n << ", half " << o.device.half_duplex()
                  << ", naive " << (o.record_stream == RecordStreamMode::kNaive) << ", depth "
                  << o.launch_queue_depth << ", capacity " << o.device.capacity_bytes);

    absl::StatusOr<Simulator> sim = Simulator::Create(trace, iteration, o);
    REQUIRE(sim.ok());
    absl::StatusOr<SimulationResult> got = sim->Run(policy, schedule);
    INFO(got.status().ToString());
    REQUIRE(got.ok());
    const SimulationResult& r = *got;
    const RefOutcome want = Reference(trace, iteration, policy, o, schedule);

    CHECK(r.iteration_time_ns == want.iteration_time);
    CHECK(r.stall_ns == want.stall);
    CHECK(r.host_wait_ns == want.host_wait);
    CHECK(r.recompute_ns == want.recompute);
    CHECK(r.compute_ns == want.compute);
    CHECK(r.peak_bytes == want.peak);
    CHECK(r.peak_op == want.peak_op);
    CHECK(r.oom.occurred == want.oom);
    CHECK(r.oom.op == want.oom_op);
    CHECK(r.oom.requested_bytes == want.oom_requested);
    CHECK(r.oom.free_bytes == want.oom_free);
    CHECK(r.oom.ops_over_capacity == want.ops_over);
    CHECK(r.oom.max_excess_bytes == want.max_excess);
    CHECK(r.bytes_d2h == want.bytes_d2h);
    CHECK(r.bytes_h2d == want.bytes_h2d);
    CHECK(r.copies_d2h == want.copies_d2h);
    CHECK(r.copies_h2d == want.copies_h2d);
    CHECK(r.reuse.blocks == want.reuse_blocks);
    CHECK(r.reuse.max_ops == want.reuse_max);
    CHECK(r.reuse.unreleased_blocks == want.unreleased);
    CHECK(r.reuse.mean_ops ==
          Approx(want.reuse_blocks ? static_cast<double>(want.reuse_sum) / want.reuse_blocks : 0));
    CHECK(r.host_event_queries == want.queries);
    CHECK(r.host_syncs == want.syncs);
    CHECK(r.bytes_in_use == want.bytes_of_op);

    // Every span of the timeline.
    std::vector<int64_t> op_start(n, -1), op_end(n, -1);
    const size_t ni = policy.items.size();
    std::vector<int64_t> out_s(ni, -1), out_e(ni, -1), in_s(ni, -1), in_e(ni, -1);
    for (const TimelineSpan& s : r.timeline) {
      if (s.kind == SpanKind::kOp) op_start[s.index] = s.start_ns, op_end[s.index] = s.end_ns;
      if (s.kind == SpanKind::kD2H) out_s[s.index] = s.start_ns, out_e[s.index] = s.end_ns;
      if (s.kind == SpanKind::kH2D) in_s[s.index] = s.start_ns, in_e[s.index] = s.end_ns;
    }
    CHECK(op_start == want.op_start);
    CHECK(op_end == want.op_end);
    CHECK(out_s == want.out_start);
    CHECK(out_e == want.out_end);
    CHECK(in_s == want.in_start);
    CHECK(in_e == want.in_end);
    // Every stalled op, its length and the copy it waited for.
    std::vector<int64_t> stall_of_op(n, 0);
    for (const StallSite& s : r.top_stalls) {
      stall_of_op[s.op] = s.stall_ns;
      CHECK(s.tensor_id == want.stall_tensor[s.op]);
      CHECK(static_cast<int>(s.cause) == want.stall_cause[s.op]);
    }
    CHECK(stall_of_op == want.stall_of_op);
    CHECK(std::is_sorted(
        r.top_stalls.begin(), r.top_stalls.end(),
        [](const StallSite& a, const StallSite& b) { return a.stall_ns > b.stall_ns; }));

    with_stall += r.stall_ns > 0;
    with_oom += r.oom.occurred;
    with_sync += r.host_syncs > 0;
  }
  // The random cases exercise what they are meant to.
  INFO("stall " << with_stall << ", oom " << with_oom << ", sync " << with_sync << ", schedule "
                << with_schedule);
  CHECK(with_stall > 50);
  CHECK(with_oom > 20);
  CHECK(with_sync > 5);
  CHECK(with_schedule > 50);
}

}  // namespace
}  // namespace swapplan
