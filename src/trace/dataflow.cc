#include "swapplan/trace/dataflow.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace swapplan {

bool IsCommunicationOpName(absl::string_view name) {
  static constexpr absl::string_view kPatterns[] = {
      "c10d::",     "nccl",          "hccl",      "allreduce", "all_reduce", "allgather",
      "all_gather", "reduce_scatter", "broadcast", "all_to_all", "alltoall",  "barrier"};
  const std::string lower = absl::AsciiStrToLower(name);
  for (absl::string_view p : kPatterns) {
    if (absl::StrContains(lower, p)) return true;
  }
  return false;
}

absl::StatusOr<DataflowGraph> DataflowGraph::Build(const Trace& trace, int32_t iteration,
                                                   const DataflowOptions& options) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("dataflow graph: iteration ", iteration,
                                                   " is out of range (", trace.source(), " has ",
                                                   trace.num_iterations(), " iterations)"));
  }
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  // Edges as (from, to, rule) packed into one 64-bit key per edge for a
  // cheap sort; rule 0 = data, 1 = side effect (data first on ties).
  std::vector<uint64_t> edges;
  edges.reserve(static_cast<size_t>(trace.num_uses() / std::max(trace.num_iterations(), 1)) * 2 +
                n);
  auto add = [&](int32_t u, int32_t v, uint64_t rule) {
    if (u == v) return;
    edges.push_back((static_cast<uint64_t>(u) << 33) | (static_cast<uint64_t>(v) << 1) | rule);
  };

  // --- tensor dependencies ------------------------------------------------
  // Per tensor: the last write and the reads since it, updated in recorded
  // order. Only tensors touched in this iteration get state.
  const int32_t nt = trace.num_tensors();
  std::vector<int32_t> last_write(nt, -1);
  std::vector<std::vector<int32_t>> reads_of;  // per touched tensor, reads since last write
  std::vector<int32_t> slot(nt, -1);
  for (int32_t k = 0; k < n; ++k) {
    const OpIndex g = iter.op_begin + k;
    absl::Span<const TensorId> outs = trace.outputs(g);
    for (TensorId t : trace.inputs(g)) {
      if (std::find(outs.begin(), outs.end(), t) != outs.end()) continue;  // written below
      if (slot[t] < 0) {
        slot[t] = static_cast<int32_t>(reads_of.size());
        reads_of.emplace_back();
      }
      if (last_write[t] >= 0) add(last_write[t], k, 0);
      std::vector<int32_t>& r = reads_of[slot[t]];
      if (r.empty() || r.back() != k) r.push_back(k);
    }
    for (TensorId t : outs) {
      if (slot[t] < 0) {
        slot[t] = static_cast<int32_t>(reads_of.size());
        reads_of.emplace_back();
      }
      std::vector<int32_t>& r = reads_of[slot[t]];
      for (int32_t reader : r) add(reader, k, 0);
      r.clear();
      if (last_write[t] >= 0) add(last_write[t], k, 0);
      last_write[t] = k;
    }
  }

  // --- side effects -----------------------------------------------------------
  std::vector<bool> comm_name(trace.num_op_names(), false);
  if (options.order_side_effects) {
    for (NameId id = 0; id < trace.num_op_names(); ++id) {
      comm_name[id] = IsCommunicationOpName(trace.op_name(id));
    }
  }
  int32_t prev_ordered = -1;
  for (int32_t k = 0; k < n; ++k) {
    const OpInfo& op = trace.op(iter.op_begin + k);
    bool ordered = false;
    if (options.order_side_effects) {
      ordered = comm_name[op.name] || op.num_outputs == 0;
    }
    if (options.order_optimizer_ops && op.phase == Phase::kOptimizer) ordered = true;
    if (!ordered) continue;
    if (prev_ordered >= 0) add(prev_ordered, k, 1);
    prev_ordered = k;
  }

  // --- merge ------------------------------------------------------------------
  std::sort(edges.begin(), edges.end());
  DataflowGraph graph;
  graph.n_ = n;
  graph.succ_begin_.assign(n + 1, 0);
  graph.pred_begin_.assign(n + 1, 0);
  std::vector<std::pair<int32_t, int32_t>> merged;
  merged.reserve(edges.size());
  uint64_t prev = ~uint64_t{0};
  for (uint64_t e : edges) {
    if ((e >> 1) == (prev >> 1) && prev != ~uint64_t{0}) continue;
    prev = e;
    const int32_t u = static_cast<int32_t>(e >> 33);
    const int32_t v = static_cast<int32_t>((e >> 1) & 0xffffffffu);
    merged.emplace_back(u, v);
    ((e & 1) ? graph.stats_.side_effect : graph.stats_.data) += 1;
    ++graph.succ_begin_[u + 1];
    ++graph.pred_begin_[v + 1];
  }
  for (int32_t i = 0; i < n; ++i) {
    graph.succ_begin_[i + 1] += graph.succ_begin_[i];
    graph.pred_begin_[i + 1] += graph.pred_begin_[i];
  }
  graph.succ_.resize(merged.size());
  graph.pred_.resize(merged.size());
  std::vector<int32_t> sfill(graph.succ_begin_.begin(), graph.succ_begin_.end() - 1);
  std::vector<int32_t> pfill(graph.pred_begin_.begin(), graph.pred_begin_.end() - 1);
  // `merged` is sorted by (u, v): successor lists come out ascending, and
  // predecessor lists too (for a fixed v, u ascends along the array).
  for (auto [u, v] : merged) {
    graph.succ_[sfill[u]++] = v;
    graph.pred_[pfill[v]++] = u;
  }
  return graph;
}

