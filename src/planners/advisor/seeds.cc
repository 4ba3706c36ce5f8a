// Seed chromosomes from other planners' policies (seeds.h).
#include "planners/advisor/seeds.h"

#include <algorithm>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "swapplan/trace/tensor_label.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

namespace {

// The policy's schedule, positions, and per item its slot, resolved.
struct Resolved {
  std::vector<int32_t> schedule, pos;
  std::vector<int32_t> item_slot;
};

absl::StatusOr<Resolved> Resolve(const AdvisorProblem& problem, const Policy& policy) {
  const int32_t n = problem.num_ops();
  if (policy.fingerprint.iteration_ops != n) {
    return absl::InvalidArgumentError(absl::StrCat("seed policy (", policy.planner, ") has ",
                                                   policy.fingerprint.iteration_ops,
                                                   " ops; the iteration has ", n));
  }
  Resolved r;
  r.schedule = policy.schedule;
  if (r.schedule.empty()) {
    r.schedule.resize(n);
    std::iota(r.schedule.begin(), r.schedule.end(), 0);
  }
  if (static_cast<int32_t>(r.schedule.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("seed policy (", policy.planner, "): schedule of ", r.schedule.size(),
                     " entries for ", n, " ops"));
  }
  r.pos.assign(n, -1);
  for (int32_t p = 0; p < n; ++p) {
    const int32_t op = r.schedule[p];
    if (op < 0 || op >= n || r.pos[op] >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "seed policy (", policy.planner, "): the schedule is not a permutation (entry ", p, ")"));
    }
    r.pos[op] = p;
  }
  absl::flat_hash_map<uint64_t, int32_t> slot_of;
  for (int32_t s = 0; s < problem.num_tensors(); ++s) {
    slot_of[problem.trace().tensor(problem.tensor(s).id).trace_id] = s;
  }
  for (size_t k = 0; k < policy.items.size(); ++k) {
    const PolicyItem& it = policy.items[k];
    auto found = slot_of.find(it.tensor_id);
    if (found == slot_of.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("seed policy (", policy.planner, ") item ", k, ": ",
                       TensorLabeler(problem.trace()).Label(it.tensor_id, LabelForm::kShort),
                       " does not occupy the device during the iteration"));
    }
    for (int32_t op : {it.swap_out_op, it.release_op, it.swap_in_op, it.first_use_op}) {
      if (op < 0 || op >= n) {
        return absl::InvalidArgumentError(absl::StrCat("seed policy (", policy.planner,
                                                       ") item ", k, ": op ", op,
                                                       " outside the iteration"));
      }
    }
    r.item_slot.push_back(found->second);
  }
  return r;
}

// Use positions of every slot under `schedule`, CSR by use_offset.
std::vector<int32_t> UsePositions(const AdvisorProblem& problem,
                                  const std::vector<int32_t>& schedule) {
  std::vector<int32_t> at(problem.num_tensors()), out(problem.total_uses());
  for (int32_t s = 0; s < problem.num_tensors(); ++s) at[s] = problem.tensor(s).use_offset;
  for (int32_t p = 0; p < problem.num_ops(); ++p) {
    for (int32_t s : problem.op_tensors(schedule[p])) out[at[s]++] = p;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> ImpliedCounts(const AdvisorProblem& problem,
                                                   const Policy& policy) {
  SWAPPLAN_ASSIGN_OR_RETURN(Resolved r, Resolve(problem, policy));
  const int32_t n = problem.num_ops();
  const std::vector<int32_t> use_pos = UsePositions(problem, r.schedule);
  // (position, +1/-1) per size: residency, minus the items' off windows.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> events(problem.sizes().size());
  auto range = [&](int32_t si, int32_t lo, int32_t hi, int32_t v) {  // positions [lo, hi]
    lo = std::max(lo, 0);
    hi = std::min(hi, n - 1);
    if (lo > hi) return;
    events[si].emplace_back(lo, v);
    events[si].emplace_back(hi + 1, -v);
  };
  for (int32_t s = 0; s < problem.num_tensors(); ++s) {
    const AdvisorTensor& x = problem.tensor(s);
    int32_t a = x.alloc_op < 0 ? -1 : r.pos[x.alloc_op];
    int32_t f = x.free_op >= n ? n : r.pos[x.free_op];
    if (x.num_uses > 0) {
      if (a >= 0) a = std::min(a, use_pos[x.use_offset]);
      if (f < n) f = std::max(f, use_pos[x.use_offset + x.num_uses - 1]);
    }
    range(x.size_index, a, f, 1);
  }
  for (size_t k = 0; k < policy.items.size(); ++k) {
    const PolicyItem& it = policy.items[k];
    const int32_t si = problem.tensor(r.item_slot[k]).size_index;
    const int32_t release = r.pos[it.release_op], in = r.pos[it.swap_in_op];
    if (it.wraps) {
      range(si, 0, in - 1, -1);
      range(si, release + 1, n - 1, -1);
    } else {
      range(si, release + 1, in - 1, -1);
    }
  }
  std::vector<int32_t> counts(problem.sizes().size(), 0);
  for (size_t si = 0; si < events.size(); ++si) {
    std::sort(events[si].begin(), events[si].end());
    int32_t live = 0;
    for (size_t k = 0; k < events[si].size();) {
      const int32_t p = events[si][k].first;
      while (k < events[si].size() && events[si][k].first == p) live += events[si][k++].second;
      counts[si] = std::max(counts[si], live);
    }
  }
  return counts;
}

absl::StatusOr<Chromosome> SeedChromosome(const AdvisorProblem& problem, const Policy& policy) {
  SWAPPLAN_ASSIGN_OR_RETURN(Resolved r, Resolve(problem, policy));
  SWAPPLAN_RETURN_IF_ERROR(problem.graph().ValidateSchedule(r.schedule));
  SWAPPLAN_ASSIGN_OR_RETURN(std::vector<int32_t> counts, ImpliedCounts(problem, policy));
  Chromosome c;
  c.schedule = r.schedule;
  c.alloc.cls.resize(problem.sizes().size());
  std::iota(c.alloc.cls.begin(), c.alloc.cls.end(), 0);
  c.alloc.cnt = std::move(counts);
  RepairCounts(problem.sizes(), MinCounts(problem, c.alloc.cls), problem.budget_bytes(), &c.alloc);
  // Hints: for each item, the tensor's last use at or before the swap-out.
  auto hints = std::make_shared<std::vector<uint8_t>>(problem.total_uses(), 0);
  const std::vector<int32_t> use_pos = UsePositions(problem, r.schedule);
  for (size_t k = 0; k < policy.items.size(); ++k) {
    const PolicyItem& it = policy.items[k];
    const AdvisorTensor& x = problem.tensor(r.item_slot[k]);
    if (x.num_uses == 0) continue;
    const int32_t out = r.pos[it.swap_out_op];
    const int32_t* first = use_pos.data() + x.use_offset;
    const int32_t* last = first + x.num_uses;
    const int32_t* at = std::upper_bound(first, last, out);
    if (at == first) continue;
    const int32_t use_p = *(at - 1);
    // The use id of (op at use_p, this tensor).
    const int32_t op = r.schedule[use_p];
    absl::Span<const int32_t> slots = problem.op_tensors(op);
    for (size_t j = 0; j < slots.size(); ++j) {
      if (slots[j] == r.item_slot[k]) (*hints)[problem.op_use_offset(op) + j] = 1;
    }
  }
  c.hints = std::move(hints);
  return c;
}

}  // namespace swapplan
