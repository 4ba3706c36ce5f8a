// swapplan synth [--model NAME] [--device NAME] [knobs...] -o FILE [--json]
//
// Writes a synthetic transformer training trace (library: swapplan/synth) and
// prints a short summary: op counts, persistent bytes, the rebuilt peak and
// the closed-form estimate next to it, and whether the step fits the device:
// a configuration whose persistent state alone exceeds the device memory
// (llama2-70b at TP1/DP1: about 1 TiB) is reported as infeasible with that
// reason — it needs parallelism, not swapping.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include <nlohmann/json.hpp>

#include "cli.h"
#include "common.h"
#include "device_flags.h"
#include "flags.h"
#include "progress.h"
#include "synth_flags.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/device/presets.h"
#include "swapplan/synth/estimate.h"
#include "swapplan/synth/synth.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/stats.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan::cli {
namespace {

struct SynthArgs {
  FlagSet flags;
  SynthFlags config;
  bool no_names = false;
  bool list_presets = false;
  bool quiet = false;
  bool json = false;
  std::optional<std::string> output;
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
  absl::StrAppend(&out, "devices: see `swapplan devices` (", absl::StrJoin(DevicePresetNames(), ", "),
                  ")\n");
  return out;
}

// Whether the synthesized step fits the device, and if not why: a
// persistent state larger than the device cannot be fixed by swapping
// activations.
struct FitVerdict {
  bool fits = false;
  bool persistent_exceeds = false;
  std::string text;
};

FitVerdict Fit(const SynthOptions& o, const MemoryEstimate& est, int64_t peak) {
  const int64_t cap = o.device.capacity_bytes;
  FitVerdict v;
  if (est.persistent_bytes > cap) {
    v.persistent_exceeds = true;
    v.text = absl::StrCat(
        "no: the persistent state alone (", FormatBytes(est.persistent_bytes),
        ": parameters, gradients, optimizer states) exceeds the device memory (", FormatBytes(cap),
        "); swapping activations cannot fix that: shard it with --tp, --pp or --zero with --dp");
  } else if (peak > cap) {
    v.text = absl::StrCat("not without swapping: the peak is ", FormatBytes(peak - cap),
                          " over the device memory (", FormatBytes(cap),
                          "); see `swapplan compare` on the trace");
  } else {
    v.fits = true;
    v.text = absl::StrCat("yes, without swapping (", FormatBytes(cap - peak), " to spare)");
  }
  return v;
}

std::string Pct(double num, double den) {
  return den > 0 ? absl::StrFormat("%.1f%%", 100.0 * num / den) : std::string("-");
}

nlohmann::json SummaryJson(const SynthOptions& o, const ResolvedDevice& d, const std::string& output,
                           const Trace& t, const MemoryCurve& c, const MemoryEstimate& est) {
  const TraceStats s = ComputeTraceStats(t);
  const PeakInfo& pk = c.peak_unswapped();
  const FitVerdict fit = Fit(o, est, pk.bytes);
  const ParallelConfig& p = o.parallel;
  nlohmann::json j;
  j["trace_file"] = output;
  j["model"] = o.model.name;
  j["device"] = DeviceJson(d);
  j["parallel"] = {{"tensor_parallel", p.tensor_parallel},
                   {"pipeline_parallel", p.pipeline_parallel},
                   {"pipeline_stage", p.pipeline_stage},
                   {"data_parallel", p.data_parallel},
                   {"zero_stage", p.zero_stage}};
  j["num_iterations"] = t.num_iterations();
  j["num_ops"] = t.num_ops();
  j["num_tensors"] = t.num_tensors();
  j["persistent_bytes"] = est.persistent_bytes;
  j["parameter_bytes"] = est.parameter_bytes;
  j["gradient_bytes"] = est.gradient_bytes;
  j["optimizer_state_bytes"] = est.optimizer_state_bytes;
  j["peak_unswapped_bytes"] = pk.bytes;
  j["estimated_peak_unswapped_bytes"] = est.peak_bytes;
  j["mean_wall_time_ns"] = s.total_wall_time_ns / t.num_iterations();
  j["fits_without_swapping"] = fit.fits;
  j["feasible"] = !fit.persistent_exceeds;
  j["verdict"] = fit.text;
  return j;
}

std::string Summary(const SynthOptions& o, const std::string& output, const Trace& t,
                    const MemoryCurve& c, const MemoryEstimate& est) {
  const TraceStats s = ComputeTraceStats(t);
  const ParallelConfig& p = o.parallel;
  std::string out;
  absl::StrAppend(&out, "wrote ", output, ": ", o.model.name, " on ", o.device.name, ", TP", p.tensor_parallel,
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
                  Pct(static_cast<double>(pk.bytes), static_cast<double>(o.device.capacity_bytes)),
                  " of ", FormatBytes(o.device.capacity_bytes), "\n");
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
  absl::StrAppend(&out, "  fits         ", Fit(o, est, pk.bytes).text, "\n");
  return out;
}

// Inference requests: KV cache bytes at the end of the request (K and V of
// every layer, batch x (prompt + generate) positions).
int64_t KvCacheBytes(const SynthOptions& o) {
  return 2 * int64_t{o.stage_layers()} * o.micro_batch_sequences * o.max_positions() *
         (o.model.num_kv_heads / o.parallel.tensor_parallel) * o.model.head_dim() *
         DTypeBytes(o.dtype);
}

// The first request's prefill duration (its ops of micro-batch 0) and its
// mean decode step's (`steps` decode steps).
std::pair<int64_t, int64_t> RequestTimes(const Trace& t, int32_t steps) {
  int64_t prefill = 0, decode = 0;
  const IterationInfo& it = t.iteration(0);
  for (OpIndex i = it.op_begin; i < it.op_end; ++i) {
    (t.op(i).micro_batch == 0 ? prefill : decode) += std::max<int64_t>(0, t.op(i).duration_ns);
  }
  return {prefill, steps > 0 ? decode / steps : 0};
}

nlohmann::json InferenceSummaryJson(const SynthOptions& o, const ResolvedDevice& d,
                                    const std::string& output, const Trace& t,
                                    const MemoryCurve& c) {
  // The training summary's fields (ValidateInference leaves pipeline
  // parallelism 1 and ZeRO 0): persistent bytes are the parameters; no
  // gradients, optimizer states or peak estimate.
  MemoryEstimate est;
  est.persistent_bytes = est.parameter_bytes = c.iterations()[0].persistent_bytes;
  nlohmann::json j = SummaryJson(o, d, output, t, c, est);
  j["estimated_peak_unswapped_bytes"] = nullptr;
  const auto [prefill, decode] = RequestTimes(t, o.generate_tokens);
  j["inference"] = {{"batch", o.micro_batch_sequences},
                    {"prompt_tokens", o.seq_length_tokens},
                    {"generate_tokens", o.generate_tokens},
                    {"kv_cache_bytes", KvCacheBytes(o)},
                    {"prefill_time_ns", prefill},
                    {"decode_step_time_ns", decode}};
  return j;
}

std::string InferenceSummary(const SynthOptions& o, const std::string& output, const Trace& t,
                             const MemoryCurve& c) {
  const TraceStats s = ComputeTraceStats(t);
  const int64_t persistent = c.iterations()[0].persistent_bytes;
  std::string out;
  absl::StrAppend(&out, "wrote ", output, ": ", o.model.name, " on ", o.device.name, ", TP",
                  o.parallel.tensor_parallel, ", inference: batch ", o.micro_batch_sequences,
                  " x (prompt ", o.seq_length_tokens, " + generate ", o.generate_tokens, "), ",
                  DTypeName(o.dtype), "\n");
  absl::StrAppend(&out, "  requests     ", t.num_iterations(), ", ops ", t.num_ops(),
                  " (prefill + ", o.generate_tokens, " decode steps each), tensors ",
                  t.num_tensors(), "\n");
  absl::StrAppend(&out, "  persistent   ", FormatBytes(persistent), " (parameters, rotary table)\n");
  absl::StrAppend(&out, "  kv cache     ", FormatBytes(KvCacheBytes(o)),
                  " at the end of a request (K and V, ", o.stage_layers(), " layers x ",
                  o.micro_batch_sequences, " x ", o.max_positions(), " positions)\n");
  const PeakInfo& pk = c.peak_unswapped();
  absl::StrAppend(&out, "  peak         ", FormatBytes(pk.bytes), " (", pk.bytes, " B) at request ",
                  pk.iteration, ", op ", pk.local_op, " (", t.op_name_at(pk.op), "); ",
                  Pct(static_cast<double>(pk.bytes), static_cast<double>(o.device.capacity_bytes)),
                  " of ", FormatBytes(o.device.capacity_bytes), "\n");
  const auto [prefill, decode] = RequestTimes(t, o.generate_tokens);
  absl::StrAppend(&out, "  request      ",
                  FormatDurationNs(s.total_wall_time_ns / t.num_iterations()),
                  " (roofline): prefill ", FormatDurationNs(prefill), ", decode step ",
                  FormatDurationNs(decode), " (mean)\n");
  MemoryEstimate est;
  est.persistent_bytes = persistent;
  absl::StrAppend(&out, "  fits         ", Fit(o, est, pk.bytes).text, "\n");
  return out;
}

}  // namespace

