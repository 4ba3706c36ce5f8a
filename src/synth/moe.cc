// The MoE MLP (Mixtral-style, dropless, experts sharded by TP, no expert
// parallelism), as Megatron's SequentialMLP issues it. T = s·b tokens, E
// experts, top-k routing, n_e tokens routed to expert e (routing.h; Σ n_e =
// k·T):
//
//   router  rl = n2·Wr T [T,E] → softmax rp S [T,E] fp32 → topk: weights S
//           [T,k] fp32, indices S [T,k] int64
//   permute xp = n2[indices] S [k·T, h]
//   expert e (n_e > 0): g_e S [n_e, 2f], silu S [n_e, f], mul S [n_e, f],
//           y_e = mul·W2 T [n_e, h]
//   cat     ye S [k·T, h] (saved: the gradient of the routing weights needs it)
//   combine y2 = Σ_k weight · ye[...] T [T, h]
//
// Expert tensor sizes follow the routing, which changes per iteration and
// micro-batch (and is re-drawn identically for recomputation).
#include "absl/strings/str_cat.h"
#include "generator.h"
#include "routing.h"

namespace swapplan::synth_internal {
namespace {

constexpr DType kF32 = DType::kFloat32;

}  // namespace

uint64_t Generator::MoeForward(int32_t l, Mode mode, LayerActs& a) {
  const LayerParams& P = layer_params_[l];
  const int32_t experts = o_.model.num_experts;
  const int32_t k = o_.model.experts_top_k;
  const int64_t t = tokens_;
  const std::vector<int64_t> counts =
      ExpertTokenCounts(o_.seed, iteration_, pass_, layer_offset_ + l, experts, k, t,
                        o_.moe_imbalance);
  const int64_t te[] = {t, experts};
  const int64_t tk[] = {t, k};
  const int64_t perm[] = {t * k, h_};
  const int64_t act[] = {s_, bsz_, h_};
  const uint64_t rl = e_.New(TensorKind::kTemporary, dt_, te, "moe.router_logits");
  {
    const uint64_t in[] = {a.n2, W(P.router)};
    const uint64_t out[] = {rl};
    e_.Op(Site::kRouter, in, out, 2.0 * static_cast<double>(t * h_ * experts));
  }
  a.router_probs = Act(mode, true, kF32, te, "moe.router_probs");
  {
    const uint64_t in[] = {rl};
    const uint64_t out[] = {a.router_probs};
    e_.Op(Site::kRouterSoftmax, in, out);
  }
  e_.Free(rl);
  a.topk_w = Act(mode, true, kF32, tk, "moe.topk_weights");
  a.topk_i = Act(mode, true, DType::kInt64, tk, "moe.topk_indices");
  {
    const uint64_t in[] = {a.router_probs};
    const uint64_t out[] = {a.topk_w, a.topk_i};
    e_.Op(Site::kTopK, in, out);
  }
  Done(mode, a.router_probs);
  a.xp = Act(mode, true, dt_, perm, "moe.permuted");
  {
    const uint64_t in[] = {a.n2, a.topk_i};
    const uint64_t out[] = {a.xp};
    e_.Op(Site::kPermute, in, out);
  }
  Done(mode, a.n2);
  a.experts.assign(experts, ExpertActs{});
  std::vector<uint64_t> parts;
  parts.reserve(experts);
  std::string name;
  const double row = static_cast<double>(h_ * DTypeBytes(dt_));
  for (int32_t e = 0; e < experts; ++e) {
    const int64_t n = counts[e];
    if (n == 0) continue;  // no tokens, no kernels
    ExpertActs& x = a.experts[e];
    x.tokens = n;
    if (o_.tensor_names) name = absl::StrCat("moe.e", e, ".");
    const int64_t g_shape[] = {n, 2 * ffn_};
    const int64_t f_shape[] = {n, ffn_};
    const int64_t y_shape[] = {n, h_};
    const double nn = static_cast<double>(n);
    const uint64_t w1 = W(P.expert_fc1[e]), w2 = W(P.expert_fc2[e]);
    x.g = Act(mode, true, dt_, g_shape, name, "fc1");
    {
      // Reads the expert's n rows of the permuted tokens.
      const uint64_t in[] = {a.xp, w1};
      const uint64_t out[] = {x.g};
      e_.Op(Site::kExpertFc1, in, out, 2 * nn * static_cast<double>(h_ * 2 * ffn_),
            nn * row + static_cast<double>(e_.Bytes(w1) + e_.Bytes(x.g)));
    }
    x.sg = Act(mode, true, dt_, f_shape, name, "silu");
    {
      const uint64_t in[] = {x.g};
      const uint64_t out[] = {x.sg};
      e_.Op(Site::kExpertSilu, in, out);
    }
    x.hm = Act(mode, true, dt_, f_shape, name, "mul");
    {
      const uint64_t in[] = {x.sg, x.g};
      const uint64_t out[] = {x.hm};
      e_.Op(Site::kExpertMul, in, out, 0, static_cast<double>(3 * e_.Bytes(x.sg)));
    }
    Done(mode, x.sg);
    Done(mode, x.g);
    const uint64_t y = e_.New(TensorKind::kTemporary, dt_, y_shape, name, "fc2");
    {
      const uint64_t in[] = {x.hm, w2};
      const uint64_t out[] = {y};
      e_.Op(Site::kExpertFc2, in, out, 2 * nn * static_cast<double>(ffn_ * h_));
    }
    Done(mode, x.hm);
    parts.push_back(y);
  }
  Done(mode, a.xp);
  a.ye = Act(mode, true, dt_, perm, "moe.expert_out");
  {
    const uint64_t out[] = {a.ye};
    e_.Op(Site::kExpertCat, parts, out);
  }
  e_.FreeAll(parts);
  const uint64_t y2 = e_.New(TensorKind::kTemporary, dt_, act, "moe.out");
  {
    const uint64_t in[] = {a.ye, a.topk_w, a.topk_i};
    const uint64_t out[] = {y2};
    e_.Op(Site::kUnpermute, in, out);
  }
  Done(mode, a.ye);
  Done(mode, a.topk_w);
  Done(mode, a.topk_i);
  return y2;
}

uint64_t Generator::MoeBackward(int32_t l, LayerActs& a, uint64_t gy, bool free_gy) {
  const LayerParams& P = layer_params_[l];
  const int32_t experts = o_.model.num_experts;
  const int32_t k = o_.model.experts_top_k;
  const int64_t t = tokens_;
  const int64_t te[] = {t, experts};
  const int64_t tk[] = {t, k};
  const int64_t perm[] = {t * k, h_};
  const int64_t act[] = {s_, bsz_, h_};
  const double row = static_cast<double>(h_ * DTypeBytes(dt_));
  const uint64_t gye = Grad(dt_, perm, "moe.expert_out.grad");
  {
    const uint64_t in[] = {gy, a.topk_i, a.topk_w};
    const uint64_t out[] = {gye};
    e_.Op(Site::kUnpermuteBwd, in, out);
  }
  const uint64_t gtw = Grad(kF32, tk, "moe.topk_weights.grad");
  {
    const uint64_t in[] = {gy, a.ye, a.topk_i};
    const uint64_t out[] = {gtw};
    e_.Op(Site::kCombineWeightBwd, in, out);
  }
  e_.Free(a.ye);
  e_.Free(a.topk_w);
  if (free_gy) e_.Free(gy);
  // Autograd walks the experts in reverse creation order.
  std::vector<uint64_t> parts;
  parts.reserve(experts);
  std::string name;
  for (int32_t e = experts - 1; e >= 0; --e) {
    ExpertActs& x = a.experts[e];
    if (x.tokens == 0) continue;
    const int64_t n = x.tokens;
    const double nn = static_cast<double>(n);
    if (o_.tensor_names) name = absl::StrCat("moe.e", e, ".");
    const int64_t g_shape[] = {n, 2 * ffn_};
    const int64_t f_shape[] = {n, ffn_};
    const int64_t y_shape[] = {n, h_};
    const int p1 = P.expert_fc1[e], p2 = P.expert_fc2[e];
    const double fc2_flops = 2 * nn * static_cast<double>(ffn_ * h_);
    const double fc1_flops = 2 * nn * static_cast<double>(h_ * 2 * ffn_);
    const uint64_t ghm = Grad(dt_, f_shape, name, "mul.grad");
    {
      const uint64_t in[] = {gye, W(p2)};
      const uint64_t out[] = {ghm};
      e_.Op(Site::kExpertFc2Dgrad, in, out, fc2_flops,
            nn * row + static_cast<double>(e_.Bytes(W(p2)) + e_.Bytes(ghm)));
      const uint64_t win[] = {gye, x.hm};
      WeightGrad(Site::kExpertFc2Wgrad, win, p2, fc2_flops, /*gemm=*/true);
    }
    e_.Free(x.hm);
    const uint64_t gsg = Grad(dt_, f_shape, name, "silu.grad");
    const uint64_t gup = Grad(dt_, f_shape, name, "up.grad");
    {
      const uint64_t in_g[] = {ghm, x.g};
      const uint64_t out_g[] = {gsg};
      e_.Op(Site::kExpertMulBwdGate, in_g, out_g, 0, static_cast<double>(3 * e_.Bytes(ghm)));
      const uint64_t in_u[] = {ghm, x.sg};
      const uint64_t out_u[] = {gup};
      e_.Op(Site::kExpertMulBwdUp, in_u, out_u);
    }
    e_.Free(ghm);
    e_.Free(x.sg);
    const uint64_t ggate = Grad(dt_, f_shape, name, "gate.grad");
    {
      const uint64_t in[] = {gsg, x.g};
      const uint64_t out[] = {ggate};
      e_.Op(Site::kExpertSiluBwd, in, out, 0, static_cast<double>(3 * e_.Bytes(gsg)));
    }
    e_.Free(gsg);
    e_.Free(x.g);
    const uint64_t gg = Grad(dt_, g_shape, name, "fc1.grad");
    {
      const uint64_t in[] = {ggate, gup};
      const uint64_t out[] = {gg};
      e_.Op(Site::kExpertCatGateUp, in, out);
    }
    e_.Free(ggate);
    e_.Free(gup);
    const uint64_t gx = Grad(dt_, y_shape, name, "in.grad");
    {
      const uint64_t in[] = {gg, W(p1)};
      const uint64_t out[] = {gx};
      e_.Op(Site::kExpertFc1Dgrad, in, out, fc1_flops);
      const uint64_t win[] = {gg, a.xp};
      WeightGrad(Site::kExpertFc1Wgrad, win, p1, fc1_flops, /*gemm=*/true);
    }
    e_.Free(gg);
    x = ExpertActs{};
    parts.push_back(gx);
  }
  e_.Free(gye);
  e_.Free(a.xp);
  std::reverse(parts.begin(), parts.end());
  const uint64_t gxp = Grad(dt_, perm, "moe.permuted.grad");
  {
    const uint64_t out[] = {gxp};
    e_.Op(Site::kExpertGradCat, parts, out);
  }
  e_.FreeAll(parts);
  const uint64_t gn2m = Grad(dt_, act, "moe.permute.grad_in");
  {
    const uint64_t in[] = {gxp, a.topk_i};
    const uint64_t out[] = {gn2m};
    e_.Op(Site::kPermuteBwd, in, out);
  }
  e_.Free(gxp);
  const uint64_t grp = Grad(kF32, te, "moe.router_probs.grad");
  {
    const uint64_t in[] = {gtw, a.topk_i};
    const uint64_t out[] = {grp};
    e_.Op(Site::kTopKBwd, in, out);
  }
  e_.Free(gtw);
  e_.Free(a.topk_i);
  const uint64_t grl = Grad(dt_, te, "moe.router_logits.grad");
  {
    const uint64_t in[] = {grp, a.router_probs};
    const uint64_t out[] = {grl};
    e_.Op(Site::kRouterSoftmaxBwd, in, out);
  }
  e_.Free(grp);
  e_.Free(a.router_probs);
  const uint64_t gn2r = Grad(dt_, act, "moe.router.grad_in");
  const double router_flops = 2.0 * static_cast<double>(t * h_ * experts);
  {
    const uint64_t in[] = {grl, W(P.router)};
    const uint64_t out[] = {gn2r};
    e_.Op(Site::kRouterDgrad, in, out, router_flops);
    const uint64_t win[] = {grl, a.n2};
    WeightGrad(Site::kRouterWgrad, win, P.router, router_flops, /*gemm=*/true);
  }
  e_.Free(grl);
  e_.Free(a.n2);
  const uint64_t gn2 = Grad(dt_, act, "mlp.norm.grad_out");
  {
    const uint64_t in[] = {gn2m, gn2r};
    const uint64_t out[] = {gn2};
    e_.Op(Site::kMoeGradAdd, in, out);
  }
  e_.Free(gn2m);
  e_.Free(gn2r);
  return gn2;
}

}  // namespace swapplan::synth_internal
