// Test support for the runtime shim: a small "program" (ops, tensors,
// phases) that both becomes a trace (to plan or prepare a policy from) and
// drives a Runtime over the backend of the run (test_device.h: the host
// backend, or the CUDA / Ascend backend over its fake vendor runtime),
// writing a known byte pattern into every tensor it creates and checking
// the pattern at every use — a tensor whose bytes were lost, or used before
// they came back, fails the check; so does any rule a fake vendor runtime
// saw broken (after every op, and when the Env goes).
//
//   Program p = ToyProgram();                 // 7 ops, A swapped 1 -> 5
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace t, BuildTrace(p));
//   Env env = MakeEnv({.capacity_bytes = 1000});
//   Runner run(env);
//   REQUIRE(run.Iteration(p).ok());
#ifndef SWAPPLAN_TESTS_RUNTIME_RUNTIME_TEST_SUPPORT_H_
#define SWAPPLAN_TESTS_RUNTIME_RUNTIME_TEST_SUPPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "swapplan/policy/policy.h"
#include "swapplan/runtime/host_backend.h"
#include "swapplan/runtime/runtime.h"
#include "swapplan/trace/trace.h"
#include "test_device.h"

namespace swapplan::runtime::testing {

struct ProgOp {
  std::string name;
  Phase phase = Phase::kForward;
  std::vector<int> inputs;     // tensor indices
  std::vector<int> outputs;    // created by the op (or written, if live)
  std::vector<int> free_after; // freed right after the op
};

struct Program {
  // Bytes of each tensor (index = tensor).
  std::vector<int64_t> sizes;
  // Tensors allocated before the first iteration and never freed
  // (parameters).
  std::vector<int> persistent;
  std::vector<ProgOp> ops;
};

// F: A=op0; op1 reads A -> B; op2 B -> C; op3 (B) C -> D; op4 D -> E;
// op5 (B) A, E -> F; op6 (O) F. 100-byte tensors A..F = 0..5.
Program ToyProgram();
// The toy program's policy: A out after op 1, released after op 2, in at
// op 4, first used at op 5.
Policy ToyPolicy();

// A training-like program: L layers of `act_bytes` activations kept from
// forward to backward, `param_bytes` persistent parameters, a loss, a
// backward in reverse order and an optimizer op.
Program LayeredProgram(int layers, int64_t act_bytes, int64_t param_bytes);

// A policy provider that plans the record with the Chameleon planner
// (min_tensor_bytes 1) and writes the policy next to it; it remembers
// every (record, policy) it made.
struct PlannedPolicy {
  std::string record_path;
  std::string policy_path;
};
PolicyProvider ChameleonProvider(std::shared_ptr<std::vector<PlannedPolicy>> made);

// A fresh directory under the system's temp directory.
std::string TempDir(const std::string& name);

// One iteration of `p` as a trace (tensor file ids = index + 1), float32
// tensors of shape {bytes / 4}, ALLOC at the producing op, FREE after the
// op that frees it, persistent tensors resident from the start.
absl::StatusOr<Trace> BuildTrace(const Program& p);

struct EnvOptions {
  int64_t capacity_bytes = 1000;
  // 1 byte/ns = 1e9 bytes/s.
  double h2d_bytes_per_s = 1e9;
  double d2h_bytes_per_s = 1e9;
  int64_t copy_latency_ns = 0;
  ComputeStreamKind compute = ComputeStreamKind::kInline;
  // Fake ACL device's event limit (test_device.h DeviceSpec::max_events).
  int32_t max_events = -1;
  // The backend (default: the run's, $SWAPPLAN_TEST_BACKEND).
  TestBackendKind backend = CurrentTestBackend();
  RuntimeOptions runtime;  // device_budget_bytes 0 = capacity
};

struct Env {
  std::unique_ptr<Runtime> rt;
  // The device under the runtime (counters, copy log, faults, violations).
  std::unique_ptr<TestDevice> device;
  // Why rt is null.
  std::string error;
  TestBackendKind kind = TestBackendKind::kHost;

  Env() = default;
  Env(Env&&) = default;
  Env& operator=(Env&&) = default;
  // Destroys the runtime, then fails the running test if a fake vendor
  // runtime saw a rule broken.
  ~Env();
};
// A runtime on a fresh device of the run's backend (rt null on failure,
// `error` says why).
Env MakeEnv(const EnvOptions& o);
// A 1000-byte environment with the toy policy loaded (d2h / h2d in bytes
// per second); rt is null when setting up failed.
Env ToyPolicyEnv(double d2h, double h2d,
                 MatcherKind matcher = MatcherKind::kFuzzy);

// Byte k of a tensor filled with `seed`.
inline uint8_t PatternByte(uint64_t seed, int64_t k) {
  return static_cast<uint8_t>((seed * 131 + static_cast<uint64_t>(k) * 7 + (seed >> 8)) & 0xff);
}

// Drives `env` through programs, one iteration at a time.
class Runner {
 public:
  explicit Runner(Env& env) : env_(env) {}

  // Hooks around each op (op index), e.g. to inject a fault: before
  // OpBegin, between OpBegin and OpEnd (the op "runs"), after OpEnd.
  std::function<void(int)> before_op;
  std::function<void(int)> during_op;
  std::function<void(int)> after_op;
  // Called when an op fails, before the step's tensors are dropped.
  std::function<void(const absl::Status&)> on_failure;

  // Runs one iteration: IterationBegin, every op (inputs checked after
  // OpBegin, outputs allocated and filled), frees, IterationEnd. Returns the
  // first error (the iteration still ends); a failed op is skipped, as a
  // framework would abort the step — the remaining ops still run so that
  // the runtime keeps its clock.
  absl::Status Iteration(const Program& p);
  // Allocates the program's persistent tensors (before the first
  // iteration).
  absl::Status AllocatePersistent(const Program& p);
  // Checks every live tensor's bytes, bringing off-device ones back through
  // a "touch" op. Returns a description of the first mismatch ("" = none).
  std::string CheckAll(const Program& p);
  // Frees every live tensor.
  absl::Status FreeAll();

  TensorHandle handle(int tensor) const { return handles_.at(tensor); }
  uint64_t seed(int tensor) const { return seeds_.at(tensor); }
  // Mismatches seen at uses so far.
  const std::vector<std::string>& mismatches() const { return mismatches_; }
  // Tensors the runner allocates get framework_id = index + 1.
  // Fills / checks a resident tensor's device bytes.
  void Fill(int tensor);
  bool Check(int tensor, std::string* why);

 private:
  int32_t OpId(const std::string& name);

  Env& env_;
  std::vector<TensorHandle> handles_;
  std::vector<uint64_t> seeds_;
  std::vector<int64_t> sizes_;
  uint64_t next_seed_ = 1;
  std::vector<std::string> mismatches_;
  size_t violations_seen_ = 0;
};

}  // namespace swapplan::runtime::testing

#endif  // SWAPPLAN_TESTS_RUNTIME_RUNTIME_TEST_SUPPORT_H_
