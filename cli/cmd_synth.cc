// swapplan synth [--model NAME] [--device NAME] [knobs...] -o FILE
//
// Writes a synthetic transformer training trace (library: swapplan/synth) and
// prints a short summary: op counts, persistent bytes, the rebuilt peak and
// the closed-form estimate next to it.
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/synth/estimate.h"
#include "swapplan/synth/synth.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/stats.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct SynthArgs {
  std::string model = "llama2-7b";
  std::string device = "a100-80g";
  std::optional<int32_t> layers, heads, kv_heads, experts, top_k;
  std::optional<int64_t> hidden, ffn, vocab, seq;
  std::optional<double> dropout;
  int32_t micro_batch = 1, micro_batches = 1;
  int32_t tp = 1, dp = 1, zero = 0, pp = 1, pp_stage = 0;
  bool recompute = false;
  std::string dtype = "bf16";
  bool flash = true;
  bool fp32_grads = false;
  int32_t iterations = 1, skip_every = 0, validation_every = 0, validation_micro_batches = 1;
  uint64_t seed = 1;
  double moe_imbalance = 0.3;
  double flops_efficiency = 1.0, hbm_efficiency = 1.0;
  std::optional<std::string> device_memory, h2d, d2h, hbm_bandwidth, link_bandwidth;
  std::optional<double> peak_flops;
  bool no_names = false;
  bool list_presets = false;
  bool quiet = false;
  std::string output;
};

absl::StatusOr<SynthOptions> BuildOptions(const SynthArgs& a) {
  SynthOptions o;
  SWAPPLAN_ASSIGN_OR_RETURN(o.model, ModelPreset(a.model));
  SWAPPLAN_ASSIGN_OR_RETURN(o.device, DevicePreset(a.device));
  ModelConfig& m = o.model;
  if (a.layers) m.layers = *a.layers;
  if (a.hidden) m.hidden_size = *a.hidden;
  if (a.ffn) m.ffn_hidden_size = *a.ffn;
  if (a.heads) {
    m.num_heads = *a.heads;
    if (!a.kv_heads && m.num_kv_heads > m.num_heads) m.num_kv_heads = m.num_heads;
  }
  if (a.kv_heads) m.num_kv_heads = *a.kv_heads;
  if (a.vocab) m.vocab_size = *a.vocab;
  if (a.experts) m.num_experts = *a.experts;
  if (a.top_k) m.experts_top_k = *a.top_k;
  if (a.dropout) m.dropout_probability = *a.dropout;
  if (a.layers || a.hidden || a.ffn || a.heads || a.kv_heads || a.vocab || a.experts) {
    m.name = absl::StrCat(m.name, "-custom");
  }
  DeviceSpec& d = o.device;
  if (a.device_memory) {
    SWAPPLAN_ASSIGN_OR_RETURN(d.memory_bytes, ParseBytes(*a.device_memory));
  }
  if (a.h2d) {
    SWAPPLAN_ASSIGN_OR_RETURN(d.h2d_bytes_per_s, ParseBandwidth(*a.h2d));
  }
  if (a.d2h) {
    SWAPPLAN_ASSIGN_OR_RETURN(d.d2h_bytes_per_s, ParseBandwidth(*a.d2h));
  }
  if (a.hbm_bandwidth) {
    SWAPPLAN_ASSIGN_OR_RETURN(d.hbm_bytes_per_s, ParseBandwidth(*a.hbm_bandwidth));
  }
  if (a.link_bandwidth) {
    SWAPPLAN_ASSIGN_OR_RETURN(d.link_bytes_per_s, ParseBandwidth(*a.link_bandwidth));
  }
  if (a.peak_flops) d.peak_flops_per_s = *a.peak_flops;
  o.seq_length_tokens = a.seq ? *a.seq : PresetSequenceLength(m);
  o.micro_batch_sequences = a.micro_batch;
  o.num_micro_batches = a.micro_batches;
  o.parallel.tensor_parallel = a.tp;
  o.parallel.data_parallel = a.dp;
  o.parallel.zero_stage = a.zero;
  o.parallel.pipeline_parallel = a.pp;
  o.parallel.pipeline_stage = a.pp_stage;
  o.recompute = a.recompute;
  if (!ParseSynthDType(a.dtype, &o.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("synth: --dtype '", a.dtype, "' is not bf16, fp16 or fp32"));
  }
  o.attention = a.flash ? AttentionKind::kFlash : AttentionKind::kClassic;
  o.fp32_grad_accumulation = a.fp32_grads;
  o.iterations = a.iterations;
  o.loss_scale_skip_every = a.skip_every;
  o.validation_every = a.validation_every;
  o.validation_micro_batches = a.validation_micro_batches;
  o.seed = a.seed;
  o.moe_imbalance = a.moe_imbalance;
  o.flops_efficiency = a.flops_efficiency;
  o.hbm_efficiency = a.hbm_efficiency;
  o.tensor_names = !a.no_names;
  SWAPPLAN_RETURN_IF_ERROR(o.Validate());
  return o;
}

