// Gradients across micro-batches and ranks, ZeRO-3 parameter gathers, and
// the optimizer step (mixed-precision Adam).
//
// Weight gradients:
//   ZeRO 0/1  a GEMM's wgrad accumulates straight into the persistent
//             gradient buffer (Megatron's gradient-accumulation fusion); other
//             weights (norms, biases, embeddings) produce a transient full
//             gradient that is added into the buffer (aten::add_).
//             On the last micro-batch each layer's buffers are all-reduced
//             (ZeRO 0, DDP) or reduce-scattered (ZeRO 1) right after the
//             layer's backward, as bucketed DDP does.
//   ZeRO 2/3  every wgrad produces a transient full gradient that is
//             reduce-scattered into the persistent shard at once (every
//             micro-batch, as DeepSpeed does) and freed.
//   ZeRO 3    a layer's parameters are all-gathered into transient full
//             tensors before its forward, its recomputation+backward, and
//             freed after.
// With dp = 1 nothing is sharded and no collective is issued.
//
// Optimizer step (phase OPTIMIZER, after the last micro-batch's backward):
//   [loss scaling: found_inf = zeros; unscale + inf check over all grads;
//    [all-reduce found_inf]; update scale]
//   unless the step is skipped (overflow):
//     grad norm (_foreach_norm, linalg_vector_norm, [all-reduce]), clip
//     per parameter (its shard): [grad → fp32 copy], fused Adam on (master,
//       grad, exp_avg, exp_avg_sq), [copy master → 16-bit parameter]
//     [ZeRO 1/2, dp > 1: all-gather the updated parameters, per layer]
//   zero the gradient buffers (_foreach_zero_)
#include "generator.h"

