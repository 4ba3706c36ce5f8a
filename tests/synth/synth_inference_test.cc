// Inference traces (SynthOptions::inference, src/synth/inference.cc) of a
// tiny configuration, checked by hand: tensor counts and sizes, the KV
// cache's lifetimes and uses, op counts, hints, decode durations, one
// memory value of the curve, and the validation rules.
#include <string>

#include <catch2/catch.hpp>

#include "swapplan/curve/memory_curve.h"
#include "synth_helpers.h"

namespace swapplan::testing {
namespace {

// TinyOptions() (1 layer, h = 8, a = k = 2 heads of d = 4, f = 16, vocab
// padded to 128, bf16, 1 byte/ns HBM, 1000 FLOP/ns) as an inference request
// of b = 2 sequences, prompt P = 4, G = 3 decode steps.
SynthOptions TinyInference() {
  SynthOptions o = TinyOptions();
  o.inference = true;
  o.micro_batch_sequences = 2;
  o.seq_length_tokens = 4;
  o.generate_tokens = 3;
  return o;
}

TEST_CASE("synth inference: tensors, sizes and persistent bytes", "[synth][inference]") {
  Trace t = Synth(TinyInference());
  // Ops: prefill = tokens copy, embedding, norm, qkv, rope q, rope k,
  // K write, V write, attention, projection, residual, norm, fc1, silu, mul,
  // fc2, residual, final norm, select last, LM head, argmax = 21; a decode
  // step has no tokens copy and no select: 19. 21 + 3 x 19 = 78.
  REQUIRE(t.num_iterations() == 1);
  CHECK(t.num_ops() == 78);
  CHECK(CountPhase(t, 0, Phase::kForward) == 78);
  CHECK(CountOps(t, 0, "aten::index_copy_") == 8);  // K and V, 4 passes
  CHECK(CountOps(t, 0, "aten::_scaled_dot_product_flash_attention") == 4);
  CHECK(CountOps(t, 0, "aten::argmax") == 4);
  // Tensors: 9 parameters (norm, qkv, proj, norm, fc1, fc2, embedding,
  // final norm, head) + the rotary table = 10 persistent; 4 KV cache
  // tensors; 22 per prefill (tokens, embedding, norm out + rstd, qkv, q, k,
  // core, proj, resid1, norm out + rstd, fc1, silu, mul, fc2, out, final
  // norm out + rstd, last position, logits, next tokens), 20 per decode step
  // (no tokens, no last-position select). 10 + 4 + 22 + 3 x 20 = 96.
  CHECK(t.num_tensors() == 96);
  // Weights only (bf16): norms 3 x 16 + qkv 24x8x2 = 384 + proj 128 +
  // fc1 32x8x2 = 512 + fc2 256 + embedding and head 128x8x2 = 2048 each
  // = 5424 B; no gradients, no optimizer states.
  CHECK(PersistentBytes(t, TensorKind::kParameter) == 5424);
  CHECK(PersistentBytes(t, TensorKind::kGradient) == 0);
  CHECK(PersistentBytes(t, TensorKind::kOptimizerState) == 0);
  // Rotary table: P + G = 7 positions x d = 4, fp32 = 112 B.
  CHECK(PersistentBytes(t, TensorKind::kOther) == 112);
  // KV cache: prompt part [b=2, P=4, k=2, d=4] bf16 = 128 B; decode part
  // [2, G=3, 2, 4] = 96 B; K and V each.
  CHECK(SizeOf(t, "kv.layers.0.attn.k_cache.prompt") == 128);
  CHECK(SizeOf(t, "kv.layers.0.attn.v_cache.prompt") == 128);
  CHECK(SizeOf(t, "kv.layers.0.attn.k_cache.decode") == 96);
  CHECK(SizeOf(t, "kv.layers.0.attn.v_cache.decode") == 96);
  // Prefill activations [P=4, b=2, h=8] bf16 = 128 B; a decode step's [1, 2,
  // 8] = 32 B; logits of the last position only: [b=2, 128] bf16 = 512 B.
  CHECK(SizeOf(t, "prefill.layers.0.attn.norm.out") == 128);
  CHECK(SizeOf(t, "decode1.layers.0.attn.norm.out") == 32);
  CHECK(SizeOf(t, "prefill.head.logits") == 512);
  CHECK(SizeOf(t, "decode2.head.next_tokens") == 16);  // [2] int64
  const TensorId k = TensorNamed(t, "kv.layers.0.attn.k_cache.prompt");
  CHECK(t.tensor(k).kind == TensorKind::kActivation);
  CHECK_FALSE(t.tensor(k).persistent);
}

TEST_CASE("synth inference: the KV cache's writes, reads and lifetime", "[synth][inference]") {
  Trace t = Synth(TinyInference());
  const TensorId kp = TensorNamed(t, "kv.layers.0.attn.k_cache.prompt");
  const TensorId kd = TensorNamed(t, "kv.layers.0.attn.k_cache.decode");
  // Prompt K: written by the prefill's K write (op 6: copy, embedding,
  // norm, qkv, rope q, rope k, then the write), read by the prefill
  // attention (op 8) and by each decode step's attention: ops 21 + 7 = 28,
  // 47, 66 (a decode step's attention is its op 7: embedding, norm, qkv,
  // rope q, rope k, K write, V write, attention).
  absl::Span<const OpIndex> uses = t.tensor_uses(kp);
  REQUIRE(uses.size() == 5);
  CHECK(uses[0] == 6);
  CHECK(uses[1] == 8);
  CHECK(uses[2] == 28);
  CHECK(uses[3] == 47);
  CHECK(uses[4] == 66);
  CHECK(t.outputs(6)[0] == kp);
  for (size_t i = 1; i < uses.size(); ++i) {
    absl::Span<const TensorId> outs = t.outputs(uses[i]);
    CHECK(std::find(outs.begin(), outs.end(), kp) == outs.end());  // read-only afterwards
  }
  // Passes: prefill 0, decode step t is micro-batch t + 1.
  CHECK(t.op(8).micro_batch == 0);
  CHECK(t.op(28).micro_batch == 1);
  CHECK(t.op(66).micro_batch == 3);
  // Allocated at its write, freed after the last decode step's attention.
  CHECK(t.lifetime(kp).alloc_op == 6);
  CHECK(t.lifetime(kp).free_op == 66);
  // Decode K: allocated by decode step 0's K write (op 21 + 5 = 26), then
  // written in place by every step (ops 26, 45, 64) and read by their
  // attentions (28, 47, 66).
  CHECK(t.lifetime(kd).alloc_op == 26);
  CHECK(t.lifetime(kd).free_op == 66);
  CHECK(t.tensor_uses(kd).size() == 6);
  CHECK(t.outputs(45)[0] == kd);
}

TEST_CASE("synth inference: decode attention reads the cache (memory-bound roofline)",
          "[synth][inference]") {
  Trace t = Synth(TinyInference());
  // Step t attends over P + t + 1 positions: reads 2 (K, V) x b=2 x ctx x
  // k=2 x d=4 x 2 B = 64 ctx B, plus q and the output (32 B each):
  // step 0 (ctx 5): 320 + 64 = 384 B → 384 ns at 1 byte/ns (its 4·b·a·ctx·d
  // = 320 FLOPs take 0.32 ns); step 1: 448 ns; step 2 (ctx 7): 512 ns.
  CHECK(t.op(28).duration_ns == 384);
  CHECK(t.op(47).duration_ns == 448);
  CHECK(t.op(66).duration_ns == 512);
  // The prefill attention reads q, K, V and writes the output: 4 x 128 B.
  CHECK(t.op(8).duration_ns == 512);
}

TEST_CASE("synth inference: bytes on the device at the prefill attention", "[synth][inference]") {
  Trace t = Synth(TinyInference());
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t);
  REQUIRE(c.ok());
  // At op 8 (prefill attention): persistent 5424 + 112 = 5536; the
  // embedding x (128, until the residual), qkv (4x2x24x2 = 384), q (128;
  // k went after its cache write), K and V prompt (128 + 128) and the
  // attention output (128): 5536 + 1024 = 6560 B.
  CHECK(c->unswapped_bytes()[8] == 6560);
}

TEST_CASE("synth inference: generate 0 is a prefill only", "[synth][inference]") {
  SynthOptions o = TinyInference();
  o.generate_tokens = 0;
  Trace t = Synth(o);
  CHECK(t.num_ops() == 21);
  CHECK(TensorsNamed(t, "kv.layers.0.attn.k_cache.decode").empty());
  const TensorId kp = TensorNamed(t, "kv.layers.0.attn.k_cache.prompt");
  CHECK(t.lifetime(kp).free_op == 8);  // after the prefill attention
}

TEST_CASE("synth inference: training-only settings are refused", "[synth][inference]") {
  auto refused = [](SynthOptions o, const std::string& what) {
    absl::Status s = o.Validate();
    INFO(s.ToString());
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(s.message()).find(what) != std::string::npos);
  };
  SynthOptions o = TinyInference();
  o.num_micro_batches = 2;
  refused(o, "--micro-batches (an inference request is one batch: --batch) is not supported");
  o = TinyInference();
  o.recompute = true;
  refused(o, "--recompute (nothing is saved for a backward pass)");
  o = TinyInference();
  o.attention = AttentionKind::kClassic;
  refused(o, "--no-flash");
  o = TinyInference();
  o.parallel.pipeline_parallel = 2;
  o.model.layers = 2;
  refused(o, "--pp");
  o = TinyInference();
  o.generate_tokens = -1;
  refused(o, "--generate is -1; must be >= 0");
  // Learned positions must cover prompt + generate.
  o = TinyInference();
  o.model.position = PositionKind::kLearned;
  o.model.max_position_embeddings = 6;
  refused(o, "--prompt + --generate 7 exceeds the 6 learned positions");
}

TEST_CASE("synth inference: TP and MoE requests build", "[synth][inference]") {
  SynthOptions o = TinyInference();
  o.parallel.tensor_parallel = 2;
  Trace t = Synth(o);
  // Per pass: 2 all-reduces per layer + the embedding's; the logits are
  // all-gathered before the argmax.
  CHECK(CountOps(t, 0, "c10d::allreduce_") == 4 * 3);
  CHECK(CountOps(t, 0, "c10d::_allgather_base") == 4);
  // One KV head per rank: prompt K [2, 4, 1, 4] bf16 = 64 B.
  CHECK(SizeOf(t, "kv.layers.0.attn.k_cache.prompt") == 64);
  SynthOptions m = TinyInference();
  m.model.num_experts = 4;
  m.model.experts_top_k = 2;
  Trace tm = Synth(m);
  CHECK(CountOps(tm, 0, "aten::topk") == 4);
}

}  // namespace
}  // namespace swapplan::testing
