// Issue 19, round 3, through the binary: the simulated clock, schedules,
// policy header values and flag values that used to overflow, run, or pass
// silently are refused with exit 2 and one line naming the input and the
// rule; CLI11's own parse errors come out as one line in swapplan's words.
//
// Inputs (tests/data/robustness/): clock_overflow.json is
// traces/chameleon_toy.json (13 ops, no op durations) with wall_time_ns
// 2^63 - 1; the *_policy.json files are format-1 policies for that toy
// (fingerprint 0x96504f34b6887a4f, 13 ops, budget 1000 B, 1 / 2 GB/s, no
// items) with one field changed, named by the file.
#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "support/cli_runner.h"

namespace {

using swapplan::testing::CliRun;
using swapplan::testing::Swapplan;

constexpr char kToy[] = "traces/chameleon_toy.json";

// Exit 2, nothing on stdout, one line on stderr: "swapplan: " + `message`.
void CheckOneLine(const CliRun& r, const std::string& message) {
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "swapplan: " + message + "\n");
}

TEST_CASE("simulate: a clock past 2^63 - 1 ns is an input error naming the op",
          "[cli][robustness]") {
  // Eq. (1) splits the wall time 2^63 - 1 over the 13 ops, so the durations
  // sum to exactly 2^63 - 1: without dispatch time the run fits (and is
  // refused only for its budget-free reasons, not checked here); with 1 ns
  // per dispatch the bound after op 11 is 12 + (2^63 - 1 - d12) and op 12
  // (sgd) adds 1 + d12: 2^63 + 12, past int64.
  const std::string args =
      "simulate robustness/clock_overflow.json robustness/empty_toy_policy.json ";
  const CliRun r = Swapplan(args + "--host-dispatch 1ns");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("swapplan: robustness/clock_overflow.json: iteration 0, "
                                      "op 12 (sgd): the simulated clock passes 2^63 - 1 ns") &&
                        Catch::EndsWith(" ns per op [overflow]\n"));
  // A recorded time scaled past int64 is the same class: the scale used to
  // come back from llround as a negative "no duration".
  const CliRun scaled = Swapplan(args + "--compute-scale 2x");
  CHECK(scaled.exit_code == 2);
  CHECK_THAT(scaled.err,
             Catch::StartsWith("swapplan: robustness/clock_overflow.json: iteration 0 "
                               "(wall_time_ns): 9223372036854775807 ns x compute time scale 2 "
                               "overflows 64-bit nanoseconds [overflow]\n"));
}

TEST_CASE("simulate refuses a policy schedule that breaks a dependency", "[cli][robustness]") {
  // Schedule [1, 0, 2, ...]: linear1 (op 1) reads A, which embed (op 0)
  // writes, and runs first.
  const CliRun r =
      Swapplan(std::string("simulate ") + kToy + " robustness/schedule_breaks_dependency_policy.json");
  CheckOneLine(r, "robustness/schedule_breaks_dependency_policy.json: schedule is not a "
                  "topological order of the dataflow graph: op 1 runs at position 0, before its "
                  "predecessor op 0 at position 1 [schedule-breaks-dependency]");
  // The checker lists it as a violation too (exit 2).
  const CliRun c =
      Swapplan(std::string("check ") + kToy + " robustness/schedule_breaks_dependency_policy.json");
  CHECK(c.exit_code == 2);
  CHECK_THAT(c.out, Catch::Contains("[schedule-breaks-dependency]"));
}

TEST_CASE("check and simulate refuse the same policy header values", "[cli][robustness]") {
  // One validation path (Policy::ValidateHeader): a negative bandwidth and
  // a budget of INT64_MIN used to be "clean" for check while simulate
  // refused them (and check computed 1200 - INT64_MIN).
  for (const char* verb : {"check", "simulate"}) {
    INFO(verb);
    CheckOneLine(Swapplan(std::string(verb) + " " + kToy +
                          " robustness/negative_bandwidth_policy.json"),
                 "robustness/negative_bandwidth_policy.json: policy: device model \"custom\": "
                 "h2d_bandwidth_bytes_per_s must be positive and finite [bad-device]");
    CheckOneLine(Swapplan(std::string(verb) + " " + kToy + " robustness/min_budget_policy.json"),
                 "robustness/min_budget_policy.json: policy: device model \"custom\": capacity_bytes "
                 "must be positive [bad-device]");
  }
}

