// Roofline durations of the synthesizer's ops.
//
// A compute kernel takes as long as the slower of its two resources:
//
//   duration = max(FLOPs / (peak FLOP/s × flops_efficiency),
//                  bytes / (HBM bytes/s × hbm_efficiency))
//
// where bytes = sizes of all inputs plus all outputs (an in-place operand is
// read and written: counted twice). Matmuls and attention are usually
// compute-bound, everything else memory-bound. Communication is not HBM-bound:
// a ring all-reduce of B bytes over n ranks moves 2(n-1)/n·B over the link,
// reduce-scatter and all-gather (n-1)/n·B, a point-to-point send B; host
// copies move B over the host link. No overlap is modelled: the iteration's
// wall time is the sum of its ops' durations.
//
//   RooflineDurationNs(2 * 4096.0 * 4096 * 4096, 3 * 4096 * 4096 * 2, dev, 1, 1)
//
// Every function is O(1). Durations are rounded up to whole nanoseconds and
// are at least 1 ns. A duration that int64 nanoseconds cannot hold (about
// 292 years; absurdly slow device figures) is returned as kDurationOverflowNs
// (INT64_MAX), which the synthesizer refuses as an overflow; never a wrapped
// or undefined value.
#ifndef SWAPPLAN_SYNTH_ROOFLINE_H_
#define SWAPPLAN_SYNTH_ROOFLINE_H_

#include <cstdint>

#include "swapplan/synth/config.h"

namespace swapplan {

inline constexpr int64_t kDurationOverflowNs = INT64_MAX;

enum class CollectiveKind : uint8_t { kAllReduce, kReduceScatter, kAllGather, kPointToPoint };

// Compute kernel: requires efficiencies in (0, 1] and a valid device.
int64_t RooflineDurationNs(double flops, double bytes, const DeviceModel& device,
                           double flops_efficiency, double hbm_efficiency);

// Collective over `group` ranks moving a tensor of `bytes` (the full,
// unsharded size for reduce-scatter and all-gather) over device links.
int64_t CollectiveDurationNs(CollectiveKind kind, double bytes, int32_t group,
                             const DeviceModel& device);

// Copy over the host link at `bytes_per_s`.
int64_t HostCopyDurationNs(double bytes, double bytes_per_s);

}  // namespace swapplan

#endif  // SWAPPLAN_SYNTH_ROOFLINE_H_
