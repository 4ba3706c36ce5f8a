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

// The two-layer models of docs/varying.md's runs (bench/replay_execute.sh):
// `preset` with hidden 1024, 8 heads and 8 KV heads, FFN `ffn_hidden_size`
// (llama2-7b: 2816, mixtral-8x7b: 2048), on the a100-80g preset.
SynthOptions TwoLayerOptions(const char* preset, int64_t ffn_hidden_size);

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_SUPPORT_SYNTH_FIXTURES_H_
