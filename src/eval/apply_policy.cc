// ApplyPolicy: a matcher's decisions on one iteration turned into the swaps
// a runtime would execute there (replay.h).
#include <algorithm>

#include "absl/container/flat_hash_map.h"

#include "swapplan/policy/policy_io.h"
#include "swapplan/eval/replay.h"
#include "swapplan/varying/tensor_roles.h"

namespace swapplan {

absl::string_view ItemOutcomeName(ItemOutcome o) {
  switch (o) {
    case ItemOutcome::kMatched:
      return "matched";
    case ItemOutcome::kMismatched:
      return "mismatched";
    case ItemOutcome::kMissed:
      break;
  }
  return "missed";
}

AppliedPolicy ApplyPolicy(const Trace& trace, int32_t iteration, const MatchablePolicy& mp,
                          absl::Span<const uint64_t> item_roles, TensorMatcher& matcher,
                          RuntimeTensorTable& table, int32_t first_decision_op) {
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  AppliedPolicy out;
  out.items = static_cast<int32_t>(mp.items.size());
  Policy& p = out.policy;
  p.fingerprint = ComputeFingerprint(trace, iteration);
  p.device = mp.policy.device;
  p.planner = mp.policy.planner;

  // --- matching: the runtime's pass over the iteration --------------------
  table.Reset(trace.num_tensors());
  for (TensorId t = 0; t < trace.num_tensors(); ++t) {
    table.Describe(t, trace.tensor(t).dtype, trace.tensor(t).size_bytes, ShapeHash(trace.shape(t)));
  }
  matcher.BeginIteration();
  std::vector<MatchDecision> decisions;
  std::vector<int32_t> decision_op;
  std::vector<int32_t> phase_ops[kNumPhases];
  for (int32_t j = 0; j < n; ++j) {
    const OpIndex op = iter.op_begin + j;
    const OpInfo& info = trace.op(op);
    phase_ops[static_cast<int>(info.phase)].push_back(j);
    const size_t before = decisions.size();
    matcher.OnOp(info.name, info.phase, trace.uses(op), table, &decisions);
    if (j < first_decision_op) decisions.resize(before);  // not chosen yet: not found
    decision_op.resize(decisions.size(), j);
  }

  // --- positions of the release and swap-in triggers in this iteration ----
  const bool by_phase = matcher.kind() == MatcherKind::kFuzzy;
  auto locate = [&](const OpAnchor& a) -> int32_t {
    if (!by_phase) return std::min(a.ordinal, n - 1);
    const std::vector<int32_t>& ops = phase_ops[static_cast<int>(a.phase)];
    if (ops.empty()) return n - 1;
    return ops[std::min<size_t>(static_cast<size_t>(a.phase_ordinal), ops.size() - 1)];
  };
  out.reports.resize(mp.items.size());
  std::vector<uint64_t> roles;
  if (!item_roles.empty()) {
    roles = TensorRoles(trace, iteration);
    absl::flat_hash_map<uint64_t, TensorId> by_role;
    by_role.reserve(roles.size());
    for (TensorId t = 0; t < static_cast<TensorId>(roles.size()); ++t) {
      if (roles[t] != 0) by_role.emplace(roles[t], t);
    }
    for (size_t k = 0; k < mp.items.size(); ++k) {
      auto f = by_role.find(item_roles[k]);
      if (f != by_role.end()) out.reports[k].expected_tensor_id = trace.tensor(f->second).trace_id;
    }
  }

  // Item k's tensor is used at op `use` while off the device (simulated as
  // a passive swap-in); the first such use of the iteration is remembered.
  auto note_off_device = [&out](ItemReport& rep, int32_t use, uint64_t tensor_id, int32_t k) {
    rep.used_while_off_device = true;
    if (out.uses_while_off_device++ == 0) {
      out.first_off_device_op = use;
      out.first_off_device_tensor = tensor_id;
      out.first_off_device_item = k;
    }
  };
  for (size_t d = 0; d < decisions.size(); ++d) {
    const int32_t k = decisions[d].item;
    const TensorId s = decisions[d].slot;
    const int32_t j = decision_op[d];
    const MatchableItem& mi = mp.items[k];
    const PolicyItem& src = mp.policy.items[k];
    ItemReport& rep = out.reports[k];
    rep.tensor_id = trace.tensor(s).trace_id;
    rep.decision_op = j;
    rep.planned_bytes = src.size_bytes;
    rep.found_bytes = trace.tensor(s).size_bytes;
    if (!roles.empty() && roles[s] != item_roles[k]) {
      ++out.mismatched;
      rep.outcome = ItemOutcome::kMismatched;
    } else {
      ++out.matched;
      rep.outcome = ItemOutcome::kMatched;
      if (rep.found_bytes > rep.planned_bytes) ++out.resized_larger;
      if (rep.found_bytes < rep.planned_bytes) ++out.resized_smaller;
    }
    // Next use of the tensor after the decision op.
    absl::Span<const OpIndex> uses = trace.tensor_uses(s);
    auto next = std::upper_bound(uses.begin(), uses.end(), iter.op_begin + j);
    const bool used_later = next != uses.end() && *next < iter.op_end;
    if (src.wraps && !used_later) {
      // A window across the iteration boundary (a parameter, an optimizer
      // state, resident before and after the iteration): back at its
      // swap-in before its first use here, off again after its last one —
      // executed as planned, not dropped as a tensor "unused after its
      // swap-out".
      auto first = std::lower_bound(uses.begin(), uses.end(), iter.op_begin);
      const int32_t f = first != uses.end() && *first < iter.op_end
                            ? static_cast<int32_t>(*first - iter.op_begin)
                            : j;
      const int32_t in = locate(mi.swap_in);
      rep.swap_in_op = in;
      rep.next_use_op = f;
      PolicyItem it;
      it.tensor_id = trace.tensor(s).trace_id;
      it.size_bytes = trace.tensor(s).size_bytes;
      it.action = src.action;
      it.wraps = true;
      it.clean = src.clean;
      it.tier = src.tier;
      it.swap_out_op = j;
      it.release_op = std::max(locate(mi.release), j);
      it.first_use_op = f;
      it.swap_in_op = std::min(in, f);
      if (in > f) {
        // Back after its first use here: used while off device.
        note_off_device(rep, f, it.tensor_id, k);
      }
      p.items.push_back(it);
      continue;
    }
    if (!used_later) {
      rep.swap_in_op = locate(mi.swap_in);
      ++out.unused_after_swap_out;
      continue;
    }
    const int32_t u = *next - iter.op_begin;
    const int32_t rel = std::max(locate(mi.release), j);
    const int32_t in = locate(mi.swap_in);
    rep.swap_in_op = in;
    rep.next_use_op = u;
    PolicyItem it;
    it.tensor_id = trace.tensor(s).trace_id;
    it.size_bytes = trace.tensor(s).size_bytes;
    it.action = src.action;
    it.recompute_ns = src.recompute_ns;
    it.clean = src.clean;
    it.tier = src.tier;
    it.swap_out_op = j;
    it.first_use_op = u;
    if (in <= j || in > u) {
      // Used while off device: the swap-in trigger has passed before the
      // swap-out, or comes after the use. Simulated as a passive swap-in.
      note_off_device(rep, u, it.tensor_id, k);
      it.release_op = std::min(rel, u - 1);
      it.swap_in_op = u;
    } else {
      it.release_op = std::min(rel, in - 1);
      it.swap_in_op = in;
    }
    p.items.push_back(it);
  }
  // A clean item (no copy out: its tier holds the bytes) is clean here
  // only when an applied item of the same tensor brought it back from that
  // tier before its swap-out; otherwise it copies out like any other.
  absl::flat_hash_map<uint64_t, std::vector<size_t>> by_tensor;
  for (size_t i = 0; i < p.items.size(); ++i) {
    by_tensor[p.items[i].tensor_id].push_back(i);
  }
  for (PolicyItem& it : p.items) {
    if (!it.clean) continue;
    bool back = false;
    for (size_t i : by_tensor[it.tensor_id]) {
      const PolicyItem& o = p.items[i];
      if (&o == &it || o.tier != it.tier) continue;
      back = back || (o.wraps ? o.swap_in_op <= it.swap_out_op
                              : o.swap_in_op <= it.swap_out_op && o.swap_out_op < it.swap_out_op);
    }
    it.clean = back;
  }
  out.missed = out.items - static_cast<int32_t>(decisions.size());
  return out;
}

}  // namespace swapplan
