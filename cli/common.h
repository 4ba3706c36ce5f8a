// Pieces every command shares: the --iteration flag and its default (the
// last complete iteration, for every command), the text and JSON forms of
// the device model, warnings and op references, so that reports use one
// vocabulary (docs/json/README.md):
//
//   peak_unswapped_bytes     the peak without swapping
//   peak_with_policy_bytes   the peak with the policy applied
//   num_<things>             a count; <things> is always an array
//   <quantity>_<unit>        units in names: _bytes, _ns, _bytes_per_s,
//                            _fraction (0.25 = 25%), _ratio
//   device                   the DeviceModel object (DeviceJson)
//   warnings                 array of one-line warnings
//
//   std::optional<int64_t> it;
//   AddIterationFlag(sub, &flags, &it);
//   ... int32_t iteration = ResolveIteration(it, trace, &flags);
//
// All O(1) except LastCompleteIteration (O(ops)).
#ifndef SWAPPLAN_CLI_COMMON_H_
#define SWAPPLAN_CLI_COMMON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "device_flags.h"
#include "flags.h"
#include "swapplan/device/device_model.h"
#include "swapplan/trace/trace.h"

namespace swapplan::cli {

// The last iteration with both FORWARD and BACKWARD ops (a training step,
// not a trailing validation pass or a truncated one); the last iteration
// when none has both.
int32_t LastCompleteIteration(const Trace& trace);

// --iteration N (default: the last complete iteration).
void AddIterationFlag(CLI::App* sub, FlagSet* flags, std::optional<int64_t>* iteration);

// The iteration to use: the flag's, checked against the trace (a problem
// in `flags` when out of range), else LastCompleteIteration.
int32_t ResolveIteration(const std::optional<int64_t>& flag, const Trace& trace, FlagSet* flags);

// Reads the trace a positional argument names, so that its problems are
// reported with the flags': the trace when it reads (even when `flags` has
// problems: more may be found with it); otherwise an error — the flags'
// problems plus the read failure as one more line, or the read failure
// alone (its own exit status) when the flags are fine. An empty `path` is
// the "missing trace argument" problem FlagSet::Parse reported.
absl::StatusOr<Trace> ReadTraceArg(const std::string& path, FlagSet* flags);

// "100 B", or "1.50 GiB (1610612736 B)" from 1 KiB on.
std::string BytesExact(int64_t bytes);

// "op 7 (aten::mm)" for local op `op` of `iteration`.
std::string OpText(const Trace& trace, int32_t iteration, int32_t op);
// The name of local op `op` of `iteration`; JSON null for op < 0.
nlohmann::json OpNameJson(const Trace& trace, int32_t iteration, int32_t op);
// `op`, or JSON null for op < 0.
nlohmann::json OpJson(int32_t op);

// "h2d 25.0 GB/s, d2h 25.0 GB/s, latency 10.0 us, full duplex".
std::string LinkText(const DeviceModel& m);
// "h100-80gb: 80.00 GiB" / "custom: 64.00 GiB" / "unlimited".
std::string DeviceText(const DeviceModel& m);

// The device object of every report: name, capacity_bytes (null when
// unlimited), reserve_bytes, h2d/d2h_bandwidth_bytes_per_s,
// copy_latency_ns, copy_engines, compute_time_scale,
// compute_time_scale_source, peak_flops_per_s,
// memory_bandwidth_bytes_per_s, interconnect_bandwidth_bytes_per_s.
nlohmann::json DeviceJson(const ResolvedDevice& d);

// A JSON array of strings.
nlohmann::json WarningsJson(const std::vector<std::string>& warnings);

}  // namespace swapplan::cli

#endif  // SWAPPLAN_CLI_COMMON_H_
