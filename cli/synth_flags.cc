#include "synth_flags.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "swapplan/device/presets.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {

void AddSynthConfigFlags(CLI::App* sub, FlagSet* fs, SynthFlags* f, bool reserve) {
  AddSynthConfigFlags(sub, fs, f,
                      {.reserve = reserve,
                       .compute_scale = false,
                       .roofline = true,
                       .default_device = kSynthDefaultDevice});
}

void AddSynthConfigFlags(CLI::App* sub, FlagSet* fs, SynthFlags* f,
                         const DeviceFlagChoice& device) {
  sub->add_option("--model", f->model, "Model preset: " + absl::StrJoin(ModelPresetNames(), ", "))
      ->capture_default_str();
  AddDeviceFlags(sub, fs, &f->device, device);
  sub->add_option("--layers", f->layers, "Transformer layers (whole model)");
  sub->add_option("--hidden", f->hidden, "Hidden size");
  sub->add_option("--ffn", f->ffn, "FFN hidden size (per expert)");
  sub->add_option("--heads", f->heads,
                  "Attention heads (KV heads follow when --kv-heads is absent and the preset's "
                  "exceed them)");
  sub->add_option("--kv-heads", f->kv_heads, "Key/value heads (GQA)");
  sub->add_option("--vocab", f->vocab, "Vocabulary size (padded to 128·tp)");
  sub->add_option("--experts", f->experts, "MoE experts per layer (0: dense)");
  sub->add_option("--top-k", f->top_k, "MoE experts per token");
  sub->add_option("--dropout", f->dropout, "Dropout probability (0 disables dropout ops)");
  sub->add_option("--seq", f->seq, "Sequence length (default: the preset's)");
  sub->add_option("--micro-batch", f->micro_batch, "Sequences per micro-batch")->capture_default_str();
  sub->add_option("--micro-batches", f->micro_batches, "Micro-batches per iteration")
      ->capture_default_str();
  sub->add_option("--tp", f->tp, "Tensor-parallel degree")->capture_default_str();
  sub->add_option("--dp", f->dp, "Data-parallel degree")->capture_default_str();
  sub->add_option("--zero", f->zero, "ZeRO stage 0-3 over the DP group")->capture_default_str();
  sub->add_option("--pp", f->pp, "Pipeline-parallel degree")->capture_default_str();
  sub->add_option("--pp-stage", f->pp_stage, "Pipeline stage of this trace")->capture_default_str();
  sub->add_flag("--recompute,!--no-recompute", f->recompute, "Full activation recomputation");
  sub->add_option("--dtype", f->dtype, "bf16, fp16 or fp32")->capture_default_str();
  sub->add_flag("--flash,!--no-flash", f->flash,
                "Flash attention (default) or classic attention with S×S tensors");
  sub->add_flag("--fp32-grad-accumulation", f->fp32_grads, "fp32 gradient buffers (Megatron main_grad)");
  sub->add_option("--seed", f->seed, "Seed of the MoE routing and of the --seq-lengths draw")
      ->capture_default_str();
  sub->add_option("--moe-imbalance", f->moe_imbalance, "Spread of per-expert load (σ)")
      ->capture_default_str();
  sub->add_flag("--inference", f->inference,
                "An inference request instead of training: prefill of --prompt tokens, then "
                "--generate decode steps over a growing KV cache (docs/synth.md)");
  fs->Int(sub, "--batch", &f->batch, "Sequences of the inference request (default 1)", 1,
          INT32_MAX);
  fs->Int(sub, "--prompt", &f->prompt,
          "Prompt tokens of the inference request (default: the preset's sequence length)", 1,
          INT64_MAX);
  fs->Int(sub, "--generate", &f->generate,
          "Decode steps of the inference request, one token each (default 256)", 0, INT32_MAX);
  sub->add_option("--flops-efficiency", f->flops_efficiency, "Fraction of peak FLOP/s reached")
      ->capture_default_str();
  sub->add_option("--hbm-efficiency", f->hbm_efficiency, "Fraction of HBM bandwidth reached")
      ->capture_default_str();
}

void AddSynthRunFlags(CLI::App* sub, SynthFlags* f) {
  sub->add_option("--iterations", f->iterations, "Iterations")->capture_default_str();
  sub->add_option("--loss-scale-skip-every", f->skip_every,
                  "Every k-th iteration overflows and skips the optimizer step (0: never)")
      ->capture_default_str();
  sub->add_option("--validation-every", f->validation_every,
                  "Every k-th iteration ends with a validation forward pass (0: never)")
      ->capture_default_str();
  sub->add_option("--validation-micro-batches", f->validation_micro_batches,
                  "Micro-batches per validation pass")
      ->capture_default_str();
  sub->add_option("--seq-lengths", f->seq_lengths,
                  "Per-iteration sequence lengths: L1,L2,... or LO:HI[:STEP] drawn per iteration "
                  "with --seed, or @FILE (one per iteration, in order)");
}

