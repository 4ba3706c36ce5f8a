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
#include "device_flags.h"
#include "flags.h"
#include "swapplan/synth/config.h"

namespace swapplan::cli {

// The synthesizer's default device (an alias of a100-80gb whose name the
// bundled synthesized traces carry).
inline constexpr char kSynthDefaultDevice[] = "a100-80g";

struct SynthFlags {
  std::string model = "llama2-7b";
  // --device, --device-memory, the bandwidths and the roofline figures
  // (device_flags.h).
  DeviceFlags device;
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
  // Inference request (--inference): --batch sequences, --prompt tokens,
  // --generate decode steps; the three are refused without --inference.
  bool inference = false;
  std::optional<int64_t> batch, prompt, generate;
};

// Declares the model, device, parallelism, shape, dtype, recomputation,
// routing and efficiency flags on `sub` (everything but the iteration
// count and sequence changes); the device flags are parsed by `fs`, with
// --reserve when `reserve` (whatif).
void AddSynthConfigFlags(CLI::App* sub, FlagSet* fs, SynthFlags* flags, bool reserve);
// The same with the device flags `device` chooses (advise: --compute-scale
// too, for its TRACE form).
void AddSynthConfigFlags(CLI::App* sub, FlagSet* fs, SynthFlags* flags,
                         const DeviceFlagChoice& device);

// Declares --iterations, --loss-scale-skip-every, --validation-every,
// --validation-micro-batches, --seq-lengths.
void AddSynthRunFlags(CLI::App* sub, SynthFlags* flags);

// The synthesizer options the flags describe (presets, then overrides).
// Problems with the device flags go to `fs` (also the `device` it
// resolved); the returned status is InvalidArgument / NotFound naming the
// flag or preset for the rest (call after fs->Parse()).
absl::StatusOr<SynthOptions> BuildSynthOptions(const SynthFlags& flags, FlagSet* fs,
                                               ResolvedDevice* device);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_SYNTH_FLAGS_H_
