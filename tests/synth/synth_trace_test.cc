// The synthesized trace of a tiny configuration, checked by hand: tensor
// sizes, kinds, lifetimes, persistent bytes, the peak, roofline durations,
// hints and metadata.
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/synth/roofline.h"
#include "synth_helpers.h"

namespace swapplan::testing {
namespace {

// TinyOptions(): T = s·b = 4 tokens, h = 8, a = k = 2 heads of d = 4,
// f = 16, V = 16 → padded to 128 (multiple of 128·tp), bf16 (p = 2).
TEST_CASE("synth: tensor sizes of a tiny llama layer", "[synth]") {
  Trace t = Synth(TinyOptions());
  // [s, b, h] activations: 4·1·8·2 = 64 B.
  CHECK(SizeOf(t, "mb0.embed.word_embeddings.out") == 64);
  CHECK(SizeOf(t, "mb0.layers.0.attn.norm.out") == 64);
  // RMSNorm's rstd: [s, b] fp32 = 16 B.
  CHECK(SizeOf(t, "mb0.layers.0.attn.norm.rstd") == 16);
  // Fused QKV: (a + 2k)·d = 24 per token → 4·24·2 = 192 B.
  CHECK(SizeOf(t, "mb0.layers.0.attn.qkv") == 192);
  // Rotary outputs: q [4,1,2,4], k [4,1,2,4] → 64 B each.
  CHECK(SizeOf(t, "mb0.layers.0.attn.q_rot") == 64);
  CHECK(SizeOf(t, "mb0.layers.0.attn.k_rot") == 64);
  // Flash output 64 B; log-sum-exp [b, a, s] fp32 = 1·2·4·4 = 32 B.
  CHECK(SizeOf(t, "mb0.layers.0.attn.core") == 64);
  CHECK(SizeOf(t, "mb0.layers.0.attn.lse") == 32);
  // Gated MLP: fc1 [4, 1, 2f = 32] = 256 B; silu and mul [4, 1, 16] = 128 B.
  CHECK(SizeOf(t, "mb0.layers.0.mlp.fc1") == 256);
  CHECK(SizeOf(t, "mb0.layers.0.mlp.silu") == 128);
  CHECK(SizeOf(t, "mb0.layers.0.mlp.mul") == 128);
  // Logits [4, 1, 128] bf16 = 1024 B, their fp32 copy 2048 B.
  CHECK(SizeOf(t, "mb0.head.logits") == 1024);
  CHECK(SizeOf(t, "mb0.head.loss.softmax") == 2048);
  // Token ids [1, 4] int64 = 32 B.
  CHECK(SizeOf(t, "mb0.input.tokens") == 32);
  // Weights: qkv [24, 8] bf16 = 384 B; its Adam moments fp32 768 B each.
  CHECK(SizeOf(t, "layers.0.attn.qkv.weight") == 384);
  CHECK(SizeOf(t, "layers.0.attn.qkv.weight.grad") == 384);
  CHECK(SizeOf(t, "layers.0.attn.qkv.weight.master") == 768);
  CHECK(SizeOf(t, "layers.0.attn.qkv.weight.exp_avg_sq") == 768);
  CHECK(SizeOf(t, "head.output_layer.weight") == 2048);
}

TEST_CASE("synth: kinds and persistence", "[synth]") {
  Trace t = Synth(TinyOptions());
  auto kind = [&](const std::string& n) { return t.tensor(TensorNamed(t, n)).kind; };
  auto persistent = [&](const std::string& n) { return t.tensor(TensorNamed(t, n)).persistent; };
  CHECK(kind("mb0.layers.0.attn.qkv") == TensorKind::kActivation);     // saved for backward
  CHECK(kind("mb0.layers.0.attn.proj") == TensorKind::kTemporary);     // consumed by the residual add
  CHECK(kind("mb0.head.logits") == TensorKind::kTemporary);      // cast to fp32 at once
  CHECK(kind("mb0.head.loss.softmax") == TensorKind::kActivation);
  CHECK(kind("mb0.input.tokens") == TensorKind::kInput);
  CHECK(kind("mb0.layers.0.attn.qkv.grad") == TensorKind::kGradient);
  CHECK(kind("layers.0.mlp.fc1.weight") == TensorKind::kParameter);
  CHECK(kind("layers.0.mlp.fc1.weight.grad") == TensorKind::kGradient);
  CHECK(kind("layers.0.mlp.fc1.weight.exp_avg") == TensorKind::kOptimizerState);
  CHECK(persistent("layers.0.mlp.fc1.weight"));
  CHECK(persistent("layers.0.mlp.fc1.weight.grad"));  // gradient buffers live across iterations
  CHECK(persistent("layers.0.mlp.fc1.weight.master"));
  CHECK_FALSE(persistent("mb0.layers.0.attn.qkv"));
  CHECK_FALSE(persistent("mb0.layers.0.attn.qkv.grad"));
}

TEST_CASE("synth: saved activations live until their last backward use", "[synth]") {
  Trace t = Synth(TinyOptions());
  auto last_phase_use = [&](const std::string& n) {
    const TensorLifetime& life = t.lifetime(TensorNamed(t, n));
    return t.op(life.free_op).phase;
  };
  // Saved: freed in backward, right after their last use.
  for (const char* n : {"mb0.layers.0.attn.qkv", "mb0.layers.0.attn.lse", "mb0.layers.0.mlp.fc1",
                        "mb0.head.loss.softmax", "mb0.input.tokens"}) {
    INFO(n);
    const TensorLifetime& life = t.lifetime(TensorNamed(t, n));
    CHECK(last_phase_use(n) == Phase::kBackward);
    CHECK(life.free_op == life.last_use);
    CHECK(t.op(life.alloc_op).phase == Phase::kForward);
  }
  // Temporaries: die at their only consumer, one op after they were made.
  for (const char* n : {"mb0.layers.0.attn.proj", "mb0.layers.0.mlp.fc2", "mb0.head.logits"}) {
    INFO(n);
    const TensorLifetime& life = t.lifetime(TensorNamed(t, n));
    CHECK(life.free_op == life.alloc_op + 1);
  }
}

TEST_CASE("synth: every non-persistent tensor has one ALLOC and one FREE", "[synth]") {
  SynthOptions o = TinyOptions();
  o.iterations = 2;
  o.model.layers = 2;
  o.num_micro_batches = 2;
  Trace t = Synth(o);
  std::vector<int> allocs(t.num_tensors(), 0), frees(t.num_tensors(), 0);
  for (const MemoryEvent& e : t.events()) {
    if (e.kind == MemoryEventKind::kAlloc) {
      ++allocs[e.tensor];
      // ALLOC sits on the op that first writes the tensor.
      CHECK(t.lifetime(e.tensor).first_use == e.op);
    }
    if (e.kind == MemoryEventKind::kFree) ++frees[e.tensor];
    CHECK(e.kind != MemoryEventKind::kSwapOut);
  }
  for (TensorId i = 0; i < t.num_tensors(); ++i) {
    INFO("tensor " << t.tensor_name(i));
    if (t.tensor(i).persistent) {
      CHECK(allocs[i] + frees[i] == 0);
      CHECK(t.lifetime(i).alloc_op == -1);
      CHECK(t.lifetime(i).free_op == t.num_ops());
    } else {
      CHECK(allocs[i] == 1);
      CHECK(frees[i] == 1);
      // Within one iteration.
      CHECK(t.IterationOf(t.lifetime(i).alloc_op) == t.IterationOf(t.lifetime(i).free_op));
    }
  }
}

TEST_CASE("synth: persistent bytes and the peak of the tiny trace", "[synth]") {
  Trace t = Synth(TinyOptions());
  // Parameter elements: embedding 128·8 = 1024, norms 3·8 = 24, qkv 24·8 =
  // 192, proj 8·8 = 64, fc1 32·8 = 256, fc2 8·16 = 128, head 128·8 = 1024:
  // Φ = 2712. bf16 params and grads 2Φ = 5424 B each; master + two moments
  // 12Φ = 32544 B; rotary table [s, d] fp32 = 64 B. Total 43456 B.
  CHECK(PersistentBytes(t, TensorKind::kParameter) == 5424);
  CHECK(PersistentBytes(t, TensorKind::kGradient) == 5424);
  CHECK(PersistentBytes(t, TensorKind::kOptimizerState) == 32544);
  CHECK(PersistentBytes(t, TensorKind::kOther) == 64);
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t);
  REQUIRE(c.ok());
  CHECK(c->iterations()[0].persistent_bytes == 43456);
  // Peak at the fp32 cast of the logits. Live then: labels 32 + tokens 32,
  // the layer's saved set (x 64, rstd 16, n1 64, qkv 192, q 64, k 64, o 64,
  // lse 32, r 64, rstd 16, n2 64, fc1 256, silu 128, mul 128 = 1216), the
  // final norm's input 64, output 64 and rstd 16, logits 1024 and their fp32
  // copy 2048: 4496 B. Peak = 43456 + 4496 = 47952 B.
  CHECK(c->peak_unswapped().bytes == 47952);
  CHECK(t.op_name_at(c->peak_unswapped().op) == "aten::_to_copy");
  CHECK(c->peak_unswapped().phase == Phase::kForward);
}

TEST_CASE("synth: roofline durations and wall time", "[synth]") {
  SynthOptions o = TinyOptions();
  Trace t = Synth(o);
  auto producer = [&](const std::string& n) { return t.lifetime(TensorNamed(t, n)).alloc_op; };
  // QKV GEMM: 2·T·h·24 = 1536 FLOP → 1.5 ns at 1000 FLOP/ns; bytes n1 64 +
  // weight 384 + out 192 = 640 → 640 ns at 1 B/ns: memory-bound, 640 ns.
  CHECK(t.op(producer("mb0.layers.0.attn.qkv")).duration_ns == 640);
  // Token copy: 32 B over a 1 B/ns host link = 32 ns.
  CHECK(t.op(producer("mb0.input.tokens")).duration_ns == 32);
  // A slower matrix unit (1 FLOP/ns) makes the GEMM compute-bound: 1536 ns.
  o.device.peak_flops_per_s = 1e9;
  Trace slow = Synth(o);
  CHECK(slow.op(slow.lifetime(TensorNamed(slow, "mb0.layers.0.attn.qkv")).alloc_op).duration_ns == 1536);
  // Iteration wall time = sum of op durations.
  int64_t sum = 0;
  for (OpIndex i = 0; i < t.num_ops(); ++i) sum += t.op(i).duration_ns;
  CHECK(t.iteration(0).wall_time_ns == sum);
  CHECK(t.has_op_durations());
}

TEST_CASE("synth: roofline and collective formulas", "[synth]") {
  DeviceModel d = TinyOptions().device;  // 1000 FLOP/ns, 1 B/ns everywhere
  CHECK(RooflineDurationNs(2e6, 100, d, 1, 1) == 2000);   // compute-bound
  CHECK(RooflineDurationNs(1000, 300, d, 1, 1) == 300);   // memory-bound
  CHECK(RooflineDurationNs(1000, 300, d, 1, 0.5) == 600); // half the bandwidth reached
  CHECK(RooflineDurationNs(0, 0, d, 1, 1) == 1);          // at least 1 ns
  // Ring all-reduce of 1000 B over 4 ranks moves 2·3/4·1000 = 1500 B.
  CHECK(CollectiveDurationNs(CollectiveKind::kAllReduce, 1000, 4, d) == 1500);
  CHECK(CollectiveDurationNs(CollectiveKind::kReduceScatter, 1000, 4, d) == 750);
  CHECK(CollectiveDurationNs(CollectiveKind::kAllGather, 1000, 4, d) == 750);
  CHECK(CollectiveDurationNs(CollectiveKind::kPointToPoint, 1000, 2, d) == 1000);
  CHECK(HostCopyDurationNs(1000, 1e9) == 1000);
}

TEST_CASE("synth: hints on every op", "[synth]") {
  SynthOptions o = TinyOptions();
  o.model.layers = 4;
  o.parallel.pipeline_parallel = 2;
  o.parallel.pipeline_stage = 1;
  o.num_micro_batches = 3;
  o.iterations = 2;
  o.validation_every = 2;
  Trace t = Synth(o);
  std::set<int32_t> layers;
  for (OpIndex i = 0; i < t.num_ops(); ++i) {
    const OpInfo& op = t.op(i);
    INFO("op " << i << " " << t.op_name_at(i));
    CHECK(op.micro_batch >= 0);
    CHECK(op.micro_batch < 4);  // 3 training micro-batches + 1 validation pass
    CHECK(op.layer >= 0);
    CHECK(op.layer < 2);        // stage-local: 4 layers / 2 stages
    CHECK(op.stack_id >= 0);
    CHECK(op.duration_ns >= 1);
    if (op.phase == Phase::kOther) CHECK(op.micro_batch == 3);
    if (op.phase == Phase::kOptimizer) CHECK(op.micro_batch == 2);
    layers.insert(op.layer);
  }
  CHECK(layers == std::set<int32_t>{0, 1});
}

TEST_CASE("synth: metadata", "[synth]") {
  SynthOptions o = TinyOptions();
  o.model.layers = 4;
  o.parallel.pipeline_parallel = 2;
  o.parallel.zero_stage = 2;
  o.parallel.data_parallel = 4;
  Trace t = Synth(o);
  const TraceMetadata& m = t.metadata();
  CHECK(m.device_name == "round");
  CHECK(m.device_memory_bytes == (1 << 20));
  CHECK(m.h2d_bandwidth_bytes_per_s == 1e9);
  CHECK(m.d2h_bandwidth_bytes_per_s == 1e9);
  CHECK(m.model_name == "tiny");
  CHECK(m.model_layers == 2);  // this stage's layers
  CHECK(m.recorder == "swapplan-synth");
  std::map<std::string, std::string> attrs(m.attributes.begin(), m.attributes.end());
  CHECK(attrs.at("synth.zero") == "2");
  CHECK(attrs.at("synth.dp") == "4");
  CHECK(attrs.at("synth.pp") == "2");
  CHECK(attrs.at("synth.layers") == "4");
  CHECK(attrs.at("synth.vocab_padded") == "128");
  CHECK(attrs.at("synth.dtype") == "bfloat16");
  CHECK(std::is_sorted(m.attributes.begin(), m.attributes.end()));
}

TEST_CASE("synth: op names follow the device", "[synth]") {
  SynthOptions o = TinyOptions();
  Trace cuda = Synth(o);
  REQUIRE(UseDevicePreset("ascend-910b-64g", &o).ok());
  Trace npu = Synth(o);
  auto has = [](const Trace& t, const std::string& n) {
    for (const std::string& s : t.op_names()) {
      if (s == n) return true;
    }
    return false;
  };
  CHECK(has(cuda, "aten::_scaled_dot_product_flash_attention"));
  CHECK(has(npu, "npu::npu_fusion_attention"));
  CHECK(has(npu, "npu::npu_rms_norm"));
  CHECK_FALSE(has(npu, "aten::_fused_rms_norm"));
  CHECK(cuda.num_ops() == npu.num_ops());
}

}  // namespace
}  // namespace swapplan::testing