void SetupSynth(CLI::App& root, Action* action) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* sub = root.add_subcommand(
      "synth", "Write a synthetic transformer training trace (Megatron/PyTorch eager op sequence, "
               "TP/DP/ZeRO/PP-1F1B, recompute, roofline durations) from a model configuration.");
  AddSynthConfigFlags(sub, &a->flags, &a->config, /*reserve=*/false);
  AddSynthRunFlags(sub, &a->config);
  sub->add_flag("--no-names", a->no_names, "Do not name tensors (smaller, faster)");
  sub->add_flag("--list-presets", a->list_presets, "List model presets and exit");
  sub->add_flag("-q,--quiet", a->quiet, "No summary");
  sub->add_flag("--json", a->json, "Machine-readable JSON summary (docs/json/synth.schema.json)");
  a->flags.Text(sub, "-o,--output", &a->output, "Trace to write (.trace, .json, optionally .gz)");
  sub->callback([a, action] {
    *action = [a]() -> absl::Status {
      a->flags.Parse();
      if (a->list_presets) return WriteOutput("", ListPresets());
      const std::string output = a->output.value_or("");
      if (output.empty()) a->flags.Add("synth: -o FILE is required (or --list-presets)");
      ResolvedDevice device;
      SWAPPLAN_ASSIGN_OR_RETURN(SynthOptions o, BuildSynthOptions(a->config, &a->flags, &device));
      SWAPPLAN_RETURN_IF_ERROR(a->flags.Status());
      o.tensor_names = !a->no_names;
      ProgressBar bar("synth", ProgressEnabled() && !a->quiet);
      SWAPPLAN_ASSIGN_OR_RETURN(
          Trace trace, SynthesizeTrace(o, output, [&bar](int32_t done, int32_t iterations) {
            bar.Update(done, iterations);
          }));
      bar.Finish();
      SWAPPLAN_RETURN_IF_ERROR(WriteTrace(trace, output));
      if (a->quiet) return absl::OkStatus();
      SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(trace));
      if (o.inference) {
        return WriteOutput("", a->json ? InferenceSummaryJson(o, device, output, trace, curve)
                                                 .dump(2) + "\n"
                                       : InferenceSummary(o, output, trace, curve));
      }
      SWAPPLAN_ASSIGN_OR_RETURN(MemoryEstimate est, EstimateMemory(o));
      if (a->json) {
        return WriteOutput("", SummaryJson(o, device, output, trace, curve, est).dump(2) + "\n");
      }
      return WriteOutput("", Summary(o, output, trace, curve, est));
    };
  });
}

}  // namespace swapplan::cli
