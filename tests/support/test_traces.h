// Helpers shared by the test suites: building traces from JSON literals,
// random valid traces for property tests, and paths of test data.
#ifndef SWAPPLAN_TESTS_SUPPORT_TEST_TRACES_H_
#define SWAPPLAN_TESTS_SUPPORT_TEST_TRACES_H_

#include <cstdint>
#include <random>
#include <string>

#include "swapplan/trace/trace.h"

namespace swapplan::testing {

// Parses a JSON trace literal; fails the current test (REQUIRE) on error.
Trace TraceFromJson(const std::string& json, const std::string& source = "test.json");

// Reads a trace file under tests/data; fails the current test (REQUIRE) on
// error.
Trace DataTrace(const std::string& relative);
// Path of a file under tests/data.
std::string DataPath(const std::string& relative);
// The directory of the external traces: $SWAPPLAN_EXTERNAL_TRACES_DIR when
// set, else ../shared/external-traces next to the checkout.
std::string ExternalTracesDir();
// Path of a file in that directory.
std::string ExternalTracePath(const std::string& name);
// A fresh temporary directory for the current test process.
std::string TempDir();

struct RandomTraceOptions {
  int32_t iterations = 1;
  int32_t ops_per_iteration = 60;
  int32_t persistent_tensors = 4;
  // Probability that an op emits explicit ALLOC/FREE events for its outputs.
  double explicit_events = 0.5;
  // Probability that an idle activation is swapped out and back in.
  double swap_probability = 0.2;
  int64_t max_tensor_bytes = 1000;
  // Micro-batches per iteration (gradient accumulation: F0 B0 F1 B1 ...),
  // each with its own activations and micro_batch hints; 1 = no hints.
  int32_t micro_batches = 1;
  // With micro_batches > 1: order them as a 1F1B pipeline stage
  // (F0 F1 B0 F2 B1 ... B(M-1)) instead.
  bool one_f_one_b = false;
};

// A random *valid* trace in the JSON form: forward/backward/optimizer phases,
// activations saved for backward, temporaries, explicit and implicit
// lifetimes, recorded active and passive swaps. Same seed, same text.
std::string RandomTraceJson(uint64_t seed, const RandomTraceOptions& options = {});
// The same, parsed.
Trace RandomTrace(uint64_t seed, const RandomTraceOptions& options = {});

// Tiny training traces for exhaustive cross-checks (every policy of a class
// enumerated): a parameter P read by the first forward op and the last
// backward op; 3..4 forward ops, each making a 100..300-byte activation from
// the previous one; backward ops each reading a saved activation and the
// previous gradient and making a gradient; 50..150 ns ops; one iteration.
struct TinyTrainingTraceOptions {
  // One backward op per forward op, reading the activations in reverse
  // order; else 2..3 backward ops, each reading a random activation other
  // than the last.
  bool mirror_backward = true;
  // Half of the traces end with an optimizer op writing P, half have
  // 2 byte/ns links; else no optimizer op and 1 byte/ns links.
  bool vary_optimizer_and_bandwidth = false;
};
// Same seed and options, same trace (source "tiny-SEED.json").
Trace TinyTrainingTrace(uint64_t seed, const TinyTrainingTraceOptions& options = {});

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_SUPPORT_TEST_TRACES_H_
