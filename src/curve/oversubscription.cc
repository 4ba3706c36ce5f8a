#include "swapplan/curve/oversubscription.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::StatusOr<int64_t> OversubscriptionBudget(const IterationCurve& iteration, double ratio) {
  if (!std::isfinite(ratio) || !(ratio >= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "oversubscription ", ratio, " is not a finite ratio >= 1 (1 = the unswapped peak fits)"));
  }
  const int64_t persistent = iteration.persistent_bytes;
  const int64_t movable = iteration.peak_unswapped.bytes - persistent;
  if (movable <= 0) return iteration.peak_unswapped.bytes;
  // long double keeps every byte of a 2^63 range exact enough for floor().
  const long double share = static_cast<long double>(movable) / static_cast<long double>(ratio);
  return persistent + static_cast<int64_t>(std::floor(share));
}

double OversubscriptionOf(const IterationCurve& iteration, int64_t budget_bytes) {
  const int64_t persistent = iteration.persistent_bytes;
  const int64_t movable = iteration.peak_unswapped.bytes - persistent;
  if (budget_bytes >= iteration.peak_unswapped.bytes || movable <= 0) return 1.0;
  if (budget_bytes <= persistent) return std::numeric_limits<double>::infinity();
  return static_cast<double>(movable) / static_cast<double>(budget_bytes - persistent);
}

absl::StatusOr<DeviceModel> OversubscribedDevice(DeviceModel device,
                                                 const IterationCurve& iteration, double ratio) {
  SWAPPLAN_ASSIGN_OR_RETURN(device.capacity_bytes, OversubscriptionBudget(iteration, ratio));
  device.reserve_bytes = 0;
  return device;
}

}  // namespace swapplan
