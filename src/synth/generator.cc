// Generator: construction, parameter inventory, metadata, the iteration loop
// and the 1F1B schedule. See generator.h.
#include "generator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace swapplan::synth_internal {

Generator::Generator(const SynthOptions& options, TraceBuilder* builder)
    : o_(options), e_(builder, options), b_(builder) {
  const ModelConfig& m = o_.model;
  tp_ = o_.parallel.tensor_parallel;
  dp_ = o_.parallel.data_parallel;
  zero_ = o_.parallel.zero_stage;
  s_ = o_.seq_length_tokens;
  bsz_ = o_.micro_batch_sequences;
  tokens_ = s_ * bsz_;
  h_ = m.hidden_size;
  heads_ = m.num_heads / tp_;
  kv_heads_ = m.num_kv_heads / tp_;
  d_ = m.head_dim();
  ffn_ = m.ffn_hidden_size / tp_;
  vocab_ = o_.padded_vocab() / tp_;
  layers_ = o_.stage_layers();
  layer_offset_ = o_.parallel.pipeline_stage * layers_;
  dt_ = o_.dtype;
  grad_dt_ = o_.fp32_grad_accumulation ? DType::kFloat32 : dt_;
}

int Generator::AddParam(absl::string_view scope, absl::string_view name,
                        std::vector<int64_t> shape, int32_t layer) {
  Param p;
  p.short_name = std::string(name);
  p.name = absl::StrCat(scope, name);
  p.numel = Numel(shape);
  p.layer = layer;
  // A rank owns ceil(numel / dp) elements of every sharded tensor (the flat
  // buffer is padded to a multiple of dp). With dp = 1 nothing is sharded.
  const int64_t shard = (p.numel + dp_ - 1) / dp_;
  p.shard_numel = zero_ >= 1 ? shard : p.numel;
  const int64_t shard_shape[] = {shard};
  const int64_t opt_shape[] = {p.shard_numel};
  const bool shard_params = zero_ >= 3 && dp_ > 1;
  const bool shard_grads = zero_ >= 2 && dp_ > 1;
  p.param = e_.NewPersistent(TensorKind::kParameter, dt_,
                             shard_params ? Shape(shard_shape) : Shape(shape), p.name);
  if (o_.inference) {  // weights only: no gradients, no optimizer states
    p.shape = std::move(shape);
    params_.push_back(std::move(p));
    return static_cast<int>(params_.size()) - 1;
  }
  p.grad = e_.NewPersistent(TensorKind::kGradient, grad_dt_,
                            shard_grads ? Shape(shard_shape) : Shape(shape),
                            o_.tensor_names ? absl::StrCat(p.name, ".grad") : "");
  if (o_.mixed_precision()) {
    p.master = e_.NewPersistent(TensorKind::kOptimizerState, DType::kFloat32, opt_shape,
                                o_.tensor_names ? absl::StrCat(p.name, ".master") : "");
  }
  p.exp_avg = e_.NewPersistent(TensorKind::kOptimizerState, DType::kFloat32, opt_shape,
                               o_.tensor_names ? absl::StrCat(p.name, ".exp_avg") : "");
  p.exp_avg_sq = e_.NewPersistent(TensorKind::kOptimizerState, DType::kFloat32, opt_shape,
                                  o_.tensor_names ? absl::StrCat(p.name, ".exp_avg_sq") : "");
  p.shape = std::move(shape);
  all_grads_.push_back(p.grad);
  params_.push_back(std::move(p));
  return static_cast<int>(params_.size()) - 1;
}

