// The Advisor's chromosome and its genetic operators (seed 002 §5.2–5.3):
// an operator schedule (a topological order of the dataflow graph) and a
// memory-pool allocation (CLS, CNT over the sorted distinct tensor sizes TS).
//
//   Chromosome c{.schedule = recorded, .alloc = FinestAllocation(...)};
//   auto [s1, s2] = CrossoverSchedules(a.schedule, b.schedule, cr);
//   MutateSchedule(graph, s1, /*p=*/0.1, &rng, &mutated);
//   auto [a1, a2] = CrossoverAllocations(a.alloc, b.alloc, cr);
//   MutateAllocation(0.1, 0.2, &rng, &a1);
//   bool ok = RepairCounts(sizes, MinCounts(problem, a1.cls), budget, &a1);
//
// Schedules. Crossover at CR (Fig. 4): child 1 = the first CR nodes of
//   parent 2, then the other nodes in parent 1's order; child 2 the same
//   with the parents swapped. Both are topological orders when the parents
//   are. Mutation (§5.2) re-runs a ready-set scheduler: with probability P
//   the next node is a uniformly random ready node, otherwise the ready node
//   that comes first in the parent.
//
// Allocations. CLS[i] is the class of size TS[i]: CLS[0] = 0, each step 0
//   or +1 (the paper's restriction, §5.3); class c's objects have the
//   largest size mapped to it; CNT[c] objects in class c.
//   Crossover at CR (Fig. 5): CLS child 1 = CLS2[0, CR) + CLS1[CR, N), then
//   repaired; CNT through the per-size expansion CNTEXT[i] = CNT[CLS[i]],
//   crossed at the same CR, averaged back per class of the child's CLS
//   (rounded to nearest).
//   CLS repair: the paper raises an element that falls below its
//   predecessor by the minimal amount; we keep each step clamped to [0, +1]
//   (a step that went down becomes 0, one that jumped by more becomes +1),
//   which is that rule plus the case the paper leaves out.
//   Mutation: each CLS[i], i >= 1, with probability P: +1 when it equals
//   CLS[i-1], else -1, carried to every later element; counts follow the
//   new classes through the expansion; then each CNT[c] with probability P
//   becomes round(Normal(CNT[c], max(1, sigma_fraction * CNT[c]))).
//   CNT repair: every class gets at least its minimum (the most tensors of
//   the class one op uses); while the pool exceeds the budget by E bytes,
//   each of the C classes above its minimum gives up ceil(E / (C * size))
//   objects (the paper's "inversely proportional to the size class": every
//   class gives up about the same bytes; Fig. 5's [8, 3] -> [4, 2]).
//
// Complexity: schedule crossover O(n), mutation O((n + E) log n); allocation
// operators O(sizes); MinCounts O(uses).
#ifndef SWAPPLAN_PLANNERS_ADVISOR_CHROMOSOME_H_
#define SWAPPLAN_PLANNERS_ADVISOR_CHROMOSOME_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/planners/advisor/problem.h"
#include "swapplan/policy/policy.h"
#include "swapplan/trace/dataflow.h"
#include "swapplan/util/random.h"

namespace swapplan {

struct Allocation {
  std::vector<int32_t> cls;  // per size in TS
  std::vector<int32_t> cnt;  // per class
  int32_t num_classes() const { return cls.empty() ? 0 : cls.back() + 1; }
  bool operator==(const Allocation& o) const { return cls == o.cls && cnt == o.cnt; }
};

struct Chromosome {
  std::vector<int32_t> schedule;  // local op indices in execution order
  Allocation alloc;
};

// --- schedules -----------------------------------------------------------------

// The two children of crossing `a` and `b` at `cr` (0 <= cr <= n).
std::pair<std::vector<int32_t>, std::vector<int32_t>> CrossoverSchedules(
    absl::Span<const int32_t> a, absl::Span<const int32_t> b, int32_t cr);

// Ready-set mutation of `parent` into `out` (resized to n). With p = 1 the
// result is a uniformly random pick at every step (a random topological
// order). Requires `parent` to be a topological order of `graph`.
void MutateSchedule(const DataflowGraph& graph, absl::Span<const int32_t> parent, double p,
                    Rng* rng, std::vector<int32_t>* out);

// --- allocations ------------------------------------------------------------------

// True when cls starts at 0 and steps by 0 or +1, and cnt has one entry per
// class.
bool IsValidAllocation(const Allocation& a);
// The clamped-step repair above.
void RepairClasses(std::vector<int32_t>* cls);
// Object size of each class: the largest size mapped to it.
std::vector<int64_t> ClassObjectBytes(const std::vector<int32_t>& cls,
                                      const std::vector<int64_t>& sizes);
// Sum of CNT[c] * object size; an overflow error (rule overflow) naming the
// size class when it does not fit in int64.
absl::StatusOr<int64_t> AllocationBytes(const Allocation& a, const std::vector<int64_t>& sizes);
// CNTEXT: per size, the count of its class.
std::vector<int32_t> ExpandCounts(const Allocation& a);
// Counts per class of `cls` from a per-size expansion: the rounded mean of
// the class's entries.
std::vector<int32_t> CollapseCounts(const std::vector<int32_t>& cntext,
                                    const std::vector<int32_t>& cls);
// Per class of `cls`: the most objects of the class that some op of the
// recorded order needs whatever the swap plan (its own tensors plus those no
// eviction can move; AdvisorProblem::pin_events). O(tensors + uses).
std::vector<int32_t> MinCounts(const AdvisorProblem& problem, const std::vector<int32_t>& cls);
// CNT repair (above). False when even the minimum counts exceed the budget;
// `a` then holds the minimum counts. Pool bytes are checked sums: a pool
// whose CNT[c] * size overflows int64 exceeds every budget and is repaired
// like any other.
bool RepairCounts(const std::vector<int64_t>& sizes, const std::vector<int32_t>& min_counts,
                  int64_t budget_bytes, Allocation* a);
// The two children of crossing `a` and `b` at `cr` (1 <= cr < sizes), with
// repaired CLS and collapsed (not yet repaired) CNT.
std::pair<Allocation, Allocation> CrossoverAllocations(const Allocation& a, const Allocation& b,
                                                       int32_t cr);
// The mutation above (CNT not repaired).
void MutateAllocation(double p, double cnt_sigma_fraction, Rng* rng, Allocation* a);
// Every size its own class, CNT[c] = the recorded peak count of the size
// (repair it to the budget before use).
Allocation FinestAllocation(const AdvisorProblem& problem);
// The MemoryPool (policy form) of `a` over `sizes`.
MemoryPool ToMemoryPool(const Allocation& a, const std::vector<int64_t>& sizes);

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_ADVISOR_CHROMOSOME_H_
