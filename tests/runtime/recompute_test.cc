// The runtime executing RECOMPUTE items (runtime.h, "Recomputation") on the
// toy program: A (tensor 0, 100 bytes) decided after op 1, dropped after
// op 2 (release_op), rematerialised when op 4 (swap_in_op) is dispatched,
// first used by op 5. The test "framework" recomputes A by writing A's
// byte pattern into the block it is given; the runner checks every input's
// bytes at every use, so a block rematerialised late or wrongly fails.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime_test_support.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::testing {
namespace {

Policy RecomputePolicy() {
  Policy p = ToyPolicy();
  p.items[0].action = ItemAction::kRecompute;
  p.items[0].recompute_ns = 100;
  return p;
}

// A 1000-byte environment running the toy program's RECOMPUTE policy.
Env RecomputeEnv(const Program& planned) {
  EnvOptions o;
  o.capacity_bytes = 1000;
  Env env = MakeEnv(o);
  absl::StatusOr<Trace> trace = BuildTrace(planned);
  if (env.rt == nullptr || !trace.ok()) return Env{};
  Policy policy = RecomputePolicy();
  policy.fingerprint = ComputeFingerprint(*trace, 0);
  if (!env.rt->LoadPolicyForTrace(policy, *trace, 0).ok()) return Env{};
  return env;
}

// The test framework: can_recompute answers `recomputable`; recompute
// writes the tensor's current pattern and logs the op it ran in.
struct Framework {
  Runner* run = nullptr;
  bool recomputable = true;
  bool fail = false;
  int op = -1;  // op being dispatched (set by the runner's hooks)
  std::vector<int> recomputed_at;  // op of each recompute call
  int asked = 0;

