// The rebuilt peak of synthesized traces against the closed-form estimate
// (synth/estimate.h), for the paper's configurations and for random ones.
#include <cmath>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/synth/estimate.h"
#include "synth_helpers.h"

namespace swapplan::testing {
namespace {

struct Check {
  int64_t peak = 0;
  int64_t estimate = 0;
  double rel = 0;
};

Check PeakVsEstimate(const SynthOptions& o) {
  Trace t = Synth(o);
  absl::StatusOr<MemoryCurve> c = ComputeMemoryCurve(t);
  REQUIRE(c.ok());
  absl::StatusOr<MemoryEstimate> e = EstimateMemory(o);
  REQUIRE(e.ok());
  Check r;
  r.peak = c->peak_unswapped().bytes;
  r.estimate = e->peak_bytes;
  r.rel = std::abs(static_cast<double>(r.estimate - r.peak)) / static_cast<double>(r.peak);
  // The persistent part is exact up to per-tensor shard rounding.
  const double pers = static_cast<double>(c->iterations()[0].persistent_bytes);
  CHECK(std::abs(pers - static_cast<double>(e->persistent_bytes)) <= 1e-4 * pers);
  return r;
}

SynthOptions Preset(const char* model, const char* device) {
  SynthOptions o;
  o.model = *ModelPreset(model);
  REQUIRE(UseDevicePreset(device, &o).ok());
  o.seq_length_tokens = PresetSequenceLength(o.model);
  return o;
}

TEST_CASE("estimate: tiny model persistent bytes by kind", "[synth][estimate]") {
  SynthOptions o = TinyOptions();
  o.parallel.data_parallel = 4;
  o.parallel.zero_stage = 3;
  MemoryEstimate e = *EstimateMemory(o);
  // Φ = 2712 (see synth_trace_test), ZeRO-3 over 4 ranks: params and grads
  // 2·678 B, master and moments 12·678 B, rotary table 64 B.
  CHECK(e.stage_parameters == 2712);
  CHECK(e.parameter_bytes == 1356);
  CHECK(e.gradient_bytes == 1356);
  CHECK(e.optimizer_state_bytes == 8136);
  CHECK(e.other_persistent_bytes == 64);
  // Saved per layer (T = 4, p = 2): x, n1, q, k, o, r, n2 7·64, rstd 2·16,
  // qkv 192, lse 32, MLP 4·[4,1,16]·2 = 512 → 448 + 32 + 192 + 32 + 512 =
  // 1216 B; per micro-batch + tokens 32 = 1248 B.
  CHECK(e.activation_bytes_per_layer == 1216);
  CHECK(e.activation_bytes_per_micro_batch == 1248);
}

TEST_CASE("estimate: paper configurations (seed 001 Tables 2-3)", "[synth][estimate]") {
  struct Case {
    const char* what;
    SynthOptions o;
  };
  std::vector<Case> cases;
  {
    // Table 2: Llama2-7B on 8 × 910B, TP1 PP1 DP8, MBS 1, GBS 16 (2
    // micro-batches per rank), ZeRO-2, seq 4096 and 8192.
    SynthOptions o = Preset("llama2-7b", "ascend-910b-64g");
    o.parallel.data_parallel = 8;
    o.parallel.zero_stage = 2;
    o.num_micro_batches = 2;
    cases.push_back({"llama2-7b dp8 zero2 s4096", o});
    o.seq_length_tokens = 8192;
    cases.push_back({"llama2-7b dp8 zero2 s8192", o});
    // Table 2: TP8 baseline at 8192 (no DP, no ZeRO), 16 micro-batches.
    o.parallel = ParallelConfig{};
    o.parallel.tensor_parallel = 8;
    o.num_micro_batches = 16;
    o.iterations = 1;
    cases.push_back({"llama2-7b tp8 s8192", o});
  }
  {
    // Table 2: Llama2-13B shape, TP2 DP4, seq 4096.
    SynthOptions o = Preset("llama2-13b", "ascend-910b-64g");
    o.parallel.tensor_parallel = 2;
    o.parallel.data_parallel = 4;
    o.parallel.zero_stage = 2;
    o.num_micro_batches = 4;
    cases.push_back({"llama2-13b tp2 dp4 zero2", o});
    // ... and TP4 DP2 at 16384 with recomputation.
    o.parallel.tensor_parallel = 4;
    o.parallel.data_parallel = 2;
    o.seq_length_tokens = 16384;
    o.recompute = true;
    cases.push_back({"llama2-13b tp4 dp2 s16384 recompute", o});
  }
  {
    // Table 2/3: Llama2-7B, PP2 DP4, both stages.
    SynthOptions o = Preset("llama2-7b", "ascend-910b-64g");
    o.parallel.pipeline_parallel = 2;
    o.parallel.data_parallel = 4;
    o.parallel.zero_stage = 2;
    o.num_micro_batches = 4;
    cases.push_back({"llama2-7b pp2 stage0", o});
    o.parallel.pipeline_stage = 1;
    cases.push_back({"llama2-7b pp2 stage1", o});
  }
  {
    // Table 2: Llama3-8B TP4, MBS 2, seq 8192, with and without recompute.
    SynthOptions o = Preset("llama3-8b", "ascend-910b-64g");
    o.parallel.tensor_parallel = 4;
    o.micro_batch_sequences = 2;
    o.num_micro_batches = 1;
    cases.push_back({"llama3-8b tp4 mbs2", o});
    o.recompute = true;
    cases.push_back({"llama3-8b tp4 mbs2 recompute", o});
  }
  {
    // Table 2: Mixtral (36 layers) TP4, seq 16384.
    SynthOptions o = Preset("mixtral-8x7b", "ascend-910b-64g");
    o.model.layers = 36;
    o.parallel.tensor_parallel = 4;
    o.seq_length_tokens = 16384;
    cases.push_back({"mixtral 36L tp4 s16384", o});
  }
  {
    // Llama2-70B TP8 PP4, first and last stage; GPT-2 with classic attention.
    SynthOptions o = Preset("llama2-70b", "h100-80g");
    o.parallel.tensor_parallel = 8;
    o.parallel.pipeline_parallel = 4;
    o.parallel.data_parallel = 2;
    o.parallel.zero_stage = 1;
    o.num_micro_batches = 8;
    cases.push_back({"llama2-70b tp8 pp4 stage0", o});
    o.parallel.pipeline_stage = 3;
    cases.push_back({"llama2-70b tp8 pp4 stage3", o});
    SynthOptions g = Preset("gpt2", "a100-80g");
    g.attention = AttentionKind::kClassic;
    g.micro_batch_sequences = 8;
    cases.push_back({"gpt2 classic mbs8", g});
    g.parallel.data_parallel = 4;
    g.parallel.zero_stage = 3;
    cases.push_back({"gpt2 classic mbs8 zero3", g});
  }
  for (const Case& c : cases) {
    Check r = PeakVsEstimate(c.o);
    INFO(c.what << ": rebuilt peak " << r.peak << " B, estimate " << r.estimate << " B");
    CHECK(r.rel < 0.02);
    // Dense models with evenly divisible shards: the derivation accounts for
    // every byte at the peak. (MoE uses the mean expert load.)
    if (c.o.model.num_experts == 0) CHECK(r.peak == r.estimate);
  }
}

TEST_CASE("estimate: random configurations agree within 2%", "[synth][estimate][property]") {
  const uint64_t seed = 20240611;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  for (int trial = 0; trial < 40; ++trial) {
    SynthOptions o;
    const char* models[] = {"llama2-7b", "llama3-8b", "gpt2", "mixtral-8x7b"};
    o.model = *ModelPreset(models[pick({0, 1, 2, 3})]);
    const int32_t tp = static_cast<int32_t>(pick({1, 2, 4}));
    const int32_t pp = static_cast<int32_t>(pick({1, 2, 4}));
    o.model.layers = pp * static_cast<int32_t>(pick({1, 2, 3}));
    o.model.num_heads = static_cast<int32_t>(pick({16, 32}));
    o.model.num_kv_heads = static_cast<int32_t>(pick({4, 8, 16}));
    o.model.hidden_size = o.model.num_heads * pick({64, 128});
    o.model.ffn_hidden_size = tp * pick({512, 2048, 4096});
    o.model.vocab_size = pick({32000, 50257});
    o.model.max_position_embeddings = 4096;
    if (o.model.num_experts > 0) o.moe_imbalance = 0.2;
    o.seq_length_tokens = pick({512, 1024, 2048});
    o.micro_batch_sequences = static_cast<int32_t>(pick({1, 2}));
    o.num_micro_batches = static_cast<int32_t>(pick({1, 3, 5}));
    o.parallel.tensor_parallel = tp;
    o.parallel.pipeline_parallel = pp;
    o.parallel.pipeline_stage = static_cast<int32_t>(pick({0, 1, 2, 3})) % pp;
    o.parallel.data_parallel = static_cast<int32_t>(pick({1, 2, 8}));
    o.parallel.zero_stage = static_cast<int32_t>(pick({0, 1, 2, 3}));
    o.dtype = pick({0, 1}) ? DType::kBFloat16 : DType::kFloat16;
    o.recompute = pick({0, 1}) == 1;
    o.attention = pick({0, 1}) ? AttentionKind::kFlash : AttentionKind::kClassic;
    o.model.dropout_probability = pick({0, 1}) ? 0.1 : 0.0;
    o.fp32_grad_accumulation = pick({0, 1}) == 1;
    o.seed = static_cast<uint64_t>(trial);
    INFO("trial " << trial << ": " << o.model.name << " L" << o.model.layers << " h"
                  << o.model.hidden_size << " a" << o.model.num_heads << "/"
                  << o.model.num_kv_heads << " f" << o.model.ffn_hidden_size << " s"
                  << o.seq_length_tokens << " b" << o.micro_batch_sequences << " m"
                  << o.num_micro_batches << " tp" << tp << " pp" << pp << "/"
                  << o.parallel.pipeline_stage << " dp" << o.parallel.data_parallel << " z"
                  << o.parallel.zero_stage << " rc" << o.recompute << " classic"
                  << (o.attention == AttentionKind::kClassic) << " drop"
                  << o.model.dropout_probability);
    Check r = PeakVsEstimate(o);
    INFO("rebuilt peak " << r.peak << " B, estimate " << r.estimate << " B");
    CHECK(r.rel < 0.02);
  }
}

}  // namespace
}  // namespace swapplan::testing
