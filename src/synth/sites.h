// Call sites of the synthesizer: every place that emits an op, with its op
// name (CUDA/PyTorch and torch_npu spellings) and how its duration is
// modelled. The site index is the op's stack_id (a recorder's call-stack
// hash): two aten::mm at different sites get different ids.
#ifndef SWAPPLAN_SRC_SYNTH_SITES_H_
#define SWAPPLAN_SRC_SYNTH_SITES_H_

#include <cstdint>

namespace swapplan::synth_internal {

enum class CostKind : uint8_t {
  kCompute,        // roofline over HBM and FLOPs
  kAllReduce,      // ring collectives over the device link
  kReduceScatter,
  kAllGather,
  kPointToPoint,
  kHostToDevice,   // host link
};

#define SWAPPLAN_SYNTH_SITES(X)                                                        \
  /* inputs and pipeline transfers */                                                  \
  X(kTokensCopy, "aten::_to_copy", nullptr, kHostToDevice)                             \
  X(kLabelsCopy, "aten::_to_copy", nullptr, kHostToDevice)                             \
  X(kRecvForward, "c10d::recv", nullptr, kPointToPoint)                                \
  X(kSendForward, "c10d::send", nullptr, kPointToPoint)                                \
  X(kRecvBackward, "c10d::recv", nullptr, kPointToPoint)                               \
  X(kSendBackward, "c10d::send", nullptr, kPointToPoint)                               \
  /* embedding */                                                                      \
  X(kEmbedding, "aten::embedding", nullptr, kCompute)                                  \
  X(kEmbeddingAllReduce, "c10d::allreduce_", nullptr, kAllReduce)                      \
  X(kPosEmbedding, "aten::embedding", nullptr, kCompute)                               \
  X(kEmbAdd, "aten::add", nullptr, kCompute)                                           \
  X(kEmbDropout, "aten::native_dropout", nullptr, kCompute)                            \
  X(kEmbDropoutBwd, "aten::native_dropout_backward", nullptr, kCompute)                \
  X(kPosEmbeddingBwd, "aten::embedding_dense_backward", nullptr, kCompute)             \
  X(kEmbeddingBwd, "aten::embedding_dense_backward", nullptr, kCompute)                \
  /* transformer layer, forward */                                                     \
  X(kRmsNorm1, "aten::_fused_rms_norm", "npu::npu_rms_norm", kCompute)                 \
  X(kLayerNorm1, "aten::native_layer_norm", nullptr, kCompute)                         \
  X(kQkv, "aten::mm", nullptr, kCompute)                                               \
  X(kQkvBias, "aten::addmm", nullptr, kCompute)                                        \
  X(kRopeQ, "te::fused_rope_forward", "npu::npu_rotary_mul", kCompute)                 \
  X(kRopeK, "te::fused_rope_forward", "npu::npu_rotary_mul", kCompute)                 \
  X(kFlashAttn, "aten::_scaled_dot_product_flash_attention", "npu::npu_fusion_attention", \
    kCompute)                                                                          \
  X(kScores, "aten::baddbmm", nullptr, kCompute)                                       \
  X(kSoftmax, "aten::_softmax", "npu::npu_scaled_masked_softmax", kCompute)            \
  X(kAttnDropout, "aten::native_dropout", nullptr, kCompute)                           \
  X(kContext, "aten::bmm", nullptr, kCompute)                                          \
  X(kProj, "aten::mm", nullptr, kCompute)                                              \
  X(kProjBias, "aten::addmm", nullptr, kCompute)                                       \
  X(kTpAllReduceAttn, "c10d::allreduce_", nullptr, kAllReduce)                         \
  X(kDropout1, "aten::native_dropout", nullptr, kCompute)                              \
  X(kResidual1, "aten::add", nullptr, kCompute)                                        \
  X(kRmsNorm2, "aten::_fused_rms_norm", "npu::npu_rms_norm", kCompute)                 \
  X(kLayerNorm2, "aten::native_layer_norm", nullptr, kCompute)                         \
  X(kFc1, "aten::mm", nullptr, kCompute)                                               \
  X(kFc1Bias, "aten::addmm", nullptr, kCompute)                                        \
  X(kSilu, "aten::silu", nullptr, kCompute)                                            \
  X(kMul, "aten::mul", nullptr, kCompute)                                              \
  X(kGelu, "aten::gelu", nullptr, kCompute)                                            \
  X(kFc2, "aten::mm", nullptr, kCompute)                                               \
  X(kFc2Bias, "aten::addmm", nullptr, kCompute)                                        \
  X(kTpAllReduceMlp, "c10d::allreduce_", nullptr, kAllReduce)                          \
  X(kDropout2, "aten::native_dropout", nullptr, kCompute)                              \
  X(kResidual2, "aten::add", nullptr, kCompute)                                        \
  /* MoE, forward */                                                                   \
  X(kRouter, "aten::mm", nullptr, kCompute)                                            \
  X(kRouterSoftmax, "aten::_softmax", nullptr, kCompute)                               \
  X(kTopK, "aten::topk", nullptr, kCompute)                                            \
  X(kPermute, "aten::index_select", nullptr, kCompute)                                 \
  X(kExpertFc1, "aten::mm", nullptr, kCompute)                                         \
  X(kExpertSilu, "aten::silu", nullptr, kCompute)                                      \
  X(kExpertMul, "aten::mul", nullptr, kCompute)                                        \
  X(kExpertFc2, "aten::mm", nullptr, kCompute)                                         \
  X(kExpertCat, "aten::cat", nullptr, kCompute)                                        \
  X(kUnpermute, "aten::index_add", nullptr, kCompute)                                  \
  /* transformer layer, backward */                                                    \
  X(kDropout2Bwd, "aten::native_dropout_backward", nullptr, kCompute)                  \
  X(kFc2Dgrad, "aten::mm", nullptr, kCompute)                                          \
  X(kFc2Wgrad, "aten::mm", nullptr, kCompute)                                          \
  X(kFc2BiasGrad, "aten::sum", nullptr, kCompute)                                      \
  X(kMulBwdGate, "aten::mul", nullptr, kCompute)                                       \
  X(kMulBwdUp, "aten::mul", nullptr, kCompute)                                         \
  X(kSiluBwd, "aten::silu_backward", nullptr, kCompute)                                \
  X(kGeluBwd, "aten::gelu_backward", nullptr, kCompute)                                \
  X(kCatGateUp, "aten::cat", nullptr, kCompute)                                        \
  X(kFc1Dgrad, "aten::mm", nullptr, kCompute)                                          \
  X(kFc1Wgrad, "aten::mm", nullptr, kCompute)                                          \
  X(kFc1BiasGrad, "aten::sum", nullptr, kCompute)                                      \
  X(kTpAllReduceMlpBwd, "c10d::allreduce_", nullptr, kAllReduce)                       \
  X(kRmsNorm2Bwd, "aten::_fused_rms_norm_backward", "npu::npu_rms_norm_backward", kCompute) \
  X(kLayerNorm2Bwd, "aten::native_layer_norm_backward", nullptr, kCompute)             \
  X(kResidual2Bwd, "aten::add", nullptr, kCompute)                                     \
  X(kDropout1Bwd, "aten::native_dropout_backward", nullptr, kCompute)                  \
  X(kProjDgrad, "aten::mm", nullptr, kCompute)                                         \
  X(kProjWgrad, "aten::mm", nullptr, kCompute)                                         \
  X(kProjBiasGrad, "aten::sum", nullptr, kCompute)                                     \
  X(kFlashAttnBwd, "aten::_scaled_dot_product_flash_attention_backward",               \
    "npu::npu_fusion_attention_grad", kCompute)                                        \
  X(kContextBwdProbs, "aten::bmm", nullptr, kCompute)                                  \
  X(kContextBwdV, "aten::bmm", nullptr, kCompute)                                      \
  X(kAttnDropoutBwd, "aten::native_dropout_backward", nullptr, kCompute)               \
  X(kSoftmaxBwd, "aten::_softmax_backward_data", "npu::npu_scaled_masked_softmax_backward", \
    kCompute)                                                                          \
  X(kScoresBwdQ, "aten::bmm", nullptr, kCompute)                                       \
  X(kScoresBwdK, "aten::bmm", nullptr, kCompute)                                       \
  X(kRopeQBwd, "te::fused_rope_backward", "npu::npu_rotary_mul_backward", kCompute)    \
  X(kRopeKBwd, "te::fused_rope_backward", "npu::npu_rotary_mul_backward", kCompute)    \
  X(kCatQkv, "aten::cat", nullptr, kCompute)                                           \
  X(kQkvDgrad, "aten::mm", nullptr, kCompute)                                          \
  X(kQkvWgrad, "aten::mm", nullptr, kCompute)                                          \
  X(kQkvBiasGrad, "aten::sum", nullptr, kCompute)                                      \
  X(kTpAllReduceAttnBwd, "c10d::allreduce_", nullptr, kAllReduce)                      \
  X(kRmsNorm1Bwd, "aten::_fused_rms_norm_backward", "npu::npu_rms_norm_backward", kCompute) \
  X(kLayerNorm1Bwd, "aten::native_layer_norm_backward", nullptr, kCompute)             \
  X(kResidual1Bwd, "aten::add", nullptr, kCompute)                                     \
  /* MoE, backward */                                                                  \
  X(kUnpermuteBwd, "aten::index_select", nullptr, kCompute)                            \
  X(kCombineWeightBwd, "aten::mul", nullptr, kCompute)                                 \
  X(kExpertFc2Dgrad, "aten::mm", nullptr, kCompute)                                    \
  X(kExpertFc2Wgrad, "aten::mm", nullptr, kCompute)                                    \
  X(kExpertMulBwdGate, "aten::mul", nullptr, kCompute)                                 \
  X(kExpertMulBwdUp, "aten::mul", nullptr, kCompute)                                   \
  X(kExpertSiluBwd, "aten::silu_backward", nullptr, kCompute)                          \
  X(kExpertCatGateUp, "aten::cat", nullptr, kCompute)                                  \
  X(kExpertFc1Dgrad, "aten::mm", nullptr, kCompute)                                    \
  X(kExpertFc1Wgrad, "aten::mm", nullptr, kCompute)                                    \
  X(kExpertGradCat, "aten::cat", nullptr, kCompute)                                    \
  X(kPermuteBwd, "aten::index_add", nullptr, kCompute)                                 \
  X(kTopKBwd, "aten::scatter", nullptr, kCompute)                                      \
  X(kRouterSoftmaxBwd, "aten::_softmax_backward_data", nullptr, kCompute)              \
  X(kRouterDgrad, "aten::mm", nullptr, kCompute)                                       \
  X(kRouterWgrad, "aten::mm", nullptr, kCompute)                                       \
  X(kMoeGradAdd, "aten::add", nullptr, kCompute)                                       \
  /* final norm, LM head, loss */                                                      \
  X(kRmsNormFinal, "aten::_fused_rms_norm", "npu::npu_rms_norm", kCompute)             \
  X(kLayerNormFinal, "aten::native_layer_norm", nullptr, kCompute)                     \
  X(kLmHead, "aten::mm", nullptr, kCompute)                                            \
  X(kLogitsFloat, "aten::_to_copy", nullptr, kCompute)                                 \
  X(kCeMax, "aten::max", nullptr, kCompute)                                            \
  X(kCeAllReduce, "c10d::allreduce_", nullptr, kAllReduce)                             \
  X(kCeSub, "aten::sub_", nullptr, kCompute)                                           \
  X(kCeGather, "aten::gather", nullptr, kCompute)                                      \
  X(kCeExp, "aten::exp_", nullptr, kCompute)                                           \
  X(kCeSum, "aten::sum", nullptr, kCompute)                                            \
  X(kCeLoss, "aten::sub", nullptr, kCompute)                                           \
  X(kCeSoftmaxDiv, "aten::div_", nullptr, kCompute)                                    \
  X(kLossMean, "aten::mean", nullptr, kCompute)                                        \
  X(kLossScale, "aten::mul", nullptr, kCompute)                                        \
  X(kLossSeed, "aten::ones_like", nullptr, kCompute)                                   \
  X(kLossMeanBwd, "aten::div", nullptr, kCompute)                                      \
  X(kCeBwdOneHot, "aten::index_put_", nullptr, kCompute)                               \
  X(kCeBwdScale, "aten::mul_", nullptr, kCompute)                                      \
  X(kLogitsGradCast, "aten::_to_copy", nullptr, kCompute)                              \
  X(kLmHeadDgrad, "aten::mm", nullptr, kCompute)                                       \
  X(kLmHeadWgrad, "aten::mm", nullptr, kCompute)                                       \
  X(kTpAllReduceHeadBwd, "c10d::allreduce_", nullptr, kAllReduce)                      \
  X(kRmsNormFinalBwd, "aten::_fused_rms_norm_backward", "npu::npu_rms_norm_backward", kCompute) \
  X(kLayerNormFinalBwd, "aten::native_layer_norm_backward", nullptr, kCompute)         \
  /* gradients and parameters across ranks */                                          \
  X(kGradAccumulate, "aten::add_", nullptr, kCompute)                                  \
  X(kGradAllReduce, "c10d::allreduce_", nullptr, kAllReduce)                           \
  X(kGradReduceScatter, "c10d::reduce_scatter_", nullptr, kReduceScatter)              \
  X(kParamAllGather, "c10d::_allgather_base", nullptr, kAllGather)                     \
  X(kEmbTieAllReduce, "c10d::allreduce_", nullptr, kAllReduce)                         \
  /* optimizer */                                                                      \
  X(kFoundInfInit, "aten::zeros", nullptr, kCompute)                                   \
  X(kUnscaleCheck, "aten::_amp_foreach_non_finite_check_and_unscale_", nullptr, kCompute) \
  X(kFoundInfAllReduce, "c10d::allreduce_", nullptr, kAllReduce)                       \
  X(kUpdateScale, "aten::_amp_update_scale_", nullptr, kCompute)                       \
  X(kForeachNorm, "aten::_foreach_norm", nullptr, kCompute)                            \
  X(kTotalNorm, "aten::linalg_vector_norm", nullptr, kCompute)                         \
  X(kNormAllReduce, "c10d::allreduce_", nullptr, kAllReduce)                           \
  X(kClip, "aten::_foreach_mul_", nullptr, kCompute)                                   \
  X(kGradToFp32, "aten::_to_copy", nullptr, kCompute)                                  \
  X(kAdam, "aten::_fused_adam_", nullptr, kCompute)                                    \
  X(kCopyToParam, "aten::copy_", nullptr, kCompute)                                    \
  X(kZeroGrad, "aten::_foreach_zero_", nullptr, kCompute)                             \
  /* inference: KV cache, attention over it, next-token selection */                    \
  X(kKvWriteK, "aten::index_copy_", nullptr, kCompute)                                 \
  X(kKvWriteV, "aten::index_copy_", nullptr, kCompute)                                 \
  X(kPrefillAttn, "aten::_scaled_dot_product_flash_attention",                         \
    "npu::npu_prompt_flash_attention", kCompute)                                       \
  X(kDecodeAttn, "aten::_scaled_dot_product_flash_attention",                          \
    "npu::npu_incre_flash_attention", kCompute)                                        \
  X(kSelectLast, "aten::index_select", nullptr, kCompute)                              \
  X(kLogitsAllGather, "c10d::_allgather_base", nullptr, kAllGather)                    \
  X(kSample, "aten::argmax", nullptr, kCompute)

enum class Site : uint16_t {
#define SWAPPLAN_SYNTH_SITE_ENUM(id, cuda, npu, cost) id,
  SWAPPLAN_SYNTH_SITES(SWAPPLAN_SYNTH_SITE_ENUM)
#undef SWAPPLAN_SYNTH_SITE_ENUM
      kNumSites
};

struct SiteInfo {
  const char* cuda_name;
  // torch_npu spelling of the fused kernel; nullptr: same as cuda_name.
  const char* npu_name;
  CostKind cost;
};

inline constexpr SiteInfo kSiteInfo[] = {
#define SWAPPLAN_SYNTH_SITE_INFO(id, cuda, npu, cost) {cuda, npu, CostKind::cost},
    SWAPPLAN_SYNTH_SITES(SWAPPLAN_SYNTH_SITE_INFO)
#undef SWAPPLAN_SYNTH_SITE_INFO
};
static_assert(sizeof(kSiteInfo) / sizeof(kSiteInfo[0]) == static_cast<size_t>(Site::kNumSites));

// stack_id offsets: the same code reached through activation checkpointing or
// the validation loop has a different call stack.
inline constexpr int64_t kRecomputeStackOffset = 1000;
inline constexpr int64_t kValidationStackOffset = 2000;
// Inference decode steps (the prefill keeps the sites' own ids).
inline constexpr int64_t kDecodeStackOffset = 3000;

}  // namespace swapplan::synth_internal

#endif  // SWAPPLAN_SRC_SYNTH_SITES_H_
