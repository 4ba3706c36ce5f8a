// Fixtures shared by the planner, policy and checker test suites: a swap
// item from its ops, a planning problem on a 1 byte/ns link, and a policy's
// items reduced to their op windows so a test compares them with one literal.
//
//   CHECK(OpWindows(*policy) == std::vector<OpWindow>{{5, 2, 3, 7, 9}});
#ifndef SWAPPLAN_TESTS_SUPPORT_PLANNER_FIXTURES_H_
#define SWAPPLAN_TESTS_SUPPORT_PLANNER_FIXTURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "swapplan/planners/planner.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/checker.h"
#include "swapplan/trace/trace.h"

namespace swapplan::testing {

// A SWAP item of tensor `id` (trace id, `size` bytes): copy out from op
// `out`, released after op `rel`, copy in from op `in`, first use at op `use`
// (local op indices); every other field default.
PolicyItem SwapItem(uint64_t id, int64_t size, int32_t out, int32_t rel, int32_t in, int32_t use);

// Iteration 0 of `t` on a device of `budget_bytes` whose links move 1 byte
// per ns both ways (1e9 B/s): a 100-byte tensor takes 100 ns to copy.
PlanningProblem OneBytePerNsProblem(const Trace& t, int64_t budget_bytes);

// One policy item's tensor (trace id) and ops: swap-out start, release,
// swap-in start, first use.
struct OpWindow {
  uint64_t tensor;
  int32_t out, release, in, use;
  bool operator==(const OpWindow&) const = default;
};
// The items of `p` in policy order. O(items).
std::vector<OpWindow> OpWindows(const Policy& p);

// Every violation's message, one per line ("" when clean): for one INFO
// before a CHECK on the report, e.g.
//   INFO(ViolationMessages(*report)); CHECK(report->clean());
// (an INFO inside a loop ends with the loop body and reaches no CHECK).
std::string ViolationMessages(const CheckReport& report);

}  // namespace swapplan::testing

#endif  // SWAPPLAN_TESTS_SUPPORT_PLANNER_FIXTURES_H_
