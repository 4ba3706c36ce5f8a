// What-if scaling (eval/whatif.h) on a tiny Llama-shaped configuration
// (2 layers, hidden 512, 8 heads, FFN 1408, vocabulary 1000, seq 1024) on a
// 300 MiB device: each evaluation synthesizes ~150 ops, so a whole search
// takes milliseconds.
//
// The search (galloping + per-planner bisection) is checked against a naive
// reference that evaluates every value of the grid; noswap's maximum
// against the closed-form memory estimate (synth/estimate.h), which is
// derived independently of the generator.
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "swapplan/eval/compare.h"
#include "swapplan/eval/whatif.h"
#include "swapplan/synth/estimate.h"
#include "swapplan/synth/synth.h"

namespace swapplan {
namespace {

SynthOptions Tiny() {
  SynthOptions o;
  o.model = *ModelPreset("llama2-7b");
  o.model.layers = 2;
  o.model.hidden_size = 512;
  o.model.num_heads = 8;
  o.model.num_kv_heads = 8;
  o.model.ffn_hidden_size = 1408;
  o.model.vocab_size = 1000;
  REQUIRE(UseDevicePreset("a100-80g", &o).ok());
  o.device.capacity_bytes = int64_t{300} << 20;
  o.seq_length_tokens = 1024;
  return o;
}

// Naive reference: every grid value from the start to `last`, one
// comparison each; the largest value at which each planner fits.
std::vector<std::optional<int64_t>> NaiveMax(const WhatIfOptions& w, int64_t last,
                                             const std::vector<std::string>& planners) {
  std::vector<std::optional<int64_t>> max(planners.size());
  std::vector<bool> failed(planners.size(), false);
  const int64_t start = DimensionValue(w.base, w.dimension);
  const int64_t step = w.step > 0 ? w.step : DefaultStep(w.base, w.dimension);
  for (int64_t v = start; v <= last; v += step) {
    SynthOptions o = WithDimension(w.base, w.dimension, v);
    o.tensor_names = false;
    absl::StatusOr<Trace> t = SynthesizeTrace(o);
    REQUIRE(t.ok());
    CompareOptions c;
    c.simulator.device.capacity_bytes = o.device.capacity_bytes;
    c.planners = planners;
    absl::StatusOr<Comparison> r = ComparePlanners(*t, c);
    REQUIRE(r.ok());
    for (size_t p = 0; p < planners.size(); ++p) {
      const PlannerOutcome& row = r->rows[p];
      const bool fits = row.feasible && (w.max_overhead_vs_ideal == 0 ||
                                         row.sim->overhead_vs_ideal <= w.max_overhead_vs_ideal);
      if (!fits) failed[p] = true;
      if (fits && !failed[p]) max[p] = v;
    }
  }
  return max;
}

TEST_CASE("whatif: dimensions, steps and validation", "[eval]") {
  SynthOptions o = Tiny();
  ScaleDimension d;
  REQUIRE(ParseScaleDimension("seq", &d));
  CHECK(d == ScaleDimension::kSeq);
  d = ScaleDimension::kBatch;
  REQUIRE(ParseScaleDimension("sequence", &d));  // --max's alias
  CHECK(d == ScaleDimension::kSeq);
  CHECK_FALSE(ParseScaleDimension("width", &d));
  CHECK(DimensionValue(o, ScaleDimension::kBatch) == 1);
  CHECK(DimensionValue(WithDimension(o, ScaleDimension::kLayers, 7), ScaleDimension::kLayers) == 7);
  CHECK(DefaultStep(o, ScaleDimension::kBatch) == 1);
  CHECK(DefaultStep(o, ScaleDimension::kSeq) == 1024);
  // 2 x 8 heads = 16 -> 128; 2 x 12 heads = 24 -> 144 (the first multiple >= 128).
  CHECK(DefaultStep(o, ScaleDimension::kHidden) == 128);
  o.model.num_heads = o.model.num_kv_heads = 12;
  o.model.hidden_size = 768;
  CHECK(DefaultStep(o, ScaleDimension::kHidden) == 144);
  o.parallel.pipeline_parallel = 2;
  CHECK(DefaultStep(o, ScaleDimension::kLayers) == 2);
  // Learned positions grow with the sequence.
  SynthOptions g = o;
  g.model = *ModelPreset("gpt2");
  CHECK(WithDimension(g, ScaleDimension::kSeq, 4096).model.max_position_embeddings == 4096);

  WhatIfOptions w;
  w.base = Tiny();
  w.base.micro_batch_sequences = 4;
  w.max_value = 3;
  CHECK(w.Validate().message() == "whatif: max value 3 is below the start 4");
  w.max_value = 0;
  w.planners = {"lru", "magic"};
  CHECK(w.Validate().message() ==
        "whatif: unknown planner 'magic' (known: ideal, noswap, chameleon, recompute, vdnn, lru, "
        "bucket, hybrid, advisor"
        ", selective, te-offload, save-on-cpu, hyperoffload, chain)");
  w.planners = {};
  w.extrapolate_from = {4, 4};
  CHECK(w.Validate().message() == "whatif: extrapolation needs two distinct values");
  w.extrapolate_from = {4, 9};
  w.step = 2;
  CHECK(w.Validate().message() == "whatif: extrapolation value 9 is not on the grid 4 + k x 2");
  w.extrapolate_from = {};
  w.reserve_bytes = int64_t{300} << 20;
  CHECK(w.Validate().message() ==
        "whatif: reserve 300.00 MiB leaves no budget out of 300.00 MiB");
}

TEST_CASE("whatif: the search finds what a scan of every value finds", "[eval]") {
  const std::vector<std::string> planners = {"noswap", "chameleon", "recompute", "lru"};
  struct Case {
    ScaleDimension d;
    int64_t step;
    double max_overhead;
    int64_t scan_to;  // beyond every planner's maximum
  };
  for (const Case& c : {Case{ScaleDimension::kBatch, 0, 0, 14},
                        Case{ScaleDimension::kLayers, 0, 0.5, 8},
                        Case{ScaleDimension::kSeq, 512, 0, 15 * 1024},
                        Case{ScaleDimension::kHidden, 0, 0, 1280}}) {
    INFO("dimension " << ScaleDimensionName(c.d));
    WhatIfOptions w;
    w.base = Tiny();
    w.dimension = c.d;
    w.step = c.step;
    w.max_overhead_vs_ideal = c.max_overhead;
    w.planners = planners;
    absl::StatusOr<WhatIfResult> r = RunWhatIf(w);
    REQUIRE(r.ok());
    REQUIRE(r->planners == planners);
    const std::vector<std::optional<int64_t>> naive = NaiveMax(w, c.scan_to, planners);
    for (size_t p = 0; p < planners.size(); ++p) {
      INFO("planner " << planners[p]);
      CHECK(r->max[p].value == naive[p]);
      REQUIRE(r->max[p].first_failing.has_value());
      CHECK(*r->max[p].first_failing == r->max[p].value.value_or(r->start - r->step) + r->step);
    }
    // Points ascend and each planner's verdicts agree with its maximum.
    for (size_t i = 1; i < r->points.size(); ++i) {
      CHECK(r->points[i - 1].value < r->points[i].value);
    }
    CHECK(r->evaluations == static_cast<int32_t>(r->points.size()));
  }
}

TEST_CASE("whatif: noswap's maximum is where the closed-form peak stops fitting", "[eval]") {
  // Batch: the estimate of the unswapped peak (independent of the
  // generator) must put the limit where the search does.
  WhatIfOptions w;
  w.base = Tiny();
  w.planners = {"noswap"};
  absl::StatusOr<WhatIfResult> r = RunWhatIf(w);
  REQUIRE(r.ok());
  int64_t last_fit = 0;
  for (int32_t b = 1; b <= 20; ++b) {
    SynthOptions o = Tiny();
    o.micro_batch_sequences = b;
    absl::StatusOr<MemoryEstimate> e = EstimateMemory(o);
    REQUIRE(e.ok());
    if (e->peak_bytes <= w.base.device.capacity_bytes) last_fit = b;
  }
  REQUIRE(r->max[0].value.has_value());
  CHECK(*r->max[0].value == last_fit);
  CHECK(last_fit == 3);  // 164.4, 214.5, 264.6 MiB fit 300 MiB; 314.7 does not
}

TEST_CASE("whatif: extrapolation through two sizes that fit without swapping", "[eval]") {
  WhatIfOptions w;
  w.base = Tiny();
  w.planners = {"noswap", "recompute"};
  w.extrapolate_from = {1, 3};
  absl::StatusOr<WhatIfResult> r = RunWhatIf(w);
  REQUIRE(r.ok());
  REQUIRE(r->extrapolation_from == std::optional<int64_t>(1));
  REQUIRE(r->extrapolation_to == std::optional<int64_t>(3));
  const WhatIfPoint* p1 = nullptr;
  const WhatIfPoint* p3 = nullptr;
  for (const WhatIfPoint& p : r->points) {
    if (p.value == 1) p1 = &p;
    if (p.value == 3) p3 = &p;
    // Only sizes that need swapping get an extrapolated time.
    CHECK(p.extrapolated_time_ns.has_value() == (p.peak_unswapped_bytes > r->budget_bytes));
  }
  REQUIRE(p1 != nullptr);
  REQUIRE(p3 != nullptr);
  // E(v) = t3 + (v - 3) (t3 - t1) / 2, rounded to the nanosecond.
  for (const WhatIfPoint& p : r->points) {
    if (!p.extrapolated_time_ns) continue;
    const double expected =
        static_cast<double>(p3->ideal_time_ns) +
        static_cast<double>(p.value - 3) *
            static_cast<double>(p3->ideal_time_ns - p1->ideal_time_ns) / 2.0;
    CHECK(std::abs(static_cast<double>(*p.extrapolated_time_ns) - expected) <= 0.5);
  }
  w.extrapolate_from = {1, 4};  // 314.7 MiB: needs swapping
  CHECK(RunWhatIf(w).status().message() ==
        "whatif: extrapolation value 4 does not fit without swapping (unswapped peak 314.68 MiB "
        "> budget 300.00 MiB)");
}

TEST_CASE("whatif: caps stop the search with a note", "[eval]") {
  WhatIfOptions w;
  w.base = Tiny();
  w.planners = {"recompute"};
  w.max_evaluations = 2;  // 1 and 2 only
  absl::StatusOr<WhatIfResult> r = RunWhatIf(w);
  REQUIRE(r.ok());
  CHECK(r->evaluations == 2);
  CHECK(r->note == "stopped after 2 evaluations (the cap)");
  CHECK(r->max[0].value == std::optional<int64_t>(2));
  CHECK_FALSE(r->max[0].first_failing.has_value());
  w.max_evaluations = 64;
  w.max_value = 4;
  r = RunWhatIf(w);
  REQUIRE(r.ok());
  CHECK(r->note == "stopped at the largest value allowed, 4");
  CHECK(r->max[0].value == std::optional<int64_t>(4));
}

}  // namespace
}  // namespace swapplan

