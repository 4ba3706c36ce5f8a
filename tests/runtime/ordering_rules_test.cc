// The runtime's hard ordering rules, each seen fail when broken (the bugs
// of torchtune#1867, Megatron-LM#7398, torchrec#4231):
//   rule 1 (transfer_queue_test.cc): a swap-in never starts before that
//          tensor's swap-out finished;
//   rule 2: device memory is released only after the copy out finished, by
//           an event wait in stream order — never a host poll;
//   rule 3: a tensor is used only after its copy in finished.
// The toy program (runtime_test_support.h) swaps A out after op 1,
// releases it after op 2, brings it back at op 4 and uses it at op 5; one
// link is slowed to 2000 bytes/s so that A's 100-byte copy takes 50 ms, and
// the block A leaves is handed out again at op 3 and filled with other
// bytes. An early release or an early use shows as A's bytes being wrong.
#include <catch2/catch.hpp>

#include "absl/strings/str_join.h"
#include "runtime_test_support.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/sim/checker.h"

namespace swapplan::runtime::testing {
namespace {

Env ToyEnv(double d2h, double h2d) {
  Env env = ToyPolicyEnv(d2h, h2d);
  REQUIRE(env.rt != nullptr);
  return env;
}

TEST_CASE("rule 2: a block is released only after its copy out finished, by a compute wait") {
  Env env = ToyEnv(/*d2h=*/2e3, /*h2d=*/1e9);  // copy out: 50 ms
  Runner run(env);
  HostBackendCounters before{};
  int64_t released_at = 0;
  run.during_op = [&](int i) {
    if (i == 2) before = env.device->counters();
  };
  run.after_op = [&](int i) {
    if (i != 2) return;
    released_at = HostBackend::NowNs();
    // The release after op 2 waited on the compute stream for the copy's
    // event: one stream wait, no event query, no host synchronisation.
    const HostBackendCounters after = env.device->counters();
    CHECK(after.stream_waits == before.stream_waits + 1);
    CHECK(after.event_queries == before.event_queries);
    CHECK(after.event_synchronizes == before.event_synchronizes);
    CHECK(after.stream_synchronizes == before.stream_synchronizes);
  };
  REQUIRE(run.Iteration(ToyProgram()).ok());
  // Op 3's output took A's old block and was filled at once; A's bytes came
  // back intact at op 5.
  INFO(absl::StrJoin(run.mismatches(), "\n"));
  CHECK(run.mismatches().empty());
  const RuntimeStats st = env.rt->Stats();
  CHECK(st.counts.policy_swap_outs == 1);
  CHECK(st.counts.policy_swap_ins == 1);
  // The release waited for the 50 ms copy (the prefetch at op 4 may add a
  // short wait at op 5: a thread wake-up).
  CHECK(st.counts.stalls >= 1);
  std::vector<CopyLogEntry> log = env.device->CopyLog();
  REQUIRE(!log.empty());
  CHECK(log[0].direction == Direction::kDeviceToHost);
  CHECK(log[0].end_ns <= released_at);
}

TEST_CASE("rule 3: a tensor is used only after its copy in finished") {
  Env env = ToyEnv(/*d2h=*/1e9, /*h2d=*/2e3);  // copy in: 50 ms
  Runner run(env);
  int64_t used_at = 0;
  run.after_op = [&](int i) {
    if (i == 5) used_at = HostBackend::NowNs();
  };
  REQUIRE(run.Iteration(ToyProgram()).ok());
  // A's new block (B's old one, still holding B's bytes) was read at op 5:
  // only the right bytes pass.
  INFO(absl::StrJoin(run.mismatches(), "\n"));
  CHECK(run.mismatches().empty());
  std::vector<CopyLogEntry> log = env.device->CopyLog();
  REQUIRE(log.size() == 2);
  CHECK(log[1].direction == Direction::kHostToDevice);
  CHECK(log[1].end_ns <= used_at);
  CHECK(env.rt->Stats().counts.uses_while_off_device == 0);
}

TEST_CASE("runtime peak of the toy program equals the checker's peak for the policy") {
  Env env = ToyEnv(1e9, 1e9);
  Runner run(env);
  REQUIRE(run.Iteration(ToyProgram()).ok());
  absl::StatusOr<Trace> trace = BuildTrace(ToyProgram());
  REQUIRE(trace.ok());
  Policy policy = ToyPolicy();
  policy.fingerprint = ComputeFingerprint(*trace, 0);
  absl::StatusOr<CheckReport> report = CheckPolicy(*trace, policy);
  REQUIRE(report.ok());
  // 300 bytes: A, B and C during op 2 (A is released after it); A comes
  // back at op 4 with D and E.
  CHECK(report->peak_bytes == 300);
  CHECK(env.rt->Stats().peak_device_bytes == 300);
  CHECK(env.rt->IterationRows().at(0).fingerprint_matched);
}

}  // namespace
}  // namespace swapplan::runtime::testing
