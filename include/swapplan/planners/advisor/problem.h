// AdvisorProblem: everything the Advisor's swap planner and genetic search
// read about one trace iteration, prepared once: the dataflow graph, the
// tensors that occupy the device with their sizes and lifetimes, each op's
// tensors (and which it writes), the distinct tensor sizes TS of seed 002
// §5.3, op durations, the link, and the evaluation simulator (the fitness,
// SPEC §5.4) set to the budget with the size-class pool modelled.
//
//   SWAPPLAN_ASSIGN_OR_RETURN(std::unique_ptr<AdvisorProblem> ap,
//                             AdvisorProblem::Create(problem, options));
//   for (int32_t slot : ap->op_tensors(op)) ap->tensor(slot).size_bytes ...;
//
// Tensors are addressed by a dense "slot" (0..num_tensors()-1) over the
// tensors occupying the device during the iteration.
//
// Complexity: Create O(ops + uses + tensors of the trace + graph build).
// Thread-safe for concurrent reads once created.
#ifndef SWAPPLAN_PLANNERS_ADVISOR_PROBLEM_H_
#define SWAPPLAN_PLANNERS_ADVISOR_PROBLEM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "swapplan/planners/advisor/options.h"
#include "swapplan/planners/planner.h"
#include "swapplan/policy/policy.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/dataflow.h"
#include "swapplan/trace/trace.h"

namespace swapplan {

struct AdvisorTensor {
  TensorId id = kNoTensor;
  int64_t size_bytes = 0;
  // Index of size_bytes in AdvisorProblem::sizes().
  int32_t size_index = 0;
  // Trace lifetime clamped to the iteration, as local ops: -1 = resident
  // before the first op; n = not freed within the iteration. Under a
  // schedule the lifetime also stretches over every use (ScheduleLifetime).
  int32_t alloc_op = -1;
  int32_t free_op = 0;
  // Resident before and after the iteration (parameters, optimizer states,
  // persistent gradient buffers): the double pass decides where it is at
  // the iteration boundary.
  bool persistent = false;
  // Ops of the iteration using it (each op once).
  int32_t num_uses = 0;
  // Offset of its uses in per-schedule use arrays (sum of earlier num_uses).
  int32_t use_offset = 0;
};

class AdvisorProblem {
 public:
  // Prepares `problem`'s iteration. `sim_options` configures the fitness
  // simulator's behaviour (record stream, host model); it runs on the
  // problem's device model, limited to its budget, the pool modelled. InvalidArgument for a bad problem
  // or options, FailedPrecondition when op durations are unavailable.
  static absl::StatusOr<std::unique_ptr<AdvisorProblem>> Create(
      const PlanningProblem& problem, const AdvisorOptions& options,
      const SimulatorOptions& sim_options = {});

  const Trace& trace() const { return *trace_; }
  int32_t iteration() const { return iteration_; }
  int32_t num_ops() const { return n_; }
  const DataflowGraph& graph() const { return *graph_; }

  int32_t num_tensors() const { return static_cast<int32_t>(tensors_.size()); }
  const AdvisorTensor& tensor(int32_t slot) const { return tensors_[slot]; }
  int64_t total_uses() const { return total_uses_; }
  // Slots used by local op `op` (each once), and whether the op writes each
  // (has it among its outputs), in the same order.
  absl::Span<const int32_t> op_tensors(int32_t op) const {
    return absl::MakeConstSpan(op_slots_).subspan(op_begin_[op], op_begin_[op + 1] - op_begin_[op]);
  }
  absl::Span<const uint8_t> op_writes(int32_t op) const {
    return absl::MakeConstSpan(op_writes_).subspan(op_begin_[op], op_begin_[op + 1] - op_begin_[op]);
  }
  // Use ids: the k-th tensor of op_tensors(op) is use op_use_offset(op) + k,
  // 0 <= id < total_uses() — a name for (op, tensor) independent of the
  // schedule (Chromosome::hints).
  int32_t op_use_offset(int32_t op) const { return op_begin_[op]; }
  // Per op: (size index, tensors of that size it uses), for the minimum
  // object counts a pool needs.
  absl::Span<const std::pair<int32_t, int32_t>> op_size_counts(int32_t op) const {
    return absl::MakeConstSpan(op_size_counts_)
        .subspan(op_size_begin_[op], op_size_begin_[op + 1] - op_size_begin_[op]);
  }

  // TS: distinct sizes of the tensors, ascending.
  const std::vector<int64_t>& sizes() const { return sizes_; }
  // Per size: the most tensors of that size live at once in the recorded
  // order (the first generation's object counts start from it).
  const std::vector<int32_t>& recorded_peak_count() const { return recorded_peak_count_; }
  // In the recorded order: +1 / -1 events (position, size index, delta) of
  // the tensors that need an object at a position whatever the swap plan —
  // those the op uses, and those on the device that no eviction can move
  // (before their first use, after their last use until their free, or
  // persistent and unused) — sorted by position. MinCounts sweeps them.
  struct PinEvent {
    int32_t position;
    int32_t size_index;
    int32_t delta;
  };
  const std::vector<PinEvent>& pin_events() const { return pin_events_; }

  // Op durations (local index), the simulator's.
  const std::vector<int64_t>& durations() const { return simulator_->durations().duration_ns; }
  // The device planned for (the problem's) and its budget.
  const DeviceModel& device() const { return device_; }
  int64_t budget_bytes() const { return budget_; }
  // Copy time of `bytes` device->host (the device model's, as the simulator).
  int64_t D2hNs(int64_t bytes) const { return device_.CopyNs(Direction::kDeviceToHost, bytes); }

  // The fitness simulator.
  const Simulator& simulator() const { return *simulator_; }
  // A policy with the fingerprint, budget, bandwidths, planner name and
  // parameters filled in, no items.
  const Policy& base_policy() const { return base_policy_; }

 private:
  AdvisorProblem() = default;

  const Trace* trace_ = nullptr;
  int32_t iteration_ = 0;
  int32_t n_ = 0;
  std::optional<DataflowGraph> graph_;
  std::vector<AdvisorTensor> tensors_;
  int64_t total_uses_ = 0;
  std::vector<int32_t> op_begin_, op_slots_;
  std::vector<uint8_t> op_writes_;
  std::vector<int32_t> op_size_begin_;
  std::vector<std::pair<int32_t, int32_t>> op_size_counts_;
  std::vector<int64_t> sizes_;
  std::vector<int32_t> recorded_peak_count_;
  std::vector<PinEvent> pin_events_;
  DeviceModel device_;
  int64_t budget_ = 0;
  std::optional<Simulator> simulator_;
  Policy base_policy_;
};

}  // namespace swapplan

#endif  // SWAPPLAN_PLANNERS_ADVISOR_PROBLEM_H_
