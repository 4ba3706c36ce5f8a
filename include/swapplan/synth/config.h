// Configuration of the trace synthesizer (`swapplan synth`): the model, the
// device, the parallel layout and the run (sequence length, micro-batches,
// iterations, sequence changes). Presets fill the first two (the device is
// the one DeviceModel, from device/presets.h); every field can be
// overridden afterwards.
//
//   SynthOptions o;
//   SWAPPLAN_ASSIGN_OR_RETURN(o.model, ModelPreset("llama2-7b"));
//   SWAPPLAN_RETURN_IF_ERROR(UseDevicePreset("ascend-910b-64g", &o));  // + torch_npu names
//   o.parallel.data_parallel = 8;
//   o.parallel.zero_stage = 2;
//   o.seq_length_tokens = 4096;
//   SWAPPLAN_RETURN_IF_ERROR(o.Validate());
//
// Sizes follow Megatron-LM conventions: tensor parallelism (degree t) shards
// attention heads, KV heads, the FFN width and the (padded) vocabulary by t;
// norms, residuals and dropout are replicated (no sequence parallelism).
// Pipeline parallelism gives stage r the layers [r·L/pp, (r+1)·L/pp).
//
// Validate() and the preset lookups are O(1) (O(presets) for lookups).
#ifndef SWAPPLAN_SYNTH_CONFIG_H_
#define SWAPPLAN_SYNTH_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "swapplan/device/device_model.h"
#include "swapplan/synth/seq_lengths.h"
#include "swapplan/trace/types.h"

namespace swapplan {

enum class NormKind : uint8_t { kRmsNorm, kLayerNorm };
enum class MlpKind : uint8_t { kGatedSilu, kGelu };
enum class PositionKind : uint8_t { kRotary, kLearned };
// kFlash: fused attention kernel without S×S tensors (saves the output and
// the log-sum-exp). kClassic: baddbmm → fused masked softmax → dropout → bmm,
// saving the S×S probabilities (and the dropout mask and output).
enum class AttentionKind : uint8_t { kFlash, kClassic };

struct ModelConfig {
  // Preset name, or "custom"; goes to the trace's model_name.
  std::string name = "custom";
  // Transformer layers of the whole model (not of one pipeline stage).
  int32_t layers = 32;
  // Model width h (elements per token of the residual stream).
  int64_t hidden_size = 4096;
  // FFN width (per expert for MoE models). For the gated MLP this is the
  // width of the gate and of the up projection each.
  int64_t ffn_hidden_size = 11008;
  // Attention (query) heads a; head dimension d = h / a.
  int32_t num_heads = 32;
  // Key/value heads (grouped-query attention when < num_heads).
  int32_t num_kv_heads = 32;
  // Vocabulary before padding (padded to a multiple of 128·tp, as Megatron).
  int64_t vocab_size = 32000;
  // Experts per MoE layer; 0 for a dense MLP.
  int32_t num_experts = 0;
  // Experts each token is routed to.
  int32_t experts_top_k = 2;
  // Llama: RMSNorm, gated SiLU MLP, rotary; GPT-2: LayerNorm, GeLU, learned.
  NormKind norm = NormKind::kRmsNorm;
  MlpKind mlp = MlpKind::kGatedSilu;
  PositionKind position = PositionKind::kRotary;
  // Linear layers and norms have biases (GPT-2).
  bool bias = false;
  // The LM head reuses the word embeddings.
  bool tied_embeddings = false;
  // Rows of the learned position table (PositionKind::kLearned).
  int64_t max_position_embeddings = 4096;
  // Dropout probability after attention, after the output projection, after
  // the MLP and after the embedding; 0 disables every dropout op.
  double dropout_probability = 0.0;

  int64_t head_dim() const { return hidden_size / num_heads; }
  // InvalidArgument naming the field and the rule it breaks.
  absl::Status Validate() const;
};

struct ParallelConfig {
  // Tensor-parallel degree t (Megatron column/row-parallel linears).
  int32_t tensor_parallel = 1;
  // Data-parallel degree (ranks sharing gradients / ZeRO shards).
  int32_t data_parallel = 1;
  // Pipeline stages; layers are split evenly.
  int32_t pipeline_parallel = 1;
  // The pipeline stage this trace is for, 0 .. pipeline_parallel-1.
  int32_t pipeline_stage = 0;
  // ZeRO stage 0-3 over the data-parallel group: 1 shards optimizer states
  // (and master weights), 2 also gradients, 3 also parameters.
  int32_t zero_stage = 0;

