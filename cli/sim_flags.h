// Flags shared by the commands that run the evaluation simulator (simulate,
// compare): copy latency, bandwidths, half-duplex link.
#ifndef SWAPPLAN_CLI_SIM_FLAGS_H_
#define SWAPPLAN_CLI_SIM_FLAGS_H_

#include <CLI/CLI.hpp>
#include <string>

#include "absl/status/status.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/trace.h"

namespace swapplan::cli {

struct SimFlags {
  std::string latency;        // "" = 0
  std::string bandwidth;      // both directions
  std::string h2d_bandwidth;  // overrides `bandwidth` for h2d
  std::string d2h_bandwidth;
  bool half_duplex = false;
};

// Declares --latency, --bandwidth, --h2d-bandwidth, --d2h-bandwidth,
// --half-duplex on `sub`.
void AddSimFlags(CLI::App* sub, SimFlags* flags);

// Parses the flags into options->device (bandwidths stay 0 when not given;
// --half-duplex: copy_engines 1). InvalidArgument naming the flag.
absl::Status ApplySimFlags(const SimFlags& flags, SimulatorOptions* options);

// "h2d 25.0 GB/s, d2h 25.0 GB/s, latency 10.0 us, full duplex".
std::string LinkText(const DeviceModel& device);

// "100 B", or "1.50 GiB (1610612736 B)" from 1 KiB on.
std::string BytesExact(int64_t bytes);

// "op 7 (aten::mm)" for local op `op` of `iteration`.
std::string OpText(const Trace& trace, int32_t iteration, int32_t op);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_SIM_FLAGS_H_
