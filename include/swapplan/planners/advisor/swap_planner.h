// The Advisor's swap planner (seed 002 §4.2, SPEC §5.3): for one chromosome
// — a schedule and a size-class pool — decide which tensors leave the
// device, when their copies run, and when they come back; the result is a
// policy carrying the schedule and the pool.
//
//   SwapPlanner planner(*problem, options.planner);   // one per thread
//   absl::StatusOr<SwapPlan> plan = planner.Plan(chromosome);
//   // ResourceExhausted: some class runs out of evictable objects.
//
// 1. Walk (Belady). Scan the schedule keeping, per class, the tensors on
//    the device (each holds one object). At position p every tensor op p
//    uses must be on the device; one that is not (allocated here, back from
//    an eviction, or a persistent tensor that starts the iteration on the
//    host) needs a free object of its class; when the class is full, evict
//    the resident tensor of that class whose next use is furthest (Belady),
//    among those not used by op p and last used at least the threshold ago
//    (eviction_threshold_ns; when none is that old, the furthest of all if
//    threshold_fallback). With swap hints (Chromosome::hints: another
//    planner's policy took the tensor off after this use) hinted tensors
//    come first, Belady among them. Evictable: a tensor used earlier in the iteration
//    and used again later in it, or a persistent tensor (next use: its
//    first use of the next iteration, n + first), or an initial-resident
//    persistent tensor not yet used (evicting it = it starts on the host).
//    Tensors leave at their free position.
// 2. Double pass (param_residency). Pass 1 starts with every used
//    persistent tensor on the host; those on the device at its end are the
//    initial residents of pass 2, which drops any it evicts before its first
//    use. A persistent tensor that starts on the device must end on it: if
//    the pass ends with one off the device, it is dropped from the initial
//    residents and the pass repeated (at most max_passes, then pass 1's
//    plan). Persistent tensors that start on the host and end the pass on
//    the device are swapped out after their last use (a wrapping item,
//    policy.h) so the end set equals the start set.
// 3. Copies out. Each eviction copies its tensor out after its last use
//    before the eviction — no copy when clean (it came from the host and
//    nothing wrote it since). Copies run FIFO in swap-out order on the
//    stall-free timeline of the schedule; the release point is the position
//    during which the copy ends, but no later than the position before the
//    object is needed: then the item is marked release_waits_for_copy (the
//    op after the release waits for the copy — seed 002 §4.2's edge from a
//    swap-out to the swap-in that reuses its memory; the simulator charges
//    the wait, the checker counts it).
// 4. Copies in, as early as memory allows: in order of first use, each
//    returning tensor's swap-in moves back from its use to just after the
//    last earlier position where its class has no free object — not before
//    its own release, nor before the previous swap-in (the h2d stream is
//    FIFO). Persistent tensors on the host at the start may come in from
//    position 0.
//
//   position      ... u ......... r ....... p ......... t .......... b
//   victim V      last use u |== copy out ==| released after r
//   needing X                                 p: X needs V's object
//   V back                                    trigger t (first free)  b: next use of V
//
// Complexity per plan: O((ops + uses) log uses) per pass (heaps of resident
// tensors per class), plus O(ops x classes with swap-ins) for the count
// arrays and O(sum of swap-in look-back distances) for the triggers.
#ifndef SWAPPLAN_PLANNERS_ADVISOR_SWAP_PLANNER_H_
#define SWAPPLAN_PLANNERS_ADVISOR_SWAP_PLANNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "swapplan/planners/advisor/chromosome.h"
#include "swapplan/planners/advisor/options.h"
#include "swapplan/planners/advisor/problem.h"
#include "swapplan/policy/policy.h"

