// Closed-form memory estimate of a synthesized training step: persistent
// bytes (parameters, gradients, optimizer states, buffers) plus the
// activations the micro-batches in flight hold, plus the largest short-lived
// excess (logits, S×S scores, gradient temporaries) at the peak.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(MemoryEstimate e, EstimateMemory(options));
//   e.peak_bytes;   // within ~1% of ComputeMemoryCurve(SynthesizeTrace(options)) for
//                   // realistic configurations (tests/synth check 2%)
//
// It is derived from the model of what a Megatron-style step keeps (see
// synth.h), independently of the generator's code, as an analytic cross-check
// and for what-if questions that need no trace. Per layer and micro-batch the
// saved activations are, in Korthikanti et al. ("Reducing Activation
// Recomputation in Large Transformer Models", 2022) style, with T = s·b
// tokens, p bytes per element, t-way tensor parallelism:
//
//   T·h·p·(4 + (a+2k)d/(h t) + (a+k)d/(h t) [rotary] + a d/(h t))   x, n1, qkv, q, k, o, r, n2
//   + 4T·(2 [rms] | 4 [layernorm])                                    norm statistics
//   + 4·T·a/t  (flash: log-sum-exp)  |  p·b·a/t·s²·(1 + δ(1 + 1/p))   (classic: softmax,
//                                                                      dropout output and mask)
//   + T·f/t·p·(4 [gated: fc1 (2f), silu, mul] | 2 [gelu: fc1, gelu])
//   + δ·2·T·h                                                          dropout masks
//
// which for GPT-style models (p = 2, t = 1, k = a, f = 4h, no rotary, gelu,
// classic attention with dropout) is exactly Korthikanti's sbh(34 + 5as/h),
// plus 16 bytes per token of layernorm statistics. Recomputation keeps only
// T·h·p per layer.
// Everything here is O(layers + experts).
#ifndef SWAPPLAN_SYNTH_ESTIMATE_H_
#define SWAPPLAN_SYNTH_ESTIMATE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "swapplan/synth/config.h"

namespace swapplan {

struct MemoryEstimate {
  // Persistent (resident all iteration), by kind.
  int64_t parameter_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t optimizer_state_bytes = 0;
  int64_t other_persistent_bytes = 0;  // rotary table, masks, loss scale
  int64_t persistent_bytes = 0;
  // Parameter elements of this stage per TP rank (unsharded).
  int64_t stage_parameters = 0;
  // Saved activations of one layer / one micro-batch (all stage layers plus
  // embedding inputs) in the configured mode (recompute: layer inputs only).
  int64_t activation_bytes_per_layer = 0;
  int64_t activation_bytes_per_micro_batch = 0;
  int32_t micro_batches_in_flight = 0;
  // Peak = persistent + the worst of the instants below; `peak_where` names it.
  int64_t transient_bytes = 0;  // peak - persistent - in_flight × per-micro-batch
  int64_t peak_bytes = 0;
  std::string peak_where;
};

// Returns the estimate; InvalidArgument when `options` fails Validate().
absl::StatusOr<MemoryEstimate> EstimateMemory(const SynthOptions& options);

}  // namespace swapplan

#endif  // SWAPPLAN_SYNTH_ESTIMATE_H_
