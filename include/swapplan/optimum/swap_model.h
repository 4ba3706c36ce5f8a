// The swap (and recompute) problem of one trace iteration as a mixed-integer
// linear program, stated against the evaluation simulator (sim/simulator.h)
// for policies that run the recorded op order. docs/optimum.md derives it;
// in short:
//
// Windows (decisions). For every tensor and every gap between two
// consecutive uses u_j < u_{j+1} that contains an op over the budget (the
// unswapped bytes of the op exceed it; O_g = those ops), up to three
// alternative windows, at most one chosen:
//   SWAP       copy out after u_j (swap_out_op = u_j), release after r,
//              copy in triggered at s, first_use_op = u_{j+1};
//   CLEAN      the same without the copy out: the tensor came back from
//              the host at u_j (the chosen window of gap j-1 is a SWAP or
//              CLEAN one, or its WRAP window for j = 0) and op u_j does not
//              write it;
//   RECOMPUTE  (OptimumOptions::recompute) dropped after r and re-made at s
//              by its one producing op p (an ACTIVATION written by no other
//              op, not in place) for p's duration; every input of p must be
//              on the device when the recomputation runs, just before op s:
//              an input whose copy in is triggered at s itself is still on
//              the link then (its SWAP / CLEAN / WRAP window must trigger
//              before s); an input RECOMPUTEd at s too is re-made first.
// For every persistent tensor (resident before and after the iteration)
// with uses, a WRAP window — on the host from the start until its swap-in
// s <= u_0 and again after its release r >= u_m (the simulator's wrapping
// item) — or WRAP-CLEAN when no op writes it.
// Domains (each reduction keeps the optimum, docs/optimum.md): r + 1 is an
// op of O_g (a window that covers no op over the budget only costs, and a
// release moved later up to the first covered op frees the same bytes
// where they are needed and waits no longer); s in (min O_g, u_{j+1}]
// (WRAP: s in [0, u_0]; r + 1 in O after u_m, or r = n - 1).
//
// Columns: x_g (chosen), rho_{g,r}, sigma_{g,s} (binary, one-hot when
// chosen; stored cumulatively — "released at or before r", "triggered at
// or before s", x_g the last trigger column — so that off_{g,k} below is
// two entries), S_k (start of op k), Dend_g / Hend_g (end of g's copy out /
// in), DF_k / HF_k (d2h / h2d stream free after the copies issued at k), T.
// Times in microseconds.
//
// Rows, per op k over the budget (exact byte accounting of the simulator):
//   sum_g size_g * off_{g,k} >= unswapped_k - budget,
//   off_{g,k} = sum_{r<k} rho_{g,r} - sum_{s<=k} sigma_{g,s}  (WRAP: x_g - ...
//               before u_0, sum_{r<k} rho after u_m)
// and the simulator's max-plus recursion as >= rows (big-M M where a row
// holds only when a window is chosen):
//   compute  S_k >= S_{k-1} + d_{k-1} + sum recompute_g sigma_{g,k}
//   release  S_{r+1} >= Dend_g          when rho_{g,r}
//   use      S_{u_{j+1}} >= Hend_g       when x_g
//   d2h      Dend_g >= max(S_a + d_a, DF_{a-1}) + dd_g;   DF_a >= Dend_g
//            DF_a >= max(S_a + d_a, DF_{a-1}) + sum_{out at a} dd_g x_g
//   h2d      Hend_g >= max(S_{s-1} + d_{s-1}, HF_{s-1}, Dend_g) + dh_g  when sigma_{g,s}
//            HF_s >= Hend_g;  HF_s >= max(S_{s-1} + d_{s-1}, HF_{s-1}) + sum dh_g sigma_{g,s}
//   end      T >= S_{n-1} + d_{n-1};  T >= DF (a wrapping copy out may end last)
// minimise T.
//
// Exactness. Every row is satisfied by the simulator's own timeline of any
// policy of the class, so the MILP optimum is a LOWER bound on the best
// simulated time of the class. For a solution in which no two chosen copies
// are issued at the same op in the same direction, the least solution of
// the rows IS the simulator's recursion: its objective equals the simulated
// time of the extracted policy. Where several copies share an op, the rows
// let each start as if it were first in line (a relaxation): the extracted
// policy's simulated time may then exceed the objective.
//
// Transient memory (SwapModelOptions::recompute_transient). A POET-style
// recomputation re-runs the producer p at the trigger s and keeps only the
// dropped tensor; p's other outputs (transient_bytes) exist while it runs.
// For every op s that is the trigger of some RECOMPUTE window the memory row
// becomes
//   sum_g size_g * off_{g,s} - sum_{w triggered exactly at s} transient_w
//     >= unswapped_s - budget
// (a row also for ops under the budget, which only transients can push
// over). It counts the transient together with op s's own allocations, an
// upper estimate that is exact when op s allocates nothing. The bound is then
// one on the policies whose transients fit, the class a simulator with
// exact RECOMPUTE accounting judges.
//
// Stream energy. The rows above hold the copies' times only through big-M
// terms, which the LP relaxation all but ignores; valid rows without M say
// that the copies of one stream between two ops take their summed time:
//   d2h  S_{r+1} >= S_a + d_a + sum_{out_g >= a} dd_g * [released at or before r]
//   h2d  S_u >= S_{s-1} + d_{s-1} + sum_{use_g <= u} dh_g * [chosen, not triggered before s]
// for a among the copy-out ops, r among the releases, s among the first
// triggers and u among the uses (at most 5000 of each kind). They tighten
// the bound of a stopped solve; they remove no policy.
//
// Exact batches. With SwapModelOptions::max_order_pairs, every pair of
// copies that may be issued at the same op — copies out after the same op,
// copies in whose trigger domains overlap — gets a binary order y and the
// disjunction "one ends before the other's own duration starts" (both
// chosen): one stream runs one copy at a time, which every real timeline
// satisfies, so the bound stays valid, and the batches become exact. The
// extracted policy lists each batch's items in the MILP's order (items are
// the streams' tie order in the simulator). Only a pair of windows that
// shares both its copy-out op and its trigger op with opposite orders can
// still make the extracted policy slower than the objective.
//
// The class: the recorded order; SWAP items whose copy out starts right
// after the tensor's last use before the window (an on-demand copy issued
// later, as LRU does, is outside it); RECOMPUTE at the producer's cost;
// default host (dispatch 0 ns), full duplex, custom record stream, no pool
// (a pool only adds constraints, so pool policies are inside).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(SwapModel m, SwapModel::Build(trace, 0, budget, so, {}));
//   m.milp();                       // solve it (milp.h)
//   Policy p = m.Extract(solution.values, base);
//
// Complexity: O(ops + tensors + uses) to find the windows; columns and
// rows O(sum over windows of their domain sizes + ops), nonzeros the same
// times the ops each memory row covers.
#ifndef SWAPPLAN_OPTIMUM_SWAP_MODEL_H_
#define SWAPPLAN_OPTIMUM_SWAP_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "swapplan/optimum/milp.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