  FrameworkCallbacks Callbacks() {
    FrameworkCallbacks cb;
    cb.can_recompute = [this](uint64_t) {
      ++asked;
      return recomputable;
    };
    cb.recompute = [this](uint64_t id, void* device) -> absl::Status {
      recomputed_at.push_back(op);
      if (fail) return absl::InternalError("the recorded op's inputs are gone");
      const int t = static_cast<int>(id) - 1;
      auto* bytes = static_cast<uint8_t*>(device);
      for (int64_t k = 0; k < 100; ++k) bytes[k] = PatternByte(run->seed(t), k);
      return absl::OkStatus();
    };
    return cb;
  }
};

// One iteration of the toy program that fails at the dispatch of op 4 (A's
// rematerialisation): the status, whether A was resident and the bytes in
// use when the failure reached the runner. `cb` goes to the runtime.
struct FailedIteration {
  absl::Status status;
  int resident = -1;
  int64_t in_use = -1;
};
FailedIteration RunToFailure(Env& env, Runner& run, Framework& fw, FrameworkCallbacks cb) {
  env.rt->SetFrameworkCallbacks(std::move(cb));
  run.before_op = [&](int i) { fw.op = i; };
  FailedIteration f;
  run.on_failure = [&](const absl::Status&) {
    f.resident = *env.rt->IsResident(run.handle(0));
    f.in_use = env.rt->Stats().device_bytes_in_use;
  };
  f.status = run.Iteration(ToyProgram());
  return f;
}

TEST_CASE("recompute: A is dropped after its release op and recomputed at its swap-in op") {
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  Framework fw{&run};
  env.rt->SetFrameworkCallbacks(fw.Callbacks());
  std::vector<int64_t> in_use(7, -1);
  std::vector<int> resident_during(7, -1), resident_after(7, -1);
  run.before_op = [&](int i) { fw.op = i; };
  run.during_op = [&](int i) {
    if (i >= 1 && i <= 5) resident_during[i] = *env.rt->IsResident(run.handle(0));
  };
  run.after_op = [&](int i) {
    in_use[i] = env.rt->Stats().device_bytes_in_use;
    if (i <= 5) resident_after[i] = *env.rt->IsResident(run.handle(0));
  };
  REQUIRE(run.Iteration(ToyProgram()).ok());
  CHECK(run.mismatches().empty());
  // Ordering: resident through op 2 (its release op), dropped after it,
  // recomputed once, while op 4 is dispatched (before op 4 runs, so before
  // its first use at op 5).
  CHECK(resident_during[2] == 1);
  CHECK(resident_after[1] == 1);
  CHECK(resident_after[2] == 0);
  CHECK(resident_after[3] == 0);
  CHECK(resident_during[4] == 1);
  CHECK(resident_during[5] == 1);
  CHECK(fw.recomputed_at == std::vector<int>{4});
  CHECK(fw.asked == 1);
  // Bytes in use after each op, before its frees (100 bytes per tensor):
  //   op 1: A B = 200; op 2: B C = 200 (A dropped; 300 without the policy);
  //   op 3: C D = 200 (B freed after op 2); op 4: A D E = 300 (A back).
  CHECK(in_use[1] == 200);
  CHECK(in_use[2] == 200);
  CHECK(in_use[3] == 200);
  CHECK(in_use[4] == 300);
  const SwapCounts& c = env.rt->IterationRows().at(0).counts;
  CHECK(c.policy_drops == 1);
  CHECK(c.policy_recomputes == 1);
  CHECK(c.recompute_fallbacks_to_swap == 0);
  // No copy in either direction.
  CHECK(c.policy_swap_outs == 0);
  CHECK(c.policy_swap_ins == 0);
  CHECK(c.bytes_d2h == 0);
  CHECK(c.bytes_h2d == 0);
  CHECK(c.uses_while_off_device == 0);
  CHECK(c.passive_swap_ins == 0);
  // A second iteration does the same.
  fw.recomputed_at.clear();
  REQUIRE(run.Iteration(ToyProgram()).ok());
  CHECK(run.mismatches().empty());
  CHECK(fw.recomputed_at == std::vector<int>{4});
  CHECK(env.rt->Stats().counts.policy_recomputes == 2);
}

TEST_CASE("recompute: a tensor the framework cannot recompute is swapped instead, counted") {
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  Framework fw{&run};
  fw.recomputable = false;
  env.rt->SetFrameworkCallbacks(fw.Callbacks());
  REQUIRE(run.Iteration(ToyProgram()).ok());
  CHECK(run.mismatches().empty());
  CHECK(fw.recomputed_at.empty());
  const SwapCounts& c = env.rt->IterationRows().at(0).counts;
  CHECK(c.recompute_fallbacks_to_swap == 1);
  CHECK(c.policy_drops == 0);
  CHECK(c.policy_recomputes == 0);
  // The toy policy's swap: 100 bytes out after op 1, back at op 4.
  CHECK(c.policy_swap_outs == 1);
  CHECK(c.policy_swap_ins == 1);
  CHECK(c.bytes_d2h == 100);
  CHECK(c.bytes_h2d == 100);
}

TEST_CASE("recompute: without recompute callbacks every RECOMPUTE item runs as a SWAP") {
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  REQUIRE(run.Iteration(ToyProgram()).ok());
  CHECK(run.mismatches().empty());
  const SwapCounts& c = env.rt->IterationRows().at(0).counts;
  CHECK(c.recompute_fallbacks_to_swap == 1);
  CHECK(c.policy_swap_outs == 1);
  CHECK(c.policy_drops == 0);
}

TEST_CASE("recompute: a use while dropped rematerialises on demand, as a passive swap-in") {
  // A is also read by op 3, between its release (op 2) and swap-in (op 4).
  Program p = ToyProgram();
  p.ops[3].inputs.push_back(0);
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  Framework fw{&run};
  env.rt->SetFrameworkCallbacks(fw.Callbacks());
  run.before_op = [&](int i) { fw.op = i; };
  REQUIRE(run.Iteration(p).ok());
  CHECK(run.mismatches().empty());
  // Rematerialised for op 3; resident at op 4, so not again.
  CHECK(fw.recomputed_at == std::vector<int>{3});
  const SwapCounts& c = env.rt->IterationRows().at(0).counts;
  CHECK(c.policy_drops == 1);
  CHECK(c.passive_swap_ins == 1);
  CHECK(c.uses_while_off_device == 1);
  CHECK(c.policy_recomputes == 0);
}

TEST_CASE("recompute: a tensor written after its decision keeps its block") {
  // Op 2 writes A (in place) after A's decision at op 1: recomputing A's
  // producer would give the old value, so A is not dropped.
  Program p = ToyProgram();
  p.ops[2].outputs.push_back(0);
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  Framework fw{&run};
  env.rt->SetFrameworkCallbacks(fw.Callbacks());
  REQUIRE(run.Iteration(p).ok());
  CHECK(run.mismatches().empty());
  CHECK(fw.recomputed_at.empty());
  const SwapCounts& c = env.rt->IterationRows().at(0).counts;
  CHECK(c.policy_drops == 0);
  CHECK(c.cancelled_swap_outs == 1);
}

TEST_CASE("recompute: a failed recomputation fails the op, the tensor stays off the device") {
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  Framework fw{&run};
  fw.fail = true;
  const FailedIteration f = RunToFailure(env, run, fw, fw.Callbacks());
  const absl::Status& st = f.status;
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == absl::StatusCode::kUnavailable);
  CHECK(RuleOf(st) == "recompute-failed");
  CHECK(std::string(st.message()).find("the recorded op's inputs are gone") != std::string::npos);
  CHECK(fw.recomputed_at == std::vector<int>{4});
  // A stays off the device; its block went back: only D (100 bytes) is on
  // the device when the step fails.
  CHECK(f.resident == 0);
  CHECK(f.in_use == 100);
}

