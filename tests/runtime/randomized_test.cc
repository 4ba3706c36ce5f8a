// 1,000 randomized training iterations through the whole runtime — stage
// machine, policies planned from the record, Algorithm 3, seed 004's manual
// swaps — with injected faults (copy errors either way, allocation
// failures, slow copies) and a varying op sequence. Every tensor's bytes are
// checked at every use and once more at the end: nothing may be lost, only
// a step may fail (with a copy error, or an OOM the variations can cause).
// The seed is printed; SWAPPLAN_TEST_SEED=N reruns one.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "runtime_test_support.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::testing {
namespace {

constexpr int kLayers = 6;

// The iteration's program: LayeredProgram with, at random, an extra forward
// op (a temporary read by the next layer), layers of another size, or no
// optimizer op (a skipped step).
Program Variant(std::mt19937_64& rng, int* extra_tensor) {
  Program p = LayeredProgram(kLayers, 1000, 100);
  std::uniform_real_distribution<double> u(0, 1);
  const int x0 = kLayers;
  *extra_tensor = static_cast<int>(p.sizes.size());
  p.sizes.push_back(500);
  if (u(rng) < 0.1) {
    // Before layer k's forward: a temporary that layer k also reads.
    const int k = std::uniform_int_distribution<int>(0, kLayers - 1)(rng);
    const int at = 1 + k;  // embed is op 0
    p.ops.insert(p.ops.begin() + at, ProgOp{"extra", Phase::kForward, {x0 + k}, {*extra_tensor}, {}});
    ProgOp& layer = p.ops[at + 1];
    layer.inputs.push_back(*extra_tensor);
    layer.free_after.push_back(*extra_tensor);
  }
  if (u(rng) < 0.1) {
    for (int i = 1; i <= kLayers; ++i) {
      if (u(rng) < 0.5) p.sizes[x0 + i] = 800;
    }
  }
  if (u(rng) < 0.05) {
    // Loss-scale skip: the gradient is dropped without an optimizer op.
    ProgOp& last = p.ops.back();
    REQUIRE(last.name == "opt");
    p.ops[p.ops.size() - 2].free_after.push_back(last.inputs[0]);
    p.ops.pop_back();
  }
  return p;
}

void MaybeInjectFaults(std::mt19937_64& rng, TestDevice& host) {
  std::uniform_real_distribution<double> u(0, 1);
  if (u(rng) < 0.05) {
    FaultSpec f{.kind = FaultKind::kCopyError};
    f.any_direction = u(rng) < 0.3;
    f.direction = u(rng) < 0.5 ? Direction::kDeviceToHost : Direction::kHostToDevice;
    f.skip = std::uniform_int_distribution<int>(0, 3)(rng);
    REQUIRE(host.InjectFault(f).ok());
  }
  if (u(rng) < 0.05) {
    REQUIRE(host.InjectFault({.kind = FaultKind::kAllocFailure,
                              .skip = std::uniform_int_distribution<int>(0, 5)(rng),
                              .count = std::uniform_int_distribution<int>(1, 2)(rng)})
                .ok());
  }
  if (u(rng) < 0.03) {
    REQUIRE(host.InjectFault({.kind = FaultKind::kSlowCopy,
                              .skip = std::uniform_int_distribution<int>(0, 3)(rng),
                              .count = 1,
                              .slow_factor = 5})
                .ok());
  }
}

TEST_CASE("randomized: 1,000 iterations of policies, Algorithm 3 and faults lose nothing") {
  uint64_t seed = 20240614;
  if (const char* s = std::getenv("SWAPPLAN_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::cout << "runtime randomized test: seed " << seed << " (SWAPPLAN_TEST_SEED)" << std::endl;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);

  // Unswapped peak 6 x 100 + 7 x 1000 + 4 + 1000 = 8604 bytes; budget 6000.
  EnvOptions o;
  o.capacity_bytes = 6000;
  o.runtime.tracker.warmup_iterations = 2;
  o.runtime.tracker.genpolicy_iterations = 2;
  o.runtime.work_dir = TempDir("randomized");
  Env env = MakeEnv(o);
  REQUIRE(env.rt != nullptr);
  auto made = std::make_shared<std::vector<PlannedPolicy>>();
  env.rt->SetPolicyProvider(ChameleonProvider(made));
  Runner run(env);
  REQUIRE(run.AllocatePersistent(LayeredProgram(kLayers, 1000, 100)).ok());

  int failed_steps = 0, copy_failures = 0, ooms = 0, manual = 0;
  for (int it = 0; it < 1000; ++it) {
    INFO("iteration " << it);
    int extra = 0;
    const Program p = Variant(rng, &extra);
    MaybeInjectFaults(rng, *env.device);
    // Now and then the framework pages a live activation out by hand (seed
    // 004) after some op, and waits for all copies out later.
    const int page_after = u(rng) < 0.1 ? std::uniform_int_distribution<int>(1, kLayers)(rng) : -1;
    run.after_op = [&](int i) {
      if (i == page_after) {
        const TensorHandle h = run.handle(kLayers + 1);  // x_1
        absl::StatusOr<bool> r = env.rt->IsResident(h);
        if (h != kNoTensorHandle && r.ok() && *r && env.rt->PageOut(h).ok()) ++manual;
      }
      if (i == page_after + 2) {
        absl::Status st = env.rt->WaitAllSwapOuts();
        CHECK((st.ok() || RuleOf(st) == "copy-failed" || absl::IsUnavailable(st)));
      }
    };
    absl::Status st = run.Iteration(p);
    if (!st.ok()) {
      ++failed_steps;
      const std::optional<std::string> rule = RuleOf(st);
      INFO(st.message());
      REQUIRE(rule.has_value());
      REQUIRE((*rule == "copy-failed" || *rule == "out-of-memory"));
      (*rule == "copy-failed" ? copy_failures : ooms) += 1;
      if (*rule == "out-of-memory" && ooms <= 3) std::cout << "  OOM: " << st.message() << std::endl;
    }
    if (it % 100 == 99) {
      // The record of the last iterations is a valid trace.
      absl::StatusOr<Trace> rec = env.rt->RecordTrace();
      INFO(rec.status().message());
      REQUIRE(rec.ok());
      // ... whose events rebuild the runtime's bytes in use after every op.
      absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*rec);
      REQUIRE(curve.ok());
      CHECK(curve->allocator().max_abs_diff_bytes == 0);
    }
    env.device->ClearFaults();
  }
  for (const std::string& m : run.mismatches()) FAIL(m);
  CHECK(run.mismatches().empty());
  // Every surviving tensor (the parameters) is intact after coming back.
  CHECK(run.CheckAll(LayeredProgram(kLayers, 1000, 100)) == "");
  for (const IterationStats& row : env.rt->IterationRows()) {
    INFO("iteration " << row.iteration << " plan error: " << row.plan_error);
    CHECK_FALSE(absl::StrContains(row.plan_error, "swapplan runtime record"));
  }
  const RuntimeStats s = env.rt->Stats();
  std::cout << "  " << failed_steps << " failed steps (" << copy_failures << " copy errors, "
            << ooms << " OOMs), " << s.counts.policy_swap_outs << " policy swap-outs, "
            << s.counts.passive_swap_outs << " passive swap-outs, " << manual
            << " manual, " << made->size() << " policies planned, peak "
            << s.peak_device_bytes << " of 6000 bytes" << std::endl;
  CHECK(s.peak_device_bytes <= 6000);
  CHECK(s.counts.policy_swap_outs > 0);
  CHECK(s.counts.passive_swap_outs > 0);
  CHECK(copy_failures > 0);
  CHECK(!made->empty());
}

}  // namespace
}  // namespace swapplan::runtime::testing
