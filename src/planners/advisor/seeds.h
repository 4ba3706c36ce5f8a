// Seeding the Advisor's search with other planners' policies (issue 20):
// each policy becomes a chromosome —
//   schedule  the policy's (the recorded order when it has none);
//   pool      the one its allocations imply: one class per tensor size,
//             as many objects as tensors of that size are on the device at
//             once under the policy (its items taken off), repaired to the
//             budget (chromosome.h RepairCounts);
//   hints     its swap decisions: the use after which each item takes its
//             tensor off (Chromosome::hints), which the swap planner's
//             Belady choice prefers;
// and the policy itself is kept as it is, simulated, as a candidate the
// search can only improve on (search.h: the elite policy).
//
//   SWAPPLAN_ASSIGN_OR_RETURN(Chromosome c, SeedChromosome(*problem, chameleon_policy));
//
// Complexity: O(ops + uses + tensors + items log items).
#ifndef SWAPPLAN_SRC_PLANNERS_ADVISOR_SEEDS_H_
#define SWAPPLAN_SRC_PLANNERS_ADVISOR_SEEDS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "swapplan/planners/advisor/chromosome.h"
#include "swapplan/planners/advisor/problem.h"
#include "swapplan/policy/policy.h"

namespace swapplan {

// Per size of AdvisorProblem::sizes(): the most tensors of that size on the
// device at once when `policy` runs (its schedule, its items' windows).
// InvalidArgument when the policy is not for the problem's iteration or
// names a tensor the iteration does not hold.
absl::StatusOr<std::vector<int32_t>> ImpliedCounts(const AdvisorProblem& problem,
                                                   const Policy& policy);

// The chromosome of `policy` (above). Its counts are repaired to the budget
// (a pool that cannot fit keeps the minimum counts; the swap planner then
// reports the chromosome infeasible). Errors as ImpliedCounts, plus
// InvalidArgument when the schedule is not a topological order of the
// problem's graph.
absl::StatusOr<Chromosome> SeedChromosome(const AdvisorProblem& problem, const Policy& policy);

}  // namespace swapplan

#endif  // SWAPPLAN_SRC_PLANNERS_ADVISOR_SEEDS_H_
