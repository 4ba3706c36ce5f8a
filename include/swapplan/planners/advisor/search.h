// The Advisor's genetic search (seed 002 §5, SPEC §5.4): a population of
// (schedule, pool) chromosomes evolved by crossover and mutation, each
// judged by its swap plan's iteration time in the evaluation simulator,
// survivors drawn by softmax over normalised time.
//
//   GeneticSearch search(*problem, options);
//   SWAPPLAN_ASSIGN_OR_RETURN(SearchResult r, search.Run([](const GenerationStats& g) {
//     std::cerr << g.generation << " best " << g.best_ns << "\n";
//   }));
//   WritePolicy(r.plan.policy, "advisor.json");
//
// One generation:
//   pairs     the survivors in a random order, taken two by two (Np / 2 pairs)
//   children  each pair gives 2 schedules x 2 allocations = 4 children
//             (chromosome.h crossover at random points), each then mutated
//             (schedule and allocation, probability P) and its counts
//             repaired to the budget
//   fitness   swap planner (swap_planner.h) + evaluation simulator with the
//             pool modelled; a chromosome without a plan, or whose plan the
//             simulator finds out of memory, is infeasible (never survives
//             while feasible ones can)
//   survival  from the Np survivors and 2 Np children (S = 3 Np): the
//             `elites` fastest, then the rest drawn without replacement with
//             probability proportional to exp(t_norm / temperature),
//             t_norm = (T_best - t) / T_best, T_best the best time seen so
//             far (Eq. 1; Efraimidis–Spirakis keys)
//
// Seeds and the elite (issue 20). Policies of other planners (AddSeed;
// AdvisorPlanner passes Chameleon's and every baseline's) enter twice: as
// chromosomes in the first generation, each with `seed_mutants` mutants
// (seeds.h: their schedule, the pool their allocations imply, their swaps
// as hints to the swap planner), and as they are, simulated, as candidates
// for the elite — the best policy seen so far. After the first generation
// and after each one the elite is replaced by the plan of the best
// chromosome when that is faster, then improved by `local_search_moves`
// moves of local search (local_search.h), each kept only when it makes the
// policy faster. The result is the elite: never slower than the best seed,
// never slower than the best chromosome, and never slower than it was the
// generation before.
//
// Parallelism and determinism: children (and the first generation) are
// made and evaluated on a thread pool, each from its own seed drawn in
// order from the master generator, so the result for a seed does not depend
// on the thread count — unless the time limit ends the search (or cuts a
// generation short: children not started by the deadline are dropped).
//
// Stops on the time limit, the generation limit, or convergence (no
// relative improvement of the best above the tolerance for K generations).
// Complexity per generation: 2 Np plans and simulations, O(Np log Np)
// selection.
#ifndef SWAPPLAN_PLANNERS_ADVISOR_SEARCH_H_
#define SWAPPLAN_PLANNERS_ADVISOR_SEARCH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "swapplan/planners/advisor/chromosome.h"
#include "swapplan/planners/advisor/islands.h"
#include "swapplan/planners/advisor/options.h"
#include "swapplan/planners/advisor/problem.h"
#include "swapplan/planners/advisor/swap_planner.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {

inline constexpr int64_t kInfeasibleNs = INT64_MAX;

struct GenerationStats {
  // 0 = the first generation.
  int32_t generation = 0;
  int64_t elapsed_ns = 0;
  // Simulated iteration time over the feasible survivors (-1 when none).
  int64_t best_ns = -1;
  int64_t mean_ns = -1;
  int64_t worst_ns = -1;
  // Best chromosome ever (-1 when none feasible yet).
  int64_t best_ever_ns = -1;
  // The elite policy after this generation's local search (-1: none yet):
  // what the search would return now.
  int64_t elite_ns = -1;
  // Islands (SetIslands): the fastest elite over all islands (-1: none yet
  // or no islands).
  int64_t islands_best_ns = -1;
  int32_t feasible = 0;
  int32_t population = 0;
  // Evaluations so far, and per second in this generation.
  int64_t evaluations = 0;
  double evaluations_per_s = 0;
};

