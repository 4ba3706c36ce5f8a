// The runtime applying policies: fuzzy against naive matching on a shifted
// op sequence, the stage machine with a planning provider, seed 004's
// manual API, replacing a policy between iterations, the execution record,
// misuse.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime_test_support.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/runtime/execution_record.h"
#include "swapplan/policy/policy_runtime.h"
#include "swapplan/sim/checker.h"
#include "swapplan/trace/io.h"
#include "swapplan/util/error.h"

namespace swapplan::runtime::testing {
namespace {

// The toy program with an op inserted after op 0: X (tensor 6) made there
// and read by op 3 ("fwd.c"). Naive keys (op ordinal 1, use 0) now name X.
Program ShiftedToy() {
  Program p = ToyProgram();
  p.sizes.push_back(100);
  p.ops.insert(p.ops.begin() + 1, ProgOp{"fwd.x", Phase::kForward, {}, {6}, {}});
  ProgOp& c = p.ops[3];
  REQUIRE(c.name == "fwd.c");
  c.inputs.push_back(6);
  c.free_after.push_back(6);
  return p;
}

TEST_CASE("policy: fuzzy keys find the planned tensor in a shifted op sequence, naive keys do not") {
  SECTION("fuzzy") {
    Env env = ToyPolicyEnv(1e9, 1e9, MatcherKind::kFuzzy);
    REQUIRE(env.rt != nullptr);
    Runner run(env);
    REQUIRE(run.Iteration(ShiftedToy()).ok());
    CHECK(run.mismatches().empty());
    const IterationStats& row = env.rt->IterationRows().at(0);
    CHECK(row.counts.items_matched == 1);
    CHECK(row.counts.policy_swap_outs == 1);
    CHECK(row.counts.policy_swap_ins == 1);
    CHECK(row.counts.uses_while_off_device == 0);
    CHECK_FALSE(row.fingerprint_matched);  // the sequence is not the planned one
  }
  SECTION("naive") {
    Env env = ToyPolicyEnv(1e9, 1e9, MatcherKind::kNaive);
    REQUIRE(env.rt != nullptr);
    Runner run(env);
    REQUIRE(run.Iteration(ShiftedToy()).ok());
    CHECK(run.mismatches().empty());  // bytes are never wrong, only late
    const IterationStats& row = env.rt->IterationRows().at(0);
    // X was taken for A: swapped out after op 1, released after op 2 and
    // needed at op 3 — a use while off the device, served by a passive
    // swap-in.
    CHECK(row.counts.uses_while_off_device == 1);
    CHECK(row.counts.passive_swap_ins == 1);
  }
}

TEST_CASE("policy: strict fingerprints stop a policy at the first op that differs") {
  EnvOptions o;
  o.runtime.strict_fingerprint = true;
  Env env = MakeEnv(o);
  absl::StatusOr<Trace> trace = BuildTrace(ToyProgram());
  REQUIRE(trace.ok());
  REQUIRE(env.rt->LoadPolicyForTrace(ToyPolicy(), *trace, 0).ok());
  Runner run(env);
  REQUIRE(run.Iteration(ToyProgram()).ok());  // the planned sequence: applied
  REQUIRE(run.Iteration(ShiftedToy()).ok());  // op 1 differs: stopped there
  const std::vector<IterationStats>& rows = env.rt->IterationRows();
  CHECK(rows[0].first_divergent_op == -1);
  CHECK(rows[0].counts.policy_swap_outs == 1);
  CHECK(rows[1].first_divergent_op == 1);
  CHECK(rows[1].counts.policy_swap_outs == 0);
  CHECK(run.mismatches().empty());
}

TEST_CASE("policy: a self-contained (v2) policy loads without its trace") {
  absl::StatusOr<Trace> trace = BuildTrace(ToyProgram());
  REQUIRE(trace.ok());
  Env env = MakeEnv({});
  Policy v1 = ToyPolicy();
  absl::StatusOr<int32_t> none = env.rt->LoadPolicy(v1);
  CHECK(absl::IsInvalidArgument(none.status()));
  CHECK(none.status().message().find("no runtime section") != std::string::npos);
  Policy v2 = ToyPolicy();
  v2.fingerprint = ComputeFingerprint(*trace, 0);
  REQUIRE(AttachPolicyRuntime(*trace, 0, &v2).ok());
  REQUIRE(env.rt->LoadPolicy(v2).ok());
  Runner run(env);
  REQUIRE(run.Iteration(ToyProgram()).ok());
  const IterationStats& row = env.rt->IterationRows().at(0);
  CHECK(row.counts.policy_swap_outs == 1);
  CHECK(row.counts.policy_swap_ins == 1);
  CHECK(row.fingerprint_matched);
  CHECK(row.first_divergent_op == -1);
  CHECK(run.mismatches().empty());
}

TEST_CASE("policy: items on the host tier run; an item on a remote tier is refused") {
  absl::StatusOr<Trace> trace = BuildTrace(ToyProgram());
  REQUIRE(trace.ok());
  Env env = MakeEnv({});
  Policy p = ToyPolicy();
  p.device.tiers.push_back({.name = "remote", .capacity_bytes = 1 << 20,
                            .store_bandwidth_bytes_per_s = 1e9,
                            .load_bandwidth_bytes_per_s = 1e9});
  // Tier 0 (the host) named explicitly by a device that has a remote tier:
  // loads as before.
  REQUIRE(env.rt->LoadPolicyForTrace(p, *trace, 0).ok());
  p.items[0].tier = 1;
  absl::StatusOr<int32_t> remote = env.rt->LoadPolicyForTrace(p, *trace, 0);
  CHECK(absl::IsInvalidArgument(remote.status()));
  CHECK(remote.status().message() ==
        absl::StrCat("runtime: policy item 0 (tensor ", p.items[0].tensor_id,
                     ") stores to tier 1 (remote); the runtime's backends reach only the host "
                     "(pinned memory, tier 0)"));
}

TEST_CASE("stages: WarmUp -> GenPolicy -> Stable, policies planned from the runtime's record") {
  const Program p = LayeredProgram(/*layers=*/8, /*act_bytes=*/1000, /*param_bytes=*/100);
  // Unswapped peak: 8 parameters (800) + x_0..x_8 (9000) + loss (4) + g_8
  // (1000) = 10804 bytes, at loss.bwd. The budget is 8000.
  // The papers' stage machine (one key, planned on one iteration, the best
  // GenPolicy policy in Stable); the issue-16 rules: policy_keys_test.cc.
  EnvOptions o;
  o.capacity_bytes = 8000;
  o.runtime.policies_by_input = false;
  o.runtime.planning = PolicyPlanning::kIteration;
  o.runtime.tracker.warmup_iterations = 1;
  o.runtime.tracker.genpolicy_iterations = 1;
  o.runtime.work_dir = TempDir("stages");
  Env env = MakeEnv(o);
  REQUIRE(env.rt != nullptr);
  auto made = std::make_shared<std::vector<PlannedPolicy>>();
  env.rt->SetPolicyProvider(ChameleonProvider(made));
  Runner run(env);
  REQUIRE(run.AllocatePersistent(p).ok());
  for (int i = 0; i < 7; ++i) {
    absl::Status st = run.Iteration(p);
    INFO("iteration " << i << ": " << st.message());
    REQUIRE(st.ok());
  }
  CHECK(run.mismatches().empty());
  const std::vector<IterationStats>& rows = env.rt->IterationRows();
  // m = 1, n = 1: W W G G S S S (Algorithm 1; the first iteration counts as
  // stable against itself).
  const Stage expect[] = {Stage::kWarmUp, Stage::kWarmUp, Stage::kGenPolicy, Stage::kGenPolicy,
                          Stage::kStable, Stage::kStable, Stage::kStable};
  for (int i = 0; i < 7; ++i) {
    INFO("iteration " << i << " plan error: " << rows[i].plan_error);
    CHECK(rows[i].stage == expect[i]);
    CHECK(rows[i].peak_bytes <= 8000);
  }
  // Warm-up survived on Algorithm 3.
  CHECK(rows[0].counts.passive_swap_outs > 0);
  REQUIRE(made->size() == 2);  // planned at the ends of iterations 1 and 2
  CHECK(rows[2].policy == 0);
  CHECK(rows[3].policy == 1);
  const int32_t stable_policy = rows[4].policy;
  REQUIRE(stable_policy >= 0);
  int64_t stable_peak = 0;
  for (int i = 4; i < 7; ++i) {
    CHECK(rows[i].policy == stable_policy);
    CHECK(rows[i].counts.ooms == 0);
    CHECK(rows[i].counts.uses_while_off_device == 0);
    CHECK(rows[i].counts.passive_swap_outs == 0);
    CHECK(rows[i].counts.items_missed == 0);
    CHECK(rows[i].fingerprint_matched);
    stable_peak = std::max(stable_peak, rows[i].peak_bytes);
  }
  // The stable peak is the checker's peak for the policy on its record.
  absl::StatusOr<Trace> record = ReadTrace((*made)[stable_policy].record_path);
  REQUIRE(record.ok());
  absl::StatusOr<Policy> policy = ReadPolicy((*made)[stable_policy].policy_path);
  REQUIRE(policy.ok());
  absl::StatusOr<CheckReport> report = CheckPolicy(*record, *policy);
  REQUIRE(report.ok());
  CHECK(report->clean());
  CHECK(stable_peak <= report->peak_bytes);
  CHECK(stable_peak * 100 >= report->peak_bytes * 95);
}

TEST_CASE("stages: repeated policy misses in Stable send the runtime back to GenPolicy") {
  // The stages test's program and budget (8000 bytes) until Stable (m = 1,
  // n = 1: W W G G S), then the activations grow from 1000 to 1300 bytes
  // (a longer sequence: the same ops, larger tensors). Unswapped peak
  // 800 + 9·1300 + 4 + 1300 = 13804 bytes: the Stable policy, planned for
  // 10804, leaves allocations Algorithm 3 has to handle — a miss in each
  // iteration. The second miss (max_policy_misses 2) sends the tracker to
  // GenPolicy, whose policies are planned on the 1300-byte records; Stable
  // again after n + 1 = 2 GenPolicy iterations, and misses stop.
  const Program small = LayeredProgram(/*layers=*/8, /*act_bytes=*/1000, /*param_bytes=*/100);
  const Program large = LayeredProgram(/*layers=*/8, /*act_bytes=*/1300, /*param_bytes=*/100);
  // One key, planned on one iteration (keyed by input, the larger input
  // would get its own policy after the first miss: policy_keys_test.cc).
  EnvOptions o;
  o.capacity_bytes = 8000;
  o.runtime.policies_by_input = false;
  o.runtime.planning = PolicyPlanning::kIteration;
  o.runtime.tracker.warmup_iterations = 1;
  o.runtime.tracker.genpolicy_iterations = 1;
  o.runtime.work_dir = TempDir("misses");
  Env env = MakeEnv(o);
  REQUIRE(env.rt != nullptr);
  auto made = std::make_shared<std::vector<PlannedPolicy>>();
  env.rt->SetPolicyProvider(ChameleonProvider(made));
  Runner run(env);
  REQUIRE(run.AllocatePersistent(small).ok());
  for (int i = 0; i < 11; ++i) {
    absl::Status st = run.Iteration(i < 5 ? small : large);
    INFO("iteration " << i << ": " << st.message());
    REQUIRE(st.ok());
  }
  CHECK(run.mismatches().empty());
  const std::vector<IterationStats>& rows = env.rt->IterationRows();
  // 0 W, 1 W, 2 G, 3 G, 4 S (small); 5 S miss, 6 S miss -> 7 G, 8 G,
  // 9 S, 10 S.
  const Stage expect[] = {Stage::kWarmUp, Stage::kWarmUp,    Stage::kGenPolicy, Stage::kGenPolicy,
                          Stage::kStable, Stage::kStable,    Stage::kStable,    Stage::kGenPolicy,
                          Stage::kGenPolicy, Stage::kStable, Stage::kStable};
  for (int i = 0; i < 11; ++i) {
    INFO("iteration " << i << " plan error: " << rows[i].plan_error);
    CHECK(rows[i].stage == expect[i]);
  }
  CHECK(rows[4].counts.allocation_failures == 0);
  CHECK(rows[5].counts.allocation_failures > 0);
  CHECK(rows[6].counts.allocation_failures > 0);
  CHECK(rows[5].next_stage == Stage::kStable);
  CHECK(rows[6].next_stage == Stage::kGenPolicy);
  CHECK(rows[5].policy_misses == 1);
  CHECK(rows[6].policy_misses == 2);
  CHECK(rows[6].stage_change == StageChange::kPolicyMisses);
  CHECK(StageChangeName(rows[6].stage_change) == "policy misses");
  // The new policies come from the larger records, and Stable holds.
  REQUIRE(made->size() == 4);  // ends of iterations 1, 2 (small), 6, 7 (large)
  CHECK(rows[7].policy == 2);
  CHECK(rows[8].policy == 3);
  for (int i = 9; i < 11; ++i) {
    CHECK(rows[i].policy >= 2);
    CHECK(rows[i].counts.allocation_failures == 0);
    CHECK(rows[i].counts.ooms == 0);
    CHECK(rows[i].counts.uses_while_off_device == 0);
  }
}

TEST_CASE("seed 004: pageout_manual, before_prefetch_wait_all, need_prefetch, prefetch_all") {
  Env env = MakeEnv({.capacity_bytes = 1000});
  Runtime& rt = *env.rt;
  const int64_t shape[] = {25};
  std::vector<TensorHandle> t;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<TensorHandle> h =
        rt.AllocTensor({.size_bytes = 100, .dtype = DType::kFloat32, .shape = shape}, nullptr);
    REQUIRE(h.ok());
    std::fill_n(static_cast<uint8_t*>(*rt.TensorData(*h)), 100, static_cast<uint8_t>(10 + i));
    t.push_back(*h);
  }
  // pageout_manual: copied out; the block is held until the wait.
  REQUIRE(rt.PageOut(t[0]).ok());
  REQUIRE(rt.PageOut(t[1]).ok());
  CHECK(*rt.IsResident(t[0]));
  CHECK(rt.Stats().device_bytes_in_use == 300);
  REQUIRE(rt.WaitAllSwapOuts().ok());
  CHECK_FALSE(*rt.IsResident(t[0]));
  CHECK(rt.Stats().device_bytes_in_use == 100);
  // prefetch_init holds the prefetch queue; prefetch_all starts it.
  REQUIRE(rt.PrefetchInit().ok());
  REQUIRE(rt.NeedPrefetch(t[0]).ok());
  REQUIRE(rt.PrefetchAll().ok());
  CHECK(rt.Stats().counts.manual_swap_ins == 1);
  // Using t[0]: prefetched, no passive swap; t[1] was not: passive, at the
  // head (its copy runs on the high-priority in-lane, stream 4).
  REQUIRE(rt.IterationBegin().ok());
  REQUIRE(rt.OpBegin(rt.InternOp("use"), Phase::kForward, {t[0], t[1]}).ok());
  CHECK(static_cast<uint8_t*>(*rt.TensorData(t[0]))[99] == 10);
  CHECK(static_cast<uint8_t*>(*rt.TensorData(t[1]))[0] == 11);
  REQUIRE(rt.OpEnd({}).ok());
  REQUIRE(rt.IterationEnd().ok());
  const SwapCounts c = rt.Stats().counts;
  CHECK(c.manual_swap_outs == 2);
  CHECK(c.passive_swap_ins == 1);
  CHECK(c.uses_while_off_device == 0);  // seed 004's passive swap-in, by design
  const std::vector<CopyLogEntry> log = env.device->CopyLog();
  REQUIRE(log.size() == 4);
  CHECK(log[3].direction == Direction::kHostToDevice);
  CHECK(log[3].stream == 4);
  // Errors: a second pageout of a tensor already out.
  REQUIRE(rt.PageOut(t[2]).ok());
  CHECK(RuleOf(rt.PageOut(t[2])) == "call-order");
}

TEST_CASE("a policy is replaced between iterations; ClearPolicy drops it") {
  Env env = ToyPolicyEnv(1e9, 1e9);
  REQUIRE(env.rt != nullptr);
  Runner run(env);
  absl::StatusOr<Trace> trace = BuildTrace(ToyProgram());
  REQUIRE(trace.ok());
  // Loaded during an iteration (at op 3): the next one runs it.
  run.during_op = [&](int i) {
    if (i != 3) return;
    absl::StatusOr<int32_t> second = env.rt->LoadPolicyForTrace(ToyPolicy(), *trace, 0);
    REQUIRE(second.ok());
    CHECK(*second == 1);
  };
  REQUIRE(run.Iteration(ToyProgram()).ok());
  run.during_op = nullptr;
  REQUIRE(run.Iteration(ToyProgram()).ok());
  env.rt->ClearPolicy();
  REQUIRE(run.Iteration(ToyProgram()).ok());
  const std::vector<IterationStats>& rows = env.rt->IterationRows();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].policy == 0);
  CHECK(rows[1].policy == 1);
  CHECK(rows[2].policy == -1);
  CHECK(rows[1].counts.policy_swap_outs == 1);
  CHECK(rows[2].counts.policy_swap_outs == 0);
}

