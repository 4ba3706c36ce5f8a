#include "swapplan/trace/trace.h"

#include <algorithm>
#include <cmath>

namespace swapplan {

int32_t Trace::IterationOf(OpIndex op) const {
  auto it = std::upper_bound(iterations_.begin(), iterations_.end(), op,
                             [](OpIndex o, const IterationInfo& i) { return o < i.op_begin; });
  return static_cast<int32_t>(it - iterations_.begin()) - 1;
}

int64_t Trace::ApproximateMemoryBytes() const {
  auto bytes = [](const auto& v) {
    return static_cast<int64_t>(v.capacity() * sizeof(typename std::decay_t<decltype(v)>::value_type));
  };
  int64_t total = bytes(tensors_) + bytes(shape_begin_) + bytes(shapes_) + bytes(name_begin_) +
                  static_cast<int64_t>(names_.capacity()) + bytes(lifetimes_) +
                  bytes(uses_by_tensor_begin_) + bytes(uses_by_tensor_) + bytes(ops_) +
                  bytes(uses_) + bytes(iterations_) + bytes(events_) + bytes(saved_events_);
  for (const std::string& n : op_names_) total += static_cast<int64_t>(n.capacity() + sizeof(n));
  return total;
}

}  // namespace swapplan
