// swapplan whatif --model PRESET --device PRESET --scale batch|seq|hidden|layers
//                 [synthesizer flags] [--step N] [--max-value N] [--reserve X]
//                 [--max-overhead 20%] [--extrapolate-from A,B]
//                 [--planners a,b,...] [--json] [-o FILE]
//
// The largest micro-batch / sequence / hidden size / layer count that fits
// the device per planner, and the simulated step time at every value tried
// next to the linear extrapolation from sizes that fit without swapping
// (library: eval/whatif.h; seed 001 Tables 3 and 4).
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli.h"
#include "sim_flags.h"
#include "swapplan/eval/whatif.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"
#include "synth_flags.h"

namespace swapplan::cli {
namespace {

struct WhatIfArgs {
  SynthFlags config;
  std::string scale;
  int64_t step = 0;
  int64_t max_value = 0;
  int32_t max_evaluations = 64;
  std::string reserve;
  std::string max_overhead;
  std::string extrapolate_from;
  std::string planners;
  std::string latency;
  bool half_duplex = false;
  bool json = false;
  std::string output;
};

// Impact in the paper's sign convention (Table 3): (E − T) / T, negative
// when the step is slower than the extrapolation.
std::string Impact(int64_t extrapolated, int64_t time) {
  return absl::StrFormat("%+.2f%%", 100.0 * static_cast<double>(extrapolated - time) /
                                        static_cast<double>(time));
}

std::string ConfigText(const SynthOptions& o) {
  const ParallelConfig& p = o.parallel;
  return absl::StrCat(o.model.name, " on ", o.device.name, ": TP", p.tensor_parallel, " PP",
                      p.pipeline_parallel, " (stage ", p.pipeline_stage, ") DP", p.data_parallel,
                      " ZeRO-", p.zero_stage, ", ", o.model.layers, " layers, hidden ",
                      o.model.hidden_size, ", seq ", o.seq_length_tokens, ", micro-batch ",
                      o.micro_batch_sequences, " x ", o.num_micro_batches,
                      o.recompute ? ", recompute" : "");
}

std::string RenderText(const SynthOptions& base, const WhatIfResult& r, double seconds,
                       bool explicit_extrapolation) {
  const std::string dim(ScaleDimensionName(r.dimension));
  std::string out;
  absl::StrAppend(&out, "what-if   ", ConfigText(base), "; scaling ", dim, " from ", r.start,
                  " in steps of ", r.step, "\n");
  absl::StrAppend(&out, "budget    ", BytesExact(r.budget_bytes), " = device memory ",
                  FormatBytes(r.device_memory_bytes), " - reserve ", FormatBytes(r.reserve_bytes),
                  "\n");
  DeviceModel link;
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
  return out;
}

std::string RenderJson(const SynthOptions& base, const WhatIfResult& r) {
  using nlohmann::json;
  auto opt = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  json j;
  j["model"] = base.model.name;
  j["device"] = base.device.name;
  j["configuration"] = ConfigText(base);
  j["dimension"] = std::string(ScaleDimensionName(r.dimension));
  j["start"] = r.start;
  j["step"] = r.step;
  j["device_memory_bytes"] = r.device_memory_bytes;
  j["reserve_bytes"] = r.reserve_bytes;
  j["budget_bytes"] = r.budget_bytes;
  j["max_overhead_vs_ideal"] = r.max_overhead_vs_ideal;
  j["h2d_bandwidth_bytes_per_s"] = r.h2d_bandwidth_bytes_per_s;
  j["d2h_bandwidth_bytes_per_s"] = r.d2h_bandwidth_bytes_per_s;
  j["planners"] = r.planners;
  j["evaluations"] = r.evaluations;
  j["note"] = r.note;
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
        cell["overhead_vs_ideal"] = c.overhead_vs_ideal;
        cell["stall_ns"] = c.stall_ns;
        cell["recompute_ns"] = c.recompute_ns;
        cell["peak_bytes"] = c.peak_bytes;
      }
      results[r.planners[i]] = std::move(cell);
    }
    points.push_back({{"value", p.value},
                      {"peak_unswapped_bytes", p.peak_unswapped_bytes},
                      {"persistent_bytes", p.persistent_bytes},
                      {"ideal_time_ns", p.ideal_time_ns},
                      {"extrapolated_time_ns", opt(p.extrapolated_time_ns)},
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

absl::Status Run(const WhatIfArgs& a) {
  WhatIfOptions o;
  SWAPPLAN_ASSIGN_OR_RETURN(o.base, BuildSynthOptions(a.config));
  ParseScaleDimension(a.scale, &o.dimension);  // checked by CLI11
  o.step = a.step;
  o.max_value = a.max_value;
  o.max_evaluations = a.max_evaluations;
  if (!a.reserve.empty()) {
    absl::StatusOr<int64_t> b = ParseBytes(a.reserve);
    if (!b.ok()) return absl::InvalidArgumentError(absl::StrCat("--reserve: ", b.status().message()));
    o.reserve_bytes = *b;
  }
  if (!a.max_overhead.empty()) {
    absl::StatusOr<double> f = ParseFraction(a.max_overhead);
    if (!f.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--max-overhead: ", f.status().message()));
    }
    o.max_overhead_vs_ideal = *f;
  }
  for (absl::string_view v : absl::StrSplit(a.extrapolate_from, ',', absl::SkipEmpty())) {
    int64_t x = 0;
    if (!absl::SimpleAtoi(v, &x)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--extrapolate-from: '", v, "' is not an integer"));
    }
    o.extrapolate_from.push_back(x);
  }
  for (absl::string_view name : absl::StrSplit(a.planners, ',', absl::SkipEmpty())) {
    o.planners.emplace_back(name);
  }
  if (!a.latency.empty()) {
    absl::StatusOr<int64_t> v = ParseDurationNs(a.latency);
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("--latency: ", v.status().message()));
    o.simulator.device.copy_latency_ns = *v;
  }
  o.simulator.device.copy_engines = a.half_duplex ? 1 : 2;
  const std::string dim(ScaleDimensionName(o.dimension));
  const auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const WhatIfPoint& p, double elapsed) {
    if (elapsed <= 1.0) return;
    int fits = 0;
    for (const WhatIfCell& c : p.cells) fits += c.feasible;
    std::cerr << absl::StrFormat("swapplan whatif: %s %d: unswapped peak %s, %d of %d planners fit "
                                 "(%.1f s)\n",
                                 dim, p.value, FormatBytes(p.peak_unswapped_bytes), fits,
                                 p.cells.size(), elapsed);
  };
  SWAPPLAN_ASSIGN_OR_RETURN(WhatIfResult r, RunWhatIf(o, progress));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The text shows the search time only when it is worth reading (it differs
  // from run to run; goldens run fast searches).
  return WriteOutput(a.output, a.json ? RenderJson(o.base, r)
                                      : RenderText(o.base, r, seconds >= 1.0 ? seconds : -1,
                                                   !o.extrapolate_from.empty()));
}

}  // namespace

void SetupWhatIf(CLI::App& root, Action* action) {
  auto a = std::make_shared<WhatIfArgs>();
  CLI::App* sub = root.add_subcommand(
      "whatif",
      "Grow one dimension of a synthesized training step (micro-batch, sequence, hidden size, "
      "layers) and find the largest value that fits the device per planner, with the simulated "
      "step time at each value tried and the linear extrapolation from sizes that fit without "
      "swapping.");
  AddSynthConfigFlags(sub, &a->config);
  sub->add_option("--scale", a->scale, "Dimension to grow: batch, seq, hidden or layers")
      ->required()
      ->check(CLI::IsMember({"batch", "seq", "hidden", "layers"}));
  sub->add_option("--step", a->step,
                  "Grid step (default: batch 1, seq 1024, hidden 128 or the next multiple of "
                  "2 x heads x tp, layers the pipeline degree)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--max-value", a->max_value, "Largest value to try (default: no limit)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--max-evaluations", a->max_evaluations, "Syntheses at most")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--reserve", a->reserve,
                  "Memory kept back for fragmentation and workspace (default 0); budget = device "
                  "memory - reserve");
  sub->add_option("--max-overhead", a->max_overhead,
                  "Count a step as fitting only when it is at most this much slower than ideal "
                  "(e.g. 20%; default: any step that runs)");
  sub->add_option("--extrapolate-from", a->extrapolate_from,
                  "A,B: the two values (fitting without swapping) to extrapolate the step time "
                  "through (default: the two largest tried)");
  sub->add_option("--planners", a->planners,
                  "Comma-separated planners to size (default: compare's; ideal is the reference)");
  sub->add_option("--latency", a->latency, "Fixed cost of every copy, e.g. 10us (default 0)");
  sub->add_flag("--half-duplex", a->half_duplex,
                "Both directions share one link (copies run one at a time)");
  sub->add_flag("--json", a->json, "Machine-readable JSON output");
  sub->add_option("-o,--output", a->output, "Write to FILE instead of stdout");
  sub->callback([a, action] { *action = [a]() { return Run(*a); }; });
}

}  // namespace swapplan::cli
