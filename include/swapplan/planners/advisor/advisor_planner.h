// AdvisorPlanner: the SwapAdvisor-style planner (SPEC §5, seed 002 §4–5)
// behind the Planner interface — a genetic search over operator schedules
// and size-class memory pools, each judged by its Belady swap plan in the
// evaluation simulator. Its policies carry the schedule and the pool.
//
//   AdvisorOptions o;
//   o.search.time_limit_ns = 60'000'000'000;
//   AdvisorPlanner planner(o);
//   planner.set_progress([](const GenerationStats& g) { ... });
//   SWAPPLAN_ASSIGN_OR_RETURN(Policy p, planner.Plan(problem));
//   planner.last_result();   // generations, evaluations, history
//
// Registered as "advisor" (planners/registry.h) with CompareDefaults(): a
// short search that is reproducible on small traces (a generation limit)
// and bounded on large ones (a time limit). SetOption takes every option of
// AdvisorOptionTable() (advisor/options.h), by the names policies record and
// `swapplan search`'s flags use (time-limit-ns=30s, max-generations=5,
// seed-planners=chameleon,lru, local-search-moves=2000, ...).
//
// Seeds (issue 20): before searching, Plan runs every planner of
// options().seed_planners on the problem (Chameleon and the baselines by
// default) and hands their policies to the search, which returns nothing
// slower than the fastest of them (search.h).
#ifndef SWAPPLAN_PLANNERS_ADVISOR_ADVISOR_PLANNER_H_
#define SWAPPLAN_PLANNERS_ADVISOR_ADVISOR_PLANNER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/planners/advisor/options.h"
#include "swapplan/planners/advisor/search.h"
#include "swapplan/planners/planner.h"
#include "swapplan/sim/simulator.h"

namespace swapplan {

class AdvisorPlanner : public Planner {
 public:
  explicit AdvisorPlanner(AdvisorOptions options = CompareDefaults(),
                          SimulatorOptions sim_options = {})
      : options_(std::move(options)), sim_options_(sim_options) {}

  // 30 generations or 20 s, whichever comes first; everything else default.
  static AdvisorOptions CompareDefaults();

  std::string name() const override { return "advisor"; }
  absl::Status SetOption(absl::string_view name, absl::string_view value) override;
  // Seeds (search.h): the given policies, plus a policy from every planner
  // of options().seed_planners not among them; `judge` becomes the fitness
  // simulator's settings.
  bool UsesSeedPolicies() const override { return true; }
  // Its policies carry the chromosome's schedule and pool.
  bool AlwaysReorders() const override { return true; }
  void SetSeedPolicies(std::vector<Policy> policies, const SimulatorOptions& judge) override {
    seed_policies_ = std::move(policies);
    sim_options_ = judge;
  }
  std::vector<OptionInfo> DescribeOptions() const override;

  const AdvisorOptions& options() const { return options_; }
  // Plans as one island of an island model (islands.h; null = none). The
  // transport must outlive Plan.
  void set_islands(IslandTransport* transport, IslandOptions options = {}) {
    islands_ = transport;
    island_options_ = options;
  }
  void set_progress(ProgressCallback progress) { progress_ = std::move(progress); }
  // Ends the search early (GeneticSearch::SetStop; seeds are planned first
  // and are not interrupted).
  void set_stop(StopCallback stop) { stop_ = std::move(stop); }
  // The last Plan's search (empty before the first successful one). Its
  // plan's policy is the search's, before Plan finished it.
  const std::optional<SearchResult>& last_result() const { return last_; }

 protected:
  // Searches and returns the best policy. ResourceExhausted when no
  // chromosome fits the budget.
  absl::StatusOr<Policy> PlanPolicy(const PlanningProblem& problem) override;

 private:
  AdvisorOptions options_;
  SimulatorOptions sim_options_;
  ProgressCallback progress_;
  StopCallback stop_;
  std::optional<SearchResult> last_;
  std::vector<Policy> seed_policies_;
  IslandTransport* islands_ = nullptr;
  IslandOptions island_options_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_ADVISOR_ADVISOR_PLANNER_H_
