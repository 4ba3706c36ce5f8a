// Property test of the Chameleon planner on random valid traces (one or
// several micro-batches, gradient accumulation or 1F1B), random budgets,
// bandwidths and options:
//
//   * either the planner returns a policy that the checker accepts, whose
//     expected peak is the checker's and within the budget;
//   * or it reports ResourceExhausted — and then a naive reference confirms
//     that swapping every candidate for its whole idle window (released when
//     its copy out completes on the d2h queue, back at its first backward
//     use) still leaves an op above the budget.
//
// The naive reference shares nothing with the planner but the trace model:
// its own op times, windows, candidate list, queue and O(ops × tensors)
// byte accounting.
#include <algorithm>
#include <random>

#include <catch2/catch.hpp>

#include "support/planner_fixtures.h"
#include "support/test_seed.h"
#include "support/test_traces.h"
#include "swapplan/planners/chameleon/chameleon_planner.h"
#include "swapplan/sim/checker.h"

namespace swapplan {
namespace {

struct NaiveWindow {
  TensorId t;
  int32_t u, v;  // last forward use, first backward use (local)
  int32_t cover_begin;
  int64_t size;
};

// True when even the maximal policy leaves an op above the budget. With
// release waits every window is off from the op after its last forward use
// (the compute stream waiting for the copy out), not from its queue release.
bool NaiveMaximalInfeasible(const Trace& trace, int32_t it, const PlanningProblem& pr,
                            const ChameleonOptions& o, bool recorded_times) {
  const bool waits = o.release_wait == ReleaseWait::kWhenNeeded;
  const IterationInfo& iter = trace.iteration(it);
  const int32_t n = iter.num_ops();
  const OpIndex b = iter.op_begin;
  std::vector<double> end(n);
  double acc = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (recorded_times) {
      acc += static_cast<double>(trace.op(b + i).duration_ns);
      end[i] = acc;
    } else {
      // Eq. (1) in whole nanoseconds, as op_times.h splits the wall time:
      // op i ends at floor(wall × (i + 1) / n). (A real-valued split put a
      // copy's completion a fraction of a ns earlier than the planner's and
      // a window one op longer: 1 run in ~75 failed on such a boundary.)
      end[i] = static_cast<double>(static_cast<__int128>(iter.wall_time_ns) * (i + 1) / n);
    }
  }
  auto op_at = [&](double t) {
    int32_t i = 0;
    while (i < n && end[i] < t) ++i;
    return i;
  };
  std::vector<int64_t> base(n, 0);
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& l = trace.lifetime(t);
    for (int32_t i = 0; i < n; ++i) {
      if (l.LiveAt(b + i)) base[i] += trace.tensor(t).size_bytes;
    }
  }
  const int64_t budget = pr.budget_bytes();
  std::vector<NaiveWindow> windows;
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorInfo& info = trace.tensor(t);
    if (info.kind == TensorKind::kParameter || info.persistent) continue;
    if (info.size_bytes < o.min_tensor_bytes) continue;
    std::vector<int32_t> uses;
    for (OpIndex u : trace.tensor_uses(t)) {
      if (u >= b && u < b + n) uses.push_back(u - b);
    }
    for (size_t k = 0; k + 1 < uses.size(); ++k) {
      const int32_t u = uses[k], v = uses[k + 1];
      // Random traces have no OTHER ops: phases are the effective types.
      if (trace.op(b + u).phase != Phase::kForward || trace.op(b + v).phase != Phase::kBackward) {
        continue;
      }
      const int32_t r0 = op_at(end[u] + info.size_bytes * 1e9 / pr.device.d2h_bandwidth_bytes_per_s);
      if (r0 > v - 2) continue;
      const int32_t cover =
          o.idle_window_start == IdleWindowStart::kEarliestRelease && !waits ? r0 + 1 : u + 1;
      bool covers_mre = false;
      for (int32_t i = cover; i <= v - 1; ++i) covers_mre |= base[i] > budget;
      if (covers_mre) windows.push_back({t, u, v, cover, info.size_bytes});
    }
  }
  std::stable_sort(windows.begin(), windows.end(),
                   [](const NaiveWindow& a, const NaiveWindow& c) { return a.u < c.u; });
  std::vector<int64_t> bytes = base;
  double free_at = 0;
  for (const NaiveWindow& w : windows) {
    const double start = std::max(end[w.u], free_at);
    const double done = start + w.size * 1e9 / pr.device.d2h_bandwidth_bytes_per_s;
    const int32_t release = waits ? w.u : op_at(done);
    if (release >= w.v - 1) continue;  // frees nothing; never issued
    free_at = done;
    for (int32_t i = release + 1; i <= w.v - 1; ++i) bytes[i] -= w.size;
  }
  return *std::max_element(bytes.begin(), bytes.end()) > budget;
}

