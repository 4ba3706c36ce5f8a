// The shortfall of an infeasible plan, carried as a payload on its status
// (util/error.h's kinds ride the same way): how far over the budget the
// planner's best attempt peaks, so that a caller trying several planners
// (planners/chain.h) names the closest one without reading messages.
//
//   return WithShortfall(absl::ResourceExhaustedError(msg), missing_bytes);
//   ...
//   std::optional<int64_t> over = ShortfallOf(status);
//
// O(1).
#ifndef SWAPPLAN_UTIL_SHORTFALL_H_
#define SWAPPLAN_UTIL_SHORTFALL_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"

namespace swapplan {

// `status` with `bytes` attached as the shortfall (OK stays OK).
absl::Status WithShortfall(absl::Status status, int64_t bytes);
// The shortfall in bytes, when one is attached.
std::optional<int64_t> ShortfallOf(const absl::Status& status);

}  // namespace swapplan

#endif  // SWAPPLAN_UTIL_SHORTFALL_H_
