#include "swapplan/eval/whatif.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/eval/compare.h"
#include "swapplan/planners/registry.h"
#include "swapplan/synth/synth.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan {

absl::string_view ScaleDimensionName(ScaleDimension d) {
  switch (d) {
    case ScaleDimension::kBatch:
      return "batch";
    case ScaleDimension::kSeq:
      return "seq";
    case ScaleDimension::kHidden:
      return "hidden";
    case ScaleDimension::kLayers:
      return "layers";
  }
  return "unknown";
}

bool ParseScaleDimension(absl::string_view name, ScaleDimension* out) {
  if (name == "sequence") name = "seq";  // the alias of --max
  for (ScaleDimension d : {ScaleDimension::kBatch, ScaleDimension::kSeq, ScaleDimension::kHidden,
                           ScaleDimension::kLayers}) {
    if (name == ScaleDimensionName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

int64_t DimensionValue(const SynthOptions& o, ScaleDimension d) {
  switch (d) {
    case ScaleDimension::kBatch:
      return o.micro_batch_sequences;
    case ScaleDimension::kSeq:
      return o.seq_length_tokens;
    case ScaleDimension::kHidden:
      return o.model.hidden_size;
    case ScaleDimension::kLayers:
      return o.model.layers;
  }
  return 0;
}

SynthOptions WithDimension(SynthOptions o, ScaleDimension d, int64_t value) {
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  switch (d) {
    case ScaleDimension::kBatch:
      o.micro_batch_sequences = static_cast<int32_t>(std::min(value, kMax32));
      break;
    case ScaleDimension::kSeq:
      o.seq_length_tokens = value;
      if (o.model.position == PositionKind::kLearned) {
        o.model.max_position_embeddings = std::max(o.model.max_position_embeddings, value);
      }
      break;
    case ScaleDimension::kHidden:
      o.model.hidden_size = value;
      break;
    case ScaleDimension::kLayers:
      o.model.layers = static_cast<int32_t>(std::min(value, kMax32));
      break;
  }
  return o;
}

int64_t DefaultStep(const SynthOptions& o, ScaleDimension d) {
  switch (d) {
    case ScaleDimension::kBatch:
      return 1;
    case ScaleDimension::kSeq:
      return 1024;
    case ScaleDimension::kHidden: {
      const int64_t unit = 2 * int64_t{o.model.num_heads} * o.parallel.tensor_parallel;
      return unit * ((128 + unit - 1) / unit);
    }
    case ScaleDimension::kLayers:
      return o.parallel.pipeline_parallel;
  }
  return 1;
}

absl::Status WhatIfOptions::Validate() const {
  auto bad = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("whatif: ", what));
  };
  SWAPPLAN_RETURN_IF_ERROR(base.Validate());
  if (step < 0) return bad(absl::StrCat("step is ", step, "; must be >= 0 (0 = default)"));
  const int64_t start = DimensionValue(base, dimension);
  if (max_value != 0 && max_value < start) {
    return bad(absl::StrCat("max value ", max_value, " is below the start ", start));
  }
  {
    // A step that breaks a divisibility rule (hidden by heads, layers by
    // pp) would fail at every value after the start.
    const int64_t s = step > 0 ? step : DefaultStep(base, dimension);
    if (absl::Status st = WithDimension(base, dimension, start + s).Validate(); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(st.message(), " (", ScaleDimensionName(dimension), " ", start, " + step ",
                       s, ")"));
    }
  }
  if (max_evaluations < 1) {
    return bad(absl::StrCat("max evaluations is ", max_evaluations, "; must be >= 1"));
  }
  if (reserve_bytes < 0 || reserve_bytes >= base.device.capacity_bytes) {
    return bad(absl::StrCat("reserve ", FormatBytes(reserve_bytes), " leaves no budget out of ",
                            FormatBytes(base.device.capacity_bytes)));
  }
  if (!(max_overhead_vs_ideal >= 0) || !std::isfinite(max_overhead_vs_ideal)) {
    return bad(absl::StrCat("max overhead is ", max_overhead_vs_ideal, "; must be >= 0"));
  }
  if (!extrapolate_from.empty()) {
    const int64_t s = step > 0 ? step : DefaultStep(base, dimension);
    if (extrapolate_from.size() != 2 || extrapolate_from[0] == extrapolate_from[1]) {
      return bad("extrapolation needs two distinct values");
    }
    for (int64_t v : extrapolate_from) {
      if (v < start || (v - start) % s != 0) {
        return bad(absl::StrCat("extrapolation value ", v, " is not on the grid ", start, " + k x ",
                                s));
      }
    }
  }
  for (const std::string& p : planners) {
    if (FindPlanner(p) == nullptr) {
      return bad(absl::StrCat("unknown planner '", p, "' (known: ", PlannerNames(), ")"));
    }
  }
  for (const CompareOptions::PlannerOption& p : planner_options) {
    if (FindPlanner(p.planner) == nullptr) {
      return bad(absl::StrCat("planner option for unknown planner '", p.planner, "' (known: ",
                              PlannerNames(), ")"));
    }
  }
  return simulator.Validate();
}

