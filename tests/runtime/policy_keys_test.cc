// The runtime's stage machine with the issue-16 rules (runtime.h,
// "Stages"): policies keyed by input signature with the nearest-by-bytes
// fallback, the records a provider gets (observed planning), the paper's
// planning on one iteration, and remembered sequences. Each case fails when
// its rule is taken out of the runtime.
//
// The program of every case: LayeredProgram(8 layers, A-byte activations,
// 100-byte parameters), 20 ops (embed, 8 layer.fwd, loss, loss.bwd, 8
// layer.bwd, opt). Its first FORWARD op, embed, has no input and one output
// x_0 of A bytes (float32, shape {A / 4}): the input signature is that one
// tensor, A bytes. Unswapped peak 800 + 9·A + 4 + A = 10·A + 804 bytes
// (A = 1000: 10804; 1150: 12304; 1300: 13804), the budget 8000 bytes.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime_test_support.h"
#include "swapplan/varying/policy_set.h"

namespace swapplan::runtime::testing {
namespace {

// What the provider was asked: the request's key and records.
struct Asked {
  uint64_t hash = 0;
  int64_t bytes = 0;
  std::string record_path;
  std::vector<std::string> observed;
};

// ChameleonProvider (plans the latest record) that also notes each request.
PolicyProvider NotingProvider(std::shared_ptr<std::vector<PlannedPolicy>> made,
                              std::shared_ptr<std::vector<Asked>> asked) {
  PolicyProvider plan = ChameleonProvider(std::move(made));
  return [plan, asked](const PolicyRequest& r) -> absl::StatusOr<std::string> {
    asked->push_back(
        {r.input_signature_hash, r.input_signature_bytes, r.record_path, r.observed_record_paths});
    return plan(r);
  };
}

// The signature of a program with A-byte activations (its embed output).
InputSignature SignatureOf(int64_t act_bytes) {
  InputSignature s;
  const int64_t shape[] = {act_bytes / 4};
  s.Add(DType::kFloat32, shape, act_bytes);
  return s;
}

struct Setup {
  Env env;
  std::shared_ptr<std::vector<PlannedPolicy>> made =
      std::make_shared<std::vector<PlannedPolicy>>();
  std::shared_ptr<std::vector<Asked>> asked = std::make_shared<std::vector<Asked>>();
};

// m = 1, n = `genpolicy` (n = 1: W W G G S ...), 8000 bytes, `runtime` as
// given otherwise.
std::unique_ptr<Setup> MakeSetup(const std::string& name, RuntimeOptions runtime,
                                 int32_t genpolicy = 1) {
  auto s = std::make_unique<Setup>();
  EnvOptions o;
  o.capacity_bytes = 8000;
  o.runtime = std::move(runtime);
  o.runtime.tracker.warmup_iterations = 1;
  o.runtime.tracker.genpolicy_iterations = genpolicy;
  o.runtime.work_dir = TempDir(name);
  s->env = MakeEnv(o);
  if (s->env.rt != nullptr) s->env.rt->SetPolicyProvider(NotingProvider(s->made, s->asked));
  return s;
}

TEST_CASE("keys: a policy per input signature; an unseen input runs the nearest, larger first") {
  const Program s = LayeredProgram(8, 1000, 100);
  const Program m = LayeredProgram(8, 1150, 100);
  const Program l = LayeredProgram(8, 1300, 100);
  std::unique_ptr<Setup> set = MakeSetup("keys", RuntimeOptions{});
  REQUIRE(set->env.rt != nullptr);
  Runner run(set->env);
  REQUIRE(run.AllocatePersistent(s).ok());
  // Inputs per iteration: s s l s | l s m m (0-1 WarmUp, 2-3 GenPolicy, 4- Stable).
  const Program* order[] = {&s, &s, &l, &s, &l, &s, &m, &m};
  for (int i = 0; i < 8; ++i) {
    absl::Status st = run.Iteration(*order[i]);
    INFO("iteration " << i << ": " << st.message());
    REQUIRE(st.ok());
  }
  CHECK(run.mismatches().empty());
  const std::vector<IterationStats>& rows = set->env.rt->IterationRows();
  std::string plan_errors;
  for (int i = 0; i < 8; ++i) plan_errors += absl::StrCat("iteration ", i, ": ", rows[i].plan_error, "\n");
  INFO("plan errors:\n" << plan_errors);
  const Stage expect[] = {Stage::kWarmUp, Stage::kWarmUp, Stage::kGenPolicy, Stage::kGenPolicy,
                          Stage::kStable, Stage::kStable, Stage::kStable,    Stage::kStable};
  for (int i = 0; i < 8; ++i) CHECK(rows[i].stage == expect[i]);
  // Each row's signature is its input's (the embed output).
  CHECK(rows[2].input_signature_hash == SignatureOf(1300).hash);
  CHECK(rows[2].input_signature_bytes == 1300);
  CHECK(rows[6].input_signature_bytes == 1150);
  // Plans: end of 1 (key s) -> P0; end of 2 (key l) -> P1; end of 3, which
  // enters Stable (observed planning plans it too; key s) -> P2; end of 6
  // (a Stable iteration that ran another input's policy; key m) -> P3.
  REQUIRE(set->asked->size() == 4);
  const std::vector<Asked>& a = *set->asked;
  CHECK(a[0].bytes == 1000);
  CHECK(a[1].bytes == 1300);
  CHECK(a[1].hash == SignatureOf(1300).hash);
  CHECK(a[2].bytes == 1000);
  CHECK(a[3].bytes == 1150);
  // Iteration 2 (l) has no policy of its own: key s's (1000 bytes, the
  // only one, smaller) runs, counted.
  CHECK(rows[2].policy == 0);
  CHECK(rows[2].policy_of_other_input);
  CHECK(rows[3].policy == 0);
  CHECK_FALSE(rows[3].policy_of_other_input);
  // Stable: each key's latest — l runs P1, s runs P2, both their own.
  CHECK(rows[4].policy == 1);
  CHECK_FALSE(rows[4].policy_of_other_input);
  CHECK(rows[5].policy == 2);
  // m (1150) has none: the nearest with at least its bytes is l (1300), not
  // s (1000, closer but smaller). Its own policy runs from iteration 7.
  CHECK(rows[6].policy == 1);
  CHECK(rows[6].policy_of_other_input);
  CHECK(rows[6].generated_policy == 3);
  CHECK(rows[7].policy == 3);
  CHECK_FALSE(rows[7].policy_of_other_input);
  const RuntimeStats st = set->env.rt->Stats();
  CHECK(st.policy_of_other_input == 2);
  CHECK(st.policy_keys == 3);
  for (int i = 4; i < 8; ++i) {
    CHECK(rows[i].counts.ooms == 0);
    CHECK(rows[i].counts.uses_while_off_device == 0);
  }
}

TEST_CASE("keys: one key for every input without policies_by_input") {
  // The same schedule with one key: iteration 2 (l) runs P0 as its own,
  // Stable runs P2 (planned on s) for every input — the larger ones miss
  // (Algorithm 3 runs) and two misses (iterations 4 and 6) send the
  // tracker back to GenPolicy, which plans again (ends of 6 and 7).
  const Program s = LayeredProgram(8, 1000, 100);
  const Program m = LayeredProgram(8, 1150, 100);
  const Program l = LayeredProgram(8, 1300, 100);
  RuntimeOptions ro;
  ro.policies_by_input = false;
  std::unique_ptr<Setup> set = MakeSetup("onekey", ro);
  REQUIRE(set->env.rt != nullptr);
  Runner run(set->env);
  REQUIRE(run.AllocatePersistent(s).ok());
  const Program* order[] = {&s, &s, &l, &s, &l, &s, &m, &m};
  for (int i = 0; i < 8; ++i) REQUIRE(run.Iteration(*order[i]).ok());
  const std::vector<IterationStats>& rows = set->env.rt->IterationRows();
  REQUIRE(set->asked->size() == 5);  // ends of 1, 2, 3, 6, 7
  for (const Asked& a : *set->asked) {
    CHECK(a.hash == 0);  // the one key
    CHECK(a.bytes == 0);
  }
  // The key's records: r1, r1 r2, r1 r2 r3, ... r6, ... r7.
  CHECK((*set->asked)[2].observed.size() == 3);
  CHECK((*set->asked)[4].observed.size() == 5);
  CHECK(rows[2].policy == 0);
  CHECK_FALSE(rows[2].policy_of_other_input);
  CHECK(rows[4].policy == 2);
  CHECK(rows[5].policy == 2);
  CHECK(rows[6].policy == 2);
  CHECK(rows[4].counts.allocation_failures > 0);
  CHECK(rows[6].stage_change == StageChange::kPolicyMisses);
  CHECK(rows[7].stage == Stage::kGenPolicy);
  CHECK(set->env.rt->Stats().policy_of_other_input == 0);
}

TEST_CASE("observed planning: the provider gets the key's last records, oldest first") {
  // n = 3: W W G G G G S S. Plans at the ends of 1, 2, 3, 4 (GenPolicy) and
  // 5 (entering Stable); observed_records = 2: the requests carry r1; r1
  // r2; r2 r3; r3 r4; r4 r5 — the last one the record just written.
  const Program s = LayeredProgram(8, 1000, 100);
  RuntimeOptions ro;
  ro.observed_records = 2;
  std::unique_ptr<Setup> set = MakeSetup("observed", ro, /*genpolicy=*/3);
  REQUIRE(set->env.rt != nullptr);
  Runner run(set->env);
  REQUIRE(run.AllocatePersistent(s).ok());
  for (int i = 0; i < 8; ++i) REQUIRE(run.Iteration(s).ok());
  const std::vector<IterationStats>& rows = set->env.rt->IterationRows();
  CHECK(rows[5].stage == Stage::kGenPolicy);
  CHECK(rows[6].stage == Stage::kStable);
  const std::vector<Asked>& a = *set->asked;
  REQUIRE(a.size() == 5);
  REQUIRE(a[0].observed.size() == 1);
  CHECK(a[0].observed[0] == a[0].record_path);
  for (size_t k = 1; k < a.size(); ++k) {
    INFO("request " << k);
    REQUIRE(a[k].observed.size() == 2);
    CHECK(a[k].observed[0] == a[k - 1].record_path);
    CHECK(a[k].observed[1] == a[k].record_path);
  }
  // Stable runs the policy planned when it was entered (P4).
  CHECK(rows[5].generated_policy == 4);
  CHECK(rows[6].policy == 4);
  CHECK(rows[7].policy == 4);
}

TEST_CASE("iteration planning: one record per request; Stable runs the best GenPolicy policy") {
  // The papers' mode: plans at the ends of 1..4 only (not when Stable is
  // entered), each request carries its own record, and Stable runs one of
  // the four (none had trouble: the shortest simulated time, then the
  // earliest).
  const Program s = LayeredProgram(8, 1000, 100);
  RuntimeOptions ro;
  ro.planning = PolicyPlanning::kIteration;
  std::unique_ptr<Setup> set = MakeSetup("iteration", ro, /*genpolicy=*/3);
  REQUIRE(set->env.rt != nullptr);
  Runner run(set->env);
  REQUIRE(run.AllocatePersistent(s).ok());
  for (int i = 0; i < 8; ++i) REQUIRE(run.Iteration(s).ok());
  const std::vector<IterationStats>& rows = set->env.rt->IterationRows();
  REQUIRE(set->asked->size() == 4);
  for (const Asked& a : *set->asked) {
    REQUIRE(a.observed.size() == 1);
    CHECK(a.observed[0] == a.record_path);
  }
  CHECK(rows[5].generated_policy == -1);
  CHECK(rows[6].stage == Stage::kStable);
  CHECK(rows[6].policy >= 0);
  CHECK(rows[6].policy <= 3);
  CHECK(rows[7].policy == rows[6].policy);
}

TEST_CASE("remembered sequences: a sequence met again goes straight back to Stable") {
  // p until Stable (W W G G S), then q — p with two more ops, a length
  // change of 10% (> 5%): WarmUp, p's keys remembered. Then p again: not
  // stable against q (WarmUp), but stable against the remembered p — its
  // keys come back, next stage Stable, and p runs its old Stable policy
  // with no new plan.
  const Program p = LayeredProgram(8, 1000, 100);
  Program q = p;
  q.ops.push_back({"eval", Phase::kOther, {0}, {}, {}});
  q.ops.push_back({"eval", Phase::kOther, {1}, {}, {}});
  auto run_schedule = [&](int32_t remembered, std::vector<IterationStats>* rows,
                          int32_t* returns, size_t* plans) {
    RuntimeOptions ro;
    ro.remembered_sequences = remembered;
    std::unique_ptr<Setup> set = MakeSetup("remember", ro);
    REQUIRE(set->env.rt != nullptr);
    Runner run(set->env);
    REQUIRE(run.AllocatePersistent(p).ok());
    const Program* order[] = {&p, &p, &p, &p, &p, &q, &p, &p, &p};
    for (const Program* prog : order) REQUIRE(run.Iteration(*prog).ok());
    CHECK(run.mismatches().empty());
    *rows = set->env.rt->IterationRows();
    *returns = set->env.rt->Stats().known_sequence_returns;
    *plans = set->asked->size();
  };
  std::vector<IterationStats> rows;
  int32_t returns = 0;
  size_t plans = 0;
  run_schedule(4, &rows, &returns, &plans);
  REQUIRE(rows.size() == 9);
  CHECK(rows[4].stage == Stage::kStable);
  const int32_t stable = rows[4].policy;
  CHECK(stable >= 0);
  CHECK(rows[5].next_stage == Stage::kWarmUp);        // q: the sequence changed
  CHECK(rows[6].stage == Stage::kWarmUp);             // p after q
  CHECK(rows[6].stage_change == StageChange::kKnownSequence);
  CHECK(rows[6].next_stage == Stage::kStable);
  CHECK(rows[7].stage == Stage::kStable);
  CHECK(rows[7].policy == stable);
  CHECK(rows[8].policy == stable);
  CHECK(returns == 1);
  CHECK(plans == 3);  // ends of 1, 2, 3 only
  // Forgotten (0): p after q starts over, W W G ...
  run_schedule(0, &rows, &returns, &plans);
  CHECK(rows[6].stage_change != StageChange::kKnownSequence);
  CHECK(rows[7].stage == Stage::kWarmUp);
  CHECK(rows[8].stage == Stage::kWarmUp);
  CHECK(returns == 0);
}

TEST_CASE("runtime options: keyed-policy fields are validated") {
  RuntimeOptions o;
  o.observed_records = 0;
  absl::Status st = o.Validate();
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("observed_records is 0"));
  o = RuntimeOptions{};
  o.remembered_sequences = -1;
  st = o.Validate();
  CHECK(absl::IsInvalidArgument(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("remembered_sequences is -1"));
}

}  // namespace
}  // namespace swapplan::runtime::testing