using ProgressCallback = std::function<void(const GenerationStats&)>;
// Asked between evaluations (and every 64 local-search moves): true ends the
// search as its time limit would, with the best result so far and
// stop_reason "stopped" (a service's request deadline or cancellation).
// Called from the search's evaluation threads, several at once when
// options.search.threads > 1: must be thread-safe and cheap (O(1)).
using StopCallback = std::function<bool()>;

// A seed policy as the search saw it.
struct SeedOutcome {
  std::string name;
  // Simulated with the search's fitness simulator; -1 when it does not fit
  // (or the simulator rejects it).
  int64_t time_ns = -1;
  // Whether it became a chromosome (seeds.h), and why not.
  bool chromosome = false;
  std::string note;
};

struct SearchResult {
  // The best chromosome.
  Chromosome best;
  // The returned policy: the elite (with runtime keys where the swap planner
  // made its items; simulated_iteration_time_ns, expected peak and
  // overhead set; release waits marked for the checker) and its simulation.
  SwapPlan plan;
  SimulationResult simulation;
  int64_t best_ns = kInfeasibleNs;
  // Where the returned policy comes from: "genetic" (the best chromosome's
  // plan) or "seed <planner>", followed by " + local search" when moves
  // improved it.
  std::string source;
  std::vector<SeedOutcome> seeds;
  int64_t local_moves_tried = 0;
  int64_t local_moves_kept = 0;
  // Islands (islands.h): how many, this one's rank, migrations received.
  int32_t islands = 1;
  int32_t island_rank = 0;
  int64_t migrations = 0;
  int32_t generations = 0;
  int64_t evaluations = 0;
  int64_t infeasible_evaluations = 0;
  int64_t elapsed_ns = 0;
  // "time limit", "generation limit", "converged", "stopped" (SetStop).
  std::string stop_reason;
  std::vector<GenerationStats> history;
};

// Fitness of one chromosome: its plan's simulated iteration time.
// ResourceExhausted when it has no plan or the simulator runs out of
// memory. `planner` must be built on `problem`.
absl::StatusOr<int64_t> EvaluateChromosome(const AdvisorProblem& problem, SwapPlanner* planner,
                                           const Chromosome& c);

class GeneticSearch {
 public:
  GeneticSearch(const AdvisorProblem& problem, const AdvisorOptions& options);

  // Searches schedules only: every chromosome uses `alloc` (its counts
  // repaired to the budget) — the "schedule only" search of seed 002
  // Fig. 10, and a fixed pool for exhaustive cross-checks.
  void FixAllocation(Allocation alloc) { fixed_alloc_ = std::move(alloc); }
  // Searches pools only: every chromosome runs the recorded order (the
  // "memory allocation only" search of Fig. 10).
  void FixRecordedSchedule() { fixed_schedule_ = true; }
  // Ends the search early when `stop` returns true (StopCallback); empty =
  // only the options' limits.
  void SetStop(StopCallback stop) { stop_ = std::move(stop); }
  // Adds another planner's policy for the problem's iteration as a seed
  // (above). Seeds that the simulator rejects or that do not fit are
  // reported in SearchResult::seeds and otherwise ignored.
  void AddSeed(std::string name, Policy policy) {
    seeds_.push_back({std::move(name), std::move(policy)});
  }
  // Runs as one island of an island model (islands.h): every island calls
  // Run with the same problem and options, each with its transport, which
  // must outlive Run. Null = a single population.
  void SetIslands(IslandTransport* transport, IslandOptions options = {}) {
    islands_ = transport;
    island_options_ = options;
  }

  // Runs the search. ResourceExhausted when no chromosome of any
  // generation was feasible (the message gives the last reason);
  // InvalidArgument for bad options or a fixed allocation that does not fit
  // the problem's sizes.
  absl::StatusOr<SearchResult> Run(const ProgressCallback& progress = nullptr);

 private:
  const AdvisorProblem& problem_;
  AdvisorOptions options_;
  struct Seed {
    std::string name;
    Policy policy;
  };
  std::optional<Allocation> fixed_alloc_;
  bool fixed_schedule_ = false;
  StopCallback stop_;
  std::vector<Seed> seeds_;
  IslandTransport* islands_ = nullptr;
  IslandOptions island_options_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_ADVISOR_SEARCH_H_
