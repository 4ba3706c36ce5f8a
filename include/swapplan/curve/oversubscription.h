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
// pressure on traces of any size. A ratio becomes a device model in one
// place, OversubscribedDevice: the capacity is budget(r) and nothing is
// reserved, so DeviceModel::BudgetBytes() is budget(r) like any other
// budget.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(MemoryCurve c, ComputeMemoryCurve(trace));
//   SWAPPLAN_ASSIGN_OR_RETURN(int64_t b, OversubscriptionBudget(c.iterations()[0], 1.5));
//   SWAPPLAN_ASSIGN_OR_RETURN(DeviceModel d,
//                             OversubscribedDevice(device, c.iterations()[0], 1.5));
//   d.BudgetBytes() == b;
//
// O(1).
#ifndef SWAPPLAN_CURVE_OVERSUBSCRIPTION_H_
#define SWAPPLAN_CURVE_OVERSUBSCRIPTION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/device/device_model.h"

namespace swapplan {

// persistent + floor((peak − persistent) / ratio) for one iteration's curve.
// InvalidArgument unless ratio is finite and >= 1.
absl::StatusOr<int64_t> OversubscriptionBudget(const IterationCurve& iteration, double ratio);

// The ratio a budget means for that curve: (peak − persistent) /
// (budget − persistent); +infinity when budget <= persistent, 1 when the
// peak fits (or nothing lies above the persistent bytes).
double OversubscriptionOf(const IterationCurve& iteration, int64_t budget_bytes);

// `device` planned at oversubscription `ratio` of `iteration`: capacity_bytes
// = OversubscriptionBudget(iteration, ratio) and reserve_bytes = 0 (the ratio
// states the budget itself, so whatever capacity and reserve `device` had
// are replaced); every other figure as given. InvalidArgument as
// OversubscriptionBudget.
absl::StatusOr<DeviceModel> OversubscribedDevice(DeviceModel device,
                                                 const IterationCurve& iteration, double ratio);

}  // namespace swapplan

#endif  // SWAPPLAN_CURVE_OVERSUBSCRIPTION_H_
