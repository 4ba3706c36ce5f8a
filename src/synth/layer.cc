// One transformer layer, forward and backward, as Megatron-LM issues it in
// PyTorch eager mode (pre-norm, no sequence parallelism). Shapes are
// [s, b, ·] per TP rank: heads a/t, KV heads k/t, FFN f/t; hidden h is
// replicated.
//
// Forward (train mode; S = saved for backward, T = temporary):
//   norm1(x)            → n1 S, [mean1 S], rstd1 S        (x S: norm1 backward)
//   qkv = n1·Wqkv        → qkv S [s,b,(a+2k)d]            (v is a view of it)
//   rope(q), rope(k)     → q S, k S                       (rotary models)
//   flash(q,k,v)         → o S, lse S [b,a,s] fp32
//     or classic: scores T [b·a,s,s] → softmax probs S → dropout probs_drop S
//                 + mask S (bool) → o = probs_drop·v S
//   y1 = o·Wproj T → [TP all-reduce] → [dropout → mask1 S] → r = x + y1 S
//   norm2(r)            → n2 S, [mean2 S], rstd2 S
//   MLP: gated: g = n2·Wfc1 S [s,b,2f], sg = silu(g) S, hm = sg·up S,
//               y2 = hm·Wfc2 T;  gelu: g S, sg = gelu(g) S, y2 T;  MoE: moe.cc
//   [TP all-reduce] → [dropout → mask2 S] → out = r + y2 (the next layer's x)
//
// Backward mirrors it in reverse; each saved tensor is freed right after its
// last backward consumer, each gradient right after the op that consumes it.
#include "generator.h"


