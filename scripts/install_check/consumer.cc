// An out-of-tree program built against an installed swapplan (meson install)
// with nothing but `pkg-config --cflags --libs swapplan_planners
// swapplan_runtime` (scripts/install_check.sh): reads a trace, prints its
// unswapped peak and the label of its first tensor, creates the Chameleon
// planner from the registry, and calls the runtime's C API.
#include <iostream>
#include <memory>

#include "swapplan/curve/memory_curve.h"
#include "swapplan/planners/registry.h"
#include "swapplan/runtime/swapplan_runtime.h"
#include "swapplan/trace/io.h"
#include "swapplan/trace/tensor_label.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer TRACE\n";
    return 2;
  }
  absl::StatusOr<swapplan::Trace> trace = swapplan::ReadTrace(argv[1]);
  if (!trace.ok()) {
    std::cerr << trace.status() << "\n";
    return 1;
  }
  absl::StatusOr<swapplan::MemoryCurve> curve = swapplan::ComputeMemoryCurve(*trace);
  if (!curve.ok()) {
    std::cerr << curve.status() << "\n";
    return 1;
  }
  const int64_t peak = curve->peak_unswapped().bytes;
  absl::StatusOr<std::unique_ptr<swapplan::Planner>> planner = swapplan::CreatePlanner("chameleon");
  if (!planner.ok()) {
    std::cerr << planner.status() << "\n";
    return 1;
  }
  std::cout << "tensors " << trace->num_tensors() << " ops " << trace->num_ops()
            << " unswapped peak " << peak << " bytes; first tensor: "
            << swapplan::TensorLabel(*trace, 0) << "; runtime ABI "
            << swapplan_rt_abi_version() << "\n";
  return 0;
}