std::string ListPresets() {
  std::string out = "models:\n";
  for (const std::string& name : ModelPresetNames()) {
    ModelConfig m = *ModelPreset(name);
    absl::StrAppendFormat(&out, "  %-14s layers %d, hidden %d, ffn %d, heads %d, kv-heads %d, vocab %d",
                          name, m.layers, m.hidden_size, m.ffn_hidden_size, m.num_heads,
                          m.num_kv_heads, m.vocab_size);
    if (m.num_experts > 0) absl::StrAppend(&out, ", experts ", m.num_experts, " top-", m.experts_top_k);
    absl::StrAppend(&out, ", seq ", PresetSequenceLength(m), "\n");
  }
  absl::StrAppend(&out, "devices:\n");
  for (const std::string& name : DevicePresetNames()) {
    DeviceSpec d = *DevicePreset(name);
    absl::StrAppendFormat(&out, "  %-16s %s, HBM %s, %.0f TFLOP/s, h2d %s, d2h %s, link %s\n", name,
                          FormatBytes(d.memory_bytes), FormatBandwidth(d.hbm_bytes_per_s),
                          d.peak_flops_per_s / 1e12, FormatBandwidth(d.h2d_bytes_per_s),
                          FormatBandwidth(d.d2h_bytes_per_s), FormatBandwidth(d.link_bytes_per_s));
  }
  return out;
}

std::string Pct(double num, double den) {
  return den > 0 ? absl::StrFormat("%.1f%%", 100.0 * num / den) : std::string("-");
}

std::string Summary(const SynthOptions& o, const SynthArgs& a, const Trace& t,
                    const MemoryCurve& c, const MemoryEstimate& est) {
  const TraceStats s = ComputeTraceStats(t);
  const ParallelConfig& p = o.parallel;
  std::string out;
  absl::StrAppend(&out, "wrote ", a.output, ": ", o.model.name, " on ", o.device.name, ", TP", p.tensor_parallel,
                  " PP", p.pipeline_parallel, " (stage ", p.pipeline_stage, ", ", o.stage_layers(),
                  " layers) DP", p.data_parallel, " ZeRO-", p.zero_stage, ", seq ",
                  o.seq_length_tokens, " x mbs ", o.micro_batch_sequences, " x ",
                  o.num_micro_batches, " micro-batches, ", DTypeName(o.dtype),
                  o.recompute ? ", recompute" : "", "\n");
  absl::StrAppend(&out, "  iterations   ", t.num_iterations(), ", ops ", t.num_ops(), " (");
  for (int ph = 0; ph < kNumPhases; ++ph) {
    absl::StrAppend(&out, ph == 0 ? "" : ", ", PhaseName(static_cast<Phase>(ph)), " ",
                    s.ops_per_phase[ph]);
  }
  absl::StrAppend(&out, "), tensors ", t.num_tensors(), "\n");
  absl::StrAppend(&out, "  persistent   ", FormatBytes(est.persistent_bytes), " (parameters ",
                  FormatBytes(est.parameter_bytes), ", gradients ", FormatBytes(est.gradient_bytes),
                  ", optimizer states ", FormatBytes(est.optimizer_state_bytes), ")\n");
  const PeakInfo& pk = c.peak_unswapped();
  absl::StrAppend(&out, "  peak         ", FormatBytes(pk.bytes), " (", pk.bytes, " B) at iteration ",
                  pk.iteration, ", op ", pk.local_op, " (", t.op_name_at(pk.op), ", ",
                  PhaseName(pk.phase), "); ",
                  Pct(static_cast<double>(pk.bytes), static_cast<double>(o.device.memory_bytes)),
                  " of ", FormatBytes(o.device.memory_bytes), "\n");
  absl::StrAppend(&out, "  estimate     ", FormatBytes(est.peak_bytes), " (", est.peak_bytes,
                  " B, closed form, ",
                  absl::StrFormat("%+.2f%%", 100.0 * static_cast<double>(est.peak_bytes - pk.bytes) /
                                                 static_cast<double>(pk.bytes)),
                  "): persistent + ", est.micro_batches_in_flight, " x ",
                  FormatBytes(est.activation_bytes_per_micro_batch),
                  " activations + ", FormatBytes(est.transient_bytes), " transient at ",
                  est.peak_where, "\n");
  absl::StrAppend(&out, "  iteration    ", FormatDurationNs(s.total_wall_time_ns / t.num_iterations()),
                  " (roofline, mean)\n");
  return out;
}

}  // namespace