enum class WindowKind : uint8_t {
  kSwap = 0,
  kClean = 1,
  kRecompute = 2,
  kWrap = 3,
  kWrapClean = 4,
};
// "swap", "clean", "recompute", "wrap", "wrap-clean".
absl::string_view WindowKindName(WindowKind k);

struct SwapWindowVar {
  WindowKind kind = WindowKind::kSwap;
  TensorId tensor = kNoTensor;
  // Index of the gap among the tensor's gaps (uses u_gap, u_gap+1); -1 for
  // the wrap kinds.
  int32_t gap = -1;
  // Local ops: u_gap and u_gap+1 (wrap kinds: the last and the first use).
  int32_t out_op = 0;
  int32_t use_op = 0;
  int64_t size_bytes = 0;
  // Copy durations (0 when the kind makes no such copy) and recompute time.
  int64_t d2h_ns = 0;
  int64_t h2d_ns = 0;
  int64_t recompute_ns = 0;
  int32_t producer_op = -1;  // RECOMPUTE
  // RECOMPUTE with SwapModelOptions::recompute_transient: the bytes of the
  // producer's other outputs, re-made with the tensor and thrown away.
  int64_t transient_bytes = 0;
  // Domains (local ops, ascending) and their first columns: rho for
  // releases[i] is column rho + i, sigma for triggers[i] is sigma + i.
  std::vector<int32_t> releases;
  std::vector<int32_t> triggers;
  int32_t x = -1, rho = -1, sigma = -1;
  int32_t d2h_end = -1, h2d_end = -1;  // -1 when the kind has no such copy
};