TEST_CASE("record: the trace of what ran accounts for every byte the runtime held") {
  const Program p = LayeredProgram(4, 1000, 100);
  EnvOptions o;
  o.capacity_bytes = 4000;  // unswapped peak 6804: Algorithm 3 swaps
  o.runtime.keep_record = true;
  Env env = MakeEnv(o);
  Runner run(env);
  REQUIRE(run.AllocatePersistent(p).ok());
  for (int i = 0; i < 3; ++i) REQUIRE(run.Iteration(p).ok());
  CHECK(run.mismatches().empty());
  absl::StatusOr<Trace> rec = env.rt->RecordTrace();
  REQUIRE(rec.ok());
  CHECK(rec->num_iterations() == 3);
  absl::StatusOr<MemoryCurve> curve = ComputeMemoryCurve(*rec);
  REQUIRE(curve.ok());
  // The runtime's bytes in use after each op, as the record's events
  // rebuild them: equal everywhere.
  CHECK(curve->allocator().ops_compared == rec->num_ops());
  CHECK(curve->allocator().max_abs_diff_bytes == 0);
  CHECK(curve->peak_recorded().bytes == env.rt->Stats().peak_device_bytes);
  CHECK(curve->peak_recorded().bytes <= 4000);
  int passive = 0;
  for (const MemoryEvent& e : rec->events()) passive += e.passive;
  CHECK(passive > 0);
  // And the file round-trips, in the JSON and in the binary form
  // (trace_wire_test.cc compares them field by field).
  const std::string dir = TempDir("record");
  for (const char* name : {"/run.json.gz", "/run.trace"}) {
    REQUIRE(env.rt->WriteRecord(dir + name).ok());
    absl::StatusOr<Trace> back = ReadTrace(dir + name);
    REQUIRE(back.ok());
    CHECK(back->num_ops() == rec->num_ops());
  }
  absl::Status unwritable = env.rt->WriteRecord(dir + "/no/such/dir/run.trace");
  CHECK(KindOf(unwritable) == ErrorKind::kUnavailable);
  CHECK(unwritable.message().find("no/such/dir/run.trace: cannot write") != std::string::npos);
}

