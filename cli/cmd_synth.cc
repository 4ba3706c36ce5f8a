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
#include "synth_flags.h"
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
  SynthFlags config;
  bool no_names = false;
  bool list_presets = false;
  bool quiet = false;
  std::string output;
};

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
                  o.seq_lengths.empty()
                      ? absl::StrCat(o.seq_length_tokens)
                      : absl::StrCat(o.seq_lengths.distinct(), " lengths up to ",
                                     o.seq_length_tokens, o.seq_lengths.in_order ? " (in order)"
                                                                                 : " (drawn)"),
                  " x mbs ", o.micro_batch_sequences, " x ",
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
  AddSynthConfigFlags(sub, &a->config);
  AddSynthRunFlags(sub, &a->config);
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
      SWAPPLAN_ASSIGN_OR_RETURN(SynthOptions o, BuildSynthOptions(a->config));
      o.tensor_names = !a->no_names;
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
