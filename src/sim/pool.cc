// Evaluation simulator: the size-class memory pool of Advisor policies
// (seed 002 §4.1). On top of the byte accounting, every tensor on the
// device holds one object of its class for the positions it is counted
// (the same as its bytes); an op whose allocations find no free object of
// their class is an OOM.
//
//   prepare  per simulator tensor: its class (MemoryPool::ClassOf); in use
//            before the first op unless allocated later or a wrapping item
//            brings it in; an object taken at its allocation position and
//            given back after its free position. Per item: an object taken
//            at swap_in_op, given back at the release (SWAP: when
//            release_block runs, in either record-stream mode; RECOMPUTE and
//            clean items: after release_op).
//   replay   PoolAllocate at each dispatch, PoolFree after each op, and the
//            release hook in simulator_run.cc.
//
// Complexity: prepare O(tensors log sizes + items + ops); replay O(1) per
// object taken or given back, O(classes) once.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sim/simulator_internal.h"
#include "swapplan/sim/simulator.h"
#include "swapplan/trace/tensor_label.h"

namespace swapplan {

absl::Status Simulator::PreparePool(const Policy& policy, internal_sim::Prepared* pr) const {
  const MemoryPool& pool = policy.pool;
  internal_sim::PoolPlan& plan = pr->pool;
  const int32_t n = n_;
  const int32_t num_classes = static_cast<int32_t>(pool.classes.size());
  plan.enabled = true;
  plan.pool_bytes = pool.TotalBytes();
  plan.capacity.resize(num_classes);
  for (int32_t c = 0; c < num_classes; ++c) plan.capacity[c] = pool.classes[c].count;
  plan.initial.assign(num_classes, 0);
  // (position, class) pairs, bucketed below.
  std::vector<std::pair<int32_t, int32_t>> allocs, frees;
  const absl::Span<const ResolvedTensor> tensors = pr->resolved.tensors;
  allocs.reserve(tensors.size() + pr->items.size());
  frees.reserve(tensors.size() + pr->items.size());
  std::vector<int32_t> slot_class(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorId id = tensors[i].id;
    const int64_t size = trace_->tensor(id).size_bytes;
    const int32_t c = pool.ClassOf(size);
    if (c < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the policy's memory pool has no class for ", TensorLabel(*trace_, id, LabelForm::kShort), " (",
          size, " bytes; the largest object is ",
          pool.classes.empty() ? 0 : pool.classes.back().object_bytes, " bytes)"));
    }
    slot_class[i] = c;
    const int32_t a = tensors[i].alloc;
    const int32_t f = tensors[i].free;
    if (a < 0) {
      ++plan.initial[c];
    } else {
      allocs.emplace_back(a, c);
    }
    if (f < n) frees.emplace_back(f, c);
  }
  plan.item_class.resize(pr->items.size());
  for (size_t k = 0; k < pr->items.size(); ++k) {
    const internal_sim::Item& it = pr->items[k];
    const int32_t c = slot_class[it.slot];
    plan.item_class[k] = c;
    if (it.wraps) --plan.initial[c];
    allocs.emplace_back(it.in, c);
    if (!it.swap || it.clean) frees.emplace_back(it.release, c);
  }
  auto bucket = [n](internal_sim::Buckets& b, const std::vector<std::pair<int32_t, int32_t>>& v) {
    b.begin.assign(n + 1, 0);
    for (const auto& [p, c] : v) ++b.begin[p + 1];
    for (int32_t p = 0; p < n; ++p) b.begin[p + 1] += b.begin[p];
    b.items.resize(v.size());
    std::vector<int32_t> fill(b.begin.begin(), b.begin.end() - 1);
    for (const auto& [p, c] : v) b.items[fill[p]++] = c;
  };
  bucket(plan.alloc, allocs);
  bucket(plan.free, frees);
  return absl::OkStatus();
}

namespace internal_sim {

void PoolStart(const PoolPlan& plan, PoolState* state) {
  state->in_use = plan.initial;
  state->request.assign(plan.capacity.size(), 0);
}

void PoolAllocate(const PoolPlan& plan, int32_t p, int32_t op, int64_t capacity_bytes,
                  PoolState* state, SimulationResult* r) {
  if (p == 0 && plan.pool_bytes > capacity_bytes && !r->oom.occurred) {
    // The pool itself does not fit: creating it fails before the first op.
    r->oom.occurred = true;
    r->oom.op = op;
    r->oom.requested_bytes = plan.pool_bytes;
    r->oom.free_bytes = capacity_bytes;
  }
  absl::Span<const int32_t> classes = plan.alloc.at(p);
  bool over = false;
  if (p == 0) {
    // Tensors resident before the first op must fit as well.
    for (size_t c = 0; c < plan.capacity.size(); ++c) {
      if (state->in_use[c] > plan.capacity[c] && !r->oom.occurred) {
        r->oom.occurred = true;
        r->oom.op = op;
        r->oom.pool_class = static_cast<int32_t>(c);
        r->oom.requested_bytes = state->in_use[c];
        r->oom.free_bytes = plan.capacity[c];
      }
      over = over || state->in_use[c] > plan.capacity[c];
    }
  }
  for (int32_t c : classes) ++state->request[c];
  for (int32_t c : classes) {
    const int32_t want = state->request[c];
    if (want == 0) continue;  // this class was handled for an earlier entry
    if (state->in_use[c] + want > plan.capacity[c]) {
      over = true;
      if (!r->oom.occurred) {
        r->oom.occurred = true;
        r->oom.op = op;
        r->oom.pool_class = c;
        r->oom.requested_bytes = want;
        r->oom.free_bytes = std::max(plan.capacity[c] - state->in_use[c], 0);
      }
    }
    state->in_use[c] += want;
    state->request[c] = 0;
  }
  if (over) ++r->oom.pool_ops_over_capacity;
}

void PoolFree(const PoolPlan& plan, int32_t p, PoolState* state) {
  for (int32_t c : plan.free.at(p)) --state->in_use[c];
}

}  // namespace internal_sim
}  // namespace swapplan
