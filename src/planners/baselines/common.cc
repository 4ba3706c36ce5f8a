#include "planners/baselines/common.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/curve/memory_curve.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/resolver.h"
#include "swapplan/util/status_macros.h"
#include "swapplan/util/units.h"

namespace swapplan {
namespace {

// "100 B", or "1.50 GiB (1610612736 B)" from 1 KiB on.
std::string BytesExact(int64_t b) {
  return b < 1024 ? FormatBytes(b) : absl::StrCat(FormatBytes(b), " (", b, " B)");
}

}  // namespace

absl::StatusOr<LayerSegments> SegmentLayers(const Trace& trace, int32_t iteration,
                                            int32_t logical_layers) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return absl::InvalidArgumentError(absl::StrCat("iteration ", iteration, " is out of range (",
                                                   trace.source(), " has ", trace.num_iterations(),
                                                   " iterations)"));
  }
  if (logical_layers < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("logical layers is ", logical_layers, "; must be >= 0 (0 = default)"));
  }
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  LayerSegments s;
  s.logical_layers = logical_layers > 0                  ? logical_layers
                     : trace.metadata().model_layers > 0 ? trace.metadata().model_layers
                                                         : kDefaultLogicalLayers;
  int64_t count[2] = {0, 0};
  for (int32_t i = 0; i < n; ++i) {
    const OpInfo& op = trace.op(iter.op_begin + i);
    const int ph = op.phase == Phase::kForward ? 0 : op.phase == Phase::kBackward ? 1 : -1;
    if (ph < 0) continue;
    ++count[ph];
    if (op.layer >= 0) s.from_hints[ph] = true;
  }
  s.segment_of_op.assign(n, -1);
  int64_t seen[2] = {0, 0};
  int32_t last_seg[2] = {-1, -1};
  // Key of the previous op: phase, layer (or group), micro-batch.
  int prev_ph = -1;
  int64_t prev_layer = 0, prev_mb = 0;
  for (int32_t i = 0; i < n; ++i) {
    const OpInfo& op = trace.op(iter.op_begin + i);
    const int ph = op.phase == Phase::kForward ? 0 : op.phase == Phase::kBackward ? 1 : -1;
    if (ph < 0) {
      prev_ph = -1;
      continue;
    }
    const int64_t layer = s.from_hints[ph] ? op.layer : seen[ph] * s.logical_layers / count[ph];
    ++seen[ph];
    if (ph != prev_ph || layer != prev_layer || op.micro_batch != prev_mb) {
      LayerSegment seg;
      seg.first_op = i;
      seg.phase = op.phase;
      seg.layer = static_cast<int32_t>(layer);
      const int32_t idx = static_cast<int32_t>(s.segments.size());
      s.segments.push_back(seg);
      s.prev_same_phase.push_back(last_seg[ph]);
      s.next_same_phase.push_back(-1);
      if (last_seg[ph] >= 0) s.next_same_phase[last_seg[ph]] = idx;
      last_seg[ph] = idx;
    }
    s.segments.back().last_op = i;
    s.segment_of_op[i] = static_cast<int32_t>(s.segments.size()) - 1;
    prev_ph = ph;
    prev_layer = layer;
    prev_mb = op.micro_batch;
  }
  return s;
}

std::vector<ActivationWindow> ActivationWindows(const Trace& trace, int32_t iteration) {
  const IterationInfo& iter = trace.iteration(iteration);
  std::vector<ActivationWindow> out;
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    if (trace.tensor(t).kind != TensorKind::kActivation) continue;
    absl::Span<const OpIndex> uses = UsesIn(trace, iter, t);
    int64_t last_fwd = -1;
    for (size_t k = 0; k < uses.size(); ++k) {
      if (trace.op(uses[k]).phase == Phase::kForward) last_fwd = static_cast<int64_t>(k);
    }
    if (last_fwd < 0 || static_cast<size_t>(last_fwd) + 1 >= uses.size()) continue;
    const OpIndex u = uses[last_fwd];
    const OpIndex v = uses[last_fwd + 1];
    if (trace.op(v).phase != Phase::kBackward || v - u < 2) continue;
    out.push_back({t, u - iter.op_begin, v - iter.op_begin, trace.tensor(t).size_bytes});
  }
  std::sort(out.begin(), out.end(), [](const ActivationWindow& a, const ActivationWindow& b) {
    return a.last_forward_use != b.last_forward_use ? a.last_forward_use < b.last_forward_use
                                                    : a.tensor < b.tensor;
  });
  return out;
}

