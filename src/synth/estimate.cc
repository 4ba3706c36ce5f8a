// Closed-form memory estimate; see estimate.h. Written from the model of a
// Megatron-style step (synth.h), not from the generator: the two agreeing is
// the test.
//
// Notation (per TP rank): T = s·b tokens, p = dtype bytes, h hidden,
// a = heads/t, k = kv_heads/t, d head dim, f = ffn/t, V = padded vocab/t,
// L = stage layers, E experts, K = top-k, δ = 1 with dropout, N = micro-batches
// in flight = min(pp - stage, micro-batches) (1F1B), z2 / z3 = ZeRO >= 2 / 3.
//
//   X  = T·h·p      one [s,b,h] activation       Xb = T·h     its bool mask
//   F  = T·f·p      one [s,b,f] activation       σ  = 4T (rms) | 8T (layernorm)
//   Qb = T·a·d·p    Kb = T·k·d·p                 QKV = Qb + 2·Kb
//   S2 = p·b·a·s²   one S×S tensor               M2 = b·a·s²  its bool mask
//
// Persistent: Φ parameter elements; params p·Φ (/dp under ZeRO-3), gradients
// g·Φ (/dp under ZeRO >= 2; g = 4 with fp32 accumulation), Adam
// (12 mixed | 8 fp32)·Φ (/dp under ZeRO >= 1), plus the rotary table 4·s·d,
// position ids 8s, the causal mask s² (classic attention), loss scale 8 B.
//
// Saved per layer (A) and micro-batch (A_mb = L·A + tokens 8T + δ·Xb):
//   A = X (x) + σ + X (n1) + QKV + [rotary] Qb + Kb + Qb (o)
//       + [flash] 4·T·a (lse) | [classic] S2 + δ(S2 + M2)
//       + δ·Xb + X (r) + σ + X (n2) + MLP + δ·Xb
//   MLP = 4F (gated: fc1 2F, silu F, mul F) | 2F (gelu) |
//         MoE: 4TE (router probs) + 12TK (top-k weights, indices) + 2K·X
//              (permuted input, expert outputs) + 4K·T·f·p (experts)
// With recomputation a layer keeps X; backward re-creates A − X of one layer
// plus its output X (held until its backward ends).
//
// The peak is the worst of these instants (derivations next to each term):
//   layer  N micro-batches saved, the first backward layer in its worst op
//   head   last stage: logits (p·T·V) and their fp32 copy (4·T·V) at once
//   embed  first stage: the dense embedding gradient (V·h·p)
//   optim  the fp32 copy of the largest gradient shard
#include "swapplan/synth/estimate.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace swapplan {
namespace {

struct Candidate {
  double bytes;
  const char* where;
};

}  // namespace

