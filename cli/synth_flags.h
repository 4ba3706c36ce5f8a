// Flags shared by the commands that run the trace synthesizer (synth,
// whatif): model and device presets with every override, the parallel
// layout, the run shape and the roofline efficiencies. One definition, so
// `swapplan whatif` takes exactly the flags `swapplan synth` takes for the
// configuration it scales.
#ifndef SWAPPLAN_CLI_SYNTH_FLAGS_H_
#define SWAPPLAN_CLI_SYNTH_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "swapplan/synth/config.h"

namespace swapplan::cli {

struct SynthFlags {
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
  // Iterations and sequence changes (AddSynthRunFlags).
  int32_t iterations = 1, skip_every = 0, validation_every = 0, validation_micro_batches = 1;
  std::optional<std::string> seq_lengths;  // --seq-lengths (synth only)
  uint64_t seed = 1;
  double moe_imbalance = 0.3;
  double flops_efficiency = 1.0, hbm_efficiency = 1.0;
  std::optional<std::string> device_memory, h2d, d2h, hbm_bandwidth, link_bandwidth;
  std::optional<double> peak_flops;
};

// Declares the model, device, parallelism, shape, dtype, recomputation,
// routing and efficiency flags on `sub` (everything but the iteration
// count and sequence changes).
void AddSynthConfigFlags(CLI::App* sub, SynthFlags* flags);

// Declares --iterations, --loss-scale-skip-every, --validation-every,
// --validation-micro-batches, --seq-lengths.
void AddSynthRunFlags(CLI::App* sub, SynthFlags* flags);

// The synthesizer options the flags describe (presets, then overrides),
// validated. InvalidArgument / NotFound naming the flag or preset.
absl::StatusOr<SynthOptions> BuildSynthOptions(const SynthFlags& flags);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_SYNTH_FLAGS_H_
