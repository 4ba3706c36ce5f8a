// Generator: the synthesizer's op-by-op model of one rank's training
// iterations. One class, its methods split by responsibility:
//
//   generator.cc   construction, parameter inventory (with ZeRO sharding),
//                  metadata, the iteration loop and the 1F1B schedule
//   layer.cc       one transformer layer: forward (attention + dense MLP) and
//                  backward
//   moe.cc         the MoE MLP: router, top-k, permute, experts, combine
//   head.cc        embedding, final norm, LM head, cross entropy, pipeline
//                  send/recv, input copies
//   optimizer.cc   weight-gradient accumulation, gradient sync, ZeRO-3
//                  gathers, loss scaling, clipping, Adam
//
// Forward code runs in one of four modes. What is saved for backward depends
// on it; every intermediate that is not saved is freed right after its last
// forward consumer:
//
//   kTrain         save what backward needs (ACTIVATION), free the rest
//   kCheckpointed  full recomputation, first pass: save only the layer input
//   kRecompute     the re-run inside backward (phase BACKWARD): save all
//   kNoGrad        validation: save nothing, free the layer input too
//
// Saved tensors are freed by backward code after their last backward use.
#ifndef SWAPPLAN_SRC_SYNTH_GENERATOR_H_
#define SWAPPLAN_SRC_SYNTH_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "emitter.h"
#include "swapplan/synth/config.h"
#include "swapplan/synth/synth.h"
#include "swapplan/trace/builder.h"

namespace swapplan::synth_internal {

enum class Mode : uint8_t { kTrain, kCheckpointed, kRecompute, kNoGrad };

// A parameter tensor of this stage and its persistent companions.
struct Param {
  std::string name;               // "layers.3.mlp.fc1.weight"
  std::string short_name;         // "mlp.fc1.weight" (the name scope adds "layers.3.")
  std::vector<int64_t> shape;     // full (per TP rank) shape
  int64_t numel = 0;              // full elements
  int64_t shard_numel = 0;        // elements this rank owns for optimizer/ZeRO
  int32_t layer = 0;              // stage-local layer hint
  uint64_t param = kNone;         // persistent parameter (shard under ZeRO-3)
  uint64_t grad = kNone;          // persistent gradient buffer (shard under ZeRO >= 2)
  uint64_t master = kNone;        // fp32 master copy (mixed precision)
  uint64_t exp_avg = kNone;
  uint64_t exp_avg_sq = kNone;
  uint64_t gathered = kNone;      // ZeRO-3: the all-gathered full parameter, while live
};

// Parameter indices of one layer (-1: absent).
struct LayerParams {
  int norm1_w = -1, norm1_b = -1, qkv_w = -1, qkv_b = -1, proj_w = -1, proj_b = -1;
  int norm2_w = -1, norm2_b = -1, fc1_w = -1, fc1_b = -1, fc2_w = -1, fc2_b = -1;
  int router = -1;
  std::vector<int> expert_fc1, expert_fc2;
  std::vector<int> all;  // every parameter of the layer, in creation order
};

struct ExpertActs {
  int64_t tokens = 0;
  uint64_t g = kNone, sg = kNone, hm = kNone;
};

// What one layer's forward left for its backward (kNone when not saved).
struct LayerActs {
  uint64_t x = kNone;                        // layer input
  uint64_t mean1 = kNone, rstd1 = kNone, n1 = kNone;
  uint64_t qkv = kNone, q = kNone, k = kNone;
  uint64_t o = kNone, lse = kNone;           // flash
  uint64_t probs = kNone, attn_mask = kNone, probs_drop = kNone;  // classic
  uint64_t drop1_mask = kNone, r = kNone;
  uint64_t mean2 = kNone, rstd2 = kNone, n2 = kNone;
  uint64_t g = kNone, sg = kNone, hm = kNone;  // dense MLP (gelu: g, sg = gelu out)
  uint64_t drop2_mask = kNone;
  // MoE
  uint64_t router_probs = kNone, topk_w = kNone, topk_i = kNone, xp = kNone, ye = kNone;
  std::vector<ExpertActs> experts;
  // Recomputed layer output, held by the checkpoint until its backward ends.
  uint64_t recompute_out = kNone;
};

// Embedding / head state of one micro-batch.
struct StageActs {
  uint64_t tokens = kNone, labels = kNone, emb_drop_mask = kNone;
  uint64_t x_last = kNone, mean_f = kNone, rstd_f = kNone, nf = kNone;
  uint64_t softmax = kNone, loss = kNone;
  std::vector<LayerActs> layers;
};

class Generator {
 public:
  Generator(const SynthOptions& options, TraceBuilder* builder);
  // Emits every iteration. Returns the emitter's status (Internal on a bug).
  // `progress` (may be empty) after each iteration.
  absl::Status Run(const SynthProgress& progress);