// Issue 19 (silent acceptance), round 4: a planner estimate no planner
// writes (an overhead of 2^63 - 1 ns, a negative simulated time) was read
// and carried into reports; an iteration past the trace named only the
// trace in simulate's message.
TEST_CASE("check and simulate refuse estimates out of range, and name the policy",
          "[cli][robustness]") {
  for (const char* verb : {"check", "simulate"}) {
    INFO(verb);
    CheckOneLine(Swapplan(std::string(verb) + " " + kToy + " robustness/huge_overhead_policy.json"),
                 "robustness/huge_overhead_policy.json: policy: expected_overhead_ns is "
                 "9223372036854775807; must be in [0, 1e17] [bad-estimate]");
    CheckOneLine(Swapplan(std::string(verb) + " " + kToy +
                          " robustness/negative_simulated_time_policy.json"),
                 "robustness/negative_simulated_time_policy.json: policy: "
                 "simulated_iteration_time_ns is -1; must be in [0, 1e17] [bad-estimate]");
  }
  const CliRun r =
      Swapplan(std::string("simulate ") + kToy + " robustness/iteration_past_trace_policy.json");
  CheckOneLine(r, std::string("robustness/iteration_past_trace_policy.json: policy was made for "
                              "iteration 2147483647 but ") +
                      kToy + " has 1 iterations [fingerprint-mismatch]");
}

// long_op.json: traces/two_layers.json with op 0 taking 2^62 ns: the plan's
// simulated iteration (2^62 ns + the other ops' 1100 ns) is past what a
// policy may state, refused naming the trace (not "policy: ..." alone).
TEST_CASE("plan: an iteration longer than a policy may state names the trace",
          "[cli][robustness]") {
  CheckOneLine(Swapplan("plan robustness/long_op.json --device-memory 1GiB --h2d-bandwidth 1GB/s "
                        "--d2h-bandwidth 1GB/s"),
               "robustness/long_op.json: policy: simulated_iteration_time_ns is "
               "4611686018427389004; must be in [0, 1e17] [bad-estimate]");
}

// Same trace, found while checking the one above: Chameleon's times are
// doubles, and after an op of 2^62 ns (double spacing 1024 ns) the copy of
// a tensor out "ended" at or before op 0, so its release came before its
// swap-out op and the planner's own policy failed the checker (compare:
// "invalid policy ... [bad-op-order]"). The release is never before the
// swap-out op now; the budget of 400 B (r = 2) is reached.
TEST_CASE("chameleon: an op of 2^62 ns does not put a release before its swap-out",
          "[cli][robustness]") {
  const CliRun r = Swapplan(
      "compare robustness/long_op.json --oversubscription 2x --h2d-bandwidth 1GB/s "
      "--d2h-bandwidth 1GB/s --planners chameleon --planner-option chameleon.min-tensor-bytes=0");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("chameleon  yes"));
  CHECK_THAT(r.out + r.err, !Catch::Contains("invalid policy"));
}

TEST_CASE("a policy claiming 2^31 - 1 ops fails fast on the fingerprint", "[cli][robustness]") {
  // Before: simulate filled an 8 GiB vector (49 s) before comparing.
  for (const char* verb : {"check", "simulate"}) {
    INFO(verb);
    const auto t0 = std::chrono::steady_clock::now();
    const CliRun r = Swapplan(std::string(verb) + " " + kToy +
                              " robustness/huge_iteration_ops_policy.json");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err + r.out, Catch::Contains("2147483647 ops") &&
                                  Catch::Contains("[fingerprint-mismatch]"));
    CHECK(seconds < 30);  // well under a second unloaded; sanitizer builds, loaded machines
  }
}

TEST_CASE("size flags: 2^63 - 1 and an exhausted reserve are errors, one line",
          "[cli][robustness]") {
  const std::string plan = std::string("plan ") + kToy +
                           " --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s -o /dev/null ";
  CheckOneLine(Swapplan(plan + "--device-memory 1GiB --reserve 9223372036854775807"),
               "--reserve: '9223372036854775807' needs a unit, e.g. 9223372036854775807B or "
               "9223372036854775807GiB");
  // A double rounds 2^63 - 1 up to 2^63: too large, never cast (UB before).
  CheckOneLine(Swapplan(plan + "--device-memory 1GiB --reserve 9223372036854775807B"),
               "--reserve: size '9223372036854775807B' is too large");
  CheckOneLine(Swapplan(plan + "--device-memory 8388607TiB --reserve 8388607TiB"),
               "--reserve 8388607.00 TiB leaves no budget out of 8388607.00 TiB of device memory");
}