void Generator::CreateParams() {
  const ModelConfig& m = o_.model;
  const bool ln = m.norm == NormKind::kLayerNorm;
  const int64_t qkv_out = (heads_ + 2 * kv_heads_) * d_;
  if (o_.first_stage()) {
    emb_ = AddParam("embed.", "word_embeddings.weight", {vocab_, h_}, 0);
    embedding_params_.push_back(emb_);
    if (m.position == PositionKind::kLearned) {
      pos_emb_ = AddParam("embed.", "position_embeddings.weight", {m.max_position_embeddings, h_}, 0);
      embedding_params_.push_back(pos_emb_);
    }
  }
  layer_params_.resize(layers_);
  for (int32_t l = 0; l < layers_; ++l) {
    LayerParams& P = layer_params_[l];
    const std::string scope = absl::StrCat("layers.", layer_offset_ + l, ".");
    layer_scopes_.push_back(scope);
    auto add = [&](absl::string_view name, std::vector<int64_t> shape) {
      int p = AddParam(scope, name, std::move(shape), l);
      P.all.push_back(p);
      return p;
    };
    P.norm1_w = add("attn.norm.weight", {h_});
    if (ln) P.norm1_b = add("attn.norm.bias", {h_});
    P.qkv_w = add("attn.qkv.weight", {qkv_out, h_});
    if (m.bias) P.qkv_b = add("attn.qkv.bias", {qkv_out});
    P.proj_w = add("attn.proj.weight", {h_, heads_ * d_});
    if (m.bias) P.proj_b = add("attn.proj.bias", {h_});
    P.norm2_w = add("mlp.norm.weight", {h_});
    if (ln) P.norm2_b = add("mlp.norm.bias", {h_});
    if (m.num_experts > 0) {
      P.router = add("moe.router.weight", {m.num_experts, h_});
      for (int32_t e = 0; e < m.num_experts; ++e) {
        P.expert_fc1.push_back(add(absl::StrCat("moe.e", e, ".fc1.weight"), {2 * ffn_, h_}));
        P.expert_fc2.push_back(add(absl::StrCat("moe.e", e, ".fc2.weight"), {h_, ffn_}));
      }
    } else {
      const int64_t fc1_out = m.mlp == MlpKind::kGatedSilu ? 2 * ffn_ : ffn_;
      P.fc1_w = add("mlp.fc1.weight", {fc1_out, h_});
      if (m.bias) P.fc1_b = add("mlp.fc1.bias", {fc1_out});
      P.fc2_w = add("mlp.fc2.weight", {h_, ffn_});
      if (m.bias) P.fc2_b = add("mlp.fc2.bias", {h_});
    }
  }
  if (o_.last_stage()) {
    const int32_t last = layers_ - 1;
    final_norm_w_ = AddParam("head.", "norm.weight", {h_}, last);
    head_params_.push_back(final_norm_w_);
    if (ln) {
      final_norm_b_ = AddParam("head.", "norm.bias", {h_}, last);
      head_params_.push_back(final_norm_b_);
    }
    if (m.tied_embeddings && o_.first_stage()) {
      head_ = emb_;  // the LM head reads the word embeddings
    } else {
      // Untied head, or Megatron's copy of the embedding on the last stage
      // (word_embeddings_for_head, kept equal by an all-reduce of gradients).
      head_ = AddParam("head.", m.tied_embeddings ? "word_embeddings_for_head.weight"
                                                   : "output_layer.weight",
                       {vocab_, h_}, last);
    }
    head_params_.push_back(head_);
    for (int p : head_params_) {
      if (p != emb_) head_own_params_.push_back(p);
    }
  }
  // Persistent buffers.
  if (m.position == PositionKind::kRotary) {
    const int64_t shape[] = {o_.max_positions(), d_};
    rope_table_ = e_.NewPersistent(TensorKind::kOther, DType::kFloat32, shape, "rope.freqs");
  }
  if (m.position == PositionKind::kLearned && o_.first_stage()) {
    const int64_t shape[] = {o_.max_positions()};
    pos_ids_ = e_.NewPersistent(TensorKind::kOther, DType::kInt64, shape, "position_ids");
  }
  if (o_.attention == AttentionKind::kClassic) {
    const int64_t shape[] = {s_, s_};
    causal_mask_ = e_.NewPersistent(TensorKind::kOther, DType::kBool, shape, "causal_mask");
  }
  if (o_.loss_scaling() && !o_.inference) {
    const int64_t one[] = {1};
    loss_scale_ = e_.NewPersistent(TensorKind::kOther, DType::kFloat32, one, "loss_scale");
    growth_tracker_ = e_.NewPersistent(TensorKind::kOther, DType::kInt32, one, "growth_tracker");
  }
}