absl::StatusOr<SynthOptions> BuildSynthOptions(const SynthFlags& a, FlagSet* fs,
                                               ResolvedDevice* device) {
  SynthOptions o;
  DeviceDefaults defaults;
  defaults.preset = kSynthDefaultDevice;
  *device = ResolveDevice(a.device, defaults, {}, fs);
  absl::StatusOr<ModelConfig> model = ModelPreset(a.model);
  if (!model.ok()) fs->Add(std::string(model.status().message()));
  if (!a.inference) {
    const std::pair<bool, const char*> only[] = {
        {a.batch.has_value(), "--batch needs --inference (training: --micro-batch)"},
        {a.prompt.has_value(), "--prompt needs --inference (training: --seq)"},
        {a.generate.has_value(), "--generate needs --inference"},
    };
    for (const auto& [given, problem] : only) {
      if (given) fs->Add(problem);
    }
  } else if (a.seq) {
    fs->Add("--seq is for training traces; with --inference the prompt length is --prompt");
  }
  SWAPPLAN_RETURN_IF_ERROR(fs->Status());
  o.model = *std::move(model);
  o.device = device->model;
  o.device.reserve_bytes = 0;  // whatif keeps the reserve apart (WhatIfOptions)
  const DevicePresetInfo* preset =
      FindDevicePreset(a.device.device.value_or(kSynthDefaultDevice));
  o.npu_op_names = preset != nullptr && preset->vendor == DeviceVendor::kHuawei;
  ModelConfig& m = o.model;
  if (a.layers) m.layers = *a.layers;
  if (a.hidden) m.hidden_size = *a.hidden;
  if (a.ffn) m.ffn_hidden_size = *a.ffn;
  if (a.heads) {
    m.num_heads = *a.heads;
    if (!a.kv_heads && m.num_kv_heads > m.num_heads) m.num_kv_heads = m.num_heads;
  }
  if (a.kv_heads) m.num_kv_heads = *a.kv_heads;
  if (a.vocab) m.vocab_size = *a.vocab;
  if (a.experts) m.num_experts = *a.experts;
  if (a.top_k) m.experts_top_k = *a.top_k;
  if (a.dropout) m.dropout_probability = *a.dropout;
  if (a.layers || a.hidden || a.ffn || a.heads || a.kv_heads || a.vocab || a.experts) {
    m.name = absl::StrCat(m.name, "-custom");
  }
  o.seq_length_tokens = a.seq ? *a.seq : PresetSequenceLength(m);
  o.micro_batch_sequences = a.micro_batch;
  o.num_micro_batches = a.micro_batches;
  o.parallel.tensor_parallel = a.tp;
  o.parallel.data_parallel = a.dp;
  o.parallel.zero_stage = a.zero;
  o.parallel.pipeline_parallel = a.pp;
  o.parallel.pipeline_stage = a.pp_stage;
  o.recompute = a.recompute;
  if (!ParseSynthDType(a.dtype, &o.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("synth: --dtype '", a.dtype, "' is not bf16, fp16 or fp32"));
  }
  o.attention = a.flash ? AttentionKind::kFlash : AttentionKind::kClassic;
  o.fp32_grad_accumulation = a.fp32_grads;
  o.iterations = a.iterations;
  o.loss_scale_skip_every = a.skip_every;
  o.validation_every = a.validation_every;
  o.validation_micro_batches = a.validation_micro_batches;
  o.seed = a.seed;
  if (a.seq_lengths) {
    if (a.seq) {
      return absl::InvalidArgumentError(
          "synth: --seq and --seq-lengths exclude each other (--seq-lengths sets the lengths)");
    }
    SWAPPLAN_ASSIGN_OR_RETURN(o.seq_lengths, ParseSeqLengths(*a.seq_lengths));
    o.seq_length_tokens = o.seq_lengths.max();
  }
  o.moe_imbalance = a.moe_imbalance;
  o.flops_efficiency = a.flops_efficiency;
  o.hbm_efficiency = a.hbm_efficiency;
  if (a.inference) {
    o.inference = true;
    if (a.prompt) o.seq_length_tokens = *a.prompt;
    if (a.batch) o.micro_batch_sequences = static_cast<int32_t>(*a.batch);
    if (a.generate) o.generate_tokens = static_cast<int32_t>(*a.generate);
  }
  SWAPPLAN_RETURN_IF_ERROR(o.Validate());
  return o;
}

}  // namespace swapplan::cli
