#include "llama_trace.h"

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swapplan/trace/builder.h"

namespace swapplan::bench {
namespace {

class Gen {
 public:
  explicit Gen(TraceBuilder* b) : b_(b) {}

  uint64_t Tensor(int64_t bytes, TensorKind kind, bool persistent = false) {
    const uint64_t id = next_++;
    b_->AddTensor({.id = id,
                   .size_bytes = bytes,
                   .dtype = DType::kBFloat16,
                   .kind = kind,
                   .persistent = static_cast<int8_t>(persistent ? 1 : -1)});
    return id;
  }
  void Op(const char* name, Phase phase, std::initializer_list<uint64_t> in,
          std::initializer_list<uint64_t> out, std::optional<int32_t> layer = std::nullopt) {
    const std::vector<uint64_t> i(in), o(out);
    b_->AddOp({.name = b_->InternOpName(name), .phase = phase, .inputs = i, .outputs = o,
               .layer = layer});
  }

 private:
  TraceBuilder* b_;
  uint64_t next_ = 0;
};

struct LayerParams {
  uint64_t ln1, wq, wk, wv, wo, ln2, wg, wu, wd;
  uint64_t g_ln1, g_wq, g_wk, g_wv, g_wo, g_ln2, g_wg, g_wu, g_wd;
  uint64_t adam;
};

struct Saved {
  uint64_t x, h1, rstd1, qr, kr, v, o, lse, x2, h2, rstd2, g, u, sg, m;
};

}  // namespace

Trace LlamaTrace(const LlamaShape& s) {
  TraceBuilder b("llama2-7b-bench");
  b.metadata().device_name = "bench-80g";
  b.metadata().device_memory_bytes = s.device_memory_bytes;
  b.metadata().h2d_bandwidth_bytes_per_s = s.link_bytes_per_s;
  b.metadata().d2h_bandwidth_bytes_per_s = s.link_bytes_per_s;
  b.metadata().model_name = "llama2-7b";
  b.metadata().model_layers = s.layers;
  Gen g(&b);
  const int64_t sh = s.seq * s.hidden * 2, sf = s.seq * s.ffn * 2;
  const int64_t hh = s.hidden * s.hidden * 2, hf = s.hidden * s.ffn * 2, norm = s.hidden * 2;
  const int64_t rstd = s.seq * 4, lse = s.heads * s.seq * 4;
  // Adam: fp32 master weights and two moments, sharded.
  auto adam_bytes = [&](int64_t param_bytes) { return param_bytes / 2 * 12 / s.zero_shards; };
  auto param = [&](int64_t bytes) { return g.Tensor(bytes, TensorKind::kParameter); };
  auto grad_buf = [&](int64_t bytes) { return g.Tensor(bytes, TensorKind::kGradient, true); };
  auto act = [&](int64_t bytes) { return g.Tensor(bytes, TensorKind::kActivation); };
  auto grad = [&](int64_t bytes) { return g.Tensor(bytes, TensorKind::kGradient); };

  const uint64_t wemb = param(s.vocab * s.hidden * 2), g_wemb = grad_buf(s.vocab * s.hidden * 2);
  const uint64_t lnf = param(norm), g_lnf = grad_buf(norm);
  const uint64_t wlm = param(s.vocab * s.hidden * 2), g_wlm = grad_buf(s.vocab * s.hidden * 2);
  const uint64_t adam_head =
      g.Tensor(adam_bytes(2 * s.vocab * s.hidden * 2 + norm), TensorKind::kOptimizerState);
  std::vector<LayerParams> lp(s.layers);
  for (LayerParams& p : lp) {
    p = {param(norm), param(hh), param(hh), param(hh), param(hh), param(norm), param(hf),
         param(hf),   param(hf), grad_buf(norm), grad_buf(hh), grad_buf(hh), grad_buf(hh),
         grad_buf(hh), grad_buf(norm), grad_buf(hf), grad_buf(hf), grad_buf(hf), 0};
    p.adam = g.Tensor(adam_bytes(4 * hh + 3 * hf + 2 * norm), TensorKind::kOptimizerState);
  }
  const uint64_t tokens = g.Tensor(s.seq * 8, TensorKind::kInput);
  const uint64_t labels = g.Tensor(s.seq * 8, TensorKind::kInput);

  b.BeginIteration();
  constexpr Phase F = Phase::kForward, B = Phase::kBackward, O = Phase::kOptimizer;
  uint64_t x = act(sh);
  g.Op("aten::embedding", F, {tokens, wemb}, {x});
  std::vector<Saved> saved(s.layers);
  for (int32_t l = 0; l < s.layers; ++l) {
    const LayerParams& p = lp[l];
    Saved& sv = saved[l];
    sv.x = x;
    sv.h1 = act(sh), sv.rstd1 = act(rstd);
    g.Op("aten::rms_norm", F, {x, p.ln1}, {sv.h1, sv.rstd1}, l);
    const uint64_t q = act(sh), k = act(sh);
    sv.v = act(sh);
    g.Op("aten::mm", F, {sv.h1, p.wq}, {q}, l);
    g.Op("aten::mm", F, {sv.h1, p.wk}, {k}, l);
    g.Op("aten::mm", F, {sv.h1, p.wv}, {sv.v}, l);
    sv.qr = act(sh), sv.kr = act(sh);
    g.Op("rope", F, {q}, {sv.qr}, l);
    g.Op("rope", F, {k}, {sv.kr}, l);
    sv.o = act(sh), sv.lse = act(lse);
    g.Op("flash_attn_fwd", F, {sv.qr, sv.kr, sv.v}, {sv.o, sv.lse}, l);
    const uint64_t ao = act(sh);
    g.Op("aten::mm", F, {sv.o, p.wo}, {ao}, l);
    sv.x2 = act(sh);
    g.Op("aten::add", F, {x, ao}, {sv.x2}, l);
    sv.h2 = act(sh), sv.rstd2 = act(rstd);
    g.Op("aten::rms_norm", F, {sv.x2, p.ln2}, {sv.h2, sv.rstd2}, l);
    sv.g = act(sf), sv.u = act(sf);
    g.Op("aten::mm", F, {sv.h2, p.wg}, {sv.g}, l);
    g.Op("aten::mm", F, {sv.h2, p.wu}, {sv.u}, l);
    sv.sg = act(sf);
    g.Op("aten::silu", F, {sv.g}, {sv.sg}, l);
    sv.m = act(sf);
    g.Op("aten::mul", F, {sv.sg, sv.u}, {sv.m}, l);
    const uint64_t dn = act(sh);
    g.Op("aten::mm", F, {sv.m, p.wd}, {dn}, l);
    x = act(sh);
    g.Op("aten::add", F, {sv.x2, dn}, {x}, l);
  }
  const uint64_t hfin = act(sh), rstdf = act(rstd);
  g.Op("aten::rms_norm", F, {x, lnf}, {hfin, rstdf});
  const uint64_t logits = act(s.seq * s.vocab * 2);
  g.Op("aten::mm", F, {hfin, wlm}, {logits});
  const uint64_t loss = act(4);
  g.Op("aten::cross_entropy_loss", F, {logits, labels}, {loss});

  const uint64_t dlogits = grad(s.seq * s.vocab * 2);
  g.Op("aten::cross_entropy_backward", B, {loss, logits, labels}, {dlogits});
  const uint64_t dhf = grad(sh);
  g.Op("aten::mm_backward", B, {dlogits, wlm}, {dhf});
  g.Op("aten::mm_backward", B, {hfin, dlogits, g_wlm}, {g_wlm});
  uint64_t dy = grad(sh);
  g.Op("aten::rms_norm_backward", B, {dhf, x, rstdf, lnf, g_lnf}, {dy, g_lnf});
  for (int32_t l = s.layers - 1; l >= 0; --l) {
    const LayerParams& p = lp[l];
    const Saved& sv = saved[l];
    const uint64_t dm = grad(sf);
    g.Op("aten::mm_backward", B, {dy, p.wd}, {dm}, l);
    g.Op("aten::mm_backward", B, {sv.m, dy, p.g_wd}, {p.g_wd}, l);
    const uint64_t dsg = grad(sf), du = grad(sf);
    g.Op("aten::mul_backward", B, {dm, sv.sg, sv.u}, {dsg, du}, l);
    const uint64_t dg = grad(sf);
    g.Op("aten::silu_backward", B, {dsg, sv.g}, {dg}, l);
    const uint64_t dh2a = grad(sh), dh2b = grad(sh), dh2 = grad(sh);
    g.Op("aten::mm_backward", B, {du, p.wu}, {dh2a}, l);
    g.Op("aten::mm_backward", B, {sv.h2, du, p.g_wu}, {p.g_wu}, l);
    g.Op("aten::mm_backward", B, {dg, p.wg}, {dh2b}, l);
    g.Op("aten::mm_backward", B, {sv.h2, dg, p.g_wg}, {p.g_wg}, l);
    g.Op("aten::add", B, {dh2a, dh2b}, {dh2}, l);
    const uint64_t dx2n = grad(sh), dx2 = grad(sh);
    g.Op("aten::rms_norm_backward", B, {dh2, sv.x2, sv.rstd2, p.ln2, p.g_ln2}, {dx2n, p.g_ln2},
         l);
    g.Op("aten::add", B, {dy, dx2n}, {dx2}, l);
    const uint64_t dout = grad(sh);
    g.Op("aten::mm_backward", B, {dx2, p.wo}, {dout}, l);
    g.Op("aten::mm_backward", B, {sv.o, dx2, p.g_wo}, {p.g_wo}, l);
    const uint64_t dq = grad(sh), dk = grad(sh), dv = grad(sh);
    g.Op("flash_attn_bwd", B, {dout, sv.qr, sv.kr, sv.v, sv.o, sv.lse}, {dq, dk, dv}, l);
    const uint64_t dqr = grad(sh), dkr = grad(sh);
    g.Op("rope_backward", B, {dq}, {dqr}, l);
    g.Op("rope_backward", B, {dk}, {dkr}, l);
    const uint64_t dh1q = grad(sh), dh1k = grad(sh), dh1v = grad(sh), dh1 = grad(sh);
    g.Op("aten::mm_backward", B, {dqr, p.wq}, {dh1q}, l);
    g.Op("aten::mm_backward", B, {sv.h1, dqr, p.g_wq}, {p.g_wq}, l);
    g.Op("aten::mm_backward", B, {dkr, p.wk}, {dh1k}, l);
    g.Op("aten::mm_backward", B, {sv.h1, dkr, p.g_wk}, {p.g_wk}, l);
    g.Op("aten::mm_backward", B, {dv, p.wv}, {dh1v}, l);
    g.Op("aten::mm_backward", B, {sv.h1, dv, p.g_wv}, {p.g_wv}, l);
    g.Op("aten::add", B, {dh1q, dh1k, dh1v}, {dh1}, l);
    const uint64_t dxn = grad(sh), dx = grad(sh);
    g.Op("aten::rms_norm_backward", B, {dh1, sv.x, sv.rstd1, p.ln1, p.g_ln1}, {dxn, p.g_ln1}, l);
    g.Op("aten::add", B, {dx2, dxn}, {dx}, l);
    dy = dx;
  }
  g.Op("aten::embedding_backward", B, {dy, tokens, g_wemb}, {g_wemb});
  for (int32_t l = 0; l < s.layers; ++l) {
    const LayerParams& p = lp[l];
    g.Op("adam_step", O,
         {p.ln1, p.wq, p.wk, p.wv, p.wo, p.ln2, p.wg, p.wu, p.wd, p.g_ln1, p.g_wq, p.g_wk, p.g_wv,
          p.g_wo, p.g_ln2, p.g_wg, p.g_wu, p.g_wd, p.adam},
         {p.adam});
  }
  g.Op("adam_step", O, {wemb, lnf, wlm, g_wemb, g_lnf, g_wlm, adam_head}, {adam_head});
  b.EndIteration(s.iteration_time_ns);
  absl::StatusOr<Trace> t = std::move(b).Finish();
  if (!t.ok()) std::abort();  // a generator bug; benchmarks have no error path
  return std::move(t).value();
}

}  // namespace swapplan::bench