void SetupSynth(CLI::App& root, Action* action) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* sub = root.add_subcommand(
      "synth", "Write a synthetic transformer training trace (Megatron/PyTorch eager op sequence, "
               "TP/DP/ZeRO/PP-1F1B, recompute, roofline durations) from a model configuration.");
  sub->add_option("--model", a->model, "Model preset: " + absl::StrJoin(ModelPresetNames(), ", "))
      ->capture_default_str();
  sub->add_option("--device", a->device, "Device preset: " + absl::StrJoin(DevicePresetNames(), ", "))
      ->capture_default_str();
  sub->add_option("--layers", a->layers, "Transformer layers (whole model)");
  sub->add_option("--hidden", a->hidden, "Hidden size");
  sub->add_option("--ffn", a->ffn, "FFN hidden size (per expert)");
  sub->add_option("--heads", a->heads,
                  "Attention heads (KV heads follow when --kv-heads is absent and the preset's "
                  "exceed them)");
  sub->add_option("--kv-heads", a->kv_heads, "Key/value heads (GQA)");
  sub->add_option("--vocab", a->vocab, "Vocabulary size (padded to 128·tp)");
  sub->add_option("--experts", a->experts, "MoE experts per layer (0: dense)");
  sub->add_option("--top-k", a->top_k, "MoE experts per token");
  sub->add_option("--dropout", a->dropout, "Dropout probability (0 disables dropout ops)");
  sub->add_option("--seq", a->seq, "Sequence length (default: the preset's)");
  sub->add_option("--micro-batch", a->micro_batch, "Sequences per micro-batch")->capture_default_str();
  sub->add_option("--micro-batches", a->micro_batches, "Micro-batches per iteration")
      ->capture_default_str();
  sub->add_option("--tp", a->tp, "Tensor-parallel degree")->capture_default_str();
  sub->add_option("--dp", a->dp, "Data-parallel degree")->capture_default_str();
  sub->add_option("--zero", a->zero, "ZeRO stage 0-3 over the DP group")->capture_default_str();
  sub->add_option("--pp", a->pp, "Pipeline-parallel degree")->capture_default_str();
  sub->add_option("--pp-stage", a->pp_stage, "Pipeline stage of this trace")->capture_default_str();
  sub->add_flag("--recompute,!--no-recompute", a->recompute, "Full activation recomputation");
  sub->add_option("--dtype", a->dtype, "bf16, fp16 or fp32")->capture_default_str();
  sub->add_flag("--flash,!--no-flash", a->flash,
                "Flash attention (default) or classic attention with S×S tensors");
  sub->add_flag("--fp32-grad-accumulation", a->fp32_grads, "fp32 gradient buffers (Megatron main_grad)");
  sub->add_option("--iterations", a->iterations, "Iterations")->capture_default_str();
  sub->add_option("--loss-scale-skip-every", a->skip_every,
                  "Every k-th iteration overflows and skips the optimizer step (0: never)")
      ->capture_default_str();
  sub->add_option("--validation-every", a->validation_every,
                  "Every k-th iteration ends with a validation forward pass (0: never)")
      ->capture_default_str();
  sub->add_option("--validation-micro-batches", a->validation_micro_batches,
                  "Micro-batches per validation pass")
      ->capture_default_str();
  sub->add_option("--seed", a->seed, "Seed of the MoE routing")->capture_default_str();
  sub->add_option("--moe-imbalance", a->moe_imbalance, "Spread of per-expert load (σ)")
      ->capture_default_str();
  sub->add_option("--device-memory", a->device_memory, "Override device capacity (e.g. 64GiB)");
  sub->add_option("--h2d", a->h2d, "Override host-to-device bandwidth (e.g. 25GB/s)");
  sub->add_option("--d2h", a->d2h, "Override device-to-host bandwidth");
  sub->add_option("--hbm-bandwidth", a->hbm_bandwidth, "Override HBM bandwidth");
  sub->add_option("--link-bandwidth", a->link_bandwidth, "Override device link bandwidth");
  sub->add_option("--peak-flops", a->peak_flops, "Override peak FLOP/s (e.g. 312e12)");
  sub->add_option("--flops-efficiency", a->flops_efficiency, "Fraction of peak FLOP/s reached")
      ->capture_default_str();
  sub->add_option("--hbm-efficiency", a->hbm_efficiency, "Fraction of HBM bandwidth reached")
      ->capture_default_str();
  sub->add_flag("--no-names", a->no_names, "Do not name tensors (smaller, faster)");
  sub->add_flag("--list-presets", a->list_presets, "List model and device presets and exit");
  sub->add_flag("-q,--quiet", a->quiet, "No summary");
  sub->add_option("-o,--output", a->output, "Trace to write (.trace, .json, optionally .gz)");
  sub->callback([a, action] {
    *action = [a]() -> absl::Status {
      if (a->list_presets) return WriteOutput("", ListPresets());
      if (a->output.empty()) {
        return absl::InvalidArgumentError("synth: -o FILE is required (or --list-presets)");
      }
      SWAPPLAN_ASSIGN_OR_RETURN(SynthOptions o, BuildOptions(*a));
      SWAPPLAN_ASSIGN_OR_RETURN(Trace trace, SynthesizeTrace(o, a->output));
      SWAPPLAN_RETURN_IF_ERROR(WriteTrace(trace, a->output));
      if (a->quiet) return absl::OkStatus();
      SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
      SWAPPLAN_ASSIGN_OR_RETURN(MemoryEstimate est, EstimateMemory(o));
      return WriteOutput("", Summary(o, *a, trace, curve, est));
    };
  });
}

}  // namespace swapplan::cli