TEST_CASE("empty flag values and --oversubscription 0 are errors, not 'not given'",
          "[cli][robustness]") {
  const std::string compare = std::string("compare ") + kToy +
                              " --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s --planners noswap,lru ";
  CheckOneLine(Swapplan(compare + "--oversubscription ''"),
               "--oversubscription: empty value (leave the flag out instead)");
  CheckOneLine(Swapplan(compare + "--oversubscription 0"),
               "--oversubscription: ratio '0' must be > 0");
  CheckOneLine(Swapplan(compare + "--device-memory ''"),
               "--device-memory: empty value (leave the flag out instead)");
  CheckOneLine(Swapplan(std::string("plan ") + kToy +
                        " --device-memory '' --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s "
                        "-o /dev/null"),
               "--device-memory: empty value (leave the flag out instead)");
  // Flags parsed by CLI11 alone (synth's) used to take '' as 0 — the preset's
  // layer count — and write a trace with exit 0; "--flag=" likewise. The
  // command line is checked before CLI11 sees it.
  CheckOneLine(Swapplan("synth --model gpt2 --layers '' -q -o /dev/null"),
               "--layers: empty value (leave the flag out instead)");
  CheckOneLine(Swapplan("synth --model gpt2 --hidden= -q -o /dev/null"),
               "--hidden: empty value (leave the flag out instead)");
  // A size where a rate is due was read as 25 GB/s.
  CheckOneLine(Swapplan(std::string("compare ") + kToy +
                        " --h2d-bandwidth 25GB --d2h-bandwidth 1GB/s --planners noswap"),
               "--h2d-bandwidth: bandwidth '25GB' is a size: a rate needs /s, e.g. 25GB/s");
  // A flag at the end of the line without its value: CLI11's ArgumentMismatch.
  CheckOneLine(Swapplan(compare + "--oversubscription"),
               "compare: --oversubscription: needs a value (give it as FLAG VALUE or "
               "FLAG=VALUE)");
}

// Found by the round-3 mutation campaign's flag cases: values each flag
// accepts but the device model or the clock cannot take were refused by a
// field name the user never typed, or by a misleading reason.
TEST_CASE("device and host times past their bounds name the flag", "[cli][robustness]") {
  const std::string plan = std::string("plan ") + kToy +
                           " --device-memory 1GiB --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s "
                           "-o /dev/null ";
  // 1000000 h = 3.6e18 ns, past the 1e17 ns a copy may take (before:
  // 'device model "custom": copy_latency_ns must be in [0, 1e17]').
  CheckOneLine(Swapplan(plan + "--copy-latency 1000000h"),
               "--copy-latency: 3600000000.000 s is more than a copy may take (1e17 ns, about "
               "3 years)");
  const std::string simulate =
      std::string("simulate ") + kToy + " robustness/empty_toy_policy.json ";
  // Before: the clock overflow error, naming op 2 of the trace.
  CheckOneLine(Swapplan(simulate + "--host-dispatch 1000000h"),
               "--host-dispatch: 3600000000.000 s is more than a host step may take (1e17 ns, "
               "about 3 years)");
  CheckOneLine(Swapplan(simulate + "--event-query 1000000h"),
               "--event-query: 3600000000.000 s is more than a host step may take (1e17 ns, "
               "about 3 years)");
  // 1300 ns x 1e-9 rounds to 0 ns (before: "the iteration's wall time ...
  // was not recorded", which it was).
  CheckOneLine(Swapplan(plan + "--compute-scale 1e-9"),
               "traces/chameleon_toy.json: iteration 0: its wall time 1300 ns x compute time "
               "scale 1e-09 rounds to 0 ns, and Eq. (1) needs a positive time for the 13 of 13 "
               "ops without a duration (use a larger compute time scale)");
  // A flag given twice (before: CLI11's "At Most 1 required but received 2").
  CheckOneLine(Swapplan(plan + "--h2d-bandwidth 2GB/s"),
               "plan: --h2d-bandwidth: given more than once (give it once) (swapplan plan --help "
               "lists its flags)");
}

TEST_CASE("CLI11 parse errors are one line in swapplan's words", "[cli][robustness]") {
  // Before: "The following argument was not expected: --bogus" and a second
  // line "Run with --help for more information.".
  CheckOneLine(Swapplan(std::string("inspect ") + kToy + " --bogus"),
               "inspect: unexpected argument '--bogus' (swapplan inspect --help lists its "
               "flags)");
  // Several, in command-line order (CLI11 listed them reversed).
  CheckOneLine(Swapplan(std::string("compare ") + kToy + " --bandwidth 1GB/s"),
               "compare: unexpected arguments '--bandwidth' '1GB/s' (swapplan compare --help "
               "lists its flags)");
  // CLI11's own conversion of a typed option (synth's model sizes).
  CheckOneLine(Swapplan("synth --hidden 1e400 -q -o /dev/null"),
               "synth: --hidden: '1e400' is not a valid INT (swapplan synth --help lists its "
               "flags)");
  CheckOneLine(Swapplan(""), "no command given (swapplan --help lists the commands)");
  CheckOneLine(Swapplan("frobnicate"),
               "unknown command 'frobnicate' (swapplan --help lists the commands)");
  // --help is not an error.
  const CliRun help = Swapplan("inspect --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("--top-ops"));
}

TEST_CASE("range errors print their limits readably", "[cli][robustness]") {
  // Limits are printed with 6 significant digits: a limit of DBL_MAX would
  // read 1.79769e+308, never its 17-digit form.
  CheckOneLine(Swapplan("synth --peak-flops 1e21 -q -o /dev/null"),
               "--peak-flops: 1e21 is out of range [1, 1e+20]");
  CheckOneLine(Swapplan(std::string("replay ") + kToy +
                        " --h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s --spread-margin 1e300"),
               "--spread-margin: 1e300 is out of range [0, 100]");
}

}  // namespace
