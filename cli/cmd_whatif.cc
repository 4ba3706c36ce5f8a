// swapplan whatif --model PRESET --device PRESET --scale batch|seq|hidden|layers
//                 (or --max sequence|batch|hidden|layers; with --inference the
//                 sequence is the request's prompt) [--planner-option P.N=V]
//                 [synthesizer flags] [--step N] [--max-value N] [--reserve X]
//                 [--copy-latency T] [--half-duplex] [--max-overhead 20%]
//                 [--extrapolate-from A,B] [--planners a,b,...] [--json] [-o FILE]
//
// Exit 3 when no planner fits even the smallest value, with the reason (a
// persistent state larger than the budget needs parallelism).
//
// The largest micro-batch / sequence / hidden size / layer count that fits
// the device per planner, and the simulated step time at every value tried
// next to the linear extrapolation from sizes that fit without swapping
// (library: eval/whatif.h; seed 001 Tables 3 and 4).
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli.h"
#include "common.h"
#include "device_flags.h"
#include "flags.h"
#include "planner_flags.h"
#include "progress.h"
#include "swapplan/eval/whatif.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"
#include "synth_flags.h"

namespace swapplan::cli {
namespace {

struct WhatIfArgs {
  FlagSet flags;
  SynthFlags config;
  std::optional<std::string> scale;
  std::optional<std::string> max_dim;  // --max: --scale's alias (seed 003's spelling)
  std::vector<CompareOptions::PlannerOption> planner_options;
  std::optional<int64_t> step;
  std::optional<int64_t> max_value;
  std::optional<int64_t> max_evaluations;
  std::optional<double> max_overhead;
  std::optional<std::string> extrapolate_from;
  std::optional<std::string> planners;
  bool json = false;
  std::optional<std::string> output;
};

// Why nothing fits the smallest value (empty when something does).
std::string InfeasibleReason(const WhatIfResult& r) {
  for (const WhatIfMax& m : r.max) {
    if (m.value) return "";
  }
  if (r.points.empty()) return "no value could be evaluated";
  const WhatIfPoint& p = r.points.front();
  const std::string dim(ScaleDimensionName(r.dimension));
  if (p.persistent_bytes > r.budget_bytes) {
    return absl::StrCat("at ", dim, " ", p.value, " the persistent state alone (",
                        FormatBytes(p.persistent_bytes), ": parameters, gradients, optimizer "
                        "states) exceeds the budget (", FormatBytes(r.budget_bytes),
                        "); it needs parallelism (--tp, --pp, --zero with --dp), not swapping");
  }
  return absl::StrCat("no planner fits ", dim, " ", p.value, ": the unswapped peak is ",
                      FormatBytes(p.peak_unswapped_bytes), " against a budget of ",
                      FormatBytes(r.budget_bytes));
}

// Impact in the paper's sign convention (Table 3): (E − T) / T, negative
// when the step is slower than the extrapolation.
std::string Impact(int64_t extrapolated, int64_t time) {
  return absl::StrFormat("%+.2f%%", 100.0 * static_cast<double>(extrapolated - time) /
                                        static_cast<double>(time));
}

// The dimension's name in reports: an inference request's sequence is its
// prompt.
std::string DimLabel(const SynthOptions& base, ScaleDimension d) {
  return base.inference && d == ScaleDimension::kSeq ? "prompt"
                                                     : std::string(ScaleDimensionName(d));
}

std::string ConfigText(const SynthOptions& o) {
  const ParallelConfig& p = o.parallel;
  if (o.inference) {
    return absl::StrCat(o.model.name, " on ", o.device.name, ": TP", p.tensor_parallel, ", ",
                        o.model.layers, " layers, hidden ", o.model.hidden_size,
                        ", inference: batch ", o.micro_batch_sequences, " x (prompt ",
                        o.seq_length_tokens, " + generate ", o.generate_tokens, ")");
  }
  return absl::StrCat(o.model.name, " on ", o.device.name, ": TP", p.tensor_parallel, " PP",
                      p.pipeline_parallel, " (stage ", p.pipeline_stage, ") DP", p.data_parallel,
                      " ZeRO-", p.zero_stage, ", ", o.model.layers, " layers, hidden ",
                      o.model.hidden_size, ", seq ", o.seq_length_tokens, ", micro-batch ",
                      o.micro_batch_sequences, " x ", o.num_micro_batches,
                      o.recompute ? ", recompute" : "");
}

std::string RenderText(const SynthOptions& base, const ResolvedDevice& d, const WhatIfResult& r,
                       double seconds, bool explicit_extrapolation) {
  const std::string dim = DimLabel(base, r.dimension);
  std::string out;
  absl::StrAppend(&out, "what-if   ", ConfigText(base), "; scaling ", dim, " from ", r.start,
                  " in steps of ", r.step, "\n");
  absl::StrAppend(&out, "budget    ", BytesExact(r.budget_bytes), " = device memory ",
                  FormatBytes(r.device_memory_bytes), " - reserve ", FormatBytes(r.reserve_bytes),
                  "\n");
  DeviceModel link = d.model;
  link.h2d_bandwidth_bytes_per_s = r.h2d_bandwidth_bytes_per_s;
  link.d2h_bandwidth_bytes_per_s = r.d2h_bandwidth_bytes_per_s;
  absl::StrAppend(&out, "link      ", LinkText(link), "\n");
  absl::StrAppend(&out, "searched  ", r.evaluations, " values",
                  seconds >= 0 ? absl::StrFormat(" in %.1f s", seconds) : std::string(), "\n");
  if (!r.note.empty()) absl::StrAppend(&out, "note      ", r.note, "\n");
  absl::StrAppend(&out, "\n");

  std::vector<std::string> header = {dim, "peak", "persistent", "extrapolated"};
  header.insert(header.end(), r.planners.begin(), r.planners.end());
  TextTable table(header);
  for (const WhatIfPoint& p : r.points) {
    std::vector<std::string> row = {
        absl::StrCat(p.value), FormatBytes(p.peak_unswapped_bytes),
        FormatBytes(p.persistent_bytes),
        p.extrapolated_time_ns ? FormatDurationNs(*p.extrapolated_time_ns) : std::string("-")};
    for (const WhatIfCell& c : p.cells) {
      row.push_back(!c.feasible ? std::string("-")
                                : absl::StrCat(FormatDurationNs(c.iteration_time_ns),
                                               c.fits ? "" : "*"));
    }
    table.AddRow(std::move(row));
  }
  absl::StrAppend(&out, table.Render());
  absl::StrAppend(&out, "(simulated step times; - = does not fit");
  if (r.max_overhead_vs_ideal > 0) {
    absl::StrAppend(&out, "; * = runs, but more than ",
                    absl::StrFormat("%g%%", 100 * r.max_overhead_vs_ideal),
                    " slower than ideal: not counted as fitting");
  }
  absl::StrAppend(&out, "; peak = unswapped peak");
  if (r.extrapolation_from) {
    absl::StrAppend(&out, "; extrapolated = linear through ", dim, " ", *r.extrapolation_from,
                    " and ", *r.extrapolation_to,
                    explicit_extrapolation ? ", which fit without swapping"
                                           : ", the two largest values tried that fit without "
                                             "swapping");
  }
  absl::StrAppend(&out, ")\n\nlargest ", dim, " that fits:\n");

  std::optional<int64_t> noswap_max;
  for (size_t i = 0; i < r.planners.size(); ++i) {
    if (r.planners[i] == "noswap") noswap_max = r.max[i].value;
  }
  TextTable summary({"planner", dim, "vs noswap", "step time", "vs extrapolated", "first failing"});
  for (size_t i = 0; i < r.planners.size(); ++i) {
    const WhatIfMax& m = r.max[i];
    std::string ratio = "-", impact = "-";
    if (m.value && noswap_max && *noswap_max > 0) {
      ratio = absl::StrFormat("%.2fx", static_cast<double>(*m.value) /
                                           static_cast<double>(*noswap_max));
    }
    if (m.value) {
      for (const WhatIfPoint& p : r.points) {
        if (p.value == *m.value && p.extrapolated_time_ns) {
          impact = Impact(*p.extrapolated_time_ns, m.iteration_time_ns);
        }
      }
    }
    summary.AddRow({r.planners[i],
                    m.value ? absl::StrCat(*m.value) : absl::StrCat("< ", r.start), ratio,
                    m.value ? FormatDurationNs(m.iteration_time_ns) : std::string("-"), impact,
                    m.first_failing ? absl::StrCat(*m.first_failing) : std::string("-")});
  }
  absl::StrAppend(&out, summary.Render());
  const std::string reason = InfeasibleReason(r);
  if (!reason.empty()) absl::StrAppend(&out, "\ninfeasible: ", reason, "\n");
  return out;
}

std::string RenderJson(const SynthOptions& base, const ResolvedDevice& d, const WhatIfResult& r) {
  using nlohmann::json;
  auto opt = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  json j;
  j["model"] = base.model.name;
  ResolvedDevice shown = d;
  shown.model.reserve_bytes = r.reserve_bytes;
  j["device"] = DeviceJson(shown);
  j["configuration"] = ConfigText(base);
  j["dimension"] = std::string(ScaleDimensionName(r.dimension));
  j["start"] = r.start;
  j["step"] = r.step;
  j["budget_bytes"] = r.budget_bytes;
  j["max_overhead_vs_ideal_fraction"] = r.max_overhead_vs_ideal;
  j["planners"] = r.planners;
  j["num_evaluations"] = r.evaluations;
  j["note"] = r.note;
  const std::string reason = InfeasibleReason(r);
  j["feasible"] = reason.empty();
  j["infeasible_reason"] = reason.empty() ? json(nullptr) : json(reason);
  j["extrapolation_from"] = opt(r.extrapolation_from);
  j["extrapolation_to"] = opt(r.extrapolation_to);
  json points = json::array();
  for (const WhatIfPoint& p : r.points) {
    json results = json::object();
    for (size_t i = 0; i < r.planners.size(); ++i) {
      const WhatIfCell& c = p.cells[i];
      json cell = {{"feasible", c.feasible}, {"fits", c.fits}};
      if (c.feasible) {
        cell["iteration_time_ns"] = c.iteration_time_ns;
        cell["overhead_vs_ideal_fraction"] = c.overhead_vs_ideal;
        cell["stall_ns"] = c.stall_ns;
        cell["recompute_ns"] = c.recompute_ns;
        cell["peak_with_policy_bytes"] = c.peak_bytes;
      }
      results[r.planners[i]] = std::move(cell);
    }
    points.push_back({{"value", p.value},
                      {"peak_unswapped_bytes", p.peak_unswapped_bytes},
                      {"persistent_bytes", p.persistent_bytes},
                      {"ideal_iteration_time_ns", p.ideal_time_ns},
                      {"extrapolated_iteration_time_ns", opt(p.extrapolated_time_ns)},
                      {"results", std::move(results)}});
  }
  j["points"] = std::move(points);
  json max = json::object();
  for (size_t i = 0; i < r.planners.size(); ++i) {
    const WhatIfMax& m = r.max[i];
    max[r.planners[i]] = {{"value", opt(m.value)},
                          {"iteration_time_ns", m.value ? json(m.iteration_time_ns) : json(nullptr)},
                          {"first_failing", opt(m.first_failing)}};
  }
  j["max"] = std::move(max);
  return j.dump(2) + "\n";
}

absl::Status Run(WhatIfArgs& a) {
  a.flags.Parse();
  WhatIfOptions o;
  if (a.scale && a.max_dim) {
    a.flags.Add("--scale and --max name the dimension twice: give one");
  } else if (!a.scale && !a.max_dim) {
    a.flags.Add("--scale (or --max) is required: batch, seq, hidden or layers");
  } else if (a.scale) {
    ParseScaleDimension(*a.scale, &o.dimension);  // a Choice
  } else {
    ParseScaleDimension(*a.max_dim, &o.dimension);  // a Choice
  }
  o.step = a.step.value_or(0);
  o.max_value = a.max_value.value_or(0);
  o.max_evaluations = static_cast<int32_t>(a.max_evaluations.value_or(64));
  o.max_overhead_vs_ideal = a.max_overhead.value_or(0);
  for (absl::string_view v : absl::StrSplit(a.extrapolate_from.value_or(""), ',', absl::SkipEmpty())) {
    int64_t x = 0;
    if (!absl::SimpleAtoi(v, &x)) {
      a.flags.Add(absl::StrCat("--extrapolate-from: '", v, "' is not an integer"));
      continue;
    }
    o.extrapolate_from.push_back(x);
  }
  for (absl::string_view name : absl::StrSplit(a.planners.value_or(""), ',', absl::SkipEmpty())) {
    o.planners.emplace_back(name);
  }
  ResolvedDevice device;
  SWAPPLAN_ASSIGN_OR_RETURN(o.base, BuildSynthOptions(a.config, &a.flags, &device));
  SWAPPLAN_RETURN_IF_ERROR(a.flags.Status());
  o.reserve_bytes = device.model.reserve_bytes;
  o.simulator.device.copy_latency_ns = device.model.copy_latency_ns;
  o.simulator.device.copy_engines = device.model.copy_engines;
  o.simulator.device.tiers = device.model.tiers;  // --remote-memory (hyperoffload)
  o.planner_options = a.planner_options;
  const std::string dim = DimLabel(o.base, o.dimension);
  const auto t0 = std::chrono::steady_clock::now();
  // The search stops after max_evaluations at most: the bar's total (the
  // ETA is an upper bound when it converges earlier).
  ProgressBar bar("whatif " + dim);
  int64_t evaluated = 0;
  auto progress = [&](const WhatIfPoint&, double) { bar.Update(++evaluated, o.max_evaluations); };
  SWAPPLAN_ASSIGN_OR_RETURN(WhatIfResult r, RunWhatIf(o, progress));
  bar.Finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The text shows the search time only when it is worth reading (it differs
  // from run to run; goldens run fast searches).
  SWAPPLAN_RETURN_IF_ERROR(WriteOutput(
      a.output.value_or(""), a.json ? RenderJson(o.base, device, r)
                                    : RenderText(o.base, device, r, seconds >= 1.0 ? seconds : -1,
                                                 !o.extrapolate_from.empty())));
  if (const std::string reason = InfeasibleReason(r); !reason.empty()) {
    return Error(ErrorKind::kInfeasible, absl::StrCat(ConfigText(o.base), ": ", reason));
  }
  return absl::OkStatus();
}

}  // namespace

void SetupWhatIf(CLI::App& root, Action* action) {
  auto a = std::make_shared<WhatIfArgs>();
  CLI::App* sub = root.add_subcommand(
      "whatif",
      "Grow one dimension of a synthesized training step (micro-batch, sequence, hidden size, "
      "layers) and find the largest value that fits the device per planner, with the simulated "
      "step time at each value tried and the linear extrapolation from sizes that fit without "
      "swapping. Exit 3 when nothing fits the smallest value.");
  FlagSet& f = a->flags;
  AddSynthConfigFlags(sub, &f, &a->config,
                      {.reserve = true,
                       .compute_scale = false,
                       .roofline = true,
                       .remote_tier = true,
                       .default_device = kSynthDefaultDevice});
  f.Choice(sub, "--scale", &a->scale, {"batch", "seq", "hidden", "layers"},
           "Dimension to grow: batch, seq, hidden or layers (this or --max is required)");
  f.Choice(sub, "--max", &a->max_dim, {"sequence", "seq", "batch", "hidden", "layers"},
           "The same as --scale (sequence = seq): with --inference, --max sequence finds the "
           "longest prompt that fits per planner");
  AddPlannerOptionFlag(sub, &f, &a->planner_options,
                       "PLANNER.NAME=VALUE: a planner option, e.g. hyperoffload.kv_offload=all "
                       "(repeatable)");
  f.Int(sub, "--step", &a->step,
        "Grid step (default: batch 1, seq 1024, hidden 128 or the next multiple of 2 x heads x "
        "tp, layers the pipeline degree)",
        0, INT64_MAX);
  f.Int(sub, "--max-value", &a->max_value, "Largest value to try (default: no limit)", 0,
        INT64_MAX);
  f.Int(sub, "--max-evaluations", &a->max_evaluations, "Syntheses at most (default 64)", 1,
        INT32_MAX);
  f.Fraction(sub, "--max-overhead", &a->max_overhead,
             "Count a step as fitting only when it is at most this much slower than ideal (e.g. "
             "20%; default: any step that runs)");
  f.Text(sub, "--extrapolate-from", &a->extrapolate_from,
         "A,B: the two values (fitting without swapping) to extrapolate the step time through "
         "(default: the two largest tried)");
  f.Text(sub, "--planners", &a->planners,
         "Comma-separated planners to size (default: compare's; ideal is the reference)");
  sub->add_flag("--json", a->json, "Machine-readable JSON report (docs/json/whatif.schema.json)");
  f.Text(sub, "-o,--output", &a->output, "Write the report to FILE instead of stdout");
  sub->callback([a, action] { *action = [a]() { return Run(*a); }; });
}

}  // namespace swapplan::cli