void Generator::SetMetadata() {
  TraceMetadata& md = b_->metadata();
  md.device_name = o_.device.name;
  md.device_memory_bytes = o_.device.capacity_bytes;
  md.h2d_bandwidth_bytes_per_s = o_.device.h2d_bandwidth_bytes_per_s;
  md.d2h_bandwidth_bytes_per_s = o_.device.d2h_bandwidth_bytes_per_s;
  md.framework = std::string(o_.npu_op_names ? absl::string_view("pytorch+torch_npu")
                                                    : absl::string_view("pytorch")) +
                 " (synthesized)";
  md.recorder = "swapplan-synth";
  md.recorder_version = "1";
  md.model_name = o_.model.name;
  md.model_layers = layers_;
  const ModelConfig& m = o_.model;
  const ParallelConfig& p = o_.parallel;
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  md.attributes = {
      {"synth.attention", o_.attention == AttentionKind::kFlash ? "flash" : "classic"},
      {"synth.dp", absl::StrCat(p.data_parallel)},
      {"synth.dropout", absl::StrCat(m.dropout_probability)},
      {"synth.dtype", std::string(DTypeName(o_.dtype))},
      {"synth.experts", absl::StrCat(m.num_experts)},
      {"synth.experts_top_k", absl::StrCat(m.experts_top_k)},
      {"synth.ffn", absl::StrCat(m.ffn_hidden_size)},
      {"synth.flops_efficiency", absl::StrCat(o_.flops_efficiency)},
      {"synth.fp32_grad_accumulation", b(o_.fp32_grad_accumulation)},
      {"synth.hbm_bandwidth_bytes_per_s", absl::StrCat(o_.device.memory_bandwidth_bytes_per_s)},
      {"synth.hbm_efficiency", absl::StrCat(o_.hbm_efficiency)},
      {"synth.heads", absl::StrCat(m.num_heads)},
      {"synth.hidden", absl::StrCat(m.hidden_size)},
      {"synth.iterations", absl::StrCat(o_.iterations)},
      {"synth.kv_heads", absl::StrCat(m.num_kv_heads)},
      {"synth.layer_offset", absl::StrCat(layer_offset_)},
      {"synth.layers", absl::StrCat(m.layers)},
      {"synth.link_bandwidth_bytes_per_s", absl::StrCat(o_.device.interconnect_bandwidth_bytes_per_s)},
      {"synth.loss_scale_skip_every", absl::StrCat(o_.loss_scale_skip_every)},
      {"synth.loss_scaling", b(o_.loss_scaling())},
      {"synth.micro_batch", absl::StrCat(o_.micro_batch_sequences)},
      {"synth.micro_batches", absl::StrCat(o_.num_micro_batches)},
      {"synth.moe_imbalance", absl::StrCat(o_.moe_imbalance)},
      {"synth.peak_flops_per_s", absl::StrCat(o_.device.peak_flops_per_s)},
      {"synth.pp", absl::StrCat(p.pipeline_parallel)},
      {"synth.pp_stage", absl::StrCat(p.pipeline_stage)},
      {"synth.recompute", b(o_.recompute)},
      {"synth.seed", absl::StrCat(o_.seed)},
      {"synth.seq", absl::StrCat(o_.seq_length_tokens)},
      {"synth.tp", absl::StrCat(p.tensor_parallel)},
      {"synth.validation_every", absl::StrCat(o_.validation_every)},
      {"synth.validation_micro_batches", absl::StrCat(o_.validation_micro_batches)},
      {"synth.vocab", absl::StrCat(m.vocab_size)},
      {"synth.vocab_padded", absl::StrCat(o_.padded_vocab())},
      {"synth.zero", absl::StrCat(p.zero_stage)},
  };
  if (!o_.seq_lengths.empty()) {
    md.attributes.emplace_back("synth.seq_lengths", o_.seq_lengths.ToString());
  }
  if (o_.inference) {
    md.attributes.emplace_back("synth.inference", "true");
    md.attributes.emplace_back("synth.generate", absl::StrCat(o_.generate_tokens));
  }
  std::sort(md.attributes.begin(), md.attributes.end());
}

void Generator::EnterLayer(int32_t l) {
  e_.SetLayer(l);
  if (o_.tensor_names) e_.SetScope(layer_scopes_[l]);
}

absl::Status Generator::Run(const SynthProgress& progress) {
  SetMetadata();
  CreateParams();
  mb_.resize(o_.num_micro_batches);
  for (StageActs& s : mb_) s.layers.resize(layers_);
  validation_.layers.resize(layers_);
  for (int32_t it = 0; it < o_.iterations && e_.status().ok(); ++it) {
    if (o_.inference) {
      InferenceIteration(it);
    } else {
      Iteration(it);
    }
    if (it == 0 && o_.iterations > 1) {
      // Size every array once from the first iteration (the others differ
      // only by skipped steps, validation passes and routing), instead of
      // letting them double: page faults dominate otherwise.
      const double f = static_cast<double>(o_.iterations) * (o_.validation_every > 0 ? 1.3 : 1.02);
      auto scale = [f](int64_t n) { return static_cast<int64_t>(static_cast<double>(n) * f); };
      const Emitter::Counts& c = e_.counts();
      b_->Reserve(scale(c.tensors), scale(c.ops), scale(c.uses), scale(c.events));
      e_.ReserveTensors(scale(c.tensors));
    }
    if (progress) progress(it + 1, o_.iterations);
  }
  return e_.status();
}

