// The Advisor's island model (islands.h) in one process: the wire format
// of migrants, and islands as threads — deterministic for a seed and an
// island count, every island returning the same policy.
#include <catch2/catch.hpp>

#include <memory>
#include <thread>
#include <vector>

#include "planners/advisor_support.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/advisor/advisor_planner.h"
#include "swapplan/planners/advisor/islands.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/checker.h"

namespace swapplan {
namespace {

TEST_CASE("island migration: round trip and malformed messages", "[advisor][islands]") {
  Migration m;
  Chromosome c;
  c.schedule = {2, 0, 1};
  c.alloc.cls = {0, 0, 1};
  c.alloc.cnt = {4, 1};
  c.hints = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{0, 1, 0, 1});
  m.chromosomes = {c, Chromosome{{0, 1, 2}, {{0}, {3}}, nullptr}};
  m.times_ns = {1234, 5678};
  m.elite = std::string("\x00\x01policy", 8);
  m.elite_ns = 999;
  const std::string wire = EncodeMigration(m);
  absl::StatusOr<Migration> back = DecodeMigration(wire);
  REQUIRE(back.ok());
  REQUIRE(back->chromosomes.size() == 2);
  CHECK(back->chromosomes[0].schedule == c.schedule);
  CHECK(back->chromosomes[0].alloc == c.alloc);
  REQUIRE(back->chromosomes[0].hints != nullptr);
  CHECK(*back->chromosomes[0].hints == *c.hints);
  CHECK(back->chromosomes[1].hints == nullptr);
  CHECK(back->times_ns == m.times_ns);
  CHECK(back->elite == m.elite);
  CHECK(back->elite_ns == 999);
  for (size_t cut : {size_t{0}, size_t{5}, wire.size() - 1}) {
    absl::StatusOr<Migration> bad = DecodeMigration(wire.substr(0, cut));
    CHECK(bad.status().code() == absl::StatusCode::kDataLoss);
  }
  CHECK(IslandSeed(42, 0) == 42);
  CHECK(IslandSeed(42, 1) != IslandSeed(42, 2));
  CHECK(IslandOptions{.migration_interval = 0}.Validate().code() ==
        absl::StatusCode::kInvalidArgument);
}

struct IslandRun {
  std::vector<int64_t> best_ns;
  std::vector<std::string> policies;  // PolicyToBinary per island
  std::vector<int64_t> migrations;
  std::vector<int32_t> generations;
};

IslandRun RunIslands(const Trace& t, int64_t budget, int32_t n, uint64_t seed) {
  LocalIslands ring(n);
  IslandRun out;
  out.best_ns.resize(n);
  out.policies.resize(n);
  out.migrations.resize(n);
  out.generations.resize(n);
  std::vector<absl::Status> status(n);
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      AdvisorPlanner planner;
      for (auto [k, v] : {std::pair<const char*, std::string>{"max-generations", "8"},
                          {"population", "8"},
                          {"threads", "1"},
                          {"seed", std::to_string(seed)}}) {
        status[r] = planner.SetOption(k, v);
        if (!status[r].ok()) return;
      }
      planner.set_islands(ring.island(r), IslandOptions{.migration_interval = 2, .migrants = 2});
      PlanningProblem pp{.trace = &t,
                         .iteration = 0,
                         .device = {.capacity_bytes = budget,
                                    .h2d_bandwidth_bytes_per_s = 1e9,
                                    .d2h_bandwidth_bytes_per_s = 1e9}};
      absl::StatusOr<Policy> p = planner.Plan(pp);
      status[r] = p.status();
      if (!p.ok()) return;
      out.best_ns[r] = planner.last_result()->best_ns;
      out.policies[r] = PolicyToBinary(*p);
      out.migrations[r] = planner.last_result()->migrations;
      out.generations[r] = planner.last_result()->generations;
    });
  }
  for (std::thread& th : threads) th.join();
  for (const absl::Status& st : status) REQUIRE(st.ok());
  return out;
}

TEST_CASE("islands in threads: deterministic, one answer for all islands", "[advisor][islands]") {
  testing::RandomDagOptions ro;
  ro.ops = 30;
  ro.params = 2;
  const Trace t = testing::RandomDag(7, ro);
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
  REQUIRE(curve.ok());
  const int64_t budget = curve->iterations()[0].peak_unswapped.bytes * 75 / 100;
  const IslandRun a = RunIslands(t, budget, 3, 11);
  const IslandRun b = RunIslands(t, budget, 3, 11);
  for (int32_t r = 0; r < 3; ++r) {
    INFO("island " << r);
    // Every island returns the fastest elite of all.
    CHECK(a.best_ns[r] == a.best_ns[0]);
    CHECK(a.policies[r] == a.policies[0]);
    // Generations 2, 4, 6, 8 migrate.
    CHECK(a.generations[r] == 8);
    CHECK(a.migrations[r] == 4);
    // Same seed and island count: the same run.
    CHECK(b.best_ns[r] == a.best_ns[r]);
    CHECK(b.policies[r] == a.policies[r]);
  }
  // The policy passes the checker.
  absl::StatusOr<Policy> p = ParsePolicyBinary(a.policies[0], "island");
  REQUIRE(p.ok());
  absl::StatusOr<CheckReport> check = CheckPolicy(t, *p);
  REQUIRE(check.ok());
  CHECK(check->clean());
  // One island is the plain search with the same seed.
  const IslandRun one = RunIslands(t, budget, 1, 11);
  AdvisorPlanner plain;
  REQUIRE(plain.SetOption("max-generations", "8").ok());
  REQUIRE(plain.SetOption("population", "8").ok());
  REQUIRE(plain.SetOption("threads", "1").ok());
  REQUIRE(plain.SetOption("seed", "11").ok());
  PlanningProblem pp{.trace = &t,
                     .iteration = 0,
                     .device = {.capacity_bytes = budget,
                                .h2d_bandwidth_bytes_per_s = 1e9,
                                .d2h_bandwidth_bytes_per_s = 1e9}};
  absl::StatusOr<Policy> q = plain.Plan(pp);
  REQUIRE(q.ok());
  CHECK(one.best_ns[0] == plain.last_result()->best_ns);
  CHECK(one.migrations[0] == 0);
}

}  // namespace
}  // namespace swapplan
