// Every registered planner (the advisor with a small generation and time
// limit) on every trace of tests/data/traces and traces/, at two budgets
// (oversubscription 1.25 and 2): every policy it emits passes the checker
// (with the options its planner recorded, CheckOptionsFor), is
// self-contained (the device model of the problem, a runtime section that
// validates and matches from the policy alone), and the checker and the
// evaluation simulator agree on its peak to the byte. Infeasible budgets
// (ResourceExhausted) are counted, not failures.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/planner_fixtures.h"
#include "support/test_traces.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/curve/oversubscription.h"
#include "swapplan/planners/registry.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/checker.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/io.h"
#include "swapplan/varying/matcher.h"

namespace swapplan {
namespace {

std::vector<std::string> Traces() {
  std::vector<std::string> out;
  for (const char* name : {"traces/chameleon_toy.json", "traces/toy_valid.json",
                           "traces/two_layers.json"}) {
    out.push_back(testing::DataPath(name));
  }
  for (const char* name :
       {"toy.json", "resnet18.json.gz", "gpt2_small.json.gz", "llama_small.json.gz",
        "bilstm.json.gz", "loss_scale_validation.json.gz",
        "llama2-7b-4layers-dp8-seq4096.trace.gz", "llama2-7b-pp4-stage0-seq4096.trace.gz",
        "llama2-7b-dp8-seq4096.trace.gz"}) {
    out.push_back(std::string(SWAPPLAN_SOURCE_ROOT) + "/traces/" + name);
  }
  return out;
}

TEST_CASE("every planner's policies pass check; check and simulate agree on the peak",
          "[planners][check]") {
  int planned = 0, infeasible = 0, with_items = 0;
  std::map<std::string, int> by_planner;
  for (const std::string& path : Traces()) {
    INFO("trace " << path);
    absl::StatusOr<Trace> trace = ReadTrace(path);
    REQUIRE(trace.ok());
    absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*trace);
    REQUIRE(curve.ok());
    const int32_t it = 0;
    for (double ratio : {1.25, 2.0}) {
      INFO("oversubscription " << ratio);
      absl::StatusOr<int64_t> budget = OversubscriptionBudget(curve->iterations()[it], ratio);
      REQUIRE(budget.ok());
      PlanningProblem problem{.trace = &*trace, .iteration = it, .curve = &*curve};
      problem.device.capacity_bytes = *budget;
      const TraceMetadata& m = trace->metadata();
      problem.device.h2d_bandwidth_bytes_per_s =
          m.h2d_bandwidth_bytes_per_s > 0 ? m.h2d_bandwidth_bytes_per_s : 10e9;
      problem.device.d2h_bandwidth_bytes_per_s =
          m.d2h_bandwidth_bytes_per_s > 0 ? m.d2h_bandwidth_bytes_per_s : 10e9;
      for (const PlannerInfo& info : RegisteredPlanners()) {
        INFO("planner " << info.name);
        std::unique_ptr<Planner> planner = info.create();
        if (std::string(info.name) == "advisor") {
          REQUIRE(planner->SetOption("max_generations", "2").ok());
          REQUIRE(planner->SetOption("population", "6").ok());
          REQUIRE(planner->SetOption("time_limit_ns", "5s").ok());
          REQUIRE(planner->SetOption("threads", "1").ok());
        }
        absl::StatusOr<Policy> p = planner->Plan(problem);
        if (!p.ok()) {
          INFO(p.status().ToString());
          REQUIRE(p.status().code() == absl::StatusCode::kResourceExhausted);
          ++infeasible;
          continue;
        }
        ++planned;
        ++by_planner[info.name];
        with_items += !p->items.empty();
        // Self-contained: the problem's device (an unlimited one for ideal)
        // and a runtime section the matcher can use without the trace.
        CHECK(p->device.capacity_bytes ==
              (info.unlimited_memory ? kUnlimitedCapacityBytes : *budget));
        CHECK(p->device.h2d_bandwidth_bytes_per_s == problem.device.h2d_bandwidth_bytes_per_s);
        CHECK(p->runtime.op_sequence.size() ==
              static_cast<size_t>(trace->iteration(it).num_ops()));
        CHECK(p->Validate().ok());
        CHECK(MakeMatchablePolicy(*p).ok());

        absl::StatusOr<CheckReport> check = CheckPolicy(*trace, *p, CheckOptionsFor(*p));
        REQUIRE(check.ok());
        INFO(testing::ViolationMessages(*check));
        CHECK(check->clean());
        SimulatorOptions so;
        so.device = p->device;
        absl::StatusOr<SimulationResult> sim = Simulate(*trace, *p, so);
        INFO(sim.status().ToString());
        REQUIRE(sim.ok());
        CHECK(sim->peak_bytes == check->peak_bytes);
        // Under a schedule (advisor) the lifetimes move with the ops.
        if (p->schedule.empty()) {
          CHECK(check->peak_unswapped_bytes == curve->iterations()[it].peak_unswapped.bytes);
        }
        if (!info.unlimited_memory) CHECK(check->peak_bytes <= *budget);
      }
    }
  }
  INFO("planned " << planned << " (with items " << with_items << "), infeasible " << infeasible);
  std::string counts;
  for (const auto& [name, count] : by_planner) counts += absl::StrCat(name, ": ", count, " policies\n");
  INFO(counts);
  // Every planner but noswap emits policies on several of these budgets.
  // selective frees only attention cores' s² tensors, which none of these
  // traces needs gone at r >= 1.25 (the llama traces use a fused kernel);
  // its bundled-trace policies are checked in practice_baselines_test.cc.
  for (const PlannerInfo& info : RegisteredPlanners()) {
    const std::string name = info.name;
    if (name != "noswap" && name != "selective") CHECK(by_planner[info.name] >= 3);
  }
  CHECK(planned >= 70);
  CHECK(with_items >= 45);
}

}  // namespace
}  // namespace swapplan