namespace swapplan::synth_internal {
namespace {

constexpr DType kF32 = DType::kFloat32;

}  // namespace

uint64_t Generator::NormForward(Site rms, Site ln, uint64_t x, int w, int b, bool save,
                                absl::string_view name, uint64_t* mean, uint64_t* rstd) {
  const bool layer_norm = o_.model.norm == NormKind::kLayerNorm;
  const int64_t act[] = {s_, bsz_, h_};
  const int64_t stat[] = {s_, bsz_};
  const TensorKind kind = save ? TensorKind::kActivation : TensorKind::kTemporary;
  const uint64_t out = e_.New(kind, dt_, act, name, ".out");
  *mean = layer_norm ? e_.New(kind, kF32, stat, name, ".mean") : kNone;
  *rstd = e_.New(kind, kF32, stat, name, ".rstd");
  uint64_t in[3] = {x, W(w), kNone};
  uint64_t outs[3] = {out, *rstd, kNone};
  size_t nin = 2, nout = 2;
  if (b >= 0) in[nin++] = W(b);
  if (layer_norm) outs[nout++] = *mean;
  e_.Op(layer_norm ? ln : rms, Ids(in, nin), Ids(outs, nout));
  if (!save) {
    if (layer_norm) e_.Free(*mean);
    e_.Free(*rstd);
    *mean = *rstd = kNone;
  }
  return out;
}

uint64_t Generator::NormBackward(Site rms, Site ln, uint64_t gy, uint64_t x, uint64_t mean,
                                 uint64_t rstd, int w, int b, absl::string_view name) {
  const bool layer_norm = o_.model.norm == NormKind::kLayerNorm;
  const int64_t act[] = {s_, bsz_, h_};
  const int64_t vec[] = {h_};
  const uint64_t gx = Grad(dt_, act, name, ".grad_in");
  const uint64_t gw = e_.New(TensorKind::kGradient, dt_, vec, name, ".weight.grad_tmp");
  const uint64_t gb = b >= 0 ? e_.New(TensorKind::kGradient, dt_, vec, name, ".bias.grad_tmp")
                             : kNone;
  uint64_t in[5] = {gy, x, rstd, W(w), kNone};
  size_t nin = 4;
  if (layer_norm) in[nin++] = mean;
  uint64_t outs[3] = {gx, gw, gb};
  e_.Op(layer_norm ? ln : rms, Ids(in, nin), Ids(outs, b >= 0 ? 3 : 2));
  e_.Free(gy);
  e_.Free(x);
  e_.Free(rstd);
  if (layer_norm) e_.Free(mean);
  Accumulate(gw, w);
  if (b >= 0) Accumulate(gb, b);
  return gx;
}

uint64_t Generator::LayerForward(int32_t l, uint64_t x, Mode mode, LayerActs& a) {
  const LayerParams& P = layer_params_[l];
  const bool save = Saves(mode);
  const int64_t act[] = {s_, bsz_, h_};
  const int64_t bool_act[] = {s_, bsz_, h_};
  const bool dropout = o_.model.dropout_probability > 0;
  a = LayerActs{};
  a.x = x;
  a.n1 = NormForward(Site::kRmsNorm1, Site::kLayerNorm1, x, P.norm1_w, P.norm1_b, save,
                     "attn.norm", &a.mean1, &a.rstd1);
  uint64_t y1 = AttentionForward(l, mode, a);
  if (tp_ > 1) {
    const uint64_t io[] = {y1};
    e_.Comm(Site::kTpAllReduceAttn, io, io, static_cast<double>(e_.Bytes(y1)), tp_);
  }
  if (dropout) {
    const uint64_t yd = e_.New(TensorKind::kTemporary, dt_, act, "attn.drop.out");
    a.drop1_mask = Act(mode, true, DType::kBool, bool_act, "attn.drop.mask");
    const uint64_t in[] = {y1};
    const uint64_t out[] = {yd, a.drop1_mask};
    e_.Op(Site::kDropout1, in, out);
    e_.Free(y1);
    Done(mode, a.drop1_mask);
    y1 = yd;
  }
  a.r = Act(mode, true, dt_, act, "resid1");
  {
    const uint64_t in[] = {x, y1};
    const uint64_t out[] = {a.r};
    e_.Op(Site::kResidual1, in, out);
  }
  e_.Free(y1);
  if (mode == Mode::kNoGrad) e_.Free(x);
  a.n2 = NormForward(Site::kRmsNorm2, Site::kLayerNorm2, a.r, P.norm2_w, P.norm2_b, save,
                     "mlp.norm", &a.mean2, &a.rstd2);
  uint64_t y2 = o_.model.num_experts > 0 ? MoeForward(l, mode, a) : DenseMlpForward(l, mode, a);
  if (tp_ > 1) {
    const uint64_t io[] = {y2};
    e_.Comm(Site::kTpAllReduceMlp, io, io, static_cast<double>(e_.Bytes(y2)), tp_);
  }
  if (dropout) {
    const uint64_t yd = e_.New(TensorKind::kTemporary, dt_, act, "mlp.drop.out");
    a.drop2_mask = Act(mode, true, DType::kBool, bool_act, "mlp.drop.mask");
    const uint64_t in[] = {y2};
    const uint64_t out[] = {yd, a.drop2_mask};
    e_.Op(Site::kDropout2, in, out);
    e_.Free(y2);
    Done(mode, a.drop2_mask);
    y2 = yd;
  }
  // The output is the next layer's input (saved, or its checkpoint) unless
  // nothing is saved at all.
  const uint64_t out_t = e_.New(mode == Mode::kNoGrad ? TensorKind::kTemporary
                                                      : TensorKind::kActivation,
                                dt_, act, "out");
  {
    const uint64_t in[] = {a.r, y2};
    const uint64_t out[] = {out_t};
    e_.Op(Site::kResidual2, in, out);
  }
  e_.Free(y2);
  Done(mode, a.r);
  if (mode == Mode::kCheckpointed) {
    a = LayerActs{};
    a.x = x;  // the checkpoint's input
  } else if (mode == Mode::kNoGrad) {
    a = LayerActs{};
  } else if (mode == Mode::kRecompute) {
    a.recompute_out = out_t;  // held by CheckpointFunction until its backward returns
  }
  return out_t;
}

uint64_t Generator::AttentionForward(int32_t l, Mode mode, LayerActs& a) {
  const LayerParams& P = layer_params_[l];
  const bool rotary = o_.model.position == PositionKind::kRotary;
  const bool flash = o_.attention == AttentionKind::kFlash;
  const bool dropout = o_.model.dropout_probability > 0;
  const int64_t qkv_out = (heads_ + 2 * kv_heads_) * d_;
  const double t = static_cast<double>(tokens_);
  // Causal attention: QK^T and PV are 2·b·a·s²·d FLOPs each, half skipped by
  // the mask in the fused kernel.
  const double attn_flops = 2.0 * static_cast<double>(bsz_ * heads_) * static_cast<double>(s_) *
                            static_cast<double>(s_) * static_cast<double>(d_);
  {
    const int64_t shape[] = {s_, bsz_, qkv_out};
    a.qkv = Act(mode, true, dt_, shape, "attn.qkv");
    uint64_t in[3] = {a.n1, W(P.qkv_w), kNone};
    if (P.qkv_b >= 0) in[2] = W(P.qkv_b);
    const uint64_t out[] = {a.qkv};
    e_.Op(P.qkv_b >= 0 ? Site::kQkvBias : Site::kQkv, Ids(in, P.qkv_b >= 0 ? 3 : 2), out,
          2 * t * static_cast<double>(h_ * qkv_out));
  }
  Done(mode, a.n1);
  if (rotary) {
    const int64_t qs[] = {s_, bsz_, heads_, d_};
    const int64_t ks[] = {s_, bsz_, kv_heads_, d_};
    a.q = Act(mode, true, dt_, qs, "attn.q_rot");
    a.k = Act(mode, true, dt_, ks, "attn.k_rot");
    const uint64_t in[] = {a.qkv, rope_table_};
    const uint64_t oq[] = {a.q};
    const uint64_t ok[] = {a.k};
    e_.Op(Site::kRopeQ, in, oq, 0, static_cast<double>(2 * e_.Bytes(a.q)));
    e_.Op(Site::kRopeK, in, ok, 0, static_cast<double>(2 * e_.Bytes(a.k)));
  }
  const int64_t o_shape[] = {s_, bsz_, heads_ * d_};
  if (flash) {
    const int64_t lse_shape[] = {bsz_, heads_, s_};
    a.o = Act(mode, true, dt_, o_shape, "attn.core");
    a.lse = Act(mode, true, kF32, lse_shape, "attn.lse");
    const uint64_t in_rope[] = {a.q, a.k, a.qkv};
    const uint64_t in_plain[] = {a.qkv};
    const uint64_t out[] = {a.o, a.lse};
    e_.Op(Site::kFlashAttn, rotary ? Ids(in_rope) : Ids(in_plain), out, attn_flops);
    Done(mode, a.lse);
    if (rotary) {
      Done(mode, a.q);
      Done(mode, a.k);
    }
    Done(mode, a.qkv);
  } else {
    const int64_t sc_shape[] = {bsz_ * heads_, s_, s_};
    const int64_t p_shape[] = {bsz_, heads_, s_, s_};
    const uint64_t scores = e_.New(TensorKind::kTemporary, dt_, sc_shape, "attn.scores");
    {
      const uint64_t in_rope[] = {a.q, a.k};
      const uint64_t in_plain[] = {a.qkv};
      const uint64_t out[] = {scores};
      e_.Op(Site::kScores, rotary ? Ids(in_rope) : Ids(in_plain), out, 2 * attn_flops);
    }
    if (rotary) {
      Done(mode, a.q);
      Done(mode, a.k);
    }
    a.probs = Act(mode, true, dt_, p_shape, "attn.probs");
    {
      const uint64_t in[] = {scores, causal_mask_};
      const uint64_t out[] = {a.probs};
      e_.Op(Site::kSoftmax, in, out);
    }
    e_.Free(scores);
    uint64_t pv = a.probs;
    if (dropout) {
      a.probs_drop = Act(mode, true, dt_, p_shape, "attn.probs_drop");
      a.attn_mask = Act(mode, true, DType::kBool, p_shape, "attn.probs_mask");
      const uint64_t in[] = {a.probs};
      const uint64_t out[] = {a.probs_drop, a.attn_mask};
      e_.Op(Site::kAttnDropout, in, out);
      Done(mode, a.probs);
      Done(mode, a.attn_mask);
      pv = a.probs_drop;
    }
    a.o = Act(mode, true, dt_, o_shape, "attn.core");
    {
      const uint64_t in[] = {pv, a.qkv};
      const uint64_t out[] = {a.o};
      e_.Op(Site::kContext, in, out, 2 * attn_flops);
    }
    Done(mode, pv);
    Done(mode, a.qkv);
  }
  const int64_t act[] = {s_, bsz_, h_};
  const uint64_t y = e_.New(TensorKind::kTemporary, dt_, act, "attn.proj");
  {
    uint64_t in[3] = {a.o, W(P.proj_w), kNone};
    if (P.proj_b >= 0) in[2] = W(P.proj_b);
    const uint64_t out[] = {y};
    e_.Op(P.proj_b >= 0 ? Site::kProjBias : Site::kProj, Ids(in, P.proj_b >= 0 ? 3 : 2), out,
          2 * t * static_cast<double>(heads_ * d_ * h_));
  }
  Done(mode, a.o);
  return y;
}

uint64_t Generator::DenseMlpForward(int32_t l, Mode mode, LayerActs& a) {
  const LayerParams& P = layer_params_[l];
  const bool gated = o_.model.mlp == MlpKind::kGatedSilu;
  const double t = static_cast<double>(tokens_);
  const int64_t fc1_out = gated ? 2 * ffn_ : ffn_;
  const int64_t g_shape[] = {s_, bsz_, fc1_out};
  const int64_t f_shape[] = {s_, bsz_, ffn_};
  const int64_t act[] = {s_, bsz_, h_};
  a.g = Act(mode, true, dt_, g_shape, "mlp.fc1");
  {
    uint64_t in[3] = {a.n2, W(P.fc1_w), kNone};
    if (P.fc1_b >= 0) in[2] = W(P.fc1_b);
    const uint64_t out[] = {a.g};
    e_.Op(P.fc1_b >= 0 ? Site::kFc1Bias : Site::kFc1, Ids(in, P.fc1_b >= 0 ? 3 : 2), out,
          2 * t * static_cast<double>(h_ * fc1_out));
  }
  Done(mode, a.n2);
  uint64_t fc2_in;
  if (gated) {
    a.sg = Act(mode, true, dt_, f_shape, "mlp.silu");
    const uint64_t in1[] = {a.g};
    const uint64_t out1[] = {a.sg};
    e_.Op(Site::kSilu, in1, out1);
    a.hm = Act(mode, true, dt_, f_shape, "mlp.mul");
    const uint64_t in2[] = {a.sg, a.g};
    const uint64_t out2[] = {a.hm};
    e_.Op(Site::kMul, in2, out2, 0, static_cast<double>(e_.Bytes(a.sg) * 3));
    Done(mode, a.sg);
    Done(mode, a.g);
    fc2_in = a.hm;
  } else {
    a.sg = Act(mode, true, dt_, f_shape, "mlp.gelu");
    const uint64_t in1[] = {a.g};
    const uint64_t out1[] = {a.sg};
    e_.Op(Site::kGelu, in1, out1);
    Done(mode, a.g);
    fc2_in = a.sg;
  }
  const uint64_t y = e_.New(TensorKind::kTemporary, dt_, act, "mlp.fc2");
  {
    uint64_t in[3] = {fc2_in, W(P.fc2_w), kNone};
    if (P.fc2_b >= 0) in[2] = W(P.fc2_b);
    const uint64_t out[] = {y};
    e_.Op(P.fc2_b >= 0 ? Site::kFc2Bias : Site::kFc2, Ids(in, P.fc2_b >= 0 ? 3 : 2), out,
          2 * t * static_cast<double>(ffn_ * h_));
  }
  Done(mode, fc2_in);
  return y;
}

uint64_t Generator::LayerBackward(int32_t l, LayerActs& a, uint64_t dout) {
  const LayerParams& P = layer_params_[l];
  const bool dropout = o_.model.dropout_probability > 0;
  const int64_t act[] = {s_, bsz_, h_};
  // MLP branch of `out = r + y2`.
  uint64_t gy2 = dout;
  if (dropout) {
    gy2 = Grad(dt_, act, "mlp.drop.grad_in");
    const uint64_t in[] = {dout, a.drop2_mask};
    const uint64_t out[] = {gy2};
    e_.Op(Site::kDropout2Bwd, in, out);
    e_.Free(a.drop2_mask);
  }
  uint64_t gn2 = o_.model.num_experts > 0 ? MoeBackward(l, a, gy2, gy2 != dout)
                                          : DenseMlpBackward(l, a, gy2, gy2 != dout);
  if (tp_ > 1) {
    const uint64_t io[] = {gn2};
    e_.Comm(Site::kTpAllReduceMlpBwd, io, io, static_cast<double>(e_.Bytes(gn2)), tp_);
  }
  const uint64_t gr_local = NormBackward(Site::kRmsNorm2Bwd, Site::kLayerNorm2Bwd, gn2, a.r,
                                         a.mean2, a.rstd2, P.norm2_w, P.norm2_b, "mlp.norm");
  // Gradient of r: the residual path plus the norm2 path.
  const uint64_t gr = Grad(dt_, act, "resid1.grad");
  {
    const uint64_t in[] = {dout, gr_local};
    const uint64_t out[] = {gr};
    e_.Op(Site::kResidual2Bwd, in, out);
  }
  e_.Free(dout);
  e_.Free(gr_local);
  // Attention branch of `r = x + y1`.
  uint64_t gy1 = gr;
  if (dropout) {
    gy1 = Grad(dt_, act, "attn.drop.grad_in");
    const uint64_t in[] = {gr, a.drop1_mask};
    const uint64_t out[] = {gy1};
    e_.Op(Site::kDropout1Bwd, in, out);
    e_.Free(a.drop1_mask);
  }
  const uint64_t gn1 = AttentionBackward(l, a, gy1, gy1 != gr);
  if (tp_ > 1) {
    const uint64_t io[] = {gn1};
    e_.Comm(Site::kTpAllReduceAttnBwd, io, io, static_cast<double>(e_.Bytes(gn1)), tp_);
  }
  const uint64_t gx_local = NormBackward(Site::kRmsNorm1Bwd, Site::kLayerNorm1Bwd, gn1, a.x,
                                         a.mean1, a.rstd1, P.norm1_w, P.norm1_b, "attn.norm");
  const uint64_t gx = Grad(dt_, act, "grad_in");
  {
    const uint64_t in[] = {gr, gx_local};
    const uint64_t out[] = {gx};
    e_.Op(Site::kResidual1Bwd, in, out);
  }
  e_.Free(gr);
  e_.Free(gx_local);
  if (a.recompute_out != kNone) e_.Free(a.recompute_out);
  a = LayerActs{};
  return gx;
}

uint64_t Generator::AttentionBackward(int32_t l, LayerActs& a, uint64_t gy, bool free_gy) {
  const LayerParams& P = layer_params_[l];
  const bool rotary = o_.model.position == PositionKind::kRotary;
  const bool flash = o_.attention == AttentionKind::kFlash;
  const bool dropout = o_.model.dropout_probability > 0;
  const double t = static_cast<double>(tokens_);
  const int64_t qkv_out = (heads_ + 2 * kv_heads_) * d_;
  const double attn_flops = 2.0 * static_cast<double>(bsz_ * heads_) * static_cast<double>(s_) *
                            static_cast<double>(s_) * static_cast<double>(d_);
  const int64_t o_shape[] = {s_, bsz_, heads_ * d_};
  const int64_t qs[] = {s_, bsz_, heads_, d_};
  const int64_t ks[] = {s_, bsz_, kv_heads_, d_};
  const int64_t act[] = {s_, bsz_, h_};
  // Output projection: dgrad, then wgrad (Megatron order).
  const uint64_t go = Grad(dt_, o_shape, "attn.core.grad");
  const double proj_flops = 2 * t * static_cast<double>(heads_ * d_ * h_);
  {
    const uint64_t in[] = {gy, W(P.proj_w)};
    const uint64_t out[] = {go};
    e_.Op(Site::kProjDgrad, in, out, proj_flops);
    const uint64_t win[] = {gy, a.o};
    WeightGrad(Site::kProjWgrad, win, P.proj_w, proj_flops, /*gemm=*/true);
    if (P.proj_b >= 0) {
      const uint64_t bin[] = {gy};
      WeightGrad(Site::kProjBiasGrad, bin, P.proj_b, 0, /*gemm=*/false);
    }
  }
  if (free_gy) e_.Free(gy);
  uint64_t gq, gk, gv;
  gq = Grad(dt_, qs, "attn.q.grad");
  gk = Grad(dt_, ks, "attn.k.grad");
  gv = Grad(dt_, ks, "attn.v.grad");
  if (flash) {
    const uint64_t in_rope[] = {go, a.q, a.k, a.qkv, a.o, a.lse};
    const uint64_t in_plain[] = {go, a.qkv, a.o, a.lse};
    const uint64_t out[] = {gq, gk, gv};
    // Backward: 5 GEMM-like passes against 2 in forward.
    e_.Op(Site::kFlashAttnBwd, rotary ? Ids(in_rope) : Ids(in_plain), out, 2.5 * attn_flops);
    e_.Free(go);
    e_.Free(a.o);
    e_.Free(a.lse);
    e_.Free(a.qkv);
    if (rotary) {
      e_.Free(a.q);
      e_.Free(a.k);
    }
  } else {
    e_.Free(a.o);  // last use: the projection's wgrad
    const int64_t p_shape[] = {bsz_, heads_, s_, s_};
    const uint64_t pv = dropout ? a.probs_drop : a.probs;
    const uint64_t gpv = Grad(dt_, p_shape, dropout ? "attn.probs_drop.grad" : "attn.probs.grad");
    {
      const uint64_t in[] = {go, a.qkv};
      const uint64_t out[] = {gpv};
      e_.Op(Site::kContextBwdProbs, in, out, 2 * attn_flops);
    }
    if (rotary) e_.Free(a.qkv);  // v's last use; q and k are separate tensors
    {
      const uint64_t in[] = {pv, go};
      const uint64_t out[] = {gv};
      e_.Op(Site::kContextBwdV, in, out, 2 * attn_flops);
    }
    e_.Free(go);
    uint64_t gp = gpv;
    if (dropout) {
      e_.Free(a.probs_drop);
      gp = Grad(dt_, p_shape, "attn.probs.grad");
      const uint64_t in[] = {gpv, a.attn_mask};
      const uint64_t out[] = {gp};
      e_.Op(Site::kAttnDropoutBwd, in, out);
      e_.Free(gpv);
      e_.Free(a.attn_mask);
    }
    {
      // In place: the gradient of the probabilities becomes that of the scores.
      const uint64_t in[] = {gp, a.probs};
      const uint64_t out[] = {gp};
      e_.Op(Site::kSoftmaxBwd, in, out);
    }
    e_.Free(a.probs);
    {
      const uint64_t in_q[] = {gp, rotary ? a.k : a.qkv};
      const uint64_t out_q[] = {gq};
      e_.Op(Site::kScoresBwdQ, in_q, out_q, 2 * attn_flops);
      const uint64_t in_k[] = {gp, rotary ? a.q : a.qkv};
      const uint64_t out_k[] = {gk};
      e_.Op(Site::kScoresBwdK, in_k, out_k, 2 * attn_flops);
    }
    e_.Free(gp);
    if (rotary) {
      e_.Free(a.q);
      e_.Free(a.k);
    } else {
      e_.Free(a.qkv);
    }
  }
  if (rotary) {
    const uint64_t gq_raw = Grad(dt_, qs, "attn.q_raw.grad");
    const uint64_t gk_raw = Grad(dt_, ks, "attn.k_raw.grad");
    const uint64_t in_q[] = {gq, rope_table_};
    const uint64_t out_q[] = {gq_raw};
    e_.Op(Site::kRopeQBwd, in_q, out_q, 0, static_cast<double>(2 * e_.Bytes(gq)));
    e_.Free(gq);
    const uint64_t in_k[] = {gk, rope_table_};
    const uint64_t out_k[] = {gk_raw};
    e_.Op(Site::kRopeKBwd, in_k, out_k, 0, static_cast<double>(2 * e_.Bytes(gk)));
    e_.Free(gk);
    gq = gq_raw;
    gk = gk_raw;
  }
  const int64_t qkv_shape[] = {s_, bsz_, qkv_out};
  const uint64_t gqkv = Grad(dt_, qkv_shape, "attn.qkv.grad");
  {
    const uint64_t in[] = {gq, gk, gv};
    const uint64_t out[] = {gqkv};
    e_.Op(Site::kCatQkv, in, out);
  }
  e_.Free(gq);
  e_.Free(gk);
  e_.Free(gv);
  const uint64_t gn1 = Grad(dt_, act, "attn.norm.grad_out");
  const double qkv_flops = 2 * t * static_cast<double>(h_ * qkv_out);
  {
    const uint64_t in[] = {gqkv, W(P.qkv_w)};
    const uint64_t out[] = {gn1};
    e_.Op(Site::kQkvDgrad, in, out, qkv_flops);
    const uint64_t win[] = {gqkv, a.n1};
    WeightGrad(Site::kQkvWgrad, win, P.qkv_w, qkv_flops, /*gemm=*/true);
    if (P.qkv_b >= 0) {
      const uint64_t bin[] = {gqkv};
      WeightGrad(Site::kQkvBiasGrad, bin, P.qkv_b, 0, /*gemm=*/false);
    }
  }
  e_.Free(gqkv);
  e_.Free(a.n1);
  return gn1;
}

uint64_t Generator::DenseMlpBackward(int32_t l, LayerActs& a, uint64_t gy, bool free_gy) {
  const LayerParams& P = layer_params_[l];
  const bool gated = o_.model.mlp == MlpKind::kGatedSilu;
  const double t = static_cast<double>(tokens_);
  const int64_t fc1_out = gated ? 2 * ffn_ : ffn_;
  const int64_t f_shape[] = {s_, bsz_, ffn_};
  const int64_t g_shape[] = {s_, bsz_, fc1_out};
  const int64_t act[] = {s_, bsz_, h_};
  const double fc2_flops = 2 * t * static_cast<double>(ffn_ * h_);
  const uint64_t fc2_in = gated ? a.hm : a.sg;
  const uint64_t gf = Grad(dt_, f_shape, gated ? "mlp.mul.grad" : "mlp.gelu.grad");
  {
    const uint64_t in[] = {gy, W(P.fc2_w)};
    const uint64_t out[] = {gf};
    e_.Op(Site::kFc2Dgrad, in, out, fc2_flops);
    const uint64_t win[] = {gy, fc2_in};
    WeightGrad(Site::kFc2Wgrad, win, P.fc2_w, fc2_flops, /*gemm=*/true);
    if (P.fc2_b >= 0) {
      const uint64_t bin[] = {gy};
      WeightGrad(Site::kFc2BiasGrad, bin, P.fc2_b, 0, /*gemm=*/false);
    }
  }
  if (free_gy) e_.Free(gy);
  uint64_t gg;
  if (gated) {
    e_.Free(a.hm);
    const uint64_t gsg = Grad(dt_, f_shape, "mlp.silu.grad");
    const uint64_t gup = Grad(dt_, f_shape, "mlp.up.grad");
    {
      const uint64_t in[] = {gf, a.g};
      const uint64_t out[] = {gsg};
      e_.Op(Site::kMulBwdGate, in, out, 0, static_cast<double>(3 * e_.Bytes(gf)));
    }
    {
      const uint64_t in[] = {gf, a.sg};
      const uint64_t out[] = {gup};
      e_.Op(Site::kMulBwdUp, in, out);
    }
    e_.Free(gf);
    e_.Free(a.sg);
    const uint64_t ggate = Grad(dt_, f_shape, "mlp.gate.grad");
    {
      const uint64_t in[] = {gsg, a.g};
      const uint64_t out[] = {ggate};
      e_.Op(Site::kSiluBwd, in, out, 0, static_cast<double>(3 * e_.Bytes(gsg)));
    }
    e_.Free(gsg);
    e_.Free(a.g);
    gg = Grad(dt_, g_shape, "mlp.fc1.grad");
    const uint64_t in[] = {ggate, gup};
    const uint64_t out[] = {gg};
    e_.Op(Site::kCatGateUp, in, out);
    e_.Free(ggate);
    e_.Free(gup);
  } else {
    e_.Free(a.sg);
    gg = Grad(dt_, g_shape, "mlp.fc1.grad");
    const uint64_t in[] = {gf, a.g};
    const uint64_t out[] = {gg};
    e_.Op(Site::kGeluBwd, in, out);
    e_.Free(gf);
    e_.Free(a.g);
  }
  const uint64_t gn2 = Grad(dt_, act, "mlp.norm.grad_out");
  const double fc1_flops = 2 * t * static_cast<double>(h_ * fc1_out);
  {
    const uint64_t in[] = {gg, W(P.fc1_w)};
    const uint64_t out[] = {gn2};
    e_.Op(Site::kFc1Dgrad, in, out, fc1_flops);
    const uint64_t win[] = {gg, a.n2};
    WeightGrad(Site::kFc1Wgrad, win, P.fc1_w, fc1_flops, /*gemm=*/true);
    if (P.fc1_b >= 0) {
      const uint64_t bin[] = {gg};
      WeightGrad(Site::kFc1BiasGrad, bin, P.fc1_b, 0, /*gemm=*/false);
    }
  }
  e_.Free(gg);
  e_.Free(a.n2);
  return gn2;
}

}  // namespace swapplan::synth_internal