namespace swapplan {
namespace {

// An inference request of a one-layer model (h = 8, 2 heads = 2 KV heads of
// d = 4, gated FFN 16, vocabulary padded to 128, bf16), batch 1, prompt P,
// one decode step, on a device whose HBM and host link both move 1 byte/ns.
// Its unswapped peak is at the prefill's MLP multiply (worked out op by op
// in tests/synth/synth_inference_test.cc's style): per prompt token the
// prompt K and V (16 B each), the residual r (16), fc1 (64), silu (32) and
// mul (32) = 176 B, plus the weights (5424 B) and the rotary table
// (16 B x (P + 1) positions): peak(P) = 5440 + 192 P. Offloading the
// prompt's K and V during the prefill's MLP (hyperoffload, KV windows)
// takes 32 B per token off: 5440 + 160 P.
//
// Capacity 5440 + 192 x 5120 + 100 = 988,580 B. On the grid 1024, 2048, ...:
//   noswap       the largest P with 5440 + 192 P <= 988,580: 5120
//                (6144 needs 1,185,088)
//   hyperoffload the largest P with 5440 + 160 P <= 988,580: 6144 (983,140 /
//                160 = 6144.6; 7168 needs 1,152,320)
TEST_CASE("whatif: the longest prompt of an inference request, with and without KV offload",
          "[whatif][inference]") {
  WhatIfOptions w;
  w.base = Tiny();
  w.base.model.layers = 1;
  w.base.model.hidden_size = 8;
  w.base.model.num_heads = 2;
  w.base.model.num_kv_heads = 2;
  w.base.model.ffn_hidden_size = 16;
  w.base.model.vocab_size = 16;
  w.base.device.memory_bandwidth_bytes_per_s = 1e9;
  w.base.device.peak_flops_per_s = 1e12;
  w.base.device.h2d_bandwidth_bytes_per_s = 1e9;
  w.base.device.d2h_bandwidth_bytes_per_s = 1e9;
  w.base.device.capacity_bytes = 988580;
  w.base.inference = true;
  w.base.micro_batch_sequences = 1;
  w.base.seq_length_tokens = 1024;
  w.base.generate_tokens = 1;
  w.dimension = ScaleDimension::kSeq;
  w.planner_options = {{"hyperoffload", "min_tensor_bytes", "0"}};
  absl::StatusOr<WhatIfResult> r = RunWhatIf(w);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  // The default planners for a request.
  REQUIRE(r->planners == std::vector<std::string>{"noswap", "chameleon", "hyperoffload"});
  CHECK(r->step == 1024);
  CHECK(r->max[0].value == 5120);
  CHECK(r->max[0].first_failing == 6144);
  CHECK(r->max[2].value == 6144);
  CHECK(r->max[2].first_failing == 7168);
  // Chameleon swaps activations from their forward use to their backward
  // use: a request has neither, so it sizes like noswap.
  CHECK(r->max[1].value == 5120);
  // The points searched (the golden's "searched 7 values"): 1024 .. 9216.
  REQUIRE(r->points.size() == 7);
  for (const WhatIfPoint& p : r->points) {
    INFO("prompt " << p.value);
    CHECK(p.peak_unswapped_bytes == 5440 + 192 * p.value);
  }
}

}  // namespace
}  // namespace swapplan