absl::StatusOr<MemoryEstimate> EstimateMemory(const SynthOptions& o) {
  if (absl::Status st = o.Validate(); !st.ok()) return st;
  const ModelConfig& m = o.model;
  const int32_t tp = o.parallel.tensor_parallel;
  const double dp = o.parallel.data_parallel;
  const int32_t zero = o.parallel.zero_stage;
  const double s = static_cast<double>(o.seq_length_tokens);
  const double b = o.micro_batch_sequences;
  const double T = s * b;
  const double p = DTypeBytes(o.dtype);
  const double g = o.fp32_grad_accumulation ? 4 : p;
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_heads / tp);
  const double k = static_cast<double>(m.num_kv_heads / tp);
  const double d = static_cast<double>(m.head_dim());
  const double f = static_cast<double>(m.ffn_hidden_size / tp);
  const double V = static_cast<double>(o.padded_vocab() / tp);
  const double E = m.num_experts;
  const double K = m.experts_top_k;
  const double L = o.stage_layers();
  const double N = o.micro_batches_in_flight();
  const double delta = m.dropout_probability > 0 ? 1 : 0;
  const bool rotary = m.position == PositionKind::kRotary;
  const bool flash = o.attention == AttentionKind::kFlash;
  const bool gated = m.mlp == MlpKind::kGatedSilu;
  const bool ln = m.norm == NormKind::kLayerNorm;
  const bool moe = m.num_experts > 0;
  const bool first = o.first_stage(), last = o.last_stage();
  const bool z2 = zero >= 2;
  const bool z3 = zero >= 3 && dp > 1;

  // --- parameters (elements per TP rank) ---
  const double fc1_out = gated ? 2 * f : f;
  const double bias = m.bias ? 1 : 0;
  const double per_layer = (ln ? 4 : 2) * h + (a + 2 * k) * d * (h + bias) + h * a * d + bias * h +
                           (moe ? E * h + E * 3 * f * h
                                : fc1_out * (h + bias) + f * h + bias * h);
  const bool learned = m.position == PositionKind::kLearned;
  const double emb = first ? V * h + (learned ? static_cast<double>(m.max_position_embeddings) * h
                                              : 0)
                           : 0;
  const double head = last ? (ln ? 2 : 1) * h + (m.tied_embeddings && first ? 0 : V * h) : 0;
  const double phi = L * per_layer + emb + head;

  MemoryEstimate e;
  e.stage_parameters = std::llround(phi);
  const double param_bytes = p * (z3 ? phi / dp : phi);
  const double grad_bytes = g * (z2 && dp > 1 ? phi / dp : phi);
  const double opt_bytes = (o.mixed_precision() ? 12 : 8) * (zero >= 1 ? phi / dp : phi);
  const double other = (rotary ? 4 * s * d : 0) + (learned && first ? 8 * s : 0) +
                       (flash ? 0 : s * s) + (o.loss_scaling() ? 8 : 0);
  e.parameter_bytes = std::llround(param_bytes);
  e.gradient_bytes = std::llround(grad_bytes);
  e.optimizer_state_bytes = std::llround(opt_bytes);
  e.other_persistent_bytes = std::llround(other);
  e.persistent_bytes =
      e.parameter_bytes + e.gradient_bytes + e.optimizer_state_bytes + e.other_persistent_bytes;

  // --- saved activations ---
  const double X = T * h * p, Xb = T * h, F = T * f * p;
  const double sigma = 4 * T * (ln ? 2 : 1);
  const double Qb = T * a * d * p, Kb = T * k * d * p, QKV = Qb + 2 * Kb;
  const double S2 = p * b * a * s * s, M2 = b * a * s * s;
  const double mlp_saved = moe ? 4 * T * E + 12 * T * K + 2 * K * X + 4 * K * T * f * p
                               : (gated ? 4 * F : 2 * F);
  const double attn_saved = X + sigma + X + QKV + (rotary ? Qb + Kb : 0) + Qb +
                            (flash ? 4 * T * a : S2 + delta * (S2 + M2));
  const double A = attn_saved + delta * Xb + X + sigma + X + mlp_saved + delta * Xb;
  const double A_emb = first ? 8 * T + delta * Xb : 0;
  const double A_mb = L * (o.recompute ? X : A) + A_emb;
  e.activation_bytes_per_layer = std::llround(o.recompute ? X : A);
  e.activation_bytes_per_micro_batch = std::llround(A_mb);
  e.micro_batches_in_flight = static_cast<int32_t>(N);

  std::vector<Candidate> c;
  // --- layer: the first backward layer of the oldest micro-batch ---
  // Δ = bytes live beyond the layer's full saved set A (negative once saved
  // tensors are freed), walking its backward (dout = X is live on entry):
  //   fc2 dgrad/wgrad: dout + [dropout: its grad X, mask freed] + grad of the
  //     fc2 input F + [z2: transient weight grad h·f·p]
  //   activation backward: gated: mul's two input grads (2F) while its output
  //     (F) is freed and the fc2 input grad (F) still live → X + 2F; gelu X + F
  //   fc1 wgrad: dout + grad of norm2 output X + fc1 grad G, MLP saved freed
  //     except G's owner... → 2X + G − MLP + [z2: h·G/T weight grad]
  //   out-proj: the residual grad X + [dropout X] + grad of o (Qb), everything
  //     of the MLP half freed (freed_mlp = MLP + r + n2 + σ + δXb)
  //   flash backward: + gq, gk, gv (Qb + 2Kb) while go (Qb) is live
  //   classic: grad of the (dropped) probabilities S2 while o is freed and go
  //     (Qb) live; next the grad of v (Kb) once (rotary) qkv is freed
  //   QKV GEMMs: see below
  const double G = gated ? 2 * F : F;
  const double W1 = h * fc1_out * p, W2 = h * f * p, Wp = h * a * d * p;
  const double freed_mlp = mlp_saved + 2 * X + sigma + delta * Xb;
  std::vector<double> deltas;
  if (moe) {
    // MoE: the gradient of the expert outputs (K·X) and of the routing
    // weights (4TK) while the expert outputs are still saved; then per
    // expert (mean load n = K·T/E) as for the gated MLP.
    const double Fe = K * T / E * f * p;
    deltas.push_back(X + delta * (X - Xb) + K * X + 4 * T * K);
    deltas.push_back(X - delta * Xb + std::max(2 * Fe, Fe + (z2 ? W2 : 0)));
    // An expert's fc1 wgrad: its input grad (n·h·p) and [z2] the transient
    // weight grad 2·f·h·p, its own saved set (4·Fe) freed but fc1's grad 2·Fe.
    deltas.push_back(X - delta * Xb + K * T / E * h * p - 2 * Fe + (z2 ? 2 * f * h * p : 0));
  } else {
    deltas.push_back(X + delta * (X - Xb) + F + (z2 ? W2 : 0));
    deltas.push_back(X - delta * Xb + (gated ? 2 * F : F));
    deltas.push_back(2 * X - delta * Xb + G - mlp_saved + (z2 ? W1 : 0));
  }
  deltas.push_back(X + delta * (X - Xb) + Qb + (z2 ? Wp : 0) - freed_mlp);
  if (flash) {
    deltas.push_back(X + 2 * Qb + 2 * Kb - freed_mlp - delta * Xb);
  } else {
    // At the bmm producing the probabilities' gradient (o freed, go live),
    // then at the one producing v's gradient (+Kb; rotary: qkv freed).
    deltas.push_back(X + S2 - freed_mlp - delta * Xb);
    deltas.push_back(X + S2 + Kb - freed_mlp - delta * Xb - (rotary ? QKV : 0));
  }
  // QKV dgrad/wgrad: the residual grad X, gqkv (QKV), gn1 X, [z2: the
  // transient weight grad (a+2k)·d·h·p], with everything of the layer freed
  // but x, n1 and norm1's statistics.
  deltas.push_back(2 * X + QKV + (z2 ? QKV / T * h : 0) - freed_mlp - delta * Xb -
                   (attn_saved - 2 * X - sigma));
  double layer_delta = *std::max_element(deltas.begin(), deltas.end());
  // Classic attention, forward at the softmax: the S×S scores (temporary)
  // next to the probabilities, with the rest of the layer's saved set not
  // yet created. During recomputation the incoming gradient X is live too;
  // in the last forward layer it is not.
  const double softmax_delta = S2 - delta * (S2 + M2) - Qb - 2 * delta * Xb - 2 * X - sigma -
                               mlp_saved;
  // The end of a layer's forward: the MLP output X and the layer output (or
  // its dropout) X next to the full saved set — in the last forward layer of
  // the newest micro-batch, and during recomputation with dout live too.
  const double forward_end_delta = 2 * X;
  // ZeRO-3: the layer's gathered parameters are live around its backward.
  const double layer_params = z3 ? per_layer * p : 0;
  if (o.recompute) {
    // N checkpointed micro-batches (A_mb holds L·X), the re-created layer
    // (A − X) and, during its backward, the recomputed output X.
    double base = N * A_mb + (A - X) + layer_params;
    double worst = std::max(layer_delta, forward_end_delta) + X;
    if (!flash) worst = std::max(worst, X + softmax_delta);
    c.push_back({base + worst, "first backward layer (recomputed)"});
  } else {
    double worst = std::max(layer_delta, forward_end_delta);
    if (!flash) worst = std::max(worst, softmax_delta);
    c.push_back({N * A_mb + worst + layer_params, "first backward layer"});
  }
  // --- head (last stage; N = 1 there) ---
  // Saved: x_last, nf (X each), σ, labels 8T (the loss comes later). At the
  // fp32 cast of the logits both copies are live: (p + 4)·T·V. In backward
  // the cast back
  // holds the same two minus the labels; the head GEMMs hold glog (p·T·V),
  // the norm grad X, [ZeRO-3 the gathered head (V·h + norm)·p, ZeRO >= 2 the
  // transient weight gradient V·h·p].
  if (last) {
    const double head_saved = 2 * X + sigma + 8 * T;
    // The head's weight is gathered even when it is the (tied) embedding.
    const double head_params = z3 ? ((ln ? 2 : 1) * h + V * h) * p : 0;
    const double extra = std::max({(p + 4) * T * V, p * T * V + head_params,
                                   p * T * V + X + head_params + (z2 ? V * h * p : 0)});
    c.push_back({(N - 1) * A_mb + A_mb + head_saved + extra, "loss (logits and their fp32 copy)"});
  }
  // --- embedding backward (first stage) ---
  // The other N − 1 micro-batches, this one's token ids and incoming
  // gradient, and the dense gradient of the word embeddings V·h·p.
  if (first) c.push_back({(N - 1) * A_mb + 8 * T + X + V * h * p, "embedding backward"});
  // --- optimizer: the fp32 copy of the largest gradient shard ---
  if (g != 4) {
    const double largest = std::max({moe ? 2 * f * h : fc1_out * h, (a + 2 * k) * d * h,
                                     first ? V * h : 0.0, last && head > 2 * h ? V * h : 0.0});
    c.push_back({4 * (zero >= 1 ? std::ceil(largest / dp) : largest), "optimizer"});
  }
  const Candidate* best = &c[0];
  for (const Candidate& x : c) {
    if (x.bytes > best->bytes) best = &x;
  }
  e.peak_bytes = e.persistent_bytes + std::llround(best->bytes);
  e.peak_where = best->where;
  e.transient_bytes = e.peak_bytes - e.persistent_bytes - std::llround(N * A_mb);
  return e;
}

}  // namespace swapplan
