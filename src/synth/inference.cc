// Inference requests (SynthOptions::inference): one iteration is one request
// of b sequences, as a serving engine (vLLM, Hugging Face generate with a
// static cache) issues it in eager mode — forward only, no dropout, nothing
// saved for a backward pass.
//
//   prefill (micro-batch 0, names "prefill."): tokens [b,P] copied from the
//     host → embedding → per layer: norm → QKV → rotary → K, V written into
//     the layer's prompt cache (index_copy_) → causal flash attention over it
//     → projection → [TP all-reduce] → residual → norm → MLP → [TP
//     all-reduce] → residual; final norm → the last position (index_select)
//     → LM head → [TP all-gather of the logits] → argmax: token ids [b].
//   decode step t = 0..G-1 (micro-batch t+1, names "decode<t>.", stack ids
//     +3000): the same over one token per sequence (s = 1), whose K and V go
//     into slot t of the layer's decode cache and whose attention reads the
//     prompt cache and the decode cache's first t+1 slots.
//
// The KV cache of one layer is four tensors (kind ACTIVATION, not
// persistent: they live within the request), each [b, tokens, kv-heads/t,
// head-dim] in the model dtype:
//
//   k_prompt, v_prompt  [b, P, ...]  written once by the prefill (ALLOC
//                                    there), read by the prefill attention
//                                    and by every decode step's attention at
//                                    that layer: read-only after the prefill
//   k_decode, v_decode  [b, G, ...]  preallocated for the G generated
//                                    tokens (ALLOC at decode step 0, as a
//                                    static cache or the request's last
//                                    blocks of a paged cache), slot t written
//                                    in place by step t
//
// Every cache tensor is freed after its last use, the last decode step's
// attention at its layer (the request ends). Splitting the prompt's part
// from the generated part keeps what is written once apart from what is
// written every step, so a planner can offload the prompt cache with one
// Store and Prefetch it back read-only before each step (a `clean` Detach
// afterwards), and the checker and simulator account exactly those bytes;
// one tensor per layer written every step would make every window dirty.
//
// Durations: the roofline of emitter.h. Decode ops are memory-bound: a GEMM
// over b tokens reads its whole weight; the decode attention reads
// b·(P+t+1)·kv·d elements of K and of V (its bytes), 4·b·a·(P+t+1)·d FLOPs.
#include "absl/strings/str_cat.h"
#include "generator.h"

