#include "swapplan/synth/roofline.h"

#include <algorithm>
#include <cmath>

#include "swapplan/util/checked.h"

namespace swapplan {
namespace {

int64_t Ns(double seconds) {
  int64_t ns = 0;
  if (!CheckedCast(std::ceil(seconds * 1e9), &ns)) return kDurationOverflowNs;
  return std::max<int64_t>(1, ns);
}

}  // namespace

int64_t RooflineDurationNs(double flops, double bytes, const DeviceModel& device,
                           double flops_efficiency, double hbm_efficiency) {
  const double compute = flops / (device.peak_flops_per_s * flops_efficiency);
  const double memory = bytes / (device.memory_bandwidth_bytes_per_s * hbm_efficiency);
  return Ns(std::max(compute, memory));
}

int64_t CollectiveDurationNs(CollectiveKind kind, double bytes, int32_t group,
                             const DeviceModel& device) {
  const double n = std::max(1, group);
  double moved = bytes;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      moved = 2 * (n - 1) / n * bytes;
      break;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
      moved = (n - 1) / n * bytes;
      break;
    case CollectiveKind::kPointToPoint:
      break;
  }
  return Ns(moved / device.interconnect_bandwidth_bytes_per_s);
}

int64_t HostCopyDurationNs(double bytes, double bytes_per_s) { return Ns(bytes / bytes_per_s); }

}  // namespace swapplan
