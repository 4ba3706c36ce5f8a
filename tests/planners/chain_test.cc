// The planner chain (planners/chain.h): members tried in order until one's
// policy passes the checker at the budget; the attempts, the member named
// in the policy, the message and shortfall when none fits, members skipped
// where the op order is fixed. Random traces with logged seeds.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/chain.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/sim/checker.h"
#include "swapplan/util/error.h"
#include "swapplan/util/shortfall.h"
#include "swapplan/util/units.h"

namespace swapplan {
namespace {

struct Problem {
  Trace trace;
  MemoryCurve curve;
  int64_t floor = 0, peak = 0;
  PlanningProblem At(int64_t budget) const {
    PlanningProblem p{.trace = &trace, .iteration = 0, .curve = &curve};
    p.device.capacity_bytes = budget;
    p.device.h2d_bandwidth_bytes_per_s = 1e9;
    p.device.d2h_bandwidth_bytes_per_s = 1e9;
    return p;
  }
};

Problem Random(uint64_t seed) {
  testing::RandomTraceOptions o;
  o.ops_per_iteration = 40;
  Problem p;
  p.trace = testing::RandomTrace(seed, o);
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(p.trace);
  REQUIRE(c.ok());
  p.curve = *std::move(c);
  p.floor = p.curve.iterations()[0].persistent_bytes;
  p.peak = p.curve.iterations()[0].peak_unswapped.bytes;
  return p;
}

TEST_CASE("chain: options are validated, naming the field", "[chain]") {
  PlannerChainOptions o;
  CHECK(o.Validate().ok());
  CHECK(o.planners == std::vector<std::string>{"chameleon", "hybrid", "hyperoffload", "advisor"});
  CHECK(o.search_time_limit_ns == 10'000'000'000);
  o.planners = {};
  CHECK(o.Validate().message() == "chain options: planners is empty; name at least one");
  o.planners = {"chameleon", "chameleon"};
  CHECK(o.Validate().message() == "chain options: planners[1]: 'chameleon' is named twice");
  o.planners = {"chain"};
  CHECK(o.Validate().message() == "chain options: planners[0] is 'chain'; the chain cannot hold itself");
  o.planners = {"chameleon"};
  o.search_time_limit_ns = -1;
  CHECK(o.Validate().message() == "chain options: search_time_limit_ns is -1; must be >= 0");
  ChainPlanner chain;
  CHECK(KindOf(chain.SetOption("planners", "chameleon,nope")) == ErrorKind::kUsage);
  CHECK(KindOf(chain.SetOption("executable", "gpu")) == ErrorKind::kUsage);
  REQUIRE(chain.SetOption("planners", "noswap,chameleon").ok());
  CHECK(chain.options().planners == std::vector<std::string>{"noswap", "chameleon"});
  // Member options are checked on the member now.
  CHECK(KindOf(chain.SetOption("chameleon.no-such", "1")) == ErrorKind::kUsage);
  CHECK(KindOf(chain.SetOption("nope.x", "1")) == ErrorKind::kUsage);
  CHECK(chain.SetOption("chameleon.min-tensor-bytes", "0").ok());
}

TEST_CASE("chain: the first member whose policy passes the checker serves", "[chain][property]") {
  int served = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    INFO("seed " << seed);
    const Problem p = Random(seed);
    // 90% of the way from the persistent floor to the peak: noswap cannot.
    const int64_t budget = p.floor + (p.peak - p.floor) * 9 / 10;
    ChainPlanner chain;
    REQUIRE(chain.SetOption("planners", "noswap,chameleon,hybrid").ok());
    REQUIRE(chain.SetOption("chameleon.min-tensor-bytes", "0").ok());
    absl::StatusOr<Policy> got = chain.Plan(p.At(budget));
    const std::vector<ChainAttempt>& a = chain.last_attempts();
    REQUIRE(!a.empty());
    CHECK(a[0].planner == "noswap");
    CHECK_FALSE(a[0].fits);
    if (!got.ok()) {
      CHECK(KindOf(got.status()) == ErrorKind::kInfeasible);
      for (const ChainAttempt& x : a) CHECK_FALSE(x.fits);
      continue;
    }
    ++served;
    // The policy names the member that served: the last attempt, the only
    // one that fits; it passes the checker at the budget.
    CHECK(a.back().fits);
    CHECK(got->planner == a.back().planner);
    for (size_t k = 0; k + 1 < a.size(); ++k) CHECK_FALSE(a[k].fits);
    absl::StatusOr<CheckReport> r = CheckPolicy(p.trace, *got, CheckOptionsFor(*got));
    REQUIRE(r.ok());
    CHECK(r->clean());
    CHECK(got->BudgetBytes() == budget);
    // The same as that member alone (same options), item for item.
    std::unique_ptr<Planner> alone = *CreatePlanner(got->planner);
    if (got->planner == "chameleon") REQUIRE(alone->SetOption("min-tensor-bytes", "0").ok());
    absl::StatusOr<Policy> direct = alone->Plan(p.At(budget));
    REQUIRE(direct.ok());
    CHECK(direct->items.size() == got->items.size());
  }
  CHECK(served >= 5);
}

TEST_CASE("chain: when no member fits, the message names the peak and the closest shortfall",
          "[chain]") {
  const Problem p = Random(3);
  // Below the persistent floor: nothing can fit.
  const int64_t budget = p.floor / 2;
  ChainPlanner chain;
  REQUIRE(chain.SetOption("planners", "chameleon,hyperoffload").ok());
  absl::StatusOr<Policy> got = chain.Plan(p.At(budget));
  REQUIRE_FALSE(got.ok());
  CHECK(KindOf(got.status()) == ErrorKind::kInfeasible);
  const std::string msg(got.status().message());
  INFO(msg);
  CHECK_THAT(msg, Catch::StartsWith("no planner of the chain reaches the budget of "));
  CHECK_THAT(msg, Catch::Contains(absl::StrCat("unswapped peak ", FormatBytes(p.peak))));
  const std::vector<ChainAttempt>& a = chain.last_attempts();
  REQUIRE(a.size() == 2);
  // The closest member's shortfall rides on the status, and is the least
  // of the attempts' (each at least what the floor alone lacks).
  int64_t least = -1;
  for (const ChainAttempt& x : a) {
    CHECK_FALSE(x.fits);
    if (x.shortfall_bytes >= 0 && (least < 0 || x.shortfall_bytes < least)) least = x.shortfall_bytes;
  }
  REQUIRE(least >= 0);
  CHECK(least >= p.floor - budget);
  CHECK(ShortfallOf(got.status()) == least);
  CHECK_THAT(msg, Catch::Contains(absl::StrCat(FormatBytes(least), " over")));
}

TEST_CASE("chain: where the op order is fixed, reordering members are skipped or told not to",
          "[chain]") {
  const Problem p = Random(5);
  const int64_t budget = p.floor + (p.peak - p.floor) * 7 / 10;
  for (ChainExecutor e : {ChainExecutor::kMatched, ChainExecutor::kRuntime}) {
    INFO("executable " << ChainExecutorName(e));
    ChainPlanner chain;
    REQUIRE(chain.SetOption("executable", ChainExecutorName(e)).ok());
    REQUIRE(chain.SetOption("planners", "advisor,hyperoffload,chameleon").ok());
    absl::StatusOr<Policy> got = chain.Plan(p.At(budget));
    const std::vector<ChainAttempt>& a = chain.last_attempts();
    REQUIRE(!a.empty());
    // The advisor's policies always carry a schedule and a pool: not run.
    CHECK(a[0].planner == "advisor");
    CHECK(a[0].skipped);
    CHECK(a[0].plan_time_ns == 0);
    if (got.ok()) {
      CHECK(got->schedule.empty());
      CHECK(got->pool.empty());
      if (e == ChainExecutor::kRuntime) CHECK(CheckRuntimeExecutable(*got).ok());
    }
  }
}

}  // namespace
}  // namespace swapplan
