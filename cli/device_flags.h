// The device flags, the same in every command that takes a device model
// (SPEC §10), and the one DeviceModel they describe:
//
//   --device NAME              a preset (device/presets.h, `swapplan devices`)
//   --device-memory SIZE       capacity, e.g. 80GiB
//   --reserve SIZE             kept free; the budget is capacity - reserve
//   --oversubscription RATIO   (compare, optimum, report, search) the budget
//                              as a ratio of the iteration's memory curve,
//                              instead of --device-memory and --reserve
//   --h2d-bandwidth RATE       host->device copies, e.g. 25GB/s
//   --d2h-bandwidth RATE       device->host copies
//   --copy-latency DURATION    fixed cost of every copy, e.g. 10us
//   --half-duplex              one copy at a time (copy_engines = 1)
//   --compute-scale RATIO      recorded op durations x RATIO, e.g. 0.5x
//   --peak-flops / --memory-bandwidth / --interconnect-bandwidth
//                              roofline figures (synth, whatif)
//   --remote-memory SIZE       adds a remote memory tier (seed 003's shared
//                              pool; tier 1 in policies) of this capacity
//   --remote-bandwidth RATE    its bandwidth, both directions (required
//                              with --remote-memory); --remote-store-bandwidth
//                              / --remote-load-bandwidth set one direction
//   --remote-latency DURATION  fixed cost of every copy to or from it
//   --remote-shared-by N       ranks of a node sharing it: each gets 1/N of
//                              its capacity and bandwidth
//
// A model is built in three steps: what the input records (the trace's
// metadata, a policy's budget), then the preset named by --device, then
// every explicit flag, each overriding the one before. Missing figures and
// bad values are problems collected in the command's FlagSet, so a command
// reports them all at once.
//
// Compute time scale. Recorded op durations are device times of the device
// the trace was recorded on. --compute-scale F multiplies them by F;
// without it, --device D derives F from the peak dense FLOP/s of the
// recording device's preset over D's (a global factor: the trace records no
// shapes to rescale op by op). A trace recorded on a CPU is never planned
// with CPU times silently: unless --compute-scale is given, a warning says
// so (stderr, and "warnings" in every JSON report).
//
//   DeviceFlags f;  AddDeviceFlags(sub, &flags, &f, {});
//   ...
//   ResolvedDevice d = ResolveDevice(f, TraceDeviceDefaults(trace), {}, &flags);
//   SWAPPLAN_RETURN_IF_ERROR(flags.Status());
//   SimulatorOptions o;  o.device = d.model;   // the library scales durations
//
// Everything here is O(1).
#ifndef SWAPPLAN_CLI_DEVICE_FLAGS_H_
#define SWAPPLAN_CLI_DEVICE_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "flags.h"
#include "swapplan/device/device_model.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"