absl::Span<const OpIndex> UsesIn(const Trace& trace, const IterationInfo& iter, TensorId t) {
  absl::Span<const OpIndex> u = trace.tensor_uses(t);
  auto lo = std::lower_bound(u.begin(), u.end(), iter.op_begin);
  auto hi = std::lower_bound(lo, u.end(), iter.op_end);
  return u.subspan(lo - u.begin(), hi - lo);
}

bool OpWrites(const Trace& trace, OpIndex op, TensorId t) {
  absl::Span<const TensorId> outs = trace.outputs(op);
  return std::find(outs.begin(), outs.end(), t) != outs.end();
}

PolicyItem MakePolicyItem(const Trace& trace, int32_t iteration, TensorId t, int32_t swap_out_op,
                          int32_t release_op, int32_t swap_in_op, int32_t first_use_op) {
  const IterationInfo& iter = trace.iteration(iteration);
  const TensorInfo& info = trace.tensor(t);
  PolicyItem it;
  it.tensor_id = info.trace_id;
  it.swap_out_op = swap_out_op;
  it.release_op = release_op;
  it.swap_in_op = swap_in_op;
  it.first_use_op = first_use_op;
  it.size_bytes = info.size_bytes;
  it.runtime_key.dtype = info.dtype;
  it.runtime_key.size_bytes = info.size_bytes;
  absl::Span<const int64_t> shape = trace.shape(t);
  it.runtime_key.shape.assign(shape.begin(), shape.end());
  uint32_t count = 0;
  for (OpIndex u : UsesIn(trace, iter, t)) {
    if (u - iter.op_begin <= swap_out_op) ++count;
  }
  it.runtime_key.op_count = count;
  return it;
}

void AppendGroupRecompute(const Trace& trace, int32_t iteration,
                          const std::vector<ActivationWindow>& group, int64_t group_recompute_ns,
                          Policy* p) {
  auto first_needed = std::min_element(group.begin(), group.end(),
                                       [](const ActivationWindow& a, const ActivationWindow& b) {
                                         return a.first_backward_use < b.first_backward_use;
                                       });
  const int32_t trigger = first_needed->first_backward_use;
  for (const ActivationWindow& w : group) {
    PolicyItem item = MakePolicyItem(trace, iteration, w.tensor, w.last_forward_use,
                                     w.last_forward_use, std::max(trigger, w.last_forward_use + 1),
                                     w.first_backward_use);
    item.action = ItemAction::kRecompute;
    if (&w == &*first_needed) item.recompute_ns = group_recompute_ns;
    p->items.push_back(std::move(item));
  }
}

Policy BaselinePolicy(const PlanningProblem& problem, absl::string_view name,
                      std::vector<std::pair<std::string, std::string>> parameters) {
  Policy p;
  p.fingerprint = ComputeFingerprint(*problem.trace, problem.iteration);
  p.device = problem.device;
  p.planner = std::string(name);
  p.parameters = std::move(parameters);
  return p;
}

absl::StatusOr<std::vector<int64_t>> IterationUnswappedBytes(const PlanningProblem& problem) {
  const IterationInfo& iter = problem.trace->iteration(problem.iteration);
  const MemoryCurve* curve = problem.curve;
  MemoryCurve own;
  if (curve == nullptr) {
    SWAPPLAN_ASSIGN_OR_RETURN(own, ComputeMemoryCurve(*problem.trace));
    curve = &own;
  }
  const std::vector<int64_t>& all = curve->unswapped_bytes();
  return std::vector<int64_t>(all.begin() + iter.op_begin, all.begin() + iter.op_end);
}

PolicyPeakInfo PolicyPeak(const std::vector<int64_t>& unswapped, const Policy& policy) {
  const int32_t n = static_cast<int32_t>(unswapped.size());
  std::vector<int64_t> delta(n + 1, 0);
  for (const PolicyItem& it : policy.items) {
    delta[it.release_op + 1] -= it.size_bytes;
    delta[it.swap_in_op] += it.size_bytes;
  }
  PolicyPeakInfo peak;
  peak.bytes = -1;
  int64_t offset = 0;
  for (int32_t i = 0; i < n; ++i) {
    offset += delta[i];
    if (unswapped[i] + offset > peak.bytes) {
      peak.bytes = unswapped[i] + offset;
      peak.op = i;
    }
  }
  peak.bytes = std::max<int64_t>(peak.bytes, 0);
  return peak;
}

