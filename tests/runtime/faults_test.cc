// Faults in the runtime: injected copy errors (the step fails with a clear
// error, no tensor is lost), allocation failures (Algorithm 3), budget OOM,
// slow copies (stalls).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "runtime_test_support.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::testing {
namespace {

bool Has(absl::string_view text, absl::string_view part) {
  return text.find(part) != absl::string_view::npos;
}

TEST_CASE("fault: a failed copy out fails the step clearly and keeps the tensor") {
  Env env = ToyPolicyEnv(1e9, 1e9);
  REQUIRE(env.rt != nullptr);
  REQUIRE(env.device->InjectFault({.kind = FaultKind::kCopyError, .any_direction = false,
                                 .direction = Direction::kDeviceToHost}).ok());
  Runner run(env);
  bool checked = false;
  run.on_failure = [&](const absl::Status& st) {
    // The release after op 2 found the copy failed.
    CHECK(RuleOf(st) == "copy-failed");
    CHECK(Has(st.message(), "swap-out of tensor"));
    CHECK(Has(st.message(), "injected copy error: D2H copy of 100 bytes"));
    CHECK(Has(st.message(), "the tensor keeps its device block"));
    // Nothing lost: A kept its block and its bytes.
    absl::StatusOr<bool> resident = env.rt->IsResident(run.handle(0));
    REQUIRE(resident.ok());
    CHECK(*resident);
    std::string why;
    CHECK(run.Check(0, &why));
    INFO(why);
    CHECK(run.Check(2, &why));
    checked = true;
  };
  absl::Status st = run.Iteration(ToyProgram());
  CHECK(RuleOf(st) == "copy-failed");
  CHECK(checked);
  CHECK(env.rt->Stats().counts.copy_errors == 1);
  // The next step runs as planned.
  st = run.Iteration(ToyProgram());
  INFO(st.message());
  REQUIRE(st.ok());
  CHECK(run.mismatches().empty());
  CHECK(env.rt->Stats().counts.policy_swap_ins == 1);
}

TEST_CASE("fault: a failed copy in fails the step clearly; the bytes stay on the host") {
  Env env = ToyPolicyEnv(1e9, 1e9);
  REQUIRE(env.rt != nullptr);
  REQUIRE(env.device->InjectFault({.kind = FaultKind::kCopyError, .any_direction = false,
                                 .direction = Direction::kHostToDevice}).ok());
  Runner run(env);
  bool checked = false;
  run.on_failure = [&](const absl::Status& st) {
    // Op 5 waited for A's prefetch and found it failed.
    CHECK(RuleOf(st) == "copy-failed");
    CHECK(Has(st.message(), "swap-in of tensor"));
    CHECK(Has(st.message(), "its bytes stay on the host"));
    absl::StatusOr<bool> resident = env.rt->IsResident(run.handle(0));
    REQUIRE(resident.ok());
    CHECK_FALSE(*resident);
    // Touching A brings it back (a passive swap-in) with its bytes.
    REQUIRE(env.rt->OpBegin(env.rt->InternOp("touch"), Phase::kOther, {run.handle(0)}).ok());
    std::string why;
    CHECK(run.Check(0, &why));
    INFO(why);
    REQUIRE(env.rt->OpEnd({}).ok());
    checked = true;
  };
  CHECK(RuleOf(run.Iteration(ToyProgram())) == "copy-failed");
  CHECK(checked);
  const SwapCounts c = env.rt->Stats().counts;
  CHECK(c.copy_errors == 1);
  CHECK(c.passive_swap_ins == 1);
  CHECK(c.uses_while_off_device == 1);
}

// Fills / checks a runtime-owned tensor.
void FillBytes(Runtime& rt, TensorHandle t, int64_t n, uint8_t v) {
  std::memset(*rt.TensorData(t), v, static_cast<size_t>(n));
}
bool HasBytes(Runtime& rt, TensorHandle t, int64_t n, uint8_t v) {
  const auto* p = static_cast<const uint8_t*>(*rt.TensorData(t));
  for (int64_t k = 0; k < n; ++k) {
    if (p[k] != v) return false;
  }
  return true;
}

TensorHandle Alloc(Runtime& rt, int64_t bytes, uint8_t fill) {
  const int64_t shape[] = {bytes / 4};
  absl::StatusOr<TensorHandle> t =
      rt.AllocTensor({.size_bytes = bytes, .dtype = DType::kFloat32, .shape = shape}, nullptr);
  REQUIRE(t.ok());
  FillBytes(rt, *t, bytes, fill);
  return *t;
}

TEST_CASE("fault: an allocation failure goes through Algorithm 3") {
  Env env = MakeEnv({.capacity_bytes = 1000});
  Runtime& rt = *env.rt;
  REQUIRE(rt.IterationBegin().ok());
  REQUIRE(rt.OpBegin(rt.InternOp("make"), Phase::kForward, {}).ok());
  const TensorHandle x = Alloc(rt, 100, 1), y = Alloc(rt, 200, 2), z = Alloc(rt, 300, 3);
  REQUIRE(rt.OpEnd({x, y, z}).ok());
  REQUIRE(rt.OpBegin(rt.InternOp("use"), Phase::kForward, {y}).ok());
  // One failure: step (i) has nothing to release, the retry succeeds.
  REQUIRE(env.device->InjectFault({.kind = FaultKind::kAllocFailure, .count = 1}).ok());
  const TensorHandle w = Alloc(rt, 100, 4);
  CHECK(rt.Stats().counts.allocation_failures == 1);
  CHECK(rt.Stats().counts.passive_swap_outs == 0);
  // Two failures: the retry after step (i) fails too; step (ii) swaps out
  // the tensor closest in size to the 100 bytes asked for — X (100 bytes;
  // Y is used by this op, Z is 300) — and the next retry succeeds.
  REQUIRE(env.device->InjectFault({.kind = FaultKind::kAllocFailure, .count = 2}).ok());
  const TensorHandle v = Alloc(rt, 100, 5);
  CHECK(rt.Stats().counts.allocation_failures == 2);
  CHECK(rt.Stats().counts.passive_swap_outs == 1);
  CHECK_FALSE(*rt.IsResident(x));
  CHECK(*rt.IsResident(z));
  REQUIRE(rt.OpEnd({w, v}).ok());
  // X comes back on its next use, intact.
  REQUIRE(rt.OpBegin(rt.InternOp("again"), Phase::kForward, {x}).ok());
  CHECK(HasBytes(rt, x, 100, 1));
  REQUIRE(rt.OpEnd({}).ok());
  CHECK(rt.Stats().counts.passive_swap_ins == 1);
  CHECK(rt.Stats().counts.uses_while_off_device == 0);  // a victim, not a policy's
  REQUIRE(rt.IterationEnd().ok());
}

TEST_CASE("fault: Algorithm 3 takes the earliest registered of equal sizes, whatever its slot") {
  // Budget 400. Op 0 makes A, B, C (100 bytes each; slots 0, 1, 2); A dies,
  // and D, made at op 1, takes A's slot 0. Op 2 asks for 200 with B, C, D
  // resident (300): 100 missing, three candidates of exactly 100 bytes. The
  // earliest registered, B, leaves — not D, the lowest slot (the order of
  // the simulator's Algorithm 3 is the trace's, i.e. registration order).
  Env env = MakeEnv({.capacity_bytes = 400});
  Runtime& rt = *env.rt;
  REQUIRE(rt.IterationBegin().ok());
  REQUIRE(rt.OpBegin(rt.InternOp("make"), Phase::kForward, {}).ok());
  const TensorHandle a = Alloc(rt, 100, 1), b = Alloc(rt, 100, 2), c = Alloc(rt, 100, 3);
  REQUIRE(rt.OpEnd({a, b, c}).ok());
  REQUIRE(rt.FreeTensor(a).ok());
  REQUIRE(rt.OpBegin(rt.InternOp("make"), Phase::kForward, {}).ok());
  const TensorHandle d = Alloc(rt, 100, 4);
  CHECK((d & 0xffffffffu) == (a & 0xffffffffu));  // A's slot, a new generation
  REQUIRE(rt.OpEnd({d}).ok());
  REQUIRE(rt.OpBegin(rt.InternOp("big"), Phase::kForward, {}).ok());
  const TensorHandle e = Alloc(rt, 200, 5);
  CHECK(rt.Stats().counts.passive_swap_outs == 1);
  CHECK_FALSE(*rt.IsResident(b));
  CHECK(*rt.IsResident(c));
  CHECK(*rt.IsResident(d));
  REQUIRE(rt.OpEnd({e}).ok());
  REQUIRE(rt.IterationEnd().ok());
}

TEST_CASE("fault: over the budget, Algorithm 3 swaps the closest tensor, then a clear OOM") {
  Env env = MakeEnv({.capacity_bytes = 1000});
  Runtime& rt = *env.rt;
  REQUIRE(rt.IterationBegin().ok());
  REQUIRE(rt.OpBegin(rt.InternOp("make"), Phase::kForward, {}).ok());
  const TensorHandle x = Alloc(rt, 300, 1), y = Alloc(rt, 300, 2), z = Alloc(rt, 300, 3);
  REQUIRE(rt.OpEnd({x, y, z}).ok());
  REQUIRE(rt.OpBegin(rt.InternOp("big"), Phase::kForward, {x, y}).ok());
  // 900 + 400 = 1300: 300 missing; Z (300, not used by this op) leaves.
  const TensorHandle w = Alloc(rt, 400, 4);
  CHECK_FALSE(*rt.IsResident(z));
  CHECK(rt.Stats().device_bytes_in_use == 1000);
  // 200 more: nothing else may leave (X and Y are this op's, W is new).
  const int64_t shape[] = {50};
  absl::StatusOr<TensorHandle> v =
      rt.AllocTensor({.size_bytes = 200, .dtype = DType::kFloat32, .shape = shape}, nullptr);
  REQUIRE_FALSE(v.ok());
  CHECK(RuleOf(v.status()) == "out-of-memory");
  CHECK(Has(v.status().message(), "device out of memory at op 1 (big)"));
  CHECK(Has(v.status().message(), "200 bytes requested, 1000 of 1000 bytes in use"));
  CHECK(Has(v.status().message(), "swapped out 0 tensors"));
  const SwapCounts c = rt.Stats().counts;
  CHECK(c.ooms == 1);
  CHECK(c.passive_swap_outs == 1);
  CHECK(c.allocation_failures == 2);
  REQUIRE(rt.OpEnd({w}).ok());
  REQUIRE(rt.IterationEnd().ok());
  // The record has Z's passive swap-out after op 0 (off during op 1).
  absl::StatusOr<Trace> rec = rt.RecordTrace();
  REQUIRE(rec.ok());
  bool found = false;
  for (const MemoryEvent& e : rec->events()) {
    if (e.kind == MemoryEventKind::kSwapOut) {
      CHECK(e.op == 0);
      CHECK(e.passive);
      found = true;
    }
  }
  CHECK(found);
}

TEST_CASE("fault: Algorithm 3's last resort moves a persistent tensor, back by IterationEnd") {
  // Budget 1000. P, a 400-byte parameter, is resident before the
  // iteration. Op 0 makes X (300); op 1 reads X and asks for W (400): 1100,
  // 100 missing, and X is op 1's: no tensor of the iteration may leave. P,
  // not used by op 1, goes (700 in use). Nothing reads P again in this
  // iteration: IterationEnd brings it back (X and W are freed by then), so
  // the next iteration starts with P resident, as the simulator assumes.
  for (const bool last_resort : {true, false}) {
    INFO("oom_persistent_victims " << last_resort);
    EnvOptions o;
    o.capacity_bytes = 1000;
    o.runtime.oom_persistent_victims = last_resort;
    Env env = MakeEnv(o);
    Runtime& rt = *env.rt;
    const int64_t shape[] = {100};
    absl::StatusOr<TensorHandle> p = rt.AllocTensor(
        {.size_bytes = 400, .dtype = DType::kFloat32, .shape = shape,
         .kind = TensorKind::kParameter, .persistent = 1},
        nullptr);
    REQUIRE(p.ok());
    FillBytes(rt, *p, 400, 7);
    REQUIRE(rt.IterationBegin().ok());
    REQUIRE(rt.OpBegin(rt.InternOp("make"), Phase::kForward, {}).ok());
    const TensorHandle x = Alloc(rt, 300, 1);
    REQUIRE(rt.OpEnd({x}).ok());
    REQUIRE(rt.OpBegin(rt.InternOp("big"), Phase::kForward, {x}).ok());
    absl::StatusOr<TensorHandle> w =
        rt.AllocTensor({.size_bytes = 400, .dtype = DType::kFloat32, .shape = shape}, nullptr);
    if (!last_resort) {
      // The seed's rule: persistent tensors never move; op 1 is an OOM.
      REQUIRE_FALSE(w.ok());
      CHECK(RuleOf(w.status()) == "out-of-memory");
      CHECK(rt.Stats().counts.passive_swap_outs == 0);
      REQUIRE(rt.OpEnd({}).ok());
      REQUIRE(rt.IterationEnd().ok());
      continue;
    }
    REQUIRE(w.ok());
    CHECK_FALSE(*rt.IsResident(*p));
    CHECK(rt.Stats().device_bytes_in_use == 700);
    CHECK(rt.Stats().counts.passive_swap_outs == 1);
    CHECK(rt.Stats().counts.persistent_passive_swap_outs == 1);
    REQUIRE(rt.OpEnd({*w}).ok());
    REQUIRE(rt.FreeTensor(x).ok());
    REQUIRE(rt.FreeTensor(*w).ok());
    REQUIRE(rt.IterationEnd().ok());
    CHECK(*rt.IsResident(*p));
    CHECK(HasBytes(rt, *p, 400, 7));
    CHECK(rt.Stats().device_bytes_in_use == 400);
    CHECK(rt.Stats().counts.passive_swap_ins == 1);
    CHECK(rt.Stats().counts.uses_while_off_device == 0);
  }
}

TEST_CASE("fault: with OOM handling off, a failed allocation is an OOM at once") {
  EnvOptions o;
  o.capacity_bytes = 1000;
  o.runtime.oom_handling = OomHandling::kOff;
  Env env = MakeEnv(o);
  Runtime& rt = *env.rt;
  REQUIRE(rt.IterationBegin().ok());
  REQUIRE(rt.OpBegin(rt.InternOp("make"), Phase::kForward, {}).ok());
  Alloc(rt, 900, 1);
  const int64_t shape[] = {50};
  absl::StatusOr<TensorHandle> v =
      rt.AllocTensor({.size_bytes = 200, .dtype = DType::kFloat32, .shape = shape}, nullptr);
  CHECK(RuleOf(v.status()) == "out-of-memory");
  CHECK(Has(v.status().message(), "OOM handling off"));
  CHECK(rt.Stats().counts.ooms == 1);
  CHECK(rt.Stats().counts.allocation_failures == 0);
}

TEST_CASE("fault: a slow copy out makes the release wait: a stall") {
  Env env = ToyPolicyEnv(1e9, 1e9);
  REQUIRE(env.rt != nullptr);
  // 100 bytes at 1 byte/ns x 1e6 = 100 ms.
  REQUIRE(env.device->InjectFault({.kind = FaultKind::kSlowCopy, .any_direction = false,
                                 .direction = Direction::kDeviceToHost,
                                 .slow_factor = 1e6}).ok());
  Runner run(env);
  REQUIRE(run.Iteration(ToyProgram()).ok());
  CHECK(run.mismatches().empty());
  const SwapCounts c = env.rt->Stats().counts;
  CHECK(c.stalls >= 1);
  CHECK(c.stall_ns >= 10'000'000);
}

}  // namespace
}  // namespace swapplan::runtime::testing
