// The ends of a stage: input copies, embedding (first stage), final norm,
// LM head and Megatron's vocab-parallel cross entropy (last stage), and the
// pipeline's send/recv between stages.
//
// Cross entropy works on an fp32 copy of the logits (`logits.float()`), which
// Megatron turns into the softmax in place and saves for backward; its
// backward subtracts the one-hot target in place, scales by the incoming
// gradient and casts back to the parameter dtype for the head's GEMMs:
//
//   forward:  logits T [s,b,V/t] → logits32 S (fp32) → max, sub_, gather,
//             exp_, sum, [TP all-reduces], loss, div_ (softmax in place),
//             mean → loss S (scalar) → [× loss scale]
//   backward: ones_like → div → index_put_ (−1 at the target) → mul_ →
//             cast to dtype (glogits) → dgrad, wgrad → final norm backward
//
// The embedding is not under activation checkpointing, so its saved tensors
// (token ids, the dropout mask) are kept in every training mode.
#include "generator.h"

namespace swapplan::synth_internal {
namespace {

constexpr DType kF32 = DType::kFloat32;

}  // namespace

uint64_t Generator::FinishEmbedding(uint64_t x, TensorKind sum_kind) {
  if (tp_ > 1) {
    const uint64_t io[] = {x};
    e_.Comm(Site::kEmbeddingAllReduce, io, io, static_cast<double>(e_.Bytes(x)), tp_);
  }
  if (pos_emb_ < 0) return x;
  const int64_t act[] = {s_, bsz_, h_};
  const int64_t pe_shape[] = {s_, 1, h_};
  const uint64_t pe = e_.New(TensorKind::kTemporary, dt_, pe_shape, "position_embeddings.out");
  {
    const uint64_t in[] = {pos_ids_, W(pos_emb_)};
    const uint64_t out[] = {pe};
    e_.Op(Site::kPosEmbedding, in, out, 0, static_cast<double>(2 * e_.Bytes(pe)));
  }
  const uint64_t sum = e_.New(sum_kind, dt_, act, "embeddings.out");
  const uint64_t in[] = {x, pe};
  const uint64_t out[] = {sum};
  e_.Op(Site::kEmbAdd, in, out);
  e_.Free(x);
  e_.Free(pe);
  return sum;
}

uint64_t Generator::StageInput(int32_t mb, Mode mode, StageActs& s) {
  const bool train = mode != Mode::kNoGrad;
  const TensorKind act_kind = train ? TensorKind::kActivation : TensorKind::kTemporary;
  const int64_t act[] = {s_, bsz_, h_};
  const int64_t ids[] = {bsz_, s_};
  e_.SetLayer(0);
  if (o_.tensor_names) e_.SetScope("input.");
  (void)mb;
  std::vector<LayerActs> layers = std::move(s.layers);
  s = StageActs{};
  s.layers = std::move(layers);
  if (o_.last_stage()) {
    // get_batch(): labels are copied to the device on the last stage.
    s.labels = e_.New(TensorKind::kInput, DType::kInt64, ids, "labels");
    const uint64_t out[] = {s.labels};
    e_.Comm(Site::kLabelsCopy, {}, out, static_cast<double>(e_.Bytes(s.labels)), 1);
  }
  if (!o_.first_stage()) {
    if (o_.tensor_names) e_.SetScope("");
    const uint64_t x = e_.New(act_kind, dt_, act, "recv");
    const uint64_t out[] = {x};
    e_.Comm(Site::kRecvForward, {}, out, static_cast<double>(e_.Bytes(x)), 1);
    return x;
  }
  s.tokens = e_.New(TensorKind::kInput, DType::kInt64, ids, "tokens");
  {
    const uint64_t out[] = {s.tokens};
    e_.Comm(Site::kTokensCopy, {}, out, static_cast<double>(e_.Bytes(s.tokens)), 1);
  }
  if (o_.tensor_names) e_.SetScope("embed.");
  Gather(embedding_params_);
  uint64_t x = e_.New(act_kind, dt_, act, "word_embeddings.out");
  {
    // A lookup reads s·b rows of the table, not the table.
    const uint64_t in[] = {s.tokens, W(emb_)};
    const uint64_t out[] = {x};
    e_.Op(Site::kEmbedding, in, out, 0,
          static_cast<double>(e_.Bytes(s.tokens) + 2 * e_.Bytes(x)));
  }
  x = FinishEmbedding(x, act_kind);
  Release(embedding_params_);
  if (o_.model.dropout_probability > 0) {
    const uint64_t xd = e_.New(act_kind, dt_, act, "embeddings.drop.out");
    s.emb_drop_mask = e_.New(act_kind, DType::kBool, act, "embeddings.drop.mask");
    const uint64_t in[] = {x};
    const uint64_t out[] = {xd, s.emb_drop_mask};
    e_.Op(Site::kEmbDropout, in, out);
    e_.Free(x);
    if (!train) {
      e_.Free(s.emb_drop_mask);
      s.emb_drop_mask = kNone;
    }
    x = xd;
  }
  if (!train) {
    e_.Free(s.tokens);
    s.tokens = kNone;
  }
  return x;
}

void Generator::StageOutput(int32_t mb, uint64_t x, Mode mode, StageActs& s) {
  const int32_t last = layers_ - 1;
  e_.SetLayer(last);
  (void)mb;
  if (!o_.last_stage()) {
    // send_forward, then Megatron's deallocate_output_tensor frees the data.
    const uint64_t in[] = {x};
    e_.Comm(Site::kSendForward, in, {}, static_cast<double>(e_.Bytes(x)), 1);
    e_.Free(x);
    return;
  }
  if (o_.tensor_names) e_.SetScope("head.");
  const bool train = mode != Mode::kNoGrad;
  const TensorKind act_kind = train ? TensorKind::kActivation : TensorKind::kTemporary;
  const int64_t tok[] = {s_, bsz_};
  const int64_t logits_shape[] = {s_, bsz_, vocab_};
  const int64_t one[] = {1};
  const double t = static_cast<double>(tokens_);
  Gather(head_params_);
  s.x_last = x;
  s.nf = NormForward(Site::kRmsNormFinal, Site::kLayerNormFinal, x, final_norm_w_, final_norm_b_,
                     train, "norm", &s.mean_f, &s.rstd_f);
  if (!train) e_.Free(x);
  const uint64_t logits = e_.New(TensorKind::kTemporary, dt_, logits_shape, "logits");
  {
    const uint64_t in[] = {s.nf, W(head_)};
    const uint64_t out[] = {logits};
    e_.Op(Site::kLmHead, in, out, 2 * t * static_cast<double>(h_ * vocab_));
  }
  Release(head_params_);
  if (!train) e_.Free(s.nf);
  const uint64_t l32 = e_.New(act_kind, kF32, logits_shape, "loss.softmax");
  {
    const uint64_t in[] = {logits};
    const uint64_t out[] = {l32};
    e_.Op(Site::kLogitsFloat, in, out);
  }
  e_.Free(logits);
  auto tp_allreduce = [&](uint64_t v) {
    if (tp_ > 1) {
      const uint64_t io[] = {v};
      e_.Comm(Site::kCeAllReduce, io, io, static_cast<double>(e_.Bytes(v)), tp_);
    }
  };
  const uint64_t io32[] = {l32};
  const uint64_t lmax = e_.New(TensorKind::kTemporary, kF32, tok, "loss.max");
  {
    const uint64_t out[] = {lmax};
    e_.Op(Site::kCeMax, io32, out);
  }
  tp_allreduce(lmax);
  {
    const uint64_t in[] = {l32, lmax};
    e_.Op(Site::kCeSub, in, io32);
  }
  e_.Free(lmax);
  const uint64_t pred = e_.New(TensorKind::kTemporary, kF32, tok, "loss.target_logit");
  {
    const uint64_t in[] = {l32, s.labels};
    const uint64_t out[] = {pred};
    e_.Op(Site::kCeGather, in, out, 0, static_cast<double>(e_.Bytes(s.labels) + 2 * e_.Bytes(pred)));
  }
  if (!train) {
    e_.Free(s.labels);
    s.labels = kNone;
  }
  tp_allreduce(pred);
  e_.Op(Site::kCeExp, io32, io32);
  const uint64_t sumexp = e_.New(TensorKind::kTemporary, kF32, tok, "loss.sum_exp");
  {
    const uint64_t out[] = {sumexp};
    e_.Op(Site::kCeSum, io32, out);
  }
  tp_allreduce(sumexp);
  const uint64_t per_token = e_.New(TensorKind::kTemporary, kF32, tok, "loss.per_token");
  {
    const uint64_t in[] = {sumexp, pred};
    const uint64_t out[] = {per_token};
    e_.Op(Site::kCeLoss, in, out);
  }
  e_.Free(pred);
  if (train) {
    const uint64_t in[] = {l32, sumexp};
    e_.Op(Site::kCeSoftmaxDiv, in, io32);  // softmax in place, saved for backward
    s.softmax = l32;
  } else {
    e_.Free(l32);
  }
  e_.Free(sumexp);
  uint64_t loss = e_.New(act_kind, kF32, one, "loss");
  {
    const uint64_t in[] = {per_token};
    const uint64_t out[] = {loss};
    e_.Op(Site::kLossMean, in, out);
  }
  e_.Free(per_token);
  if (!train) {
    e_.Free(loss);
    return;
  }
  if (o_.loss_scaling()) {
    const uint64_t scaled = e_.New(act_kind, kF32, one, "loss.scaled");
    const uint64_t in[] = {loss, loss_scale_};
    const uint64_t out[] = {scaled};
    e_.Op(Site::kLossScale, in, out);
    e_.Free(loss);
    loss = scaled;
  }
  s.loss = loss;
}

uint64_t Generator::HeadBackward(int32_t mb, StageActs& s) {
  const int32_t last = layers_ - 1;
  const int64_t act[] = {s_, bsz_, h_};
  e_.SetLayer(last);
  (void)mb;
  if (!o_.last_stage()) {
    if (o_.tensor_names) e_.SetScope("");
    const uint64_t g = Grad(dt_, act, "recv.grad");
    const uint64_t out[] = {g};
    e_.Comm(Site::kRecvBackward, {}, out, static_cast<double>(e_.Bytes(g)), 1);
    return g;
  }
  if (o_.tensor_names) e_.SetScope("head.");
  const int64_t tok[] = {s_, bsz_};
  const int64_t one[] = {1};
  const int64_t logits_shape[] = {s_, bsz_, vocab_};
  const double t = static_cast<double>(tokens_);
  const uint64_t gl = Grad(kF32, one, "loss.grad");
  {
    const uint64_t in[] = {s.loss};
    const uint64_t out[] = {gl};
    e_.Op(Site::kLossSeed, in, out);
  }
  e_.Free(s.loss);
  const uint64_t gtok = Grad(kF32, tok, "loss.per_token.grad");
  {
    const uint64_t in[] = {gl};
    const uint64_t out[] = {gtok};
    e_.Op(Site::kLossMeanBwd, in, out);
  }
  e_.Free(gl);
  const uint64_t io32[] = {s.softmax};
  {
    const uint64_t in[] = {s.softmax, s.labels};
    e_.Op(Site::kCeBwdOneHot, in, io32, 0,
          static_cast<double>(e_.Bytes(s.labels) + 2 * 4 * tokens_));
  }
  e_.Free(s.labels);
  {
    const uint64_t in[] = {s.softmax, gtok};
    e_.Op(Site::kCeBwdScale, in, io32);
  }
  e_.Free(gtok);
  const uint64_t glog = Grad(dt_, logits_shape, "logits.grad");
  {
    const uint64_t out[] = {glog};
    e_.Op(Site::kLogitsGradCast, io32, out);
  }
  e_.Free(s.softmax);
  Gather(head_params_);
  const uint64_t gnf = Grad(dt_, act, "norm.grad_out");
  const double flops = 2 * t * static_cast<double>(h_ * vocab_);
  {
    const uint64_t in[] = {glog, W(head_)};
    const uint64_t out[] = {gnf};
    e_.Op(Site::kLmHeadDgrad, in, out, flops);
    const uint64_t win[] = {glog, s.nf};
    WeightGrad(Site::kLmHeadWgrad, win, head_, flops, /*gemm=*/true);
  }
  e_.Free(glog);
  e_.Free(s.nf);
  if (tp_ > 1) {
    const uint64_t io[] = {gnf};
    e_.Comm(Site::kTpAllReduceHeadBwd, io, io, static_cast<double>(e_.Bytes(gnf)), tp_);
  }
  const uint64_t gx = NormBackward(Site::kRmsNormFinalBwd, Site::kLayerNormFinalBwd, gnf, s.x_last,
                                   s.mean_f, s.rstd_f, final_norm_w_, final_norm_b_, "norm");
  Release(head_params_);
  s.x_last = s.nf = s.mean_f = s.rstd_f = s.softmax = s.loss = s.labels = kNone;
  return gx;
}

void Generator::EmbeddingBackward(int32_t mb, StageActs& s, uint64_t g) {
  e_.SetLayer(0);
  (void)mb;
  if (!o_.first_stage()) {
    const uint64_t in[] = {g};
    e_.Comm(Site::kSendBackward, in, {}, static_cast<double>(e_.Bytes(g)), 1);
    e_.Free(g);
    return;
  }
  if (o_.tensor_names) e_.SetScope("embed.");
  const int64_t act[] = {s_, bsz_, h_};
  if (s.emb_drop_mask != kNone) {
    const uint64_t gd = Grad(dt_, act, "embeddings.drop.grad_in");
    const uint64_t in[] = {g, s.emb_drop_mask};
    const uint64_t out[] = {gd};
    e_.Op(Site::kEmbDropoutBwd, in, out);
    e_.Free(g);
    e_.Free(s.emb_drop_mask);
    g = gd;
  }
  if (pos_emb_ >= 0) {
    // Dense gradient of the whole table, accumulated into the buffer.
    const Param& P = params_[pos_emb_];
    const uint64_t tmp = e_.New(TensorKind::kGradient, dt_, P.shape, P.short_name, ".grad_tmp");
    const uint64_t in[] = {g, pos_ids_};
    const uint64_t out[] = {tmp};
    e_.Op(Site::kPosEmbeddingBwd, in, out);
    Accumulate(tmp, pos_emb_);
  }
  const Param& P = params_[emb_];
  const uint64_t tmp = e_.New(TensorKind::kGradient, dt_, P.shape, P.short_name, ".grad_tmp");
  {
    const uint64_t in[] = {g, s.tokens};
    const uint64_t out[] = {tmp};
    e_.Op(Site::kEmbeddingBwd, in, out);
  }
  e_.Free(g);
  e_.Free(s.tokens);
  s.tokens = s.emb_drop_mask = kNone;
  Accumulate(tmp, emb_);
}

}  // namespace swapplan::synth_internal