TEST_CASE("chameleon property: checker-clean policy or a confirmed infeasible budget",
          "[chameleon][property]") {
  const uint64_t seed0 = testing::TestSeed("chameleon property");
  INFO("seed " << seed0);
  std::mt19937_64 rng(seed0);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  int feasible = 0, infeasible = 0, swapped = 0, waited = 0;
  for (int round = 0; round < 400; ++round) {
    const uint64_t seed = rng();
    INFO("trace seed " << seed << ", round " << round);
    testing::RandomTraceOptions to;
    to.iterations = static_cast<int32_t>(uni(1, 2));
    to.ops_per_iteration = static_cast<int32_t>(uni(10, 120));
    to.micro_batches = static_cast<int32_t>(uni(1, 3));
    to.one_f_one_b = uni(0, 1) == 1;
    to.persistent_tensors = static_cast<int32_t>(uni(0, 4));
    Trace trace = testing::RandomTrace(seed, to);
    const int32_t it = static_cast<int32_t>(uni(0, trace.num_iterations() - 1));
    const IterationInfo& iter = trace.iteration(it);
    absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(trace);
    REQUIRE(curve.ok());
    int64_t peak = 0;
    for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
      peak = std::max(peak, curve->unswapped_bytes()[i]);
    }
    PlanningProblem pr;
    pr.trace = &trace;
    pr.iteration = it;
    pr.device.capacity_bytes = static_cast<int64_t>(static_cast<double>(peak) * real(0.3, 1.05));
    // 0.5 .. 128 bytes per ns: copies from a fraction of an op to many ops.
    pr.device.h2d_bandwidth_bytes_per_s = 1e9 * std::pow(2.0, real(-1, 7));
    pr.device.d2h_bandwidth_bytes_per_s = 1e9 * std::pow(2.0, real(-1, 7));
    pr.curve = &*curve;
    ChameleonOptions o;
    o.layers = static_cast<int32_t>(uni(0, 6));
    o.optimizer_layers = static_cast<int32_t>(uni(1, 2));
    o.score_c = real(0, 3);
    o.min_tensor_bytes = std::vector<int64_t>{0, 0, 100, 500}[uni(0, 3)];
    o.normalization = uni(0, 1) ? ScoreNormalization::kMax : ScoreNormalization::kMinMax;
    o.link_budget = uni(0, 1) ? LinkBudget::kPerDirection : LinkBudget::kShared;
    o.swap_out_completion =
        uni(0, 1) ? SwapOutCompletion::kD2hQueue : SwapOutCompletion::kLayerSearch;
    o.idle_window_start =
        uni(0, 3) ? IdleWindowStart::kEarliestRelease : IdleWindowStart::kLastForwardUse;
    o.candidate_rebuild = uni(0, 3) ? CandidateRebuild::kPerPass : CandidateRebuild::kPerSelection;
    o.stall_fallback = uni(0, 3) ? StallFallback::kBatched : StallFallback::kOnePerPass;
    o.op_time_model = uni(0, 1) ? OpTimeModel::kAuto : OpTimeModel::kEq1;
    o.release_wait = uni(0, 3) ? ReleaseWait::kWhenNeeded : ReleaseWait::kNever;
    INFO("budget " << pr.budget_bytes() << " of peak " << peak << ", h2d "
                   << pr.device.h2d_bandwidth_bytes_per_s << ", d2h " << pr.device.d2h_bandwidth_bytes_per_s
                   << ", layers " << o.layers << ", params " << o.ToParameters().size());
    ChameleonPlanner planner(o);
    absl::StatusOr<Policy> p = planner.Plan(pr);
    if (p.ok()) {
      ++feasible;
      swapped += !p->items.empty();
      bool waits = false;
      for (const PolicyItem& item : p->items) waits = waits || item.release_waits_for_copy;
      waited += waits;
      if (o.release_wait == ReleaseWait::kNever) CHECK_FALSE(waits);
      absl::StatusOr<CheckReport> r =
          CheckPolicy(trace, *p, {.op_time_model = o.op_time_model});
      REQUIRE(r.ok());
      INFO(testing::ViolationMessages(*r));
      CHECK(r->clean());
      CHECK(r->peak_bytes == p->expected_peak_bytes);
      CHECK(p->expected_peak_bytes <= pr.budget_bytes());
      CHECK(p->expected_overhead_ns >= 0);
      for (const PolicyItem& item : p->items) CHECK(item.size_bytes >= o.min_tensor_bytes);
    } else {
      INFO(p.status().ToString());
      REQUIRE(p.status().code() == absl::StatusCode::kResourceExhausted);
      ++infeasible;
      // Random traces record every op's duration: auto means recorded.
      CHECK(NaiveMaximalInfeasible(trace, it, pr, o, o.op_time_model == OpTimeModel::kAuto));
    }
  }
  INFO("feasible " << feasible << " (with swaps " << swapped << ", release waits " << waited
                    << "), infeasible " << infeasible);
  // The generator must exercise both outcomes, and real swapping.
  CHECK(feasible >= 80);
  CHECK(infeasible >= 40);
  CHECK(swapped >= 60);
  CHECK(waited >= 8);
}

}  // namespace
}  // namespace swapplan
