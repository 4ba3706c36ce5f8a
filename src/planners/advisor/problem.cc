#include "swapplan/planners/advisor/problem.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::StatusOr<std::unique_ptr<AdvisorProblem>> AdvisorProblem::Create(
    const PlanningProblem& problem, const AdvisorOptions& options,
    const SimulatorOptions& sim_options) {
  SWAPPLAN_RETURN_IF_ERROR(problem.Validate());
  SWAPPLAN_RETURN_IF_ERROR(options.Validate());
  const Trace& trace = *problem.trace;
  std::unique_ptr<AdvisorProblem> ap(new AdvisorProblem());
  ap->trace_ = &trace;
  ap->iteration_ = problem.iteration;
  const IterationInfo& iter = trace.iteration(problem.iteration);
  const int32_t n = iter.num_ops();
  ap->n_ = n;
  ap->device_ = problem.device;
  ap->budget_ = problem.budget_bytes();
  SWAPPLAN_ASSIGN_OR_RETURN(DataflowGraph graph,
                            DataflowGraph::Build(trace, problem.iteration, options.graph));
  ap->graph_.emplace(std::move(graph));

  // The fitness simulator runs on the problem's device, limited to the
  // budget (at least 1 byte: a zero capacity would mean "unlimited").
  SimulatorOptions so = sim_options;
  so.device = problem.device;
  if (ap->budget_ < 1) {
    so.device.capacity_bytes = 1;
    so.device.reserve_bytes = 0;
  }
  so.model_pool = true;
  so.record_timeline = false;
  so.top_stall_ops = 0;
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim, Simulator::Create(trace, problem.iteration, so));
  ap->simulator_.emplace(std::move(sim));

  // --- tensors occupying the device during the iteration --------------------
  std::vector<int32_t> slot_of(trace.num_tensors(), -1);
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    const TensorLifetime& lt = trace.lifetime(t);
    if (!lt.occupies_device() || lt.free_op < iter.op_begin || lt.alloc_op >= iter.op_end) continue;
    AdvisorTensor x;
    x.id = t;
    x.size_bytes = trace.tensor(t).size_bytes;
    x.alloc_op = lt.alloc_op < iter.op_begin ? -1 : lt.alloc_op - iter.op_begin;
    x.free_op = lt.free_op >= iter.op_end ? n : lt.free_op - iter.op_begin;
    x.persistent = x.alloc_op < 0 && x.free_op == n;
    slot_of[t] = static_cast<int32_t>(ap->tensors_.size());
    ap->tensors_.push_back(x);
    ap->sizes_.push_back(x.size_bytes);
  }
  std::sort(ap->sizes_.begin(), ap->sizes_.end());
  ap->sizes_.erase(std::unique(ap->sizes_.begin(), ap->sizes_.end()), ap->sizes_.end());
  for (AdvisorTensor& x : ap->tensors_) {
    x.size_index = static_cast<int32_t>(
        std::lower_bound(ap->sizes_.begin(), ap->sizes_.end(), x.size_bytes) - ap->sizes_.begin());
  }

  // --- per-op tensors, writes, size counts ------------------------------------
  ap->op_begin_.assign(n + 1, 0);
  ap->op_size_begin_.assign(n + 1, 0);
  std::vector<int32_t> seen_at(ap->tensors_.size(), -1);
  std::vector<int32_t> size_count(ap->sizes_.size(), 0);
  std::vector<int32_t> sizes_here;
  for (int32_t k = 0; k < n; ++k) {
    const OpIndex g = iter.op_begin + k;
    absl::Span<const TensorId> outs = trace.outputs(g);
    for (TensorId t : trace.uses(g)) {
      const int32_t s = slot_of[t];
      if (s < 0 || seen_at[s] == k) continue;
      seen_at[s] = k;
      ap->op_slots_.push_back(s);
      ap->op_writes_.push_back(std::find(outs.begin(), outs.end(), t) != outs.end());
      ++ap->tensors_[s].num_uses;
      const int32_t si = ap->tensors_[s].size_index;
      if (size_count[si]++ == 0) sizes_here.push_back(si);
    }
    for (int32_t si : sizes_here) {
      ap->op_size_counts_.emplace_back(si, size_count[si]);
      size_count[si] = 0;
    }
    sizes_here.clear();
    ap->op_begin_[k + 1] = static_cast<int32_t>(ap->op_slots_.size());
    ap->op_size_begin_[k + 1] = static_cast<int32_t>(ap->op_size_counts_.size());
  }
  int32_t offset = 0;
  for (AdvisorTensor& x : ap->tensors_) {
    x.use_offset = offset;
    offset += x.num_uses;
  }
  ap->total_uses_ = offset;

  // --- recorded peak count per size ----------------------------------------------
  std::vector<std::vector<std::pair<int32_t, int32_t>>> events(ap->sizes_.size());
  for (const AdvisorTensor& x : ap->tensors_) {
    events[x.size_index].emplace_back(std::max(x.alloc_op, 0), 1);
    events[x.size_index].emplace_back(std::min(x.free_op, n - 1) + 1, -1);
  }
  // Pinned ranges in the recorded order (see pin_events()).
  {
    std::vector<int32_t> first_use(ap->tensors_.size(), -1), last_use(ap->tensors_.size(), -1);
    for (int32_t k = 0; k < n; ++k) {
      for (int32_t slot : ap->op_tensors(k)) {
        if (first_use[slot] < 0) first_use[slot] = k;
        last_use[slot] = k;
        ap->pin_events_.push_back({k, ap->tensors_[slot].size_index, 1});
        ap->pin_events_.push_back({k + 1, ap->tensors_[slot].size_index, -1});
      }
    }
    auto pin = [&](int32_t si, int32_t lo, int32_t hi) {  // [lo, hi] clamped to the iteration
      lo = std::max(lo, 0);
      hi = std::min(hi, n - 1);
      if (lo > hi) return;
      ap->pin_events_.push_back({lo, si, 1});
      ap->pin_events_.push_back({hi + 1, si, -1});
    };
    for (size_t slot = 0; slot < ap->tensors_.size(); ++slot) {
      const AdvisorTensor& x = ap->tensors_[slot];
      if (x.num_uses == 0) {
        pin(x.size_index, x.alloc_op, x.free_op);
        continue;
      }
      if (!x.persistent) {
        pin(x.size_index, x.alloc_op, first_use[slot] - 1);  // before its first use
        pin(x.size_index, last_use[slot] + 1, x.free_op);    // after its last use
      }
    }
    std::sort(ap->pin_events_.begin(), ap->pin_events_.end(),
              [](const PinEvent& a, const PinEvent& b) {
                return a.position != b.position ? a.position < b.position : a.delta < b.delta;
              });
  }
  ap->recorded_peak_count_.assign(ap->sizes_.size(), 0);
  for (size_t si = 0; si < events.size(); ++si) {
    std::sort(events[si].begin(), events[si].end());
    int32_t live = 0;
    for (size_t k = 0; k < events[si].size();) {
      const int32_t p = events[si][k].first;
      while (k < events[si].size() && events[si][k].first == p) live += events[si][k++].second;
      ap->recorded_peak_count_[si] = std::max(ap->recorded_peak_count_[si], live);
    }
  }

  Policy& base = ap->base_policy_;
  base.fingerprint = ComputeFingerprint(trace, problem.iteration);
  base.device = problem.device;
  base.planner = "advisor";
  base.parameters = options.Parameters();
  return ap;
}

}  // namespace swapplan
