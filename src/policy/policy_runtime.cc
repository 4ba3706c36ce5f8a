// The runtime section of a policy: built from the trace, checked against the
// policy (policy_runtime.h).
#include "swapplan/policy/policy_runtime.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "swapplan/policy/policy_io.h"
#include "swapplan/policy/runtime_key.h"
#include "swapplan/util/error.h"
#include "swapplan/util/status_macros.h"

namespace swapplan {
namespace {

// The runtime section and the items' keys, computed in one pass.
struct Built {
  PolicyRuntime runtime;
  std::vector<RuntimeKey> keys;
};

absl::StatusOr<Built> Build(const Trace& trace, int32_t iteration, const Policy& policy,
                            int32_t mask_bits) {
  if (iteration < 0 || iteration >= trace.num_iterations()) {
    return Error(ErrorKind::kMalformedInput,
                 absl::StrCat("policy runtime: iteration ", iteration, " is out of range: ",
                              trace.source(), " has ", trace.num_iterations(), " iterations"));
  }
  SWAPPLAN_ASSIGN_OR_RETURN(OpFrequencyRanking ranking,
                            OpFrequencyRanking::ForIteration(trace, iteration, mask_bits));
  const IterationInfo& iter = trace.iteration(iteration);
  const int32_t n = iter.num_ops();
  Built b;
  PolicyRuntime& rt = b.runtime;
  rt.mask_bits = mask_bits;
  // Op-name table: the iteration's names in order of first occurrence.
  std::vector<int32_t> index_of(trace.num_op_names(), -1);
  rt.op_sequence.reserve(n);
  std::vector<int32_t> phase_ordinal(n);
  int32_t counts[kNumPhases] = {0, 0, 0, 0};
  for (int32_t i = 0; i < n; ++i) {
    const OpInfo& op = trace.op(iter.op_begin + i);
    int32_t& idx = index_of[op.name];
    if (idx < 0) {
      idx = static_cast<int32_t>(rt.op_names.size());
      rt.op_names.push_back(trace.op_name(op.name));
      rt.op_ranks.push_back(ranking.rank(op.name));
    }
    rt.op_sequence.push_back(EncodeOpSequenceEntry(idx, op.phase));
    phase_ordinal[i] = counts[static_cast<int>(op.phase)]++;
  }
  auto anchor = [&](int32_t local) {
    return OpAnchor{trace.op(iter.op_begin + local).phase, phase_ordinal[local], local};
  };
  // File id -> dense id, built only when the ids are not dense.
  absl::flat_hash_map<uint64_t, TensorId> by_id;
  auto lookup = [&](uint64_t id) -> TensorId {
    if (id < static_cast<uint64_t>(trace.num_tensors()) &&
        trace.tensor(static_cast<TensorId>(id)).trace_id == id) {
      return static_cast<TensorId>(id);
    }
    if (by_id.empty()) {
      by_id.reserve(trace.num_tensors());
      for (TensorId t = 0; t < trace.num_tensors(); ++t) by_id.emplace(trace.tensor(t).trace_id, t);
    }
    auto f = by_id.find(id);
    return f == by_id.end() ? kNoTensor : f->second;
  };
  rt.items.reserve(policy.items.size());
  b.keys.reserve(policy.items.size());
  for (size_t k = 0; k < policy.items.size(); ++k) {
    const PolicyItem& it = policy.items[k];
    auto fail = [&](const std::string& what) {
      return Error(ErrorKind::kMalformedInput,
                   absl::StrCat("policy runtime: policy item ", k, " (tensor ", it.tensor_id,
                                "): ", what));
    };
    for (int32_t op : {it.swap_out_op, it.release_op, it.swap_in_op, it.first_use_op}) {
      if (op < 0 || op >= n) {
        return fail(absl::StrCat("op ", op, " is outside iteration ", iteration, " of ",
                                 trace.source(), " (", n, " ops)"));
      }
    }
    const TensorId t = lookup(it.tensor_id);
    if (t == kNoTensor) return fail(absl::StrCat("no such tensor in ", trace.source()));
    absl::Span<const OpIndex> uses = trace.tensor_uses(t);
    auto last = std::upper_bound(uses.begin(), uses.end(), iter.op_begin + it.swap_out_op);
    if (last == uses.begin() || *(last - 1) < iter.op_begin) {
      return fail(absl::StrCat("not used in iteration ", iteration, " at or before swap_out_op ",
                               it.swap_out_op));
    }
    const int32_t decision = *(last - 1) - iter.op_begin;
    RuntimeItem r;
    r.decision = anchor(decision);
    absl::Span<const TensorId> op_uses = trace.uses(iter.op_begin + decision);
    r.use_index = static_cast<int32_t>(std::find(op_uses.begin(), op_uses.end(), t) -
                                       op_uses.begin());
    r.shape_hash = ShapeHash(trace.shape(t));
    r.release = anchor(it.release_op);
    r.swap_in = anchor(it.swap_in_op);
    r.first_use = anchor(it.first_use_op);
    rt.items.push_back(r);
    b.keys.push_back(
        MakeRuntimeKey(KeyStateAt(trace, iteration, ranking, t, decision), trace, t, mask_bits));
  }
  return b;
}

}  // namespace

absl::StatusOr<PolicyRuntime> BuildPolicyRuntime(const Trace& trace, int32_t iteration,
                                                 const Policy& policy, int32_t mask_bits) {
  SWAPPLAN_ASSIGN_OR_RETURN(Built b, Build(trace, iteration, policy, mask_bits));
  return std::move(b.runtime);
}

absl::Status AttachPolicyRuntime(const Trace& trace, int32_t iteration, Policy* policy,
                                 int32_t mask_bits) {
  SWAPPLAN_ASSIGN_OR_RETURN(Built b, Build(trace, iteration, *policy, mask_bits));
  policy->runtime = std::move(b.runtime);
  for (size_t k = 0; k < policy->items.size(); ++k) policy->items[k].runtime_key = b.keys[k];
  return absl::OkStatus();
}

uint64_t RuntimeFingerprint(const PolicyRuntime& runtime) {
  std::vector<uint64_t> hash(runtime.op_names.size());
  for (size_t i = 0; i < hash.size(); ++i) hash[i] = NameHash(runtime.op_names[i]);
  FingerprintState fp;
  for (uint32_t e : runtime.op_sequence) fp.AddOp(hash[OpSequenceName(e)], OpSequencePhase(e));
  return fp.value();
}

absl::Status ValidatePolicyRuntime(const Policy& policy) {
  const PolicyRuntime& rt = policy.runtime;
  if (rt.empty() && rt.op_sequence.empty() && rt.items.empty() && rt.op_ranks.empty()) {
    return absl::OkStatus();
  }
  auto fail = [](const std::string& field, const std::string& what) {
    return Error(ErrorKind::kMalformedInput, absl::StrCat("policy runtime.", field, ": ", what));
  };
  const int32_t names = static_cast<int32_t>(rt.op_names.size());
  if (rt.op_ranks.size() != rt.op_names.size()) {
    return fail("op_ranks", absl::StrCat("has ", rt.op_ranks.size(), " entries; op_names has ",
                                         names));
  }
  std::vector<bool> rank_seen(names, false);
  for (int32_t i = 0; i < names; ++i) {
    const int32_t r = rt.op_ranks[i];
    if (r < -1 || r >= names || (r >= 0 && rank_seen[r])) {
      return fail(absl::StrCat("op_ranks[", i, "]"),
                  absl::StrCat("rank ", r, " is out of range or repeated (", names, " names)"));
    }
    if (r >= 0) rank_seen[r] = true;
  }
  if (rt.mask_bits != 32 && rt.mask_bits != 64) {
    return fail("mask_bits", absl::StrCat("is ", rt.mask_bits, "; must be 32 or 64"));
  }
  const int32_t n = policy.fingerprint.iteration_ops;
  if (static_cast<int64_t>(rt.op_sequence.size()) != n) {
    return fail("op_sequence", absl::StrCat("has ", rt.op_sequence.size(),
                                            " entries; the fingerprint says ", n, " ops"));
  }
  std::vector<int32_t> phase_ordinal(n);
  int32_t counts[kNumPhases] = {0, 0, 0, 0};
  for (int32_t i = 0; i < n; ++i) {
    const uint32_t e = rt.op_sequence[i];
    if (OpSequenceName(e) >= names) {
      return fail(absl::StrCat("op_sequence[", i, "]"),
                  absl::StrCat("names op-name entry ", OpSequenceName(e), " of ", names));
    }
    phase_ordinal[i] = counts[static_cast<int>(OpSequencePhase(e))]++;
  }
  if (RuntimeFingerprint(rt) != policy.fingerprint.op_sequence_hash) {
    return fail("op_sequence", "does not hash to the policy's fingerprint op_sequence_hash (the "
                               "runtime section belongs to another op sequence)");
  }
  if (rt.items.size() != policy.items.size()) {
    return fail("items", absl::StrCat("has ", rt.items.size(), " entries; the policy has ",
                                      policy.items.size(), " items"));
  }
  for (size_t k = 0; k < rt.items.size(); ++k) {
    const RuntimeItem& r = rt.items[k];
    const PolicyItem& it = policy.items[k];
    const std::string base = absl::StrCat("items[", k, "]");
    auto check = [&](const char* name, const OpAnchor& a, int32_t expected) -> absl::Status {
      const std::string field = absl::StrCat(base, ".", name);
      if (a.ordinal < 0 || a.ordinal >= n) {
        return fail(field, absl::StrCat("ordinal ", a.ordinal, " is outside the iteration (", n,
                                        " ops)"));
      }
      if (expected >= 0 && a.ordinal != expected) {
        return fail(field, absl::StrCat("ordinal ", a.ordinal, " is not the item's op ",
                                        expected));
      }
      const Phase ph = OpSequencePhase(rt.op_sequence[a.ordinal]);
      if (a.phase != ph || a.phase_ordinal != phase_ordinal[a.ordinal]) {
        return fail(field, absl::StrCat("op ", a.ordinal, " is ", PhaseName(ph), " op ",
                                        phase_ordinal[a.ordinal], " of its phase; the anchor says ",
                                        PhaseName(a.phase), " op ", a.phase_ordinal));
      }
      return absl::OkStatus();
    };
    SWAPPLAN_RETURN_IF_ERROR(check("decision", r.decision, -1));
    if (r.decision.ordinal > it.swap_out_op) {
      return fail(base + ".decision", absl::StrCat("ordinal ", r.decision.ordinal,
                                                   " is after swap_out_op ", it.swap_out_op));
    }
    if (r.use_index < 0) {
      return fail(base + ".use_index", absl::StrCat("is ", r.use_index, "; must be >= 0"));
    }
    SWAPPLAN_RETURN_IF_ERROR(check("release", r.release, it.release_op));
    SWAPPLAN_RETURN_IF_ERROR(check("swap_in", r.swap_in, it.swap_in_op));
    SWAPPLAN_RETURN_IF_ERROR(check("first_use", r.first_use, it.first_use_op));
  }
  return absl::OkStatus();
}

// Declared in policy_io.h; defined here so that the protobuf-free part of
// core (what libswapplan_runtime.so links) has it.
PolicyFingerprint ComputeFingerprint(const Trace& trace, int32_t iteration) {
  const IterationInfo& iter = trace.iteration(iteration);
  // FingerprintState (policy.h); names are hashed once each.
  std::vector<uint64_t> name_hash(trace.num_op_names());
  for (NameId n = 0; n < trace.num_op_names(); ++n) name_hash[n] = NameHash(trace.op_name(n));
  FingerprintState state;
  for (OpIndex i = iter.op_begin; i < iter.op_end; ++i) {
    const OpInfo& op = trace.op(i);
    state.AddOp(name_hash[op.name], op.phase);
  }
  PolicyFingerprint fp;
  fp.op_sequence_hash = state.value();
  fp.iteration_ops = iter.num_ops();
  fp.iteration = iteration;
  return fp;
}

// What an eager runtime cannot execute. SWAP and RECOMPUTE items both run
// (a RECOMPUTE item the framework cannot recompute runs as a SWAP).
absl::Status CheckRuntimeExecutable(const Policy& p) {
  if (!p.schedule.empty()) {
    return absl::InvalidArgumentError(
        "runtime: the policy reorders the ops (it has a schedule); the runtime runs the "
        "framework's ops in the framework's order");
  }
  if (!p.pool.empty()) {
    return absl::InvalidArgumentError(
        "runtime: the policy needs a size-class memory pool; the runtime's device memory is "
        "byte-granular");
  }
  for (size_t k = 0; k < p.items.size(); ++k) {
    const PolicyItem& it = p.items[k];
    if (it.wraps) {
      return absl::InvalidArgumentError(absl::StrCat(
          "runtime: policy item ", k, " (tensor ", it.tensor_id,
          ") wraps around the iteration boundary; the runtime swaps within an iteration"));
    }
    if (it.tier != 0) {
      const std::string name = it.tier > 0 && it.tier < p.device.num_tiers()
                                   ? p.device.TierName(it.tier)
                                   : std::string("?");
      return absl::InvalidArgumentError(absl::StrCat(
          "runtime: policy item ", k, " (tensor ", it.tensor_id, ") stores to tier ", it.tier,
          " (", name, "); the runtime's backends reach only the host (pinned memory, tier 0)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace swapplan