namespace swapplan {

struct SwapPlan {
  // Items, schedule and pool; fingerprint, budget, bandwidths and planner
  // parameters from the problem.
  Policy policy;
  // Walk passes run, and whether the final plan is pass 1's fallback.
  int32_t passes = 0;
  bool fell_back_to_pass1 = false;
  // Persistent tensors resident when the iteration starts (of those used).
  int32_t initial_residents = 0;
  // Evictions (mid-iteration windows) and wrapping items.
  int32_t evictions = 0;
  int32_t wrapping = 0;
};

class SwapPlanner {
 public:
  SwapPlanner(const AdvisorProblem& problem, const SwapPlannerOptions& options);

  // Plans chromosome `c` (its schedule must be a topological order and its
  // allocation valid, with counts repaired). `runtime_keys` fills the
  // items' runtime keys (dtype, size, shape, op count) — needed in the
  // policy written out, not for the fitness. ResourceExhausted naming the
  // class and op when a class has no evictable tensor. Not thread-safe:
  // one planner per thread (it keeps its scratch arrays).
  absl::StatusOr<SwapPlan> Plan(const Chromosome& c, bool runtime_keys = false);

 private:
  struct Eviction {
    int32_t slot;
    int32_t out;   // position of the last use before the eviction
    int32_t need;  // position whose arrival needed the object (n: end swap-out)
    int32_t back = -1;  // position it returns at; -1 = not within the iteration
    bool clean = false;
    int32_t op_count = 0;  // uses up to and including `out`
    int32_t release = 0;   // position, after copy timing
    bool waits = false;    // released before the copy's estimated end
    int32_t trigger = 0;   // swap-in position, after trigger timing
  };
  struct HeapEntry {
    int64_t key;
    int32_t slot;
    uint32_t stamp;
    bool operator<(const HeapEntry& o) const {
      return key != o.key ? key < o.key : slot > o.slot;  // ties: lower slot first
    }
  };

  void Prepare(const Chromosome& c);
  // One walk with the persistent tensors in initial_ starting on the
  // device. Fills evictions_ and wrap_in_. ResourceExhausted on failure.
  absl::Status Walk(const Chromosome& c);
  int64_t KeyAfterUse(int32_t slot) const;
  int32_t PickVictim(int32_t cls, int32_t p);
  void Evict(int32_t slot, int32_t p);
  void TimeCopiesOut();
  void TimeCopiesIn(const Chromosome& c);
  SwapPlan Emit(const Chromosome& c, bool runtime_keys);

  const AdvisorProblem& problem_;
  SwapPlannerOptions options_;
  int32_t n_ = 0;

  // Per plan: positions, stall-free end times, per-slot class and scheduled
  // lifetime, uses in positions (CSR by AdvisorTensor::use_offset).
  std::vector<int32_t> pos_;
  std::vector<int64_t> end_ns_;
  std::vector<int32_t> slot_class_, alloc_pos_, free_pos_;
  std::vector<int32_t> use_pos_;
  std::vector<uint8_t> use_writes_;
  std::vector<int32_t> arrive_begin_, arrive_slots_;  // slots by alloc position
  std::vector<int32_t> free_begin_, free_slots_;      // slots by free position
  std::vector<int64_t> threshold_ns_;                 // per class
  std::vector<int32_t> capacity_;                     // per class

  // Per pass.
  std::vector<uint8_t> initial_;  // persistent slot starts on the device
  std::vector<uint8_t> resident_, from_host_;
  std::vector<int32_t> next_idx_, last_use_, pinned_at_, open_evict_, wrap_in_;
  std::vector<uint32_t> stamp_;
  std::vector<int32_t> in_use_;
  std::vector<std::vector<HeapEntry>> heap_;
  std::vector<HeapEntry> stash_;
  std::vector<Eviction> evictions_;
  std::vector<int32_t> arrivals_;  // scratch
  int32_t fail_class_ = -1, fail_pos_ = -1;

  // Timing scratch.
  std::vector<int32_t> order_;
  std::vector<int32_t> count_row_;  // per class: row in counts_, -1 none
  std::vector<int32_t> counts_;
  std::vector<int32_t> wrap_trigger_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_ADVISOR_SWAP_PLANNER_H_