absl::Status CheckPolicyFits(const PlanningProblem& problem, const std::vector<int64_t>& unswapped,
                             absl::string_view what, Policy* policy) {
  PolicyPeakInfo peak = PolicyPeak(unswapped, *policy);
  policy->expected_peak_bytes = peak.bytes;
  const int64_t budget = problem.budget_bytes();
  if (peak.bytes <= budget) return absl::OkStatus();
  const Trace& trace = *problem.trace;
  const OpIndex g = trace.iteration(problem.iteration).op_begin + peak.op;
  return absl::ResourceExhaustedError(absl::StrCat(
      policy->planner, ": ", what, " peaks at ", FormatBytes(peak.bytes), " at op ", peak.op, " (",
      trace.op_name_at(g), "), ", BytesExact(peak.bytes - budget), " over the budget of ",
      FormatBytes(budget)));
}

// Makes the policy's recompute claims exact (policy/resolver.h): drops the
// items whose recipe cannot run (a tensor in the chain is random-state,
// in place, ...) until none is left, then raises the stated time of each
// position's first item by what the recipe costs beyond the segment
// forward time stated (a chain reaching into other segments).
// O(rounds × resolution), rounds <= items dropped + 1.
absl::Status MakeRecomputeExact(const PlanningProblem& problem, Policy* p) {
  SWAPPLAN_ASSIGN_OR_RETURN(PolicyResolver resolver,
                            PolicyResolver::Create(*problem.trace, problem.iteration));
  return MakeRecomputeExact(problem, resolver, {}, p);
}

absl::Status MakeRecomputeExact(const PlanningProblem& problem, const PolicyResolver& resolver,
                                ResolveOptions options, Policy* p) {
  ResolvedPolicy unused;
  return MakeRecomputeExact(problem, resolver, options, p, &unused);
}

absl::Status MakeRecomputeExact(const PlanningProblem& problem, const PolicyResolver& resolver,
                                ResolveOptions options, Policy* p, ResolvedPolicy* resolved,
                                ResolvedPolicy* current) {
  options.all_issues = true;
  while (true) {
    ResolvedPolicy rp;
    if (current != nullptr) {
      rp = std::move(*current);
      current = nullptr;
    } else {
      SWAPPLAN_ASSIGN_OR_RETURN(rp, resolver.Resolve(*p, problem.device, options));
    }
    std::vector<bool> drop(p->items.size(), false);
    bool any = false;
    for (const ResolveIssue& i : rp.issues) {
      if (i.rule == ResolveRule::kNotRecomputable && i.item >= 0) any = drop[i.item] = true;
    }
    if (any) {
      std::vector<PolicyItem> kept;
      for (size_t k = 0; k < p->items.size(); ++k) {
        if (!drop[k]) kept.push_back(std::move(p->items[k]));
      }
      p->items = std::move(kept);
      continue;
    }
    // The raised costs, in the policy and in its resolution (the only
    // fields of a resolution a stated cost reaches: resolver.cc AddItem and
    // ResolveRecomputations).
    std::vector<int32_t> raised;  // policy item of each raised recipe's first item
    for (ResolvedRecompute& g : rp.recomputes) {
      if (g.cost_ns > g.stated_ns) {
        ResolvedItem& first = rp.items[g.items.front()];
        const int64_t delta = g.cost_ns - g.stated_ns;
        p->items[first.item].recompute_ns += delta;
        first.recompute_ns += delta;
        g.stated_ns = g.cost_ns;
        raised.push_back(first.item);
      }
    }
    if (!raised.empty()) {
      std::sort(raised.begin(), raised.end());
      rp.issues.erase(
          std::remove_if(rp.issues.begin(), rp.issues.end(),
                         [&](const ResolveIssue& i) {
                           return i.rule == ResolveRule::kRecomputeUnderstated &&
                                  std::binary_search(raised.begin(), raised.end(), i.item);
                         }),
          rp.issues.end());
    }
    *resolved = std::move(rp);
    return absl::OkStatus();
  }
}


}  // namespace swapplan