 private:
  // generator.cc
  void SetMetadata();
  void CreateParams();
  // Adds a parameter with its gradient buffer, master copy and moments,
  // sharded as the ZeRO stage says. `scope` is "layers.3." / "embed." / "head.".
  int AddParam(absl::string_view scope, absl::string_view name, std::vector<int64_t> shape,
               int32_t layer);
  void Iteration(int32_t it);
  void ForwardMicroBatch(int32_t mb, Mode mode);
  void BackwardMicroBatch(int32_t mb, bool last_micro_batch);
  void ValidationPass(int32_t pass);
  // Layer hint and name scope "layers.<global layer>." for layer `l` of the stage.
  void EnterLayer(int32_t l);

  // layer.cc
  uint64_t LayerForward(int32_t l, uint64_t x, Mode mode, LayerActs& a);
  uint64_t LayerBackward(int32_t l, LayerActs& a, uint64_t dout);
  // Attention block up to the output projection (before the TP all-reduce);
  // returns its output.
  uint64_t AttentionForward(int32_t l, Mode mode, LayerActs& a);
  uint64_t AttentionBackward(int32_t l, LayerActs& a, uint64_t gy, bool free_gy);
  uint64_t DenseMlpForward(int32_t l, Mode mode, LayerActs& a);
  // MLP backward from the gradient of its output; frees `gy` after its last
  // use when `free_gy`. Returns the gradient of the MLP input (norm output).
  uint64_t DenseMlpBackward(int32_t l, LayerActs& a, uint64_t gy, bool free_gy);
  // Norm forward: returns the output (saved when `save`), sets *mean / *rstd
  // (kNone unless saved).
  uint64_t NormForward(Site rms, Site ln, uint64_t x, int w, int b, bool save,
                       absl::string_view name, uint64_t* mean, uint64_t* rstd);
  // Norm backward; frees gy, x and the statistics; returns the input grad.
  uint64_t NormBackward(Site rms, Site ln, uint64_t gy, uint64_t x, uint64_t mean, uint64_t rstd,
                        int w, int b, absl::string_view name);

  // moe.cc
  uint64_t MoeForward(int32_t l, Mode mode, LayerActs& a);
  uint64_t MoeBackward(int32_t l, LayerActs& a, uint64_t gy, bool free_gy);

  // head.cc
  uint64_t StageInput(int32_t mb, Mode mode, StageActs& s);
  // After the word-embedding lookup `x`: its TP all-reduce and, for models
  // with learned positions, their lookup and the add (the sum a `sum_kind`
  // tensor). Returns the embedding output. Shared by training and inference.
  uint64_t FinishEmbedding(uint64_t x, TensorKind sum_kind);
  void StageOutput(int32_t mb, uint64_t x, Mode mode, StageActs& s);
  uint64_t HeadBackward(int32_t mb, StageActs& s);
  void EmbeddingBackward(int32_t mb, StageActs& s, uint64_t g);

