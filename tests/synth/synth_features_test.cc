// Features of the synthesizer, one by one: ZeRO sharding, tensor
// parallelism, the 1F1B pipeline schedule, recomputation, loss-scale skips,
// validation passes, MoE routing, classic attention and dropout.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/trace/io.h"
#include "synth_helpers.h"

namespace swapplan::testing {
namespace {

TEST_CASE("synth: ZeRO stages shard persistent bytes", "[synth][zero]") {
  // Tiny model, Φ = 2712 elements, every tensor divisible by dp = 4, so each
  // rank owns Φ/4 = 678 elements of whatever is sharded.
  SynthOptions o = TinyOptions();
  o.parallel.data_parallel = 4;
  struct Expect {
    int zero;
    int64_t params, grads, optim;
  };
  const Expect cases[] = {
      {0, 2 * 2712, 2 * 2712, 12 * 2712},  // nothing sharded (DDP)
      {1, 2 * 2712, 2 * 2712, 12 * 678},   // master + moments sharded
      {2, 2 * 2712, 2 * 678, 12 * 678},    // + gradients
      {3, 2 * 678, 2 * 678, 12 * 678},     // + parameters
  };
  for (const Expect& e : cases) {
    INFO("zero " << e.zero);
    o.parallel.zero_stage = e.zero;
    Trace t = Synth(o);
    CHECK(PersistentBytes(t, TensorKind::kParameter) == e.params);
    CHECK(PersistentBytes(t, TensorKind::kGradient) == e.grads);
    CHECK(PersistentBytes(t, TensorKind::kOptimizerState) == e.optim);
  }
}

TEST_CASE("synth: ZeRO collectives", "[synth][zero]") {
  SynthOptions o = TinyOptions();
  o.model.layers = 2;
  o.parallel.data_parallel = 4;
  o.num_micro_batches = 3;
  // ZeRO-0: one DDP all-reduce per layer (+ embedding, head) on the last
  // micro-batch only: 2 + 1 + 1 = 4.
  o.parallel.zero_stage = 0;
  CHECK(CountOps(Synth(o), 0, "c10d::allreduce_") == 4);
  // ZeRO-1: reduce-scatter instead, and all-gathers of the updated params
  // after the step (per layer, embedding, head).
  o.parallel.zero_stage = 1;
  Trace z1 = Synth(o);
  CHECK(CountOps(z1, 0, "c10d::reduce_scatter_") == 4);
  CHECK(CountOps(z1, 0, "c10d::_allgather_base") == 4);
  // ZeRO-2: every weight gradient is reduce-scattered at once, every
  // micro-batch: 9 params (6 per layer... see below) × 3 micro-batches.
  // Parameters: embedding, 2 × (2 norms, qkv, proj, fc1, fc2), final norm,
  // head = 15.
  o.parallel.zero_stage = 2;
  Trace z2 = Synth(o);
  CHECK(CountOps(z2, 0, "c10d::reduce_scatter_") == 15 * 3);
  // ZeRO-3: parameters gathered around every layer's forward and backward,
  // the embedding's forward, the head's forward and backward.
  o.parallel.zero_stage = 3;
  Trace z3 = Synth(o);
  // Per micro-batch: 2 layers × 2 + embedding 1 + head 2 = 7.
  CHECK(CountOps(z3, 0, "c10d::_allgather_base") == 7 * 3);
  // Gathered copies are transient PARAMETER tensors, released after use.
  const TensorId full = TensorsNamed(z3, "mb0.layers.0.attn.qkv.weight.full").front();
  CHECK(z3.tensor(full).kind == TensorKind::kParameter);
  CHECK_FALSE(z3.tensor(full).persistent);
  CHECK(z3.tensor(full).size_bytes == 384);
}

TEST_CASE("synth: tensor parallelism shards heads, FFN and vocabulary", "[synth][tp]") {
  SynthOptions o = TinyOptions();
  o.parallel.tensor_parallel = 2;
  Trace t = Synth(o);
  // Per rank: 1 head + 2·1 KV heads of d = 4 → 12 per token, 4·12·2 = 96 B.
  CHECK(SizeOf(t, "mb0.layers.0.attn.qkv") == 96);
  CHECK(SizeOf(t, "mb0.layers.0.mlp.fc1") == 128);      // 2f/t = 16 → 4·16·2
  // Vocabulary padded to a multiple of 128·2 = 256, 128 per rank.
  CHECK(SizeOf(t, "mb0.head.logits") == 4 * 128 * 2);
  // Norm inputs and residuals are replicated.
  CHECK(SizeOf(t, "mb0.layers.0.resid1") == 64);
  // Forward: embedding, attention, MLP all-reduces; loss: max, target logit,
  // sum of exps; backward: MLP and attention input grads and the head's
  // input grad; optimizer: the gradient norm across TP ranks.
  CHECK(CountOps(t, 0, "c10d::allreduce_") == 3 + 3 + 3 + 1);
}

// The (phase, micro-batch) segments of FORWARD/BACKWARD ops, in order.
std::vector<std::pair<char, int>> Segments(const Trace& t) {
  std::vector<std::pair<char, int>> seg;
  for (OpIndex i = 0; i < t.iteration(0).op_end; ++i) {
    const OpInfo& op = t.op(i);
    if (op.phase != Phase::kForward && op.phase != Phase::kBackward) continue;
    std::pair<char, int> s{op.phase == Phase::kForward ? 'F' : 'B', op.micro_batch};
    if (seg.empty() || seg.back() != s) seg.push_back(s);
  }
  return seg;
}

// Naive reference of Megatron's 1F1B schedule for stage r of pp, m micro-batches.
std::vector<std::pair<char, int>> OneFOneB(int pp, int r, int m) {
  std::vector<std::pair<char, int>> seg;
  const int warmup = std::min(pp - r - 1, m);
  int next_f = 0, next_b = 0;
  for (int i = 0; i < warmup; ++i) seg.push_back({'F', next_f++});
  while (next_f < m) {
    seg.push_back({'F', next_f++});
    seg.push_back({'B', next_b++});
  }
  while (next_b < m) seg.push_back({'B', next_b++});
  return seg;
}

// Most micro-batches whose ACTIVATION tensors are live at one op.
int MaxMicroBatchesInFlight(const Trace& t) {
  int best = 0;
  for (OpIndex i = 0; i < t.num_ops(); ++i) {
    std::set<int32_t> live;
    for (TensorId x = 0; x < t.num_tensors(); ++x) {
      const TensorInfo& ti = t.tensor(x);
      if (ti.kind != TensorKind::kActivation || ti.persistent) continue;
      if (t.lifetime(x).LiveAt(i)) live.insert(t.op(t.lifetime(x).alloc_op).micro_batch);
    }
    best = std::max(best, static_cast<int>(live.size()));
  }
  return best;
}

TEST_CASE("synth: pipeline stage under 1F1B", "[synth][pp]") {
  SynthOptions o = TinyOptions();
  o.model.layers = 4;
  o.parallel.pipeline_parallel = 4;
  o.num_micro_batches = 6;
  for (int stage = 0; stage < 4; ++stage) {
    INFO("stage " << stage);
    o.parallel.pipeline_stage = stage;
    Trace t = Synth(o);
    CHECK(Segments(t) == OneFOneB(4, stage, 6));
    // Stage r holds min(pp - r, m) micro-batches: 4, 3, 2, 1.
    CHECK(MaxMicroBatchesInFlight(t) == 4 - stage);
    CHECK(o.micro_batches_in_flight() == 4 - stage);
    // Only the first stage embeds, only the last computes the loss.
    CHECK((CountOps(t, 0, "aten::embedding") > 0) == (stage == 0));
    CHECK((CountOps(t, 0, "aten::_to_copy") > 0));
    CHECK((CountOps(t, 0, "c10d::recv") == (stage > 0 ? 6 : 0) + (stage < 3 ? 6 : 0)));
    CHECK((CountOps(t, 0, "c10d::send") == (stage < 3 ? 6 : 0) + (stage > 0 ? 6 : 0)));
  }
  // Fewer micro-batches than stages: warm-up is capped.
  o.num_micro_batches = 2;
  o.parallel.pipeline_stage = 0;
  Trace t = Synth(o);
  CHECK(Segments(t) == OneFOneB(4, 0, 2));
  CHECK(MaxMicroBatchesInFlight(t) == 2);
}

TEST_CASE("synth: gradient accumulation without pipelining", "[synth][pp]") {
  SynthOptions o = TinyOptions();
  o.num_micro_batches = 3;
  Trace t = Synth(o);
  const std::vector<std::pair<char, int>> expect = {{'F', 0}, {'B', 0}, {'F', 1},
                                                    {'B', 1}, {'F', 2}, {'B', 2}};
  CHECK(Segments(t) == expect);
  CHECK(MaxMicroBatchesInFlight(t) == 1);
  // One optimizer step per iteration.
  CHECK(CountOps(t, 0, "aten::_fused_adam_") == 9);
}

TEST_CASE("synth: full recomputation", "[synth][recompute]") {
  SynthOptions o = TinyOptions();
  o.model.layers = 3;
  o.seq_length_tokens = 64;
  Trace plain = Synth(o);
  o.recompute = true;
  Trace rc = Synth(o);
  absl::StatusOr<MemoryCurve> cp = ComputeMemoryCurve(plain);
  absl::StatusOr<MemoryCurve> cr = ComputeMemoryCurve(rc);
  REQUIRE(cp.ok());
  REQUIRE(cr.ok());
  CHECK(cr->peak_unswapped().bytes < cp->peak_unswapped().bytes);
  // Forward keeps only layer inputs (and the embedding/loss tensors): every
  // tensor allocated in FORWARD and freed in BACKWARD is one of these.
  std::set<std::string> kept;
  for (TensorId x = 0; x < rc.num_tensors(); ++x) {
    const TensorLifetime& l = rc.lifetime(x);
    if (rc.tensor(x).persistent) continue;
    if (rc.op(l.alloc_op).phase == Phase::kForward && rc.op(l.free_op).phase == Phase::kBackward) {
      kept.insert(std::string(rc.tensor_name(x)));
    }
  }
  const std::set<std::string> expect = {
      "mb0.input.labels", "mb0.input.tokens", "mb0.embed.word_embeddings.out", "mb0.layers.0.out",
      "mb0.layers.1.out",       "mb0.layers.2.out",       "mb0.head.norm.out",             "mb0.head.norm.rstd",
      "mb0.head.loss.softmax", "mb0.head.loss"};
  CHECK(kept == expect);
  // The recomputed forward is phase BACKWARD, same micro-batch, stack ids
  // offset by 1000; a layer's recomputation runs after the backward of the
  // layer above and before its own gradients.
  int64_t recomputed = 0;
  std::vector<OpIndex> first_rc(3, rc.num_ops()), last_rc(3, -1);
  std::vector<OpIndex> first_grad(3, rc.num_ops()), last_grad(3, -1);
  for (OpIndex i = 0; i < rc.num_ops(); ++i) {
    const OpInfo& op = rc.op(i);
    if (op.stack_id < 1000 || op.stack_id >= 2000) continue;
    ++recomputed;
    CHECK(op.phase == Phase::kBackward);
    CHECK(op.micro_batch == 0);
    first_rc[op.layer] = std::min(first_rc[op.layer], i);
    last_rc[op.layer] = std::max(last_rc[op.layer], i);
  }
  for (TensorId x = 0; x < rc.num_tensors(); ++x) {
    if (rc.tensor(x).kind != TensorKind::kGradient || rc.tensor(x).persistent) continue;
    const std::string name(rc.tensor_name(x));
    for (int l = 0; l < 3; ++l) {
      if (name.rfind("mb0.layers." + std::to_string(l) + ".", 0) == 0) {
        first_grad[l] = std::min(first_grad[l], rc.lifetime(x).alloc_op);
        last_grad[l] = std::max(last_grad[l], rc.lifetime(x).alloc_op);
      }
    }
  }
  for (int l = 0; l < 3; ++l) {
    INFO("layer " << l);
    CHECK(last_rc[l] < first_grad[l]);
    if (l + 1 < 3) CHECK(first_rc[l] > last_grad[l + 1]);
  }
  // 13 forward ops per layer (norm, qkv, 2 rope, flash, proj, add, norm, fc1,
  // silu, mul, fc2, add) × 3 layers.
  CHECK(recomputed == 13 * 3);
  CHECK(CountPhase(rc, 0, Phase::kForward) == CountPhase(plain, 0, Phase::kForward));
  CHECK(CountPhase(rc, 0, Phase::kBackward) == CountPhase(plain, 0, Phase::kBackward) + 39);
}

TEST_CASE("synth: loss-scale overflow skips the optimizer step", "[synth][sequence]") {
  SynthOptions o = TinyOptions();
  o.iterations = 4;
  o.loss_scale_skip_every = 2;  // iterations 1 and 3 overflow
  Trace t = Synth(o);
  // 9 parameter tensors; a step has per parameter fp32 cast, fused Adam and
  // the copy back (27 ops) plus norm, total norm and clip (3).
  for (int it = 0; it < 4; ++it) {
    INFO("iteration " << it);
    const bool skip = it % 2 == 1;
    CHECK(CountOps(t, it, "aten::_fused_adam_") == (skip ? 0 : 9));
    CHECK(CountOps(t, it, "aten::_foreach_norm") == (skip ? 0 : 1));
    // The scaler's check and update, and zero_grad, run every iteration.
    CHECK(CountOps(t, it, "aten::_amp_foreach_non_finite_check_and_unscale_") == 1);
    CHECK(CountOps(t, it, "aten::_amp_update_scale_") == 1);
    CHECK(CountOps(t, it, "aten::_foreach_zero_") == 1);
  }
  CHECK(CountPhase(t, 0, Phase::kOptimizer) - CountPhase(t, 1, Phase::kOptimizer) == 30);
  CHECK(t.iteration(0).num_ops() - t.iteration(1).num_ops() == 30);
  CHECK(t.iteration(0).wall_time_ns > t.iteration(1).wall_time_ns);
  // No skip: no loss scaling in bf16.
  o.loss_scale_skip_every = 0;
  CHECK(CountOps(Synth(o), 0, "aten::_amp_update_scale_") == 0);
  // fp16 always scales the loss.
  o.dtype = DType::kFloat16;
  CHECK(CountOps(Synth(o), 0, "aten::_amp_update_scale_") == 1);
}

TEST_CASE("synth: validation passes run under no_grad after the step", "[synth][sequence]") {
  SynthOptions o = TinyOptions();
  o.model.layers = 2;
  o.iterations = 3;
  o.validation_every = 2;  // iteration 1
  o.validation_micro_batches = 2;
  Trace t = Synth(o);
  CHECK(CountPhase(t, 0, Phase::kOther) == 0);
  CHECK(CountPhase(t, 2, Phase::kOther) == 0);
  // A validation pass is the training forward minus the in-place softmax
  // kept for backward (aten::div_): two passes.
  CHECK(CountPhase(t, 1, Phase::kOther) == 2 * (CountPhase(t, 0, Phase::kForward) - 1));
  const IterationInfo& it = t.iteration(1);
  OpIndex last_optimizer = -1, first_other = -1;
  for (OpIndex i = it.op_begin; i < it.op_end; ++i) {
    if (t.op(i).phase == Phase::kOptimizer) last_optimizer = i;
    if (t.op(i).phase == Phase::kOther && first_other < 0) first_other = i;
  }
  CHECK(first_other > last_optimizer);
  // Nothing is saved: every tensor made in a validation pass is a temporary
  // or input that dies inside it.
  for (TensorId x = 0; x < t.num_tensors(); ++x) {
    const TensorLifetime& l = t.lifetime(x);
    if (t.tensor(x).persistent || t.op(l.alloc_op).phase != Phase::kOther) continue;
    INFO(t.tensor_name(x));
    CHECK(t.tensor(x).kind != TensorKind::kActivation);
    CHECK(t.op(l.free_op).phase == Phase::kOther);
    CHECK(t.op(l.free_op).micro_batch == t.op(l.alloc_op).micro_batch);
  }
  CHECK(TensorsNamed(t, "val1.layers.1.attn.qkv").size() == 1);
}

std::vector<int64_t> ExpertSizes(const Trace& t, int32_t it, const std::string& prefix) {
  std::vector<int64_t> sizes;
  for (int e = 0; e < 8; ++e) {
    int64_t s = 0;
    for (TensorId x : TensorsNamed(t, prefix + std::to_string(e) + ".fc1")) {
      if (t.IterationOf(t.lifetime(x).alloc_op) == it) s = t.tensor(x).size_bytes;
    }
    sizes.push_back(s);
  }
  return sizes;
}

TEST_CASE("synth: MoE expert sizes follow a seeded routing", "[synth][moe]") {
  SynthOptions o = TinyOptions();
  o.model = *ModelPreset("mixtral-8x7b");
  o.model.layers = 2;
  o.model.hidden_size = 32;
  o.model.num_heads = 4;
  o.model.num_kv_heads = 2;
  o.model.ffn_hidden_size = 64;
  o.seq_length_tokens = 256;
  o.iterations = 2;
  o.moe_imbalance = 0.5;
  o.seed = 7;
  Trace a = Synth(o);
  Trace a2 = Synth(o);
  o.seed = 8;
  Trace b = Synth(o);
  // Same seed, same trace, byte for byte.
  CHECK(TraceToBinary(a) == TraceToBinary(a2));
  const std::vector<int64_t> a0 = ExpertSizes(a, 0, "mb0.layers.0.moe.e");
  const std::vector<int64_t> a1 = ExpertSizes(a, 1, "mb0.layers.0.moe.e");
  const std::vector<int64_t> b0 = ExpertSizes(b, 0, "mb0.layers.0.moe.e");
  INFO("seed 7 it 0: " << ::Catch::Detail::stringify(a0));
  INFO("seed 7 it 1: " << ::Catch::Detail::stringify(a1));
  INFO("seed 8 it 0: " << ::Catch::Detail::stringify(b0));
  CHECK(a0 != b0);  // seed changes the routing
  CHECK(a0 != a1);  // and so does the iteration
  // Expert sizes vary within a layer; fc1 rows sum to top-2 × 256 tokens.
  CHECK(*std::min_element(a0.begin(), a0.end()) < *std::max_element(a0.begin(), a0.end()));
  int64_t rows = 0;
  for (int64_t s : a0) rows += s / (2 * 64 * 2);  // [n, 2f] bf16
  CHECK(rows == 2 * 256);
}

TEST_CASE("synth: MoE recomputation re-routes identically", "[synth][moe]") {
  SynthOptions o = TinyOptions();
  o.model = *ModelPreset("mixtral-8x7b");
  o.model.layers = 1;
  o.model.hidden_size = 32;
  o.model.num_heads = 4;
  o.model.num_kv_heads = 2;
  o.model.ffn_hidden_size = 64;
  o.seq_length_tokens = 128;
  o.recompute = true;
  Trace t = Synth(o);
  for (int e = 0; e < 8; ++e) {
    std::vector<TensorId> fwd = TensorsNamed(t, "mb0.layers.0.moe.e" + std::to_string(e) + ".fc1");
    std::vector<TensorId> rc =
        TensorsNamed(t, "mb0.layers.0.moe.e" + std::to_string(e) + ".fc1.recompute");
    INFO("expert " << e);
    // With recomputation the forward's expert tensors are temporaries and the
    // re-run creates the saved ones, of the same size.
    REQUIRE(fwd.size() == rc.size());
    for (size_t i = 0; i < fwd.size(); ++i) {
      CHECK(t.tensor(fwd[i]).size_bytes == t.tensor(rc[i]).size_bytes);
    }
  }
}

TEST_CASE("synth: classic attention keeps S×S tensors, flash does not", "[synth]") {
  SynthOptions o = TinyOptions();
  o.model = *ModelPreset("gpt2");  // dropout 0.1, layernorm, gelu, biases, tied
  o.model.layers = 1;
  o.model.hidden_size = 8;
  o.model.num_heads = 2;
  o.model.num_kv_heads = 2;
  o.model.ffn_hidden_size = 32;
  o.model.vocab_size = 16;
  o.seq_length_tokens = 4;
  o.attention = AttentionKind::kClassic;
  Trace t = Synth(o);
  // [b, a, s, s] = 1·2·4·4 = 32 elements: bf16 probabilities 64 B, their
  // dropout output 64 B, the dropout mask 32 B; scores [b·a, s, s] 64 B.
  CHECK(SizeOf(t, "mb0.layers.0.attn.probs") == 64);
  CHECK(SizeOf(t, "mb0.layers.0.attn.probs_drop") == 64);
  CHECK(SizeOf(t, "mb0.layers.0.attn.probs_mask") == 32);
  CHECK(SizeOf(t, "mb0.layers.0.attn.scores") == 64);
  CHECK(t.tensor(TensorNamed(t, "mb0.layers.0.attn.scores")).kind == TensorKind::kTemporary);
  CHECK(t.tensor(TensorNamed(t, "mb0.layers.0.attn.probs")).kind == TensorKind::kActivation);
  // Hidden dropout masks are bool [s, b, h] = 32 B; layernorm saves mean and
  // rstd.
  CHECK(SizeOf(t, "mb0.layers.0.attn.drop.mask") == 32);
  CHECK(SizeOf(t, "mb0.layers.0.attn.norm.mean") == 16);
  // Tied embeddings: no separate head weight.
  CHECK(TensorsNamed(t, "head.output_layer.weight").empty());
  o.attention = AttentionKind::kFlash;
  Trace f = Synth(o);
  CHECK(TensorsNamed(f, "mb0.layers.0.attn.probs").empty());
  CHECK(SizeOf(f, "mb0.layers.0.attn.lse") == 32);
}

TEST_CASE("synth: configuration errors", "[synth]") {
  SynthOptions o = TinyOptions();
  auto err = [](const SynthOptions& x) { return std::string(SynthesizeTrace(x).status().message()); };
  o.parallel.tensor_parallel = 3;
  o.model.num_heads = 4;
  o.model.num_kv_heads = 4;
  o.model.hidden_size = 8;
  CHECK(err(o) == "synth: --heads 4 is not divisible by --tp 3");
  CHECK(SynthesizeTrace(o).status().code() == absl::StatusCode::kInvalidArgument);
  o = TinyOptions();
  o.model.num_kv_heads = 1;
  o.parallel.tensor_parallel = 2;
  CHECK(err(o) == "synth: --kv-heads 1 is not divisible by --tp 2");
  o = TinyOptions();
  o.model.layers = 3;
  o.parallel.pipeline_parallel = 2;
  CHECK(err(o) == "synth: --layers 3 is not divisible by --pp 2");
  o = TinyOptions();
  o.parallel.pipeline_stage = 1;
  CHECK(err(o) == "synth: --pp-stage is 1; must be in 0..0 (--pp 1)");
  o = TinyOptions();
  o.parallel.zero_stage = 4;
  CHECK(err(o) == "synth: --zero is 4; must be 0, 1, 2 or 3");
  o = TinyOptions();
  o.model.hidden_size = 9;
  CHECK(err(o) == "synth: --hidden 9 is not divisible by --heads 2");
  o = TinyOptions();
  o.model.num_kv_heads = 3;
  o.model.num_heads = 2;
  CHECK(err(o) == "synth: --heads 2 is not divisible by --kv-heads 3");
  o = TinyOptions();
  o.dtype = DType::kInt8;
  CHECK(err(o) == "synth: --dtype int8 is not supported (bf16, fp16, fp32)");
  o = TinyOptions();
  o.model = *ModelPreset("gpt2");
  o.seq_length_tokens = 2048;
  CHECK(err(o) == "synth: --seq 2048 exceeds the 1024 learned positions of gpt2");
  o = TinyOptions();
  o.model.dropout_probability = 1;
  CHECK(err(o) == "synth: --dropout is 1; must be in [0, 1)");
  o = TinyOptions();
  o.iterations = 0;
  CHECK(err(o) == "synth: --iterations is 0; must be >= 1");
  o = TinyOptions();
  o.iterations = 100000;
  o.num_micro_batches = 100000;
  CHECK(err(o).find("more than a trace can index") != std::string::npos);
  CHECK(ModelPreset("llama9").status().message() ==
        "synth: unknown model preset 'llama9' (known: llama2-7b, llama2-13b, llama2-70b, "
        "llama3-8b, mixtral-8x7b, gpt2)");
  SynthOptions tpu;
  CHECK(UseDevicePreset("tpu", &tpu).code() == absl::StatusCode::kNotFound);
}

TEST_CASE("synth: presets", "[synth]") {
  ModelConfig l70 = *ModelPreset("llama2-70b");
  CHECK(l70.layers == 80);
  CHECK(l70.num_kv_heads == 8);
  CHECK(l70.ffn_hidden_size == 28672);
  ModelConfig l3 = *ModelPreset("LLAMA3-8B");  // case-insensitive
  CHECK(l3.vocab_size == 128256);
  CHECK(PresetSequenceLength(l3) == 8192);
  ModelConfig mx = *ModelPreset("mixtral-8x7b");
  CHECK(mx.num_experts == 8);
  CHECK(mx.experts_top_k == 2);
  SynthOptions npu;
  REQUIRE(UseDevicePreset("ascend-910b-64g", &npu).ok());
  CHECK(npu.device.capacity_bytes == int64_t{64} << 30);
  CHECK(npu.device.name == "ascend-910b-64g");  // the alias keeps its spelling
  CHECK(npu.npu_op_names);
  SynthOptions h100;
  REQUIRE(UseDevicePreset("H100-80GB", &h100).ok());
  CHECK(h100.device.name == "h100-80gb");
  CHECK_FALSE(h100.npu_op_names);
  for (const std::string& m : ModelPresetNames()) {
    ModelConfig c = *ModelPreset(m);
    CHECK(c.Validate().ok());
  }
  SynthOptions o;
  o.parallel.tensor_parallel = 4;
  o.model.vocab_size = 50257;
  CHECK(o.padded_vocab() == 50688);  // next multiple of 512
}

}  // namespace
}  // namespace swapplan::testing