struct SwapModelOptions {
  // Offer RECOMPUTE windows (`optimum --no-recompute` turns them off).
  bool recompute = true;
  // Count a recomputation's transient memory (`optimum --recompute-transient`):
  // re-running producer p re-makes all of p's outputs, so at the trigger op s
  // the bytes of p's other outputs are on the device besides op s's own
  // (below: "Transient memory"). On by default: the evaluation simulator
  // counts them (exact RECOMPUTE accounting), and the bound is stated
  // against the simulator.
  bool recompute_transient = true;
  // Offer CLEAN and WRAP windows (the Advisor's item kinds); false limits
  // the class to the SWAP items of Chameleon and the baselines.
  bool advisor_kinds = true;
  // Order the copies of a stream pairwise (below: "Exact batches") when
  // there are at most this many pairs; 0 = never (the batch relaxation).
  int32_t max_order_pairs = 20000;
};

struct SwapModelStats {
  int32_t ops = 0;
  int32_t over_budget_ops = 0;
  int64_t unswapped_peak_bytes = 0;
  int32_t windows[5] = {0, 0, 0, 0, 0};  // by WindowKind
  int32_t columns = 0;
  int32_t binaries = 0;
  int32_t rows = 0;
  int64_t nonzeros = 0;
  // Pairwise orders added (0: the batch relaxation only).
  int32_t order_pairs = 0;
  // Stream-energy rows added (below).
  int32_t energy_rows = 0;
};

class SwapModel {
 public:
  // Builds the model of iteration `iteration` of `trace` (which must outlive
  // the model) under `sim_options` (its capacity is the budget; bandwidths
  // must be set or in the trace). InvalidArgument for simulator settings the
  // model does not represent (half duplex, naive record stream, host
  // dispatch time, Algorithm 3); ResourceExhausted naming the op when no
  // choice of windows can bring some op under the budget.
  static absl::StatusOr<SwapModel> Build(const Trace& trace, int32_t iteration,
                                         const SimulatorOptions& sim_options,
                                         const SwapModelOptions& options);

  const MilpProblem& milp() const { return milp_; }
  const std::vector<SwapWindowVar>& windows() const { return windows_; }
  const SwapModelStats& stats() const { return stats_; }
  // Column of T (the objective), in microseconds.
  int32_t objective_column() const { return t_; }
  // The simulator the model is stated against (capacity = budget).
  const Simulator& simulator() const { return *sim_; }
  int64_t ideal_time_ns() const { return ideal_ns_; }
  // The big M of the rows that hold only when a window is chosen (us): every
  // op, copy and recomputation one after the other.
  double big_m_us() const { return big_m_us_; }
  // Objective value (us) -> ns.
  static int64_t ToNs(double us);

  // The policy of a solution: one item per chosen window (x > 0.5), its
  // release and trigger the largest rho / sigma; items ordered by (swap-in,
  // first use, tensor). `base` supplies fingerprint, budget, bandwidths,
  // planner name and parameters.
  Policy Extract(absl::Span<const double> values, const Policy& base) const;
  // A starting point (values of binary columns) from `policy`: each item
  // mapped to its window, release moved to the first covered op over the
  // budget (the dominance of the release domain), items covering no such
  // op dropped. Items outside the class (another schedule, a copy out not
  // at the last use, a gap the model has no window for) are skipped and
  // counted in `*skipped`. Empty when nothing maps.
  std::vector<std::pair<int32_t, double>> StartFrom(const Policy& policy, int32_t* skipped) const;

 private:
  SwapModel() = default;
  absl::Status FindWindows(const SwapModelOptions& options);
  void AddColumnsAndRows(int32_t max_order_pairs);
  // Appends off_{g,k} (1 when window g has its tensor off the device
  // during op k) as terms times `scale`. With `before_k`, the tensor's
  // state just before op k instead: a copy in triggered at k is still on
  // the link then (what a recomputation run before op k sees).
  void OffTerms(const SwapWindowVar& w, int32_t k, double scale,
                std::vector<MilpTerm>* terms, bool before_k = false) const;

  const Trace* trace_ = nullptr;
  int32_t iteration_ = 0;
  int32_t n_ = 0;
  int64_t budget_ = 0;
  std::optional<Simulator> sim_;
  std::vector<int64_t> duration_ns_;
  std::vector<int64_t> unswapped_;    // bytes per op
  std::vector<uint8_t> over_;         // unswapped_ > budget
  std::vector<SwapWindowVar> windows_;
  MilpProblem milp_;
  SwapModelStats stats_;
  int32_t start_ = -1;  // column of S_0 (S_k = start_ + k)
  int32_t t_ = -1;
  int64_t ideal_ns_ = 0;
  double big_m_us_ = 0;
};

}  // namespace swapplan

#endif  // SWAPPLAN_OPTIMUM_SWAP_MODEL_H_