namespace swapplan::cli {

struct DeviceFlags {
  std::optional<std::string> device;
  std::optional<int64_t> device_memory_bytes;
  std::optional<int64_t> reserve_bytes;
  std::optional<double> h2d_bandwidth_bytes_per_s;
  std::optional<double> d2h_bandwidth_bytes_per_s;
  std::optional<int64_t> copy_latency_ns;
  bool half_duplex = false;
  std::optional<double> compute_scale;
  std::optional<double> peak_flops_per_s;
  std::optional<double> memory_bandwidth_bytes_per_s;
  std::optional<double> interconnect_bandwidth_bytes_per_s;
  // The remote tier (absent unless --remote-memory is given).
  std::optional<int64_t> remote_memory_bytes;
  std::optional<double> remote_bandwidth_bytes_per_s;
  std::optional<double> remote_store_bandwidth_bytes_per_s;
  std::optional<double> remote_load_bandwidth_bytes_per_s;
  std::optional<int64_t> remote_latency_ns;
  std::optional<int64_t> remote_shared_by_ranks;
};

// Which of the device flags a command declares.
struct DeviceFlagChoice {
  // --reserve.
  bool reserve = true;
  // --compute-scale (commands that use recorded op durations).
  bool compute_scale = true;
  // --peak-flops, --memory-bandwidth, --interconnect-bandwidth.
  bool roofline = false;
  // --remote-memory and its figures (commands that plan or simulate
  // policies that may name the remote tier: advise, compare, report,
  // simulate).
  bool remote_tier = false;
  // --device default shown in --help ("" = none).
  std::string default_device;
};

// Declares the device flags on `sub`, parsed by `flags`.
void AddDeviceFlags(CLI::App* sub, FlagSet* flags, DeviceFlags* f, const DeviceFlagChoice& choice);

// What the input records, before --device and the flags.
struct DeviceDefaults {
  // Names the input in "(X does not record it)".
  std::string source;
  // 0 = unknown.
  int64_t capacity_bytes = 0;
  double h2d_bandwidth_bytes_per_s = 0;
  double d2h_bandwidth_bytes_per_s = 0;
  // The device the op durations were recorded on ("" = none recorded: a
  // synthesized configuration).
  std::string recorded_device;
  // A compute scale the input already carries (a policy planned with one).
  double compute_time_scale = 1.0;
  // The preset used when --device is absent ("" = none; synth: a100-80g).
  std::string preset;
};

// The defaults a trace records (metadata).
DeviceDefaults TraceDeviceDefaults(const Trace& trace);

// Which figures a command cannot do without.
struct DeviceNeeds {
  bool capacity = true;
  bool bandwidths = true;
};

struct ResolvedDevice {
  // Valid when the FlagSet has no problems. A capacity not needed and not
  // known is kUnlimitedCapacityBytes.
  DeviceModel model;
  // How the compute scale was chosen, for reports: "as recorded",
  // "--compute-scale 0.5x", "--device h100-80gb: peak 16-bit FLOP/s of
  // 910b-64gb (313 TFLOP/s) / h100-80gb (989 TFLOP/s)".
  std::string compute_scale_source;
  // One line each: a CPU-recorded trace planned with CPU times, a recording
  // device without a preset.
  std::vector<std::string> warnings;
};

// Builds the model from `defaults`, the --device preset and the flags;
// problems (unknown preset, a needed figure unknown, a reserve that leaves
// nothing, an invalid model) go to `flags`.
ResolvedDevice ResolveDevice(const DeviceFlags& f, const DeviceDefaults& defaults,
                             const DeviceNeeds& needs, FlagSet* flags);

// --oversubscription r: the budget as persistent bytes + (unswapped peak -
// persistent bytes) / r (curve/oversubscription.h), instead of
// --device-memory and --reserve. The same flag and help for every command
// that takes it.
void AddOversubscriptionFlag(CLI::App* sub, FlagSet* flags, std::optional<double>* ratio);

// The one check of --oversubscription, before ResolveDevice (give it
// DeviceNeeds{.capacity = !ratio}): a problem in `flags` when it comes with
// --device-memory or --reserve (the ratio replaces both) or is below 1x.
// Returns the ratio for CompareOptions::oversubscription, 0 when not given;
// the library turns it into the device model (OversubscribedDevice).
//
//   // --oversubscription 2x --reserve 1GiB: "--oversubscription replaces
//   // --device-memory and --reserve: give one or the other"
//   options.oversubscription = CheckOversubscription(a.ratio, a.device, &a.flags);
double CheckOversubscription(const std::optional<double>& ratio, const DeviceFlags& device,
                             FlagSet* flags);

// One text line for reports: "op durations as recorded" or "op durations x
// 0.316 (--device h100-80gb: ...)".
std::string ComputeScaleText(const ResolvedDevice& d);

// Prints every warning on stderr as "swapplan: warning: <line>".
void PrintWarnings(const std::vector<std::string>& warnings);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_DEVICE_FLAGS_H_