namespace swapplan::synth_internal {

void Generator::WeightGrad(Site site, Ids inputs, int p, double flops, bool gemm) {
  Param& P = params_[p];
  if (gemm && zero_ < 2) {
    uint64_t in[8];
    size_t n = 0;
    for (uint64_t t : inputs) in[n++] = t;
    in[n++] = P.grad;
    const uint64_t out[] = {P.grad};
    e_.Op(site, Ids(in, n), out, flops);
    return;
  }
  const uint64_t tmp = e_.New(TensorKind::kGradient, dt_, P.shape, P.short_name, ".grad_tmp");
  const uint64_t out[] = {tmp};
  e_.Op(site, inputs, out, flops);
  Accumulate(tmp, p);
}

void Generator::Accumulate(uint64_t tmp_grad, int p) {
  const Param& P = params_[p];
  const uint64_t in[] = {tmp_grad, P.grad};
  const uint64_t out[] = {P.grad};
  if (zero_ >= 2 && dp_ > 1) {
    e_.Comm(Site::kGradReduceScatter, in, out, static_cast<double>(e_.Bytes(tmp_grad)), dp_);
  } else {
    e_.Op(Site::kGradAccumulate, in, out);
  }
  e_.Free(tmp_grad);
}

void Generator::GradSync(absl::Span<const int> params) {
  if (dp_ == 1 || zero_ >= 2 || params.empty()) return;
  std::vector<uint64_t> grads;
  double bytes = 0;
  for (int p : params) {
    grads.push_back(params_[p].grad);
    bytes += static_cast<double>(e_.Bytes(params_[p].grad));
  }
  e_.Comm(zero_ == 0 ? Site::kGradAllReduce : Site::kGradReduceScatter, grads, grads, bytes, dp_);
}

void Generator::Gather(absl::Span<const int> params) {
  if (zero_ < 3 || dp_ == 1 || params.empty()) return;
  std::vector<uint64_t> shards, full;
  double bytes = 0;
  for (int p : params) {
    Param& P = params_[p];
    P.gathered = e_.New(TensorKind::kParameter, dt_, P.shape, P.short_name, ".full");
    shards.push_back(P.param);
    full.push_back(P.gathered);
    bytes += static_cast<double>(e_.Bytes(P.gathered));
  }
  e_.Comm(Site::kParamAllGather, shards, full, bytes, dp_);
}

void Generator::Release(absl::Span<const int> params) {
  for (int p : params) {
    Param& P = params_[p];
    if (P.gathered == kNone) continue;
    e_.Free(P.gathered);
    P.gathered = kNone;
  }
}

void Generator::OptimizerStep(int32_t it) {
  e_.SetPhase(Phase::kOptimizer);
  e_.SetMicroBatch(o_.num_micro_batches - 1, /*validation=*/false);
  e_.SetStackOffset(0);
  e_.SetLayer(0);
  if (o_.tensor_names) e_.SetScope("optim.");
  const int64_t one[] = {1};
  const int32_t model_parallel = tp_ * o_.parallel.pipeline_parallel;
  const int gb = DTypeBytes(grad_dt_);
  double grad_bytes = 0;  // the gradient elements this rank's optimizer reads
  for (const Param& P : params_) grad_bytes += static_cast<double>(P.shard_numel * gb);
  if (o_.loss_scaling()) {
    const uint64_t found = e_.New(TensorKind::kTemporary, DType::kFloat32, one, "found_inf");
    {
      const uint64_t out[] = {found};
      e_.Op(Site::kFoundInfInit, {}, out);
    }
    std::vector<uint64_t> in(all_grads_), out(all_grads_);
    in.push_back(found);
    in.push_back(loss_scale_);
    out.push_back(found);
    e_.Op(Site::kUnscaleCheck, in, out, 0, 2 * grad_bytes);
    if (dp_ * model_parallel > 1) {
      const uint64_t io[] = {found};
      e_.Comm(Site::kFoundInfAllReduce, io, io, 4, dp_ * model_parallel);
    }
    const uint64_t uin[] = {loss_scale_, growth_tracker_, found};
    const uint64_t uout[] = {loss_scale_, growth_tracker_};
    e_.Op(Site::kUpdateScale, uin, uout);
    e_.Free(found);
  }
  if (!o_.skips_step(it)) {
    const int64_t nparams[] = {static_cast<int64_t>(params_.size())};
    const uint64_t norms = e_.New(TensorKind::kTemporary, DType::kFloat32, nparams, "grad_norms");
    {
      const uint64_t out[] = {norms};
      e_.Op(Site::kForeachNorm, all_grads_, out, 0, grad_bytes);
    }
    const uint64_t total = e_.New(TensorKind::kTemporary, DType::kFloat32, one, "grad_norm");
    {
      const uint64_t in[] = {norms};
      const uint64_t out[] = {total};
      e_.Op(Site::kTotalNorm, in, out);
    }
    e_.Free(norms);
    const int32_t norm_group = model_parallel * (zero_ >= 1 ? dp_ : 1);
    if (norm_group > 1) {
      const uint64_t io[] = {total};
      e_.Comm(Site::kNormAllReduce, io, io, 4, norm_group);
    }
    {
      std::vector<uint64_t> in(all_grads_);
      in.push_back(total);
      e_.Op(Site::kClip, in, all_grads_, 0, 2 * grad_bytes);
    }
    e_.Free(total);
    const bool mixed = o_.mixed_precision();
    for (Param& P : params_) {
      e_.SetLayer(P.layer);
      const int64_t n = P.shard_numel;
      const double nd = static_cast<double>(n);
      uint64_t g32 = P.grad;
      if (grad_dt_ != DType::kFloat32) {
        const int64_t shape[] = {n};
        g32 = e_.New(TensorKind::kTemporary, DType::kFloat32, shape, P.name, ".grad_fp32");
        const uint64_t in[] = {P.grad};
        const uint64_t out[] = {g32};
        e_.Op(Site::kGradToFp32, in, out, 0, nd * (gb + 4));
      }
      const uint64_t master = mixed ? P.master : P.param;
      {
        // Reads param, grad and both moments (16 B), writes three (12 B).
        const uint64_t in[] = {master, g32, P.exp_avg, P.exp_avg_sq};
        const uint64_t out[] = {master, P.exp_avg, P.exp_avg_sq};
        e_.Op(Site::kAdam, in, out, 12 * nd, 28 * nd);
      }
      if (g32 != P.grad) e_.Free(g32);
      if (mixed) {
        const uint64_t in[] = {P.param, master};
        const uint64_t out[] = {P.param};
        e_.Op(Site::kCopyToParam, in, out, 0, nd * (4 + DTypeBytes(dt_)));
      }
    }
    if ((zero_ == 1 || zero_ == 2) && dp_ > 1) {
      // Distributed optimizer: every rank updated its shard; gather them.
      auto gather = [&](absl::Span<const int> group) {
        if (group.empty()) return;
        std::vector<uint64_t> ids;
        double bytes = 0;
        for (int p : group) {
          ids.push_back(params_[p].param);
          bytes += static_cast<double>(e_.Bytes(params_[p].param));
        }
        e_.SetLayer(params_[group[0]].layer);
        e_.Comm(Site::kParamAllGather, ids, ids, bytes, dp_);
      };
      gather(embedding_params_);
      for (const LayerParams& lp : layer_params_) gather(lp.all);
      gather(head_own_params_);
    }
  }
  e_.SetLayer(layers_ - 1);
  double all_grad_bytes = 0;
  for (uint64_t g : all_grads_) all_grad_bytes += static_cast<double>(e_.Bytes(g));
  e_.Op(Site::kZeroGrad, all_grads_, all_grads_, 0, all_grad_bytes);
}

}  // namespace swapplan::synth_internal