namespace {

class Search {
 public:
  Search(const WhatIfOptions& options, const WhatIfProgress& progress)
      : options_(options), progress_(progress), t0_(std::chrono::steady_clock::now()) {}

  absl::StatusOr<WhatIfResult> Run();

 private:
  // Evaluates grid index k (once). False when it cannot: the evaluation cap
  // (note set) — an unbuildable value counts as evaluated and fitting
  // nothing.
  absl::StatusOr<bool> Evaluate(int64_t k);
  bool Fits(int64_t k, size_t planner) const;
  int64_t Value(int64_t k) const { return r_.start + k * r_.step; }

  const WhatIfOptions& options_;
  const WhatIfProgress& progress_;
  const std::chrono::steady_clock::time_point t0_;
  SynthOptions base_;
  std::vector<std::string> compared_;  // "ideal" + sized planners
  int64_t max_k_ = 0;
  std::map<int64_t, WhatIfPoint> points_;
  std::set<int64_t> unbuildable_;
  WhatIfResult r_;
};

absl::StatusOr<bool> Search::Evaluate(int64_t k) {
  if (points_.count(k) > 0 || unbuildable_.count(k) > 0) return true;
  if (r_.evaluations >= options_.max_evaluations) {
    if (r_.note.empty()) {
      r_.note = absl::StrCat("stopped after ", r_.evaluations, " evaluations (the cap)");
    }
    return false;
  }
  ++r_.evaluations;
  const int64_t value = Value(k);
  const SynthOptions o = WithDimension(base_, options_.dimension, value);
  absl::StatusOr<Trace> trace = o.Validate().ok() ? SynthesizeTrace(o, "whatif")
                                                  : absl::StatusOr<Trace>(o.Validate());
  if (!trace.ok()) {
    // A configuration the synthesizer refuses (malformed input) at a larger
    // value is a grid point that fits nothing; anything else is an error.
    if (k == 0 || KindOf(trace.status()) != ErrorKind::kMalformedInput) {
      return trace.status();
    }
    unbuildable_.insert(k);
    if (r_.note.empty()) {
      r_.note = absl::StrCat(ScaleDimensionName(options_.dimension), " ", value,
                             " cannot be synthesized (", trace.status().message(),
                             "): counted as fitting no planner");
    }
    return true;
  }
  SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve curve, ComputeMemoryCurve(*trace));
  CompareOptions co;
  co.simulator = options_.simulator;
  co.simulator.device.capacity_bytes = o.device.capacity_bytes;
  co.simulator.device.reserve_bytes = options_.reserve_bytes;
  co.planners = compared_;
  co.planner_options = options_.planner_options;
  SWAPPLAN_ASSIGN_OR_RETURN(Comparison c, ComparePlanners(*trace, co, &curve));
  WhatIfPoint p;
  p.value = value;
  p.peak_unswapped_bytes = c.peak.bytes;
  p.persistent_bytes = c.persistent_bytes;
  p.ideal_time_ns = c.ideal_time_ns;
  for (size_t i = 1; i < c.rows.size(); ++i) {
    const PlannerOutcome& row = c.rows[i];
    WhatIfCell cell;
    cell.feasible = row.feasible;
    cell.fits = row.feasible && (options_.max_overhead_vs_ideal == 0 ||
                                 row.sim->overhead_vs_ideal <= options_.max_overhead_vs_ideal);
    if (row.sim) {
      cell.iteration_time_ns = row.sim->iteration_time_ns;
      cell.overhead_vs_ideal = row.sim->overhead_vs_ideal;
      cell.stall_ns = row.sim->stall_ns;
      cell.recompute_ns = row.sim->recompute_ns;
      cell.peak_bytes = row.sim->peak_bytes;
    }
    p.cells.push_back(cell);
  }
  if (r_.h2d_bandwidth_bytes_per_s == 0) {
    r_.h2d_bandwidth_bytes_per_s = c.simulator.device.h2d_bandwidth_bytes_per_s;
    r_.d2h_bandwidth_bytes_per_s = c.simulator.device.d2h_bandwidth_bytes_per_s;
  }
  if (progress_) {
    progress_(p, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  }
  points_.emplace(k, std::move(p));
  return true;
}

bool Search::Fits(int64_t k, size_t planner) const {
  auto it = points_.find(k);
  return it != points_.end() && it->second.cells[planner].fits;
}

absl::StatusOr<WhatIfResult> Search::Run() {
  SWAPPLAN_RETURN_IF_ERROR(options_.Validate());
  base_ = options_.base;
  base_.iterations = 1;
  base_.loss_scale_skip_every = 0;
  base_.validation_every = 0;
  base_.tensor_names = false;
  r_.dimension = options_.dimension;
  r_.start = DimensionValue(base_, options_.dimension);
  r_.step = options_.step > 0 ? options_.step : DefaultStep(base_, options_.dimension);
  DeviceModel budget = base_.device;
  budget.reserve_bytes = options_.reserve_bytes;
  r_.device_memory_bytes = budget.capacity_bytes;
  r_.reserve_bytes = budget.reserve_bytes;
  r_.budget_bytes = budget.BudgetBytes();
  r_.max_overhead_vs_ideal = options_.max_overhead_vs_ideal;
  if (options_.planners.empty() && base_.inference) {
    r_.planners = {"noswap", "chameleon", "hyperoffload"};
  } else if (options_.planners.empty()) {
    for (const PlannerInfo& p : RegisteredPlanners()) {
      if (p.in_default_set && !p.unlimited_memory) r_.planners.push_back(p.name);
    }
  } else {
    for (const std::string& p : options_.planners) {
      if (!FindPlanner(p)->unlimited_memory) r_.planners.push_back(p);
    }
  }
  compared_ = {"ideal"};
  compared_.insert(compared_.end(), r_.planners.begin(), r_.planners.end());
  // Largest grid index: max_value, and no int64 overflow of the value.
  max_k_ = (std::numeric_limits<int64_t>::max() - r_.start) / r_.step;
  if (options_.max_value > 0) max_k_ = std::min(max_k_, (options_.max_value - r_.start) / r_.step);

  // Galloping while some planner still fits.
  SWAPPLAN_ASSIGN_OR_RETURN(bool built, Evaluate(0));
  (void)built;
  auto any_fits = [&](int64_t k) {
    for (size_t p = 0; p < r_.planners.size(); ++p) {
      if (Fits(k, p)) return true;
    }
    return false;
  };
  for (int64_t k = 0, next = 1; any_fits(k);) {
    if (k >= max_k_) {
      if (r_.note.empty()) {
        r_.note = absl::StrCat("stopped at the largest value allowed, ", Value(max_k_));
      }
      break;
    }
    const int64_t nk = std::min(next, max_k_);
    SWAPPLAN_ASSIGN_OR_RETURN(bool ok, Evaluate(nk));
    if (!ok) break;
    k = nk;
    next = nk > max_k_ / 2 ? max_k_ : 2 * nk;
  }
  // Per planner: binary search between its largest fitting and smallest
  // failing index.
  auto bounds = [&](size_t p, int64_t* lo, int64_t* hi) {
    *hi = -1;
    for (const auto& [k, point] : points_) {
      if (!point.cells[p].fits) {
        *hi = k;
        break;
      }
    }
    for (int64_t k : unbuildable_) {
      if (*hi < 0 || k < *hi) *hi = k;
    }
    *lo = -1;
    for (const auto& [k, point] : points_) {
      if ((*hi < 0 || k < *hi) && point.cells[p].fits) *lo = k;
    }
  };
  bool capped = false;
  for (size_t p = 0; p < r_.planners.size() && !capped; ++p) {
    for (;;) {
      int64_t lo = 0, hi = 0;
      bounds(p, &lo, &hi);
      if (lo < 0 || hi < 0 || hi - lo <= 1) break;
      SWAPPLAN_ASSIGN_OR_RETURN(bool ok, Evaluate(lo + (hi - lo) / 2));
      if (!ok) {
        capped = true;
        break;
      }
    }
  }
  // Table 3's extrapolation through two values that fit without swapping:
  // the ones asked for, else the two largest tried.
  std::vector<const WhatIfPoint*> unswapped;
  if (!options_.extrapolate_from.empty()) {
    std::vector<int64_t> ks;
    for (int64_t v : options_.extrapolate_from) ks.push_back((v - r_.start) / r_.step);
    std::sort(ks.begin(), ks.end());
    for (int64_t k : ks) {
      SWAPPLAN_ASSIGN_OR_RETURN(bool ok, Evaluate(k));
      auto it = points_.find(k);
      if (!ok || it == points_.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "whatif: extrapolation value ", Value(k), " could not be evaluated (", r_.note, ")"));
      }
      if (it->second.peak_unswapped_bytes > r_.budget_bytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("whatif: extrapolation value ", Value(k),
                         " does not fit without swapping (unswapped peak ",
                         FormatBytes(it->second.peak_unswapped_bytes), " > budget ",
                         FormatBytes(r_.budget_bytes), ")"));
      }
      unswapped.push_back(&it->second);
    }
  }
  for (size_t p = 0; p < r_.planners.size(); ++p) {
    int64_t lo = 0, hi = 0;
    bounds(p, &lo, &hi);
    WhatIfMax m;
    if (lo >= 0) {
      m.value = Value(lo);
      m.iteration_time_ns = points_.at(lo).cells[p].iteration_time_ns;
    }
    if (hi >= 0) m.first_failing = Value(hi);
    r_.max.push_back(m);
  }
  if (options_.extrapolate_from.empty()) {
    for (const auto& [k, point] : points_) {
      if (point.peak_unswapped_bytes <= r_.budget_bytes) unswapped.push_back(&point);
    }
  }
  for (auto& [k, point] : points_) r_.points.push_back(point);
  if (unswapped.size() >= 2) {
    const WhatIfPoint& a = *unswapped[unswapped.size() - 2];
    const WhatIfPoint& b = *unswapped.back();
    r_.extrapolation_from = a.value;
    r_.extrapolation_to = b.value;
    const double slope = static_cast<double>(b.ideal_time_ns - a.ideal_time_ns) /
                         static_cast<double>(b.value - a.value);
    for (WhatIfPoint& point : r_.points) {
      if (point.peak_unswapped_bytes <= r_.budget_bytes) continue;
      point.extrapolated_time_ns = b.ideal_time_ns + static_cast<int64_t>(std::llround(
                                                         slope * (point.value - b.value)));
    }
  }
  return r_;
}

}  // namespace

absl::StatusOr<WhatIfResult> RunWhatIf(const WhatIfOptions& options,
                                       const WhatIfProgress& progress) {
  Search search(options, progress);
  return search.Run();
}

}  // namespace swapplan