TEST_CASE("misuse: stale handles and calls out of order are clear errors") {
  Env env = MakeEnv({.capacity_bytes = 1000});
  Runtime& rt = *env.rt;
  const int32_t op = rt.InternOp("x");
  CHECK(RuleOf(rt.OpBegin(op, Phase::kForward, {})) == "call-order");  // no iteration
  REQUIRE(rt.IterationBegin().ok());
  CHECK(RuleOf(rt.IterationBegin()) == "call-order");
  const int64_t shape[] = {25};
  absl::StatusOr<TensorHandle> t =
      rt.AllocTensor({.size_bytes = 100, .dtype = DType::kFloat32, .shape = shape}, nullptr);
  REQUIRE(t.ok());
  REQUIRE(rt.FreeTensor(*t).ok());
  absl::Status st = rt.OpBegin(op, Phase::kForward, {*t});
  CHECK(absl::IsInvalidArgument(st));
  CHECK(st.message().find("does not name a live tensor") != std::string::npos);
  CHECK(absl::IsInvalidArgument(rt.OpBegin(op + 7, Phase::kForward, {})));
  REQUIRE(rt.OpBegin(op, Phase::kForward, {}).ok());
  CHECK(RuleOf(rt.OpBegin(op, Phase::kForward, {})) == "call-order");
  CHECK(RuleOf(rt.IterationEnd()) == "call-order");
  REQUIRE(rt.OpEnd({}).ok());
  REQUIRE(rt.IterationEnd().ok());
}

}  // namespace
}  // namespace swapplan::runtime::testing

