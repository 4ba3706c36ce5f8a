// One option table per planner (planners/option_table.h): the names a
// policy records in Policy::parameters are exactly the options the planner
// describes, SetOption accepts each recorded (name, value) pair — with '_'
// and with '-' — and a fresh planner given the recorded parameters plans the
// same policy again (the round trip `search` used to fail: it rejected the
// option names its own policies recorded).
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "absl/strings/str_cat.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/advisor/options.h"
#include "swapplan/planners/baselines/baselines.h"
#include "swapplan/planners/chameleon/options.h"
#include "swapplan/planners/registry.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

// The parts of a policy a planner decides.
struct Decided {
  std::vector<std::tuple<uint64_t, int32_t, int32_t, int32_t, bool>> items;
  std::vector<int32_t> schedule;
  MemoryPool pool;
  bool operator==(const Decided& o) const {
    return items == o.items && schedule == o.schedule && pool == o.pool;
  }
};

Decided Of(const Policy& p) {
  Decided d;
  for (const PolicyItem& it : p.items) {
    d.items.emplace_back(it.tensor_id, it.swap_out_op, it.release_op, it.swap_in_op,
                         it.release_waits_for_copy);
  }
  d.schedule = p.schedule;
  d.pool = p.pool;
  return d;
}

std::vector<std::string> Names(const std::vector<OptionInfo>& options) {
  std::vector<std::string> v;
  for (const OptionInfo& o : options) v.push_back(o.name);
  return v;
}

TEST_CASE("planner options: recorded parameters round-trip through SetOption",
          "[baselines][options][property]") {
  std::map<std::string, int> replanned;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    INFO("seed " << seed);
    testing::RandomTraceOptions o;
    o.ops_per_iteration = 30 + static_cast<int32_t>(seed % 20);
    Trace t = testing::RandomTrace(seed, o);
    absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(t);
    REQUIRE(curve.ok());
    const IterationCurve& ic = curve->iterations()[0];
    // Budgets: four times the unswapped peak (the advisor's one-class-per-size
    // pool needs far more than the peak), the peak, and 90% and 70% of the
    // way from the persistent floor to it.
    const int64_t floor = ic.persistent_bytes, peak = ic.peak_unswapped.bytes;
    for (int64_t budget : {4 * peak, peak, floor + (peak - floor) * 9 / 10,
                           floor + (peak - floor) * 7 / 10}) {
      INFO("budget " << budget);
      PlanningProblem problem{.trace = &t, .iteration = 0, .curve = &*curve};
      problem.device.capacity_bytes = budget;
      problem.device.h2d_bandwidth_bytes_per_s = 1e9;
      problem.device.d2h_bandwidth_bytes_per_s = 1e9;
      for (const PlannerInfo& info : RegisteredPlanners()) {
        INFO("planner " << info.name);
        // The chain returns its member's policy, which records the member's
        // options (chain_test.cc checks that it names the member).
        if (std::string(info.name) == "chain") continue;
        std::unique_ptr<Planner> first = info.create();
        if (std::string(info.name) == "advisor") {  // short and single-threaded
          REQUIRE(first->SetOption("max_generations", "2").ok());
          REQUIRE(first->SetOption("population", "6").ok());
          REQUIRE(first->SetOption("threads", "1").ok());
        }
        absl::StatusOr<Policy> p = first->Plan(problem);
        if (!p.ok()) {
          CHECK(KindOf(p.status()) == ErrorKind::kInfeasible);
          continue;
        }
        // The recorded names are the described options, in order.
        std::vector<std::string> recorded;
        for (const auto& [name, value] : p->parameters) recorded.push_back(name);
        CHECK(recorded == Names(first->DescribeOptions()));
        // A fresh planner accepts every recorded pair, by either spelling...
        std::unique_ptr<Planner> second = info.create();
        std::unique_ptr<Planner> dashed = info.create();
        for (const auto& [name, value] : p->parameters) {
          INFO(name << "=" << value);
          CHECK(second->SetOption(name, value).ok());
          CHECK(dashed->SetOption(absl::StrReplaceAll(name, {{"_", "-"}}), value).ok());
        }
        // ...describes them back with the recorded values...
        for (const OptionInfo& d : second->DescribeOptions()) {
          for (const auto& [name, value] : p->parameters) {
            if (name == d.name) CHECK(d.default_value == value);
          }
        }
        // ...and plans the same policy with them.
        absl::StatusOr<Policy> again = second->Plan(problem);
        REQUIRE(again.ok());
        CHECK(Of(*again) == Of(*p));
        CHECK(again->parameters == p->parameters);
        ++replanned[info.name];
      }
    }
  }
  // Every planner found a feasible budget on some seed (ideal on all).
  for (const PlannerInfo& info : RegisteredPlanners()) {
    INFO("planner " << info.name);
    if (std::string(info.name) == "chain") continue;
    CHECK(replanned[info.name] >= 1);
  }
  CHECK(replanned["ideal"] == 12 * 4);
}

TEST_CASE("planner options: unknown names and bad values are usage errors", "[baselines][options]") {
  for (const PlannerInfo& info : RegisteredPlanners()) {
    INFO("planner " << info.name);
    std::unique_ptr<Planner> p = info.create();
    const absl::Status unknown = p->SetOption("no-such-option", "1");
    CHECK(KindOf(unknown) == ErrorKind::kUsage);
    CHECK_THAT(std::string(unknown.message()),
               Catch::StartsWith(absl::StrCat(info.name, " has no option 'no-such-option'")));
  }
  // Types: the table's parsers, one per kind of value.
  ChameleonOptions c;
  CHECK(c.Set("layers", "two").message() == "chameleon option layers: 'two' is not an integer");
  CHECK(c.Set("min_tensor_bytes", "1 parsec").message() ==
        "chameleon option min_tensor_bytes: '1 parsec' is not a size like 1048576 or 1MiB");
  CHECK(c.Set("maximal-fallback", "maybe").message() ==
        "chameleon option maximal-fallback: 'maybe' is not true or false");
  REQUIRE(c.Set("iteration_time_ns", "1.5s").ok());
  CHECK(c.iteration_time_ns == 1'500'000'000);
  AdvisorOptions a;
  REQUIRE(AdvisorOptionTable().Set("advisor", &a, "eviction-threshold-ns", "auto").ok());
  CHECK(a.planner.eviction_threshold_ns == -1);
  REQUIRE(AdvisorOptionTable().Set("advisor", &a, "time_limit_ns", "30s").ok());
  CHECK(a.search.time_limit_ns == 30'000'000'000);
  LayerSwapOptions l;
  REQUIRE(LayerSwapOptionTable().Set("bucket", &l, "min-bytes", "20MiB").ok());
  CHECK(l.min_bytes == 20 * 1048576);
  // The described defaults are what ToParameters writes for default options.
  for (const OptionInfo& info : ChameleonOptionTable().Describe(ChameleonOptions())) {
    bool found = false;
    for (const auto& [name, value] : ChameleonOptions().ToParameters()) {
      if (name == info.name) found = value == info.default_value;
    }
    CHECK(found);
  }
}

}  // namespace
}  // namespace swapplan
