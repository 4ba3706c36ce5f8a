// A small synthesized model shared by the replay, runtime-execution and
// matcher suites:
//
//   SynthOptions o = testing::SmallGpt2Options();
//   o.iterations = 12;
//   Trace t = *SynthesizeTrace(o);
#ifndef SWAPPLAN_TESTS_SUPPORT_SYNTH_FIXTURES_H_
#define SWAPPLAN_TESTS_SUPPORT_SYNTH_FIXTURES_H_

#include "swapplan/synth/config.h"

namespace swapplan::testing {

// GPT-2 shape with 4 layers, hidden 256, FFN 1024, 4 heads, a 1024-token
// vocabulary and 1024-token sequences (unswapped peak 97.62 MiB) on the
// a100-80g preset slowed to 1 % of its roofline, so op times dominate the
// copies. One iteration; the rest of the
// options default. Fails the current test (REQUIRE) if a preset is missing.
SynthOptions SmallGpt2Options();

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_SUPPORT_SYNTH_FIXTURES_H_