  // inference.cc (SynthOptions::inference)
  // One request: prefill, then the decode steps.
  void InferenceIteration(int32_t it);
  // Token ids (prefill: copied from the host; decode: the previous step's
  // sample, freed here) → embeddings [s,b,h].
  uint64_t InferenceEmbed(uint64_t tokens);
  // Layer `l` over the current pass (`step` -1: prefill, else decode step);
  // frees `x`, returns the layer output.
  uint64_t InferenceLayer(int32_t l, uint64_t x, int32_t step);
  // QKV, rotary, cache writes, attention over the cache, output projection.
  uint64_t InferenceAttention(int32_t l, uint64_t n1, int32_t step);
  // Final norm, LM head on the last position, [TP gather], argmax: the next
  // token ids [b] (int64). Frees `x`.
  uint64_t InferenceHead(uint64_t x);

  // optimizer.cc
  // Weight gradient of parameter `p` computed by `site` from `inputs`
  // (flops of the GEMM). Fused into the gradient buffer for GEMM weights under
  // ZeRO 0/1; otherwise a transient full gradient, then Accumulate.
  void WeightGrad(Site site, Ids inputs, int p, double flops, bool gemm);
  void Accumulate(uint64_t tmp_grad, int p);
  void GradSync(absl::Span<const int> params);
  void Gather(absl::Span<const int> params);
  void Release(absl::Span<const int> params);
  void OptimizerStep(int32_t it);
  // The tensor a forward/backward op reads for parameter `p`.
  uint64_t W(int p) const {
    return params_[p].gathered != kNone ? params_[p].gathered : params_[p].param;
  }

  // Tensor helpers: kind ACTIVATION when `saved` in a saving mode, else
  // TEMPORARY.
  static bool Saves(Mode m) { return m == Mode::kTrain || m == Mode::kRecompute; }
  uint64_t Act(Mode m, bool saved, DType dt, Shape shape, absl::string_view name,
               absl::string_view suffix = {}) {
    return e_.New(Saves(m) && saved ? TensorKind::kActivation : TensorKind::kTemporary, dt, shape,
                  name, suffix);
  }
  uint64_t Grad(DType dt, Shape shape, absl::string_view name, absl::string_view suffix = {}) {
    return e_.New(TensorKind::kGradient, dt, shape, name, suffix);
  }
  // Frees `t` unless the mode saves it.
  void Done(Mode m, uint64_t t) {
    if (!Saves(m)) e_.Free(t);
  }

  const SynthOptions& o_;
  Emitter e_;
  TraceBuilder* b_;

  // Derived sizes.
  int64_t s_, bsz_, tokens_, h_, heads_, kv_heads_, d_, ffn_, vocab_;
  int32_t tp_, dp_, zero_, layers_, layer_offset_;
  DType dt_, grad_dt_;
  int32_t iteration_ = 0;
  int32_t pass_ = 0;  // micro-batch (or validation pass) being emitted: MoE routing key

  std::vector<Param> params_;
  std::vector<LayerParams> layer_params_;
  std::vector<std::string> layer_scopes_;  // "layers.<global layer>." per stage layer
  int emb_ = -1, pos_emb_ = -1, final_norm_w_ = -1, final_norm_b_ = -1, head_ = -1;
  std::vector<int> embedding_params_, head_params_;
  // head_params_ without the word embeddings a tied head shares with the
  // first stage (their gradient is complete only after the embedding's
  // backward): the head's unit of gradient sync and parameter all-gather.
  std::vector<int> head_own_params_;
  std::vector<uint64_t> all_grads_;  // every persistent gradient buffer
  uint64_t rope_table_ = kNone, pos_ids_ = kNone, causal_mask_ = kNone;
  uint64_t loss_scale_ = kNone, growth_tracker_ = kNone;
  // Inference: per stage layer, the KV cache of the request — the prompt's
  // K and V (written by the prefill, read-only afterwards) and the decode
  // segment's (one slot written per decode step; kNone when generate = 0).
  struct KvCache {
    uint64_t k_prompt = kNone, v_prompt = kNone, k_decode = kNone, v_decode = kNone;
  };
  std::vector<KvCache> kv_;
  std::vector<StageActs> mb_;  // per training micro-batch
  StageActs validation_;
};

}  // namespace swapplan::synth_internal

#endif  // SWAPPLAN_SRC_SYNTH_GENERATOR_H_
