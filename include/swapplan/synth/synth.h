// Trace synthesizer: the op-by-op trace of decoder-only transformer training
// on one device (one rank), as Megatron-LM / PyTorch eager issues it, from a
// model, device and parallelism configuration (SynthOptions, config.h).
//
//   SynthOptions o;
//   SWAPPLAN_ASSIGN_OR_RETURN(o.model, ModelPreset("llama2-7b"));
//   SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, SynthesizeTrace(o));
//   SWAPPLAN_RETURN_IF_ERROR(WriteTrace(trace, "llama2-7b.trace"));
//
// What an iteration contains, in order:
//   * micro-batches under the 1F1B pipeline schedule of this stage (warm-up
//     forwards = pp - stage - 1, then one forward / one backward, then the
//     cool-down backwards; plain gradient accumulation when pp = 1);
//   * per micro-batch forward: input copy (first stage: tokens; last stage:
//     labels) or recv from the previous stage, embedding, per layer norm →
//     QKV → rotary → attention (flash or classic S×S) → output projection →
//     [TP all-reduce] → [dropout] → residual → norm → MLP (gated SiLU, GeLU or
//     top-k MoE over experts) → [TP all-reduce] → [dropout] → residual; final
//     norm, LM head, fp32 vocab-parallel cross entropy, loss (last stage) or
//     send to the next stage;
//   * backward in reverse with activation gradients (kind GRADIENT),
//     weight-gradient GEMMs accumulating into the gradient buffers (ZeRO 0/1)
//     or into transient full gradients reduce-scattered into the shard
//     (ZeRO 2/3); with recompute each layer's forward is re-run first (phase
//     BACKWARD); ZeRO-3 all-gathers a layer's parameters around each use;
//   * the optimizer: [loss-scale unscale/check, scale update], gradient-norm
//     clipping, per parameter fp32 cast + fused Adam + copy to the 16-bit
//     parameter, [ZeRO 1/2 parameter all-gather], zeroing the gradients — the
//     clipping and the update are absent in loss-scale skip iterations;
//   * [validation: forward under no_grad, phase OTHER, nothing saved].
//
// Memory: every non-persistent tensor has an explicit ALLOC at the op that
// produces it and a FREE after its last use (saved activations: after their
// last backward consumer; temporaries: after their only consumer). Parameters,
// gradient buffers (shards under ZeRO >= 2), fp32 master weights and Adam
// moments (shards under ZeRO >= 1), the loss scale and the rotary/position
// tables are persistent. Hints: every op has its phase, a micro-batch (the
// forward/backward pass it belongs to; optimizer ops carry the last
// micro-batch, at whose gradient-accumulation boundary the step runs;
// validation passes are numbered after the training micro-batches) and a
// layer (stage-local transformer layer; embedding ops count as layer 0, final
// norm / head / loss as the last layer, optimizer ops as their parameter's
// layer, global optimizer ops as layer 0 or the last layer). stack_id
// identifies the emitting call site (+1000 under recomputation, +2000 in
// validation), like a recorder's call-stack hash.
//
// Complexity: O(ops + tensors) time and memory; the op count is about
// iterations × micro-batches × stage layers × 35 (dense, flash) plus the
// optimizer's ~3 ops per parameter tensor.
#ifndef SWAPPLAN_SYNTH_SYNTH_H_
#define SWAPPLAN_SYNTH_SYNTH_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "swapplan/synth/config.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

// Called after each synthesized iteration with (done, options.iterations),
// on the calling thread (for progress reports); may be empty.
using SynthProgress = std::function<void(int32_t done, int32_t iterations)>;

// Returns the validated trace (built with TraceBuilder, dense tensor ids
// 0..N-1). InvalidArgument when `options` fails Validate() or the trace would
// exceed the format's limits (2^31 ops); Internal if the generator produced
// an invalid trace (a bug).
absl::StatusOr<Trace> SynthesizeTrace(const SynthOptions& options,
                                      const std::string& source = "synth",
                                      const SynthProgress& progress = {});

}  // namespace swapplan

#endif  // SWAPPLAN_SYNTH_SYNTH_H_
