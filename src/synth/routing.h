// MoE routing of the synthesizer: how many of a micro-batch's token copies
// (tokens × top-k) each expert of a layer receives.
//
// Per (seed, iteration, pass, layer) a counter-based generator (splitmix64
// over a hash of the four, so no state is carried between calls and any pass
// can be regenerated — recomputation re-routes identically) draws per expert
// a load weight w_e = max(0.05, 1 + σ·z_e), z_e ≈ N(0, 1) as the sum of 12
// uniforms minus 6 (pure integer/IEEE arithmetic: bit-identical on every
// platform). Counts are the largest-remainder apportionment of tokens·k in
// proportion to w_e, capped at `tokens` per expert (a token picks k distinct
// experts) with the excess handed to the others. O(experts²) per call.
#ifndef SWAPPLAN_SRC_SYNTH_ROUTING_H_
#define SWAPPLAN_SRC_SYNTH_ROUTING_H_

#include <cstdint>
#include <vector>

namespace swapplan::synth_internal {

// Per-expert token counts; they sum to tokens × top_k and each is in
// [0, tokens]. Requires experts >= top_k >= 1, tokens >= 1, sigma >= 0.
std::vector<int64_t> ExpertTokenCounts(uint64_t seed, int32_t iteration, int32_t pass,
                                       int32_t layer, int32_t experts, int32_t top_k,
                                       int64_t tokens, double sigma);

}  // namespace swapplan::synth_internal

#endif  // SWAPPLAN_SRC_SYNTH_ROUTING_H_
