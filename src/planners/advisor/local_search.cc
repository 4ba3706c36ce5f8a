// Local search on the Advisor's elite policy (local_search.h).
#include "planners/advisor/local_search.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {

absl::StatusOr<std::unique_ptr<PolicyImprover>> PolicyImprover::Create(
    const AdvisorProblem& problem) {
  SimulatorOptions so = problem.simulator().options();
  so.top_stall_ops = kTopStalls;
  so.record_timeline = false;
  SWAPPLAN_ASSIGN_OR_RETURN(Simulator sim,
                            Simulator::Create(problem.trace(), problem.iteration(), so));
  std::unique_ptr<PolicyImprover> li(new PolicyImprover(problem));
  li->sim_.emplace(std::move(sim));
  SWAPPLAN_ASSIGN_OR_RETURN(PolicyResolver resolver,
                            PolicyResolver::Create(problem.trace(), problem.iteration()));
  li->resolver_.emplace(std::move(resolver));
  li->device_ = so.device;
  for (int32_t s = 0; s < problem.num_tensors(); ++s) {
    li->slot_of_[problem.trace().tensor(problem.tensor(s).id).trace_id] = s;
  }
  return li;
}

absl::Status PolicyImprover::Reset(Policy policy) {
  const int32_t n = problem_.num_ops();
  SWAPPLAN_ASSIGN_OR_RETURN(SimulationResult r, sim_->Run(policy));
  if (r.oom.occurred) {
    return absl::ResourceExhaustedError(
        absl::StrCat("local search: the starting policy runs out of memory at op ", r.oom.op));
  }
  policy_ = std::move(policy);
  time_ns_ = r.iteration_time_ns;
  stalls_ = std::move(r.top_stalls);
  sched_ = policy_.schedule;
  if (sched_.empty()) {
    sched_.resize(n);
    std::iota(sched_.begin(), sched_.end(), 0);
  }
  pos_.assign(n, 0);
  for (int32_t p = 0; p < n; ++p) pos_[sched_[p]] = p;
  std::vector<int32_t> at(problem_.num_tensors());
  for (int32_t s = 0; s < problem_.num_tensors(); ++s) at[s] = problem_.tensor(s).use_offset;
  use_pos_.assign(problem_.total_uses(), 0);
  for (int32_t p = 0; p < n; ++p) {
    for (int32_t s : problem_.op_tensors(sched_[p])) use_pos_[at[s]++] = p;
  }
  return absl::OkStatus();
}

bool PolicyImprover::Earlier(Policy* c, size_t i, int32_t delta) const {
  PolicyItem& it = c->items[i];
  const int32_t in = pos_[it.swap_in_op];
  const int32_t lo = it.wraps ? 0 : pos_[it.release_op] + 1;
  const int32_t to = std::max(lo, in - delta);
  if (to >= in) return false;
  it.swap_in_op = sched_[to];
  return true;
}

bool PolicyImprover::Later(Policy* c, size_t i, int32_t delta) const {
  PolicyItem& it = c->items[i];
  const int32_t in = pos_[it.swap_in_op];
  const int32_t to = std::min(pos_[it.first_use_op], in + delta);
  if (to <= in) return false;
  it.swap_in_op = sched_[to];
  return true;
}

bool PolicyImprover::Hold(Policy* c, size_t i, int32_t delta) const {
  PolicyItem& it = c->items[i];
  const int32_t r = pos_[it.release_op];
  const int32_t hi = it.wraps ? problem_.num_ops() - 1 : pos_[it.swap_in_op] - 1;
  const int32_t to = std::min(hi, r + delta);
  if (to <= r) return false;
  it.release_op = sched_[to];
  return true;
}

bool PolicyImprover::Free(Policy* c, size_t i, int32_t delta) const {
  PolicyItem& it = c->items[i];
  const int32_t r = pos_[it.release_op];
  const int32_t to = std::max(pos_[it.swap_out_op], r - delta);
  if (to >= r) return false;
  it.release_op = sched_[to];
  return true;
}

bool PolicyImprover::Add(Policy* c, Rng* rng) const {
  const int32_t nt = problem_.num_tensors();
  if (nt == 0) return false;
  const int32_t s = static_cast<int32_t>(rng->Uniform(nt));
  const AdvisorTensor& x = problem_.tensor(s);
  if (x.num_uses < 2) return false;
  const int32_t j = static_cast<int32_t>(rng->Uniform(x.num_uses - 1));
  const int32_t a = use_pos_[x.use_offset + j], b = use_pos_[x.use_offset + j + 1];
  if (b - a < 2) return false;
  const uint64_t id = problem_.trace().tensor(x.id).trace_id;
  for (const PolicyItem& it : c->items) {
    if (it.tensor_id != id) continue;
    const int32_t out = pos_[it.swap_out_op], use = pos_[it.first_use_op];
    const bool overlaps = it.wraps ? (a < use || b > out) : (a < use && b > out);
    if (overlaps) return false;
  }
  PolicyItem it;
  it.tensor_id = id;
  it.size_bytes = x.size_bytes;
  it.swap_out_op = sched_[a];
  // Released within the first quarter of the gap, back within its last part.
  const int32_t span = b - a - 1;  // >= 1
  const int32_t release = a + static_cast<int32_t>(rng->Uniform(std::max(1, span / 4)));
  const int32_t in = b - static_cast<int32_t>(rng->Uniform(std::max(1, b - release - 1)));
  it.release_op = sched_[release];
  it.swap_in_op = sched_[std::max(in, release + 1)];
  it.first_use_op = sched_[b];
  it.runtime_key.size_bytes = x.size_bytes;
  it.runtime_key.dtype = problem_.trace().tensor(x.id).dtype;
  c->items.push_back(std::move(it));
  return true;
}