namespace swapplan::runtime::testing {
namespace {

TEST_CASE("record: a tensor that dies off the device before an iteration's first op") {
  ExecutionRecord rec(/*keep_all=*/false);
  const std::vector<std::string> names = {"make", "use"};
  const int64_t t = rec.AddTensor({.size_bytes = 100, .dtype = DType::kFloat32, .shape = {25}},
                                  /*resident_from_start=*/false);
  rec.BeginIteration();
  rec.AddEvent(0, MemoryEventKind::kAlloc, t, false);
  rec.AddOp({.name = 0, .phase = Phase::kForward, .outputs = {t}, .bytes_in_use = 100});
  rec.AddEvent(0, MemoryEventKind::kSwapOut, t, false, 100);  // released after op 0
  rec.AddOp({.name = 1, .phase = Phase::kForward, .bytes_in_use = 0});
  rec.EndIteration(10);
  // Iteration 1 begins with t off the device; t dies before its first op
  // (the free belongs after the last op of iteration 0).
  rec.BeginIteration();
  rec.AddEvent(-1, MemoryEventKind::kFree, t, false, 0);
  const int64_t u = rec.AddTensor({.size_bytes = 50, .dtype = DType::kFloat32, .shape = {12}},
                                  false);
  rec.AddEvent(0, MemoryEventKind::kAlloc, u, false);
  rec.AddOp({.name = 0, .phase = Phase::kForward, .outputs = {u}, .bytes_in_use = 50});
  rec.EndIteration(10);
  absl::StatusOr<Trace> one = rec.BuildTrace(names, {}, 1, 1);
  INFO(one.status().message());
  REQUIRE(one.ok());
  CHECK(one->num_tensors() == 1);  // only u: t was gone before it began
  absl::StatusOr<Trace> both = rec.BuildTrace(names, {}, 0, 1);
  INFO(both.status().message());
  REQUIRE(both.ok());
  CHECK(both->num_tensors() == 2);
}

}  // namespace
}  // namespace swapplan::runtime::testing