absl::Status DataflowGraph::ValidateSchedule(absl::Span<const int32_t> schedule) const {
  absl::StatusOr<std::vector<int32_t>> pos = SchedulePositions(schedule, n_);
  if (!pos.ok()) return pos.status();
  for (int32_t p = 0; p < n_; ++p) {
    const int32_t v = schedule[p];
    for (int32_t u : predecessors(v)) {
      if ((*pos)[u] > p) {
        return absl::InvalidArgumentError(
            absl::StrCat("schedule is not a topological order of the dataflow graph: op ", v,
                         " runs at position ", p, ", before its predecessor op ", u,
                         " at position ", (*pos)[u]));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> SchedulePositions(absl::Span<const int32_t> schedule,
                                                       int32_t n) {
  if (static_cast<int64_t>(schedule.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule has ", schedule.size(), " entries; the iteration has ", n, " ops"));
  }
  std::vector<int32_t> pos(n, -1);
  for (int32_t p = 0; p < n; ++p) {
    const int32_t op = schedule[p];
    if (op < 0 || op >= n || pos[op] != -1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "schedule is not a permutation of the iteration's ops: entry ", p, " is ", op,
          op >= 0 && op < n ? " (repeated)" : " (out of range)"));
    }
    pos[op] = p;
  }
  return pos;
}

ScheduledLifetime ScheduleLifetime(const Trace& trace, int32_t iteration, TensorId t,
                                   absl::Span<const int32_t> pos) {
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  const TensorLifetime& lt = trace.lifetime(t);
  ScheduledLifetime s;
  s.alloc = lt.alloc_op < iter.op_begin ? -1 : pos[lt.alloc_op - iter.op_begin];
  s.free = lt.free_op >= iter.op_end ? n : pos[lt.free_op - iter.op_begin];
  absl::Span<const OpIndex> u = trace.tensor_uses(t);
  auto lo = std::lower_bound(u.begin(), u.end(), iter.op_begin);
  for (auto x = lo; x != u.end() && *x < iter.op_end; ++x) {
    const int32_t p = pos[*x - iter.op_begin];
    if (s.alloc >= 0) s.alloc = std::min(s.alloc, p);
    if (s.free < n) s.free = std::max(s.free, p);
  }
  return s;
}

}  // namespace swapplan
