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
  auto past_deadline = [&] { return timed && elapsed_ns() >= o.time_limit_ns; };

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
      return absl::ResourceExhaustedError(absl::StrCat(
          "advisor: the budget of ", FormatBytes(budget),
          " cannot hold the pool objects the recorded order needs whatever is swapped — each "
          "op's tensors and those no eviction can move (",
          FormatBytes(finest_bytes), " with one class per tensor size; op ", at,
          " (", t.op_name_at(t.iteration(problem_.iteration()).op_begin + at), ") alone pins ",
          FormatBytes(most), ")"));
    }
  }

  ThreadPool pool(o.threads);
  std::vector<Worker> workers(pool.size());
  for (Worker& w : workers) w.planner = std::make_unique<SwapPlanner>(problem_, options_.planner);
  Rng master(o.seed);
  std::vector<int32_t> recorded(n);
  std::iota(recorded.begin(), recorded.end(), 0);

  SearchResult result;
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
  pool.ParallelFor(o.population, [&](int64_t i, int worker) {
    Rng rng(seeds[i]);
    Individual& ind = population[i];
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
  int64_t evaluations = o.population;

  int64_t best_ever = kInfeasibleNs;
  Chromosome best_chromosome;
  int32_t last_improvement = 0;
  auto note_best = [&](const std::vector<Individual>& v, int32_t gen) {
    for (const Individual& ind : v) {
      if (ind.evaluated && ind.time_ns < best_ever) {
        const bool significant =
            best_ever == kInfeasibleNs ||
            static_cast<double>(best_ever - ind.time_ns) > o.convergence_tolerance * best_ever;
        best_ever = ind.time_ns;
        best_chromosome = ind.c;
        if (significant) last_improvement = gen;
      }
    }
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
    g.evaluations = evaluations;
    g.evaluations_per_s = gen_seconds > 0 ? evals_this_gen / gen_seconds : 0;
    result.history.push_back(g);
    if (progress) progress(g);
  };
  note_best(population, 0);
  report(0, o.population,
         std::chrono::duration<double>(Clock::now() - start).count());

  // --- generations ---------------------------------------------------------------
  const int32_t pairs = o.population / 2;
  std::vector<Individual> children(static_cast<size_t>(pairs) * 4);
  std::vector<int32_t> order(o.population);
  std::vector<std::pair<double, int32_t>> keys;
  for (;;) {
    if (o.max_generations > 0 && generation >= o.max_generations) {
      result.stop_reason = "generation limit";
      break;
    }
    if (past_deadline()) {
      result.stop_reason = "time limit";
      break;
    }
    if (o.convergence_generations > 0 && best_ever != kInfeasibleNs &&
        generation - last_improvement >= o.convergence_generations) {
      result.stop_reason = "converged";
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
    pool.ParallelFor(pairs, [&](int64_t k, int worker) {
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
    note_best(children, generation);

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
    report(generation, evals, std::chrono::duration<double>(Clock::now() - gen_start).count());
  }

  result.generations = generation;
  result.evaluations = evaluations;
  result.infeasible_evaluations = infeasible.load();
  if (best_ever == kInfeasibleNs) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "advisor: no schedule and pool found a plan within the budget of ", FormatBytes(budget),
        " in ", evaluations, " evaluations; last reason: ", last_failure));
  }
  result.best = std::move(best_chromosome);
  // Crossover and mutation keep topological orders; verify the one returned.
  if (absl::Status st = problem_.graph().ValidateSchedule(result.best.schedule); !st.ok()) {
    return absl::InternalError(absl::StrCat("advisor: the best schedule is invalid: ", st.message()));
  }
  SwapPlanner planner(problem_, options_.planner);
  SWAPPLAN_ASSIGN_OR_RETURN(result.plan, planner.Plan(result.best, /*runtime_keys=*/true));
  SWAPPLAN_ASSIGN_OR_RETURN(result.simulation, problem_.simulator().Run(result.plan.policy));
  result.best_ns = result.simulation.iteration_time_ns;
  Policy& policy = result.plan.policy;
  policy.simulated_iteration_time_ns = result.simulation.iteration_time_ns;
  policy.expected_peak_bytes = result.simulation.peak_bytes;
  policy.expected_overhead_ns = result.simulation.iteration_time_ns - result.simulation.ideal_time_ns;
  result.elapsed_ns = elapsed_ns();
  return result;
}

}  // namespace swapplan
