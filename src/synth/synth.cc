#include "swapplan/synth/synth.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "generator.h"
#include "swapplan/trace/builder.h"
#include "swapplan/util/error.h"

namespace swapplan {

absl::StatusOr<Trace> SynthesizeTrace(const SynthOptions& options, const std::string& source,
                                      const SynthProgress& progress) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  // Upper bound of the op count (dense layers emit ~35-70 ops per micro-batch
  // pass with recomputation, MoE layers ~15 more per expert; optimizer ~5 per
  // parameter): refuse what the format cannot index.
  const double layers = options.stage_layers();
  const double experts = options.model.num_experts;
  const double passes =
      static_cast<double>(options.num_micro_batches) + options.validation_micro_batches;
  const double params_per_layer = 16 + 2 * experts;
  const double ops_bound =
      options.inference
          ? static_cast<double>(options.iterations) * (options.generate_tokens + 1.0) *
                (layers * (30 + 10 * experts) + 20)
          : static_cast<double>(options.iterations) *
                (passes * (layers * (80 + 25 * experts) * (options.recompute ? 1.5 : 1.0) + 100) +
                 5 * (params_per_layer * layers + 8));
  if (ops_bound > static_cast<double>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "synth: the trace would have about ", static_cast<int64_t>(ops_bound),
        " ops, more than a trace can index (2^31 - 1); reduce --iterations, --micro-batches, "
        "--generate, --layers or --experts"));
  }
  if (!options.inference && params_per_layer * layers + 8 > 60000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "synth: ", static_cast<int64_t>(params_per_layer * layers),
        " parameter tensors on one stage; the optimizer's foreach ops take at most 65535 "
        "operands; use pipeline parallelism (--pp) or fewer layers/experts"));
  }
  TraceBuilder builder(source);
  {
    synth_internal::Generator gen(options, &builder);
    if (absl::Status s = gen.Run(progress); !s.ok()) return s;
  }
  absl::StatusOr<Trace> trace = std::move(builder).Finish();
  if (!trace.ok() && RuleOf(trace.status()) == "overflow") {
    // Totals over all iterations (op durations, wall times) overflow: the
    // configuration is too large — an input error naming the op, not a bug.
    return trace.status();
  }
  if (!trace.ok()) {
    return absl::InternalError(absl::StrCat("synth: generated an invalid trace (a bug): ",
                                            trace.status().message()));
  }
  return trace;
}

}  // namespace swapplan