  absl::Status Validate() const;
};

// The synthesizer's default device: the a100-80g preset (device/presets.h).
DeviceModel DefaultSynthDevice();

struct SynthOptions {
  ModelConfig model;
  // The device: capacity and host link go to the trace's metadata (its name
  // to device_name); peak FLOP/s, memory bandwidth and interconnect
  // bandwidth drive the roofline durations and must be positive.
  DeviceModel device = DefaultSynthDevice();
  // Fused kernels carry torch_npu names (npu::npu_rms_norm, ...), as on an
  // Ascend NPU.
  bool npu_op_names = false;
  ParallelConfig parallel;
  // Sequence length s (with seq_lengths: the longest, which sizes the
  // persistent rotary / position / mask buffers and the closed-form estimate).
  int64_t seq_length_tokens = 4096;
  // Per-iteration sequence lengths (seq_lengths.h); empty: always
  // seq_length_tokens. Drawn with `seed`.
  SeqLengthSchedule seq_lengths;
  // Sequences per micro-batch (MBS).
  int32_t micro_batch_sequences = 1;
  // Micro-batches per iteration (gradient accumulation steps, or the
  // pipeline's micro-batches). GBS = MBS × micro-batches × DP.
  int32_t num_micro_batches = 1;
  // Parameter/activation dtype: bfloat16 or float16 (mixed precision, fp32
  // master weights) or float32.
  DType dtype = DType::kBFloat16;
  AttentionKind attention = AttentionKind::kFlash;
  // Full recomputation (Megatron --recompute-granularity full, uniform, one
  // layer per checkpoint): forward keeps only layer inputs.
  bool recompute = false;
  // Gradient buffers in fp32 (Megatron's main_grad with bf16); otherwise in
  // the parameter dtype (DeepSpeed, PyTorch DDP).
  bool fp32_grad_accumulation = false;
  int32_t iterations = 1;
  // Every k-th iteration (k, 2k, ...) overflows: the loss scaler skips the
  // optimizer step. 0: never. Turns loss scaling on (always on for fp16).
  int32_t loss_scale_skip_every = 0;
  // Every k-th iteration ends with an on-the-fly validation forward pass
  // under no_grad (phase OTHER). 0: never.
  int32_t validation_every = 0;
  // Micro-batches of each validation pass.
  int32_t validation_micro_batches = 1;
  // Seeds MoE routing and the draw of per-iteration sequence lengths.
  uint64_t seed = 1;
  // Spread of per-expert load: expert weight 1 + σ·z (z ≈ N(0,1)), so the
  // token counts of experts vary by about ±σ around the mean.
  double moe_imbalance = 0.3;
  // Fractions of the device's peak FLOP/s and HBM bandwidth reached by
  // kernels (1 = pure roofline).
  double flops_efficiency = 1.0;
  double hbm_efficiency = 1.0;
  // Give tensors readable names ("mb0.layers.3.attn.qkv"); off saves time and
  // memory on very large traces.
  bool tensor_names = true;
  // Inference trace (synth --inference, docs/synth.md "Inference"): one
  // iteration is one request of micro_batch_sequences sequences — the
  // prefill of seq_length_tokens prompt tokens, then generate_tokens decode
  // steps of one token per sequence reading a KV cache that ends at
  // seq_length_tokens + generate_tokens positions. Forward only (phase
  // FORWARD), parameters only (no gradients, no optimizer states).
  bool inference = false;
  // Decode steps after the prefill (inference only; 0 = prefill only).
  int32_t generate_tokens = 256;

  // Validates every part and their combination (heads divisible by tp, layers
  // by pp, ...). InvalidArgument naming the flag-level field.
  absl::Status Validate() const;
  // The inference rules of Validate(): OK when !inference; otherwise
  // InvalidArgument naming the training-only flag that is set (or a bad
  // --generate).
  absl::Status ValidateInference() const;

  bool mixed_precision() const { return dtype != DType::kFloat32; }
  bool loss_scaling() const { return dtype == DType::kFloat16 || loss_scale_skip_every > 0; }
  int32_t stage_layers() const { return model.layers / parallel.pipeline_parallel; }
  bool first_stage() const { return parallel.pipeline_stage == 0; }
  bool last_stage() const { return parallel.pipeline_stage == parallel.pipeline_parallel - 1; }
  int64_t tokens_per_micro_batch() const { return seq_length_tokens * micro_batch_sequences; }
  // Positions the rotary / position tables cover: the sequence, or in
  // inference the prompt plus the generated tokens.
  int64_t max_positions() const {
    return seq_length_tokens + (inference ? int64_t{generate_tokens} : 0);
  }
  // Vocabulary padded to a multiple of 128·tp (Megatron's
  // --make-vocab-size-divisible-by 128).
  int64_t padded_vocab() const;
  // Micro-batches whose activations one stage holds at once under 1F1B:
  // min(pp - stage, micro-batches).
  int32_t micro_batches_in_flight() const;
  // Sequence length of iteration `it` (0-based).
  int64_t SeqLengthOf(int32_t it) const {
    return seq_lengths.empty() ? seq_length_tokens : seq_lengths.At(seed, it);
  }
  // Iteration `it` (0-based) skips the optimizer step / runs validation.
  bool skips_step(int32_t it) const {
    return loss_scale_skip_every > 0 && (it + 1) % loss_scale_skip_every == 0;
  }
  bool validates(int32_t it) const {
    return validation_every > 0 && (it + 1) % validation_every == 0;
  }
};

// Model presets: llama2-7b, llama2-13b, llama2-70b, llama3-8b, mixtral-8x7b,
// gpt2. NotFound listing the known names.
absl::StatusOr<ModelConfig> ModelPreset(absl::string_view name);
std::vector<std::string> ModelPresetNames();
// Sets o->device to device preset `name` (device/presets.h; aliases keep
// their spelling as the device name) and o->npu_op_names to whether it is
// an Ascend NPU. NotFound listing the presets.
absl::Status UseDevicePreset(absl::string_view name, SynthOptions* o);
// Sequence length a preset is usually trained with (4096 for Llama 2 and
// Mixtral, 8192 for Llama 3, 1024 for GPT-2).
int64_t PresetSequenceLength(const ModelConfig& model);

// "bf16"/"bfloat16", "fp16"/"float16", "fp32"/"float32" → DType. False for
// anything else.
bool ParseSynthDType(absl::string_view name, DType* out);

}  // namespace swapplan

#endif  // SWAPPLAN_SYNTH_CONFIG_H_
