// Presets and validation of the synthesizer configuration. The device
// presets are device/presets.h (sources in docs/devices.md).
#include "swapplan/synth/config.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "swapplan/device/presets.h"
#include "swapplan/util/checked.h"
#include "swapplan/util/error.h"

namespace swapplan {
namespace {

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("synth: ", what));
}

ModelConfig Llama(absl::string_view name, int32_t layers, int64_t hidden, int64_t ffn,
                  int32_t heads, int32_t kv_heads, int64_t vocab) {
  ModelConfig m;
  m.name = std::string(name);
  m.layers = layers;
  m.hidden_size = hidden;
  m.ffn_hidden_size = ffn;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.vocab_size = vocab;
  m.norm = NormKind::kRmsNorm;
  m.mlp = MlpKind::kGatedSilu;
  m.position = PositionKind::kRotary;
  m.max_position_embeddings = 4096;
  return m;
}

std::vector<ModelConfig> AllModels() {
  std::vector<ModelConfig> v;
  // Touvron et al., "Llama 2" (2023), Table 1 / HF config.json.
  v.push_back(Llama("llama2-7b", 32, 4096, 11008, 32, 32, 32000));
  v.push_back(Llama("llama2-13b", 40, 5120, 13824, 40, 40, 32000));
  v.push_back(Llama("llama2-70b", 80, 8192, 28672, 64, 8, 32000));
  // Llama 3 8B: GQA with 8 KV heads, 128K tokenizer.
  ModelConfig l3 = Llama("llama3-8b", 32, 4096, 14336, 32, 8, 128256);
  l3.max_position_embeddings = 8192;
  v.push_back(l3);
  // Mixtral 8x7B: Mistral-7B attention, 8 experts, top-2 routing.
  ModelConfig mx = Llama("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000);
  mx.num_experts = 8;
  mx.experts_top_k = 2;
  mx.max_position_embeddings = 32768;
  v.push_back(mx);
  // GPT-2 small (124M): LayerNorm, learned positions, GeLU MLP, biases,
  // tied embeddings, dropout 0.1.
  ModelConfig g;
  g.name = "gpt2";
  g.layers = 12;
  g.hidden_size = 768;
  g.ffn_hidden_size = 3072;
  g.num_heads = 12;
  g.num_kv_heads = 12;
  g.vocab_size = 50257;
  g.norm = NormKind::kLayerNorm;
  g.mlp = MlpKind::kGelu;
  g.position = PositionKind::kLearned;
  g.bias = true;
  g.tied_embeddings = true;
  g.max_position_embeddings = 1024;
  g.dropout_probability = 0.1;
  v.push_back(g);
  return v;
}

bool Positive(double v) { return v > 0 && std::isfinite(v); }

// The roofline figures the synthesizer needs on top of a valid device model.
absl::Status ValidateSynthDevice(const DeviceModel& d) {
  if (absl::Status s = d.Validate(); !s.ok()) return Bad(s.message());
  struct Field {
    const char* flag;
    double v;
  };
  for (const Field& f : {Field{"--memory-bandwidth", d.memory_bandwidth_bytes_per_s},
                         Field{"--peak-flops", d.peak_flops_per_s},
                         Field{"--interconnect-bandwidth", d.interconnect_bandwidth_bytes_per_s}}) {
    if (!Positive(f.v)) {
      return Bad(absl::StrCat(f.flag, " is ", f.v, "; the roofline needs it > 0"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ModelConfig::Validate() const {
  if (layers < 1) return Bad(absl::StrCat("--layers is ", layers, "; must be >= 1"));
  if (hidden_size < 1) return Bad(absl::StrCat("--hidden is ", hidden_size, "; must be >= 1"));
  if (ffn_hidden_size < 1) return Bad(absl::StrCat("--ffn is ", ffn_hidden_size, "; must be >= 1"));
  if (num_heads < 1) return Bad(absl::StrCat("--heads is ", num_heads, "; must be >= 1"));
  if (num_kv_heads < 1) return Bad(absl::StrCat("--kv-heads is ", num_kv_heads, "; must be >= 1"));
  if (vocab_size < 1) return Bad(absl::StrCat("--vocab is ", vocab_size, "; must be >= 1"));
  if (hidden_size % num_heads != 0) {
    return Bad(absl::StrCat("--hidden ", hidden_size, " is not divisible by --heads ", num_heads));
  }
  if (num_heads % num_kv_heads != 0) {
    return Bad(absl::StrCat("--heads ", num_heads, " is not divisible by --kv-heads ",
                            num_kv_heads));
  }
  if (position == PositionKind::kRotary && head_dim() % 2 != 0) {
    return Bad(absl::StrCat("rotary embeddings need an even head dimension; hidden/heads is ",
                            head_dim()));
  }
  if (num_experts < 0) return Bad(absl::StrCat("--experts is ", num_experts, "; must be >= 0"));
  if (num_experts > 0 && (experts_top_k < 1 || experts_top_k > num_experts)) {
    return Bad(absl::StrCat("--top-k is ", experts_top_k, "; must be in 1..", num_experts,
                            " (the number of experts)"));
  }
  if (num_experts > 0 && mlp != MlpKind::kGatedSilu) {
    return Bad("MoE layers use the gated SiLU MLP");
  }
  if (max_position_embeddings < 1) {
    return Bad(absl::StrCat("max_position_embeddings is ", max_position_embeddings,
                            "; must be >= 1"));
  }
  if (!(dropout_probability >= 0 && dropout_probability < 1)) {
    return Bad(absl::StrCat("--dropout is ", dropout_probability, "; must be in [0, 1)"));
  }
  return absl::OkStatus();
}

DeviceModel DefaultSynthDevice() {
  absl::StatusOr<DeviceModel> d = DevicePresetModel("a100-80g");
  return d.ok() ? *d : DeviceModel();
}

absl::Status ParallelConfig::Validate() const {
  if (tensor_parallel < 1) return Bad(absl::StrCat("--tp is ", tensor_parallel, "; must be >= 1"));
  if (data_parallel < 1) return Bad(absl::StrCat("--dp is ", data_parallel, "; must be >= 1"));
  if (pipeline_parallel < 1) {
    return Bad(absl::StrCat("--pp is ", pipeline_parallel, "; must be >= 1"));
  }
  if (pipeline_stage < 0 || pipeline_stage >= pipeline_parallel) {
    return Bad(absl::StrCat("--pp-stage is ", pipeline_stage, "; must be in 0..",
                            pipeline_parallel - 1, " (--pp ", pipeline_parallel, ")"));
  }
  if (zero_stage < 0 || zero_stage > 3) {
    return Bad(absl::StrCat("--zero is ", zero_stage, "; must be 0, 1, 2 or 3"));
  }
  return absl::OkStatus();
}

absl::Status SynthOptions::Validate() const {
  if (absl::Status s = model.Validate(); !s.ok()) return s;
  if (absl::Status s = ValidateSynthDevice(device); !s.ok()) return s;
  if (absl::Status s = parallel.Validate(); !s.ok()) return s;
  const int32_t tp = parallel.tensor_parallel;
  if (model.num_heads % tp != 0) {
    return Bad(absl::StrCat("--heads ", model.num_heads, " is not divisible by --tp ", tp));
  }
  if (model.num_kv_heads % tp != 0) {
    return Bad(absl::StrCat("--kv-heads ", model.num_kv_heads, " is not divisible by --tp ", tp));
  }
  if (model.ffn_hidden_size % tp != 0) {
    return Bad(absl::StrCat("--ffn ", model.ffn_hidden_size, " is not divisible by --tp ", tp));
  }
  if (model.layers % parallel.pipeline_parallel != 0) {
    return Bad(absl::StrCat("--layers ", model.layers, " is not divisible by --pp ",
                            parallel.pipeline_parallel));
  }
  if (seq_length_tokens < 1) return Bad(absl::StrCat("--seq is ", seq_length_tokens, "; must be >= 1"));
  if (model.position == PositionKind::kLearned && max_positions() > model.max_position_embeddings) {
    return Bad(absl::StrCat(inference ? "--prompt + --generate " : "--seq ", max_positions(),
                            " exceeds the ", model.max_position_embeddings,
                            " learned positions of ", model.name));
  }
  if (absl::Status st = ValidateInference(); !st.ok()) return st;
  if (absl::Status st = seq_lengths.Validate(); !st.ok()) return st;
  if (seq_lengths.max() > seq_length_tokens) {
    return Bad(absl::StrCat("--seq-lengths reach ", seq_lengths.max(), ", above --seq ",
                            seq_length_tokens, " (the longest length sizes the persistent "
                            "buffers)"));
  }
  if (micro_batch_sequences < 1) {
    return Bad(absl::StrCat("--micro-batch is ", micro_batch_sequences, "; must be >= 1"));
  }
  if (num_micro_batches < 1) {
    return Bad(absl::StrCat("--micro-batches is ", num_micro_batches, "; must be >= 1"));
  }
  if (dtype != DType::kBFloat16 && dtype != DType::kFloat16 && dtype != DType::kFloat32) {
    return Bad(absl::StrCat("--dtype ", DTypeName(dtype), " is not supported (bf16, fp16, fp32)"));
  }
  if (iterations < 1) return Bad(absl::StrCat("--iterations is ", iterations, "; must be >= 1"));
  if (loss_scale_skip_every < 0) {
    return Bad(absl::StrCat("--loss-scale-skip-every is ", loss_scale_skip_every, "; must be >= 0"));
  }
  if (validation_every < 0) {
    return Bad(absl::StrCat("--validation-every is ", validation_every, "; must be >= 0"));
  }
  if (validation_micro_batches < 1) {
    return Bad(absl::StrCat("--validation-micro-batches is ", validation_micro_batches,
                            "; must be >= 1"));
  }
  if (!(moe_imbalance >= 0 && moe_imbalance <= 10)) {
    return Bad(absl::StrCat("--moe-imbalance is ", moe_imbalance, "; must be in [0, 10]"));
  }
  if (!(flops_efficiency > 0 && flops_efficiency <= 1)) {
    return Bad(absl::StrCat("--flops-efficiency is ", flops_efficiency, "; must be in (0, 1]"));
  }
  if (!(hbm_efficiency > 0 && hbm_efficiency <= 1)) {
    return Bad(absl::StrCat("--hbm-efficiency is ", hbm_efficiency, "; must be in (0, 1]"));
  }
  // Every tensor family the generator emits must have a numel that int64
  // holds with room for itemsizes and sums: at most 2^56 elements each
  // (x 16 bytes <= 2^60, the synthesizer's limit on all bytes together).
  // Products are checked (util/checked.h); the message names the family.
  constexpr int64_t kMaxElements = int64_t{1} << 56;
  if (model.vocab_size > kMaxElements) {  // before padded_vocab() rounds it up
    return OverflowError("synth", absl::StrCat("--vocab ", model.vocab_size,
                                               " is more than the 2^56 a tensor may have"));
  }
  const int64_t h = model.hidden_size, f = model.ffn_hidden_size, a = model.num_heads;
  const int64_t s = seq_length_tokens, b = micro_batch_sequences, v = padded_vocab();
  const int64_t k = model.num_experts > 0 ? model.experts_top_k : 1;
  struct Family {
    const char* what;
    std::initializer_list<int64_t> factors;
  };
  const Family families[] = {
      {"attention weights (3 x hidden^2)", {3, h, h}},
      {"MLP weights (2 x ffn x hidden)", {2, f, h}},
      {"embedding (padded vocab x hidden)", {v, h}},
      {"position table (max positions x hidden)", {model.max_position_embeddings, h}},
      {"attention scores (micro-batch x heads x seq^2)", {b, a, s, s}},
      {"logits (seq x micro-batch x padded vocab)", {s, b, v}},
      {"MLP activations (seq x micro-batch x top-k x 2 x ffn)", {s, b, k, 2, f}},
      {"token activations (seq x micro-batch x top-k x hidden)", {s, b, k, h}},
  };
  for (const Family& fam : families) {
    int64_t n = 1;
    bool fits = true;
    for (int64_t x : fam.factors) fits = fits && CheckedMul(n, x, &n);
    if (!fits || n > kMaxElements) {
      return OverflowError(
          "synth", absl::StrCat("the ", fam.what, " would have ",
                                fits ? absl::StrCat(n) : std::string("more than 2^63"),
                                " elements, more than the 2^56 a tensor may have; reduce "
                                "--hidden, --ffn, --vocab, --seq or --micro-batch"));
    }
  }
  return absl::OkStatus();
}

absl::Status SynthOptions::ValidateInference() const {
  if (!inference) return absl::OkStatus();
  if (generate_tokens < 0) {
    return Bad(absl::StrCat("--generate is ", generate_tokens, "; must be >= 0"));
  }
  // One request is one batch through every layer: the training-only parts
  // of the configuration have no meaning there.
  struct Rule {
    bool broken;
    const char* what;
  };
  const Rule rules[] = {
      {num_micro_batches != 1, "--micro-batches (an inference request is one batch: --batch)"},
      {parallel.pipeline_parallel != 1, "--pp (pipeline-parallel inference is not modelled)"},
      {parallel.zero_stage != 0, "--zero (inference holds no gradients or optimizer states)"},
      {recompute, "--recompute (nothing is saved for a backward pass)"},
      {fp32_grad_accumulation, "--fp32-grad-accumulation (no gradients)"},
      {loss_scale_skip_every != 0, "--loss-scale-skip-every (no optimizer step)"},
      {validation_every != 0, "--validation-every (no training iterations)"},
      {!seq_lengths.empty(), "--seq-lengths (the prompt length is --prompt)"},
      {attention != AttentionKind::kFlash,
       "--no-flash (inference attends over the KV cache with flash attention)"},
  };
  for (const Rule& r : rules) {
    if (r.broken) return Bad(absl::StrCat(r.what, " is not supported with --inference"));
  }
  int64_t cache = 1;
  for (int64_t x : {int64_t{micro_batch_sequences}, max_positions(), int64_t{model.num_kv_heads},
                    model.head_dim(), int64_t{4}}) {
    if (!CheckedMul(cache, x, &cache) || cache > (int64_t{1} << 60)) {
      return OverflowError("synth", "the KV cache of one layer (batch x (prompt + generate) x "
                                    "kv-heads x head-dim) would exceed 2^60 bytes; reduce "
                                    "--batch, --prompt or --generate");
    }
  }
  return absl::OkStatus();
}

int64_t SynthOptions::padded_vocab() const {
  const int64_t m = int64_t{128} * std::max(1, parallel.tensor_parallel);
  return (model.vocab_size + m - 1) / m * m;
}

int32_t SynthOptions::micro_batches_in_flight() const {
  return std::min(parallel.pipeline_parallel - parallel.pipeline_stage, num_micro_batches);
}

absl::StatusOr<ModelConfig> ModelPreset(absl::string_view name) {
  for (ModelConfig& m : AllModels()) {
    if (absl::EqualsIgnoreCase(m.name, name)) return m;
  }
  return absl::NotFoundError(absl::StrCat("synth: unknown model preset '", name, "' (known: ",
                                          absl::StrJoin(ModelPresetNames(), ", "), ")"));
}

absl::Status UseDevicePreset(absl::string_view name, SynthOptions* o) {
  const DevicePresetInfo* info = FindDevicePreset(name);
  absl::StatusOr<DeviceModel> d = DevicePresetModel(name);
  if (!d.ok()) return Error(ErrorKind::kNotFound, absl::StrCat("synth: ", d.status().message()));
  o->device = *std::move(d);
  o->npu_op_names = info->vendor == DeviceVendor::kHuawei;
  return absl::OkStatus();
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> v;
  for (const ModelConfig& m : AllModels()) v.push_back(m.name);
  return v;
}

int64_t PresetSequenceLength(const ModelConfig& model) {
  if (model.name == "llama3-8b") return 8192;
  if (model.position == PositionKind::kLearned) return model.max_position_embeddings;
  return 4096;
}

bool ParseSynthDType(absl::string_view name, DType* out) {
  DType d;
  if (!ParseDType(name, &d)) return false;
  if (d != DType::kBFloat16 && d != DType::kFloat16 && d != DType::kFloat32) return false;
  *out = d;
  return true;
}

}  // namespace swapplan