namespace swapplan::synth_internal {

void Generator::InferenceIteration(int32_t it) {
  iteration_ = it;
  e_.BeginIteration();
  e_.SetPhase(Phase::kForward);
  e_.SetStackOffset(0);
  const int64_t prompt = o_.seq_length_tokens;
  const int32_t steps = o_.generate_tokens;
  // The request's KV cache (declared now, allocated when first written).
  kv_.assign(layers_, KvCache{});
  e_.SetPass(0, "kv.");
  for (int32_t l = 0; l < layers_; ++l) {
    EnterLayer(l);
    KvCache& c = kv_[l];
    const int64_t p_shape[] = {bsz_, prompt, kv_heads_, d_};
    c.k_prompt = e_.New(TensorKind::kActivation, dt_, p_shape, "attn.k_cache.prompt");
    c.v_prompt = e_.New(TensorKind::kActivation, dt_, p_shape, "attn.v_cache.prompt");
    if (steps > 0) {
      const int64_t g_shape[] = {bsz_, int64_t{steps}, kv_heads_, d_};
      c.k_decode = e_.New(TensorKind::kActivation, dt_, g_shape, "attn.k_cache.decode");
      c.v_decode = e_.New(TensorKind::kActivation, dt_, g_shape, "attn.v_cache.decode");
    }
  }
  uint64_t tokens = kNone;
  for (int32_t step = -1; step < steps; ++step) {
    const int32_t pass = step + 1;
    pass_ = pass;
    s_ = step < 0 ? prompt : 1;
    tokens_ = s_ * bsz_;
    e_.SetPass(pass, step < 0 ? std::string("prefill.") : absl::StrCat("decode", step, "."));
    e_.SetStackOffset(step < 0 ? 0 : kDecodeStackOffset);
    uint64_t x = InferenceEmbed(tokens);
    for (int32_t l = 0; l < layers_; ++l) {
      EnterLayer(l);
      x = InferenceLayer(l, x, step);
    }
    tokens = InferenceHead(x);
  }
  e_.Free(tokens);  // the last sampled tokens: returned to the caller
  e_.SetStackOffset(0);
  s_ = o_.seq_length_tokens;
  tokens_ = s_ * bsz_;
  e_.EndIteration();
}

uint64_t Generator::InferenceEmbed(uint64_t tokens) {
  e_.SetLayer(0);
  const int64_t act[] = {s_, bsz_, h_};
  if (tokens == kNone) {
    if (o_.tensor_names) e_.SetScope("input.");
    const int64_t ids[] = {bsz_, s_};
    tokens = e_.New(TensorKind::kInput, DType::kInt64, ids, "tokens");
    const uint64_t out[] = {tokens};
    e_.Comm(Site::kTokensCopy, {}, out, static_cast<double>(e_.Bytes(tokens)), 1);
  }
  if (o_.tensor_names) e_.SetScope("embed.");
  uint64_t x = e_.New(TensorKind::kTemporary, dt_, act, "word_embeddings.out");
  {
    const uint64_t in[] = {tokens, W(emb_)};
    const uint64_t out[] = {x};
    e_.Op(Site::kEmbedding, in, out, 0,
          static_cast<double>(e_.Bytes(tokens) + 2 * e_.Bytes(x)));
  }
  e_.Free(tokens);
  return FinishEmbedding(x, TensorKind::kTemporary);
}

uint64_t Generator::InferenceLayer(int32_t l, uint64_t x, int32_t step) {
  const LayerParams& P = layer_params_[l];
  const int64_t act[] = {s_, bsz_, h_};
  LayerActs a;
  a.n1 = NormForward(Site::kRmsNorm1, Site::kLayerNorm1, x, P.norm1_w, P.norm1_b, false,
                     "attn.norm", &a.mean1, &a.rstd1);
  const uint64_t y1 = InferenceAttention(l, a.n1, step);
  if (tp_ > 1) {
    const uint64_t io[] = {y1};
    e_.Comm(Site::kTpAllReduceAttn, io, io, static_cast<double>(e_.Bytes(y1)), tp_);
  }
  a.r = e_.New(TensorKind::kTemporary, dt_, act, "resid1");
  {
    const uint64_t in[] = {x, y1};
    const uint64_t out[] = {a.r};
    e_.Op(Site::kResidual1, in, out);
  }
  e_.Free(y1);
  e_.Free(x);
  a.n2 = NormForward(Site::kRmsNorm2, Site::kLayerNorm2, a.r, P.norm2_w, P.norm2_b, false,
                     "mlp.norm", &a.mean2, &a.rstd2);
  // The MLPs free their input (n2) and intermediates in kNoGrad mode.
  const uint64_t y2 = o_.model.num_experts > 0 ? MoeForward(l, Mode::kNoGrad, a)
                                                : DenseMlpForward(l, Mode::kNoGrad, a);
  if (tp_ > 1) {
    const uint64_t io[] = {y2};
    e_.Comm(Site::kTpAllReduceMlp, io, io, static_cast<double>(e_.Bytes(y2)), tp_);
  }
  const uint64_t out_t = e_.New(TensorKind::kTemporary, dt_, act, "out");
  {
    const uint64_t in[] = {a.r, y2};
    const uint64_t out[] = {out_t};
    e_.Op(Site::kResidual2, in, out);
  }
  e_.Free(y2);
  e_.Free(a.r);
  return out_t;
}

uint64_t Generator::InferenceAttention(int32_t l, uint64_t n1, int32_t step) {
  const LayerParams& P = layer_params_[l];
  const KvCache& c = kv_[l];
  const bool rotary = o_.model.position == PositionKind::kRotary;
  const bool prefill = step < 0;
  const int64_t qkv_out = (heads_ + 2 * kv_heads_) * d_;
  const double t = static_cast<double>(tokens_);
  const uint64_t qkv = [&] {
    const int64_t shape[] = {s_, bsz_, qkv_out};
    const uint64_t out_t = e_.New(TensorKind::kTemporary, dt_, shape, "attn.qkv");
    uint64_t in[3] = {n1, W(P.qkv_w), kNone};
    if (P.qkv_b >= 0) in[2] = W(P.qkv_b);
    const uint64_t out[] = {out_t};
    e_.Op(P.qkv_b >= 0 ? Site::kQkvBias : Site::kQkv, Ids(in, P.qkv_b >= 0 ? 3 : 2), out,
          2 * t * static_cast<double>(h_ * qkv_out));
    return out_t;
  }();
  e_.Free(n1);
  // q and k: rotated copies, or views of qkv (learned positions).
  uint64_t q = qkv, k = qkv;
  if (rotary) {
    const int64_t qs[] = {s_, bsz_, heads_, d_};
    const int64_t ks[] = {s_, bsz_, kv_heads_, d_};
    q = e_.New(TensorKind::kTemporary, dt_, qs, "attn.q_rot");
    k = e_.New(TensorKind::kTemporary, dt_, ks, "attn.k_rot");
    const uint64_t in[] = {qkv, rope_table_};
    const uint64_t oq[] = {q};
    const uint64_t ok[] = {k};
    e_.Op(Site::kRopeQ, in, oq, 0, static_cast<double>(2 * e_.Bytes(q)));
    e_.Op(Site::kRopeK, in, ok, 0, static_cast<double>(2 * e_.Bytes(k)));
  }
  // This pass's K and V into the cache (prefill: the whole prompt; decode:
  // one slot): each reads and writes s·b·kv·d elements.
  const double slot = static_cast<double>(s_ * bsz_ * kv_heads_ * d_ * DTypeBytes(dt_));
  {
    const uint64_t in[] = {k};
    const uint64_t out[] = {prefill ? c.k_prompt : c.k_decode};
    e_.Op(Site::kKvWriteK, in, out, 0, 2 * slot);
  }
  {
    const uint64_t in[] = {qkv};
    const uint64_t out[] = {prefill ? c.v_prompt : c.v_decode};
    e_.Op(Site::kKvWriteV, in, out, 0, 2 * slot);
  }
  if (rotary) e_.Free(k);
  const int64_t o_shape[] = {s_, bsz_, heads_ * d_};
  const uint64_t o = e_.New(TensorKind::kTemporary, dt_, o_shape, "attn.core");
  const double ba = static_cast<double>(bsz_ * heads_);
  const double dd = static_cast<double>(d_);
  if (prefill) {
    // Causal: QK^T and PV are 2·b·a·P²·d FLOPs each, half skipped by the mask.
    const double p = static_cast<double>(s_);
    const uint64_t in[] = {q, c.k_prompt, c.v_prompt};
    const uint64_t out[] = {o};
    e_.Op(Site::kPrefillAttn, in, out, 2.0 * ba * p * p * dd);
  } else {
    // One query per sequence over ctx = P + step + 1 cached positions.
    const int64_t ctx = o_.seq_length_tokens + step + 1;
    const double kv_read =
        2.0 * static_cast<double>(bsz_ * ctx * kv_heads_ * d_ * DTypeBytes(dt_));
    const uint64_t in[] = {q, c.k_prompt, c.v_prompt, c.k_decode, c.v_decode};
    const uint64_t out[] = {o};
    e_.Op(Site::kDecodeAttn, in, out, 4.0 * ba * static_cast<double>(ctx) * dd,
          kv_read + static_cast<double>(e_.Bytes(q) + e_.Bytes(o)));
  }
  if (step == o_.generate_tokens - 1 || (prefill && o_.generate_tokens == 0)) {
    // The request's last attention at this layer: its cache goes.
    e_.Free(c.k_prompt);
    e_.Free(c.v_prompt);
    if (c.k_decode != kNone) {
      e_.Free(c.k_decode);
      e_.Free(c.v_decode);
    }
  }
  if (rotary) e_.Free(q);
  e_.Free(qkv);
  const int64_t act[] = {s_, bsz_, h_};
  const uint64_t y = e_.New(TensorKind::kTemporary, dt_, act, "attn.proj");
  {
    uint64_t in[3] = {o, W(P.proj_w), kNone};
    if (P.proj_b >= 0) in[2] = W(P.proj_b);
    const uint64_t out[] = {y};
    e_.Op(P.proj_b >= 0 ? Site::kProjBias : Site::kProj, Ids(in, P.proj_b >= 0 ? 3 : 2), out,
          2 * t * static_cast<double>(heads_ * d_ * h_));
  }
  e_.Free(o);
  return y;
}

uint64_t Generator::InferenceHead(uint64_t x) {
  e_.SetLayer(layers_ - 1);
  if (o_.tensor_names) e_.SetScope("head.");
  uint64_t mean = kNone, rstd = kNone;
  uint64_t h = NormForward(Site::kRmsNormFinal, Site::kLayerNormFinal, x, final_norm_w_,
                           final_norm_b_, false, "norm", &mean, &rstd);
  e_.Free(x);
  if (s_ > 1) {
    // Only the last position's logits are needed (the next token).
    const int64_t shape[] = {1, bsz_, h_};
    const uint64_t last = e_.New(TensorKind::kTemporary, dt_, shape, "norm.last");
    const uint64_t in[] = {h};
    const uint64_t out[] = {last};
    e_.Op(Site::kSelectLast, in, out, 0, static_cast<double>(2 * e_.Bytes(last)));
    e_.Free(h);
    h = last;
  }
  const int64_t logits_shape[] = {bsz_, vocab_};
  uint64_t logits = e_.New(TensorKind::kTemporary, dt_, logits_shape, "logits");
  {
    const uint64_t in[] = {h, W(head_)};
    const uint64_t out[] = {logits};
    e_.Op(Site::kLmHead, in, out, 2.0 * static_cast<double>(bsz_ * h_ * vocab_));
  }
  e_.Free(h);
  if (tp_ > 1) {
    // Vocabulary-parallel logits gathered for the sampler.
    const int64_t full_shape[] = {bsz_, vocab_ * tp_};
    const uint64_t full = e_.New(TensorKind::kTemporary, dt_, full_shape, "logits.gathered");
    const uint64_t in[] = {logits};
    const uint64_t out[] = {full};
    e_.Comm(Site::kLogitsAllGather, in, out, static_cast<double>(e_.Bytes(full)), tp_);
    e_.Free(logits);
    logits = full;
  }
  const int64_t ids[] = {bsz_};
  const uint64_t next = e_.New(TensorKind::kTemporary, DType::kInt64, ids, "next_tokens");
  {
    const uint64_t in[] = {logits};
    const uint64_t out[] = {next};
    e_.Op(Site::kSample, in, out);
  }
  e_.Free(logits);
  return next;
}

}  // namespace swapplan::synth_internal
