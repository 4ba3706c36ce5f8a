#include "support/planner_fixtures.h"

namespace swapplan::testing {

PolicyItem SwapItem(uint64_t id, int64_t size, int32_t out, int32_t rel, int32_t in, int32_t use) {
  PolicyItem it;
  it.tensor_id = id;
  it.size_bytes = size;
  it.swap_out_op = out;
  it.release_op = rel;
  it.swap_in_op = in;
  it.first_use_op = use;
  return it;
}

PlanningProblem OneBytePerNsProblem(const Trace& t, int64_t budget_bytes) {
  return {.trace = &t,
          .iteration = 0,
          .device = {.capacity_bytes = budget_bytes,
                     .h2d_bandwidth_bytes_per_s = 1e9,
                     .d2h_bandwidth_bytes_per_s = 1e9}};
}

std::vector<OpWindow> OpWindows(const Policy& p) {
  std::vector<OpWindow> w;
  w.reserve(p.items.size());
  for (const PolicyItem& it : p.items) {
    w.push_back({it.tensor_id, it.swap_out_op, it.release_op, it.swap_in_op, it.first_use_op});
  }
  return w;
}

std::string ViolationMessages(const CheckReport& report) {
  std::string all;
  for (const Violation& v : report.violations) all += v.message + "\n";
  return all;
}

}  // namespace swapplan::testing