// One iteration of stage r under Megatron's 1F1B schedule
// (forward_backward_pipelining_without_interleaving), M micro-batches,
// W = min(pp - r - 1, M) warm-up forwards:
//
//   stage r=0 of pp=3, M=4 (W=2):  F0 F1 | F2 B0 F3 B1 | B2 B3 | step
//   stage r=2 (last),  M=4 (W=0):        | F0 B0 F1 B1 F2 B2 F3 B3 | step
//
// so stage r holds at most min(pp - r, M) micro-batches' activations. With
// pp = 1 this is plain gradient accumulation (F0 B0 F1 B1 ...).
void Generator::Iteration(int32_t it) {
  iteration_ = it;
  // This iteration's sequence length (the persistent buffers keep the
  // longest, as a rotary cache built for the maximum position does).
  s_ = o_.SeqLengthOf(it);
  tokens_ = s_ * bsz_;
  e_.BeginIteration();
  const int32_t m = o_.num_micro_batches;
  const int32_t warmup =
      std::min(o_.parallel.pipeline_parallel - o_.parallel.pipeline_stage - 1, m);
  const Mode fwd = o_.recompute ? Mode::kCheckpointed : Mode::kTrain;
  for (int32_t i = 0; i < warmup; ++i) ForwardMicroBatch(i, fwd);
  for (int32_t i = 0; i < m - warmup; ++i) {
    ForwardMicroBatch(warmup + i, fwd);
    BackwardMicroBatch(i, i == m - 1);
  }
  for (int32_t i = m - warmup; i < m; ++i) BackwardMicroBatch(i, i == m - 1);
  OptimizerStep(it);
  if (o_.validates(it)) {
    for (int32_t j = 0; j < o_.validation_micro_batches; ++j) ValidationPass(j);
  }
  e_.EndIteration();
}

void Generator::ForwardMicroBatch(int32_t mb, Mode mode) {
  pass_ = mb;
  e_.SetPhase(Phase::kForward);
  e_.SetMicroBatch(mb, /*validation=*/false);
  e_.SetStackOffset(0);
  StageActs& s = mb_[mb];
  uint64_t x = StageInput(mb, mode, s);
  for (int32_t l = 0; l < layers_; ++l) {
    EnterLayer(l);
    Gather(layer_params_[l].all);
    x = LayerForward(l, x, mode, s.layers[l]);
    Release(layer_params_[l].all);
  }
  StageOutput(mb, x, mode, s);
}

void Generator::BackwardMicroBatch(int32_t mb, bool last_micro_batch) {
  pass_ = mb;
  e_.SetPhase(Phase::kBackward);
  e_.SetMicroBatch(mb, /*validation=*/false);
  e_.SetStackOffset(0);
  StageActs& s = mb_[mb];
  uint64_t g = HeadBackward(mb, s);
  if (last_micro_batch && o_.last_stage()) GradSync(head_own_params_);
  for (int32_t l = layers_ - 1; l >= 0; --l) {
    EnterLayer(l);
    Gather(layer_params_[l].all);
    if (o_.recompute) {
      // Megatron's CheckpointFunction.backward: re-run the layer's forward
      // from its saved input, then backpropagate through it.
      e_.SetStackOffset(kRecomputeStackOffset);
      LayerForward(l, s.layers[l].x, Mode::kRecompute, s.layers[l]);
      e_.SetStackOffset(0);
      EnterLayer(l);
    }
    g = LayerBackward(l, s.layers[l], g);
    Release(layer_params_[l].all);
    if (last_micro_batch) GradSync(layer_params_[l].all);
  }
  EmbeddingBackward(mb, s, g);
  if (last_micro_batch && o_.first_stage()) GradSync(embedding_params_);
  if (last_micro_batch && o_.model.tied_embeddings && o_.parallel.pipeline_parallel > 1 &&
      (o_.first_stage() || o_.last_stage())) {
    // The first stage's embedding and the last stage's copy for the head
    // all-reduce their gradients (Megatron _allreduce_word_embedding_grads).
    const uint64_t grad = params_[o_.first_stage() ? emb_ : head_].grad;
    const uint64_t ids[] = {grad};
    e_.Comm(Site::kEmbTieAllReduce, ids, ids, static_cast<double>(e_.Bytes(grad)), 2);
  }
}

void Generator::ValidationPass(int32_t pass) {
  const int32_t mb = o_.num_micro_batches + pass;
  pass_ = mb;
  e_.SetPhase(Phase::kOther);
  e_.SetMicroBatch(mb, /*validation=*/true);
  e_.SetStackOffset(kValidationStackOffset);
  uint64_t x = StageInput(mb, Mode::kNoGrad, validation_);
  for (int32_t l = 0; l < layers_; ++l) {
    EnterLayer(l);
    Gather(layer_params_[l].all);
    x = LayerForward(l, x, Mode::kNoGrad, validation_.layers[l]);
    Release(layer_params_[l].all);
  }
  StageOutput(mb, x, Mode::kNoGrad, validation_);
  e_.SetStackOffset(0);
}

}  // namespace swapplan::synth_internal
