// The Advisor's genetic search; the method is described in search.h.
#include "swapplan/planners/advisor/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/planners/advisor/islands.h"
#include "planners/advisor/local_search.h"
#include "planners/advisor/seeds.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/checker.h"
#include "swapplan/util/random.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/thread_pool.h"
#include "swapplan/util/units.h"

namespace swapplan {

absl::StatusOr<int64_t> EvaluateChromosome(const AdvisorProblem& problem, SwapPlanner* planner,
                                           const Chromosome& c) {
  SWAPPLAN_ASSIGN_OR_RETURN(SwapPlan plan, planner->Plan(c));
  SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, problem.simulator().Run(plan.policy));
  if (r.oom.occurred) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the plan runs out of memory in the simulator at op ", r.oom.op,
        r.oom.pool_class >= 0 ? absl::StrCat(" (class ", r.oom.pool_class, ")") : std::string()));
  }
  return r.iteration_time_ns;
}

GeneticSearch::GeneticSearch(const AdvisorProblem& problem, const AdvisorOptions& options)
    : problem_(problem), options_(options) {}

namespace {

using Clock = std::chrono::steady_clock;

struct Individual {
  Chromosome c;
  int64_t time_ns = kInfeasibleNs;
  bool evaluated = false;
};

// Per-worker scratch: a swap planner and the last failure seen.
struct Worker {
  std::unique_ptr<SwapPlanner> planner;
  std::string last_failure;
};

// A random allocation: each size starts a new class with probability q
// (uniform in [0.2, 1]); counts from the summed recorded peaks of the
// class's sizes, Gaussian-mutated, repaired. Falls back to the finest
// allocation when the minimum counts of a random one exceed the budget.
bool RandomAllocation(const AdvisorProblem& problem, const SearchOptions& o, Rng* rng,
                      Allocation* out) {
  const std::vector<int64_t>& sizes = problem.sizes();
  for (int attempt = 0; attempt < 4; ++attempt) {
    Allocation a;
    const double q = 0.2 + 0.8 * rng->UniformDouble();
    a.cls.resize(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      a.cls[i] = i == 0 ? 0 : a.cls[i - 1] + (rng->Bernoulli(q) ? 1 : 0);
    }
    a.cnt.assign(a.num_classes(), 0);
    for (size_t i = 0; i < sizes.size(); ++i) a.cnt[a.cls[i]] += problem.recorded_peak_count()[i];
    for (int32_t& c : a.cnt) {
      c = static_cast<int32_t>(std::max(0.0, std::round(rng->Normal(c, std::max(1.0, o.cnt_sigma_fraction * c)))));
    }
    if (RepairCounts(sizes, MinCounts(problem, a.cls), problem.budget_bytes(), &a)) {
      *out = std::move(a);
      return true;
    }
  }
  Allocation a = FinestAllocation(problem);
  if (!RepairCounts(sizes, MinCounts(problem, a.cls), problem.budget_bytes(), &a)) return false;
  *out = std::move(a);
  return true;
}

}  // namespace

