// A Llama-2-7B-shaped training iteration for planner benchmarks: one
// device, micro-batch 1, bf16 activations, no recomputation, flash
// attention, persistent bf16 parameters and gradient buffers, Adam states
// sharded ZeRO-1 style over `zero_shards` ranks. Per transformer layer:
//
//   forward  (16 ops)  rmsnorm, q/k/v proj, rope q/k, flash-attn, o proj,
//                      residual add, rmsnorm, gate/up proj, silu, mul, down
//                      proj, residual add
//   backward (25 ops)  the mirror: dgrad and wgrad per projection,
//                      elementwise and norm backward, flash-attn backward
//   optimizer (1 op)   a fused Adam step over the layer's parameters
//
// plus embedding, final norm, LM head and cross-entropy around them. Saved
// activations per layer at seq 4096: nine [s, h] tensors (32 MiB each),
// four [s, ffn] (86 MiB) and the attention log-sum-exp: ~630 MiB, ~20 GiB
// over 32 layers on top of ~35 GiB of persistent state. No per-op
// durations (the Chameleon setting: only the iteration time, Eq. (1)).
//
// This is a benchmark input, not the synthesizer (SPEC §2), which models
// parallelism and durations properly.
#ifndef SWAPPLAN_BENCH_LLAMA_TRACE_H_
#define SWAPPLAN_BENCH_LLAMA_TRACE_H_

#include <cstdint>

#include "swapplan/trace/trace.h"

namespace swapplan::bench {

struct LlamaShape {
  int32_t layers = 32;
  int64_t hidden = 4096;
  int64_t ffn = 11008;
  int64_t heads = 32;
  int64_t vocab = 32000;
  int64_t seq = 4096;
  int64_t zero_shards = 8;
  int64_t iteration_time_ns = 700'000'000;
  int64_t device_memory_bytes = 80LL << 30;
  double link_bytes_per_s = 25e9;
};

// About 1,370 ops for 32 layers. Deterministic.
Trace LlamaTrace(const LlamaShape& shape = {});

}  // namespace swapplan::bench

#endif  // SWAPPLAN_BENCH_LLAMA_TRACE_H_
