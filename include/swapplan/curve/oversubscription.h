// Oversubscription: a device budget stated as how many times the memory that
// swapping can move exceeds what the device leaves for it. Persistent bytes
// (parameters, gradient buffers, optimizer states: resident the whole
// iteration) are never moved, so the ratio is measured above them:
//
//   budget(r) = persistent + (unswapped peak − persistent) / r
//
//   bytes
//     ^   peak ..........  .-.
//     |                 /   '.      r = (peak - persistent)
//     |   budget ....../-----'.--       / (budget - persistent)
//     |               /        '.
//     |   persistent -----------'----
//     +-------------------------------> op
//
// r = 1 is the unswapped peak (nothing to move); r = 2 leaves room for half of
// what lies above the persistent bytes. `compare --oversubscription`,
// `whatif` and `regress` state budgets this way, so one r means the same
// pressure on traces of any size.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve c, ComputeMemoryCurve(trace));
//   SWAPPLAN_ASSIGN_OR_RETURN(int64_t b, OversubscriptionBudget(c.iterations()[0], 1.5));
//
// O(1).
#ifndef SWAPPLAN_CURVE_OVERSUBSCRIPTION_H_
#define SWAPPLAN_CURVE_OVERSUBSCRIPTION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "swapplan/curve/memory_curve.h"

namespace swapplan {

// persistent + floor((peak − persistent) / ratio) for one iteration's curve.
// InvalidArgument unless ratio is finite and >= 1.
absl::StatusOr<int64_t> OversubscriptionBudget(const IterationCurve& iteration, double ratio);

// The ratio a budget means for that curve: (peak − persistent) /
// (budget − persistent); +infinity when budget <= persistent, 1 when the
// peak fits (or nothing lies above the persistent bytes).
double OversubscriptionOf(const IterationCurve& iteration, int64_t budget_bytes);

}  // namespace swapplan

#endif  // SWAPPLAN_CURVE_OVERSUBSCRIPTION_H_