int32_t PolicyImprover::ItemUsedAt(uint64_t tensor_id, int32_t p) const {
  for (size_t i = 0; i < policy_.items.size(); ++i) {
    const PolicyItem& it = policy_.items[i];
    if (it.tensor_id == tensor_id && pos_[it.first_use_op] == p) return static_cast<int32_t>(i);
  }
  return -1;
}

int32_t PolicyImprover::ItemReleasedBefore(uint64_t tensor_id, int32_t p) const {
  for (size_t i = 0; i < policy_.items.size(); ++i) {
    const PolicyItem& it = policy_.items[i];
    if (it.tensor_id == tensor_id && pos_[it.release_op] + 1 == p) return static_cast<int32_t>(i);
  }
  return -1;
}

bool PolicyImprover::RecomputeExact(const Policy& c) const {
  const bool any = std::any_of(c.items.begin(), c.items.end(), [](const PolicyItem& it) {
    return it.action == ItemAction::kRecompute;
  });
  if (!any) return true;
  absl::StatusOr<ResolvedPolicy> rp = resolver_->Resolve(c, device_, {.all_issues = true});
  if (!rp.ok()) return false;
  return std::none_of(rp->issues.begin(), rp->issues.end(), [](const ResolveIssue& i) {
    return i.rule == ResolveRule::kNotRecomputable || i.rule == ResolveRule::kRecomputeUnderstated;
  });
}

int32_t PolicyImprover::Improve(int32_t moves, Rng* rng, const std::function<bool()>& stop) {
  int32_t kept = 0;
  Policy cand;
  for (int32_t m = 0; m < moves; ++m) {
    if (stop && m % 64 == 63 && stop()) break;
    ++tried_;
    cand = policy_;
    const int32_t delta = 1 << rng->Uniform(7);  // 1..64 positions
    const size_t ni = cand.items.size();
    bool applied = false;
    bool dropped = false;
    if (!stalls_.empty() && rng->Bernoulli(0.5)) {
      // Aim at a stall: an early swap-in, or a later release.
      const StallSite& st = stalls_[rng->Uniform(stalls_.size())];
      const int32_t p = pos_[st.op];
      if (st.cause == StallCause::kSwapIn) {
        const int32_t i = ItemUsedAt(st.tensor_id, p);
        if (i >= 0) applied = Earlier(&cand, i, delta) || Free(&cand, i, delta);
      } else if (st.cause == StallCause::kRelease) {
        const int32_t i = ItemReleasedBefore(st.tensor_id, p);
        if (i >= 0) applied = Hold(&cand, i, delta) || Later(&cand, i, delta);
      }
    } else {
      const uint64_t kind = rng->Uniform(6);
      if (kind == 5 || ni == 0) {
        applied = Add(&cand, rng);
      } else {
        const size_t i = rng->Uniform(ni);
        switch (kind) {
          case 0:
            applied = Earlier(&cand, i, delta);
            break;
          case 1:
            applied = Later(&cand, i, delta);
            break;
          case 2:
            applied = Hold(&cand, i, delta);
            break;
          case 3:
            applied = Free(&cand, i, delta);
            break;
          default:
            cand.items.erase(cand.items.begin() + static_cast<std::ptrdiff_t>(i));
            applied = dropped = true;
            break;
        }
      }
    }
    if (!applied) continue;
    absl::StatusOr<SimulationResult> r = sim_->Run(cand);
    if (!r.ok() || r->oom.occurred) continue;
    // Faster, or as fast (a sideways step on a plateau: freeing a block
    // early is what lets a later move bring another tensor back earlier).
    if (r->iteration_time_ns > time_ns_) continue;
    // The simulator charges what the items state: a move that breaks a
    // recipe or leaves its cost understated would look faster than it is.
    if (!RecomputeExact(cand)) continue;
    const bool better = r->iteration_time_ns < time_ns_ || dropped;
    std::swap(policy_, cand);
    time_ns_ = r->iteration_time_ns;
    stalls_ = std::move(r->top_stalls);
    if (better) {
      ++kept;
      ++kept_;
    }
  }
  return kept;
}

}  // namespace swapplan