absl::StatusOr<SearchResult> GeneticSearch::Run(const ProgressCallback& progress) {
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  const SearchOptions& o = options_.search;
  const auto start = Clock::now();
  auto elapsed_ns = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  };
  const bool timed = o.time_limit_ns > 0;
  auto stopped = [&] { return stop_ && stop_(); };
  auto past_deadline = [&] {
    return (timed && elapsed_ns() >= o.time_limit_ns) || stopped();
  };

  const std::vector<int64_t>& sizes = problem_.sizes();
  const int32_t n = problem_.num_ops();
  const int64_t budget = problem_.budget_bytes();
  if (fixed_alloc_) {
    if (fixed_alloc_->cls.size() != sizes.size() || !IsValidAllocation(*fixed_alloc_)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "advisor: the fixed allocation has ", fixed_alloc_->cls.size(), " size classes entries "
          "for ", sizes.size(), " tensor sizes, or an invalid CLS/CNT"));
    }
    if (!RepairCounts(sizes, MinCounts(problem_, fixed_alloc_->cls), budget, &*fixed_alloc_)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("advisor: the fixed pool cannot fit the budget of ", FormatBytes(budget)));
    }
  }
  // Whether any pool fits: without one the genetic part cannot plan, and
  // only seeds (byte-granular policies) and local search remain.
  absl::Status pool_error;
  {
    Allocation finest = FinestAllocation(problem_);
    const std::vector<int32_t> min = MinCounts(problem_, finest.cls);
    if (!RepairCounts(sizes, min, budget, &finest)) {
      // Where the recorded order pins the most bytes (for the message).
      int64_t live = 0, most = -1;
      int32_t at = 0;
      const std::vector<AdvisorProblem::PinEvent>& ev = problem_.pin_events();
      for (size_t k = 0; k < ev.size();) {
        const int32_t p = ev[k].position;
        for (; k < ev.size() && ev[k].position == p; ++k) live += ev[k].delta * sizes[ev[k].size_index];
        if (p < n && live > most) {
          most = live;
          at = p;
        }
      }
      const Trace& t = problem_.trace();
      SWAPPLAN_ASSIGN_OR_RETURN(const int64_t finest_bytes, AllocationBytes(finest, sizes));
      pool_error = absl::ResourceExhaustedError(absl::StrCat(
          "advisor: the budget of ", FormatBytes(budget),
          " cannot hold the pool objects the recorded order needs whatever is swapped — each "
          "op's tensors and those no eviction can move (",
          FormatBytes(finest_bytes), " with one class per tensor size; op ", at,
          " (", t.op_name_at(t.iteration(problem_.iteration()).op_begin + at), ") alone pins ",
          FormatBytes(most), ")"));
    }
  }

  SearchResult result;
  // --- seeds (seeds.h): chromosomes, and candidates for the elite ------------
  std::vector<Chromosome> seed_chromosomes;
  std::optional<Policy> elite;
  int64_t elite_ns = kInfeasibleNs;
  auto adopt = [&](Policy p) {
    const Policy& base = problem_.base_policy();
    p.fingerprint = base.fingerprint;
    p.device = base.device;
    p.planner = base.planner;
    p.parameters = base.parameters;
    p.runtime = PolicyRuntime();
    return p;
  };
  for (const Seed& sd : seeds_) {
    SeedOutcome out;
    out.name = sd.name;
    absl::StatusOr<SimulationResult> sr = problem_.simulator().Run(sd.policy);
    if (!sr.ok()) {
      out.note = absl::StrCat("rejected by the simulator: ", sr.status().message());
    } else if (sr->oom.occurred) {
      out.note = absl::StrCat("does not fit the budget (out of memory at op ", sr->oom.op, ")");
    } else {
      out.time_ns = sr->iteration_time_ns;
      if (out.time_ns < elite_ns) {
        elite = adopt(sd.policy);
        elite_ns = out.time_ns;
        result.source = absl::StrCat("seed ", sd.name);
      }
    }
    if (sr.ok()) {
      absl::StatusOr<Chromosome> c = SeedChromosome(problem_, sd.policy);
      if (c.ok()) {
        seed_chromosomes.push_back(*std::move(c));
        out.chromosome = true;
      } else if (out.note.empty()) {
        out.note = absl::StrCat("no chromosome: ", c.status().message());
      }
    }
    result.seeds.push_back(std::move(out));
  }
  if (!pool_error.ok() && !elite) return pool_error;
  const bool genetic = pool_error.ok();

  ThreadPool pool(o.threads);
  std::vector<Worker> workers(pool.size());
  for (Worker& w : workers) w.planner = std::make_unique<SwapPlanner>(problem_, options_.planner);
  Rng master(islands_ != nullptr ? IslandSeed(o.seed, islands_->rank()) : o.seed);
  if (islands_ != nullptr) {
    SWAPPLAN_RETURN_IF_ERROR(island_options_.Validate());
    result.islands = islands_->size();
    result.island_rank = islands_->rank();
  }
  std::vector<int32_t> recorded(n);
  std::iota(recorded.begin(), recorded.end(), 0);

  std::atomic<int64_t> infeasible{0};
  std::string last_failure;
  std::mutex failure_mu;

  int32_t generation = 0;
  // Evaluates `ind` (its chromosome already made) unless past the deadline
  // (the first generation is always evaluated).
  auto evaluate = [&](Individual* ind, Worker* w) {
    if (generation > 0 && past_deadline()) return;
    ind->evaluated = true;
    absl::StatusOr<int64_t> t = EvaluateChromosome(problem_, w->planner.get(), ind->c);
    if (t.ok()) {
      ind->time_ns = *t;
    } else {
      ind->time_ns = kInfeasibleNs;
      infeasible.fetch_add(1);
      std::lock_guard<std::mutex> lock(failure_mu);
      last_failure = std::string(t.status().message());
    }
  };

  // --- first generation ------------------------------------------------------
  std::vector<Individual> population(o.population);
  std::vector<uint64_t> seeds(o.population);
  for (uint64_t& s : seeds) s = master.Next();
  std::atomic<bool> alloc_failed{false};
  // Individuals 1..seeded: each seed chromosome, then its mutants.
  const int32_t per_seed = 1 + o.seed_mutants;
  const int64_t seeded = std::min<int64_t>(
      o.population - 1, static_cast<int64_t>(seed_chromosomes.size()) * per_seed);
  pool.ParallelFor(genetic ? o.population : 0, [&](int64_t i, int worker) {
    Rng rng(seeds[i]);
    Individual& ind = population[i];
    if (i >= 1 && i <= seeded) {
      const Chromosome& sc = seed_chromosomes[(i - 1) / per_seed];
      ind.c = sc;
      if ((i - 1) % per_seed != 0) {
        MutateSchedule(problem_.graph(), sc.schedule, o.mutation_probability, &rng,
                       &ind.c.schedule);
        MutateAllocation(o.mutation_probability, o.cnt_sigma_fraction, &rng, &ind.c.alloc);
        RepairCounts(sizes, MinCounts(problem_, ind.c.alloc.cls), budget, &ind.c.alloc);
      }
      if (fixed_schedule_) ind.c.schedule = recorded;
      if (fixed_alloc_) ind.c.alloc = *fixed_alloc_;
      evaluate(&ind, &workers[worker]);
      return;
    }
    if (fixed_schedule_) {
      ind.c.schedule = recorded;
    } else if (o.initial == InitialPopulation::kRandom) {
      MutateSchedule(problem_.graph(), recorded, 1.0, &rng, &ind.c.schedule);
    } else if (i == 0) {
      ind.c.schedule = recorded;
    } else {
      // Mutation probabilities spread over (0, 1], most of them small.
      const double u = static_cast<double>(i) / o.population;
      MutateSchedule(problem_.graph(), recorded, u * u, &rng, &ind.c.schedule);
    }
    if (fixed_alloc_) {
      ind.c.alloc = *fixed_alloc_;
    } else if (i == 0) {
      ind.c.alloc = FinestAllocation(problem_);
      RepairCounts(sizes, MinCounts(problem_, ind.c.alloc.cls), budget, &ind.c.alloc);
    } else if (!RandomAllocation(problem_, o, &rng, &ind.c.alloc)) {
      alloc_failed = true;
      return;
    }
    evaluate(&ind, &workers[worker]);
  });
  if (alloc_failed) return absl::InternalError("advisor: could not repair a first-generation pool");
  int64_t evaluations = genetic ? o.population : 0;

  int64_t best_ever = kInfeasibleNs;
  Chromosome best_chromosome;
  int32_t last_improvement = 0;
  auto note_best = [&](const std::vector<Individual>& v) {
    for (const Individual& ind : v) {
      if (ind.evaluated && ind.time_ns < best_ever) {
        best_ever = ind.time_ns;
        best_chromosome = ind.c;
      }
    }
  };
  // --- the elite: the best chromosome's plan when faster, then local search ---
  SwapPlanner elite_planner(problem_, options_.planner);
  std::unique_ptr<PolicyImprover> improver;
  bool improver_current = false;  // the improver holds the elite
  bool improved_locally = false;
  int64_t best_overall = kInfeasibleNs;
  auto advance_elite = [&](int32_t gen) -> absl::Status {
    if (best_ever < elite_ns) {
      SWAPPLAN_ASSIGN_OR_RETURN(SwapPlan plan,
                                elite_planner.Plan(best_chromosome, /*runtime_keys=*/true));
      elite = std::move(plan.policy);
      elite_ns = best_ever;
      result.source = "genetic";
      improved_locally = false;
      improver_current = false;
    }
    // Drawn every generation, so that the master stream does not depend on
    // whether there is an elite yet.
    const uint64_t local_seed = master.Next();
    if (elite && o.local_search_moves > 0) {
      if (!improver) {
        SWAPPLAN_ASSIGN_OR_RETURN(improver, PolicyImprover::Create(problem_));
      }
      if (!improver_current) {
        SWAPPLAN_RETURN_IF_ERROR(improver->Reset(*elite));
        improver_current = true;
      }
      Rng rng(local_seed);
      if (improver->Improve(o.local_search_moves, &rng, past_deadline) > 0) {
        elite = improver->policy();
        elite_ns = improver->time_ns();
        improved_locally = true;
      }
    }
    const int64_t now = std::min(best_ever, elite_ns);
    if (now < best_overall) {
      if (best_overall == kInfeasibleNs ||
          static_cast<double>(best_overall - now) > o.convergence_tolerance * best_overall) {
        last_improvement = gen;
      }
      best_overall = now;
    }
    return absl::OkStatus();
  };
  // --- islands (islands.h): the fastest elite of all islands, migration ----
  int64_t islands_best = kInfeasibleNs;
  auto exchange = [&](int32_t gen) -> absl::Status {
    if (islands_ == nullptr) return absl::OkStatus();
    SWAPPLAN_ASSIGN_OR_RETURN(islands_best, islands_->Min(elite_ns));
    if (islands_->size() < 2 || gen == 0 || gen % island_options_.migration_interval != 0) {
      return absl::OkStatus();
    }
    Migration out;
    std::vector<int32_t> by_time(population.size());
    std::iota(by_time.begin(), by_time.end(), 0);
    std::stable_sort(by_time.begin(), by_time.end(), [&](int32_t x, int32_t y) {
      return population[x].time_ns < population[y].time_ns;
    });
    for (int32_t i = 0; i < island_options_.migrants && i < static_cast<int32_t>(by_time.size()); ++i) {
      const Individual& ind = population[by_time[i]];
      if (ind.time_ns == kInfeasibleNs) break;
      out.chromosomes.push_back(ind.c);
      out.times_ns.push_back(ind.time_ns);
    }
    if (elite) {
      out.elite = PolicyToBinary(*elite);
      out.elite_ns = elite_ns;
    }
    SWAPPLAN_ASSIGN_OR_RETURN(std::string got, islands_->Shift(EncodeMigration(out)));
    SWAPPLAN_ASSIGN_OR_RETURN(Migration in, DecodeMigration(got));
    // The newcomers replace the slowest individuals.
    for (size_t k = 0; k < in.chromosomes.size() && k < by_time.size(); ++k) {
      Individual& slot = population[by_time[by_time.size() - 1 - k]];
      slot.c = std::move(in.chromosomes[k]);
      slot.time_ns = in.times_ns[k];
      slot.evaluated = true;
      if (slot.time_ns < best_ever) {
        best_ever = slot.time_ns;
        best_chromosome = slot.c;
      }
    }
    ++result.migrations;
    if (!in.elite.empty() && in.elite_ns < elite_ns) {
      SWAPPLAN_ASSIGN_OR_RETURN(Policy p, ParsePolicyBinary(in.elite, "island migration"));
      elite = adopt(std::move(p));
      elite_ns = in.elite_ns;
      result.source = absl::StrCat("island ", (islands_->rank() + islands_->size() - 1) % islands_->size());
      improved_locally = false;
      improver_current = false;
    }
    return absl::OkStatus();
  };
  auto report = [&](int32_t gen, int64_t evals_this_gen, double gen_seconds) {
    GenerationStats g;
    g.generation = gen;
    g.elapsed_ns = elapsed_ns();
    g.population = static_cast<int32_t>(population.size());
    int64_t sum = 0;
    for (const Individual& ind : population) {
      if (ind.time_ns == kInfeasibleNs) continue;
      ++g.feasible;
      sum += ind.time_ns;
      g.best_ns = g.best_ns < 0 ? ind.time_ns : std::min(g.best_ns, ind.time_ns);
      g.worst_ns = std::max(g.worst_ns, ind.time_ns);
    }
    if (g.feasible > 0) g.mean_ns = sum / g.feasible;
    g.best_ever_ns = best_ever == kInfeasibleNs ? -1 : best_ever;
    g.elite_ns = elite_ns == kInfeasibleNs ? -1 : elite_ns;
    g.islands_best_ns = islands_best == kInfeasibleNs ? -1 : islands_best;
    g.evaluations = evaluations;
    g.evaluations_per_s = gen_seconds > 0 ? evals_this_gen / gen_seconds : 0;
    result.history.push_back(g);
    if (progress) progress(g);
  };
  note_best(population);
  SWAPPLAN_RETURN_IF_ERROR(advance_elite(0));
  SWAPPLAN_RETURN_IF_ERROR(exchange(0));
  report(0, o.population,
         std::chrono::duration<double>(Clock::now() - start).count());

  // --- generations ---------------------------------------------------------------
  const int32_t pairs = o.population / 2;
  std::vector<Individual> children(static_cast<size_t>(pairs) * 4);
  std::vector<int32_t> order(o.population);
  std::vector<std::pair<double, int32_t>> keys;
  for (;;) {
    std::string stop;
    if (o.max_generations > 0 && generation >= o.max_generations) {
      stop = "generation limit";
    } else if (stopped()) {
      stop = "stopped";
    } else if (past_deadline()) {
      stop = "time limit";
    } else if (o.convergence_generations > 0 && best_overall != kInfeasibleNs &&
               generation - last_improvement >= o.convergence_generations) {
      stop = "converged";
    }
    if (islands_ != nullptr) {
      // All islands stop at the same generation.
      SWAPPLAN_ASSIGN_OR_RETURN(const bool any, islands_->Any(!stop.empty()));
      if (any && stop.empty()) stop = "another island stopped";
    }
    if (!stop.empty()) {
      result.stop_reason = std::move(stop);
      break;
    }
    ++generation;
    const auto gen_start = Clock::now();
    std::iota(order.begin(), order.end(), 0);
    for (int32_t i = o.population - 1; i > 0; --i) {
      std::swap(order[i], order[master.Uniform(static_cast<uint64_t>(i) + 1)]);
    }
    seeds.resize(pairs);
    for (uint64_t& s : seeds) s = master.Next();
    for (Individual& c : children) c = Individual();
    pool.ParallelFor(genetic ? pairs : 0, [&](int64_t k, int worker) {
      Rng rng(seeds[k]);
      const Chromosome& a = population[order[2 * k]].c;
      const Chromosome& b = population[order[2 * k + 1]].c;
      const int32_t cr_s = n > 1 ? 1 + static_cast<int32_t>(rng.Uniform(n - 1)) : 0;
      auto [s1, s2] = CrossoverSchedules(a.schedule, b.schedule, cr_s);
      const int32_t ns = static_cast<int32_t>(sizes.size());
      std::pair<Allocation, Allocation> al{a.alloc, b.alloc};
      if (ns > 1) {
        al = CrossoverAllocations(a.alloc, b.alloc, 1 + static_cast<int32_t>(rng.Uniform(ns - 1)));
      }
      const std::vector<int32_t>* scheds[2] = {&s1, &s2};
      const Allocation* allocs[2] = {&al.first, &al.second};
      for (int j = 0; j < 4; ++j) {
        Individual& child = children[4 * k + j];
        if (fixed_schedule_) {
          child.c.schedule = recorded;
        } else {
          MutateSchedule(problem_.graph(), *scheds[j / 2], o.mutation_probability, &rng,
                         &child.c.schedule);
        }
        child.c.alloc = *allocs[j % 2];
        child.c.hints = (j % 2 == 0 ? a : b).hints;
        if (fixed_alloc_) {
          child.c.alloc = *fixed_alloc_;
        } else {
          MutateAllocation(o.mutation_probability, o.cnt_sigma_fraction, &rng, &child.c.alloc);
        }
        if (!RepairCounts(sizes, MinCounts(problem_, child.c.alloc.cls), budget, &child.c.alloc)) {
          child.evaluated = true;  // infeasible pool: no plan
          infeasible.fetch_add(1);
          continue;
        }
        evaluate(&child, &workers[worker]);
      }
    });
    int64_t evals = 0;
    for (const Individual& c : children) evals += c.evaluated;
    evaluations += evals;
    note_best(children);

    // --- survival -------------------------------------------------------------------
    std::vector<Individual*> pool_all;
    pool_all.reserve(population.size() + children.size());
    for (Individual& ind : population) pool_all.push_back(&ind);
    for (Individual& ind : children) {
      if (ind.evaluated) pool_all.push_back(&ind);
    }
    // Elites: the fastest (ties: earlier in the pool).
    std::vector<int32_t> idx(pool_all.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int32_t x, int32_t y) {
      return pool_all[x]->time_ns < pool_all[y]->time_ns;
    });
    std::vector<bool> chosen(pool_all.size(), false);
    std::vector<int32_t> survivors;
    for (int32_t e = 0; e < o.elites && e < static_cast<int32_t>(idx.size()); ++e) {
      chosen[idx[e]] = true;
      survivors.push_back(idx[e]);
    }
    // Softmax draw without replacement: key = log(u) / w, largest keys win;
    // infeasible ones (w = 0) only fill what the feasible cannot.
    keys.clear();
    const double tbest = best_ever == kInfeasibleNs ? 1.0 : static_cast<double>(best_ever);
    for (size_t i = 0; i < pool_all.size(); ++i) {
      const double u = 1.0 - master.UniformDouble();  // (0, 1]
      if (chosen[i]) continue;
      const int64_t t = pool_all[i]->time_ns;
      double key;
      if (t == kInfeasibleNs) {
        key = -HUGE_VAL;  // after every feasible one, in pool order
      } else {
        const double tnorm = (tbest - static_cast<double>(t)) / tbest;
        const double w = std::exp(tnorm / o.selection_temperature);
        key = std::log(u) / w;
      }
      keys.emplace_back(key, static_cast<int32_t>(i));
    }
    std::stable_sort(keys.begin(), keys.end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    for (size_t i = 0; i < keys.size() && survivors.size() < population.size(); ++i) {
      survivors.push_back(keys[i].second);
    }
    std::vector<Individual> next;
    next.reserve(population.size());
    for (int32_t i : survivors) next.push_back(std::move(*pool_all[i]));
    population = std::move(next);
    SWAPPLAN_RETURN_IF_ERROR(advance_elite(generation));
    SWAPPLAN_RETURN_IF_ERROR(exchange(generation));
    report(generation, evals, std::chrono::duration<double>(Clock::now() - gen_start).count());
  }

  result.generations = generation;
  result.evaluations = evaluations;
  result.infeasible_evaluations = infeasible.load();
  if (islands_ != nullptr) {
    // Every island returns the fastest elite of all.
    SWAPPLAN_ASSIGN_OR_RETURN(
        std::string best, islands_->Best(elite_ns, elite ? PolicyToBinary(*elite) : std::string()));
    if (!best.empty()) {
      // Every island, the winner included, takes the same bytes.
      SWAPPLAN_ASSIGN_OR_RETURN(Policy p, ParsePolicyBinary(best, "island result"));
      SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, problem_.simulator().Run(p));
      if (!elite || r.iteration_time_ns < elite_ns) {
        result.source = "another island";
        improved_locally = false;
      }
      elite = adopt(std::move(p));
      elite_ns = r.iteration_time_ns;
    }
  }
  if (!elite) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "advisor: no schedule and pool found a plan within the budget of ", FormatBytes(budget),
        " in ", evaluations, " evaluations; last reason: ", last_failure));
  }
  if (best_ever != kInfeasibleNs) {
    result.best = std::move(best_chromosome);
    // Crossover and mutation keep topological orders; verify the best one.
    if (absl::Status st = problem_.graph().ValidateSchedule(result.best.schedule); !st.ok()) {
      return absl::InternalError(
          absl::StrCat("advisor: the best schedule is invalid: ", st.message()));
    }
  }
  if (improved_locally) absl::StrAppend(&result.source, " + local search");
  if (improver) {
    result.local_moves_tried = improver->tried();
    result.local_moves_kept = improver->kept();
  }
  // The elite, its release waits marked for the checker (local search and
  // seeds move releases by the simulator's clock, not the checker's).
  Policy& policy = result.plan.policy;
  policy = *std::move(elite);
  SWAPPLAN_ASSIGN_OR_RETURN(CheckReport check, CheckMarkingReleaseWaits(problem_.trace(), &policy));
  if (!check.clean()) {
    return absl::InternalError(absl::StrCat("advisor: the policy (", result.source,
                                            ") fails the checker: ",
                                            check.violations.front().message));
  }
  for (const PolicyItem& it : policy.items) {
    result.plan.wrapping += it.wraps;
    result.plan.evictions += !it.wraps;
  }
  SWAPPLAN_ASSIGN_OR_RETURN(result.simulation, problem_.simulator().Run(policy));
  result.best_ns = result.simulation.iteration_time_ns;
  policy.simulated_iteration_time_ns = result.simulation.iteration_time_ns;
  policy.expected_peak_bytes = result.simulation.peak_bytes;
  policy.expected_overhead_ns = result.simulation.iteration_time_ns - result.simulation.ideal_time_ns;
  result.elapsed_ns = elapsed_ns();
  return result;
}

}  // namespace swapplan