TEST_CASE("recompute: Close brings a dropped tensor back through the framework") {
  // The toy program's first four ops: A is dropped after op 2 and the
  // iteration ends before its swap-in op.
  Program p = ToyProgram();
  p.ops.resize(4);
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  Framework fw{&run};
  env.rt->SetFrameworkCallbacks(fw.Callbacks());
  run.before_op = [&](int i) { fw.op = i; };
  REQUIRE(run.Iteration(p).ok());
  CHECK(*env.rt->IsResident(run.handle(0)) == false);
  fw.op = -1;
  REQUIRE(env.rt->Close().ok());
  CHECK(fw.recomputed_at == std::vector<int>{-1});
  std::string why;
  CHECK(run.Check(0, &why));
  CHECK(why.empty());
}

TEST_CASE("recompute: the recipe's workspace is made room for and counted while it runs") {
  // The framework says its re-run of A holds 150 bytes besides A's own 100
  // (an output computed aside and copied in). At op 4's dispatch D (100) is
  // resident and A's block is claimed (100): inside the callback the
  // runtime counts 100 + 100 + 150 = 350, the iteration's peak (300 without
  // the workspace: A D E after op 4), and 300 again after op 4.
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  Framework fw{&run};
  FrameworkCallbacks cb = fw.Callbacks();
  int asked = 0;
  cb.recompute_workspace_bytes = [&](uint64_t) -> absl::StatusOr<int64_t> {
    ++asked;
    return 150;
  };
  int64_t in_use_inside = -1;
  auto recompute = cb.recompute;
  cb.recompute = [&](uint64_t id, void* device) {
    in_use_inside = env.rt->Stats().device_bytes_in_use;
    return recompute(id, device);
  };
  env.rt->SetFrameworkCallbacks(std::move(cb));
  std::vector<int64_t> in_use(7, -1);
  run.before_op = [&](int i) { fw.op = i; };
  run.after_op = [&](int i) { in_use[i] = env.rt->Stats().device_bytes_in_use; };
  REQUIRE(run.Iteration(ToyProgram()).ok());
  CHECK(run.mismatches().empty());
  CHECK(fw.recomputed_at == std::vector<int>{4});
  CHECK(in_use_inside == 350);
  CHECK(in_use[4] == 300);
  CHECK(env.rt->IterationRows().at(0).peak_bytes == 350);
  // Asked, room made, asked again (an eviction could have added an input).
  CHECK(asked == 2);
}

TEST_CASE("recompute: a failing workspace answer leaves the tensor off the device") {
  Env env = RecomputeEnv(ToyProgram());
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  Framework fw{&run};
  FrameworkCallbacks cb = fw.Callbacks();
  cb.recompute_workspace_bytes = [](uint64_t) -> absl::StatusOr<int64_t> {
    return absl::UnavailableError("framework callback recompute_workspace_bytes failed");
  };
  const FailedIteration f = RunToFailure(env, run, fw, std::move(cb));
  REQUIRE_FALSE(f.status.ok());
  CHECK(f.status.code() == absl::StatusCode::kUnavailable);
  CHECK(fw.recomputed_at.empty());  // never started
  CHECK(f.resident == 0);
  CHECK(f.in_use == 100);  // D only: A's block went back
}

}  // namespace
}  // namespace swapplan::runtime::testing
